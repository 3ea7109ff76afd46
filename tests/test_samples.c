/* The bundled samples say at their top what advise should report
 * ("PY004 host-tensor-moved-to-device   line 93 ..."); this suite checks that
 * `advise check` reports exactly those findings, no more and no fewer
 * (static analysis alone, --no-profile), and that with their H200 profiles
 * (samples/profiles/) the same findings carry measured evidence. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>

#include "tests/cli_harness.h"

typedef struct {
    char code[8];
    int line;
} Expected;

/* reads the expectation lines of the sample's docstring (up to the first line
 * that mentions "must NOT be reported") */
static size_t read_expectations(const char *text, Expected *out, size_t cap) {
    size_t n = 0;
    const char *end = strstr(text, "must NOT be reported");
    for (const char *p = text; *p && (!end || p < end) && n < cap;) {
        const char *eol = strchr(p, '\n');
        if (!eol) eol = p + strlen(p);
        const char *q = p;
        while (q < eol && *q == ' ') q++;
        int line;
        char code[8], name[64];
        if (eol - q > 8 && ((q[0] == 'P' && q[1] == 'Y') || (q[0] == 'C' && q[1] == 'U')) &&
            isdigit((unsigned char)q[2]) &&
            sscanf(q, "%7s %63s line %d", code, name, &line) == 3) {
            snprintf(out[n].code, sizeof out[n].code, "%s", code);
            out[n].line = line;
            n++;
        }
        p = *eol ? eol + 1 : eol;
    }
    return n;
}

/* checks every sample with the given extension in samples/<folder>; files
 * named *_fixed.* must get no finding at all */
static int check_folder(const char *folder, const char *ext) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/samples/%s", ADVISE_SOURCE_DIR, folder);
    DIR *d = opendir(dir);
    cr_assert(d != NULL, "no folder %s", dir);
    struct dirent *e;
    int samples = 0;
    size_t ext_len = strlen(ext);
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len <= ext_len || strcmp(e->d_name + len - ext_len, ext) != 0) continue;
        bool fixed = strstr(e->d_name, "_fixed") != NULL;
        char *path = path_in(dir, e->d_name);
        char *text = harness_slurp(path);
        Expected want[64];
        size_t n = fixed ? 0 : read_expectations(text, want, 64);
        if (!fixed) cr_expect(n >= 3, "%s: its header lists %zu expected findings", e->d_name, n);
        RunResult r = run_advise("check", "--no-config", "--no-profile", "--no-source", "--fail-on", "never", path);
        cr_expect_eq(r.status, 0, "%s: %s", e->d_name, r.err);
        size_t got = 0;
        for (const char *p = r.out; (p = strstr(p, path)) != NULL; p++) {
            int line, col;
            char code[8];
            if ((p != r.out && p[-1] != '\n') || sscanf(p + strlen(path), ":%d:%d: %7s", &line, &col, code) != 3)
                continue;
            got++;
            bool listed = false;
            for (size_t k = 0; k < n; k++)
                if (want[k].line == line && strcmp(want[k].code, code) == 0) listed = true;
            cr_expect(listed, "%s:%d: %s is reported but the header does not list it", e->d_name, line, code);
        }
        cr_expect_eq(got, n, "%s: %zu findings reported, %zu listed in the header\n%s", e->d_name, got, n, r.out);
        run_result_free(&r);
        free(text);
        samples++;
    }
    closedir(d);
    return samples;
}

Test(samples, each_python_sample_reports_what_its_docstring_says) {
    cr_expect(check_folder("python", ".py") >= 3, "expected at least three Python samples");
}

Test(samples, each_cuda_sample_reports_what_its_header_says, .timeout = 300) {
    cr_expect(check_folder("cuda", ".cu") >= 8, "expected four CUDA samples, each beside a correct version");
}

/* the text block of the finding that starts with head, up to the next finding */
static char *block_of(const char *out, const char *head) {
    const char *p = strstr(out, head);
    if (!p) return strdup("");
    const char *end = strstr(p + 1, "\nsamples/");
    return strndup(p, end ? (size_t)(end - p) : strlen(p));
}

Test(samples, merged_with_their_h200_profiles, .timeout = 300) {
    /* the repository's advise.toml points [profile] dir at samples/profiles; the
     * profile rules' own findings (PR*) are left out here: test_profile_rules.c */
    RunResult r = run_advise_at(ADVISE_SOURCE_DIR, "check", "--no-source", "--fail-on", "never", "--ignore", "PR",
                                "samples/cuda/pipeline.cu", "samples/python/train_classifier.py");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "advise: merging 11 profiles from samples/profiles"), "%s", r.err);
    char *copy = block_of(r.out, "samples/cuda/pipeline.cu:105:15: CU006");
    cr_expect(strstr(copy, "= measured: this copy moved 16.8 MB in 16 copies from pageable memory at 48.4 GB/s"),
              "%s", copy);
    free(copy);
    copy = block_of(r.out, "samples/cuda/pipeline.cu:109:15: CU006");
    cr_expect(strstr(copy, "= measured: this copy moved 16.8 MB in 16 copies into pageable memory"), "%s", copy);
    free(copy);
    char *item = block_of(r.out, "samples/python/train_classifier.py:111:29: PY001");
    cr_expect(strstr(item, "= measured: this `loss.item()` ran 100 times and waited 6.30 \xC2\xB5s each on average"),
              "%s", item);
    cr_expect_null(strstr(item, "= est. gain"), "no gain is claimed for a sync's wait:\n%s", item);
    free(item);
    cr_expect(strstr(r.out, "Found 12 findings in 2 files"), "the same findings as without the profile:\n%s", r.out);
    cr_expect_null(strstr(r.out, "older than this file"), "the profiles match the samples:\n%s", r.out);
    run_result_free(&r);
}
