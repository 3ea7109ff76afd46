/* .gitignore semantics (server/workspace/ignore_rules.c, as server/workspace/file_walk.c uses it)
 * checked against git itself.
 *
 * Every case builds a real tree in a fresh `git init` folder, writes its
 * .gitignore files, and asks both sides about every path in the tree:
 *
 *   git    `git check-ignore --no-index -z --stdin` (a path under an ignored
 *          folder counts as ignored, as git's own walk never looks inside);
 *   ours   the walk file_walk does: .gitignore files of the folders above
 *          the start (ignore_rules_add_parents), each folder's own
 *          .gitignore added on the way down, a folder that matches is not
 *          entered (everything below it is ignored).
 *
 * Then file_walk itself runs on the tree and must list exactly the
 * supported files (.py, .cu) that git does not ignore.
 *
 * The table covers each feature (basename and anchored patterns, leading
 * and middle '/', trailing '/', '*', '?', '**' in its three places, classes,
 * escapes, comments, trailing spaces, CRLF, nested .gitignore files) and
 * their interactions; a seeded generator adds many small random pattern
 * sets over a tree of small names (ADVISE_IGNORE_SEED=n picks another seed,
 * ADVISE_IGNORE_CASES=n how many).
 *
 * git's user and system configuration is kept out (HOME, XDG_CONFIG_HOME,
 * GIT_CONFIG_NOSYSTEM), so no global excludes file takes part. The tests
 * skip when git is not installed. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/workspace/file_walk.h"
#include "server/workspace/ignore_rules.h"

/* ---- a scratch git work tree ----------------------------------------------- */

/* snprintf into an array, failing the test instead of cutting the text short */
#define FORMAT(buf, ...) cr_assert_lt((size_t)snprintf(buf, sizeof buf, __VA_ARGS__), sizeof buf, "text too long")

static bool have_git(void) { return system("git --version >/dev/null 2>&1") == 0; }

static char *scratch(void) {
    char tmpl[] = "/tmp/advise-ignore-XXXXXX";
    cr_assert_not_null(mkdtemp(tmpl));
    char *real = realpath(tmpl, NULL); /* patterns' bases are compared with real paths */
    cr_assert_not_null(real);
    return real;
}

static void remove_tree(const char *dir) {
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

/* a folder for git's configuration, and the work tree inside it */
typedef struct {
    char *home;
    char root[PATH_MAX];
} Repo;

static Repo repo_new(void) {
    Repo r = {.home = scratch()};
    setenv("HOME", r.home, 1);
    setenv("XDG_CONFIG_HOME", r.home, 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    snprintf(r.root, sizeof r.root, "%s/tree", r.home);
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "git init -q '%s' >/dev/null 2>&1", r.root);
    cr_assert_eq(system(cmd), 0, "git init failed");
    return r;
}

static void repo_free(Repo *r) {
    remove_tree(r->home);
    free(r->home);
}

static void make_parents(const char *path) {
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *s = buf + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) cr_assert_fail("mkdir %s: %s", buf, strerror(errno));
        *s = '/';
    }
}

/* rel ending in '/' makes a folder, else an empty file (or one with text) */
static void put(const char *root, const char *rel, const char *text) {
    char path[PATH_MAX];
    FORMAT(path, "%s/%s", root, rel);
    make_parents(path);
    size_t n = strlen(path);
    if (path[n - 1] == '/') {
        path[n - 1] = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) cr_assert_fail("mkdir %s: %s", path, strerror(errno));
        return;
    }
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    if (text) fwrite(text, 1, strlen(text), f);
    fclose(f);
}

static void drop(const char *root, const char *rel) {
    char path[PATH_MAX];
    FORMAT(path, "%s/%s", root, rel);
    unlink(path);
}

/* ---- the two verdicts --------------------------------------------------------- */

typedef struct {
    char *rel; /* relative to the start folder's work tree root */
    bool is_dir;
    bool ours, git;
} Verdict;

typedef struct {
    Verdict *items;
    size_t count;
} Verdicts;

static void verdicts_free(Verdicts *v) {
    for (size_t i = 0; i < v->count; i++) free(v->items[i].rel);
    free(v->items);
    v->items = NULL;
    v->count = 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* file_walk's walk, keeping every path's verdict (and going on below ignored folders) */
static void walk_ours(IgnoreRules *rules, const char *abs, const char *rel, bool parent_ignored, Verdicts *out) {
    size_t mark = rules->count;
    if (!parent_ignored) ignore_rules_add_file(rules, abs);
    DIR *d = opendir(abs);
    cr_assert_not_null(d, "opendir %s", abs);
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, ".git")) continue;
        names = realloc(names, (n + 1) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        char child_abs[PATH_MAX], child_rel[PATH_MAX];
        snprintf(child_abs, sizeof child_abs, "%s/%s", abs, names[i]);
        snprintf(child_rel, sizeof child_rel, "%s%s%s", rel, *rel ? "/" : "", names[i]);
        struct stat st;
        cr_assert_eq(lstat(child_abs, &st), 0);
        bool is_dir = S_ISDIR(st.st_mode);
        bool ignored = parent_ignored || ignore_rules_match(rules, child_abs, is_dir);
        out->items = realloc(out->items, (out->count + 1) * sizeof *out->items);
        out->items[out->count++] = (Verdict){strdup(child_rel), is_dir, ignored, false};
        if (is_dir) walk_ours(rules, child_abs, child_rel, ignored, out);
        free(names[i]);
    }
    free(names);
    ignore_rules_truncate(rules, mark);
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

/* asks git about every path at once; sets each verdict's .git */
static void ask_git(const Repo *r, Verdicts *v) {
    char list[PATH_MAX], answer[PATH_MAX], errors[PATH_MAX];
    snprintf(list, sizeof list, "%s/paths", r->home);
    snprintf(answer, sizeof answer, "%s/ignored", r->home);
    snprintf(errors, sizeof errors, "%s/errors", r->home);
    FILE *f = fopen(list, "wb");
    cr_assert_not_null(f);
    for (size_t i = 0; i < v->count; i++) fwrite(v->items[i].rel, 1, strlen(v->items[i].rel) + 1, f);
    fclose(f);
    char cmd[4 * PATH_MAX];
    FORMAT(cmd, "cd '%s' && git check-ignore --no-index -z --stdin <'%s' >'%s' 2>'%s'", r->root, list, answer,
           errors);
    int status = system(cmd);
    size_t len = 0;
    char *out = slurp(answer, &len);
    cr_assert_not_null(out);
    if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 1)) {
        size_t elen = 0;
        char *err = slurp(errors, &elen);
        cr_assert_fail("git check-ignore failed: %s", err ? err : "?");
    }
    for (size_t at = 0; at < len; at += strlen(out + at) + 1)
        for (size_t i = 0; i < v->count; i++)
            if (strcmp(v->items[i].rel, out + at) == 0) v->items[i].git = true;
    free(out);
}

/* what is visible of a text in a failure message */
static void show(char *buf, size_t size, const char *text) {
    size_t k = 0;
    for (const char *p = text; *p && k + 5 < size; p++) {
        if (*p == '\n') k += (size_t)snprintf(buf + k, size - k, "\\n");
        else if (*p == '\r') k += (size_t)snprintf(buf + k, size - k, "\\r");
        else if (*p == '\t') k += (size_t)snprintf(buf + k, size - k, "\\t");
        else if ((unsigned char)*p < 32 || (unsigned char)*p >= 127)
            k += (size_t)snprintf(buf + k, size - k, "\\x%02x", (unsigned char)*p);
        else buf[k++] = *p;
    }
    buf[k] = '\0';
}

typedef struct {
    const char *dir; /* "" for the root */
    const char *text;
} IgnoreFile;

#define MAX_IGNORE_FILES 4

static void describe(char *buf, size_t size, const IgnoreFile *files) {
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < MAX_IGNORE_FILES && files[i].text && k < size; i++) {
        char shown[1024];
        show(shown, sizeof shown, files[i].text);
        k += (size_t)snprintf(buf + k, size - k, "%s%s%s.gitignore = \"%s\"", i ? ", " : "", files[i].dir,
                              *files[i].dir ? "/" : "", shown);
    }
}

/* Compares ours with git for every path under start (the work tree root or
 * a folder in it), then file_walk's list with git's. Returns the number of
 * disagreements, each reported. */
static size_t compare(const Repo *r, const char *start_rel, const IgnoreFile *files, const char *label) {
    char start[PATH_MAX];
    FORMAT(start, "%s%s%s", r->root, *start_rel ? "/" : "", start_rel);
    Verdicts v = {0};
    IgnoreRules rules = {0};
    ignore_rules_add_parents(&rules, start);
    walk_ours(&rules, start, start_rel, false, &v);
    ignore_rules_free(&rules);
    ask_git(r, &v);

    char context[4096];
    describe(context, sizeof context, files);
    size_t wrong = 0;
    for (size_t i = 0; i < v.count; i++) {
        const Verdict *p = &v.items[i];
        if (p->ours == p->git) continue;
        if (++wrong <= 8) {
            char shown[PATH_MAX];
            show(shown, sizeof shown, p->rel);
            cr_expect_fail("%s: \"%s%s\": git says %s, advise says %s (walk from \"/%s\"; %s)", label, shown,
                           p->is_dir ? "/" : "", p->git ? "ignored" : "not ignored",
                           p->ours ? "ignored" : "not ignored", start_rel, context);
        }
    }

    /* file_walk on the same tree: the supported files git keeps */
    Config cfg;
    config_init(&cfg);
    const char *paths[] = {start};
    FileList list;
    file_walk(paths, 1, &cfg, NULL, &list);
    size_t kept = 0;
    for (size_t i = 0; i < v.count; i++) {
        const Verdict *p = &v.items[i];
        char abs[PATH_MAX];
        FORMAT(abs, "%s/%s", r->root, p->rel);
        if (p->is_dir || p->git || !file_walk_supported(abs)) continue;
        kept++;
        bool listed = false;
        for (size_t k = 0; k < list.count; k++) listed |= strcmp(list.files[k], abs) == 0;
        if (!listed && ++wrong <= 10)
            cr_expect_fail("%s: file_walk leaves out \"%s\", which git does not ignore (%s)", label, p->rel, context);
    }
    if (list.count != kept && ++wrong <= 10)
        cr_expect_fail("%s: file_walk lists %zu files, git keeps %zu supported files (%s)", label, list.count, kept,
                       context);
    file_list_free(&list);
    config_free(&cfg);
    verdicts_free(&v);
    return wrong;
}

/* ---- the table ------------------------------------------------------------------- */

/* One tree for every case. Names ending in '/' are folders. */
static const char *const TREE[] = {
    "a.py", "b.py", "c.cu", "a.log", "Abc.py", "abc.py", "q1.py", "x.py", ".hidden.py", "foo.txt", "#hash.py",
    "!bang.py", "sp ace.py", "trail ", "trail", "tab.py\t", "q[1].py", "q[1.py", "star*.py", "starx.py", "]x.py",
    "-x.py", "back\\", "back\\ ", "1.py", "a.py # comment",
    "build/x.py", "build/keep.py", "build/sub/y.py", "build/.gitkeep",
    "src/a.py", "src/b.log", "src/b.py", "src/build/z.py", "src/lib/a.py", "src/lib/deep/a.py",
    "src/lib/deep/build", /* a file named like the folders */
    "doc/frotz/x.py", "doc/x/frotz/y.py", "doc/readme.py",
    "a/b/c.py", "a/x/b/d.py", "a/x/y/b/e.py", "a/x/b.py", "a/bb/f.py",
    "logs/debug.log", "logs/important.log", "logs/sub/trace.log",
    "x/y.py", "x/y/z.py",
    "deep/er/est/file.py", "deep/file.py",
    "empty/",
    NULL,
};

typedef struct {
    const char *name;
    const char *start; /* folder the walk starts from (NULL: the root) */
    IgnoreFile files[MAX_IGNORE_FILES];
} Case;

static const Case CASES[] = {
    /* basename patterns (no '/'): any depth */
    {"extension", NULL, {{"", "*.log\n"}}},
    {"name at any depth", NULL, {{"", "a.py\n"}}},
    {"question mark", NULL, {{"", "?.py\n"}}},
    {"case matters", NULL, {{"", "ABC.py\n*.PY\n"}}},
    {"dot files are not special", NULL, {{"", ".*\n"}}},
    {"star alone", NULL, {{"", "*\n"}}},
    {"name of files and folders", NULL, {{"", "build\n"}}},
    {"leading and inner spaces are kept", NULL, {{"", " a.py\nsp ace.py\n"}}},
    /* trailing '/': folders only */
    {"folder only", NULL, {{"", "build/\n"}}},
    {"folder only, a file of that name stays", NULL, {{"", "src/lib/deep/build/\ndeep/file.py/\n"}}},
    {"every folder", NULL, {{"", "*/\n"}}},
    /* anchoring: a leading or middle '/' */
    {"leading slash", NULL, {{"", "/a.py\n/build\n"}}},
    {"middle slash", NULL, {{"", "src/build\ndoc/frotz\n"}}},
    {"middle slash and trailing slash", NULL, {{"", "doc/frotz/\nx/y/\n"}}},
    {"star stops at slash", NULL, {{"", "*/a.py\n"}}},
    {"two levels of stars", NULL, {{"", "*/*/a.py\nsrc/*\n"}}},
    {"star component", NULL, {{"", "a/*/b\n"}}},
    {"folder name anywhere", NULL, {{"", "frotz\n"}}},
    /* '**' */
    {"leading double star", NULL, {{"", "**/frotz\n**/build/\n"}}},
    {"leading double star with a path", NULL, {{"", "**/deep/a.py\n**/x/b\n"}}},
    {"trailing double star", NULL, {{"", "src/**\n"}}},
    {"trailing double star, then a file back", NULL, {{"", "build/**\n!build/keep.py\n"}}},
    {"middle double star", NULL, {{"", "a/**/b\n"}}},
    {"middle double star to a file", NULL, {{"", "src/**/a.py\ndeep/**/file.py\n"}}},
    {"double star around", NULL, {{"", "**/build/**\n"}}},
    {"double star alone", NULL, {{"", "**\n"}}},
    {"double star as a folder", NULL, {{"", "**/\n"}}},
    {"double star inside a name is a star", NULL, {{"", "src/**.py\n"}}},
    {"double star after a name is a star", NULL, {{"", "a**/b\ndo**/frotz\n"}}},
    {"double star before a name is a star", NULL, {{"", "src/**b.py\n"}}},
    {"three stars", NULL, {{"", "src/***/a.py\n"}}},
    /* negation */
    {"negation", NULL, {{"", "*.py\n!a.py\n"}}},
    {"negation before the pattern loses", NULL, {{"", "!a.py\n*.py\n"}}},
    {"no file back from an ignored folder", NULL, {{"", "build/\n!build/keep.py\n"}}},
    {"no file back from an ignored folder, no slash", NULL, {{"", "build\n!keep.py\n"}}},
    {"a file back from an ignored folder's content", NULL, {{"", "build/*\n!build/keep.py\n"}}},
    {"logs: ignored folder", NULL, {{"", "logs/\n!logs/important.log\n"}}},
    {"logs: ignored content", NULL, {{"", "logs/*\n!logs/important.log\n"}}},
    {"only python files", NULL, {{"", "*\n!*/\n!*.py\n"}}},
    {"everything but src", NULL, {{"", "/*\n!/src\n"}}},
    {"git documentation's example", NULL, {{"", "/*\n!/doc\n/doc/*\n!/doc/frotz/\n"}}},
    {"folder back, contents not", NULL, {{"", "*\n!src/\n"}}},
    {"negated folder pattern", NULL, {{"", "build\n!build/\n"}}},
    {"negation of what is not ignored", NULL, {{"", "!a.py\n"}}},
    /* classes */
    {"class", NULL, {{"", "[ab].py\n"}}},
    {"negated class", NULL, {{"", "[!a]*.py\n"}}},
    {"caret negates too", NULL, {{"", "[^a]bc.py\n"}}},
    {"range", NULL, {{"", "[a-c].py\n"}}},
    {"class with a closing bracket first", NULL, {{"", "[]]x.py\n"}}},
    {"class with a dash at the end", NULL, {{"", "[a-]x.py\n"}}},
    {"class with an escaped bracket", NULL, {{"", "[\\]]x.py\n"}}},
    {"class with an escaped dash", NULL, {{"", "[a\\-z]x.py\n"}}},
    {"POSIX classes", NULL, {{"", "[[:upper:]]*\n[[:digit:]].py\n"}}},
    {"POSIX class in a set", NULL, {{"", "[[:digit:]ab].py\n"}}},
    {"class never matches a slash", NULL, {{"", "a[/]b\nsrc[/]a.py\n"}}},
    {"class of a bracket", NULL, {{"", "q[1].py\n"}}},
    {"unterminated class matches nothing", NULL, {{"", "q[1.py\n"}}},
    /* escapes */
    {"escaped brackets", NULL, {{"", "q\\[1\\].py\n"}}},
    {"escaped star", NULL, {{"", "star\\*.py\n"}}},
    {"escaped hash and bang", NULL, {{"", "\\#hash.py\n\\!bang.py\n"}}},
    {"escaped ordinary character", NULL, {{"", "\\a.py\n"}}},
    /* comments, blank lines and whitespace */
    {"comments", NULL, {{"", "# a comment\n#hash.py\n\n   \n*.log\n"}}},
    {"a hash later on the line is not a comment", NULL, {{"", "a.py # comment\n"}}},
    {"trailing spaces are dropped", NULL, {{"", "a.py   \nb.py \n"}}},
    {"escaped trailing space is kept", NULL, {{"", "trail\\ \n"}}},
    {"escaped space then a space", NULL, {{"", "trail\\  \n"}}},
    {"escaped backslash before a trailing space", NULL, {{"", "back\\\\ \n"}}},
    {"trailing tab is kept", NULL, {{"", "a.py\t\ntab.py\t\n"}}},
    {"CRLF lines", NULL, {{"", "a.py\r\nbuild/\r\n"}}},
    {"no newline at the end", NULL, {{"", "*.log\n!logs/important.log"}}},
    {"byte order mark", NULL, {{"", "\xef\xbb\xbf*.log\n"}}},
    {"odd lines", NULL, {{"", "/\n!\n\\\n!/\n//\n"}}},
    {"a pattern ending in a backslash", NULL, {{"", "back\\\n"}}},
    /* nested .gitignore files */
    {"nested negation overrides the parent", NULL, {{"", "*.py\n"}, {"src", "!a.py\n"}}},
    {"nested pattern overrides a parent's negation", NULL, {{"", "!src/b.log\n"}, {"src", "*.log\n"}}},
    {"nested anchored patterns are relative to their folder", NULL, {{"", ""}, {"src", "/a.py\nlib/deep\n/build/\n"}}},
    {"nested basename patterns apply below their folder only", NULL, {{"src", "*.py\n"}}},
    {"nested in an ignored folder is never read", NULL, {{"", "build/\n"}, {"build", "!keep.py\n"}}},
    {"nested cannot bring back from a parent's ignored folder", NULL, {{"", "src/lib/"}, {"src/lib/deep", "!a.py\n"}}},
    {"three levels", NULL, {{"", "*.py\n"}, {"src", "!*.py\n"}, {"src/lib", "a.py\n"}, {"src/lib/deep", "!/a.py\n"}}},
    {"nested double star", NULL, {{"a", "**/b\n"}, {"a/x", "!b\n"}}},
    /* walks that start below the root read the parents' .gitignore files */
    {"walk from a subfolder", "src", {{"", "*.log\nsrc/lib/\n"}, {"src", "!lib/\n"}}},
    {"walk from a subfolder, anchored parents", "src", {{"", "/src/a.py\n/a.py\n"}, {"src", "b.py\n"}}},
    {"walk from a deep subfolder", "deep/er", {{"", "deep/\n!deep/\ndeep/er/est/\n"}}},
};

Test(ignore_rules, table_against_git) {
    if (!have_git()) cr_skip_test("git is not installed");
    Repo r = repo_new();
    for (size_t i = 0; TREE[i]; i++) put(r.root, TREE[i], NULL);
    size_t wrong = 0, cases = sizeof CASES / sizeof *CASES;
    for (size_t c = 0; c < cases; c++) {
        const Case *k = &CASES[c];
        for (size_t f = 0; f < MAX_IGNORE_FILES && k->files[f].text; f++) {
            char rel[PATH_MAX];
            snprintf(rel, sizeof rel, "%s%s.gitignore", k->files[f].dir, *k->files[f].dir ? "/" : "");
            put(r.root, rel, k->files[f].text);
        }
        wrong += compare(&r, k->start ? k->start : "", k->files, k->name) ? 1 : 0;
        for (size_t f = 0; f < MAX_IGNORE_FILES && k->files[f].text; f++) {
            char rel[PATH_MAX];
            snprintf(rel, sizeof rel, "%s%s.gitignore", k->files[f].dir, *k->files[f].dir ? "/" : "");
            drop(r.root, rel);
        }
    }
    cr_expect_eq(wrong, 0, "%zu of %zu cases disagree with git", wrong, cases);
    repo_free(&r);
}

/* ---- generated cases ---------------------------------------------------------------- */

/* folders a, b, ab three deep; files a.py, ba, b.py in each */
static void small_tree(const char *root, const char *rel, int depth) {
    static const char *const files[] = {"a.py", "ba", "b.py"};
    static const char *const dirs[] = {"a", "b", "ab"};
    char path[PATH_MAX];
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s%s", rel, *rel ? "/" : "", files[i]);
        put(root, path, NULL);
    }
    if (depth == 3) return;
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s%s/", rel, *rel ? "/" : "", dirs[i]);
        put(root, path, NULL);
        path[strlen(path) - 1] = '\0';
        small_tree(root, path, depth + 1);
    }
}

static unsigned long long rng_state;

static unsigned rnd(unsigned n) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((rng_state >> 33) % n);
}

static void random_pattern(char *out, size_t size) {
    static const char *const parts[] = {"a",    "b",  "ab",  "ba",     "*",      "a*",   "*b",  "?",
                                        "??",   "[ab]", "[!a]*", "**", "*.py", "b*", "?b",   "a.py",
                                        "*a*",  "[a-b]?", "\\a", "**", "a**",  "**b", "***", "[[:lower:]]"};
    size_t k = 0;
    out[0] = '\0';
    if (rnd(4) == 0) k += (size_t)snprintf(out + k, size - k, "!");
    if (rnd(4) == 0) k += (size_t)snprintf(out + k, size - k, "/");
    unsigned n = 1 + rnd(3);
    for (unsigned i = 0; i < n; i++)
        k += (size_t)snprintf(out + k, size - k, "%s%s", i ? "/" : "", parts[rnd(sizeof parts / sizeof *parts)]);
    if (rnd(4) == 0) k += (size_t)snprintf(out + k, size - k, "/");
    if (rnd(8) == 0) snprintf(out + k, size - k, "  "); /* trailing spaces */
}

Test(ignore_rules, generated_against_git) {
    if (!have_git()) cr_skip_test("git is not installed");
    const char *seed_text = getenv("ADVISE_IGNORE_SEED"), *count_text = getenv("ADVISE_IGNORE_CASES");
    unsigned long long seed = seed_text ? strtoull(seed_text, NULL, 10) : 20240614ull;
    size_t cases = count_text ? strtoul(count_text, NULL, 10) : 300;
    rng_state = seed;
    Repo r = repo_new();
    small_tree(r.root, "", 0);
    static const char *const where[] = {"", "a", "a/b", "ab/ab"};
    size_t wrong = 0;
    for (size_t c = 0; c < cases; c++) {
        IgnoreFile files[MAX_IGNORE_FILES] = {{0}};
        char texts[MAX_IGNORE_FILES][512];
        size_t nfiles = 1 + rnd(3);
        for (size_t f = 0; f < nfiles; f++) {
            size_t k = 0;
            unsigned lines = 1 + rnd(f == 0 ? 4 : 2);
            texts[f][0] = '\0';
            for (unsigned l = 0; l < lines; l++) {
                char pat[128];
                random_pattern(pat, sizeof pat);
                k += (size_t)snprintf(texts[f] + k, sizeof texts[f] - k, "%s\n", pat);
            }
            files[f] = (IgnoreFile){f == 0 ? "" : where[1 + rnd(3)], texts[f]};
            for (size_t g = 0; g < f; g++) /* one file per folder */
                if (strcmp(files[g].dir, files[f].dir) == 0) files[f].text = NULL;
        }
        for (size_t f = 0; f < nfiles; f++) {
            if (!files[f].text) continue;
            char rel[PATH_MAX];
            snprintf(rel, sizeof rel, "%s%s.gitignore", files[f].dir, *files[f].dir ? "/" : "");
            put(r.root, rel, files[f].text);
        }
        /* compact the list for the message */
        IgnoreFile shown[MAX_IGNORE_FILES] = {{0}};
        for (size_t f = 0, s = 0; f < nfiles; f++)
            if (files[f].text) shown[s++] = files[f];
        char label[128];
        snprintf(label, sizeof label, "generated case %zu (seed %llu)", c, seed);
        wrong += compare(&r, "", shown, label) ? 1 : 0;
        for (size_t f = 0; f < nfiles; f++) {
            if (!files[f].text) continue;
            char rel[PATH_MAX];
            snprintf(rel, sizeof rel, "%s%s.gitignore", files[f].dir, *files[f].dir ? "/" : "");
            drop(r.root, rel);
        }
        if (wrong >= 10) break; /* enough to read */
    }
    cr_expect_eq(wrong, 0, "%zu generated cases disagree with git (seed %llu)", wrong, seed);
    repo_free(&r);
}

/* glob_match on its own: the '**' rules and classes, without a tree */
Test(ignore_rules, glob_match_basics) {
    cr_expect(glob_match("a/**/b", "a/b"));
    cr_expect(glob_match("a/**/b", "a/x/y/b"));
    cr_expect(!glob_match("a/**/b", "a/xb"));
    cr_expect(glob_match("**/b", "b"));
    cr_expect(glob_match("a/**", "a/x/y"));
    cr_expect(!glob_match("a/**", "a"));
    cr_expect(!glob_match("a**b", "a/b"), "'**' inside a name is one '*'");
    cr_expect(glob_match("a**b", "axxb"));
    cr_expect(!glob_match("*", "a/b"));
    cr_expect(glob_match("[]]", "]"));
    cr_expect(glob_match("[\\]]", "]"));
    cr_expect(glob_match("[[:alpha:]]", "q"));
    cr_expect(!glob_match("[[:alpha:]]", "1"));
    cr_expect(!glob_match("q[1", "q[1"), "an unterminated class matches nothing");
    cr_expect(!glob_match("[a/]", "/"));
}
