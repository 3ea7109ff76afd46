/* The rules' documentation as markdown (see rule_docs.h). */
#include "server/render/rule_docs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/base/atomic_file.h"
#include "analysis/base/text_format.h"

const char *rule_languages_text(unsigned languages) {
    if ((languages & LANGUAGE_PYTHON) && (languages & LANGUAGE_CUDA)) return "python,cuda";
    if (languages & LANGUAGE_PYTHON) return "python";
    if (languages & LANGUAGE_CUDA) return "cuda";
    return "-";
}

bool rule_needs_profile(const Rule *rule) { return rule->check_profile != NULL; }

/* the phrases that say a fix is safe or unsafe in a "## Fix safety" section */
static const char *const safe_phrases[] = {"is safe", "is **safe**", "are safe", "safe fix", "safe:", NULL};
static const char *const unsafe_phrases[] = {"is unsafe",  "is **unsafe**", "are unsafe", "unsafe fix",
                                             "marked unsafe", "unsafe:",      NULL};

/* text (lowercase, one line) holds one of phrases; "safe ..." not as the end of "unsafe ..." */
static bool says(const char *text, const char *const *phrases) {
    for (size_t i = 0; phrases[i]; i++)
        for (const char *p = strstr(text, phrases[i]); p; p = strstr(p + 1, phrases[i]))
            if (strncmp(phrases[i], "safe", 4) != 0 || p - text < 2 || strncmp(p - 2, "un", 2) != 0) return true;
    return false;
}

const char *rule_fix_safety(const Rule *rule) {
    static const char heading[] = "## Fix safety\n";
    const char *doc = rule->documentation ? rule->documentation : "";
    const char *start = strstr(doc, heading);
    if (!start) return "see page";
    start += sizeof heading - 1;
    while (*start == '\n') start++;
    const char *end = strstr(start, "\n## ");
    if (!end) end = start + strlen(start);
    if (strncasecmp(start, "No automatic fix", 16) == 0 || strncasecmp(start, "No fix", 6) == 0) return "none";
    char *text = strndup(start, (size_t)(end - start));
    if (!text) return "see page";
    for (char *p = text; *p; p++) *p = *p == '\n' ? ' ' : (char)tolower((unsigned char)*p);
    bool safe = says(text, safe_phrases), unsafe = says(text, unsafe_phrases);
    free(text);
    if (safe && unsafe) return "safe or unsafe";
    if (unsafe) return "unsafe";
    if (safe) return "safe";
    return "see page";
}

/* A summary is plain text that may hold `code`: outside code spans, `*` and
 * the `_` that could start or end emphasis (`__shared__`; not the one in
 * `non_blocking`) are escaped; in a table cell `|` too, and line breaks
 * become spaces. */
static void summary_text(FILE *out, const char *text, bool cell) {
    bool code = false;
    for (const char *p = text ? text : ""; *p; p++) {
        if (*p == '`') code = !code;
        bool intraword = p > text && isalnum((unsigned char)p[-1]) && isalnum((unsigned char)p[1]);
        if (!code && (*p == '*' || (*p == '_' && !intraword))) fputc('\\', out);
        if (cell && *p == '|') fputs("\\|", out);
        else if (cell && *p == '\n') fputc(' ', out);
        else fputc(*p, out);
    }
}

bool rule_docs_write_page(FILE *out, const Rule *rule) {
    const char *doc = rule->documentation ? rule->documentation : "";
    size_t n = strlen(doc);
    const char *fix = rule_fix_safety(rule);
    fprintf(out, "# %s %s\n\n", rule->code, rule->name);
    summary_text(out, rule->summary, false);
    fprintf(out, ".\n\nDefault severity: %s. Languages: %s. Fix: %s.", severity_name(rule->severity),
            rule_languages_text(rule->languages), strcmp(fix, "see page") == 0 ? "see *Fix safety* below" : fix);
    if (rule_needs_profile(rule)) fputs(" Needs a profile: it runs on the files a merged profile mentions.", out);
    fputs("\n\n", out);
    fputs(doc, out);
    if (n && doc[n - 1] != '\n') fputc('\n', out);
    return !ferror(out);
}

/* ---- the index ------------------------------------------------------------- */

enum { KIND_PYTHON, KIND_CUDA, KIND_PROFILE };

static int rule_kind(const Rule *rule) {
    if (rule_needs_profile(rule)) return KIND_PROFILE;
    return rule->languages & LANGUAGE_PYTHON ? KIND_PYTHON : KIND_CUDA;
}

bool rule_docs_write_index(FILE *out, const char *pages) {
    static const struct {
        const char *title, *text;
    } kinds[] = {
        [KIND_PYTHON] = {"Python", "Python files (`.py`), read with tree-sitter."},
        [KIND_CUDA] = {"CUDA, C and C++",
                       "`.cu` and `.cuh` files, and C and C++ files that mention CUDA, read with libclang 19 "
                       "(they need the CUDA toolkit's headers: see [how advise reads code](analysis.md))."},
        [KIND_PROFILE] = {"Profile rules",
                          "They report what only a profile shows, on the line where the cost is paid, in the "
                          "files a merged profile mentions ([profiling](profiling.md)); their estimated gains are "
                          "upper bounds and say so."},
    };
    size_t count, per_kind[3] = {0};
    const Rule *const *all = rules_all(&count);
    for (size_t i = 0; i < count; i++) per_kind[rule_kind(all[i])]++;
    fputs("<!-- Generated from the rule registry by `advise rules --format markdown --output-dir docs`:\n"
          "     do not edit. Edit the rule's descriptor in rules/ and run that command again. -->\n",
          out);
    fprintf(out,
            "# Rules\n\n"
            "advise has %zu rules: %zu for Python, %zu for CUDA, C and C++, and %zu that read a profile.\n"
            "`advise rules` lists them, and `advise rule CODE` (or its name) prints a rule's page: what\n"
            "it finds, why that is slow, an example, what to use instead, and whether its fix is safe.\n"
            "The language server links each diagnostic to the same page.\n\n",
            count, per_kind[KIND_PYTHON], per_kind[KIND_CUDA], per_kind[KIND_PROFILE]);
    fputs("*Fix* says what the rule's fixes are: **safe** fixes keep the program's results and are\n"
          "applied by `advise check --fix` and the editor's *fix all*; **unsafe** ones may change\n"
          "results or behaviour and are applied only with `--fix --unsafe-fixes` (or one at a time from\n"
          "the editor); **none**: the message explains the change instead; **safe or unsafe**: it\n"
          "depends on the case, and the page says when; **see page**: the page's *Fix safety*\n"
          "section describes the fix without the words safe or unsafe.\n\n"
          "Choosing rules and their severity: [configuration](configuration.md). How a profile's\n"
          "figures attach to each rule's findings: [measurement models](models.md).\n",
          out);
    for (int kind = KIND_PYTHON; kind <= KIND_PROFILE; kind++) {
        fprintf(out, "\n## %s\n\n%s\n\n", kinds[kind].title, kinds[kind].text);
        fputs("| code | name | languages | default severity | fix | summary |\n"
              "| --- | --- | --- | --- | --- | --- |\n",
              out);
        for (size_t i = 0; i < count; i++) {
            const Rule *r = all[i];
            if (rule_kind(r) != kind) continue;
            fprintf(out, "| [%s](%s/%s.md) | `%s` | %s | %s | %s | ", r->code, pages, r->code, r->name,
                    rule_languages_text(r->languages), severity_name(r->severity), rule_fix_safety(r));
            summary_text(out, r->summary, true);
            fputs(" |\n", out);
        }
    }
    return !ferror(out);
}

/* ---- files ---------------------------------------------------------------------- */

static bool make_dirs(const char *dir, char **error) {
    char *path = strdup(dir);
    if (!path) {
        *error = format_string("out of memory");
        return false;
    }
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char c = *p;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            *error = format_string("cannot create %s: %s", path, strerror(errno));
            free(path);
            return false;
        }
        *p = c;
        if (!c) break;
    }
    free(path);
    return true;
}

static bool write_page(FILE *out, const void *rule) { return rule_docs_write_page(out, rule); }
static bool write_index(FILE *out, const void *pages) { return rule_docs_write_index(out, pages); }

/* "PY001.md": two capitals, three digits */
static bool page_name(const char *name) {
    return strlen(name) == 8 && isupper((unsigned char)name[0]) && isupper((unsigned char)name[1]) &&
           isdigit((unsigned char)name[2]) && isdigit((unsigned char)name[3]) && isdigit((unsigned char)name[4]) &&
           strcmp(name + 5, ".md") == 0;
}

bool rule_docs_write_pages(const char *dir, bool remove_stale, char **error) {
    *error = NULL;
    if (!make_dirs(dir, error)) return false;
    size_t count;
    const Rule *const *all = rules_all(&count);
    for (size_t i = 0; i < count; i++) {
        char *path = format_string("%s/%s.md", dir, all[i]->code);
        bool ok = path && atomic_file_write(path, write_page, all[i], error);
        if (!path) *error = format_string("out of memory");
        free(path);
        if (!ok) return false;
    }
    if (!remove_stale) return true;
    DIR *d = opendir(dir);
    if (!d) {
        *error = format_string("cannot read %s: %s", dir, strerror(errno));
        return false;
    }
    bool ok = true;
    for (struct dirent *e; ok && (e = readdir(d));) {
        if (!page_name(e->d_name)) continue;
        char code[6];
        memcpy(code, e->d_name, 5);
        code[5] = '\0';
        if (rule_find(code)) continue;
        char *path = format_string("%s/%s", dir, e->d_name);
        if (!path || unlink(path) != 0) {
            *error = format_string("cannot remove %s/%s: %s", dir, e->d_name, path ? strerror(errno) : "out of memory");
            ok = false;
        }
        free(path);
    }
    closedir(d);
    return ok;
}

bool rule_docs_write_index_file(const char *path, const char *pages, char **error) {
    *error = NULL;
    return atomic_file_write(path, write_index, pages, error);
}
