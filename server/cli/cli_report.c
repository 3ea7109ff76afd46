/* `advise report [PATHS...]`: the findings of a project ranked by what they
 * cost in a profile, with their evidence, as text (stdout) or as one
 * self-contained HTML page (-o FILE, written atomically). The findings come
 * from ranked_findings_collect, the same list the editor sidebar shows. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profiler/profile_set.h"
#include "profiler/profile_view.h"
#include "rules/engine/config.h"
#include "analysis/base/atomic_file.h"
#include "server/cli/cli.h"
#include "profiler/profile_store.h"
#include "server/render/ranked_findings.h"
#include "server/render/report_html.h"
#include "server/render/report_text.h"
#include "server/workspace/check_pool.h"

static void report_usage(FILE *out) {
    fputs("usage: advise report [options] [PATHS...]\n"
          "\n"
          "The findings in PATHS (files and folders, default .) ranked by what they cost in a profile,\n"
          "with the measured evidence and estimated gains; the HTML page also pictures the GPU's busy\n"
          "and idle time and lists the top kernels.\n"
          "\n"
          "options:\n"
          "  --profile FILE|DIR   a profile, or a folder of them (each file takes the newest that mentions\n"
          "                       it); default: [profile] dir of advise.toml, else .advise/profiles/ under\n"
          "                       the project root, when it holds any\n"
          "  --no-profile         report without a profile (findings not ranked by cost)\n"
          "  --format text|html   text (default) or one self-contained HTML page (needs -o)\n"
          "  -o, --output FILE    write to FILE (atomically, replacing it) instead of stdout; - is stdout\n"
          "  --config FILE        read settings from FILE instead of the nearest advise.toml\n"
          "  --no-config          ignore advise.toml files\n"
          "  -j, --jobs N         analyse N files at once (default: one per CPU); the report is the same\n"
          "                       whatever N is\n"
          "\n"
          "exit status: 0 report written, 2 usage or I/O error, or a profile that cannot be read\n",
          out);
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("advise report: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return EXIT_TROUBLE;
}

typedef struct {
    bool html;
    const char *output;       /* NULL or "-": stdout */
    const char *profile_path; /* --profile */
    bool no_profile;
    const char *config_path;
    bool no_config;
    unsigned jobs; /* -j */
} ReportOptions;

/* The settings and the project root (the folder of advise.toml, else the
 * git work tree, else here). */
static int load_config(const ReportOptions *o, Config *cfg, char **root) {
    if (cli_load_config_file(o->config_path, o->no_config, cfg, root) != EXIT_CLEAN) return EXIT_TROUBLE;
    if (!*root) *root = profile_store_root();
    if (!*root) return fail("cannot tell the project root: %s", strerror(errno));
    char *error = NULL;
    if (!config_validate(cfg, &error)) {
        fprintf(stderr, "advise report: %s\n", error ? error : "out of memory");
        free(error);
        return EXIT_TROUBLE;
    }
    return EXIT_CLEAN;
}

/* --profile (a file, or a folder of them), else the profile folder when it
 * holds a usable profile; the files skipped are said on stderr. */
static int load_profiles(const ReportOptions *o, const Config *cfg, const char *root, ProfileSet **set) {
    *set = NULL;
    if (o->no_profile) return EXIT_CLEAN;
    char *error = NULL;
    if (o->profile_path) {
        *set = profile_set_load(o->profile_path, &error);
        if (!*set) {
            int status = fail("--profile: %s", error ? error : "out of memory");
            free(error);
            return status;
        }
    } else {
        char *dir = profile_store_dir(root, cfg->profile_dir);
        if (!dir) return fail("out of memory");
        struct stat st;
        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
            *set = profile_set_load(dir, &error);
            if (!*set)
                fprintf(stderr, "advise report: no usable profile in %s (%s); reporting without one\n",
                        profile_store_display(dir), error ? error : "out of memory");
            free(error);
        }
        free(dir);
    }
    const char *const *notes;
    size_t count = *set ? profile_set_notes(*set, &notes) : 0;
    for (size_t i = 0; i < count; i++) fprintf(stderr, "advise: skipped profile %s\n", notes[i]);
    return EXIT_CLEAN;
}

/* The profiles that measured a finding's file, newest first; with no
 * finding measured, the newest profile alone. */
static size_t profiles_used(const ProfileSet *set, const RankedFindings *findings, ReportProfile **out) {
    *out = NULL;
    size_t n = set ? profile_set_count(set) : 0;
    if (n == 0) return 0;
    bool *used = calloc(n, sizeof *used);
    ReportProfile *list = calloc(n, sizeof *list);
    if (!used || !list) {
        free(used);
        free(list);
        return 0;
    }
    for (size_t i = 0; i < findings->count; i++) {
        int file;
        const ProfileView *v = profile_set_for_file(set, findings->items[i].path, NULL, &file);
        for (size_t k = 0; v && k < n; k++)
            if (profile_set_at(set, k) == v) used[k] = true;
    }
    size_t count = 0;
    for (size_t k = 0; k < n; k++)
        if (used[k]) count++;
    if (count == 0) used[0] = true;
    count = 0;
    for (size_t k = 0; k < n; k++) {
        if (!used[k]) continue;
        const ProfileView *v = profile_set_at(set, k);
        list[count++] = (ReportProfile){profile_view_profile(v), profile_store_display(profile_view_path(v))};
    }
    free(used);
    *out = list;
    return count;
}

static bool write_html(FILE *out, const void *in) { return report_html_write(out, in); }
static bool write_text(FILE *out, const void *in) { return report_text_write(out, in); }

/* Writes the report to path whole or not at all (atomic_file.h). */
static int write_report_file(const char *path, const ReportInput *in, bool html) {
    char *error = NULL;
    if (atomic_file_write(path, html ? write_html : write_text, in, &error)) return EXIT_CLEAN;
    int status = fail("%s", error ? error : "out of memory");
    free(error);
    return status;
}

enum { OPT_FORMAT = 256, OPT_PROFILE, OPT_NO_PROFILE, OPT_CONFIG, OPT_NO_CONFIG, OPT_HELP };

static const struct option long_options[] = {
    {"format", required_argument, 0, OPT_FORMAT},   {"output", required_argument, 0, 'o'},
    {"profile", required_argument, 0, OPT_PROFILE}, {"no-profile", no_argument, 0, OPT_NO_PROFILE},
    {"config", required_argument, 0, OPT_CONFIG},   {"no-config", no_argument, 0, OPT_NO_CONFIG},
    {"help", no_argument, 0, OPT_HELP},             {"jobs", required_argument, 0, 'j'},
    {0, 0, 0, 0},
};

int cli_report(int argc, char **argv) {
    ReportOptions o = {.jobs = check_pool_default_jobs()};
    optind = 1;
    opterr = 0;
    int c;
    for (int token = optind; (c = getopt_long(argc, argv, "ho:j:", long_options, NULL)) != -1; token = optind) {
        switch (c) {
        case OPT_FORMAT:
            if (strcmp(optarg, "text") == 0) o.html = false;
            else if (strcmp(optarg, "html") == 0) o.html = true;
            else return cli_usage_error("report", "--format wants text or html, not '%s'", optarg);
            break;
        case 'o': o.output = optarg; break;
        case 'j':
            if (!check_pool_parse_jobs(optarg, &o.jobs))
                return cli_usage_error("report", "-j wants a positive number of files to analyse at once, not '%s'",
                                       optarg);
            break;
        case OPT_PROFILE: o.profile_path = optarg; break;
        case OPT_NO_PROFILE: o.no_profile = true; break;
        case OPT_CONFIG: o.config_path = optarg; break;
        case OPT_NO_CONFIG: o.no_config = true; break;
        case OPT_HELP:
        case 'h': report_usage(stdout); return EXIT_CLEAN;
        default: return cli_option_error("report", argv, token);
        }
    }
    if (o.profile_path && o.no_profile) return cli_usage_error("report", "--profile and --no-profile exclude each other");
    if (o.html && !o.output)
        return cli_usage_error("report", "--format html needs -o FILE (a page is not for the terminal; -o - writes it to stdout)");
    if (o.output && !*o.output) return cli_usage_error("report", "-o wants a file name");

    Config cfg;
    char *root = NULL;
    int status = load_config(&o, &cfg, &root);
    ProfileSet *set = NULL;
    if (status == EXIT_CLEAN) status = load_profiles(&o, &cfg, root, &set);
    if (status != EXIT_CLEAN) {
        config_free(&cfg);
        free(root);
        return status;
    }

    const char *default_path = ".";
    const char *const *paths = optind < argc ? (const char *const *)argv + optind : &default_path;
    size_t path_count = optind < argc ? (size_t)(argc - optind) : 1;
    RankedFindings findings = {0};
    char *error = NULL;
    RankedCollectRun run = {o.jobs, isatty(STDERR_FILENO)};
    if (!ranked_findings_collect_set(paths, path_count, root, &cfg, set, NULL, &run, &findings, &error)) {
        status = fail("%s", error ? error : "out of memory");
        free(error);
    } else {
        ReportProfile *used = NULL;
        size_t used_count = profiles_used(set, &findings, &used);
        ReportInput in = {.profiles = used, .profile_count = used_count, .findings = &findings};
        if (o.output && strcmp(o.output, "-") != 0) {
            status = write_report_file(o.output, &in, o.html);
            if (status == EXIT_CLEAN)
                fprintf(stderr, "advise report: wrote %s (%zu finding%s)\n", o.output, findings.count,
                        findings.count == 1 ? "" : "s");
        } else {
            bool ok = o.html ? report_html_write(stdout, &in) : report_text_write(stdout, &in);
            if (!ok || fflush(stdout) != 0) status = fail("could not write the report to stdout");
        }
        free(used);
        ranked_findings_free(&findings);
    }
    if (set) profile_set_free(set);
    config_free(&cfg);
    free(root);
    return status;
}
