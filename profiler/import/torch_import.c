#include "profiler/import/torch_import.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "analysis/base/growable.h"
#include "profiler/aggregate.h"
#include "profiler/import/torch_api_names.h"
#include "profiler/import/torch_stacks.h"
#include "profiler/import/torch_user_code.h"

#include "advise_version.h" /* ADVISE_VERSION: project(VERSION) in CMakeLists.txt */
#include "analysis/base/text_format.h"

/* Largest integer a double holds exactly: bigger "integers" are refused */
#define MAX_EXACT 9007199254740992.0
/* Timestamps beyond this many µs (about 127 years of epoch time) are refused,
 * so that start + duration in ns never overflows */
#define MAX_MICROSECONDS 4.0e15

typedef enum { FIELD_ABSENT, FIELD_OK, FIELD_BAD } Field;

/* d is a whole number (|d| < MAX_EXACT assumed); no libm needed */
static bool whole(double d) {
    return d == (double)(int64_t)d;
}

typedef enum { CAT_OTHER, CAT_KERNEL, CAT_MEMCPY, CAT_MEMSET, CAT_RUNTIME, CAT_DRIVER, CAT_PYTHON, CAT_OVERHEAD } Category;

typedef struct {
    Category cat;                /* KERNEL, MEMCPY or MEMSET */
    const char *name;            /* owned by the JSON document */
    uint32_t device;
    uint32_t grid[3], block[3];
    uint32_t registers, shared;
    ProfCopyKind copy;
    ProfMemKind src, dst;
    uint64_t bytes;
    uint64_t start_ns, end_ns;
    bool has_correlation;
    uint64_t correlation;
} GpuEvent;

typedef struct {
    const char *name;
    bool driver;
    int64_t pid, tid;
    uint64_t start_ns, dur_ns;
    bool has_correlation;
    uint64_t correlation;
} HostCall;

typedef struct {
    GpuEvent *gpu;      size_t gpu_count, gpu_cap;
    HostCall *calls;    size_t call_count, call_cap;
    TorchSpan *spans;   size_t span_count, span_cap;
    uint64_t first_ns, last_ns;  /* the span of everything imported */
    bool any_time;
    int64_t host_pid;
    bool has_host_pid;
} Collected;

/* ---- reading fields that may be missing or of the wrong type */

static Field read_uint(const json_t *obj, const char *key, uint64_t max, uint64_t *out) {
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) return FIELD_ABSENT;
    if (!json_is_number(v)) return FIELD_BAD;
    double d = json_number_value(v);
    if (!isfinite(d) || d < 0 || d >= MAX_EXACT || d > (double)max || !whole(d)) return FIELD_BAD;
    *out = (uint64_t)d;
    return FIELD_OK;
}

static Field read_int(const json_t *obj, const char *key, int64_t *out) {
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) return FIELD_ABSENT;
    if (!json_is_number(v)) return FIELD_BAD;
    double d = json_number_value(v);
    if (!isfinite(d) || d >= MAX_EXACT || d <= -MAX_EXACT || !whole(d)) return FIELD_BAD;
    *out = (int64_t)d;
    return FIELD_OK;
}

static Field read_u32(const json_t *obj, const char *key, uint32_t *out) {
    uint64_t v;
    Field f = read_uint(obj, key, UINT32_MAX, &v);
    if (f == FIELD_OK) *out = (uint32_t)v;
    return f;
}

/* µs as a float (ts, dur) -> ns */
static Field read_time(const json_t *obj, const char *key, uint64_t *ns) {
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return FIELD_ABSENT;
    if (!json_is_number(v)) return FIELD_BAD;
    double d = json_number_value(v);
    if (!isfinite(d) || d < 0 || d > MAX_MICROSECONDS) return FIELD_BAD;
    *ns = (uint64_t)(d * 1000.0 + 0.5);
    return FIELD_OK;
}

static Field read_dim3(const json_t *obj, const char *key, uint32_t out[3]) {
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) return FIELD_ABSENT;
    if (!json_is_array(v) || json_array_size(v) != 3) return FIELD_BAD;
    for (size_t i = 0; i < 3; i++) {
        json_t *x = json_array_get(v, i);
        double d = json_is_number(x) ? json_number_value(x) : -1;
        if (!isfinite(d) || d < 0 || d > UINT32_MAX || !whole(d)) return FIELD_BAD;
        out[i] = (uint32_t)d;
    }
    return FIELD_OK;
}

static const char *string_field(const json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static Category category_of(const char *cat) {
    static const struct { const char *name; Category cat; } names[] = {
        {"kernel", CAT_KERNEL},         {"gpu_memcpy", CAT_MEMCPY},       {"memcpy", CAT_MEMCPY},
        {"gpu_memset", CAT_MEMSET},     {"memset", CAT_MEMSET},           {"cuda_runtime", CAT_RUNTIME},
        {"runtime", CAT_RUNTIME},       {"cuda_driver", CAT_DRIVER},      {"python_function", CAT_PYTHON},
        {"overhead", CAT_OVERHEAD},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcasecmp(cat, names[i].name) == 0) return names[i].cat;
    return CAT_OTHER;
}

/* ---- memory kinds from kineto's names: "Memcpy DtoH (Device -> Pageable)", "Memset (Device)" */

static ProfMemKind mem_kind(const char *s, size_t n) {
    static const struct { const char *name; ProfMemKind kind; } kinds[] = {
        {"Pageable", PROF_MEM_PAGEABLE}, {"Pinned", PROF_MEM_PINNED},         {"Device", PROF_MEM_DEVICE},
        {"Managed", PROF_MEM_MANAGED},   {"Device Static", PROF_MEM_DEVICE}, {"Managed Static", PROF_MEM_MANAGED},
    };
    while (n && *s == ' ') s++, n--;
    while (n && s[n - 1] == ' ') n--;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (strlen(kinds[i].name) == n && strncasecmp(s, kinds[i].name, n) == 0) return kinds[i].kind;
    return PROF_MEM_UNKNOWN;
}

/* The "(A -> B)" or "(A)" part of name */
static void memory_kinds(const char *name, ProfMemKind *src, ProfMemKind *dst) {
    *src = *dst = PROF_MEM_UNKNOWN;
    const char *open = strrchr(name, '(');
    const char *close = open ? strchr(open, ')') : NULL;
    if (!close) return;
    const char *arrow = strstr(open, "->");
    if (arrow && arrow < close) {
        *src = mem_kind(open + 1, (size_t)(arrow - open - 1));
        *dst = mem_kind(arrow + 2, (size_t)(close - arrow - 2));
    } else {
        *dst = mem_kind(open + 1, (size_t)(close - open - 1));
    }
}

static ProfCopyKind copy_kind(const char *name) {
    static const struct { const char *word; ProfCopyKind kind; } words[] = {
        {"HtoD", PROF_COPY_HTOD}, {"DtoH", PROF_COPY_DTOH}, {"DtoD", PROF_COPY_DTOD},
        {"HtoH", PROF_COPY_HTOH}, {"PtoP", PROF_COPY_PTOP},
    };
    if (strncasecmp(name, "Memcpy ", 7) != 0) return PROF_COPY_UNKNOWN;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strncmp(name + 7, words[i].word, 4) == 0 && (name[11] == ' ' || name[11] == '\0')) return words[i].kind;
    return PROF_COPY_UNKNOWN;
}

/* ---- one event of each kind; false: skip it (counted) */

static void note_time(Collected *c, uint64_t start, uint64_t end) {
    if (!c->any_time || start < c->first_ns) c->first_ns = start;
    if (!c->any_time || end > c->last_ns) c->last_ns = end;
    c->any_time = true;
}

/* name, ts, dur and an args object (or none): common to every used event */
static bool read_common(const json_t *e, const char **name, uint64_t *start, uint64_t *dur, const json_t **args) {
    *name = string_field(e, "name");
    json_t *a = json_object_get(e, "args");
    if (a && !json_is_object(a) && !json_is_null(a)) return false;
    *args = json_is_object(a) ? a : NULL;
    return *name && read_time(e, "ts", start) == FIELD_OK && read_time(e, "dur", dur) == FIELD_OK;
}

static bool read_gpu(const json_t *e, Category cat, GpuEvent *g) {
    const json_t *args;
    uint64_t dur;
    memset(g, 0, sizeof *g);
    g->cat = cat;
    if (!read_common(e, &g->name, &g->start_ns, &dur, &args)) return false;
    g->end_ns = g->start_ns + dur;
    Field f = read_u32(args, "device", &g->device);
    if (f == FIELD_BAD) return false;
    if (f == FIELD_ABSENT) {
        int64_t pid; /* kineto puts GPU events under pid = device */
        if (read_int(e, "pid", &pid) == FIELD_OK && pid >= 0 && pid <= UINT32_MAX) g->device = (uint32_t)pid;
    }
    f = read_uint(args, "correlation", UINT64_MAX, &g->correlation);
    if (f == FIELD_BAD) return false;
    g->has_correlation = f == FIELD_OK;
    if (cat == CAT_KERNEL) {
        return read_dim3(args, "grid", g->grid) != FIELD_BAD && read_dim3(args, "block", g->block) != FIELD_BAD &&
               read_u32(args, "registers per thread", &g->registers) != FIELD_BAD &&
               read_u32(args, "shared memory", &g->shared) != FIELD_BAD;
    }
    if (read_uint(args, "bytes", UINT64_MAX, &g->bytes) == FIELD_BAD) return false;
    memory_kinds(g->name, &g->src, &g->dst);
    if (cat == CAT_MEMCPY) g->copy = copy_kind(g->name);
    else g->src = PROF_MEM_UNKNOWN;
    return true;
}

static bool read_host(const json_t *e, bool driver, HostCall *h) {
    const json_t *args;
    memset(h, 0, sizeof *h);
    h->driver = driver;
    if (!read_common(e, &h->name, &h->start_ns, &h->dur_ns, &args)) return false;
    if (read_int(e, "pid", &h->pid) != FIELD_OK || read_int(e, "tid", &h->tid) != FIELD_OK) return false;
    Field f = read_uint(args, "correlation", UINT64_MAX, &h->correlation);
    h->has_correlation = f == FIELD_OK;
    return f != FIELD_BAD;
}

static bool read_python(const json_t *e, TorchSpan *s, const char **name) {
    const json_t *args;
    uint64_t dur;
    if (!read_common(e, name, &s->start_ns, &dur, &args)) return false;
    s->end_ns = s->start_ns + dur;
    return read_int(e, "pid", &s->pid) == FIELD_OK && read_int(e, "tid", &s->tid) == FIELD_OK;
}

/* ---- the pass over traceEvents */

typedef struct {
    Aggregator *agg;
    TorchUserCode *uc;
    Collected c;
    TorchImportReport r;
} Import;

/* false only when out of memory */
static bool take_event(Import *im, const json_t *e) {
    if (!json_is_object(e)) {
        im->r.skipped++;
        return true;
    }
    const char *cat_name = string_field(e, "cat");
    Category cat = cat_name ? category_of(cat_name) : CAT_OTHER;
    if (cat == CAT_OTHER) return true;
    json_t *ph = json_object_get(e, "ph");
    if (ph && !json_is_string(ph)) {
        im->r.skipped++;
        return true;
    }
    if (ph && strcmp(json_string_value(ph), "X") != 0) return true; /* flows, instants, metadata */
    Collected *c = &im->c;
    switch (cat) {
    case CAT_KERNEL:
    case CAT_MEMCPY:
    case CAT_MEMSET: {
        if (!array_reserve(&c->gpu, c->gpu_count, &c->gpu_cap, sizeof *c->gpu, 1024)) return false;
        GpuEvent *g = &c->gpu[c->gpu_count];
        if (!read_gpu(e, cat, g)) break;
        c->gpu_count++;
        note_time(c, g->start_ns, g->end_ns);
        return true;
    }
    case CAT_RUNTIME:
    case CAT_DRIVER: {
        if (!array_reserve(&c->calls, c->call_count, &c->call_cap, sizeof *c->calls, 1024)) return false;
        HostCall *h = &c->calls[c->call_count];
        if (!read_host(e, cat == CAT_DRIVER, h)) break;
        c->call_count++;
        note_time(c, h->start_ns, h->start_ns + h->dur_ns);
        if (!c->has_host_pid) c->host_pid = h->pid, c->has_host_pid = true;
        agg_api(im->agg, h->name, h->dur_ns);
        im->r.api_calls++;
        return true;
    }
    case CAT_PYTHON: {
        if (!array_reserve(&c->spans, c->span_count, &c->span_cap, sizeof *c->spans, 1024)) return false;
        TorchSpan *s = &c->spans[c->span_count];
        const char *name;
        if (!read_python(e, s, &name)) break;
        s->frame = torch_user_code_lookup(im->uc, name);
        if (s->frame == -2) return false;
        c->span_count++;
        im->r.python_events++;
        return true;
    }
    case CAT_OVERHEAD: {
        const char *name = string_field(e, "name");
        uint64_t start, dur;
        if (!name || read_time(e, "ts", &start) != FIELD_OK || read_time(e, "dur", &dur) != FIELD_OK) break;
        agg_overhead(im->agg, name, dur);
        return true;
    }
    case CAT_OTHER:
        return true;
    }
    im->r.skipped++;
    return true;
}

/* ---- devices: the top-level deviceProperties array */

static void take_devices(Import *im, const json_t *props) {
    size_t i;
    json_t *d;
    json_array_foreach(props, i, d) {
        if (!json_is_object(d)) continue;
        ProfDevice dev = {0};
        uint64_t id = i, mem = 0;
        uint32_t threads_per_sm = 0, warp = 0, optin = 0, per_block = 0; /* optin: read to check its type only */
        const char *name = string_field(d, "name");
        bool ok = read_uint(d, "id", UINT32_MAX, &id) != FIELD_BAD &&
                  read_uint(d, "totalGlobalMem", UINT64_MAX, &mem) != FIELD_BAD &&
                  read_u32(d, "computeMajor", &dev.cc_major) != FIELD_BAD &&
                  read_u32(d, "computeMinor", &dev.cc_minor) != FIELD_BAD &&
                  read_u32(d, "numSms", &dev.sm_count) != FIELD_BAD &&
                  read_u32(d, "maxThreadsPerBlock", &dev.max_threads_per_block) != FIELD_BAD &&
                  read_u32(d, "maxThreadsPerMultiprocessor", &threads_per_sm) != FIELD_BAD &&
                  read_u32(d, "warpSize", &warp) != FIELD_BAD &&
                  read_u32(d, "regsPerBlock", &dev.max_registers_per_block) != FIELD_BAD &&
                  read_u32(d, "regsPerMultiprocessor", &dev.max_registers_per_sm) != FIELD_BAD &&
                  read_u32(d, "sharedMemPerBlock", &per_block) != FIELD_BAD &&
                  read_u32(d, "sharedMemPerBlockOptin", &optin) != FIELD_BAD &&
                  read_u32(d, "sharedMemPerMultiprocessor", &dev.max_shared_per_sm) != FIELD_BAD;
        if (!ok || (json_object_get(d, "name") && !name)) continue;
        dev.id = (uint32_t)id;
        dev.name = (char *)(name ? name : "");
        dev.memory_bytes = mem;
        dev.max_warps_per_sm = threads_per_sm / (warp ? warp : 32);
        dev.max_shared_per_block = per_block; /* the default limit, as CUPTI reports it (not the opt-in one) */
        agg_device(im->agg, &dev);
    }
}

/* ---- attribution: GPU events, syncs and allocations to user sites */

typedef struct {
    uint64_t correlation;
    size_t call;
} CorrelationEntry;

static int by_correlation(const void *a, const void *b) {
    const CorrelationEntry *x = a, *y = b;
    if (x->correlation != y->correlation) return x->correlation < y->correlation ? -1 : 1;
    return x->call < y->call ? -1 : x->call > y->call; /* ties: the first call, runtime before driver below */
}

/* The call whose correlation is c (a runtime call rather than a driver one), or SIZE_MAX */
static size_t call_with_correlation(const CorrelationEntry *index, size_t n, const HostCall *calls, uint64_t c) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (index[mid].correlation < c) lo = mid + 1;
        else hi = mid;
    }
    size_t found = SIZE_MAX;
    for (size_t i = lo; i < n && index[i].correlation == c; i++) {
        if (!calls[index[i].call].driver) return index[i].call;
        if (found == SIZE_MAX) found = index[i].call;
    }
    return found;
}

typedef struct {
    int64_t pid, tid;
    uint64_t start_ns, end_ns;
} Interval;

static int by_interval(const void *a, const void *b) {
    const Interval *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* A driver call made inside a runtime call of the same thread (runtime calls
 * do not nest, so only the latest one that started before can hold it) */
static bool inside_runtime_call(const Interval *runtime, size_t n, const HostCall *h) {
    size_t lo = 0, hi = n;
    Interval key = {h->pid, h->tid, h->start_ns, 0};
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (by_interval(&runtime[mid], &key) <= 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return false;
    const Interval *r = &runtime[lo - 1];
    return r->pid == h->pid && r->tid == h->tid && h->start_ns + h->dur_ns <= r->end_ns;
}

typedef struct {
    Import *im;
    int *site_of_frame;   /* -2: not interned yet */
    size_t frame_limit;
} Sites;

static int site_for_frame(Sites *s, int frame) {
    if (frame < 0 || (size_t)frame >= s->frame_limit) return -1;
    if (s->site_of_frame[frame] == -2) {
        const TorchFrame *f = torch_user_code_frame(s->im->uc, frame);
        s->site_of_frame[frame] = agg_function_site(s->im->agg, f->path, f->line, f->function);
    }
    return s->site_of_frame[frame];
}

static bool attribute(Import *im) {
    Collected *c = &im->c;
    size_t frames = torch_user_code_frame_count(im->uc);
    TorchMoment *moments = calloc(c->call_count ? c->call_count : 1, sizeof *moments);
    CorrelationEntry *index = malloc((c->call_count ? c->call_count : 1) * sizeof *index);
    Interval *runtime = malloc((c->call_count ? c->call_count : 1) * sizeof *runtime);
    Sites sites = {im, malloc((frames ? frames : 1) * sizeof(int)), frames};
    bool ok = moments && index && runtime && sites.site_of_frame;
    if (ok) {
        for (size_t i = 0; i < frames; i++) sites.site_of_frame[i] = -2;
        size_t n_index = 0, n_runtime = 0;
        for (size_t i = 0; i < c->call_count; i++) {
            const HostCall *h = &c->calls[i];
            moments[i] = (TorchMoment){h->pid, h->tid, h->start_ns, -1};
            if (h->has_correlation) index[n_index++] = (CorrelationEntry){h->correlation, i};
            if (!h->driver) runtime[n_runtime++] = (Interval){h->pid, h->tid, h->start_ns, h->start_ns + h->dur_ns};
        }
        ok = torch_stacks_resolve(c->spans, c->span_count, moments, c->call_count);
        qsort(index, n_index, sizeof *index, by_correlation);
        qsort(runtime, n_runtime, sizeof *runtime, by_interval);

        for (size_t i = 0; ok && i < c->gpu_count; i++) {
            const GpuEvent *g = &c->gpu[i];
            size_t call = g->has_correlation ? call_with_correlation(index, n_index, c->calls, g->correlation) : SIZE_MAX;
            int site = call == SIZE_MAX ? -1 : site_for_frame(&sites, moments[call].frame);
            if (site >= 0) im->r.attributed++;
            if (g->cat == CAT_KERNEL) {
                AggKernel k = {.device = g->device, .name = g->name,
                               .grid = {g->grid[0], g->grid[1], g->grid[2]},
                               .block = {g->block[0], g->block[1], g->block[2]}, .registers = g->registers,
                               .static_shared = g->shared, .start_ns = g->start_ns, .end_ns = g->end_ns,
                               .site = site, .weight = 1};
                agg_kernel(im->agg, &k);
                im->r.kernels++;
            } else if (g->cat == CAT_MEMCPY) {
                AggCopy k = {.device = g->device, .copy = g->copy, .src = g->src, .dst = g->dst, .bytes = g->bytes,
                             .start_ns = g->start_ns, .end_ns = g->end_ns, .site = site, .weight = 1};
                agg_memcpy(im->agg, &k);
                im->r.copies++;
            } else {
                AggMemset k = {.device = g->device, .dst = g->dst, .bytes = g->bytes, .start_ns = g->start_ns,
                               .end_ns = g->end_ns, .site = site, .weight = 1};
                agg_memset(im->agg, &k);
                im->r.memsets++;
            }
        }
        for (size_t i = 0; ok && i < c->call_count; i++) {
            const HostCall *h = &c->calls[i];
            ProfSyncKind sync = torch_api_sync_kind(h->name);
            ProfMemKind alloc = torch_api_alloc_kind(h->name);
            if (sync == PROF_SYNC_UNKNOWN && alloc == PROF_MEM_UNKNOWN) continue;
            if (h->driver && inside_runtime_call(runtime, n_runtime, h)) continue;
            int site = site_for_frame(&sites, moments[i].frame);
            if (site >= 0) im->r.attributed++;
            if (sync != PROF_SYNC_UNKNOWN) {
                agg_sync(im->agg, sync, h->dur_ns, site);
                im->r.syncs++;
            } else {
                agg_alloc(im->agg, alloc, 0, h->dur_ns, site);
                im->r.allocations++;
            }
        }
    }
    free(moments);
    free(index);
    free(runtime);
    free(sites.site_of_frame);
    return ok;
}

/* ---- the profile's own fields */

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static bool describe(Profile *p, const char *trace_path) {
    const char *file = base_name(trace_path);
    size_t stem = strcspn(file, ".");
    char *name = stem ? strndup(file, stem) : strdup("trace");
    bool ok = name && profile_set_labels(p, name, "torch-profiler", "advise " ADVISE_VERSION);
    free(name);
    if (!ok) return false;
    char **command = calloc(2, sizeof *command);
    if (!command) return false;
    command[0] = strdup("torch.profiler");
    command[1] = strdup(file);
    if (!command[0] || !command[1]) {
        free(command[0]);
        free(command[1]);
        free(command);
        return false;
    }
    for (size_t i = 0; i < p->command_count; i++) free(p->command[i]);
    free(p->command);
    p->command = command;
    p->command_count = 2;
    return true;
}

static void read_distributed(const json_t *root, ProfProcess *proc) {
    const json_t *info = json_object_get(root, "distributedInfo");
    uint64_t rank, world;
    if (read_uint(info, "rank", INT32_MAX, &rank) == FIELD_OK && read_uint(info, "world_size", INT32_MAX, &world) == FIELD_OK &&
        rank < world) {
        proc->rank = (int)rank;
        proc->world_size = (int)world;
    }
}

/* ---- entry points */

Profile *torch_import_report(const char *text, size_t length, const char *project_root,
                             const char *trace_path, TorchImportReport *report, char **error) {
    *error = NULL;
    if (length > TORCH_IMPORT_MAX_BYTES) {
        *error = format_string("%s: %zu bytes is more than advise import reads (2 GiB)", trace_path, length);
        return NULL;
    }
    if (length >= 2 && (unsigned char)text[0] == 0x1f && (unsigned char)text[1] == 0x8b) {
        *error = format_string("%s is gzip-compressed; decompress it first (gunzip -k)", trace_path);
        return NULL;
    }
    json_error_t jerr;
    /* every number as a double: an integer too big for int64 is no reason to refuse a trace */
    json_t *root = json_loadb(text, length, JSON_DECODE_INT_AS_REAL, &jerr);
    if (!root) {
        *error = format_string("%s: line %d, column %d: %s (not a valid JSON trace)", trace_path, jerr.line,
                              jerr.column, jerr.text);
        return NULL;
    }
    /* Chrome's trace format: an object holding traceEvents, or a bare array of events */
    json_t *events = json_is_array(root) ? root : json_object_get(root, "traceEvents");
    if (!json_is_array(events)) {
        *error = format_string("%s: no traceEvents array; is this a torch.profiler trace "
                              "(prof.export_chrome_trace or tensorboard_trace_handler)?", trace_path);
        json_decref(root);
        return NULL;
    }
    Import im = {0};
    im.agg = agg_new();
    im.uc = torch_user_code_new(project_root, error);
    Profile *p = NULL;
    bool ok = im.agg && im.uc;
    if (ok) {
        size_t i;
        json_t *e;
        json_array_foreach(events, i, e) {
            if (!(ok = take_event(&im, e))) break;
        }
    }
    if (ok && json_is_object(root) && json_is_array(json_object_get(root, "deviceProperties")))
        take_devices(&im, json_object_get(root, "deviceProperties"));
    if (ok) ok = attribute(&im);
    if (ok) {
        ProfProcess proc = {im.c.has_host_pid ? im.c.host_pid : 0, -1, -1, -1,
                            im.c.any_time ? im.c.last_ns - im.c.first_ns : 0, NULL, {0}, {0}, false, 0};
        if (json_is_object(root)) read_distributed(root, &proc);
        p = agg_to_profile(im.agg, &proc);
        ok = p && describe(p, trace_path);
    }
    if (ok) {
        profile_hash_files(p, project_root);
        if (report) *report = im.r;
    } else {
        if (p) profile_free(p);
        p = NULL;
        if (!*error) *error = format_string("%s: out of memory", trace_path);
    }
    free(im.c.gpu);
    free(im.c.calls);
    free(im.c.spans);
    torch_user_code_free(im.uc);
    agg_free(im.agg);
    json_decref(root);
    return p;
}

Profile *torch_import(const char *text, size_t length, const char *project_root, const char *trace_path,
                      char **error) {
    return torch_import_report(text, length, project_root, trace_path, NULL, error);
}
