/* Offline resolution of native call sites with elfutils' libdwfl: see
 * native_resolve.h for the rule. Layout of this file: paths (normalising,
 * the project root, generated files and toolkit headers), modules (one
 * offline Dwfl per ELF file, cached), nvcc's kernel functions, locations
 * (a frame's line and its inlined call sites), and the public functions. */
#define _GNU_SOURCE
#include "profiler/native_resolve.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <libelf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/base/growable.h"

/* libstdc++'s demangler (declared here: this is C). */
char *__cxa_demangle(const char *mangled, char *buffer, size_t *length, int *status);

/* Bounds on what one resolver keeps: a profile names each module path it
 * likes, so the cache is capped. Paths past MAX_MODULE_ENTRIES, and ELF
 * files past MAX_LOADED_MODULES, are treated as unavailable. */
#define MAX_MODULE_ENTRIES 4096u
#define MAX_LOADED_MODULES 256u
/* Frames remembered (see MemoEntry); past this, frames are still resolved,
 * just not remembered. */
#define MAX_MEMO_ENTRIES (1u << 16)

/* ---- paths ------------------------------------------------------------------ */

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static bool starts_with(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* "/a/./b//c/../d" -> "/a/b/d"; NULL unless absolute (or out of memory).
 * ".." is resolved lexically ("/.." stays "/"). */
static char *normalize_absolute(const char *path) {
    if (!path || path[0] != '/') return NULL;
    size_t n = strlen(path);
    char *out = malloc(n + 2);
    if (!out) return NULL;
    size_t len = 0;
    const char *p = path;
    while (*p) {
        while (*p == '/') p++;
        const char *start = p;
        while (*p && *p != '/') p++;
        size_t k = (size_t)(p - start);
        if (k == 0 || (k == 1 && start[0] == '.')) continue;
        if (k == 2 && start[0] == '.' && start[1] == '.') {
            while (len > 0 && out[len - 1] != '/') len--;
            if (len > 0) len--; /* the slash before the dropped component */
            continue;
        }
        out[len++] = '/';
        memcpy(out + len, start, k);
        len += k;
    }
    if (len == 0) out[len++] = '/';
    out[len] = '\0';
    return out;
}

/* The part of path below root ("/" included), or NULL. */
static const char *below_root(const char *path, const char *root) {
    if (strcmp(root, "/") == 0) return path[0] == '/' && path[1] ? path + 1 : NULL;
    size_t n = strlen(root);
    if (strncmp(path, root, n) != 0 || path[n] != '/' || path[n + 1] == '\0') return NULL;
    return path + n + 1;
}

/* What profile_path_ok accepts: relative, '/'-separated, no empty, "." or
 * ".." component, no backslash or control character, bounded length. */
static bool relative_path_ok(const char *path) {
    size_t n = strlen(path);
    if (n == 0 || n >= PROFILE_MAX_STRING || path[0] == '/') return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)path[i];
        if (c < 0x20 || c == 0x7f || c == '\\') return false;
    }
    const char *p = path;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t k = slash ? (size_t)(slash - p) : strlen(p);
        if (k == 0 || (k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.')) return false;
        if (!slash) return true;
        p = slash + 1;
    }
}

/* Files nvcc writes and compiles behind the user's back. */
static bool nvcc_generated(const char *relative) {
    static const char *const suffixes[] = {
        ".cudafe1.stub.c", ".cudafe1.cpp", ".cudafe1.c", ".cudafe1.gpu",
        ".fatbin.c", ".module_id", "_dlink.reg.c", ".ii",
    };
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++)
        if (ends_with(relative, suffixes[i])) return true;
    for (const char *p = relative; p; p = strchr(p, '/')) {
        if (*p == '/') p++;
        if (starts_with(p, "tmpxft_")) return true;
    }
    return false;
}

static bool component_is(const char *c, size_t k, const char *name) {
    return k == strlen(name) && memcmp(c, name, k) == 0;
}

/* "cuda", or "cuda-" and a version ("cuda-13.0"). */
static bool cuda_directory(const char *c, size_t k) {
    return component_is(c, k, "cuda") || (k > 5 && memcmp(c, "cuda-", 5) == 0 && c[5] >= '0' && c[5] <= '9');
}

/* A CUDA toolkit header that lies under the project (a toolkit in a
 * virtual environment, say), known by the layouts toolkits install:
 * cuda[-<version>]/include/..., .../targets/<arch>-linux/include/...,
 * nvidia/<package>/include/... (pip wheels). Judged on the part below the
 * root, so that a root inside such a directory does not count. */
static bool toolkit_header(const char *relative) {
    enum { MAX_DIRS = 64 };
    const char *dir[MAX_DIRS];
    size_t len[MAX_DIRS], n = 0;
    for (const char *p = relative; n < MAX_DIRS;) {
        const char *slash = strchr(p, '/');
        if (!slash) break; /* the file name itself */
        dir[n] = p;
        len[n++] = (size_t)(slash - p);
        p = slash + 1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!component_is(dir[i], len[i], "include")) continue;
        if (i >= 1 && cuda_directory(dir[i - 1], len[i - 1])) return true;
        if (i >= 2 && component_is(dir[i - 2], len[i - 2], "targets") &&
            memmem(dir[i - 1], len[i - 1], "-linux", 6))
            return true;
        if (i >= 2 && component_is(dir[i - 2], len[i - 2], "nvidia")) return true;
    }
    return false;
}

/* ---- the resolver and its modules ---------------------------------------------- */

/* The kernels of one compilation unit, known by their nvcc device stubs
 * (__device_stub_<mangled kernel name>). */
typedef struct {
    char *mangled;         /* the kernel's mangled name */
    char *name;            /* its unqualified name ("tk<float>"), or NULL */
} CuKernel;

typedef struct {
    Dwarf_Off cu_offset;
    CuKernel *kernels;
    size_t count;
} CuKernels;

typedef struct {
    char *path;
    uint64_t hash;
    Dwfl *dwfl;            /* NULL: missing, not ELF, or libdwfl refused it */
    Dwfl_Module *mod;
    Dwarf_Addr bias;       /* Dwfl address = ELF virtual address + bias */
    Dwarf_Addr low, high;  /* the module's Dwfl address range */
    CuKernels *cus;
    size_t cu_count, cu_cap;
} Module;

/* What one frame resolved to. */
typedef struct {
    char *file;
    uint32_t line;
    char *function;
} Answer;

/* A frame already resolved: (module, address) -> answer or none. Sites
 * share frames (nvcc's stubs, a launch line reached from many callers), so
 * each frame is looked up in DWARF once. */
typedef struct {
    uint64_t address;
    uint32_t module;       /* index into modules, + 1; 0: empty slot */
    bool found;
    Answer answer;
} MemoEntry;

struct NativeResolver {
    char *root;            /* normalised */
    char *real_root;       /* symbolic links resolved, or NULL */
    Module *modules;
    size_t count, cap, loaded;
    MemoEntry *memo;       /* open addressing; capacity a power of two */
    size_t memo_count, memo_cap;
};

static uint64_t hash_string(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* A regular file with an ELF header of an executable or a shared object. */
static bool elf_file_ok(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return false;
    unsigned char h[18];
    ssize_t got = read(fd, h, sizeof h);
    close(fd);
    if (got != (ssize_t)sizeof h || memcmp(h, "\177ELF", 4) != 0) return false;
    if ((h[4] != 1 && h[4] != 2) || (h[5] != 1 && h[5] != 2)) return false; /* class, data */
    unsigned type = h[5] == 1 ? (unsigned)(h[16] | h[17] << 8) : (unsigned)(h[16] << 8 | h[17]);
    return type == 2 || type == 3; /* ET_EXEC, ET_DYN */
}

/* Offline modules never need find_elf (the file is given); keep it from
 * looking anywhere. */
static int no_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                       char **file_name, Elf **elfp) {
    (void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)elfp;
    errno = ENOENT;
    return -1;
}

static char *default_debuginfo_path = NULL; /* NULL: libdwfl's default directories */

/* Whether the ELF file open on fd carries the build-id bits[0..len). */
static bool build_id_matches(int fd, const unsigned char *bits, int len) {
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf) return false;
    const void *id = NULL;
    ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
    bool same = n == len && id && memcmp(id, bits, (size_t)len) == 0;
    elf_end(elf);
    return same;
}

/* The .gnu_debuglink file beside the module (dir/, dir/.debug/,
 * /usr/lib/debug/dir/), accepted only when its build-id is the module's:
 * a stale debug file would give wrong lines. */
static int find_by_debuglink(Dwfl_Module *mod, const char *file_name, const char *debuglink,
                             char **debuginfo_file_name) {
    const unsigned char *bits = NULL;
    GElf_Addr vaddr = 0;
    int len = dwfl_module_build_id(mod, &bits, &vaddr);
    if (len <= 0 || !file_name || file_name[0] != '/' || !debuglink || !debuglink[0] ||
        strchr(debuglink, '/') || strcmp(debuglink, "..") == 0)
        return -1;
    int dir_len = (int)(strrchr(file_name, '/') - file_name);
    const char *formats[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s"};
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++) {
        char *candidate = NULL;
        if (asprintf(&candidate, formats[i], dir_len, file_name, debuglink) < 0) return -1;
        struct stat st;
        int fd = strcmp(candidate, file_name) != 0 && stat(candidate, &st) == 0 && S_ISREG(st.st_mode)
                     ? open(candidate, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
                     : -1;
        if (fd >= 0 && build_id_matches(fd, bits, len)) {
            *debuginfo_file_name = candidate;
            return fd;
        }
        if (fd >= 0) close(fd);
        free(candidate);
    }
    return -1;
}

/* Separate debug info: by build-id in the standard debug directories, then
 * by .gnu_debuglink beside the module. Never over the network:
 * dwfl_standard_find_debuginfo would also ask debuginfod servers. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                          const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                          char **debuginfo_file_name) {
    int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
                                          debuglink_crc, debuginfo_file_name);
    if (fd >= 0) return fd;
    return find_by_debuglink(mod, file_name, debuglink_file, debuginfo_file_name);
}

static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = no_find_elf,
    .find_debuginfo = find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &default_debuginfo_path,
};

static void module_load(Module *m) {
    if (!elf_file_ok(m->path)) return;
    Dwfl *dwfl = dwfl_begin(&offline_callbacks);
    if (!dwfl) return;
    dwfl_report_begin(dwfl);
    Dwfl_Module *mod = dwfl_report_offline(dwfl, m->path, m->path, -1);
    if (dwfl_report_end(dwfl, NULL, NULL) != 0 || !mod) {
        dwfl_end(dwfl);
        return;
    }
    GElf_Addr bias = 0;
    Dwarf_Addr low = 0, high = 0;
    if (!dwfl_module_getelf(mod, &bias) ||
        !dwfl_module_info(mod, NULL, &low, &high, NULL, NULL, NULL, NULL) || high <= low) {
        dwfl_end(dwfl);
        return;
    }
    m->dwfl = dwfl;
    m->mod = mod;
    m->bias = bias;
    m->low = low;
    m->high = high;
}

static void module_free(Module *m) {
    for (size_t i = 0; i < m->cu_count; i++) {
        for (size_t j = 0; j < m->cus[i].count; j++) {
            free(m->cus[i].kernels[j].mangled);
            free(m->cus[i].kernels[j].name);
        }
        free(m->cus[i].kernels);
    }
    free(m->cus);
    if (m->dwfl) dwfl_end(m->dwfl);
    free(m->path);
}

/* The loaded module for an absolute path, or NULL. Failures are cached. The
 * pointer is valid until the next call. */
static Module *module_for(NativeResolver *r, const char *path) {
    if (!path || path[0] != '/' || strnlen(path, PATH_MAX) >= PATH_MAX) return NULL;
    uint64_t h = hash_string(path);
    for (size_t i = 0; i < r->count; i++)
        if (r->modules[i].hash == h && strcmp(r->modules[i].path, path) == 0)
            return r->modules[i].dwfl ? &r->modules[i] : NULL;
    if (r->count >= MAX_MODULE_ENTRIES) return NULL;
    if (!array_reserve(&r->modules, r->count, &r->cap, sizeof *r->modules, 16)) return NULL;
    Module m = {.path = strdup(path), .hash = h};
    if (!m.path) return NULL;
    if (r->loaded < MAX_LOADED_MODULES) {
        module_load(&m);
        if (m.dwfl) r->loaded++;
    }
    Module *slot = &r->modules[r->count++];
    *slot = m;
    return slot->dwfl ? slot : NULL;
}

/* ---- nvcc's kernel functions ------------------------------------------------------ */

static const char *attr_string(Dwarf_Die *die, unsigned name) {
    Dwarf_Attribute mem;
    return dwarf_formstring(dwarf_attr_integrate(die, name, &mem));
}

static const char *die_name(Dwarf_Die *die) { return attr_string(die, DW_AT_name); }

static const char *die_linkage_name(Dwarf_Die *die) {
    const char *s = attr_string(die, DW_AT_linkage_name);
    return s ? s : attr_string(die, DW_AT_MIPS_linkage_name);
}

#define DEVICE_STUB "__device_stub_"

static bool stub_name(const char *name) {
    return name && (starts_with(name, DEVICE_STUB) || starts_with(name, "__wrapper__device_stub_"));
}

/* "void ns::tk<float>(float*, int)" -> "tk<float>": the function name of
 * a demangled name without its scope, return type and parameters. NULL
 * when out of memory or not of that shape. */
static char *unqualified_name(const char *demangled) {
    static const char anonymous[] = "(anonymous namespace)";
    const char *paren = NULL;
    int depth = 0;
    for (const char *p = demangled; *p && !paren; p++) {
        if (*p == '<') depth++;
        else if (*p == '>') depth--;
        else if (*p == '(' && depth == 0) {
            if (starts_with(p, anonymous)) p += sizeof anonymous - 2;
            else paren = p;
        }
    }
    if (!paren || paren == demangled) return NULL;
    const char *start = paren;
    depth = 0;
    while (start > demangled) {
        char c = start[-1];
        if (c == '>') depth++;
        else if (c == '<') depth--;
        else if (depth == 0 && (c == ' ' || c == ':')) break;
        start--;
    }
    return start < paren ? strndup(start, (size_t)(paren - start)) : NULL;
}

/* The kernels of the compilation unit cu (from its top-level device
 * stubs), collected once per unit. NULL when out of memory. */
static const CuKernels *cu_kernels(Module *m, Dwarf_Die *cu) {
    Dwarf_Off off = dwarf_dieoffset(cu);
    for (size_t i = 0; i < m->cu_count; i++)
        if (m->cus[i].cu_offset == off) return &m->cus[i];
    if (!array_reserve(&m->cus, m->cu_count, &m->cu_cap, sizeof *m->cus, 8)) return NULL;
    CuKernels s = {.cu_offset = off};
    size_t cap = 0;
    Dwarf_Die child;
    if (dwarf_child(cu, &child) == 0) {
        do {
            if (dwarf_tag(&child) != DW_TAG_subprogram) continue;
            const char *name = die_name(&child);
            if (!name || !starts_with(name, DEVICE_STUB) || !name[strlen(DEVICE_STUB)]) continue;
            if (!array_reserve(&s.kernels, s.count, &cap, sizeof *s.kernels, 4)) break;
            CuKernel k = {.mangled = strdup(name + strlen(DEVICE_STUB))};
            if (!k.mangled) break;
            char *demangled = native_demangle(k.mangled);
            k.name = demangled ? unqualified_name(demangled) : NULL;
            free(demangled);
            s.kernels[s.count++] = k;
        } while (dwarf_siblingof(&child, &child) == 0);
    }
    m->cus[m->cu_count] = s;
    return &m->cus[m->cu_count++];
}

/* Equal names, or equal up to their template arguments when both have
 * some (the demangler and the compiler may spell arguments differently). */
static bool same_function_name(const char *a, const char *b) {
    if (strcmp(a, b) == 0) return true;
    const char *ta = strchr(a, '<'), *tb = strchr(b, '<');
    return ta && tb && ta - a == tb - b && strncmp(a, b, (size_t)(ta - a)) == 0;
}

/* The host-side function nvcc writes for a __global__ kernel: its body only
 * calls __device_stub_<mangled kernel name>, and its line info points at
 * the kernel's declaration in the .cu file (#line directives). Known by
 * its linkage name, or, where the compiler gave none (extern "C" kernels,
 * template instances), by its name. */
static bool kernel_host_function(Module *m, Dwarf_Die *cu, const char *name, const char *linkage) {
    if (!name && !linkage) return false;
    const CuKernels *s = cu_kernels(m, cu);
    if (!s) return false;
    for (size_t i = 0; i < s->count; i++) {
        const CuKernel *k = &s->kernels[i];
        if (linkage ? strcmp(k->mangled, linkage) == 0 : k->name && same_function_name(k->name, name))
            return true;
    }
    return false;
}

/* ---- locations -------------------------------------------------------------------- */

/* The absolute, normalised form of a DWARF file name of unit cu. */
static char *dwarf_file_path(Dwarf_Die *cu, const char *name) {
    if (!name || !name[0] || name[0] == '<') return NULL; /* "<built-in>" and the like */
    if (name[0] == '/') return normalize_absolute(name);
    const char *dir = attr_string(cu, DW_AT_comp_dir);
    if (!dir || dir[0] != '/') return NULL;
    size_t n = strlen(dir) + strlen(name) + 2;
    char *joined = malloc(n);
    if (!joined) return NULL;
    snprintf(joined, n, "%s/%s", dir, name);
    char *out = normalize_absolute(joined);
    free(joined);
    return out;
}

/* path relative to the project root, or NULL when it lies outside. */
static char *project_relative(const NativeResolver *r, const char *path) {
    const char *rest = below_root(path, r->root);
    if (!rest && r->real_root) rest = below_root(path, r->real_root);
    char *real = NULL;
    if (!rest && (real = realpath(path, NULL)) != NULL)
        rest = below_root(real, r->real_root ? r->real_root : r->root);
    char *out = rest && relative_path_ok(rest) ? strdup(rest) : NULL;
    free(real);
    return out;
}

/* Whether file:line inside function fn (NULL: unknown; sym: the symbol
 * name when fn is unknown) qualifies; fills *a when it does. */
static bool try_location(NativeResolver *r, Module *m, Dwarf_Die *cu, const char *file, Dwarf_Word line,
                         Dwarf_Die *fn, const char *sym, Answer *a) {
    if (!file || line == 0 || line > UINT32_MAX) return false;
    const char *name = fn ? die_name(fn) : sym;
    const char *linkage = fn ? die_linkage_name(fn) : NULL;
    if (stub_name(name) || stub_name(linkage)) return false;
    char *path = dwarf_file_path(cu, file);
    char *relative = path ? project_relative(r, path) : NULL;
    free(path);
    if (!relative || nvcc_generated(relative) || toolkit_header(relative) ||
        (fn && kernel_host_function(m, cu, name, linkage))) {
        free(relative);
        return false;
    }
    const char *shown = linkage ? linkage : name;
    char *function = shown ? native_demangle(shown) : NULL;
    if (shown && !function) {
        free(relative);
        return false;
    }
    *a = (Answer){relative, (uint32_t)line, function};
    return true;
}

/* The source file of index idx in unit cu's line table. */
static const char *file_by_index(Dwarf_Die *cu, Dwarf_Word idx) {
    Dwarf_Files *files = NULL;
    size_t count = 0;
    if (dwarf_getsrcfiles(cu, &files, &count) != 0 || idx >= count) return NULL;
    return dwarf_filesrc(files, idx, NULL, NULL);
}

static bool has_inlined(Dwarf_Die *scopes, int n) {
    for (int i = 0; i < n; i++)
        if (dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine) return true;
    return false;
}

/* The physical scopes around pc, innermost first, up to the unit: through
 * every inlined instance to the out-of-line function that holds them.
 * (dwarf_getscopes continues from an inlined instance into its abstract
 * definition's scopes; dwarf_getscopes_die follows the instance's parents.) */
static int physical_scopes(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die **out) {
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes(cu, pc, &scopes);
    if (n <= 0 || !has_inlined(scopes, n)) {
        *out = n > 0 ? scopes : NULL;
        if (n <= 0) free(scopes);
        return n > 0 ? n : 0;
    }
    Dwarf_Die inner = scopes[0];
    free(scopes);
    Dwarf_Die *chain = NULL;
    int k = dwarf_getscopes_die(&inner, &chain);
    if (k <= 0) {
        free(chain);
        chain = NULL;
        k = 0;
    }
    *out = chain;
    return k;
}

/* Walks the location of one frame (Dwfl address addr) and its inlined call
 * sites outward; true with *a filled at the first that qualifies. */
static bool resolve_address(NativeResolver *r, Module *m, Dwarf_Addr addr, Answer *a) {
    Dwarf_Addr cu_bias = 0;
    Dwarf_Die *cudie = dwfl_module_addrdie(m->mod, addr, &cu_bias);
    if (!cudie || addr < cu_bias) return false;
    Dwarf_Die cu = *cudie;
    Dwarf_Addr pc = addr - cu_bias;
    /* no row, or line 0 (code of no line): the location is unknown, but
     * inlined call sites outward may still be known */
    Dwarf_Line *row = dwarf_getsrc_die(&cu, pc);
    int lineno = 0;
    const char *file = NULL;
    Dwarf_Word line = 0;
    if (row && dwarf_lineno(row, &lineno) == 0 && lineno > 0) {
        file = dwarf_linesrc(row, NULL, NULL);
        line = (Dwarf_Word)lineno;
    }

    Dwarf_Die *scopes = NULL;
    int n = physical_scopes(&cu, pc, &scopes);
    bool found = false, function_seen = false;
    for (int i = 0; i < n && !found; i++) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine) continue;
        function_seen = true;
        found = try_location(r, m, &cu, file, line, &scopes[i], NULL, a);
        if (found || tag == DW_TAG_subprogram) break;
        /* inlined: the call site lies in the next function outward */
        Dwarf_Attribute mem;
        Dwarf_Word call_file = 0, call_line = 0;
        if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &mem), &call_file) != 0 ||
            dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &mem), &call_line) != 0) {
            file = NULL;
            line = 0;
        } else {
            file = file_by_index(&cu, call_file);
            line = call_line;
        }
    }
    free(scopes);
    if (!found && !function_seen)
        found = try_location(r, m, &cu, file, line, NULL, dwfl_module_addrname(m->mod, addr), a);
    return found;
}

/* ---- the frame memo ---------------------------------------------------------------- */

static size_t memo_slot(const MemoEntry *table, size_t cap, uint32_t module, uint64_t address) {
    uint64_t h = (address ^ ((uint64_t)module << 48)) * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h >> 17) & (cap - 1);
    while (table[i].module && !(table[i].module == module && table[i].address == address))
        i = (i + 1) & (cap - 1);
    return i;
}

static const MemoEntry *memo_find(const NativeResolver *r, uint32_t module, uint64_t address) {
    if (!r->memo) return NULL;
    const MemoEntry *e = &r->memo[memo_slot(r->memo, r->memo_cap, module, address)];
    return e->module ? e : NULL;
}

/* A heap copy of an answer; false when out of memory. */
static bool answer_copy(const Answer *from, Answer *to) {
    to->file = strdup(from->file);
    to->line = from->line;
    to->function = from->function ? strdup(from->function) : NULL;
    if (to->file && (!from->function || to->function)) return true;
    free(to->file);
    free(to->function);
    return false;
}

/* Remembers a frame, with a copy of *a when found. Quietly does nothing
 * when full or out of memory. */
static void memo_add(NativeResolver *r, uint32_t module, uint64_t address, bool found, const Answer *a) {
    if (r->memo_count >= MAX_MEMO_ENTRIES) return;
    if (2 * (r->memo_count + 1) > r->memo_cap) {
        size_t cap = r->memo_cap ? 2 * r->memo_cap : 256;
        MemoEntry *table = calloc(cap, sizeof *table);
        if (!table) return;
        for (size_t i = 0; i < r->memo_cap; i++)
            if (r->memo[i].module)
                table[memo_slot(table, cap, r->memo[i].module, r->memo[i].address)] = r->memo[i];
        free(r->memo);
        r->memo = table;
        r->memo_cap = cap;
    }
    MemoEntry e = {.address = address, .module = module, .found = found};
    if (found && !answer_copy(a, &e.answer)) return;
    r->memo[memo_slot(r->memo, r->memo_cap, module, address)] = e;
    r->memo_count++;
}

/* ---- public ------------------------------------------------------------------------- */

NativeResolver *native_resolver_new(const char *project_root) {
    char *root = normalize_absolute(project_root);
    if (!root) return NULL;
    NativeResolver *r = calloc(1, sizeof *r);
    if (!r) {
        free(root);
        return NULL;
    }
    r->root = root;
    char *real = realpath(root, NULL);
    if (real && strcmp(real, root) != 0) r->real_root = real;
    else free(real);
    return r;
}

void native_resolver_free(NativeResolver *r) {
    if (!r) return;
    for (size_t i = 0; i < r->count; i++) module_free(&r->modules[i]);
    for (size_t i = 0; i < r->memo_cap; i++) {
        free(r->memo[i].answer.file);
        free(r->memo[i].answer.function);
    }
    free(r->memo);
    free(r->modules);
    free(r->root);
    free(r->real_root);
    free(r);
}

bool native_resolve(NativeResolver *r, const ProfFrame *frames, size_t count,
                    char **file, uint32_t *line, char **function) {
    if (!r || !frames || !file || !line || !function) return false;
    for (size_t i = 0; i < count; i++) {
        Module *m = module_for(r, frames[i].module);
        uint64_t address = frames[i].address;
        /* the call instruction ends at the return address; the sum wraps
         * like the ELF-to-Dwfl mapping itself, and the range check below
         * throws out whatever lies outside the module */
        if (!m || address == 0) continue;
        Dwarf_Addr addr = address - 1 + m->bias;
        if (addr < m->low || addr >= m->high) continue;
        uint32_t module = (uint32_t)(m - r->modules) + 1;
        const MemoEntry *known = memo_find(r, module, address);
        Answer a;
        bool found;
        if (known) {
            if (!known->found) continue;
            if (!answer_copy(&known->answer, &a)) return false;
            found = true;
        } else {
            found = resolve_address(r, m, addr, &a);
            memo_add(r, module, address, found, &a);
        }
        if (found) {
            *file = a.file;
            *line = a.line;
            *function = a.function;
            return true;
        }
    }
    return false;
}

char *native_demangle(const char *name) {
    if (!name) return strdup("");
    if (starts_with(name, "_Z") && strnlen(name, PROFILE_MAX_STRING) < PROFILE_MAX_STRING) {
        int status = -1;
        char *demangled = __cxa_demangle(name, NULL, NULL, &status);
        if (demangled && status == 0) return demangled;
        free(demangled);
    }
    return strdup(name);
}
