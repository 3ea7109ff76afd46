/* The CUDA front end (analysis/cuda/cuda_flags.c, analysis/cuda/cuda_source.c):
 * compile_commands.json discovery as clangd does it, nvcc flag translation,
 * defaults without a database, finding the toolkit, unsaved buffers,
 * reparsing, broken files, diagnostics in headers, and the launch and
 * thread-index queries the rules build on. */
#define _GNU_SOURCE /* vasprintf */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/temp_tree.h"

#include "analysis/cuda/cuda_index.h"
#include "analysis/cuda/cuda_pch.h"
#include "analysis/cuda/cuda_preamble.h"
#include "analysis/cuda/cuda_query.h"
#include "analysis/cuda/cuda_shims.h"

/* ---- helpers ----------------------------------------------------------------- */

/* Paths live until the test process ends. */
static char *kept[256];
static size_t kept_count;

static char *keep(char *p) {
    if (kept_count < sizeof kept / sizeof *kept) kept[kept_count++] = p;
    return p;
}

static char *fmt(const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    char *s = NULL;
    cr_assert(vasprintf(&s, f, ap) >= 0);
    va_end(ap);
    return keep(s);
}

/* a fresh folder, resolved (the front end compares real paths), removed at exit */
static char *temp_dir(void) {
    char *dir = temp_tree("advise-cudafe");
    cr_assert_not_null(dir);
    return dir;
}

static void mkdirs(const char *path) {
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0755);
            *p = '/';
        }
    mkdir(buf, 0755);
}

/* writes text to dir/name, creating folders; returns the path */
static char *put(const char *dir, const char *name, const char *text) {
    char *path = fmt("%s/%s", dir, name);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    mkdirs(path);
    *slash = '/';
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
    return path;
}

static bool is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static ssize_t arg_index(const CudaFlags *f, const char *arg) {
    for (size_t i = 0; i < f->count; i++)
        if (strcmp(f->args[i], arg) == 0) return (ssize_t)i;
    return -1;
}

static bool has_arg(const CudaFlags *f, const char *arg) { return arg_index(f, arg) >= 0; }

/* `flag value` as two arguments */
static bool has_pair(const CudaFlags *f, const char *flag, const char *value) {
    for (size_t i = 0; i + 1 < f->count; i++)
        if (strcmp(f->args[i], flag) == 0 && strcmp(f->args[i + 1], value) == 0) return true;
    return false;
}

static bool any_arg_contains(const CudaFlags *f, const char *part) {
    for (size_t i = 0; i < f->count; i++)
        if (strstr(f->args[i], part)) return true;
    return false;
}

static char *args_text(const CudaFlags *f) {
    size_t n = 1;
    for (size_t i = 0; i < f->count; i++) n += strlen(f->args[i]) + 3;
    char *s = keep(calloc(1, n));
    for (size_t i = 0; i < f->count; i++) {
        strcat(s, "'");
        strcat(s, f->args[i]);
        strcat(s, "' ");
    }
    return s;
}

/* translates an nvcc command line (without the compiler) */
static CudaFlags translate(const char *const *args) {
    size_t n = 0;
    while (args[n]) n++;
    CudaFlags f = {0};
    cuda_flags_translate(args, n, &f);
    return f;
}
#define TRANSLATE(...) translate((const char *const[]){__VA_ARGS__, NULL})

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static Document *doc_at(const char *path, const char *text) {
    Document *doc = document_new(path, LANGUAGE_CUDA, text, strlen(text));
    cr_assert_not_null(doc);
    return doc;
}

static CudaSource *parse(const Document *doc, const CudaFlagOptions *options) {
    char *error = NULL;
    CudaSource *src = cuda_source_new(doc, options, &error);
    cr_assert_not_null(src, "cuda_source_new failed: %s", error ? error : "?");
    return src;
}

/* Settings that make a parse pointless are said in advise's words, and
 * clang's advice to pass --cuda-path (a flag advise does not take) is
 * translated. */
static char *refused(const char *path, const CudaFlagOptions *options) {
    Document *doc = doc_at(path, "__global__ void k(float *x) { x[threadIdx.x] = 1; }\n");
    char *error = NULL;
    CudaSource *src = cuda_source_new(doc, options, &error);
    cr_expect_null(src);
    cuda_source_free(src);
    document_free(doc);
    cr_assert_not_null(error);
    return error;
}

Test(cuda_settings, unknown_gpu_arch_and_missing_build_dir_are_named) {
    char *error = refused("/tmp/k.cu", &(CudaFlagOptions){.gpu_arch = "sm_100"});
    cr_expect(strstr(error, "unknown gpu-arch 'sm_100'"), "%s", error);
    cr_expect_not(strstr(error, "clang older"), "%s", error);
    free(error);
    error = refused("/tmp/k.cu", &(CudaFlagOptions){.build_dir = "/nonexistent/build"});
    cr_expect(strstr(error, "[cuda] build-dir '/nonexistent/build' does not exist"), "%s", error);
    free(error);
    error = refused("/tmp/k.cu", &(CudaFlagOptions){.build_dir = "/tmp"});
    cr_expect(strstr(error, "[cuda] build-dir '/tmp' holds no compile_commands.json"), "%s", error);
    free(error);
    /* compute_90 is sm_90 */
    Document *doc = doc_at("/tmp/k.cu", "__global__ void k(float *x) { x[threadIdx.x] = 1; }\n");
    CudaSource *src = parse(doc, &(CudaFlagOptions){.gpu_arch = "compute_90"});
    cr_expect_str_eq(src->flags.gpu_arch, "sm_90");
    cuda_source_free(src);
    document_free(doc);
}

Test(cuda_settings, clangs_cuda_path_advice_is_translated) {
    char dir[] = "/tmp/advise-no-toolkit-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    Document *doc = doc_at("/tmp/k.cu", "__global__ void k(float *x) { x[threadIdx.x] = 1; }\n");
    CudaSource *src = parse(doc, &(CudaFlagOptions){.cuda_path = dir});
    const char *message = src->has_errors ? src->first_error_message : NULL;
    cr_assert_not_null(message, "no error without a toolkit");
    cr_expect_not(strstr(message, "--cuda-path"), "%s", message);
    cr_expect(strstr(message, "set CUDA_PATH or [cuda] cuda-path"), "%s", message);
    cuda_source_free(src);
    document_free(doc);
    rmdir(dir);
}

typedef struct {
    const CudaSource *src;
    enum CXCursorKind kind;
    const char *name;
    CuNode *found;
} Find;

static bool find_visit(CuNode *n, void *data) {
    Find *f = data;
    if (f->found) return false;
    if (n->kind == f->kind && strcmp(n->name, f->name) == 0) {
        f->found = n;
        return false;
    }
    return true;
}

/* the first node of a kind with a name, in preorder */
static CuNode *find(const CudaSource *src, enum CXCursorKind kind, const char *name) {
    Find f = {src, kind, name, NULL};
    cu_walk(src->root, find_visit, &f);
    return f.found;
}

/* the first node whose text is `text` (any kind), after stripping wrappers */
typedef struct {
    const CudaSource *src;
    const char *text;
    CuNode *found;
} FindText;

static bool find_text_visit(CuNode *n, void *data) {
    FindText *f = data;
    if (f->found) return false;
    if (n->kind != CXCursor_UnexposedExpr && cu_text_eq(f->src, n, f->text)) {
        f->found = n;
        return false;
    }
    return true;
}

static CuNode *find_text(const CudaSource *src, const char *text) {
    FindText f = {src, text, NULL};
    cu_walk(src->root, find_text_visit, &f);
    cr_assert_not_null(f.found, "no node with text `%s`", text);
    return f.found;
}

static bool collect_launch(CuNode *n, void *data) {
    CuLaunch *out = data;
    if (out[0].call) {
        if (!out[1].call && n != out[0].call && cu_launch(n, &out[1])) return false;
        return !out[1].call;
    }
    return !cu_launch(n, &out[0]);
}

static char *text_of(const CudaSource *src, const CuNode *n) {
    cr_assert_not_null(n);
    return keep(strndup(cu_text(src, n), cu_text_len(n)));
}

static const char *const KERNEL_FILE =
    "#include <cuda_runtime.h>\n"
    "__global__ void scale(float *x, float a, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    int row = threadIdx.y;\n"
    "    int j = n * 2;\n"
    "    if (i < n) x[i] = a * x[i] + j + row;\n"
    "}\n"
    "void host(float *d, int n, cudaStream_t s) {\n"
    "    scale<<<(n + 255) / 256, 256>>>(d, 2.0f, n);\n"
    "    scale<<<dim3(4), dim3(128), 1024, s>>>(d, 1.0f, n);\n"
    "}\n";

/* ---- compile_commands.json discovery ----------------------------------------- */

Test(cuda_database, found_in_the_files_folder) {
    char *root = temp_dir();
    put(root, "proj/src/compile_commands.json", "[]");
    char *found = cuda_find_database(fmt("%s/proj/src", root));
    cr_assert_not_null(found);
    cr_expect_str_eq(found, fmt("%s/proj/src", root));
    free(found);
}

Test(cuda_database, found_in_a_parent) {
    char *root = temp_dir();
    put(root, "proj/compile_commands.json", "[]");
    put(root, "proj/src/kernels/deep/k.cu", "");
    char *found = cuda_find_database(fmt("%s/proj/src/kernels/deep", root));
    cr_assert_not_null(found);
    cr_expect_str_eq(found, fmt("%s/proj", root));
    free(found);
}

Test(cuda_database, found_in_a_parents_build_folder) {
    char *root = temp_dir();
    put(root, "proj/build/compile_commands.json", "[]");
    put(root, "proj/src/k.cu", "");
    char *found = cuda_find_database(fmt("%s/proj/src", root));
    cr_assert_not_null(found);
    cr_expect_str_eq(found, fmt("%s/proj/build", root));
    free(found);
}

Test(cuda_database, the_nearest_wins_and_a_folder_before_its_build) {
    char *root = temp_dir();
    put(root, "proj/build/compile_commands.json", "[]");
    put(root, "proj/src/build/compile_commands.json", "[]");
    put(root, "proj/src/k.cu", "");
    char *found = cuda_find_database(fmt("%s/proj/src", root));
    cr_assert_not_null(found);
    cr_expect_str_eq(found, fmt("%s/proj/src/build", root), "src/build is nearer than proj/build");
    free(found);

    /* in one folder, its own compile_commands.json comes before build/ (clangd's order) */
    put(root, "proj/src/compile_commands.json", "[]");
    found = cuda_find_database(fmt("%s/proj/src", root));
    cr_assert_not_null(found);
    cr_expect_str_eq(found, fmt("%s/proj/src", root));
    free(found);
}

Test(cuda_database, none_found) {
    char *root = temp_dir();
    put(root, "a/b/k.cu", "");
    char *found = cuda_find_database(fmt("%s/a/b", root));
    /* /tmp itself holds no database here; if one appears above, it is not ours */
    cr_expect(found == NULL || strncmp(found, root, strlen(root)) != 0, "found %s", found);
    free(found);
    cr_expect_null(cuda_find_database(fmt("%s/no/such/folder", root)));
}

Test(cuda_database, a_configured_build_folder_wins) {
    char *root = temp_dir();
    char *file = put(root, "proj/k.cu", "__global__ void k() {}\n");
    put(root, "proj/compile_commands.json",
        fmt("[{\"directory\": \"%s/proj\", \"file\": \"%s\", \"arguments\": [\"nvcc\", \"-DNEAR\", \"-c\", \"%s\"]}]",
            root, file, file));
    put(root, "out/compile_commands.json",
        fmt("[{\"directory\": \"%s/out\", \"file\": \"%s\", \"arguments\": [\"nvcc\", \"-DCONFIGURED\", \"-c\", "
            "\"%s\"]}]",
            root, file, file));

    CudaFlags walked;
    cr_assert(cuda_flags_for_file(file, NULL, &walked));
    cr_expect_str_eq(walked.database, fmt("%s/proj/compile_commands.json", root));
    cr_expect(has_arg(&walked, "-DNEAR"), "%s", args_text(&walked));
    cuda_flags_free(&walked);

    CudaFlagOptions options = {.build_dir = fmt("%s/out", root)};
    CudaFlags configured;
    cr_assert(cuda_flags_for_file(file, &options, &configured));
    cr_expect_str_eq(configured.database, fmt("%s/out/compile_commands.json", root));
    cr_expect(has_arg(&configured, "-DCONFIGURED"), "%s", args_text(&configured));
    cr_expect(!has_arg(&configured, "-DNEAR"), "%s", args_text(&configured));
    cr_expect_str_eq(configured.directory, fmt("%s/out", root));
    cuda_flags_free(&configured);
}

/* ---- nvcc flag translation --------------------------------------------------- */

Test(cuda_flags, gpu_architectures) {
    CudaFlags f = TRANSLATE("-arch=sm_80");
    cr_expect_str_eq(f.gpu_arch, "sm_80");
    cuda_flags_free(&f);

    f = TRANSLATE("--gpu-architecture=compute_90");
    cr_expect_str_eq(f.gpu_arch, "sm_90");
    cuda_flags_free(&f);

    f = TRANSLATE("-arch", "sm_75");
    cr_expect_str_eq(f.gpu_arch, "sm_75");
    cuda_flags_free(&f);

    f = TRANSLATE("--gpu-architecture", "sm_90a");
    cr_expect_str_eq(f.gpu_arch, "sm_90a");
    cuda_flags_free(&f);

    /* -gencode names the architecture too, and its value never reaches clang */
    f = TRANSLATE("-gencode", "arch=compute_86,code=sm_86", "-O2");
    cr_expect_str_eq(f.gpu_arch, "sm_86");
    cr_expect(!any_arg_contains(&f, "arch="), "%s", args_text(&f));
    cr_expect(!any_arg_contains(&f, "gencode"), "%s", args_text(&f));
    cuda_flags_free(&f);

    f = TRANSLATE("--generate-code=arch=compute_89,code=[compute_89,sm_89]");
    cr_expect_str_eq(f.gpu_arch, "sm_89");
    cr_expect_eq(f.count, 0, "%s", args_text(&f));
    cuda_flags_free(&f);

    /* arch=native/all: no architecture we can use; the default stays */
    f = TRANSLATE("-arch=native");
    cr_expect_null(f.gpu_arch);
    cuda_flags_free(&f);
}

Test(cuda_flags, gpu_arch_becomes_cuda_gpu_arch) {
    char *root = temp_dir();
    char *file = put(root, "k.cu", "");
    put(root, "compile_commands.json",
        fmt("[{\"directory\": \"%s\", \"file\": \"k.cu\", \"arguments\": [\"nvcc\", \"-arch=sm_80\", \"-c\", "
            "\"k.cu\"]}]",
            root));
    CudaFlags f;
    cr_assert(cuda_flags_for_file(file, NULL, &f));
    cr_expect(has_arg(&f, "--cuda-gpu-arch=sm_80"), "%s", args_text(&f));
    cr_expect(!has_arg(&f, "--cuda-gpu-arch=sm_90"), "%s", args_text(&f));
    cr_expect(!any_arg_contains(&f, "-arch=sm_80") || has_arg(&f, "--cuda-gpu-arch=sm_80"));
    cuda_flags_free(&f);

    /* a configured architecture wins over the database */
    CudaFlagOptions options = {.gpu_arch = "sm_90a"};
    cr_assert(cuda_flags_for_file(file, &options, &f));
    cr_expect(has_arg(&f, "--cuda-gpu-arch=sm_90a"), "%s", args_text(&f));
    cr_expect_null(f.problem);
    cuda_flags_free(&f);

    /* one clang 19 does not know is the file's problem, said in advise's words */
    options.gpu_arch = "sm_100";
    cr_assert(cuda_flags_for_file(file, &options, &f));
    cr_expect(f.problem && strstr(f.problem, "unknown gpu-arch 'sm_100'"), "%s", f.problem ? f.problem : "(none)");
    cuda_flags_free(&f);

    /* a database's newer architecture is read as sm_90 */
    put(root, "compile_commands.json",
        fmt("[{\"directory\": \"%s\", \"file\": \"k.cu\", \"arguments\": [\"nvcc\", \"-arch=sm_100\", \"-c\", "
            "\"k.cu\"]}]",
            root));
    cr_assert(cuda_flags_for_file(file, NULL, &f));
    cr_expect(has_arg(&f, "--cuda-gpu-arch=sm_90"), "%s", args_text(&f));
    cr_expect_null(f.problem);
    cuda_flags_free(&f);
}

Test(cuda_flags, relocatable_device_code) {
    CudaFlags f = TRANSLATE("-rdc=true");
    cr_expect(has_arg(&f, "-fgpu-rdc"), "%s", args_text(&f));
    cuda_flags_free(&f);
    f = TRANSLATE("--relocatable-device-code=true");
    cr_expect(has_arg(&f, "-fgpu-rdc"), "%s", args_text(&f));
    cuda_flags_free(&f);
    f = TRANSLATE("-rdc=false");
    cr_expect_eq(f.count, 0, "%s", args_text(&f));
    cuda_flags_free(&f);
}

Test(cuda_flags, xcompiler_keeps_what_shapes_the_parse) {
    CudaFlags f = TRANSLATE("-Xcompiler", "-O2,-fPIC,-DFOO,-Wall,-Iinc,-std=c++17");
    cr_expect(has_arg(&f, "-fPIC"), "%s", args_text(&f));
    cr_expect(has_arg(&f, "-DFOO"), "%s", args_text(&f));
    cr_expect(has_arg(&f, "-Iinc"), "%s", args_text(&f));
    cr_expect(has_arg(&f, "-std=c++17"), "%s", args_text(&f));
    cr_expect(!has_arg(&f, "-O2"), "%s", args_text(&f));
    cr_expect(!has_arg(&f, "-Wall"), "%s", args_text(&f));
    cr_expect(!any_arg_contains(&f, ","), "no comma list reaches clang: %s", args_text(&f));
    cuda_flags_free(&f);

    f = TRANSLATE("-Xcompiler=-fopenmp,-DBAR=1", "--compiler-options", "-DBAZ");
    cr_expect(has_arg(&f, "-fopenmp"), "%s", args_text(&f));
    cr_expect(has_arg(&f, "-DBAR=1"), "%s", args_text(&f));
    cr_expect(has_arg(&f, "-DBAZ"), "%s", args_text(&f));
    cuda_flags_free(&f);
}

Test(cuda_flags, nvcc_only_flags_are_dropped) {
    CudaFlags f = TRANSLATE("--expt-relaxed-constexpr", "--expt-extended-lambda", "-ccbin", "/usr/bin/g++-12",
                            "--options-file", "opts.txt", "-o", "out.o", "-c", "-lineinfo", "-Xptxas", "-v",
                            "--use_fast_math", "-x", "cu", "-forward-unknown-to-host-compiler", "k.cu", "-DKEEP");
    cr_expect_eq(f.count, 1, "only -DKEEP survives: %s", args_text(&f));
    cr_expect(has_arg(&f, "-DKEEP"), "%s", args_text(&f));
    cuda_flags_free(&f);

    f = TRANSLATE("-ccbin=/usr/bin/gcc", "--options-file=o.txt", "--compiler-bindir", "/opt/gcc",
                  "-maxrregcount=64", "--extended-lambda", "-MD", "-MF", "k.d", "-Werror", "all-warnings");
    cr_expect_eq(f.count, 0, "%s", args_text(&f));
    cuda_flags_free(&f);
}

Test(cuda_flags, includes_and_defines_with_separate_values_are_kept) {
    CudaFlags f = TRANSLATE("-I", "/opt/inc", "-isystem", "/opt/sys", "-D", "FOO=1", "-Ilocal", "-DBAR",
                            "--include-path", "/opt/more", "--define-macro", "BAZ", "-U", "OLD", "-include",
                            "pre.h");
    cr_expect(has_pair(&f, "-I", "/opt/inc"), "%s", args_text(&f));
    cr_expect(has_pair(&f, "-isystem", "/opt/sys"), "%s", args_text(&f));
    cr_expect(has_pair(&f, "-D", "FOO=1"), "%s", args_text(&f));
    cr_expect(has_arg(&f, "-Ilocal"), "%s", args_text(&f));
    cr_expect(has_arg(&f, "-DBAR"), "%s", args_text(&f));
    cr_expect(has_pair(&f, "-I", "/opt/more"), "nvcc's long form becomes -I: %s", args_text(&f));
    cr_expect(has_pair(&f, "-D", "BAZ"), "%s", args_text(&f));
    cr_expect(has_pair(&f, "-U", "OLD"), "%s", args_text(&f));
    cr_expect(has_pair(&f, "-include", "pre.h"), "%s", args_text(&f));
    cuda_flags_free(&f);
}

Test(cuda_flags, standard_and_input_files) {
    CudaFlags f = TRANSLATE("--std=c++17", "kernels.cu", "other.cpp", "-O3");
    cr_expect(has_arg(&f, "-std=c++17"), "%s", args_text(&f));
    cr_expect(!any_arg_contains(&f, "kernels.cu"), "input files are dropped: %s", args_text(&f));
    cr_expect(!any_arg_contains(&f, "other.cpp"), "%s", args_text(&f));
    cr_expect(!has_arg(&f, "--std=c++17"), "%s", args_text(&f));
    cuda_flags_free(&f);

    f = TRANSLATE("-std=c++20");
    cr_expect(has_arg(&f, "-std=c++20"), "%s", args_text(&f));
    cuda_flags_free(&f);
}

Test(cuda_flags, cmake_nvcc_command_parses_cleanly) {
    /* what CMake writes for a CUDA target compiled by nvcc */
    char *root = temp_dir();
    char *file = put(root, "src/k.cu",
                     "#include <cuda_runtime.h>\n"
                     "#ifndef FROM_CMAKE\n#error FROM_CMAKE missing\n#endif\n"
                     "__global__ void k(float *x) { x[threadIdx.x] = 0; }\n");
    put(root, "build/compile_commands.json",
        fmt("[{\"directory\": \"%s/build\", \"command\": \"/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler "
            "-DFROM_CMAKE -O3 -DNDEBUG --generate-code=arch=compute_90,code=[compute_90,sm_90] -Xcompiler=-fPIC "
            "-std=c++17 -x cu -c %s -o CMakeFiles/k.dir/src/k.cu.o\", \"file\": \"%s\"}]",
            root, file, file));
    Document *doc = doc_at(file, "#include <cuda_runtime.h>\n"
                                 "#ifndef FROM_CMAKE\n#error FROM_CMAKE missing\n#endif\n"
                                 "__global__ void k(float *x) { x[threadIdx.x] = 0; }\n");
    CudaSource *src = parse(doc, NULL);
    cr_expect(!src->has_errors, "first error: %s\nflags: %s", src->first_error_message, args_text(&src->flags));
    cr_expect(has_arg(&src->flags, "-DFROM_CMAKE"));
    cr_expect(has_arg(&src->flags, "-fPIC"));
    cuda_source_free(src);
    document_free(doc);
}

/* ---- a database entry with an nvcc command ------------------------------------- */

static const char *const DB_SOURCE =
    "#include <cuda_runtime.h>\n"
    "#include \"project.h\"\n"
    "#ifdef FROM_DB\n"
    "int from_db;\n"
    "#endif\n"
    "#if VALUE_FROM_DB == 42\n"
    "int value_is_42;\n"
    "#endif\n"
    "__global__ void k(float *x) { x[threadIdx.x] = PROJECT_SCALE; }\n";

static void check_database_parse(const char *root, const char *file) {
    Document *doc = doc_at(file, DB_SOURCE);
    CudaSource *src = parse(doc, NULL);
    cr_expect_str_eq(src->flags.database, fmt("%s/compile_commands.json", root));
    cr_expect(!src->has_errors, "first error: %s\nflags: %s", src->first_error_message, args_text(&src->flags));
    cr_expect_not_null(find(src, CXCursor_VarDecl, "from_db"), "-DFROM_DB from the database: %s",
                       args_text(&src->flags));
    cr_expect_not_null(find(src, CXCursor_VarDecl, "value_is_42"), "-D VALUE_FROM_DB=42 from the database");
    cr_expect_not_null(find(src, CXCursor_FunctionDecl, "k"));
    cr_expect_str_eq(src->flags.gpu_arch, "sm_80");
    cr_expect(has_arg(&src->flags, "--cuda-gpu-arch=sm_80"), "%s", args_text(&src->flags));
    cuda_source_free(src);
    document_free(doc);
}

Test(cuda_database, nvcc_entry_with_arguments) {
    char *root = temp_dir();
    char *file = put(root, "src/k.cu", DB_SOURCE);
    put(root, "include/project.h", "#define PROJECT_SCALE 2.0f\n");
    put(root, "compile_commands.json",
        fmt("[{\"directory\": \"%s\", \"file\": \"src/k.cu\", \"arguments\": [\"/usr/local/cuda/bin/nvcc\", "
            "\"-gencode\", \"arch=compute_80,code=sm_80\", \"-rdc=true\", \"--expt-relaxed-constexpr\", \"-ccbin\", "
            "\"g++\", \"-Xcompiler\", \"-O2,-fPIC\", \"-DFROM_DB\", \"-D\", \"VALUE_FROM_DB=42\", \"-I\", "
            "\"%s/include\", \"-c\", \"src/k.cu\", \"-o\", \"k.o\"]}]",
            root, root));
    check_database_parse(root, file);
}

Test(cuda_database, nvcc_entry_with_command) {
    char *root = temp_dir();
    char *file = put(root, "src/k.cu", DB_SOURCE);
    put(root, "include/project.h", "#define PROJECT_SCALE 2.0f\n");
    put(root, "compile_commands.json",
        fmt("[{\"directory\": \"%s\", \"file\": \"%s\", \"command\": \"nvcc -arch=sm_80 --extended-lambda "
            "-Xcompiler -fPIC -DFROM_DB -D VALUE_FROM_DB=42 -I%s/include -c %s -o k.o\"}]",
            root, file, root, file));
    check_database_parse(root, file);
}

Test(cuda_database, relative_include_folders_are_relative_to_the_entrys_directory) {
    /* Bear and hand-written databases use relative -I; the compile runs in "directory" */
    char *root = temp_dir();
    char *file = put(root, "src/k.cu", DB_SOURCE);
    put(root, "include/project.h", "#define PROJECT_SCALE 2.0f\n");
    put(root, "compile_commands.json",
        fmt("[{\"directory\": \"%s\", \"file\": \"src/k.cu\", \"arguments\": [\"nvcc\", \"-arch=sm_80\", "
            "\"-DFROM_DB\", \"-DVALUE_FROM_DB=42\", \"-Iinclude\", \"-c\", \"src/k.cu\"]}]",
            root));
    cr_assert(chdir("/") == 0); /* not the entry's directory */
    check_database_parse(root, file);
}

Test(cuda_database, without_the_database_the_macro_is_undefined) {
    char *root = temp_dir();
    char *file = put(root, "src/k.cu", DB_SOURCE);
    put(root, "src/project.h", "#define PROJECT_SCALE 1.0f\n");
    Document *doc = doc_at(file, DB_SOURCE);
    CudaSource *src = parse(doc, NULL);
    cr_expect_null(src->flags.database);
    cr_expect_null(find(src, CXCursor_VarDecl, "from_db"));
    cr_expect_null(find(src, CXCursor_VarDecl, "value_is_42"));
    cr_expect_not_null(find(src, CXCursor_FunctionDecl, "k"));
    cr_expect(!src->has_errors, "%s", src->first_error_message);
    cuda_source_free(src);
    document_free(doc);
}

Test(cuda_database, a_header_takes_the_command_of_a_neighbour) {
    /* clangd (and libclang's JSON database) interpolates commands for files
     * the database does not list, such as headers */
    char *root = temp_dir();
    put(root, "src/k.cu", "int k;\n");
    char *header = put(root, "src/k.cuh", "#ifdef FROM_DB\nint from_db;\n#endif\n");
    put(root, "compile_commands.json",
        fmt("[{\"directory\": \"%s\", \"file\": \"src/k.cu\", \"arguments\": [\"nvcc\", \"-DFROM_DB\", \"-c\", "
            "\"src/k.cu\"]}]",
            root));
    Document *doc = doc_at(header, "#ifdef FROM_DB\nint from_db;\n#endif\n");
    CudaSource *src = parse(doc, NULL);
    cr_expect(has_arg(&src->flags, "-DFROM_DB"), "%s", args_text(&src->flags));
    cr_expect_not_null(find(src, CXCursor_VarDecl, "from_db"));
    cuda_source_free(src);
    document_free(doc);
}

/* ---- defaults and the toolkit -------------------------------------------------- */

Test(cuda_flags, defaults_without_a_database) {
    char *root = temp_dir();
    char *file = put(root, "k.cu", "");
    CudaFlags f;
    cr_assert(cuda_flags_for_file(file, NULL, &f));
    cr_expect_null(f.database);
    cr_expect_str_eq(f.gpu_arch, "sm_90");
    cr_expect(has_arg(&f, "--cuda-gpu-arch=sm_90"), "%s", args_text(&f));
    cr_expect(has_arg(&f, "-std=c++17"), "%s", args_text(&f));
    cr_expect(has_pair(&f, "-x", "cuda"), "%s", args_text(&f));
    cr_expect(has_arg(&f, "--cuda-host-only"), "%s", args_text(&f));
    cr_expect(has_arg(&f, "-nocudalib"), "%s", args_text(&f));
    cr_expect(has_arg(&f, "-Wno-unknown-cuda-version"), "%s", args_text(&f));
    cr_expect_str_eq(f.directory, root);

    const char *shim = cuda_shim_dir();
    cr_assert_not_null(shim);
    cr_assert(*shim, "the shim folder could not be created");
    cr_expect(is_dir(shim), "%s", shim);
    cr_expect(is_file(fmt("%s/texture_fetch_functions.h", shim)), "%s", shim);
    cr_expect(has_pair(&f, "-isystem", shim), "%s", args_text(&f));
    cr_expect(strstr(shim, "cuda13-shim") != NULL, "%s", shim);

    if (is_file("/usr/local/cuda/include/cuda_runtime.h") && !getenv("CUDA_PATH")) {
        cr_expect_not_null(f.cuda_path);
        cr_expect(any_arg_contains(&f, "--cuda-path="), "%s", args_text(&f));
        cr_expect(has_pair(&f, "-isystem", fmt("%s/include/cccl", f.cuda_path)), "%s", args_text(&f));
    }
    cuda_flags_free(&f);
}

Test(cuda_flags, a_database_standard_is_kept) {
    char *root = temp_dir();
    char *file = put(root, "k.cu", "");
    put(root, "compile_commands.json",
        fmt("[{\"directory\": \"%s\", \"file\": \"k.cu\", \"arguments\": [\"nvcc\", \"-std=c++20\", \"-c\", "
            "\"k.cu\"]}]",
            root));
    CudaFlags f;
    cr_assert(cuda_flags_for_file(file, NULL, &f));
    cr_expect(has_arg(&f, "-std=c++20"), "%s", args_text(&f));
    cr_expect(!has_arg(&f, "-std=c++17"), "%s", args_text(&f));
    cuda_flags_free(&f);
}

Test(cuda_toolkit, found_through_cuda_path) {
    char *root = temp_dir();
    put(root, "fake-cuda/include/cuda_runtime.h", "/* fake */\n");
    char *toolkit = fmt("%s/fake-cuda", root);
    setenv("CUDA_PATH", toolkit, 1);
    char *found = cuda_find_toolkit(NULL);
    cr_expect_str_eq(found, toolkit);
    free(found);

    char *file = put(root, "k.cu", "");
    CudaFlags f;
    cr_assert(cuda_flags_for_file(file, NULL, &f));
    cr_expect_str_eq(f.cuda_path, toolkit);
    cr_expect(has_arg(&f, fmt("--cuda-path=%s", toolkit)), "%s", args_text(&f));
    cuda_flags_free(&f);

    /* a hint (from the database) comes first */
    put(root, "hinted/include/cuda_runtime.h", "");
    found = cuda_find_toolkit(fmt("%s/hinted", root));
    cr_expect_str_eq(found, fmt("%s/hinted", root));
    free(found);
}

/* The user's CUDA_PATH wins: a wrong one is reported (cuda_toolkit_missing), never replaced by
 * /usr/local/cuda or an nvcc on PATH, whose headers may be another version. */
Test(cuda_toolkit, a_cuda_path_without_headers_is_reported_not_replaced) {
    char *root = temp_dir();
    setenv("CUDA_PATH", root, 1); /* no include/cuda_runtime.h */
    char *found = cuda_find_toolkit(NULL);
    cr_expect_null(found, "%s", found);
    free(found);
    char *cu = put(root, "k.cu", "");
    char *reason = cuda_toolkit_missing(cu, NULL);
    cr_assert_not_null(reason);
    cr_expect_str_eq(reason, fmt("CUDA_PATH is %s, which has no include/cuda_runtime.h", root));
    free(reason);
    /* a C++ or C file needs no toolkit to be analysed */
    cr_expect_null(cuda_toolkit_missing(put(root, "host.cpp", ""), NULL));
    cr_expect_null(cuda_toolkit_missing(put(root, "plain.c", ""), NULL));
    /* a configured path is checked the same way, and named */
    put(root, "tk/include/cuda_runtime.h", "");
    CudaFlagOptions configured = {NULL, NULL, fmt("%s/tk", root)};
    cr_expect_null(cuda_toolkit_missing(cu, &configured));
    configured.cuda_path = "/nowhere";
    reason = cuda_toolkit_missing(cu, &configured);
    cr_expect(reason && strstr(reason, "([cuda] cuda-path = \"/nowhere\") has no include/cuda_runtime.h"), "%s", reason);
    free(reason);
}

Test(cuda_toolkit, found_through_nvcc_on_path) {
    char *root = temp_dir();
    put(root, "tk/include/cuda_runtime.h", "");
    char *nvcc = put(root, "tk/bin/nvcc", "#!/bin/sh\n");
    chmod(nvcc, 0755);
    unsetenv("CUDA_PATH");
    setenv("PATH", fmt("/nonexistent:%s/tk/bin", root), 1);
    char *found = cuda_find_toolkit(NULL);
    cr_expect_str_eq(found, fmt("%s/tk", root));
    free(found);
}

Test(cuda_toolkit, found_in_usr_local_cuda) {
    if (!is_file("/usr/local/cuda/include/cuda_runtime.h")) cr_skip_test("no /usr/local/cuda here");
    unsetenv("CUDA_PATH");
    setenv("PATH", "/nonexistent", 1);
    char *found = cuda_find_toolkit(NULL);
    cr_expect_str_eq(found, "/usr/local/cuda");
    free(found);
}

Test(cuda_toolkit, found_through_the_databases_compiler) {
    /* the database names nvcc by its full path: that toolkit is used */
    char *root = temp_dir();
    put(root, "tk/include/cuda_runtime.h", "");
    put(root, "tk/bin/nvcc", "");
    char *file = put(root, "k.cu", "");
    put(root, "compile_commands.json",
        fmt("[{\"directory\": \"%s\", \"file\": \"k.cu\", \"arguments\": [\"%s/tk/bin/nvcc\", \"-c\", "
            "\"k.cu\"]}]",
            root, root));
    unsetenv("CUDA_PATH");
    CudaFlags f;
    cr_assert(cuda_flags_for_file(file, NULL, &f));
    cr_expect_str_eq(f.cuda_path, fmt("%s/tk", root));
    cuda_flags_free(&f);

    /* --cuda-path= in a clang entry */
    put(root, "compile_commands.json",
        fmt("[{\"directory\": \"%s\", \"file\": \"k.cu\", \"arguments\": [\"clang++\", \"--cuda-path=%s/tk\", "
            "\"-c\", \"k.cu\"]}]",
            root, root));
    cr_assert(cuda_flags_for_file(file, NULL, &f));
    cr_expect_str_eq(f.cuda_path, fmt("%s/tk", root));
    cr_expect(has_arg(&f, fmt("--cuda-path=%s/tk", root)), "%s", args_text(&f));
    cuda_flags_free(&f);
}

/* ---- parsing: unsaved buffers, reparse, broken files, headers ------------------ */

Test(cuda_source, unsaved_buffer_is_parsed_not_the_file_on_disk) {
    char *root = temp_dir();
    char *file = put(root, "k.cu", "int on_disk;\n");
    Document *doc = doc_at(file, "#include <cuda_runtime.h>\nint in_buffer;\n__global__ void k() {}\n");
    CudaSource *src = parse(doc, NULL);
    cr_expect_not_null(find(src, CXCursor_VarDecl, "in_buffer"));
    cr_expect_null(find(src, CXCursor_VarDecl, "on_disk"));
    cr_expect(!src->has_errors, "%s", src->first_error_message);
    CuNode *k = find(src, CXCursor_FunctionDecl, "k");
    cr_assert_not_null(k);
    cr_expect(cu_is_kernel(k));
    cr_expect_eq(k->start, strstr(doc->text, "__global__") - doc->text, "offsets are in the buffer's text");
    cuda_source_free(src);
    document_free(doc);
}

Test(cuda_source, a_file_that_does_not_exist_yet) {
    char *root = temp_dir();
    Document *doc = doc_at(fmt("%s/new.cu", root), "__global__ void fresh(int *p) { p[threadIdx.x] = 1; }\n");
    CudaSource *src = parse(doc, NULL);
    cr_expect_not_null(find(src, CXCursor_FunctionDecl, "fresh"));
    cr_expect(!src->has_errors, "%s", src->first_error_message);
    cuda_source_free(src);
    document_free(doc);
}

Test(cuda_source, a_document_without_a_path) {
    Document *doc = document_new(NULL, LANGUAGE_CUDA, "__global__ void anon(int *p) { p[0] = 1; }\n", 44);
    cr_assert_not_null(doc);
    CudaSource *src = parse(doc, NULL);
    cr_expect_not_null(find(src, CXCursor_FunctionDecl, "anon"));
    char *error = NULL;
    cr_expect(cuda_source_reparse(src, doc, &error), "%s", error);
    cr_expect_not_null(find(src, CXCursor_FunctionDecl, "anon"));
    cuda_source_free(src);
    document_free(doc);
}

Test(cuda_source, reparse_after_an_edit) {
    char *root = temp_dir();
    char *file = put(root, "k.cu", KERNEL_FILE);
    Document *doc = doc_at(file, KERNEL_FILE);
    double t0 = now();
    CudaSource *src = parse(doc, NULL);
    double first = now() - t0, first_libclang = src->parse_seconds;
    cr_expect(!src->has_errors, "%s", src->first_error_message);
    cr_expect_null(find(src, CXCursor_FunctionDecl, "added_later"));
    cr_expect_null(find(src, CXCursor_VarDecl, "edited"));

    /* the first reparse builds the precompiled preamble (the LSP server does
     * this right after the first diagnostics); later ones reuse it */
    char *error = NULL;
    t0 = now();
    cr_assert(cuda_source_reparse(src, doc, &error), "%s", error);
    double warm = now() - t0;

    const char *added = "__global__ void added_later(int *p) { int edited = threadIdx.x; p[edited] = 0; }\n";
    cr_assert(document_replace(doc, doc->length, doc->length, added, strlen(added)));
    t0 = now();
    cr_assert(cuda_source_reparse(src, doc, &error), "%s", error);
    double second = now() - t0;
    cr_log_info("cuda front end: first parse %.1f ms (libclang %.1f ms), reparse building the preamble %.1f ms, "
                "reparse after an edit %.1f ms (libclang %.1f ms)",
                first * 1000, first_libclang * 1000, warm * 1000, second * 1000, src->parse_seconds * 1000);
    cr_expect(src->doc == doc);
    CuNode *fn = find(src, CXCursor_FunctionDecl, "added_later");
    cr_assert_not_null(fn, "the new kernel appears after the reparse");
    cr_expect(cu_is_kernel(fn));
    cr_expect_not_null(find(src, CXCursor_VarDecl, "edited"));
    cr_expect_not_null(find(src, CXCursor_FunctionDecl, "scale"), "the old nodes are still there");
    cr_expect(!src->has_errors, "%s", src->first_error_message);

    /* an edit that breaks the file, then one that mends it */
    const char *broken = "int oops = ;\n";
    cr_assert(document_replace(doc, doc->length, doc->length, broken, strlen(broken)));
    cr_assert(cuda_source_reparse(src, doc, &error), "%s", error);
    cr_expect(src->has_errors);
    cr_expect_eq(src->first_error, strstr(doc->text, "= ;") - doc->text + 2, "at the ';'");
    cr_assert(document_replace(doc, doc->length - strlen(broken), doc->length, "", 0));
    cr_assert(cuda_source_reparse(src, doc, &error), "%s", error);
    cr_expect(!src->has_errors, "%s", src->first_error_message);
    cr_expect_null(src->first_error_message);
    cuda_source_free(src);
    document_free(doc);
}

Test(cuda_source, a_broken_file_yields_what_parsed) {
    static const char *const text =
        "#include <cuda_runtime.h>\n"
        "void broken(int n) {\n"
        "    int x = ;\n"
        "    undeclared_call(x, n);\n"
        "}\n"
        "__global__ void after_kernel(float *p) {\n"
        "    __shared__ float tile[32];\n"
        "    tile[threadIdx.x] = p[threadIdx.x];\n"
        "    __syncthreads();\n"
        "    p[threadIdx.x] = tile[31 - threadIdx.x];\n"
        "}\n";
    char *root = temp_dir();
    Document *doc = doc_at(fmt("%s/broken.cu", root), text);
    CudaSource *src = parse(doc, NULL);
    cr_expect(src->has_errors);
    cr_expect_lt(src->first_error, strstr(text, "__global__") - text, "the first error is in broken()");
    cr_expect_not_null(src->first_error_message);
    if (src->first_error_message) cr_expect(*src->first_error_message);
    CuNode *k = find(src, CXCursor_FunctionDecl, "after_kernel");
    cr_assert_not_null(k, "the kernel after the broken function is in the snapshot");
    cr_expect(cu_is_kernel(k));
    CuNode *tile = find(src, CXCursor_VarDecl, "tile");
    cr_assert_not_null(tile);
    cr_expect(tile->attrs & CU_ATTR_SHARED);
    cr_expect_not_null(find(src, CXCursor_CallExpr, "__syncthreads"));
    cuda_source_free(src);
    document_free(doc);
}

/* clang reports an error in a -isystem header (errors are not silenced in
 * system headers, only warnings); advise does not pass it on: the user cannot
 * fix it, and the main file's nodes are all there. */
Test(cuda_source, errors_in_system_headers_are_not_reported) {
    char *root = temp_dir();
    put(root, "sys/vendor.h", "int vendor_ok;\nint vendor_broken = ;\n");
    static const char *const text = "#include <vendor.h>\n__global__ void mine(int *p) { p[0] = vendor_ok; }\n";
    char *file = put(root, "src/k.cu", text);
    put(root, "compile_commands.json",
        fmt("[{\"directory\": \"%s\", \"file\": \"src/k.cu\", \"arguments\": [\"nvcc\", \"-isystem\", \"%s/sys\", "
            "\"-c\", \"src/k.cu\"]}]",
            root, root));
    Document *doc = doc_at(file, text);
    CudaSource *src = parse(doc, NULL);
    cr_expect(has_pair(&src->flags, "-isystem", fmt("%s/sys", root)));

    /* what clang says: an error, in a system header */
    unsigned clang_errors = 0;
    for (unsigned i = 0; i < clang_getNumDiagnostics(src->tu); i++) {
        CXDiagnostic d = clang_getDiagnostic(src->tu, i);
        if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error) {
            clang_errors++;
            cr_expect(clang_Location_isInSystemHeader(clang_getDiagnosticLocation(d)));
        }
        clang_disposeDiagnostic(d);
    }
    cr_expect_eq(clang_errors, 1, "clang reports the header's error");

    /* what advise says */
    cr_expect(!src->has_errors, "not reported: %s", src->first_error_message);
    cr_expect_not_null(find(src, CXCursor_FunctionDecl, "mine"));
    cuda_source_free(src);
    document_free(doc);
}

/* An error in the project's own header (-I) is reported at the #include that
 * brings it in, as clangd does ("in included file"). */
Test(cuda_source, errors_in_project_headers_are_reported_at_the_include) {
    char *root = temp_dir();
    put(root, "inc/mine.h", "int fine;\nint mine_broken = ;\n");
    static const char *const text = "int before;\n#include \"mine.h\"\n__global__ void k(int *p) { p[0] = fine; }\n";
    char *file = put(root, "src/k.cu", text);
    put(root, "compile_commands.json",
        fmt("[{\"directory\": \"%s\", \"file\": \"src/k.cu\", \"arguments\": [\"nvcc\", \"-I%s/inc\", \"-c\", "
            "\"src/k.cu\"]}]",
            root, root));
    Document *doc = doc_at(file, text);
    CudaSource *src = parse(doc, NULL);
    cr_expect(src->has_errors);
    cr_expect_eq(src->first_error, strstr(text, "#include") - text, "at the #include");
    cr_expect(src->first_error_message && strstr(src->first_error_message, "mine.h"), "%s",
              src->first_error_message);
    cr_expect_not_null(find(src, CXCursor_FunctionDecl, "k"));

    /* still so after a reparse (the header now sits in the preamble) */
    char *error = NULL;
    cr_assert(cuda_source_reparse(src, doc, &error), "%s", error);
    cr_expect(src->has_errors);
    cr_expect_eq(src->first_error, strstr(text, "#include") - text);
    cuda_source_free(src);
    document_free(doc);
}

/* ---- what nvcc compiles parses (analysis/cuda/cuda_shims.c, include_search.c) -------- */

/* Valid CUDA that nvcc 13 compiles and clang 19 rejected: cache-hinted loads
 * and stores of vector types, min/max and isfinite in __host__ __device__
 * functions and min/max in host code, <omp.h> without clang's OpenMP headers,
 * cooperative groups, cub and the bf16 header. Written for this test; the
 * shapes come from public kernel collections. */
Test(cuda_source, what_nvcc_compiles_parses_cleanly) {
    char *root = temp_dir();
    static const char *const text =
        "#include <cuda_runtime.h>\n"
        "#include <cuda_bf16.h>\n"
        "#include <cooperative_groups.h>\n"
        "#include <cub/cub.cuh>\n"
        "#include <omp.h>\n"
        "#include <cmath>\n"
        "namespace cg = cooperative_groups;\n"
        "struct alignas(16) Packed { int4 raw; };\n"
        "__device__ Packed load_streaming(const Packed *p) { Packed v; v.raw = __ldcs((const int4 *)p); return v; }\n"
        "__device__ void store_streaming(float4 *p, float4 v) { __stcs(p, v); __stcg(p + 1, __ldcg(p)); }\n"
        "__host__ __device__ inline float clamp01(float x) { return max(0.f, min(x, 1.f)); }\n"
        "__host__ __device__ inline bool usable(float x) { return isfinite(x); }\n"
        "__global__ void surfaces(cudaSurfaceObject_t s) {\n"
        "    __shared__ alignas(16) float tile[32];\n"
        "    tile[threadIdx.x] = surf2Dread<float>(s, threadIdx.x * 4, 0);\n"
        "    surf2Dwrite(tile[threadIdx.x], s, threadIdx.x * 4, 1);\n"
        "}\n"
        "void planes(int n) { cudaSurfaceObject_t objects[n] = {0}; (void)objects; }\n"
        "__global__ void scale(float *out, const __nv_bfloat16 *in, int n) {\n"
        "    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < n) out[i] = clamp01(__bfloat162float(__ldcs(in + i))) + warp.thread_rank();\n"
        "}\n"
        "int main() {\n"
        "    double worst = 0.0;\n"
        "    #pragma omp parallel for\n"
        "    for (int k = 0; k < 4; k++) worst = max(worst, (double)k);\n"
        "    return usable((float)worst) ? omp_get_max_threads() : 0;\n"
        "}\n";
    char *file = put(root, "kernels.cu", text);
    Document *doc = doc_at(file, text);
    CudaSource *src = parse(doc, NULL);
    cr_expect(!src->has_errors, "%s", src->first_error_message);
    cr_expect_eq(src->error_count, 0);
    cr_expect_not_null(find(src, CXCursor_FunctionDecl, "scale"));
    cuda_source_free(src);
    document_free(doc);
}

/* What nvcc rejects stays an error: the shims declare only what nvcc has. */
Test(cuda_source, what_nvcc_rejects_is_still_an_error) {
    char *root = temp_dir();
    static const char *const text = "#include <cuda_runtime.h>\n"
                                    "__device__ float f(float a, int b) { return max(a, b); }\n";
    char *file = put(root, "ambiguous.cu", text);
    Document *doc = doc_at(file, text);
    CudaSource *src = parse(doc, NULL);
    cr_expect(src->has_errors);
    cr_expect(src->first_error_message && strstr(src->first_error_message, "ambiguous"), "%s",
              src->first_error_message);
    cuda_source_free(src);
    document_free(doc);
}

/* .c files are C and .cpp files C++, as nvcc hands them to the host compiler. */
Test(cuda_source, c_and_cpp_files_parse_as_the_host_compiler_sees_them) {
    char *root = temp_dir();
    static const char *const c_text = "#include <stdlib.h>\n#include <cuda_runtime.h>\n"
                                      "int *grab(size_t n) { int *p = malloc(n * sizeof *p); return p; }\n";
    char *c_file = put(root, "host.c", c_text);
    Document *c_doc = doc_at(c_file, c_text);
    CudaSource *c_src = parse(c_doc, NULL);
    cr_expect_str_eq(c_src->flags.language, "c");
    cr_expect(!c_src->has_errors, "%s", c_src->first_error_message);
    cuda_source_free(c_src);
    document_free(c_doc);
    static const char *const cpp_text = "#include <vector>\n#include <cuda_runtime.h>\n"
                                        "void copy(std::vector<float> &v, float *d) {\n"
                                        "    cudaMemcpy(d, v.data(), v.size() * 4, cudaMemcpyHostToDevice);\n}\n";
    char *cpp_file = put(root, "host.cpp", cpp_text);
    Document *cpp_doc = doc_at(cpp_file, cpp_text);
    CudaSource *cpp_src = parse(cpp_doc, NULL);
    cr_expect_str_eq(cpp_src->flags.language, "c++");
    cr_expect(!cpp_src->has_errors, "%s", cpp_src->first_error_message);
    cuda_source_free(cpp_src);
    document_free(cpp_doc);
}

/* Without a database, a project header the build would find through -I is
 * found in the project (the folder holding .git); a header that is nowhere
 * stays missing and is named. */
Test(cuda_source, project_headers_are_found_without_a_database) {
    char *root = temp_dir();
    mkdirs(fmt("%s/.git", root));
    put(root, "include/engine.h", "#pragma once\n#include \"engine_types.h\"\nint engine_version(void);\n");
    put(root, "include/engine_types.h", "typedef struct { float x; } EngineValue;\n");
    put(root, "include/other/engine.h", "#error the nearest one is not this one\n");
    put(root, "samples/one/util.h", "#error not this copy\n");
    put(root, "common/util.h", "int shared_util(void);\n");
    static const char *const text = "#include \"engine.h\"\n"
                                    "__global__ void k(EngineValue *v) { v[threadIdx.x].x = 1.0f; }\n"
                                    "int host_side(void) { return engine_version(); }\n";
    char *file = put(root, "src/backend/k.cu", text);
    Document *doc = doc_at(file, text);
    CudaSource *src = parse(doc, NULL);
    cr_expect(!src->has_errors, "%s", src->first_error_message);
    cr_expect(has_pair(&src->flags, "-idirafter", fmt("%s/include", root)), "%s", args_text(&src->flags));
    cr_expect_eq(src->inferred_includes, 1);
    cuda_source_free(src);
    document_free(doc);

    /* a second file of the project starts with the folder found for the first */
    static const char *const text2 = "#include \"engine.h\"\nint use(void) { return engine_version(); }\n";
    char *file2 = put(root, "src/frontend/f.cu", text2);
    Document *doc2 = doc_at(file2, text2);
    CudaSource *src2 = parse(doc2, NULL);
    cr_expect(!src2->has_errors, "%s", src2->first_error_message);
    cr_expect_eq(src2->inferred_includes, 0, "found before the first parse");
    cuda_source_free(src2);
    document_free(doc2);

    /* a copy of a header in another sample's folder loses to the shared include folder, however near */
    static const char *const text4 = "#include \"util.h\"\nint f(void) { return shared_util(); }\n";
    char *file4 = put(root, "samples/two/main.cu", text4);
    Document *doc4 = doc_at(file4, text4);
    CudaSource *src4 = parse(doc4, NULL);
    cr_expect(!src4->has_errors, "%s", src4->first_error_message);
    cuda_source_free(src4);
    document_free(doc4);

    static const char *const text3 = "#include <nowhere_to_be_found.h>\n__global__ void k3(int *p) { p[0] = 1; }\n";
    char *file3 = put(root, "src/k3.cu", text3);
    Document *doc3 = doc_at(file3, text3);
    CudaSource *src3 = parse(doc3, NULL);
    cr_expect(src3->has_errors);
    cr_expect_eq(src3->missing_header_count, 1);
    cr_expect_str_eq(src3->missing_headers[0], "nowhere_to_be_found.h");
    cr_expect_not_null(find(src3, CXCursor_FunctionDecl, "k3"), "what parsed is there");
    cuda_source_free(src3);
    document_free(doc3);
}

/* A folder another file needed is searched after the system's: a project
 * header named as a system header, which includes the system's (ggml's
 * vendors/cuda.h includes <cuda.h>), does not find itself in the next file. */
Test(cuda_source, learned_folders_do_not_shadow_system_headers) {
    char *root = temp_dir();
    mkdirs(fmt("%s/.git", root));
    put(root, "src/vendors/stdint.h", "#pragma once\n#include <stdint.h>\ntypedef uint32_t vendor_u32;\n");
    put(root, "src/vendors/compat.h", "#pragma once\n#define COMPAT 1\n");
    static const char *const first = "#include \"compat.h\"\n__global__ void a(int *p) { p[0] = COMPAT; }\n";
    char *file = put(root, "src/a.cu", first);
    Document *doc = doc_at(file, first);
    CudaSource *src = parse(doc, NULL);
    cr_expect(!src->has_errors, "%s", src->first_error_message);
    cr_expect_eq(src->inferred_includes, 1, "vendors/ found for compat.h");
    cuda_source_free(src);
    document_free(doc);

    static const char *const second = "#include \"vendors/stdint.h\"\n"
                                      "__global__ void b(vendor_u32 *p, uint64_t n) { p[0] = (vendor_u32)n; }\n";
    char *file2 = put(root, "src/b.cu", second);
    Document *doc2 = doc_at(file2, second);
    CudaSource *src2 = parse(doc2, NULL);
    cr_expect(!src2->has_errors, "%s", src2->first_error_message);
    cuda_source_free(src2);
    document_free(doc2);
}

/* ---- queries on a small kernel ------------------------------------------------- */

Test(cuda_query, launch_shape) {
    char *root = temp_dir();
    Document *doc = doc_at(fmt("%s/k.cu", root), KERNEL_FILE);
    CudaSource *src = parse(doc, NULL);
    cr_expect(!src->has_errors, "%s", src->first_error_message);

    CuLaunch launches[2] = {{0}};
    cu_walk(src->root, collect_launch, launches);
    CuLaunch *a = &launches[0], *b = &launches[1];
    cr_assert_not_null(a->call, "no launch found");
    cr_assert_not_null(b->call, "the second launch");

    cr_expect_str_eq(a->kernel, "scale");
    cr_assert_not_null(a->kernel_decl);
    cr_expect(cu_is_kernel(a->kernel_decl));
    cr_expect_str_eq(a->kernel_decl->name, "scale");
    cr_expect_str_eq(text_of(src, a->grid), "(n + 255) / 256");
    cr_expect_str_eq(text_of(src, a->block), "256");
    cr_expect_null(a->shared_bytes);
    cr_expect_null(a->stream);
    cr_assert_eq(a->arg_count, 3);
    cr_expect_str_eq(text_of(src, a->args[0]), "d");
    cr_expect_str_eq(text_of(src, a->args[1]), "2.0f");
    cr_expect_str_eq(text_of(src, a->args[2]), "n");
    long long v = 0;
    CuNode *block_literal = find_text(src, "256");
    cr_expect(cu_int_value(block_literal, &v) && v == 256, "%lld", v);

    cr_expect_str_eq(b->kernel, "scale");
    cr_expect_str_eq(text_of(src, b->grid), "dim3(4)");
    cr_expect_str_eq(text_of(src, b->block), "dim3(128)");
    cr_expect_str_eq(text_of(src, b->shared_bytes), "1024");
    cr_expect_str_eq(text_of(src, b->stream), "s");
    cr_expect_eq(b->arg_count, 3);
    cr_expect(cu_int_value(b->shared_bytes, &v) && v == 1024, "%lld", v);

    /* a plain call is not a launch */
    CuLaunch none;
    CuNode *k = find(src, CXCursor_FunctionDecl, "host");
    cr_assert_not_null(k);
    cr_expect(!cu_launch(k, &none));
    cuda_source_free(src);
    document_free(doc);
}

Test(cuda_query, thread_index_dependence) {
    char *root = temp_dir();
    Document *doc = doc_at(fmt("%s/k.cu", root), KERNEL_FILE);
    CudaSource *src = parse(doc, NULL);

    /* x[i]: i = blockIdx.x * blockDim.x + threadIdx.x */
    CuNode *subscript = find_text(src, "x[i]");
    cr_assert_eq(subscript->kind, CXCursor_ArraySubscriptExpr);
    CuNode *index = cu_child(subscript, 1);
    cr_assert_not_null(index);
    cr_expect(cu_depends_on_thread(src, index, 'x'));
    cr_expect(cu_depends_on_thread(src, index, 0));
    cr_expect(!cu_depends_on_thread(src, index, 'y'));
    cr_expect(cu_depends_on_thread_or_block(src, index));

    /* j = n * 2: no thread in it */
    CuNode *j_decl = find(src, CXCursor_VarDecl, "j");
    cr_assert_not_null(j_decl);
    cr_expect(!cu_depends_on_thread(src, j_decl, 0));
    cr_expect(!cu_depends_on_thread_or_block(src, j_decl));

    /* row = threadIdx.y: y, not x */
    CuNode *row = find(src, CXCursor_VarDecl, "row");
    cr_assert_not_null(row);
    cr_expect(cu_depends_on_thread(src, row, 'y'));
    cr_expect(!cu_depends_on_thread(src, row, 'x'));

    /* the builtin members */
    CuNode *tx = find_text(src, "threadIdx.x");
    cr_expect(cu_is_builtin_member(tx, "threadIdx", 'x'));
    cr_expect(!cu_is_builtin_member(tx, "threadIdx", 'y'));
    cr_expect(!cu_is_builtin_member(tx, "blockIdx", 0));
    CuNode *bx = find_text(src, "blockIdx.x");
    cr_expect(cu_is_builtin_member(bx, "blockIdx", 'x'));
    cr_expect(!cu_depends_on_thread(src, bx, 0), "blockIdx is not the thread index");
    cr_expect(cu_depends_on_thread_or_block(src, bx));

    /* the kernel and its statements */
    CuNode *fn = cu_function_of(subscript);
    cr_assert_not_null(fn);
    cr_expect_str_eq(fn->name, "scale");
    /* the body of an if without braces is the statement */
    CuNode *stmt = cu_statement_of(subscript);
    cr_assert_not_null(stmt);
    cr_expect_eq(stmt->kind, CXCursor_BinaryOperator);
    cr_expect_eq(stmt->parent->kind, CXCursor_IfStmt);
    cr_expect(!cu_starts_line(src, stmt));
    CuNode *decl_stmt = cu_statement_of(j_decl);
    cr_assert_not_null(decl_stmt);
    cr_expect_eq(decl_stmt->kind, CXCursor_DeclStmt);
    cr_expect(cu_starts_line(src, decl_stmt));
    char indent[16];
    cr_expect_eq(cu_line_indent(src, decl_stmt->start, indent, sizeof indent), 4);
    cr_expect_str_eq(indent, "    ");
    cuda_source_free(src);
    document_free(doc);
}

Test(cuda_query, template_kernel_launch_resolves_its_declaration) {
    static const char *const text =
        "#include <cuda_runtime.h>\n"
        "template <int N> __global__ void tk(float *x) { x[threadIdx.x] = N; }\n"
        "template <typename F> float timed(F f) { f(); return 0.0f; }\n"
        "void h(float *d) {\n"
        "    tk<4><<<1, 32>>>(d);\n"
        "    timed([&] { tk<8><<<2, 64>>>(d); });\n"
        "}\n";
    char *root = temp_dir();
    Document *doc = doc_at(fmt("%s/t.cu", root), text);
    CudaSource *src = parse(doc, NULL);
    cr_expect(!src->has_errors, "%s", src->first_error_message);
    CuLaunch launches[2] = {{0}};
    cu_walk(src->root, collect_launch, launches);
    for (int i = 0; i < 2; i++) {
        cr_assert_not_null(launches[i].call, "launch %d", i);
        cr_expect_str_eq(launches[i].kernel, "tk");
        cr_assert_not_null(launches[i].kernel_decl, "launch %d: the template kernel is defined in this file", i);
        cr_expect_eq(launches[i].kernel_decl->kind, CXCursor_FunctionTemplate, "kind %d [%u,%u)", launches[i].kernel_decl->kind, launches[i].kernel_decl->start, launches[i].kernel_decl->end);
        cr_expect(cu_is_kernel(launches[i].kernel_decl));
    }
    cr_expect_str_eq(text_of(src, launches[1].block), "64", "the launch inside the lambda");
    /* the snapshot holds what is written: no implicit instantiations beside the template */
    int tk_nodes = 0;
    for (uint32_t i = 0; i < src->root->child_count; i++) tk_nodes += strcmp(src->root->children[i]->name, "tk") == 0;
    cr_expect_eq(tk_nodes, 1);
    CuNode *call = find(src, CXCursor_CallExpr, "timed");
    cr_assert_not_null(call);
    cr_expect(call->ref && call->ref->kind == CXCursor_FunctionTemplate, "a call to a function template in this file");
    cuda_source_free(src);
    document_free(doc);
}

/* ---- the include preamble (cuda_preamble.h) ---------------------------------- */

static size_t preamble_of(const char *text) { return cuda_preamble_length(text, strlen(text)); }

Test(cuda_preamble, comments_and_include_lines_up_to_the_last_include) {
    const char *text = "/*\n * licence\n */\n\n// a note\n#include \"a.cuh\"\n  #  include <cuda_fp16.h> // why\n"
                       "#include \"b.h\" /* one line */\n\nMACRO(8, 128)\n";
    cr_expect_eq(preamble_of(text), (size_t)(strstr(text, "\n\nMACRO") + 1 - text));
    cr_expect_eq(preamble_of("#include <cstdio>"), 17, "no line end at the end of the text");
    cr_expect_eq(preamble_of("#include <cstdio>\r\nint x;\n"), 19);
}

Test(cuda_preamble, what_ends_it) {
    /* a directive that is not an #include, before or between them */
    cr_expect_eq(preamble_of("#define N 4\n#include <cstdio>\n"), 0);
    cr_expect_eq(preamble_of("#include <cstdio>\n#define N 4\n#include <cmath>\n"), 18);
    cr_expect_eq(preamble_of("#pragma once\n#include <cstdio>\n"), 0);
    cr_expect_eq(preamble_of("#include <cstdio>\n#if X\n#include <cmath>\n#endif\n"), 18);
    /* an include through a macro, a continued line, a comment that does not close on the line */
    cr_expect_eq(preamble_of("#include HEADER\n"), 0);
    cr_expect_eq(preamble_of("#include <cstdio>\n#include \\\n<cmath>\n"), 18);
    cr_expect_eq(preamble_of("#include <cstdio> /* runs\non */\n"), 0);
    cr_expect_eq(preamble_of("// note \\\n#include <cstdio>\n"), 0, "a // comment continued onto the include");
    cr_expect_eq(preamble_of("/* never closed\n#include <cstdio>\n"), 0);
    cr_expect_eq(preamble_of("#include <cstdio> int x;\n"), 0, "code after the include");
    /* a carriage return alone ends a line for clang: what follows it is not in the comment or the include */
    cr_expect_eq(preamble_of("// gen\r#define BLOCK 128\n#include \"k.cuh\"\n"), 0);
    cr_expect_eq(preamble_of("#include <cstdio>\n#include \"k.cuh\" // x\rint h;\n#include <cmath>\n"), 18);
    /* no include at all: nothing to share */
    cr_expect_eq(preamble_of("// only a comment\n__global__ void k() {}\n"), 0);
    cr_expect_eq(preamble_of(""), 0);
}

Test(cuda_preamble, blanked_keeps_offsets_and_lines) {
    const char *text = "// c\r\n#include \"a.h\"\nint x;\n";
    size_t n = preamble_of(text);
    char *b = cuda_preamble_blanked(text, strlen(text), n);
    cr_assert_not_null(b);
    cr_expect_str_eq(b, "    \r\n              \nint x;\n");
    free(b);
}

/* A file whose first parse read its #include lines from a precompiled
 * preamble (the third of a folder's files that open with the same lines)
 * reparses from the editor's whole text, and its edits show. */
Test(cuda_source, reparse_after_a_first_parse_from_a_shared_preamble) {
    char *root = temp_dir();
    const char *header = "#pragma once\ntemplate <int N> __global__ void fill(float *x) { x[threadIdx.x] = N; }\n";
    put(root, "fill.cuh", header);
    const char *body = "#include \"fill.cuh\"\n#include <cuda_runtime.h>\n\ntemplate __global__ void fill<%d>(float *);\n";
    Document *docs[3];
    CudaSource *srcs[3];
    for (int i = 0; i < 3; i++) {
        char *text = fmt(body, i + 1);
        docs[i] = doc_at(put(root, fmt("f%d.cu", i), text), text);
        srcs[i] = parse(docs[i], NULL);
        cr_expect(!srcs[i]->has_errors, "%s", srcs[i]->first_error_message);
    }
    CudaSource *src = srcs[2];
    Document *doc = docs[2];
    if (cuda_pch_enabled()) {
        cr_expect(src->pch && src->preamble == strlen("#include \"fill.cuh\"\n#include <cuda_runtime.h>\n"),
                  "the third file read the shared preamble (%zu bytes)", src->preamble);
    }
    const char *added = "void added_later(float *p) { fill<4><<<1, 32>>>(p); }\n";
    cr_assert(document_replace(doc, doc->length, doc->length, added, strlen(added)));
    char *error = NULL;
    cr_assert(cuda_source_reparse(src, doc, &error), "%s", error);
    cr_expect_eq(src->preamble, 0, "a reparse reads the whole text");
    cr_expect_not_null(find(src, CXCursor_FunctionDecl, "added_later"));
    cr_expect(!src->has_errors, "%s", src->first_error_message);
    cr_assert(cuda_source_reparse(src, doc, &error), "%s", error);
    cr_expect_not_null(find(src, CXCursor_FunctionDecl, "added_later"));
    for (int i = 0; i < 3; i++) {
        cuda_source_free(srcs[i]);
        document_free(docs[i]);
    }
}

/* One file parsed again (an editor that opens it twice, a profile merged
 * over it) does not make its preamble shared: the header is built when a
 * second file opens with the same lines. */
Test(cuda_source, a_preamble_is_shared_by_two_files_not_by_one_file_twice) {
    if (!cuda_pch_enabled()) return;
    char *root = temp_dir();
    put(root, "twice.cuh", "#pragma once\ninline __device__ int twice(int x) { return 2 * x; }\n");
    const char *text = "#include \"twice.cuh\"\n__global__ void k(int *p) { p[threadIdx.x] = twice(1); }\n";
    char *first = put(root, "a.cu", text), *second = put(root, "b.cu", text);
    for (int i = 0; i < 3; i++) {
        Document *doc = doc_at(first, text);
        CudaSource *src = parse(doc, NULL);
        cr_expect_eq(src->preamble, 0, "parse %d of the same file read no shared preamble", i + 1);
        cuda_source_free(src);
        document_free(doc);
    }
    Document *doc = doc_at(second, text);
    CudaSource *src = parse(doc, NULL);
    cr_expect_eq(src->preamble, strlen("#include \"twice.cuh\"\n"), "another file with the same lines shares it");
    cr_expect(!src->has_errors, "%s", src->first_error_message);
    cuda_source_free(src);
    document_free(doc);
}
