/* Native call sites: the return addresses on the stack that lie in user
 * modules (the main program, or a shared object inside the project),
 * innermost first, as ELF virtual addresses. They are resolved to lines
 * with DWARF after the run, by the `advise profile` parent
 * (profiler/native_resolve.c), so the profiled process pays no DWARF cost. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profiler/inject/inject.h"

#define MAX_MODULES 512
#define STACK_WALK 48

typedef struct {
    uintptr_t start, end;     /* mapped range of its loadable segments */
    uintptr_t bias;           /* load bias: ELF address = pc - bias */
    char *path;               /* absolute */
    bool user;
} Module;

static pthread_rwlock_t modules_lock = PTHREAD_RWLOCK_INITIALIZER;
static Module modules[MAX_MODULES];
static size_t module_count;
static unsigned long long modules_adds = ~0ull; /* dlpi_adds when the table was built */
static char exe_path[PATH_MAX];
static char self_path[PATH_MAX]; /* the injection library's own file */
static bool wanted;

static bool is_python_binary(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "python", 6) == 0;
}

/* Does the ELF file carry DWARF line tables? Without them its frames could
 * never be resolved to a line, so it does not count as a user module. */
static bool has_line_info(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    bool found = false;
    ElfW(Ehdr) eh;
    if (fread(&eh, sizeof eh, 1, f) == 1 && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
        eh.e_shentsize == sizeof(ElfW(Shdr)) && eh.e_shnum > 0 && eh.e_shnum < 4096 &&
        eh.e_shstrndx < eh.e_shnum) {
        ElfW(Shdr) *sh = calloc(eh.e_shnum, sizeof *sh);
        if (sh && fseek(f, (long)eh.e_shoff, SEEK_SET) == 0 && fread(sh, sizeof *sh, eh.e_shnum, f) == eh.e_shnum) {
            const ElfW(Shdr) *strtab = &sh[eh.e_shstrndx];
            char *names = strtab->sh_size < (1u << 20) ? malloc(strtab->sh_size + 1) : NULL;
            if (names && fseek(f, (long)strtab->sh_offset, SEEK_SET) == 0 &&
                fread(names, 1, strtab->sh_size, f) == strtab->sh_size) {
                names[strtab->sh_size] = '\0';
                for (int i = 0; i < eh.e_shnum && !found; i++)
                    if (sh[i].sh_name < strtab->sh_size &&
                        (strcmp(names + sh[i].sh_name, ".debug_line") == 0 ||
                         strcmp(names + sh[i].sh_name, ".zdebug_line") == 0))
                        found = true;
            }
            free(names);
        }
        free(sh);
    }
    fclose(f);
    return found;
}

static int collect(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    if (module_count >= MAX_MODULES) return 1;
    const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : exe_path;
    if (!name[0]) return 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t s = info->dlpi_addr + ph->p_vaddr;
        if (s < lo) lo = s;
        if (s + ph->p_memsz > hi) hi = s + ph->p_memsz;
    }
    if (lo >= hi) return 0;
    char resolved[PATH_MAX];
    if (!realpath(name, resolved)) return 0;
    if (strcmp(resolved, self_path) == 0) return 0; /* this library: never the user's code */
    bool main_program = strcmp(resolved, exe_path) == 0;
    bool user = ((main_program && !is_python_binary(resolved)) || (!main_program && inject_path_is_user(resolved))) &&
                has_line_info(resolved);
    char *copy = strdup(resolved);
    if (!copy) return 1;
    modules[module_count++] = (Module){lo, hi, info->dlpi_addr, copy, user};
    return 0;
}

static int sum_adds(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    *(unsigned long long *)data = info->dlpi_adds;
    return 1; /* the counter is the same in every entry */
}

/* Rebuilds the module table when libraries were loaded since. */
static void refresh_modules(void) {
    unsigned long long adds = 0;
    dl_iterate_phdr(sum_adds, &adds);
    pthread_rwlock_rdlock(&modules_lock);
    bool fresh = adds == modules_adds;
    pthread_rwlock_unlock(&modules_lock);
    if (fresh) return;
    pthread_rwlock_wrlock(&modules_lock);
    if (adds != modules_adds) {
        for (size_t i = 0; i < module_count; i++) free(modules[i].path);
        module_count = 0;
        dl_iterate_phdr(collect, NULL);
        modules_adds = adds;
        bool any_user = false;
        for (size_t i = 0; i < module_count; i++) any_user |= modules[i].user;
        __atomic_store_n(&wanted, any_user, __ATOMIC_RELEASE);
    }
    pthread_rwlock_unlock(&modules_lock);
}

void native_sites_start(void) {
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[n > 0 ? n : 0] = '\0';
    Dl_info self;
    if (dladdr((void *)native_sites_start, &self) && self.dli_fname) {
        char *real = realpath(self.dli_fname, NULL);
        if (real && strlen(real) < sizeof self_path) strcpy(self_path, real);
        free(real);
    }
    refresh_modules();
    if (exe_path[0] && !is_python_binary(exe_path) && !has_line_info(exe_path)) {
        const char *base = strrchr(exe_path, '/');
        snprintf(inject_note, sizeof inject_note,
                 "%.200s has no host line information, so its CUDA calls have no call sites: build it with -g "
                 "(nvcc's -lineinfo covers device code only)",
                 base ? base + 1 : exe_path);
    }
}

/* True when some loaded module is user code: a native program, or a Python
 * program with its own extension built in the project. */
bool native_sites_wanted(void) {
    /* Libraries loaded later (a user extension imported mid-run) are noticed
     * within 256 calls per thread; dl_iterate_phdr takes the loader's lock. */
    static __thread unsigned calls;
    if (calls++ % 256 == 0) refresh_modules();
    return __atomic_load_n(&wanted, __ATOMIC_ACQUIRE);
}

int native_site(void) {
    void *pcs[STACK_WALK];
    int n = backtrace(pcs, STACK_WALK);
    ProfFrame frames[PROFILE_MAX_FRAMES];
    size_t count = 0;
    pthread_rwlock_rdlock(&modules_lock);
    for (int i = 1; i < n && count < PROFILE_MAX_FRAMES; i++) { /* 0 is this function */
        uintptr_t pc = (uintptr_t)pcs[i];
        for (size_t m = 0; m < module_count; m++) {
            if (pc < modules[m].start || pc >= modules[m].end) continue;
            if (modules[m].user) frames[count++] = (ProfFrame){modules[m].path, pc - modules[m].bias};
            break;
        }
    }
    int site = count ? agg_native_site(inject_agg, frames, count) : -1;
    pthread_rwlock_unlock(&modules_lock);
    return site;
}
