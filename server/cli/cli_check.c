/* `advise check`: analyse files and folders, print findings, apply fixes. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <libgen.h>
#include <sys/stat.h>

#include "analysis/base/atomic_file.h"
#include "analysis/base/growable.h"
#include "analysis/base/read_bounded.h"
#include "analysis/cuda/cuda_flags.h"
#include "analysis/edits.h"
#include "rules/engine/engine.h"
#include "server/workspace/check_file.h"
#include "server/workspace/check_pool.h"
#include "server/render/check_filter.h"
#include "server/render/check_output.h"
#include "server/cli/cli.h"
#include "server/workspace/file_walk.h"
#include "profiler/profile_store.h"
#include "server/workspace/source_file.h"
#include "server/render/unified_diff.h"
#include "analysis/base/text_format.h"

#define MAX_FIX_PASSES 10

typedef struct {
    OutputFormat format;
    bool fix, unsafe_fixes, diff, show_source, quiet;
    bool error_on_parse_failure; /* a file that does not parse cleanly makes the run exit 2 */
    bool require_cuda;           /* CUDA files skipped for want of the toolkit make the run exit 2 */
    const char *config_path;
    bool no_config;
    const char *output_path;  /* -o/--output: written atomically at the end */
    const char *stdin_name;   /* --stdin-filename: what the text read from stdin ("-") is checked as */
    const char *profile_path; /* --profile */
    bool no_profile;
    Config cfg;
    char *project_root;       /* profile paths are relative to it */
    ProfileSet *profiles;     /* merged when not NULL */
    PyWorkspaces *workspaces; /* the Python modules of the projects checked, for facts that cross files */
    size_t files_merged;
    char *merge_note;         /* "merging profile ..." for stderr, once a file merges */
    unsigned jobs;            /* -j: files analysed at once */
    const char *diff_base;      /* --diff-base REF */
    const char *baseline_path;  /* --baseline FILE */
    const char *write_baseline; /* --write-baseline FILE */
    CheckFilter *filter;        /* what is reported, when one of the three is given (check_filter.h) */
} CheckOptions;

static void check_usage(FILE *out) {
    fputs("usage: advise check [options] [PATHS...]\n"
          "\n"
          "Analyses Python and CUDA files, and folders recursively (skipping what .gitignore ignores).\n"
          "\n"
          "options:\n"
          "  --format FORMAT          text (default), json (docs/json-output.md), or for pull-request checks\n"
          "                           sarif, github or gitlab (docs/ci.md)\n"
          "  -o, --output FILE        write the findings to FILE (atomically) instead of stdout\n"
          "  --stdin-filename NAME    with the path -: check stdin as the file NAME (language, config,\n"
          "                           profile and the paths shown)\n"
          "  --select LIST            only these rules: codes, prefixes, names or ALL, comma-separated\n"
          "                           (replaces the config's select)\n"
          "  --ignore LIST            skip these rules (added to the config's ignore)\n"
          "  --severity RULE=LEVEL    override a rule's severity (error, warning, info, hint); repeatable\n"
          "  --fail-on LEVEL          exit 1 when a finding is at or above LEVEL (default warning), or never\n"
          "  --fix                    apply safe fixes in place (atomic; refuses files changed meanwhile)\n"
          "  --unsafe-fixes           with --fix or --diff: apply unsafe fixes too\n"
          "  --diff                   print the fixes as a unified diff; write nothing\n"
          "  --config FILE            read settings from FILE instead of the nearest advise.toml\n"
          "  --no-config              ignore advise.toml files\n"
          "  --max-file-size BYTES    skip larger files (default 2 MiB)\n"
          "  --profile FILE|DIR       merge a profile, or every profile in a folder (each file takes the\n"
          "                           newest that mentions it); default: [profile] dir when it holds any\n"
          "  --no-profile             merge no profile\n"
          "  --no-source              do not print the source line under each finding\n"
          "  --quiet                  no summary line and no notes on what was merged (warnings stay)\n"
          "  --error-on-parse-failure exit 2 when a file does not parse cleanly (default: report it, check\n"
          "                           what parsed, and let its findings decide the exit status)\n"
          "  -j, --jobs N             analyse N files at once (default: one per CPU); the output is the\n"
          "                           same whatever N is\n"
          "  --require-cuda           exit 2 when CUDA files are skipped because no CUDA toolkit is found\n"
          "                           (default: skip them, say so once, and let the other files decide)\n"
          "\n"
          "pull-request checks (docs/ci.md):\n"
          "  --diff-base REF          report only findings on lines added or changed since the git revision\n"
          "                           REF: the working tree against it (staged, unstaged, untracked files;\n"
          "                           renames followed, moved lines count as added); a finding counts when\n"
          "                           a line of it or of its related locations changed; files without a\n"
          "                           changed line are not checked\n"
          "  --baseline FILE          report only findings whose fingerprint FILE does not hold; the summary\n"
          "                           says how many known ones were left out and how many were fixed\n"
          "  --write-baseline FILE    record every finding of this run in FILE (sorted JSON, one finding a\n"
          "                           line, written atomically); exits 0 unless a path had problems\n"
          "\n"
          "exit status: 0 nothing at or above --fail-on, 1 findings at or above it, 2 usage or I/O error,\n"
          "or a file advise could not analyse. With --diff-base or --baseline only the findings reported count.\n",
          out);
}

enum { OPT_FORMAT = 256, OPT_SELECT, OPT_IGNORE, OPT_SEVERITY, OPT_FAIL_ON, OPT_FIX, OPT_UNSAFE, OPT_DIFF,
       OPT_CONFIG, OPT_NO_CONFIG, OPT_MAX_SIZE, OPT_NO_SOURCE, OPT_QUIET, OPT_HELP, OPT_PROFILE, OPT_NO_PROFILE,
       OPT_ERROR_ON_PARSE_FAILURE, OPT_STDIN_FILENAME, OPT_REQUIRE_CUDA, OPT_DIFF_BASE, OPT_BASELINE, OPT_WRITE_BASELINE };

/* -j/--jobs: a usage error unless a positive number */
static bool parse_jobs(const char *text, unsigned *jobs) {
    if (check_pool_parse_jobs(text, jobs)) return true;
    cli_usage_error("check", "-j wants a positive number of files to analyse at once, not '%s'", text);
    return false;
}

static const struct option long_options[] = {
    {"format", required_argument, 0, OPT_FORMAT},     {"select", required_argument, 0, OPT_SELECT},
    {"ignore", required_argument, 0, OPT_IGNORE},     {"severity", required_argument, 0, OPT_SEVERITY},
    {"fail-on", required_argument, 0, OPT_FAIL_ON},   {"fix", no_argument, 0, OPT_FIX},
    {"unsafe-fixes", no_argument, 0, OPT_UNSAFE},     {"diff", no_argument, 0, OPT_DIFF},
    {"config", required_argument, 0, OPT_CONFIG},     {"no-config", no_argument, 0, OPT_NO_CONFIG},
    {"max-file-size", required_argument, 0, OPT_MAX_SIZE}, {"no-source", no_argument, 0, OPT_NO_SOURCE},
    {"quiet", no_argument, 0, OPT_QUIET},             {"help", no_argument, 0, OPT_HELP},
    {"profile", required_argument, 0, OPT_PROFILE},   {"no-profile", no_argument, 0, OPT_NO_PROFILE},
    {"error-on-parse-failure", no_argument, 0, OPT_ERROR_ON_PARSE_FAILURE},
    {"require-cuda", no_argument, 0, OPT_REQUIRE_CUDA},
    {"output", required_argument, 0, 'o'},            {"stdin-filename", required_argument, 0, OPT_STDIN_FILENAME},
    {"jobs", required_argument, 0, 'j'},
    {"diff-base", required_argument, 0, OPT_DIFF_BASE}, {"baseline", required_argument, 0, OPT_BASELINE},
    {"write-baseline", required_argument, 0, OPT_WRITE_BASELINE},
    {0, 0, 0, 0}};

/* Command-line settings are collected apart and laid over the config file. */
typedef struct {
    StringList select, ignore, severity;
    const char *fail_on;
    long long max_size;
    bool select_given;
} CommandLineSettings;

static bool apply_fail_on(Config *cfg, const char *text) {
    if (strcasecmp(text, "never") == 0) {
        cfg->fail_never = true;
        return true;
    }
    cfg->fail_never = false;
    return severity_parse(text, &cfg->fail_on);
}

static int load_settings(CheckOptions *o, const CommandLineSettings *cl, char **root) {
    if (cli_load_config_file(o->config_path, o->no_config, &o->cfg, root) != EXIT_CLEAN) return EXIT_TROUBLE;
    if (*root) o->project_root = strdup(*root);
    if (!*root) *root = realpath(".", NULL);
    if (!o->project_root) o->project_root = profile_store_root(); /* advise.toml, else .git, else here */
    if (cl->select_given) {
        string_list_free(&o->cfg.select);
        for (size_t i = 0; i < cl->select.count; i++) string_list_add(&o->cfg.select, cl->select.items[i]);
    }
    for (size_t i = 0; i < cl->ignore.count; i++) string_list_add(&o->cfg.ignore, cl->ignore.items[i]);
    char *error = NULL;
    if (!config_validate(&o->cfg, &error)) {
        fprintf(stderr, "advise check: %s\n", error);
        free(error);
        return EXIT_TROUBLE;
    }
    for (size_t i = 0; i < cl->severity.count; i++) {
        char *item = cl->severity.items[i];
        char *eq = strchr(item, '=');
        if (!eq) return cli_usage_error("check", "--severity wants RULE=LEVEL, not '%s'", item);
        *eq = '\0';
        bool ok = config_set_severity(&o->cfg, item, eq + 1);
        *eq = '=';
        if (!ok) return cli_usage_error("check", "--severity: unknown rule or level in '%s'", item);
    }
    if (cl->fail_on && !apply_fail_on(&o->cfg, cl->fail_on))
        return cli_usage_error("check", "--fail-on wants error, warning, info, hint or never, not '%s'", cl->fail_on);
    if (cl->max_size > 0) o->cfg.max_file_bytes = (size_t)cl->max_size;
    return EXIT_CLEAN;
}

/* "2026-11-30 15:19 UTC on NVIDIA H200" */
static void describe_profile(const ProfileView *v, char *buf, size_t size) {
    const Profile *p = profile_view_profile(v);
    const ProfDevice *d = profile_view_device(v);
    snprintf(buf, size, "%.10s %.5s UTC%s%s", p->created, strlen(p->created) >= 16 ? p->created + 11 : "",
             d ? " on " : "", d ? d->name : "");
}

/* --profile, or [profile] dir when it holds profiles; prepares the line
 * that says on stderr what is merged (printed when a file first merges). */
static int load_profiles(CheckOptions *o) {
    if (o->no_profile) return EXIT_CLEAN;
    char *error = NULL, *dir = NULL;
    if (o->profile_path) {
        o->profiles = profile_set_load(o->profile_path, &error);
        if (!o->profiles) {
            fprintf(stderr, "advise check: --profile: %s\n", error ? error : "out of memory");
            free(error);
            return EXIT_TROUBLE;
        }
    } else {
        dir = o->project_root ? profile_store_dir(o->project_root, o->cfg.profile_dir) : NULL;
        struct stat st;
        if (dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) o->profiles = profile_set_load(dir, &error);
        free(error); /* an empty or unusable folder: check without a profile */
        if (!o->profiles) {
            free(dir);
            return EXIT_CLEAN;
        }
    }
    const char *const *notes;
    size_t note_count = profile_set_notes(o->profiles, &notes);
    /* warnings, which --quiet does not hide: a profile the user may think was merged was not */
    for (size_t i = 0; i < note_count; i++) fprintf(stderr, "advise: skipped profile %s\n", notes[i]);
    if (o->quiet) {
        free(dir);
        return EXIT_CLEAN;
    }
    char when[160];
    const ProfileView *newest = profile_set_at(o->profiles, 0);
    describe_profile(newest, when, sizeof when);
    size_t count = profile_set_count(o->profiles);
    if (count == 1)
        o->merge_note = format_string("advise: merging profile %s (recorded %s)\n",
                                      profile_store_display(profile_view_path(newest)), when);
    else
        o->merge_note = format_string("advise: merging %zu profiles from %s, each file with the newest that mentions "
                                      "it (newest recorded %s)\n",
                                      count, profile_store_display(o->profile_path ? o->profile_path : dir), when);
    free(dir);
    return EXIT_CLEAN;
}

/* --diff-base, --baseline, --write-baseline: the filter of what is
 * reported. git runs in the folder of the first path (or in it). */
static int load_filter(CheckOptions *o, const char *first_path) {
    if (!o->diff_base && !o->baseline_path && !o->write_baseline) return EXIT_CLEAN;
    char *error = NULL;
    GitChanges *changes = NULL;
    Baseline *baseline = NULL;
    if (o->diff_base) {
        struct stat st;
        char *copy = strdup(first_path);
        char *where = copy && stat(first_path, &st) == 0 && S_ISDIR(st.st_mode) ? strdup(copy)
                      : copy                                                   ? strdup(dirname(copy))
                                                                               : NULL;
        free(copy);
        changes = where ? git_changes_load(where, o->diff_base, &error) : NULL;
        free(where);
        if (!changes) {
            fprintf(stderr, "advise check: %s\n", error ? error : "out of memory");
            free(error);
            return EXIT_TROUBLE;
        }
    }
    if (o->baseline_path) {
        baseline = calloc(1, sizeof *baseline);
        if (!baseline || !baseline_read(o->baseline_path, baseline, &error)) {
            fprintf(stderr, "advise check: --baseline: %s\n", error ? error : "out of memory");
            free(error);
            free(baseline);
            git_changes_free(changes);
            return EXIT_TROUBLE;
        }
    }
    CheckFilterOptions options = {o->project_root, changes, o->diff_base, baseline, o->write_baseline != NULL};
    o->filter = check_filter_new(&options);
    if (!o->filter) {
        fputs("advise check: out of memory\n", stderr);
        git_changes_free(changes);
        if (baseline) baseline_free(baseline);
        free(baseline);
        return EXIT_TROUBLE;
    }
    return EXIT_CLEAN;
}

/* Analyses text (with the profile merged when profiles is not NULL); on
 * success the caller frees *file. */
static bool analyse(const CheckOptions *o, const char *path, const char *text, size_t len,
                    const ProfileSource *profiles, CheckedFile *file, char **error) {
    return check_file_text(path, text, len, &o->cfg, profiles, o->project_root, o->workspaces, file, error);
}

/* parsed_cleanly: --fix applies fixes only in files that parsed cleanly;
 * the others' fixes are counted apart, not promised. */
static void count_findings(CheckSummary *s, const FindingList *findings, const Config *cfg, bool parsed_cleanly,
                           bool *failing) {
    for (size_t i = 0; i < findings->count; i++) {
        const Finding *f = &findings->items[i];
        s->findings++;
        s->by_severity[f->severity]++;
        if (f->fix_count && !parsed_cleanly) s->fixes_withheld++;
        else if (f->fix_count) {
            if (f->fixes[0].safe) s->fixable_safe++;
            else s->fixable_unsafe++;
        }
        if (!cfg->fail_never && f->severity <= cfg->fail_on) *failing = true;
    }
}

/* Fixes the profile withheld (measured to slow the code down), known by
 * their rule and the text they cover: later passes run without the profile,
 * whose line numbers no longer fit the edited text. */
typedef struct {
    const char *code;
    char *text;
} Withheld;

static void remember_withheld(Withheld **list, size_t *count, size_t *cap, const FindingList *findings,
                              const char *text) {
    for (size_t i = 0; i < findings->count; i++) {
        const Finding *f = &findings->items[i];
        if (!f->fixes_withheld) continue;
        if (!array_reserve(list, *count, cap, sizeof **list, 8)) return;
        char *covered = strndup(text + f->range.start, f->range.end - f->range.start);
        if (!covered) return;
        (*list)[(*count)++] = (Withheld){f->code, covered};
    }
}

static void drop_withheld(FindingList *findings, const Withheld *list, size_t count, const char *text) {
    for (size_t i = 0; i < findings->count; i++) {
        Finding *f = &findings->items[i];
        size_t len = f->range.end - f->range.start;
        for (size_t k = 0; f->fix_count && k < count; k++)
            if (strcmp(list[k].code, f->code) == 0 && strlen(list[k].text) == len &&
                memcmp(list[k].text, text + f->range.start, len) == 0)
                finding_drop_fixes(f);
    }
}

/* Applies fixes again and again until none is left. Returns the new text
 * (or NULL when nothing changed) and counts the fixes. The first pass merges
 * the profile, so that a fix it withholds stays withheld. */
static char *fix_text(const CheckOptions *o, const char *path, const char *text, size_t len, bool unsafe,
                      size_t *new_len, size_t *fixed) {
    char *current = NULL;
    const char *cur = text;
    size_t cur_len = len;
    *fixed = 0;
    Withheld *withheld = NULL;
    size_t withheld_count = 0, withheld_cap = 0;
    ProfileSource profiles = {o->profiles, NULL};
    for (int pass = 0; pass < MAX_FIX_PASSES; pass++) {
        CheckedFile checked;
        char *error = NULL;
        if (!analyse(o, path, cur, cur_len, pass == 0 ? &profiles : NULL, &checked, &error)) {
            free(error);
            break;
        }
        if (pass == 0) remember_withheld(&withheld, &withheld_count, &withheld_cap, &checked.findings, cur);
        else drop_withheld(&checked.findings, withheld, withheld_count, cur);
        size_t applied = 0, out_len = 0;
        char *next = checked.report.syntax_error
                         ? NULL
                         : fixes_apply(cur, cur_len, &checked.findings, unsafe, &out_len, &applied);
        checked_file_free(&checked);
        if (!next) break;
        if (applied == 0 || (out_len == cur_len && memcmp(next, cur, cur_len) == 0)) {
            free(next);
            break;
        }
        *fixed += applied;
        free(current);
        current = next;
        cur = current;
        cur_len = out_len;
    }
    for (size_t k = 0; k < withheld_count; k++) free(withheld[k].text);
    free(withheld);
    *new_len = cur_len;
    return current;
}

/* One file as check_one leaves it for emit_one. */
typedef struct {
    const char *path;
    FilterVerdict verdict; /* --diff-base: check it, skip it (no line changed), or refuse it (outside the repository) */
    char *cuda_skip_reason; /* not analysed: no CUDA toolkit (cuda_toolkit_missing), or NULL */
    bool read;           /* file holds its text */
    SourceFile file;     /* the text read (owned unless it is stdin's) */
    bool own_file;
    char *error;         /* it could not be read, or analysed, or was refused */
    bool analysed;       /* checked holds the analysis */
    CheckedFile checked; /* of the text after the fixes, with --fix */
    char *fixed_text;    /* --fix or --diff: the text after the fixes, or NULL when none applies */
    size_t fixed_len, fixed;
    ProfileView *moved;  /* --fix: the profile moved onto the fixed text's lines */
} FileResult;

static void file_result_free(FileResult *r) {
    free(r->error);
    free(r->cuda_skip_reason);
    if (r->analysed) checked_file_free(&r->checked);
    free(r->fixed_text);
    profile_view_free(r->moved);
    if (r->own_file) source_file_free(&r->file);
    memset(r, 0, sizeof *r);
}

/* Why a CUDA file cannot be analysed on this machine (no CUDA toolkit: every
 * such file would fail to compile), or NULL; emit_one counts it, and the
 * reason is said once at the end. */
static char *cuda_skip_reason(const CheckOptions *o, const char *path) {
    if (language_for_path(path) != LANGUAGE_CUDA) return NULL;
    CudaFlagOptions options = {o->cfg.cuda_build_dir, o->cfg.cuda_gpu_arch, o->cfg.cuda_path};
    return cuda_toolkit_missing(path, &options);
}

/* stdin: the text read from stdin, checked as path (--fix refused before).
 * Reads and analyses; writes nothing and prints nothing, so that it can run
 * on a worker thread (check_pool.h): emit_one does that, in the files'
 * order. --fix analyses the fixed text here; emit_one writes it. */
static void check_one(const CheckOptions *o, const char *path, const SourceFile *stdin_text, FileResult *r) {
    r->path = path;
    /* --diff-base: a file with no changed line is not read (the filter locks its own state) */
    r->verdict = o->filter ? check_filter_file(o->filter, path, &r->error) : FILTER_CHECK;
    if (r->verdict != FILTER_CHECK) return;
    if ((r->cuda_skip_reason = cuda_skip_reason(o, path))) return;
    SourceFile file = {0};
    if (stdin_text) file = *stdin_text;
    else if (!source_file_read(path, o->cfg.max_file_bytes, &file, &r->error)) return;
    r->read = true;
    r->file = file;
    r->own_file = !stdin_text;
    const char *text = file.text;
    size_t len = file.length;
    if (o->fix || o->diff) {
        r->fixed_text = fix_text(o, path, file.text, file.length, o->unsafe_fixes, &r->fixed_len, &r->fixed);
        if (r->fixed_text && o->fix) {
            text = r->fixed_text;
            len = r->fixed_len;
            ProfileSource before = {o->profiles, NULL};
            r->moved = profile_after_fixes(&before, o->project_root, path, file.text, file.length, r->fixed_text,
                                           r->fixed_len);
        }
    }
    /* after --fix, the profile moved onto the fixed text's lines when it measured the text before */
    ProfileSource profiles = {r->moved ? NULL : o->profiles, r->moved};
    r->analysed = analyse(o, path, text, len, &profiles, &r->checked, &r->error);
}

/* Prints and counts what check_one found, and writes --fix's text; false
 * when the file could not be checked (or written). */
static bool emit_one(CheckOptions *o, FileResult *r, CheckOutput *out, CheckSummary *s, bool *failing) {
    const char *path = r->path;
    if (r->verdict != FILTER_CHECK) { /* --diff-base: no line changed (skip), or outside the repository */
        if (r->verdict == FILTER_REFUSE) check_output_error(out, path, r->error);
        return r->verdict == FILTER_SKIP;
    }
    if (r->cuda_skip_reason) {
        s->cuda_skipped++;
        if (!s->cuda_skip_reason) {
            s->cuda_skip_reason = r->cuda_skip_reason;
            r->cuda_skip_reason = NULL;
        }
        return true;
    }
    if (!r->read) {
        check_output_error(out, path, r->error);
        return false;
    }
    bool ok = true;
    if (r->fixed_text && o->diff) {
        char *a = format_string("a/%s", path), *b = format_string("b/%s", path);
        unified_diff_write(stdout, a, b, r->file.text, r->file.length, r->fixed_text, r->fixed_len);
        free(a);
        free(b);
        s->fixed += r->fixed;
        s->files_fixed++;
    } else if (r->fixed_text) {
        char *error = NULL;
        if (source_file_replace(path, &r->file, r->fixed_text, r->fixed_len, &error)) {
            s->fixed += r->fixed;
            s->files_fixed++;
        } else {
            check_output_error(out, path, error);
            free(error);
            ok = false;
            /* the file keeps the text it had: its findings are that text's */
            if (r->analysed) checked_file_free(&r->checked);
            free(r->error);
            r->error = NULL;
            ProfileSource profiles = {o->profiles, NULL};
            r->analysed = analyse(o, path, r->file.text, r->file.length, &profiles, &r->checked, &r->error);
        }
    }
    if (r->analysed) {
        const Document *doc = r->checked.doc;
        const EngineReport *report = &r->checked.report;
        s->files_checked++;
        s->suppressed += report->suppressed + r->checked.merge.suppressed;
        if (r->checked.merge.mentioned && o->files_merged++ == 0 && o->merge_note) fputs(o->merge_note, stderr);
        if (report->syntax_error) {
            size_t line, col;
            display_position(doc, report->error_offset, &line, &col);
            char *msg = format_string("%s%s%s; findings cover the parts that parsed%s",
                                      doc->language == LANGUAGE_CUDA ? "does not compile here" : "syntax error",
                                      report->error_message[0] ? ": " : "", report->error_message,
                                      o->fix || o->diff ? ", and no fixes were applied to it" : "");
            check_output_parse_failure(out, path, line, col, msg);
            free(msg);
            s->parse_failures++;
            if (o->error_on_parse_failure) ok = false;
        }
        /* --diff-base, --baseline: only what they let through is shown and counted (in the files' order,
         * on this thread: a baseline's entries are matched first come, first served) */
        char(*prints)[SHA256_HEX_CHARS + 1] =
            o->filter ? check_filter_findings(o->filter, path, doc, &r->checked.findings, !report->syntax_error)
                      : NULL;
        if (!o->diff) check_output_file_fingerprinted(out, path, doc, &r->checked.findings, prints);
        count_findings(s, &r->checked.findings, &o->cfg, !report->syntax_error, failing);
        free(prints);
    } else {
        check_output_error(out, path, r->error);
        ok = false;
    }
    return ok;
}

/* The files of a run, checked by the pool (check_pool.h) and emitted in order. */
typedef struct {
    CheckOptions *o;
    const char *const *paths;
    size_t count;
    FileResult *held;  /* --fix: every result, emitted once all are analysed */
    CheckOutput *out;
    CheckSummary *summary;
    bool *failing, *trouble;
} CheckRun;

static void run_work(void *ctx, size_t i, void *result) {
    CheckRun *run = ctx;
    check_one(run->o, run->paths[i], NULL, result);
}

static void run_discard(void *ctx, size_t i, void *result) {
    (void)ctx;
    (void)i;
    file_result_free(result);
}

static void run_emit_result(CheckRun *run, FileResult *r) {
    if (!emit_one(run->o, r, run->out, run->summary, run->failing)) {
        run->summary->errors++;
        *run->trouble = true;
    }
    file_result_free(r);
}

static void run_emit(void *ctx, size_t i, void *result) {
    CheckRun *run = ctx;
    if (run->held) run->held[i] = *(FileResult *)result; /* --fix: written once every file was read */
    else run_emit_result(run, result);
}

/* paths: sorted, a path named twice appears twice (checked once) */
static void check_files(CheckRun *run, unsigned jobs) {
    CheckOptions *o = run->o;
    const char **unique = run->count ? malloc(run->count * sizeof *unique) : NULL;
    size_t n = 0;
    for (size_t i = 0; unique && i < run->count; i++)
        if (i == 0 || strcmp(run->paths[i], run->paths[i - 1]) != 0) /* named twice: once */
            unique[n++] = run->paths[i];
    if (run->count && !unique) {
        fputs("advise check: out of memory\n", stderr);
        *run->trouble = true;
        return;
    }
    run->paths = unique;
    run->count = n;
    check_pool_index_projects(o->workspaces, unique, n);
    /* --fix writes after every file was read: no file's analysis sees another's fixes half made */
    run->held = o->fix && n ? calloc(n, sizeof *run->held) : NULL;
    CheckPool pool = {.count = n,
                      .jobs = o->fix && n && !run->held ? 1 : jobs, /* no room to hold them: write as it goes */
                      .result_size = sizeof(FileResult),
                      .progress = isatty(STDERR_FILENO),
                      .ordered_learning = true,
                      .work = run_work,
                      .discard = run_discard,
                      .emit = run_emit,
                      .ctx = run};
    check_pool_run(&pool);
    for (size_t i = 0; run->held && i < n; i++) run_emit_result(run, &run->held[i]);
    free(run->held);
    free(unique);
}

/* The whole of stdin, checked as source_file_read checks a file. */
static bool read_stdin(SourceFile *out, size_t max_bytes) {
    char *buf = NULL;
    size_t len = 0;
    bool too_large = false;
    if (!read_fd_bounded(STDIN_FILENO, max_bytes, &buf, &len, &too_large)) {
        fprintf(stderr, "advise check: cannot read stdin: %s\n", strerror(errno));
        return false;
    }
    if (too_large) {
        fprintf(stderr, "advise check: stdin is over the %zu-byte limit\n", max_bytes);
        free(buf);
        return false;
    }
    size_t bad = 0;
    if (memchr(buf, '\0', len) || !utf8_validate(buf, len, &bad)) {
        fprintf(stderr, "advise check: stdin is not UTF-8 text (byte %zu)\n", bad);
        free(buf);
        return false;
    }
    *out = (SourceFile){.text = buf, .length = len};
    return true;
}

static void free_cl(CommandLineSettings *cl) {
    string_list_free(&cl->select);
    string_list_free(&cl->ignore);
    string_list_free(&cl->severity);
}

int cli_check(int argc, char **argv) {
    CheckOptions o = {.format = FORMAT_TEXT, .show_source = true, .jobs = check_pool_default_jobs()};
    CommandLineSettings cl = {0};
    optind = 1;
    opterr = 0;
    int c;
    for (int token = optind; (c = getopt_long(argc, argv, "ho:j:", long_options, NULL)) != -1; token = optind) {
        switch (c) {
        case OPT_FORMAT:
            if (!output_format_parse(optarg, &o.format)) {
                free_cl(&cl);
                return cli_usage_error("check", "--format wants text, json, sarif, github or gitlab, not '%s'", optarg);
            }
            break;
        case 'o': o.output_path = optarg; break;
        case 'j':
            if (!parse_jobs(optarg, &o.jobs)) {
                free_cl(&cl);
                return EXIT_TROUBLE;
            }
            break;
        case OPT_STDIN_FILENAME: o.stdin_name = optarg; break;
        case OPT_DIFF_BASE: o.diff_base = optarg; break;
        case OPT_BASELINE: o.baseline_path = optarg; break;
        case OPT_WRITE_BASELINE: o.write_baseline = optarg; break;
        case OPT_SELECT:
            cl.select_given = true;
            string_list_add_csv(&cl.select, optarg);
            break;
        case OPT_IGNORE: string_list_add_csv(&cl.ignore, optarg); break;
        case OPT_SEVERITY: string_list_add(&cl.severity, optarg); break;
        case OPT_FAIL_ON: cl.fail_on = optarg; break;
        case OPT_FIX: o.fix = true; break;
        case OPT_UNSAFE: o.unsafe_fixes = true; break;
        case OPT_DIFF: o.diff = true; break;
        case OPT_CONFIG: o.config_path = optarg; break;
        case OPT_NO_CONFIG: o.no_config = true; break;
        case OPT_MAX_SIZE: {
            char *end;
            cl.max_size = strtoll(optarg, &end, 10);
            if (*end || cl.max_size <= 0) {
                free_cl(&cl);
                return cli_usage_error("check", "--max-file-size wants a positive number of bytes, not '%s'", optarg);
            }
            break;
        }
        case OPT_NO_SOURCE: o.show_source = false; break;
        case OPT_PROFILE: o.profile_path = optarg; break;
        case OPT_NO_PROFILE: o.no_profile = true; break;
        case OPT_QUIET: o.quiet = true; break;
        case OPT_ERROR_ON_PARSE_FAILURE: o.error_on_parse_failure = true; break;
        case OPT_REQUIRE_CUDA: o.require_cuda = true; break;
        case OPT_HELP:
        case 'h':
            check_usage(stdout);
            free_cl(&cl);
            return EXIT_CLEAN;
        default:
            free_cl(&cl);
            return cli_option_error("check", argv, token);
        }
    }
    if (o.fix && o.diff) {
        free_cl(&cl);
        return cli_usage_error("check", "%s", "--fix and --diff exclude each other (--diff writes nothing)");
    }
    if (o.profile_path && o.no_profile) {
        free_cl(&cl);
        return cli_usage_error("check", "%s", "--profile and --no-profile exclude each other");
    }
    const char *filter_problem =
        (o.diff_base || o.baseline_path || o.write_baseline) && (o.fix || o.diff)
            ? "--fix and --diff fix whole files: they do not go with --diff-base, --baseline or --write-baseline"
        : o.baseline_path && o.write_baseline
            ? "--baseline and --write-baseline exclude each other: write the new baseline in a run of its own"
        : o.diff_base && o.write_baseline ? "--write-baseline records every finding: it does not go with --diff-base"
                                          : NULL;
    if (filter_problem) {
        free_cl(&cl);
        return cli_usage_error("check", "%s", filter_problem);
    }
    bool from_stdin = false;
    for (int i = optind; i < argc; i++)
        if (strcmp(argv[i], "-") == 0) from_stdin = true;
    if (from_stdin && (argc - optind != 1 || !o.stdin_name || !*o.stdin_name || o.fix)) {
        free_cl(&cl);
        return cli_usage_error("check", "%s",
                               o.fix ? "--fix cannot write to stdin (-); use --diff"
                                     : "reading stdin (-) wants it as the only path, and --stdin-filename NAME");
    }
    if (o.stdin_name && !from_stdin) {
        free_cl(&cl);
        return cli_usage_error("check", "%s", "--stdin-filename goes with the path - (stdin)");
    }
    if (from_stdin && o.diff_base) {
        free_cl(&cl);
        return cli_usage_error("check", "%s", "--diff-base compares files on disk with git: it does not read stdin (-)");
    }
    char *root = NULL;
    int status = load_settings(&o, &cl, &root);
    free_cl(&cl);
    if (status == EXIT_CLEAN) status = load_profiles(&o);
    if (status == EXIT_CLEAN) status = load_filter(&o, optind < argc ? argv[optind] : ".");
    if (status != EXIT_CLEAN) {
        profile_set_free(o.profiles);
        free(o.merge_note);
        config_free(&o.cfg);
        free(root);
        free(o.project_root);
        return status;
    }

    const char *default_path = ".";
    const char *const *paths = optind < argc ? (const char *const *)argv + optind : &default_path;
    size_t path_count = optind < argc ? (size_t)(argc - optind) : 1;
    FileList files = {0};
    SourceFile stdin_text = {0};
    if (!from_stdin) file_walk(paths, path_count, &o.cfg, root, &files);
    else if (!read_stdin(&stdin_text, o.cfg.max_file_bytes)) {
        check_filter_free(o.filter);
        config_free(&o.cfg);
        profile_set_free(o.profiles);
        free(o.merge_note);
        free(o.project_root);
        free(root);
        return EXIT_TROUBLE;
    }
    o.workspaces = py_workspaces_new();

    /* --diff keeps stdout for the patch; the summary goes to stderr; -o FILE: into memory, then the file */
    char *buffer = NULL;
    size_t buffer_size = 0;
    FILE *report_stream = o.output_path ? open_memstream(&buffer, &buffer_size) : o.diff ? stderr : stdout;
    if (!report_stream) report_stream = stdout;
    const char *summary_file = o.format == FORMAT_GITHUB ? getenv("GITHUB_STEP_SUMMARY") : NULL;
    CheckOutputOptions output_options = {o.show_source, o.project_root, summary_file};
    CheckOutput *out = check_output_new(o.format, report_stream, &output_options);
    CheckSummary summary = {.fix_mode = o.fix, .diff_mode = o.diff};
    bool failing = false, trouble = false;
    for (size_t i = 0; i < files.error_count; i++) {
        check_output_error(out, files.errors[i].path, files.errors[i].message);
        summary.errors++;
        trouble = true;
    }
    CheckRun run = {&o, (const char *const *)files.files, files.count, NULL, out, &summary, &failing, &trouble};
    check_files(&run, o.jobs);
    if (from_stdin) {
        FileResult r = {0};
        check_one(&o, o.stdin_name, &stdin_text, &r);
        run_emit_result(&run, &r);
    }
    if (o.filter) check_filter_summarise(o.filter, &summary);
    if (o.write_baseline) {
        char *error = NULL;
        if (check_filter_write_baseline(o.filter, o.write_baseline, &summary.baseline_recorded, &error)) {
            summary.baseline_written = o.write_baseline;
            failing = false; /* what it recorded is known from now on */
            if (!o.quiet && o.format != FORMAT_TEXT && o.format != FORMAT_JSON)
                fprintf(stderr, "advise: recorded %zu finding%s in %s\n", summary.baseline_recorded,
                        summary.baseline_recorded == 1 ? "" : "s", o.write_baseline);
        } else {
            fprintf(stderr, "advise check: --write-baseline %s: %s\n", o.write_baseline,
                    error ? error : "cannot write");
            free(error);
            trouble = true;
        }
    }
    if (!o.quiet || o.format != FORMAT_TEXT) check_output_finish(out, &summary);
    if (summary.cuda_skipped) { /* once, whatever the format: the findings stream holds the rest */
        fprintf(stderr, "advise: %s %zu CUDA file%s: %s. Install the CUDA toolkit, or set CUDA_PATH or [cuda] "
                        "cuda-path in advise.toml%s\n",
                o.require_cuda ? "could not analyse" : "skipped", summary.cuda_skipped,
                summary.cuda_skipped == 1 ? "" : "s", summary.cuda_skip_reason,
                o.require_cuda ? "" : " (--require-cuda makes this an error)");
        if (o.require_cuda) trouble = true;
    }
    free(summary.cuda_skip_reason);
    if (o.output_path && report_stream != stdout) {
        fclose(report_stream);
        char *error = NULL;
        if (!atomic_file_write_bytes(o.output_path, NULL, buffer ? buffer : "", buffer ? buffer_size : 0, &error)) {
            fprintf(stderr, "advise check: %s: %s\n", o.output_path, error ? error : "cannot write");
            free(error);
            trouble = true;
        }
        free(buffer);
    }
    if (o.diff && !o.quiet && o.format == FORMAT_TEXT)
        fprintf(stderr, "Would fix %zu finding%s in %zu file%s.\n", summary.fixed, summary.fixed == 1 ? "" : "s",
                summary.files_fixed, summary.files_fixed == 1 ? "" : "s");
    if (o.profiles && o.profile_path && o.files_merged == 0) /* a warning: --quiet keeps it */
        fprintf(stderr, "advise: the profile mentions none of the checked files; nothing was merged\n");
    check_output_free(out);
    check_filter_free(o.filter);
    file_list_free(&files);
    free(stdin_text.text);
    config_free(&o.cfg);
    profile_set_free(o.profiles);
    py_workspaces_free(o.workspaces);
    free(o.merge_note);
    free(o.project_root);
    free(root);
    if (trouble) return EXIT_TROUBLE;
    return failing ? EXIT_FINDINGS : EXIT_CLEAN;
}
