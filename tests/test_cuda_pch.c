/* The precompiled CUDA prefix (analysis/cuda/cuda_pch.h) changes nothing
 * but the time: the snapshot the rules walk, clang's diagnostics and the
 * findings are the same with it and without it (ADVISE_CUDA_PCH=0), over
 * every CUDA fixture and sample and over files written to probe it (a macro
 * defined before a CUDA header, errors, missing headers, warnings). When
 * the header cannot be built (an -include with an error, no temporary
 * folder), the files are parsed as before, and nothing is said. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>

#include "tests/cli_harness.h"

/* The CUDA files under folder (of the repository), sorted, as one shell
 * word list. */
static char *cuda_files_under(const char *folder) {
    char command[1024];
    snprintf(command, sizeof command,
             "cd %s && find %s -name '*.cu' -o -name '*.cuh' | LC_ALL=C sort | tr '\\n' ' '", ADVISE_SOURCE_DIR,
             folder);
    RunResult r = harness_run_shell(command);
    cr_assert_eq(r.status, 0, "%s", r.err);
    free(r.err);
    return remember(r.out);
}

static size_t count_of(const char *text, const char *needle) {
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* Drops the lines that say how long a parse took and whether it read the
 * precompiled prefix: the rest must be the same. */
static char *without_timings(const char *text) {
    char *out = malloc(strlen(text) + 1);
    char *o = out;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line + 1) : strlen(line);
        if (strncmp(line, "# parsed in ", 12) != 0) {
            memcpy(o, line, n);
            o += n;
        }
        line += n;
    }
    *o = '\0';
    return remember(out);
}

/* `advise debug-ast FILES` (in dir) with ADVISE_CUDA_PCH=mode */
static RunResult debug_ast(const char *dir, const char *mode, const char *files) {
    char command[16384];
    snprintf(command, sizeof command, "cd '%s' && ADVISE_CUDA_PCH=%s exec '%s' debug-ast %s", dir, mode,
             ADVISE_BINARY, files);
    return harness_run_shell(command);
}

static RunResult check_json(const char *dir, const char *mode, const char *files) {
    char command[16384];
    snprintf(command, sizeof command,
             "cd '%s' && ADVISE_CUDA_PCH=%s exec '%s' check --no-config --no-profile --format json --fail-on never "
             "-j 2 %s",
             dir, mode, ADVISE_BINARY, files);
    return harness_run_shell(command);
}

/* The same tree and diagnostics with the header (every file reads it) and
 * without (none does). */
static void expect_same_parses(const char *dir, const char *files, size_t file_count) {
    RunResult plain = debug_ast(dir, "0", files), pch = debug_ast(dir, "eager", files);
    cr_assert_eq(plain.status, pch.status, "without: %s\nwith: %s", plain.err, pch.err);
    cr_assert_str_eq(pch.err, plain.err);
    cr_expect_eq(count_of(plain.out, "# file: "), file_count, "%s", plain.err);
    cr_expect_eq(count_of(plain.out, "precompiled prefix"), 0);
    cr_expect_eq(count_of(pch.out, "precompiled prefix"), file_count, "every file read the header");
    cr_expect(strcmp(without_timings(plain.out), without_timings(pch.out)) == 0,
              "the snapshot or the diagnostics differ with the precompiled prefix");
    run_result_free(&plain);
    run_result_free(&pch);
}

/* every CUDA file of folder (at least `least` of them) */
static void expect_same_parses_under(const char *folder, size_t least) {
    char *files = cuda_files_under(folder);
    size_t n = count_of(files, ".cu");
    cr_assert(n >= least, "the CUDA files of %s: %s", folder, files);
    expect_same_parses(ADVISE_SOURCE_DIR, files, n);
}

static void expect_same_findings_under(const char *folder, const char *code) {
    char *files = cuda_files_under(folder);
    RunResult plain = check_json(ADVISE_SOURCE_DIR, "0", files), pch = check_json(ADVISE_SOURCE_DIR, "1", files);
    cr_assert_eq(plain.status, 0, "%s", plain.err);
    char want[32];
    snprintf(want, sizeof want, "\"%s\"", code);
    cr_expect(strstr(plain.out, want) != NULL, "findings to compare: %s", plain.out);
    cr_expect_str_eq(pch.out, plain.out);
    cr_expect_str_eq(pch.err, plain.err);
    run_result_free(&plain);
    run_result_free(&pch);
}

/* halves of the repository's CUDA files, so that each fits its timeout in a sanitizer build */
Test(cuda_pch, fixtures_parse_the_same_with_and_without_it, .timeout = 300) {
    expect_same_parses_under("tests/fixtures", 14);
}
Test(cuda_pch, samples_parse_the_same_with_and_without_it, .timeout = 300) {
    expect_same_parses_under("samples", 8);
}
Test(cuda_pch, fixtures_have_the_same_findings_with_and_without_it, .timeout = 300) {
    expect_same_findings_under("tests/fixtures", "CU001");
}
Test(cuda_pch, samples_have_the_same_findings_with_and_without_it, .timeout = 300) {
    expect_same_findings_under("samples", "CU002");
}

static void write_in(const char *dir, const char *name, const char *text) { write_text(path_in(dir, name), text); }

/* Files that would notice a prefix read differently: what they define
 * before a CUDA header must still change that header, and errors and
 * warnings keep their places. */
Test(cuda_pch, probes_parse_the_same_with_and_without_it, .timeout = 300) {
    char *dir = temp_dir();
    mkdir(path_in(dir, "inc"), 0755);
    write_in(dir, "define_first.cu",
             "#define __CUDA_NO_HALF_OPERATORS__\n"
             "#include <cuda_fp16.h>\n"
             "__global__ void k(__half *x) { x[threadIdx.x] = x[threadIdx.x] + x[threadIdx.x]; }\n");
    write_in(dir, "errors.cu",
             "#include <cuda_runtime.h>\n"
             "__global__ void k(float *x) { x[threadIdx.x] = 1.0f }\n"
             "int f(int a) { return a + undefined_name; }\n"
             "int cudaMalloc;\n");
    write_in(dir, "inc/bad.h", "inline int bad() { return not_declared_anywhere; }\n");
    write_in(dir, "headers.cu",
             "#include \"inc/bad.h\"\n"
             "#include \"missing_header.h\"\n"
             "__global__ void k(int *x) { x[0] = bad(); }\n");
    write_in(dir, "warnings.cu",
             "#include <cstdio>\n"
             "#warning a warning of the file's own\n"
             "__global__ void k(float *x) { int y = 1 / 0; x[0] = y; }\n"
             "int main() { printf(\"%d\", 1.0); }\n");
    write_in(dir, "empty.cu", "");
    const char *files = "define_first.cu empty.cu errors.cu headers.cu warnings.cu";
    expect_same_parses(dir, files, 5);
    RunResult r = debug_ast(dir, "eager", "define_first.cu");
    cr_expect(strstr(r.out, "use of overloaded operator '+' is ambiguous") != NULL,
              "the macro defined before cuda_fp16.h still removes its operators: %s", r.out);
    run_result_free(&r);
}

/* printf into memory the test keeps until it ends */
static char *text_of(const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(NULL, 0, format, ap);
    va_end(ap);
    cr_assert(n >= 0);
    char *out = malloc((size_t)n + 1);
    cr_assert_not_null(out);
    va_start(ap, format);
    vsnprintf(out, (size_t)n + 1, format, ap);
    va_end(ap);
    return remember(out);
}

/* Files of one folder that open with the same #include lines (a folder of
 * generated instantiations) read those headers from one precompiled
 * preamble, from the second file on: the snapshot, diagnostics and findings
 * are the same as without it, for a file with an error of its own, for one
 * whose instantiation fails inside the shared header (parsed again without
 * the preamble: the error shows at its #include), and for one whose lines
 * differ by a comment. */
Test(cuda_pch, files_that_share_their_include_lines_parse_the_same, .timeout = 300) {
    char *dir = temp_dir();
    mkdir(path_in(dir, "inc"), 0755);
    write_in(dir, "inc/kern.cuh",
             "#pragma once\n"
             "#define BLOCK 100\n"
             "template <int N> __global__ void scale(float *x) { x[threadIdx.x * N] *= N; }\n"
             "template <typename T> __global__ void sum(T *x) { x[threadIdx.x] = x[0].bad; }\n"
             "#define INSTANTIATE(N) template __global__ void scale<N>(float *);\n");
    const char *preamble = "// generated\n#include \"inc/kern.cuh\"\n#include <cuda_fp16.h>\n\n";
    write_in(dir, "a.cu", text_of("%sINSTANTIATE(1)\n", preamble));
    write_in(dir, "b.cu", text_of("%sINSTANTIATE(2)\nvoid go(float *x) { scale<2><<<1, BLOCK>>>(x); }\n", preamble));
    write_in(dir, "c.cu", text_of("%s__global__ void race(float *x) { __shared__ float t[32]; t[threadIdx.x] = "
                                        "x[0]; x[threadIdx.x] = t[31 - threadIdx.x]; }\n", preamble));
    write_in(dir, "d.cu", text_of("%sINSTANTIATE(4)\nint broken = ;\n", preamble));
    write_in(dir, "e.cu", text_of("%svoid go(float *x) { sum<float><<<1, 256>>>(x); }\n", preamble));
    write_in(dir, "f.cu", text_of("// other\n%sINSTANTIATE(6)\n", preamble));
    const char *files = "a.cu b.cu c.cu d.cu e.cu f.cu";
    expect_same_parses(dir, files, 6);
    RunResult r = debug_ast(dir, "1", files);
    cr_expect_eq(count_of(r.out, "#include lines from a precompiled prefix"), 3,
                 "b, c and d read the shared preamble; e's error is in the header; f's lines differ: %s", r.out);
    run_result_free(&r);
    RunResult j0 = check_json(dir, "0", files), j1 = check_json(dir, "1", files);
    cr_expect(strstr(j0.out, "\"CU001\"") != NULL, "findings to compare: %s", j0.out);
    cr_expect_str_eq(j1.out, j0.out);
    cr_expect_str_eq(j1.err, j0.err);
    run_result_free(&j0);
    run_result_free(&j1);
}

/* A compile database whose -include has an error: the prefix cannot be
 * built, so each file is parsed as before. */
Test(cuda_pch, a_prefix_that_does_not_build_falls_back, .timeout = 300) {
    char *dir = temp_dir();
    write_in(dir, "broken.h", "int broken = not_declared;\n");
    write_in(dir, "a.cu", "__global__ void k(float *x) { __shared__ float s[32]; s[threadIdx.x] = x[0]; x[1] = s[0]; }\n");
    write_in(dir, "b.cu", "#include <cstdio>\nint main() { printf(\"%d\\n\", 1); }\n");
    char db[8192];
    snprintf(db, sizeof db,
             "[{\"directory\": \"%s\", \"file\": \"a.cu\", \"command\": \"nvcc -include broken.h -c a.cu\"},\n"
             " {\"directory\": \"%s\", \"file\": \"b.cu\", \"command\": \"nvcc -include broken.h -c b.cu\"}]\n",
             dir, dir);
    write_in(dir, "compile_commands.json", db);
    RunResult plain = debug_ast(dir, "0", "a.cu b.cu"), pch = debug_ast(dir, "eager", "a.cu b.cu");
    cr_assert_eq(pch.status, 0, "%s", pch.err);
    cr_expect(strstr(pch.out, "-include") != NULL, "the database's flags are used: %s", pch.out);
    cr_expect_eq(count_of(pch.out, "precompiled prefix"), 0, "no header for a prefix with errors: %s", pch.out);
    cr_expect_str_eq(pch.err, "", "the fallback is silent");
    cr_expect(strcmp(without_timings(plain.out), without_timings(pch.out)) == 0);
    run_result_free(&plain);
    run_result_free(&pch);
    RunResult j0 = check_json(dir, "0", "a.cu b.cu"), j1 = check_json(dir, "1", "a.cu b.cu");
    cr_expect_str_eq(j1.out, j0.out);
    cr_expect_str_eq(j1.err, j0.err);
    run_result_free(&j0);
    run_result_free(&j1);
}

static size_t pch_folders_in(const char *dir) {
    size_t n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) n += strncmp(e->d_name, "advise-pch-", 11) == 0;
    if (d) closedir(d);
    return n;
}

/* No temporary folder for the header: parsed as before, silently. With
 * one, the header is used and its folder is gone when advise exits. */
Test(cuda_pch, its_folder_is_private_and_removed, .timeout = 300) {
    char *dir = temp_dir(), *tmp = temp_dir();
    write_in(dir, "a.cu", "__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n");
    write_in(dir, "b.cu", "#include <cuda_runtime.h>\nint main() { float *p; cudaMalloc(&p, 4); }\n");
    char command[8192];
    snprintf(command, sizeof command, "cd '%s' && TMPDIR='%s' ADVISE_CUDA_PCH=1 exec '%s' debug-ast a.cu b.cu", dir,
             tmp, ADVISE_BINARY);
    RunResult r = harness_run_shell(command);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(count_of(r.out, "precompiled prefix"), 1, "the second file of a flag list reads it: %s", r.out);
    cr_expect_eq(pch_folders_in(tmp), 0, "the header's folder is removed at exit");
    run_result_free(&r);
    snprintf(command, sizeof command,
             "cd '%s' && TMPDIR=/nonexistent/advise-test ADVISE_CUDA_PCH=eager exec '%s' debug-ast a.cu b.cu", dir,
             ADVISE_BINARY);
    RunResult none = harness_run_shell(command);
    snprintf(command, sizeof command,
             "cd '%s' && TMPDIR=/nonexistent/advise-test ADVISE_CUDA_PCH=0 exec '%s' debug-ast a.cu b.cu", dir,
             ADVISE_BINARY);
    RunResult plain = harness_run_shell(command);
    cr_assert_eq(none.status, 0, "%s", none.err);
    cr_expect_eq(count_of(none.out, "precompiled prefix"), 0, "%s", none.out);
    cr_expect_str_eq(none.err, plain.err);
    cr_expect(strcmp(without_timings(plain.out), without_timings(none.out)) == 0);
    run_result_free(&none);
    run_result_free(&plain);
}
