/* The offline native call-site resolver (profiler/native_resolve.c): the
 * fixture programs of tests/fixtures/native/ are compiled into a fake
 * project under a temporary folder, run, and the frames they record (as
 * the injection library records them) are resolved back to the marked
 * lines. Also: frames without debug info, missing or bogus modules,
 * garbage addresses, and nvcc's launch stubs when nvcc is installed. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "profiler/native_resolve.h"

#define FIXTURES ADVISE_SOURCE_DIR "/tests/fixtures/native"
#define NVCC "/usr/local/cuda/bin/nvcc"

/* ---- files and commands --------------------------------------------------------- */

static char *cat(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = malloc(n);
    cr_assert(s);
    snprintf(s, n, "%s%s", a, b);
    return s;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    fclose(f);
    return s;
}

static void spit(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot write %s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

static void make_dir(const char *path) {
    cr_assert(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", path, strerror(errno));
}

/* Copies fixture `name` to `dest`. */
static void copy_fixture(const char *name, const char *dest) {
    char *src = cat(FIXTURES "/", name);
    char *text = slurp(src);
    cr_assert(text[0], "fixture %s is missing or empty", src);
    spit(dest, text);
    free(text);
    free(src);
}

/* Runs argv (NULL-terminated) with stdout into out_path (or /dev/null),
 * stderr into log_path, and extra NAME=VALUE pairs added to the
 * environment. Returns the exit status, or -1 when it did not exit. */
static int run_command(char *const argv[], const char *out_path, const char *log_path, char *const extra_env[]) {
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        /* never O_CREAT /dev/null: where it is missing that would make a plain file */
        int out = out_path ? open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644) : open("/dev/null", O_WRONLY);
        int log = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (out < 0 || log < 0) _exit(126);
        dup2(out, 1);
        dup2(log, 2);
        for (size_t i = 0; extra_env && extra_env[i]; i++) putenv(extra_env[i]);
        execvp(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* The 1-based line of `path` holding "expect: <tag>" (tag not followed by
 * more of a tag), or 0. */
static uint32_t marker_line(const char *path, const char *tag) {
    char *text = slurp(path);
    char *marker = cat("expect: ", tag);
    uint32_t line = 1, found = 0;
    for (const char *p = text; *p && !found; p++) {
        if (*p == '\n') line++;
        else if (strncmp(p, marker, strlen(marker)) == 0) {
            char next = p[strlen(marker)];
            if (next != '-' && (next < 'a' || next > 'z') && (next < '0' || next > '9')) found = line;
        }
    }
    free(marker);
    free(text);
    return found;
}

/* ---- the fake project ------------------------------------------------------------ */

typedef struct {
    char *tmp;       /* everything lives below it */
    char *toolkit;   /* <tmp>/toolkit: outside the root */
    char *root;      /* <tmp>/project: the project root */
    char *log;       /* compiler and program stderr */
    char *output;    /* what the program recorded */
    char *program;   /* the program's path */
} Fixture;

static Fixture fx;

#define VENDORED_INCLUDE_IN_ROOT ".venv/lib/nvidia/cuda_runtime/include"
#define VENDORED_INCLUDE "project/" VENDORED_INCLUDE_IN_ROOT

static void fixture_cleanup(void) {
    if (fx.tmp) nftw(fx.tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(fx.tmp);
    free(fx.toolkit);
    free(fx.root);
    free(fx.log);
    free(fx.output);
    free(fx.program);
    memset(&fx, 0, sizeof fx);
}

static char *in_tmp(const char *relative) {
    char *with_slash = cat(fx.tmp, "/");
    char *s = cat(with_slash, relative);
    free(with_slash);
    return s;
}

static void must_run(char *const argv[], const char *out_path, char *const extra_env[]) {
    int status = run_command(argv, out_path, fx.log, extra_env);
    if (status != 0) {
        char *log = slurp(fx.log);
        cr_assert_fail("`%s ...` exited with %d:\n%s", argv[0], status, log);
    }
}

/* The temporary folders and the fake toolkit (the recording library). */
static void fixture_base(void) {
    char tmpl[] = "/tmp/advise-native-XXXXXX";
    cr_assert(mkdtemp(tmpl));
    fx.tmp = realpath(tmpl, NULL); /* module paths are recorded resolved */
    cr_assert(fx.tmp);
    fx.toolkit = in_tmp("toolkit");
    fx.root = in_tmp("project");
    fx.log = in_tmp("log.txt");
    const char *dirs[] = {"toolkit", "toolkit/include", "project", "project/app", "project/lib",
                          "project/kernels", "project/build", "project/.venv", "project/.venv/lib",
                          "project/.venv/lib/nvidia", "project/.venv/lib/nvidia/cuda_runtime",
                          VENDORED_INCLUDE};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        char *d = in_tmp(dirs[i]);
        make_dir(d);
        free(d);
    }
    const char *copies[][2] = {
        {"fake_cuda.c", "toolkit/fake_cuda.c"}, {"fake_cuda.h", "toolkit/include/fake_cuda.h"},
        {"wrap.h", "toolkit/include/wrap.h"},   {"main.c", "project/app/main.c"},
        {"userlib.c", "project/lib/userlib.c"}, {"nodebug.c", "project/lib/nodebug.c"},
        {"launch.cu", "project/kernels/launch.cu"},
        {"vendored.h", VENDORED_INCLUDE "/vendored.h"},
    };
    for (size_t i = 0; i < sizeof copies / sizeof *copies; i++) {
        char *dest = in_tmp(copies[i][1]);
        copy_fixture(copies[i][0], dest);
        free(dest);
    }
    char *src = in_tmp("toolkit/fake_cuda.c"), *lib = in_tmp("toolkit/libfakecuda.so");
    must_run((char *[]){"cc", "-shared", "-fPIC", "-O1", "-g", "-o", lib, src, "-ldl", NULL}, NULL, NULL);
    free(src);
    free(lib);
}

/* Compiles the program `source` into `output` (both relative to the
 * root, where this runs) at optimisation level opt; pie or not. */
static void compile_program(const char *opt, bool pie, const char *source, const char *output) {
    char *include = cat("-I", fx.toolkit), *include_dir = cat(include, "/include");
    char *link_dir = cat("-L", fx.toolkit), *rpath = cat("-Wl,-rpath,", fx.toolkit);
    char *build_rpath = cat("-Wl,-rpath,", fx.root), *build_rpath_dir = cat(build_rpath, "/build");
    must_run((char *[]){"cc", "-g", (char *)opt, pie ? "-pie" : "-no-pie", pie ? "-fPIE" : "-fno-PIE",
                        include_dir, "-I" VENDORED_INCLUDE_IN_ROOT, "-o", (char *)output, (char *)source,
                        "-Lbuild", "-luser", "-lnodebug", link_dir, "-lfakecuda", rpath, build_rpath_dir, NULL},
             NULL, NULL);
    free(include);
    free(include_dir);
    free(link_dir);
    free(rpath);
    free(build_rpath);
    free(build_rpath_dir);
}

/* The C fixtures at optimisation level opt ("-O0", "-O2"); pie or not;
 * then runs the program. The build runs in the project folder with
 * relative source paths, as a build system would (DWARF then holds the
 * compilation directory). */
static void build_c(const char *opt, bool pie) {
    fixture_base();
    char *include = cat("-I", fx.toolkit), *include_dir = cat(include, "/include");
    char *link_dir = cat("-L", fx.toolkit), *rpath = cat("-Wl,-rpath,", fx.toolkit);
    fx.program = cat(fx.root, "/build/app");
    char *cwd = get_current_dir_name();
    cr_assert(chdir(fx.root) == 0);
    must_run((char *[]){"cc", "-g", (char *)opt, "-fPIC", "-shared", include_dir, "-o", "build/libuser.so",
                        "lib/userlib.c", link_dir, "-lfakecuda", rpath, NULL},
             NULL, NULL);
    must_run((char *[]){"cc", "-g0", "-s", (char *)opt, "-fPIC", "-shared", include_dir, "-o",
                        "build/libnodebug.so", "lib/nodebug.c", link_dir, "-lfakecuda", rpath, NULL},
             NULL, NULL);
    compile_program(opt, pie, "app/main.c", "build/app");
    cr_assert(chdir(cwd) == 0);
    free(cwd);
    fx.output = in_tmp("records.txt");
    char *root_env = cat("ADVISE_FAKE_ROOT=", fx.root);
    must_run((char *[]){fx.program, NULL}, fx.output, (char *[]){root_env, NULL});
    /* putenv in the child only: root_env may be freed here */
    free(root_env);
    free(include);
    free(include_dir);
    free(link_dir);
    free(rpath);
}

/* ---- records --------------------------------------------------------------------- */

typedef struct {
    ProfFrame frames[PROFILE_MAX_FRAMES + 8];
    size_t count;
} Record;

static void record_free(Record *r) {
    for (size_t i = 0; i < r->count; i++) free(r->frames[i].module);
    r->count = 0;
}

/* The frames recorded under tag in the program's output. */
static Record record_of(const char *tag) {
    Record rec = {.count = 0};
    char *text = slurp(fx.output);
    size_t tag_len = strlen(tag);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, tag, tag_len) != 0 || line[tag_len] != ' ') continue;
        char *p = line + tag_len;
        char module[4096];
        unsigned long long address;
        int used = 0;
        while (rec.count < PROFILE_MAX_FRAMES && sscanf(p, " %4095s 0x%llx%n", module, &address, &used) == 2) {
            rec.frames[rec.count].module = strdup(module);
            rec.frames[rec.count].address = address;
            rec.count++;
            p += used;
        }
        break;
    }
    free(text);
    cr_assert(rec.count > 0, "no frames recorded for '%s' in %s", tag, fx.output);
    return rec;
}

/* Resolves frames and checks file:line (line of the marker) and, when
 * function is not NULL, the function. */
static void expect_site(NativeResolver *r, const ProfFrame *frames, size_t count, const char *file,
                        const char *marker, const char *function) {
    char *source = cat(fx.root, "/");
    char *source_path = cat(source, file);
    uint32_t want = marker_line(source_path, marker);
    cr_assert(want > 0, "no marker '%s' in %s", marker, source_path);
    char *got_file = NULL, *got_function = NULL;
    uint32_t got_line = 0;
    bool ok = native_resolve(r, frames, count, &got_file, &got_line, &got_function);
    cr_expect(ok, "'%s': nothing resolved from %zu frames (first %s 0x%llx)", marker, count,
              count ? frames[0].module : "-", count ? (unsigned long long)frames[0].address : 0ull);
    if (ok) {
        cr_expect_str_eq(got_file, file, "'%s'", marker);
        cr_expect_eq(got_line, want, "'%s': line %u, want %u", marker, got_line, want);
        if (function) {
            cr_expect(got_function != NULL, "'%s': no function", marker);
            if (got_function) cr_expect_str_eq(got_function, function, "'%s'", marker);
        }
    }
    free(got_file);
    free(got_function);
    free(source);
    free(source_path);
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* ---- C programs --------------------------------------------------------------------- */

/* Checks the calls of app/main.c; optimised says whether the wrapper
 * was inlined (-O2) or is a frame of its own (-O0). */
static void check_c_program(bool optimised) {
    NativeResolver *r = native_resolver_new(fx.root);
    cr_assert(r);

    Record direct = record_of("direct");
    cr_expect_str_eq(direct.frames[0].module, fx.program);
    expect_site(r, direct.frames, direct.count, "app/main.c", "direct", "main");
    record_free(&direct);

    /* the wrapper lives in a header outside the root: the caller's line */
    Record wrapped = record_of("wrapped");
    expect_site(r, wrapped.frames, wrapped.count, "app/main.c", "wrapped", "main");
    char *out_file = NULL, *out_function = NULL;
    uint32_t out_line = 0;
    if (optimised) {
        /* one frame: the line of its call lies in wrap.h, inlined into
         * main; the resolver follows the inlined call site back */
        expect_site(r, wrapped.frames, 1, "app/main.c", "wrapped", "main");
    } else {
        /* the wrapper's own frame has no user line: fall through */
        cr_expect(!native_resolve(r, wrapped.frames, 1, &out_file, &out_line, &out_function));
        cr_expect(wrapped.count >= 2);
    }
    /* with a root that holds the toolkit too, the innermost frame is the
     * wrapper's line in the header: the test does test inlining */
    NativeResolver *wide = native_resolver_new(fx.tmp);
    cr_assert(wide);
    cr_expect(native_resolve(wide, wrapped.frames, 1, &out_file, &out_line, &out_function));
    cr_expect_str_eq(out_file ? out_file : "", "toolkit/include/wrap.h");
    char *header = cat(fx.toolkit, "/include/wrap.h");
    cr_expect_eq(out_line, marker_line(header, "wrapped-in-header"));
    cr_expect_str_eq(out_function ? out_function : "", "wrapped_call");
    free(header);
    free(out_file);
    free(out_function);
    native_resolver_free(wide);
    record_free(&wrapped);

    /* a PIC shared library of the project: its own line */
    Record library = record_of("library");
    cr_expect(ends_with(library.frames[0].module, "/build/libuser.so"), "%s", library.frames[0].module);
    cr_expect(library.count >= 2);
    expect_site(r, library.frames, library.count, "lib/userlib.c", "library", "user_lib_call");

    /* a stripped library without debug info: fall through to main */
    Record nodebug = record_of("nodebug");
    cr_expect(ends_with(nodebug.frames[0].module, "/build/libnodebug.so"), "%s", nodebug.frames[0].module);
    out_file = out_function = NULL;
    cr_expect(!native_resolve(r, nodebug.frames, 1, &out_file, &out_line, &out_function));
    cr_expect(out_file == NULL && out_function == NULL, "outputs are left alone on failure");
    expect_site(r, nodebug.frames, nodebug.count, "app/main.c", "nodebug", "main");
    record_free(&nodebug);

    /* a toolkit header inside the root is not user code either */
    Record vendored = record_of("vendored");
    expect_site(r, vendored.frames, vendored.count, "app/main.c", "vendored", "main");
    cr_expect(optimised || !native_resolve(r, vendored.frames, 1, &out_file, &out_line, &out_function));
    record_free(&vendored);

    /* the resolver's cache serves the same frames again */
    expect_site(r, library.frames, library.count, "lib/userlib.c", "library", "user_lib_call");
    record_free(&library);
    native_resolver_free(r);
}

Test(native_resolve, c_program_O0_pie, .fini = fixture_cleanup) {
    build_c("-O0", true);
    check_c_program(false);
}

Test(native_resolve, c_program_O2_inlined_wrapper_no_pie, .fini = fixture_cleanup) {
    build_c("-O2", false);
    check_c_program(true);
}

/* Modules that are missing, relative, not regular, not ELF or truncated,
 * and addresses that lie nowhere: skipped, never a crash. */
Test(native_resolve, bad_modules_and_garbage_addresses, .fini = fixture_cleanup) {
    build_c("-O0", true);
    char *source = cat(fx.root, "/app/main.c");
    char *truncated = in_tmp("truncated.so"), *fake_elf = in_tmp("fake-elf.so");
    char *program = slurp(fx.program);
    FILE *f = fopen(truncated, "wb");
    fwrite(program, 1, 200, f); /* an ELF header and a little more */
    fclose(f);
    free(program);
    /* an ELF header of a 64-bit shared object for x86-64, then 0xff: table
     * offsets and counts that point nowhere */
    unsigned char header[256];
    memset(header, 0xff, sizeof header);
    memcpy(header, "\177ELF\002\001\001\000\000\000\000\000\000\000\000\000\003\000\076\000\001\000\000\000", 24);
    f = fopen(fake_elf, "wb");
    fwrite(header, 1, sizeof header, f);
    fclose(f);

    ProfFrame junk[] = {
        {NULL, 0x1000},
        {"", 0x1000},
        {"relative/path.so", 0x1000},
        {"/nonexistent/dir/libgone.so", 0x1139},
        {fx.root, 0x1000},               /* a directory */
        {"/dev/null", 0x10},             /* not a regular file */
        {"/proc/self/mem", 0x10},
        {source, 0x10},                  /* not ELF */
        {truncated, 0x1100},
        {fake_elf, 0x20},
        {fx.program, 0},
        {fx.program, 1},
        {fx.program, UINT64_MAX},
        {fx.program, UINT64_MAX - 1},
        {fx.program, 0x8000000000000000ull},
        {fx.program, 0xdeadbeefcafeull},
        {"/bin/sh", 0x1234},             /* ELF, no project line */
    };
    size_t junk_count = sizeof junk / sizeof *junk;
    NativeResolver *r = native_resolver_new(fx.root);
    cr_assert(r);
    char *file = (char *)"untouched", *function = (char *)"untouched";
    uint32_t line = 77;
    cr_expect(!native_resolve(r, junk, junk_count, &file, &line, &function));
    cr_expect_str_eq(file, "untouched");
    cr_expect_str_eq(function, "untouched");
    cr_expect_eq(line, 77);
    cr_expect(!native_resolve(r, junk, 0, &file, &line, &function));
    cr_expect(!native_resolve(NULL, junk, junk_count, &file, &line, &function));

    /* junk first, then the real frames: the real call site */
    Record direct = record_of("direct");
    ProfFrame mixed[sizeof junk / sizeof *junk + PROFILE_MAX_FRAMES];
    memcpy(mixed, junk, sizeof junk);
    memcpy(mixed + junk_count, direct.frames, direct.count * sizeof *direct.frames);
    expect_site(r, mixed, junk_count + direct.count, "app/main.c", "direct", "main");
    /* twice: the failures are cached, the answer is the same */
    expect_site(r, mixed, junk_count + direct.count, "app/main.c", "direct", "main");

    /* many addresses in and around the real modules: any answer is a
     * sane relative path */
    uint64_t state = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 4000; i++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        ProfFrame frame = direct.frames[(size_t)i % direct.count];
        frame.address = i % 2 ? frame.address + (state % 0x4000) - 0x2000 : state >> (i % 64);
        char *out_file = NULL, *out_function = NULL;
        uint32_t out_line = 0;
        if (native_resolve(r, &frame, 1, &out_file, &out_line, &out_function)) {
            cr_expect(out_file[0] != '/' && !strstr(out_file, "..") && out_line > 0, "%s:%u", out_file,
                      out_line);
            free(out_file);
            free(out_function);
        }
    }
    record_free(&direct);
    native_resolver_free(r);
    free(source);
    free(truncated);
    free(fake_elf);
}

/* A stripped program whose debug info was split off (objcopy
 * --only-keep-debug, --add-gnu-debuglink): found beside it, but only when
 * its build-id is the program's. The wrong debug file comes from the same
 * program with its lines shifted (same code, another build-id): taken, it
 * would answer app/main_shifted.c. */
Test(native_resolve, separate_debug_file_by_debuglink, .fini = fixture_cleanup) {
    build_c("-O0", true);
    Record direct = record_of("direct");
    char *source = cat(fx.root, "/app/main.c"), *shifted_source = cat(fx.root, "/app/main_shifted.c");
    char *text = slurp(source), *shifted = cat("\n\n", text);
    spit(shifted_source, shifted);
    free(text);
    free(shifted);
    char *cwd = get_current_dir_name();
    cr_assert(chdir(fx.root) == 0);
    compile_program("-O0", true, "app/main_shifted.c", "build/app_shifted");
    cr_assert(chdir("build") == 0);
    must_run((char *[]){"objcopy", "--only-keep-debug", "app", "app.debug", NULL}, NULL, NULL);
    must_run((char *[]){"objcopy", "--strip-debug", "--add-gnu-debuglink=app.debug", "app", NULL}, NULL, NULL);
    cr_assert(rename("app.debug", "right.debug") == 0);
    must_run((char *[]){"objcopy", "--only-keep-debug", "app_shifted", "app.debug", NULL}, NULL, NULL);

    NativeResolver *r = native_resolver_new(fx.root);
    cr_assert(r);
    char *file = NULL, *function = NULL;
    uint32_t line = 0;
    bool taken = native_resolve(r, direct.frames, direct.count, &file, &line, &function);
    cr_expect(!taken, "a debug file with another build-id is refused, not read as %s:%u", file, line);
    free(file);
    free(function);
    native_resolver_free(r);

    cr_assert(rename("right.debug", "app.debug") == 0);
    cr_assert(chdir(cwd) == 0);
    free(cwd);
    r = native_resolver_new(fx.root);
    cr_assert(r);
    expect_site(r, direct.frames, direct.count, "app/main.c", "direct", "main");
    native_resolver_free(r);
    free(source);
    free(shifted_source);
    record_free(&direct);
}

/* The root is taken lexically ("/x/./y/" is "/x/y"), "/" holds every file,
 * and a relative root is refused. */
Test(native_resolve, project_roots, .fini = fixture_cleanup) {
    build_c("-O0", true);
    cr_expect_null(native_resolver_new("relative/root"));
    cr_expect_null(native_resolver_new(""));
    cr_expect_null(native_resolver_new(NULL));

    Record direct = record_of("direct");
    char *messy = cat(fx.tmp, "/./toolkit/../project//");
    NativeResolver *r = native_resolver_new(messy);
    cr_assert(r);
    expect_site(r, direct.frames, direct.count, "app/main.c", "direct", "main");
    native_resolver_free(r);

    r = native_resolver_new("/");
    cr_assert(r);
    char *file = NULL, *function = NULL;
    uint32_t line = 0;
    cr_expect(native_resolve(r, direct.frames, direct.count, &file, &line, &function));
    char *want = cat(fx.root + 1, "/app/main.c");
    cr_expect_str_eq(file ? file : "", want);
    free(want);
    free(file);
    free(function);
    native_resolver_free(r);

    /* a root elsewhere: nothing is user code */
    char *other = in_tmp("toolkit");
    r = native_resolver_new(other);
    cr_assert(r);
    cr_expect(!native_resolve(r, direct.frames, direct.count, &file, &line, &function));
    native_resolver_free(r);
    free(other);
    free(messy);
    record_free(&direct);
}

/* ---- CUDA --------------------------------------------------------------------------- */

/* Builds kernels/launch.cu with nvcc (plus the flags in extra, NULL-ended),
 * runs it with the fake runtime preloaded, and checks every launch;
 * functions too unless the host code is optimised. */
static void check_cuda(const char *const *extra, bool optimised) {
    if (access(NVCC, X_OK) != 0)
        cr_skip_test("nvcc not found at " NVCC ": the CUDA launch-stub case is not tested here");
    fixture_base();
    fx.program = cat(fx.root, "/build/launch");
    char *keep_dir = cat(fx.root, "/build/nvcc-keep");
    make_dir(keep_dir);
    free(keep_dir);
    char *cwd = get_current_dir_name();
    cr_assert(chdir(fx.root) == 0);
    char *argv[24] = {NVCC, "-g", "-lineinfo", "-cudart", "shared", "-arch=sm_90",
                      "-Xlinker=-rpath=/usr/local/cuda/lib64", "-o", "build/launch", "kernels/launch.cu"};
    for (size_t i = 0, n = 10; extra[i] && n < 23; i++) argv[n++] = (char *)extra[i];
    must_run(argv, NULL, NULL);
    cr_assert(chdir(cwd) == 0);
    free(cwd);

    fx.output = in_tmp("records.txt");
    char *root_env = cat("ADVISE_FAKE_ROOT=", fx.root);
    char *preload = cat("LD_PRELOAD=", fx.toolkit), *preload_lib = cat(preload, "/libfakecuda.so");
    must_run((char *[]){fx.program, NULL}, fx.output, (char *[]){root_env, preload_lib, NULL});
    free(root_env);
    free(preload);
    free(preload_lib);

    NativeResolver *r = native_resolver_new(fx.root);
    cr_assert(r);
    const char *functions[] = {"run(float*, float const*, int)", "run(float*, float const*, int)",
                               "run(float*, float const*, int)", "run_api(float*, float const*, int)"};
    for (int i = 1; i <= 4; i++) {
        char tag[16];
        snprintf(tag, sizeof tag, "launch-%d", i);
        Record launch = record_of(tag);
        /* the innermost recorded frames are nvcc's stubs (or the toolkit's
         * template), all in the program */
        cr_expect_str_eq(launch.frames[0].module, fx.program);
        expect_site(r, launch.frames, launch.count, "kernels/launch.cu", tag, optimised ? NULL : functions[i - 1]);
        record_free(&launch);
    }
    native_resolver_free(r);
}

/* -keep puts nvcc's generated files (launch.cudafe1.stub.c, ...) in the
 * project, so their lines lie under the root and must be refused by name;
 * the kernels' host functions (lines at the __global__ declarations) and
 * the cudaLaunchKernel template of cuda_runtime.h are frames of their own. */
Test(native_resolve, cuda_launch_skips_nvcc_stubs, .fini = fixture_cleanup) {
    check_cuda((const char *[]){"-keep", "-keep-dir", "build/nvcc-keep", NULL}, false);
}

/* -O3 on the host: the kernel's host function is inlined into run(), its
 * line (the __global__ declaration) must still be skipped; nvcc's
 * temporary files are /tmp/tmpxft_*. */
Test(native_resolve, cuda_launch_host_O3, .fini = fixture_cleanup) {
    check_cuda((const char *[]){"-O3", NULL}, true);
}

/* ---- demangling ----------------------------------------------------------------------- */

Test(native_demangle, mangled_and_plain_names) {
    const char *cases[][2] = {
        {"_Z9transposePfPKfii", "transpose(float*, float const*, int, int)"},
        {"_ZN2ns2nkEPi", "ns::nk(int*)"},
        {"_Z2tkIfEvPT_i", "void tk<float>(float*, int)"},
        {"transpose", "transpose"},
        {"scale", "scale"},
        {"_Z", "_Z"},                      /* not a valid mangling: copied */
        {"_Zgarbage(", "_Zgarbage("},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *d = native_demangle(cases[i][0]);
        cr_assert(d);
        cr_expect_str_eq(d, cases[i][1]);
        free(d);
    }
    char *d = native_demangle(NULL);
    cr_expect_str_eq(d, "");
    free(d);
    /* very long input is copied, not demangled */
    size_t n = PROFILE_MAX_STRING + 10;
    char *longname = malloc(n + 1);
    memset(longname, 'a', n);
    memcpy(longname, "_Z1f", 4);
    longname[n] = '\0';
    d = native_demangle(longname);
    cr_expect_str_eq(d, longname);
    free(d);
    free(longname);
}
