/* Compiler flags for parsing a CUDA/C++ file with libclang: found in a
 * compile_commands.json as clangd finds it (walking up from the file, or a
 * configured build folder), with nvcc-only flags translated to clang's or
 * dropped; sensible defaults when there is no database. Also finds the CUDA
 * toolkit and writes the CUDA 13 header shim clang 19 needs. */
#ifndef ADVISE_CUDA_FLAGS_H
#define ADVISE_CUDA_FLAGS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char **args; /* clang arguments, without the input file */
    size_t count;
    size_t cap; /* room in args (array_reserve); dropping arguments keeps it */
    char *directory;     /* the working directory of the compile command */
    char *database;      /* the compile_commands.json used, or NULL */
    bool database_inferred; /* it does not list the file: the command is a neighbour's */
    char *cuda_path;     /* the toolkit used, or NULL when none was found */
    char *gpu_arch;      /* sm_90 unless configured */
    const char *language; /* what the file is parsed as: "cuda", "c++" or "c" (static string) */
    const char *database_language; /* the language a database's -x named, or NULL (static string) */
    char *problem;       /* a setting that makes parsing pointless (a build-dir without a
                            database, a gpu-arch clang does not know): the file's error, or NULL */
} CudaFlags;

typedef struct {
    const char *build_dir; /* a configured folder holding compile_commands.json, or NULL */
    const char *gpu_arch;  /* NULL: sm_90 */
    const char *cuda_path; /* NULL: search */
} CudaFlagOptions;

/* The language a file is parsed as, as nvcc would compile it: .cu, .cuh
 * and headers as CUDA; .cpp, .cc and .cxx as C++ (nvcc hands them to the
 * host compiler); .c as C. A database's `-x cu` wins (CMake's LANGUAGE
 * CUDA on a .cpp file). Static string. */
const char *cuda_flags_language(const char *path, const char *database_language);

/* Adds `-idirafter dir`: a folder include_search found for a missing header,
 * searched after every folder the compiler already searches, so that it
 * supplies what was missing and never shadows a header found elsewhere
 * (ggml's vendors/cuda.h, which includes the toolkit's <cuda.h>, must not
 * find itself). */
bool cuda_flags_add_fallback_include(CudaFlags *flags, const char *dir);

/* Is arch (sm_90, sm_90a) a CUDA architecture the clang advise parses with
 * (19) knows? */
bool cuda_arch_known(const char *arch);
/* "sm_90" for "sm_90" or "compute_90" (heap), NULL for anything else. */
char *cuda_arch_normalized(const char *arch);
/* The words for an unknown gpu-arch, naming the ones clang knows (heap). */
char *cuda_arch_unknown_message(const char *arch);

/* Fills flags for `path`. Never fails for want of a database (defaults are
 * used); returns false only when memory runs out. */
bool cuda_flags_for_file(const char *path, const CudaFlagOptions *options, CudaFlags *out);
void cuda_flags_free(CudaFlags *flags);

/* Translates one compile command's arguments (without the compiler and the
 * input file) from nvcc or clang form to clang's; adds them to out. */
void cuda_flags_translate(const char *const *in, size_t n, CudaFlags *out);

/* The CUDA toolkit: the hint (from a database), CUDA_PATH, nvcc on PATH,
 * /usr/local/cuda. Heap string or NULL. A CUDA_PATH set to a folder
 * without the toolkit gives NULL: the user's setting is never replaced by a
 * toolkit found elsewhere. */
char *cuda_find_toolkit(const char *hint);

/* Why `path` (a file advise analyses as CUDA/C++) cannot be analysed here for want of the CUDA toolkit (heap
 * string: the configured path, CUDA_PATH or the search that failed), or NULL
 * when it can: it is not parsed as CUDA, or a toolkit is there. A CUDA file
 * needs the toolkit's headers: without them every such file would fail to
 * compile, so `advise check` skips them and says so once. */
char *cuda_toolkit_missing(const char *path, const CudaFlagOptions *options);

/* The search for compile_commands.json: `dir`, each parent, and their build/
 * subfolders, as clangd does. Heap path of the folder or NULL. */
char *cuda_find_database(const char *file_dir);

#endif
