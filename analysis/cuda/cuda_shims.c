/* The headers advise adds to a libclang parse so that clang 19 accepts what
 * nvcc 13 compiles (see cuda_shims.h). Each is written once into a cache
 * folder and rewritten when this version's text differs from what is there
 * (another advise version wrote it), through a temporary file and a rename,
 * so that parallel processes never read half a header. */
#include "analysis/cuda/cuda_shims.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/base/atomic_file.h"

#define CLANG_RESOURCE_INCLUDE "/usr/lib/llvm-19/lib/clang/19/include"

/* CUDA 13 removed texture_fetch_functions.h; clang 19's CUDA runtime
 * wrapper still includes it. */
static const char texture_fetch_functions_h[] =
    "/* advise: CUDA 13 removed this header; clang 19's CUDA wrapper still includes it */\n";

/* What nvcc declares and clang 19's CUDA headers do not. Force-included
 * (-include) after clang's CUDA runtime wrapper in every CUDA parse. Only
 * declarations that nvcc itself makes, so code that nvcc rejects is not
 * made to parse: a user's own `int max(int, int)` collides with these just
 * as it collides with nvcc's. */
static const char nvcc_compat_h[] =
    "/* advise: declarations nvcc makes and clang 19's CUDA headers lack.\n"
    " * Written by advise (analysis/cuda/cuda_shims.c); safe to delete. */\n"
    "#ifndef ADVISE_NVCC_COMPAT_H\n"
    "#define ADVISE_NVCC_COMPAT_H\n"
    "#if defined(__CUDA__) && defined(__cplusplus)\n"
    "\n"
    "/* Cache-hinted loads and stores (sm_32_intrinsics.h under nvcc; clang\n"
    " * keeps that header out and defines only __ldg). */\n"
    "#define ADVISE_CACHE_HINTS(T)                                              \\\n"
    "    __device__ T __ldcg(const T *); __device__ T __ldca(const T *);          \\\n"
    "    __device__ T __ldcs(const T *); __device__ T __ldlu(const T *);          \\\n"
    "    __device__ T __ldcv(const T *);                                          \\\n"
    "    __device__ void __stwb(T *, T); __device__ void __stcg(T *, T);          \\\n"
    "    __device__ void __stcs(T *, T); __device__ void __stwt(T *, T);\n"
    "ADVISE_CACHE_HINTS(char) ADVISE_CACHE_HINTS(signed char) ADVISE_CACHE_HINTS(unsigned char)\n"
    "ADVISE_CACHE_HINTS(short) ADVISE_CACHE_HINTS(unsigned short)\n"
    "ADVISE_CACHE_HINTS(int) ADVISE_CACHE_HINTS(unsigned int)\n"
    "ADVISE_CACHE_HINTS(long) ADVISE_CACHE_HINTS(unsigned long)\n"
    "ADVISE_CACHE_HINTS(long long) ADVISE_CACHE_HINTS(unsigned long long)\n"
    "ADVISE_CACHE_HINTS(char2) ADVISE_CACHE_HINTS(char4) ADVISE_CACHE_HINTS(uchar2) ADVISE_CACHE_HINTS(uchar4)\n"
    "ADVISE_CACHE_HINTS(short2) ADVISE_CACHE_HINTS(short4) ADVISE_CACHE_HINTS(ushort2) ADVISE_CACHE_HINTS(ushort4)\n"
    "ADVISE_CACHE_HINTS(int2) ADVISE_CACHE_HINTS(int4) ADVISE_CACHE_HINTS(uint2) ADVISE_CACHE_HINTS(uint4)\n"
    "ADVISE_CACHE_HINTS(longlong2) ADVISE_CACHE_HINTS(ulonglong2)\n"
    "ADVISE_CACHE_HINTS(float) ADVISE_CACHE_HINTS(float2) ADVISE_CACHE_HINTS(float4)\n"
    "ADVISE_CACHE_HINTS(double) ADVISE_CACHE_HINTS(double2)\n"
    "#undef ADVISE_CACHE_HINTS\n"
    "\n"
    "/* nvcc's math_functions.hpp makes min and max __host__ __device__; clang\n"
    " * declares them for the device only, so host code calling max(a, b) did\n"
    " * not parse. The host half of nvcc's overload set: */\n"
    "#define ADVISE_MIN_MAX(R, A, B) __host__ R min(A, B); __host__ R max(A, B);\n"
    "ADVISE_MIN_MAX(int, int, int)\n"
    "ADVISE_MIN_MAX(unsigned int, unsigned int, unsigned int)\n"
    "ADVISE_MIN_MAX(unsigned int, int, unsigned int)\n"
    "ADVISE_MIN_MAX(unsigned int, unsigned int, int)\n"
    "ADVISE_MIN_MAX(long, long, long)\n"
    "ADVISE_MIN_MAX(unsigned long, unsigned long, unsigned long)\n"
    "ADVISE_MIN_MAX(unsigned long, long, unsigned long)\n"
    "ADVISE_MIN_MAX(unsigned long, unsigned long, long)\n"
    "ADVISE_MIN_MAX(long long, long long, long long)\n"
    "ADVISE_MIN_MAX(unsigned long long, unsigned long long, unsigned long long)\n"
    "ADVISE_MIN_MAX(unsigned long long, long long, unsigned long long)\n"
    "ADVISE_MIN_MAX(unsigned long long, unsigned long long, long long)\n"
    "ADVISE_MIN_MAX(float, float, float)\n"
    "ADVISE_MIN_MAX(double, double, double)\n"
    "ADVISE_MIN_MAX(double, float, double)\n"
    "ADVISE_MIN_MAX(double, double, float)\n"
    "#undef ADVISE_MIN_MAX\n"
    "\n"
    "/* Surface reads and writes through surface objects\n"
    " * (surface_indirect_functions.h under nvcc; clang leaves the header out). */\n"
    "#define ADVISE_SURFACE(NAME, ...)                                                          \\\n"
    "    template <class T> __device__ void NAME##read(T *, cudaSurfaceObject_t, __VA_ARGS__,       \\\n"
    "                                                 cudaSurfaceBoundaryMode = cudaBoundaryModeTrap); \\\n"
    "    template <class T> __device__ T NAME##read(cudaSurfaceObject_t, __VA_ARGS__,               \\\n"
    "                                              cudaSurfaceBoundaryMode = cudaBoundaryModeTrap);    \\\n"
    "    template <class T> __device__ void NAME##write(T, cudaSurfaceObject_t, __VA_ARGS__,        \\\n"
    "                                                  cudaSurfaceBoundaryMode = cudaBoundaryModeTrap);\n"
    "ADVISE_SURFACE(surf1D, int)\n"
    "ADVISE_SURFACE(surf2D, int, int)\n"
    "ADVISE_SURFACE(surf3D, int, int, int)\n"
    "ADVISE_SURFACE(surf1DLayered, int, int)\n"
    "ADVISE_SURFACE(surf2DLayered, int, int, int)\n"
    "ADVISE_SURFACE(surfCubemap, int, int, int)\n"
    "ADVISE_SURFACE(surfCubemapLayered, int, int, int)\n"
    "#undef ADVISE_SURFACE\n"
    "\n"
    "#endif\n"
    "#endif\n";

/* The OpenMP runtime API (OpenMP 5 names), for code that includes <omp.h>
 * when clang's own omp.h (Debian's libomp-dev) is not installed: gcc
 * finds its omp.h without -fopenmp, so nvcc compiles such code, while gcc's
 * header uses attributes clang rejects. Declarations only. */
static const char omp_h[] =
    "/* advise: the OpenMP runtime API, declared for parsing only (clang's omp.h is not installed).\n"
    " * Written by advise (analysis/cuda/cuda_shims.c); safe to delete. */\n"
    "#ifndef ADVISE_OMP_H\n"
    "#define ADVISE_OMP_H\n"
    "#ifdef __cplusplus\n"
    "extern \"C\" {\n"
    "#endif\n"
    "typedef struct { void *opaque[2]; } omp_lock_t;\n"
    "typedef struct { void *opaque[4]; } omp_nest_lock_t;\n"
    "typedef enum omp_sched_t { omp_sched_static = 1, omp_sched_dynamic = 2, omp_sched_guided = 3,\n"
    "                           omp_sched_auto = 4, omp_sched_monotonic = 0x80000000u } omp_sched_t;\n"
    "typedef enum omp_proc_bind_t { omp_proc_bind_false = 0, omp_proc_bind_true = 1, omp_proc_bind_master = 2,\n"
    "                               omp_proc_bind_close = 3, omp_proc_bind_spread = 4 } omp_proc_bind_t;\n"
    "void omp_set_num_threads(int);\n"
    "int omp_get_num_threads(void);\n"
    "int omp_get_max_threads(void);\n"
    "int omp_get_thread_num(void);\n"
    "int omp_get_num_procs(void);\n"
    "int omp_in_parallel(void);\n"
    "void omp_set_dynamic(int);\n"
    "int omp_get_dynamic(void);\n"
    "void omp_set_nested(int);\n"
    "int omp_get_nested(void);\n"
    "void omp_set_max_active_levels(int);\n"
    "int omp_get_max_active_levels(void);\n"
    "int omp_get_level(void);\n"
    "int omp_get_active_level(void);\n"
    "int omp_get_ancestor_thread_num(int);\n"
    "int omp_get_team_size(int);\n"
    "int omp_get_thread_limit(void);\n"
    "void omp_set_schedule(omp_sched_t, int);\n"
    "void omp_get_schedule(omp_sched_t *, int *);\n"
    "omp_proc_bind_t omp_get_proc_bind(void);\n"
    "int omp_get_num_devices(void);\n"
    "int omp_get_default_device(void);\n"
    "void omp_set_default_device(int);\n"
    "int omp_is_initial_device(void);\n"
    "void omp_init_lock(omp_lock_t *);\n"
    "void omp_destroy_lock(omp_lock_t *);\n"
    "void omp_set_lock(omp_lock_t *);\n"
    "void omp_unset_lock(omp_lock_t *);\n"
    "int omp_test_lock(omp_lock_t *);\n"
    "void omp_init_nest_lock(omp_nest_lock_t *);\n"
    "void omp_destroy_nest_lock(omp_nest_lock_t *);\n"
    "void omp_set_nest_lock(omp_nest_lock_t *);\n"
    "void omp_unset_nest_lock(omp_nest_lock_t *);\n"
    "int omp_test_nest_lock(omp_nest_lock_t *);\n"
    "double omp_get_wtime(void);\n"
    "double omp_get_wtick(void);\n"
    "#ifdef __cplusplus\n"
    "}\n"
    "#endif\n"
    "#endif\n";

static bool is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* True when path holds exactly text. */
static bool holds(const char *path, const char *text) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t n = strlen(text);
    char *buf = malloc(n + 2);
    size_t got = buf ? fread(buf, 1, n + 1, f) : 0;
    fclose(f);
    bool same = buf && got == n && memcmp(buf, text, n) == 0;
    free(buf);
    return same;
}

/* Writes text to dir/name unless it already holds it. */
static bool write_header(const char *dir, const char *name, const char *text) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (holds(path, text)) return true;
    char *error = NULL;
    bool ok = atomic_file_write_bytes(path, NULL, text, strlen(text), &error);
    free(error);
    return ok;
}

static pthread_mutex_t shim_lock = PTHREAD_MUTEX_INITIALIZER;
static char shim_dir[PATH_MAX];
static bool shim_ready;

const char *cuda_shim_dir(void) {
    pthread_mutex_lock(&shim_lock);
    if (!shim_ready) {
        shim_ready = true;
        const char *base = getenv("XDG_CACHE_HOME");
        const char *home = getenv("HOME");
        char dir[PATH_MAX];
        if (base && *base) snprintf(dir, sizeof dir, "%s/advise/cuda13-shim", base);
        else snprintf(dir, sizeof dir, "%s/.cache/advise/cuda13-shim", home && *home ? home : "/tmp");
        for (char *p = dir + 1; *p; p++)
            if (*p == '/') {
                *p = '\0';
                mkdir(dir, 0755);
                *p = '/';
            }
        mkdir(dir, 0755);
        bool ok = write_header(dir, "texture_fetch_functions.h", texture_fetch_functions_h) &&
                  write_header(dir, CUDA_NVCC_COMPAT_HEADER, nvcc_compat_h);
        /* clang's own omp.h, when installed, is the better one */
        char ours[PATH_MAX + 16];
        snprintf(ours, sizeof ours, "%s/omp.h", dir);
        if (is_file(CLANG_RESOURCE_INCLUDE "/omp.h")) unlink(ours);
        else ok = ok && write_header(dir, "omp.h", omp_h);
        snprintf(shim_dir, sizeof shim_dir, "%s", ok ? dir : "");
    }
    pthread_mutex_unlock(&shim_lock);
    return shim_dir;
}
