#include "analysis/cuda/cuda_flags.h"

#include <ctype.h>
#include <clang-c/CXCompilationDatabase.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/base/growable.h"
#include "analysis/cuda/cuda_shims.h"
#include "analysis/finding.h"
#include "analysis/base/text_format.h"

#define CLANG_RESOURCE_DIR "/usr/lib/llvm-19/lib/clang/19"

static bool add(CudaFlags *f, const char *arg) {
    if (!array_reserve(&f->args, f->count, &f->cap, sizeof *f->args, 16)) return false;
    char *copy = strdup(arg);
    if (!copy) return false;
    f->args[f->count++] = copy;
    return true;
}

static bool has_arg_prefix(const CudaFlags *f, const char *prefix) {
    size_t n = strlen(prefix);
    for (size_t i = 0; i < f->count; i++)
        if (strncmp(f->args[i], prefix, n) == 0) return true;
    return false;
}

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

char *cuda_find_toolkit(const char *hint) {
    char probe[PATH_MAX];
    if (hint && *hint) {
        snprintf(probe, sizeof probe, "%s/include/cuda_runtime.h", hint);
        if (is_file(probe)) return strdup(hint);
    }
    const char *env = getenv("CUDA_PATH");
    if (env && *env) {
        /* set by the user: it wins, and a wrong one is reported (cuda_toolkit_missing), not replaced */
        snprintf(probe, sizeof probe, "%s/include/cuda_runtime.h", env);
        return is_file(probe) ? strdup(env) : NULL;
    }
    const char *path = getenv("PATH");
    if (path) {
        const char *p = path;
        while (*p) {
            const char *colon = strchr(p, ':');
            size_t n = colon ? (size_t)(colon - p) : strlen(p);
            if (n && n < sizeof probe - 16) {
                snprintf(probe, sizeof probe, "%.*s/nvcc", (int)n, p);
                if (is_file(probe)) {
                    char *real = realpath(probe, NULL);
                    if (real) {
                        char *slash = strrchr(real, '/'); /* .../bin/nvcc -> ... */
                        if (slash) *slash = '\0';
                        slash = strrchr(real, '/');
                        if (slash) *slash = '\0';
                        char inc[PATH_MAX];
                        snprintf(inc, sizeof inc, "%s/include/cuda_runtime.h", real);
                        if (is_file(inc)) return real;
                        free(real);
                    }
                }
            }
            p += n + (colon ? 1 : 0);
            if (!colon) break;
        }
    }
    if (is_file("/usr/local/cuda/include/cuda_runtime.h")) return strdup("/usr/local/cuda");
    return NULL;
}

char *cuda_find_database(const char *file_dir) {
    char *cur = realpath(file_dir, NULL);
    if (!cur) return NULL;
    for (;;) {
        char probe[PATH_MAX];
        snprintf(probe, sizeof probe, "%s/compile_commands.json", cur);
        if (is_file(probe)) return cur;
        snprintf(probe, sizeof probe, "%s/build/compile_commands.json", cur);
        if (is_file(probe)) {
            char *found = format_string("%s/build", cur);
            free(cur);
            return found;
        }
        char *slash = strrchr(cur, '/');
        if (!slash || slash == cur) break;
        *slash = '\0';
    }
    free(cur);
    return NULL;
}

/* flags that take a value as the next argument and mean nothing to clang */
static const char *const nvcc_dropped_with_value[] = {
    "-gencode", "--generate-code", "-ccbin", "--compiler-bindir", "-Xptxas", "--ptxas-options", "-Xnvlink",
    "--nvlink-options", "-Xlinker", "--linker-options", "-maxrregcount", "--maxrregcount", "-Xarchive",
    "--options-file", "-optf", "-o", "--output-file", "-MF", "-MT", "-MQ", "--threads", "-t", "-code", "--gpu-code",
    "-odir", "--output-directory", "-arch-ls", "--dependency-output", "-Xcudafe", "--run-args", NULL};

static const char *const nvcc_dropped[] = {
    "-lineinfo", "--generate-line-info", "-G", "--device-debug", "--expt-relaxed-constexpr",
    "--expt-extended-lambda", "--extended-lambda", "-use_fast_math", "--use_fast_math", "-c", "--compile",
    "-dc", "--device-c", "-dw", "--device-w", "-cubin", "-ptx", "-fatbin", "-E", "-M", "-MD", "-MMD", "-MP",
    "--keep", "-keep", "-v", "--verbose", "-rdc=false", "--relocatable-device-code=false", "-Werror",
    "--Werror", "-w", "-lcudart", "-lcuda", "-cudart", NULL};

static bool in_list(const char *s, const char *const *list) {
    for (size_t i = 0; list[i]; i++)
        if (strcmp(s, list[i]) == 0) return true;
    return false;
}

static bool starts(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

/* `-Xcompiler -O2,-Wall` and `--compiler-options=...`: comma-separated host flags */
static void add_host_flags(CudaFlags *out, const char *list) {
    const char *p = list;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char buf[512];
        if (n && n < sizeof buf) {
            memcpy(buf, p, n);
            buf[n] = '\0';
            /* keep what shapes the parse: defines, includes, the standard */
            if (starts(buf, "-D") || starts(buf, "-U") || starts(buf, "-I") || starts(buf, "-std=") ||
                starts(buf, "-isystem") || starts(buf, "-f"))
                add(out, buf);
        }
        p += n + (comma ? 1 : 0);
        if (!comma) break;
    }
}

static void add_arch(CudaFlags *out, const char *arch) {
    /* sm_90, compute_90, sm_90a */
    char buf[64];
    const char *num = arch;
    if (starts(arch, "compute_")) num = arch + 8;
    else if (starts(arch, "sm_")) num = arch + 3;
    else return;
    snprintf(buf, sizeof buf, "sm_%s", num);
    free(out->gpu_arch);
    out->gpu_arch = strdup(buf);
}

/* `-gencode arch=compute_80,code=sm_80`: the architecture is the only part clang wants */
static void add_gencode_arch(CudaFlags *out, const char *value) {
    const char *arch = strstr(value, "arch=");
    if (!arch) return;
    arch += 5;
    char buf[64];
    size_t n = strcspn(arch, ",]");
    if (n == 0 || n >= sizeof buf) return;
    memcpy(buf, arch, n);
    buf[n] = '\0';
    add_arch(out, buf);
}

/* -O levels clang understands (they set __OPTIMIZE__); nvcc's -Ofc and
 * friends would be an "invalid value" error */
static bool is_clang_opt_level(const char *a) {
    return strcmp(a, "-O") == 0 || strcmp(a, "-O0") == 0 || strcmp(a, "-O1") == 0 || strcmp(a, "-O2") == 0 ||
           strcmp(a, "-O3") == 0 || strcmp(a, "-Os") == 0 || strcmp(a, "-Oz") == 0 || strcmp(a, "-Og") == 0 ||
           strcmp(a, "-Ofast") == 0;
}

void cuda_flags_translate(const char *const *in, size_t n, CudaFlags *out) {
    for (size_t i = 0; i < n; i++) {
        const char *a = in[i];
        if (strcmp(a, "-gencode") == 0 || strcmp(a, "--generate-code") == 0) {
            if (i + 1 < n) add_gencode_arch(out, in[++i]);
            continue;
        }
        if (starts(a, "-gencode=") || starts(a, "--generate-code=")) {
            add_gencode_arch(out, strchr(a, '=') + 1);
            continue;
        }
        /* nvcc options that look like host flags clang would keep: CMake's
         * -forward-unknown-to-host-compiler, -fdevice-*, -gen-opt-lto, -Ofc */
        if (starts(a, "-forward-") || starts(a, "-fdevice-") || (starts(a, "-O") && !is_clang_opt_level(a)) ||
            starts(a, "-g"))
            continue; /* -g changes nothing in a parse */
        if (in_list(a, nvcc_dropped_with_value)) {
            i++;
            continue;
        }
        if (in_list(a, nvcc_dropped)) continue;
        if (strcmp(a, "-Xcompiler") == 0 || strcmp(a, "--compiler-options") == 0) {
            if (i + 1 < n) add_host_flags(out, in[++i]);
            continue;
        }
        if (starts(a, "-Xcompiler=") || starts(a, "--compiler-options=")) {
            add_host_flags(out, strchr(a, '=') + 1);
            continue;
        }
        if (strcmp(a, "-arch") == 0 || strcmp(a, "--gpu-architecture") == 0) {
            if (i + 1 < n) add_arch(out, in[++i]);
            continue;
        }
        if (starts(a, "-arch=") || starts(a, "--gpu-architecture=")) {
            add_arch(out, strchr(a, '=') + 1);
            continue;
        }
        if (starts(a, "--cuda-gpu-arch=")) {
            add_arch(out, strchr(a, '=') + 1);
            continue;
        }
        if (starts(a, "-code=") ||
            starts(a, "--gpu-code=") || starts(a, "--options-file=") || starts(a, "-Xptxas=") || starts(a, "-o") ||
            starts(a, "-ccbin=") || starts(a, "--compiler-bindir=") || starts(a, "-maxrregcount=") ||
            starts(a, "--maxrregcount=") || starts(a, "--expt-") || starts(a, "-MF") || starts(a, "-MT") ||
            starts(a, "--threads=") || starts(a, "-Xnvlink") || starts(a, "-Xlinker") || starts(a, "-W") ||
            starts(a, "--ftz") || starts(a, "--prec-") || starts(a, "--fmad") || starts(a, "-ftz=") ||
            starts(a, "-prec-") || starts(a, "-fmad="))
            continue;
        if (strcmp(a, "-rdc=true") == 0 || strcmp(a, "--relocatable-device-code=true") == 0 ||
            strcmp(a, "-rdc") == 0) {
            add(out, "-fgpu-rdc");
            continue;
        }
        if (strcmp(a, "-x") == 0 || (starts(a, "-x") && a[2])) {
            /* the language is ours to set; a database's CUDA is remembered */
            const char *lang = a[2] ? a + 2 : (i + 1 < n ? in[++i] : "");
            if (strcmp(lang, "cu") == 0 || strcmp(lang, "cuda") == 0) out->database_language = "cuda";
            else if (strcmp(lang, "c++") == 0) out->database_language = "c++";
            else if (strcmp(lang, "c") == 0) out->database_language = "c";
            continue;
        }
        if (starts(a, "--cuda-path=")) {
            free(out->cuda_path);
            out->cuda_path = strdup(a + 12);
            continue;
        }
        if (strcmp(a, "-I") == 0 || strcmp(a, "-isystem") == 0 || strcmp(a, "-D") == 0 || strcmp(a, "-U") == 0 ||
            strcmp(a, "-include") == 0 || strcmp(a, "-iquote") == 0 || strcmp(a, "--include-path") == 0 ||
            strcmp(a, "--define-macro") == 0 || strcmp(a, "--system-include") == 0) {
            if (i + 1 < n) {
                const char *flag = strcmp(a, "--include-path") == 0 ? "-I"
                                   : strcmp(a, "--define-macro") == 0 ? "-D"
                                   : strcmp(a, "--system-include") == 0 ? "-isystem"
                                                                         : a;
                add(out, flag);
                add(out, in[++i]);
            }
            continue;
        }
        if (starts(a, "-I") || starts(a, "-D") || starts(a, "-U") || starts(a, "-isystem") || starts(a, "-std=") ||
            starts(a, "--std=") || starts(a, "-f") || starts(a, "-m") || starts(a, "-O") || starts(a, "-iquote") || starts(a, "-include")) {
            if (starts(a, "--std=")) {
                char buf[64];
                snprintf(buf, sizeof buf, "-std=%s", a + 6);
                add(out, buf);
            } else {
                add(out, a);
            }
            continue;
        }
        if (starts(a, "--")) continue; /* other nvcc long options */
        if (a[0] != '-') continue;    /* inputs, outputs */
        /* anything else: unknown to us; clang may not know it either */
    }
}

static bool has_suffix(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

const char *cuda_flags_language(const char *path, const char *database_language) {
    if (database_language && strcmp(database_language, "cuda") == 0) return "cuda";
    if (path && has_suffix(path, ".c")) return "c";
    if (path && (has_suffix(path, ".cpp") || has_suffix(path, ".cc") || has_suffix(path, ".cxx") ||
                 has_suffix(path, ".C") || has_suffix(path, ".c++")))
        return "c++";
    return "cuda";
}

/* Removes the arguments unwanted() picks (a -std= of the other language). */
static void drop_args(CudaFlags *f, bool (*unwanted)(const char *)) {
    size_t kept = 0;
    for (size_t i = 0; i < f->count; i++) {
        if (unwanted(f->args[i])) free(f->args[i]);
        else f->args[kept++] = f->args[i];
    }
    f->count = kept;
}

static bool is_c_standard(const char *a) {
    return (starts(a, "-std=c") || starts(a, "-std=gnu") || starts(a, "-std=iso9899")) && !strstr(a, "++");
}
static bool is_cxx_standard(const char *a) { return starts(a, "-std=") && strstr(a, "++"); }

static void add_toolkit_includes(CudaFlags *out) {
    char buf[PATH_MAX + 32];
    snprintf(buf, sizeof buf, "%s/include", out->cuda_path);
    add(out, "-isystem");
    add(out, buf);
    snprintf(buf, sizeof buf, "%s/include/cccl", out->cuda_path);
    if (is_dir(buf)) {
        add(out, "-isystem");
        add(out, buf);
    }
}

static void add_defaults(CudaFlags *out, const char *path) {
    if (!out->cuda_path) out->cuda_path = cuda_find_toolkit(NULL);
    if (!out->gpu_arch) out->gpu_arch = strdup("sm_90");
    out->language = cuda_flags_language(path, out->database_language);
    char buf[PATH_MAX + 32];
    const char *shim = cuda_shim_dir();
    add(out, "-x");
    add(out, out->language);
    add(out, "-resource-dir");
    add(out, CLANG_RESOURCE_DIR);
    add(out, "-ferror-limit=0");
    if (shim && *shim) { /* omp.h, texture_fetch_functions.h */
        add(out, "-isystem");
        add(out, shim);
    }
    if (strcmp(out->language, "c") == 0) {
        /* a C file, as the host compiler sees it (with the toolkit's headers) */
        drop_args(out, is_cxx_standard);
        if (out->cuda_path) add_toolkit_includes(out);
        return;
    }
    drop_args(out, is_c_standard); /* a neighbour's C flags, inferred by the database */
    if (!has_arg_prefix(out, "-std=")) add(out, "-std=c++17");
    if (strcmp(out->language, "c++") == 0) {
        if (out->cuda_path) add_toolkit_includes(out);
        return;
    }
    add(out, "--cuda-host-only");
    snprintf(buf, sizeof buf, "--cuda-gpu-arch=%s", out->gpu_arch);
    add(out, buf);
    add(out, "-nocudalib");
    add(out, "-Wno-unknown-cuda-version");
    if (out->cuda_path) {
        snprintf(buf, sizeof buf, "--cuda-path=%s", out->cuda_path);
        add(out, buf);
        snprintf(buf, sizeof buf, "%s/include/cccl", out->cuda_path);
        if (is_dir(buf)) {
            add(out, "-isystem");
            add(out, buf);
        }
    } else {
        add(out, "-nocudainc");
    }
    if (shim && *shim) {
        snprintf(buf, sizeof buf, "%s/%s", shim, CUDA_NVCC_COMPAT_HEADER);
        add(out, "-include");
        add(out, buf);
    }
}

bool cuda_flags_add_fallback_include(CudaFlags *flags, const char *dir) {
    return add(flags, "-idirafter") && add(flags, dir);
}

/* `dir/path` for a relative path, else NULL */
static char *resolved(const char *dir, const char *path) {
    if (!dir || !*dir || !*path || path[0] == '/') return NULL;
    return format_string("%s/%s", dir, path);
}

static void replace_arg(CudaFlags *f, size_t i, char *value) {
    if (!value) return;
    free(f->args[i]);
    f->args[i] = value;
}

/* Relative include folders and files in a database entry are relative to its
 * "directory", where the compiler ran, not to our working directory. */
static void resolve_paths(CudaFlags *f, size_t from, const char *dir) {
    static const char *const with_path[] = {"-I", "-isystem", "-iquote", "-idirafter", "-include", "-imacros", NULL};
    for (size_t i = from; i < f->count; i++) {
        const char *a = f->args[i];
        if (in_list(a, with_path)) {
            if (i + 1 < f->count) {
                replace_arg(f, i + 1, resolved(dir, f->args[i + 1]));
                i++;
            }
            continue;
        }
        for (size_t k = 0; with_path[k]; k++) {
            size_t n = strlen(with_path[k]);
            if (strncmp(a, with_path[k], n) == 0 && a[n]) {
                char *path = resolved(dir, a + n);
                if (path) {
                    replace_arg(f, i, format_string("%s%s", with_path[k], path));
                    free(path);
                }
                break;
            }
        }
    }
    if (f->cuda_path) {
        char *path = resolved(dir, f->cuda_path);
        if (path) {
            free(f->cuda_path);
            f->cuda_path = path;
        }
    }
}

/* The files a compile_commands.json lists (absolute, sorted), read once per
 * process for each database and again when it changes. libclang answers a
 * file it does not list with a neighbour's command under the file's own
 * name, so only the database itself tells the two apart. */
typedef struct {
    char *path;
    time_t mtime;
    off_t size;
    char **files;
    size_t count;
} ListedFiles;

static pthread_mutex_t listed_lock = PTHREAD_MUTEX_INITIALIZER;
static ListedFiles listed_cache[4];
static size_t listed_next;

static int by_string(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void listed_free(ListedFiles *l) {
    for (size_t i = 0; i < l->count; i++) free(l->files[i]);
    free(l->files);
    free(l->path);
    memset(l, 0, sizeof *l);
}

static void listed_read(ListedFiles *l, const char *db_path) {
    json_t *root = json_load_file(db_path, 0, NULL);
    size_t n = json_is_array(root) ? json_array_size(root) : 0;
    l->files = n ? calloc(n, sizeof *l->files) : NULL;
    for (size_t i = 0; l->files && i < n; i++) {
        json_t *entry = json_array_get(root, i);
        const char *file = json_string_value(json_object_get(entry, "file"));
        const char *dir = json_string_value(json_object_get(entry, "directory"));
        if (!file) continue;
        char *joined = file[0] == '/' || !dir ? strdup(file) : format_string("%s/%s", dir, file);
        char *real = joined ? realpath(joined, NULL) : NULL;
        if (real) {
            free(joined);
            joined = real;
        }
        if (joined) l->files[l->count++] = joined;
    }
    if (l->count) qsort(l->files, l->count, sizeof *l->files, by_string);
    json_decref(root);
}

static bool database_lists(const char *db_dir, const char *path) {
    char db_path[PATH_MAX];
    snprintf(db_path, sizeof db_path, "%s/compile_commands.json", db_dir);
    struct stat st;
    if (stat(db_path, &st) != 0) return false;
    pthread_mutex_lock(&listed_lock);
    ListedFiles *l = NULL;
    for (size_t i = 0; i < sizeof listed_cache / sizeof *listed_cache; i++)
        if (listed_cache[i].path && strcmp(listed_cache[i].path, db_path) == 0) l = &listed_cache[i];
    if (l && (l->mtime != st.st_mtime || l->size != st.st_size)) listed_free(l);
    else if (!l) {
        l = &listed_cache[listed_next];
        listed_next = (listed_next + 1) % (sizeof listed_cache / sizeof *listed_cache);
        listed_free(l);
    }
    if (!l->path) {
        l->path = strdup(db_path);
        l->mtime = st.st_mtime;
        l->size = st.st_size;
        listed_read(l, db_path);
    }
    bool found = l->count && bsearch(&path, l->files, l->count, sizeof *l->files, by_string) != NULL;
    pthread_mutex_unlock(&listed_lock);
    return found;
}

/* The toolkit of the entry's compiler when it is nvcc named with a folder
 * (`/opt/cuda-12.4/bin/nvcc`): heap path or NULL. */
static char *toolkit_of_compiler(const char *compiler, const char *dir) {
    const char *base = strrchr(compiler, '/');
    if (!base || strcmp(base + 1, "nvcc") != 0) return NULL;
    char *path = compiler[0] == '/' ? strdup(compiler) : resolved(dir, compiler);
    if (!path) return NULL;
    for (int up = 0; up < 2; up++) { /* .../bin/nvcc -> ... */
        char *slash = strrchr(path, '/');
        if (!slash || slash == path) {
            free(path);
            return NULL;
        }
        *slash = '\0';
    }
    char *found = NULL;
    char probe[PATH_MAX];
    snprintf(probe, sizeof probe, "%s/include/cuda_runtime.h", path);
    if (is_file(probe)) found = path;
    else free(path);
    return found;
}

/* The CUDA architectures clang 19 knows (clang/Basic/Cuda.h); sm_100 and
 * later came with clang 20. */
static const char *const CLANG_ARCHES[] = {"sm_20", "sm_21", "sm_30", "sm_32", "sm_35", "sm_37", "sm_50",
                                           "sm_52", "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72",
                                           "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", NULL};

bool cuda_arch_known(const char *arch) {
    for (size_t i = 0; arch && CLANG_ARCHES[i]; i++)
        if (strcmp(arch, CLANG_ARCHES[i]) == 0) return true;
    return false;
}

char *cuda_arch_normalized(const char *arch) {
    const char *num = starts(arch, "sm_") ? arch + 3 : starts(arch, "compute_") ? arch + 8 : NULL;
    if (!num || !isdigit((unsigned char)num[0])) return NULL;
    return format_string("sm_%s", num);
}

char *cuda_arch_unknown_message(const char *arch) {
    return format_string("unknown gpu-arch '%s': the clang that advise parses CUDA with (19) knows sm_20 to sm_90 "
                         "and sm_90a; set [cuda] gpu-arch to one of them (sm_90 reads code written for newer GPUs "
                         "too)",
                         arch);
}

static bool is_folder(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool cuda_flags_for_file(const char *path, const CudaFlagOptions *options, CudaFlags *out) {
    memset(out, 0, sizeof *out);
    char *dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) *slash = '\0';
    else if (dir) strcpy(dir, ".");
    char *db_dir = options && options->build_dir ? strdup(options->build_dir) : (dir ? cuda_find_database(dir) : NULL);
    if (db_dir && options && options->build_dir) {
        /* said in advise's words, before libclang prints its tooling error */
        char probe[PATH_MAX];
        snprintf(probe, sizeof probe, "%s/compile_commands.json", db_dir);
        if (!is_file(probe)) {
            out->problem = format_string("[cuda] build-dir '%s' %s; point it at the build folder CMake wrote "
                                         "it to (-DCMAKE_EXPORT_COMPILE_COMMANDS=ON), or remove the setting",
                                         db_dir, is_folder(db_dir) ? "holds no compile_commands.json"
                                                                   : "does not exist");
            free(db_dir);
            db_dir = NULL;
        }
    }
    if (db_dir) {
        CXCompilationDatabase_Error err;
        CXCompilationDatabase db = clang_CompilationDatabase_fromDirectory(db_dir, &err);
        if (err == CXCompilationDatabase_NoError && db) {
            char *real = realpath(path, NULL);
            CXCompileCommands cmds = clang_CompilationDatabase_getCompileCommands(db, real ? real : path);
            if (cmds && clang_CompileCommands_getSize(cmds) > 0) {
                CXCompileCommand cmd = clang_CompileCommands_getCommand(cmds, 0);
                unsigned argc = clang_CompileCommand_getNumArgs(cmd);
                const char **argv = calloc(argc ? argc : 1, sizeof *argv);
                CXString *strings = calloc(argc ? argc : 1, sizeof *strings);
                for (unsigned i = 0; argv && strings && i < argc; i++) {
                    strings[i] = clang_CompileCommand_getArg(cmd, i);
                    argv[i] = clang_getCString(strings[i]);
                }
                CXString d = clang_CompileCommand_getDirectory(cmd);
                out->directory = strdup(clang_getCString(d));
                clang_disposeString(d);
                /* a file the database does not list gets a neighbour's command */
                out->database_inferred = !database_lists(db_dir, real ? real : path);
                /* skip the compiler itself; the input file is dropped as a non-flag */
                if (argv && strings && argc > 1) cuda_flags_translate(argv + 1, argc - 1, out);
                resolve_paths(out, 0, out->directory);
                if (!out->cuda_path && argv && argc > 0 && argv[0])
                    out->cuda_path = toolkit_of_compiler(argv[0], out->directory);
                for (unsigned i = 0; strings && i < argc; i++) clang_disposeString(strings[i]);
                free(strings);
                free(argv);
                out->database = format_string("%s/compile_commands.json", db_dir);
            }
            if (cmds) clang_CompileCommands_dispose(cmds);
            free(real);
            clang_CompilationDatabase_dispose(db);
        }
        free(db_dir);
    }
    /* a database's architecture that clang does not know (sm_100 from a
     * Blackwell build) is read as sm_90: the code parses the same */
    if (out->gpu_arch && !cuda_arch_known(out->gpu_arch)) {
        free(out->gpu_arch);
        out->gpu_arch = NULL;
    }
    /* configured settings win over the database; an unknown one is an error */
    if (options && options->gpu_arch) {
        char *arch = cuda_arch_normalized(options->gpu_arch);
        if (!arch || !cuda_arch_known(arch)) {
            if (!out->problem) out->problem = cuda_arch_unknown_message(options->gpu_arch);
            free(arch);
        } else {
            free(out->gpu_arch);
            out->gpu_arch = arch;
        }
    }
    if (options && options->cuda_path) {
        free(out->cuda_path);
        out->cuda_path = strdup(options->cuda_path);
    }
    if (!out->directory) out->directory = dir ? strdup(dir) : NULL;
    free(dir);
    add_defaults(out, path);
    return true;
}

static bool holds_toolkit(const char *dir) {
    char probe[PATH_MAX];
    return (size_t)snprintf(probe, sizeof probe, "%s/include/cuda_runtime.h", dir) < sizeof probe && is_file(probe);
}

char *cuda_toolkit_missing(const char *path, const CudaFlagOptions *options) {
    if (strcmp(cuda_flags_language(path, NULL), "cuda") != 0) return NULL;
    if (options && options->cuda_path) {
        if (holds_toolkit(options->cuda_path)) return NULL;
        return format_string("the CUDA toolkit configured in advise.toml ([cuda] cuda-path = \"%s\") has no "
                             "include/cuda_runtime.h",
                             options->cuda_path);
    }
    char *found = cuda_find_toolkit(NULL);
    if (found) {
        free(found);
        return NULL;
    }
    /* a compile database may name an nvcc whose toolkit is elsewhere */
    CudaFlags flags = {0};
    bool has_toolkit = cuda_flags_for_file(path, options, &flags) && flags.cuda_path && holds_toolkit(flags.cuda_path);
    bool cuda = flags.language && strcmp(flags.language, "cuda") == 0;
    cuda_flags_free(&flags);
    if (has_toolkit || !cuda) return NULL;
    const char *env = getenv("CUDA_PATH");
    if (env && *env)
        return format_string("CUDA_PATH is %s, which has no include/cuda_runtime.h", env);
    return format_string("no CUDA toolkit was found (CUDA_PATH is not set, no nvcc on PATH, no "
                         "/usr/local/cuda/include/cuda_runtime.h)");
}

void cuda_flags_free(CudaFlags *f) {
    for (size_t i = 0; i < f->count; i++) free(f->args[i]);
    free(f->args);
    free(f->directory);
    free(f->database);
    free(f->cuda_path);
    free(f->gpu_arch);
    free(f->problem);
    memset(f, 0, sizeof *f);
}
