#include "profiler/aggregate.h"

#include <pthread.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"
#include "analysis/base/hash_index.h"
#include "profiler/comm_kernels.h"
#include "profiler/host_waits.h"
#include "profiler/op_times.h"
#include "profiler/step_phases.h"
#include "profiler/time_buckets.h"

/* Samples kept per entry for the median: exact up to this many calls, a
 * uniform reservoir sample beyond (Vitter's algorithm R). */
#define RESERVOIR 31
/* In-process caps, under the file caps of profile.h. */
#define MAX_KERNELS 8192
#define MAX_OPS 50000
#define MAX_SITES 50000
#define MAX_FILES 10000
#define MAX_NAMED 1024      /* API functions, overhead kinds */
#define MAX_DEVICES 64
#define GAPS_PER_DEVICE 16 /* the largest of the gaps shorter than PROF_LONG_GAP_NS */
#define PENDING_INTERVALS 16384

/* count and total are weighted (a record of a sampled window stands for
 * `weight` calls: trace_sampling.c); the reservoir samples records. */
typedef struct {
    uint64_t count, total, min, max;
    uint64_t records;
    uint64_t samples[RESERVOIR];
    uint64_t rng;
} StatAcc;

static void stat_add_weighted(StatAcc *s, uint64_t v, uint64_t weight) {
    if (s->records == 0 || v < s->min) s->min = v;
    if (v > s->max) s->max = v;
    s->total += v * weight;
    s->count += weight;
    if (s->records < RESERVOIR) {
        s->samples[s->records] = v;
    } else {
        /* xorshift64: deterministic, so one run's profile is reproducible */
        s->rng = s->rng ? s->rng : 0x9E3779B97F4A7C15ull;
        s->rng ^= s->rng << 13;
        s->rng ^= s->rng >> 7;
        s->rng ^= s->rng << 17;
        uint64_t j = s->rng % (s->records + 1);
        if (j < RESERVOIR) s->samples[j] = v;
    }
    s->records++;
}

static void stat_add(StatAcc *s, uint64_t v) { stat_add_weighted(s, v, 1); }

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static ProfStats stat_finish(const StatAcc *s) {
    ProfStats out = {0};
    if (s->count == 0) return out;
    uint64_t tmp[RESERVOIR];
    size_t n = s->records < RESERVOIR ? (size_t)s->records : RESERVOIR;
    memcpy(tmp, s->samples, n * sizeof *tmp);
    qsort(tmp, n, sizeof *tmp, cmp_u64);
    out.count = s->count;
    out.total_ns = s->total;
    out.min_ns = s->min;
    out.max_ns = s->max;
    out.median_ns = n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
    /* A reservoir median can fall outside [min, max] only through rounding. */
    if (out.median_ns < out.min_ns) out.median_ns = out.min_ns;
    if (out.median_ns > out.max_ns) out.median_ns = out.max_ns;
    return out;
}

static bool str_eq(const char *a, const char *b) {
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

/* Copies at most PROFILE_MAX_STRING - 1 bytes, cutting at a UTF-8 boundary. */
static char *copy_bounded(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s);
    if (n >= PROFILE_MAX_STRING) {
        n = PROFILE_MAX_STRING - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    }
    char *out = malloc(n + 1);
    if (!out) return NULL;
    memcpy(out, s, n);
    out[n] = '\0';
    return out;
}

/* ---- entries */
typedef struct {
    int file;
    uint32_t line;
    char *function;
    bool function_level;
    ProfFrame *frames;
    size_t frame_count;
} SiteEntry;

/* An entry's time on the critical path (see chain_resolve): critical is
 * settled, pending belongs to a device's open chain, which lists the entry
 * while chained. */
typedef struct {
    uint64_t critical, pending;
    bool chained;
} CriticalAcc;

typedef struct {
    ProfKernel key;       /* stats unused; name owned */
    StatAcc acc;
    bool comm;            /* an NCCL kernel (comm_kernel_name), decided once */
    CriticalAcc critical;
} KernelEntry;

typedef struct {
    ProfOp key;           /* stats and bytes unused */
    uint64_t bytes;
    StatAcc acc;
    CriticalAcc critical;
    OpTimes starts;       /* LAUNCH, MEMCPY, MEMSET: when their GPU work started, for the step phases */
} OpEntry;

typedef struct {
    char *name;
    StatAcc acc;
} NamedEntry;

typedef struct {
    uint64_t start, end;
    uint64_t launch;    /* when the host called for it, on the same clock; 0: unknown */
    int site;
    int kernel, op;     /* the entries it counts in, or -1 */
    bool comm;          /* an NCCL kernel (comm_kernels.h); else compute */
    uint32_t window;    /* trace window tag (trace_sampling.c): idle gaps lie within one */
    uint32_t weight;    /* >= 1 */
} Interval;

/* One entry of a device's open chain: a kernel (kind 'k') or an operation. */
typedef struct {
    char kind;
    int index;
} ChainMember;

/* The union of one class of intervals (compute or communication), swept the
 * same way as the device's busy time: a watermark end and the time counted. */
typedef struct {
    bool started;
    uint64_t end, total;
} Union;

typedef struct {
    uint64_t start, duration;
    int before, after;
    uint32_t weight;
} Gap;

typedef struct {
    uint32_t device;
    bool started;
    uint64_t first, busy_end, busy;
    Union compute, comm;
    int last_site;
    uint32_t last_window;   /* of the interval that set busy_end */
    bool weighted;          /* some interval had a weight above 1 */
    Interval *pending;
    size_t pending_count;
    Gap gaps[GAPS_PER_DEVICE];
    size_t gap_count;
    /* Every gap of PROF_LONG_GAP_NS or more (the rules' idle gaps), the
     * largest PROF_LONG_GAPS_PER_DEVICE of them: a data loader that starves
     * the GPU leaves one per step, and the 16 largest of the run would be
     * start-up's alone. */
    Gap *long_gaps;
    size_t long_count, long_cap;
    TimeBuckets *buckets;   /* busy time and activities over the run, for the step phases; NULL: none */
    /* The open chain: the entries of the work since the GPU last waited for
     * the host (chain_resolve), each once. */
    ChainMember *chain;
    size_t chain_count, chain_cap;
} DeviceTimeline;

typedef struct {
    char *name;
    NamedEntry *items;
    size_t count, cap;
    HashIndex index;
} NamedTable;

struct Aggregator {
    pthread_mutex_t lock;
    char **files; size_t file_count, file_cap; HashIndex file_index;
    SiteEntry *sites; size_t site_count, site_cap; HashIndex site_index;
    KernelEntry *kernels; size_t kernel_count, kernel_cap; HashIndex kernel_index;
    OpEntry *ops; size_t op_count, op_cap; HashIndex op_index;
    NamedTable apis, overheads;
    ProfDevice devices[MAX_DEVICES]; size_t device_count;
    DeviceTimeline timelines[MAX_DEVICES]; size_t timeline_count;
    uint64_t dropped_kernels, dropped_ops, dropped_sites;
    uint64_t *step_marks; size_t step_mark_count; /* agg_steps: the process's optimizer step ends */
    uint32_t step_stride; uint64_t step_total;
    bool critical_path;     /* agg_track_critical_path: launch times and host waits are given */
    HostWaits host_waits;
    uint64_t host_wait_total; /* every host wait's length, summed */
};

Aggregator *agg_new(void) {
    Aggregator *agg = calloc(1, sizeof *agg);
    if (!agg) return NULL;
    pthread_mutex_init(&agg->lock, NULL);
    return agg;
}

static void named_free(NamedTable *t) {
    for (size_t i = 0; i < t->count; i++) free(t->items[i].name);
    free(t->items);
    hash_index_free(&t->index);
}

void agg_free(Aggregator *agg) {
    if (!agg) return;
    free(agg->step_marks);
    host_waits_free(&agg->host_waits);
    for (size_t i = 0; i < agg->file_count; i++) free(agg->files[i]);
    free(agg->files);
    hash_index_free(&agg->file_index);
    for (size_t i = 0; i < agg->site_count; i++) {
        free(agg->sites[i].function);
        for (size_t f = 0; f < agg->sites[i].frame_count; f++) free(agg->sites[i].frames[f].module);
        free(agg->sites[i].frames);
    }
    free(agg->sites);
    hash_index_free(&agg->site_index);
    for (size_t i = 0; i < agg->kernel_count; i++) free(agg->kernels[i].key.name);
    free(agg->kernels);
    hash_index_free(&agg->kernel_index);
    free(agg->ops);
    hash_index_free(&agg->op_index);
    named_free(&agg->apis);
    named_free(&agg->overheads);
    for (size_t i = 0; i < agg->device_count; i++) free(agg->devices[i].name);
    for (size_t i = 0; i < agg->timeline_count; i++) {
        free(agg->timelines[i].pending);
        free(agg->timelines[i].buckets);
        free(agg->timelines[i].long_gaps);
        free(agg->timelines[i].chain);
    }
    pthread_mutex_destroy(&agg->lock);
    free(agg);
}

/* ---- files and sites */
typedef struct { Aggregator *agg; const char *path; } FileKey;
static bool file_same(const void *ctx, int i) {
    const FileKey *k = ctx;
    return strcmp(k->agg->files[i], k->path) == 0;
}

static int intern_file(Aggregator *agg, const char *path) {
    uint64_t h = hash_string(hash_start(), path);
    FileKey key = {agg, path};
    int found = hash_index_find(&agg->file_index, h, file_same, &key);
    if (found >= 0) return found;
    if (agg->file_count >= MAX_FILES) return -1;
    if (!array_reserve(&agg->files, agg->file_count, &agg->file_cap, sizeof *agg->files, 16)) return -1;
    char *copy = copy_bounded(path);
    if (!copy) return -1;
    int idx = (int)agg->file_count;
    if (!hash_index_add(&agg->file_index, h, idx)) {
        free(copy);
        return -1;
    }
    agg->files[agg->file_count++] = copy;
    return idx;
}

typedef struct { Aggregator *agg; const SiteEntry *site; } SiteKey;
static bool site_same(const void *ctx, int i) {
    const SiteKey *k = ctx;
    const SiteEntry *a = &k->agg->sites[i], *b = k->site;
    if (a->file != b->file || a->line != b->line || a->function_level != b->function_level ||
        a->frame_count != b->frame_count || !str_eq(a->function, b->function))
        return false;
    for (size_t f = 0; f < a->frame_count; f++)
        if (a->frames[f].address != b->frames[f].address || strcmp(a->frames[f].module, b->frames[f].module))
            return false;
    return true;
}

static uint64_t site_hash(const SiteEntry *s) {
    uint64_t h = hash_bytes(hash_start(), &s->file, sizeof s->file);
    h = hash_bytes(h, &s->line, sizeof s->line);
    h = hash_bytes(h, &s->function_level, sizeof s->function_level);
    h = hash_string(h, s->function);
    for (size_t f = 0; f < s->frame_count; f++) {
        h = hash_string(h, s->frames[f].module);
        h = hash_bytes(h, &s->frames[f].address, sizeof s->frames[f].address);
    }
    return h;
}

/* Interns a site; the entry's strings are copied only when it is new. */
static int intern_site(Aggregator *agg, const SiteEntry *probe) {
    uint64_t h = site_hash(probe);
    SiteKey key = {agg, probe};
    int found = hash_index_find(&agg->site_index, h, site_same, &key);
    if (found >= 0) return found;
    if (agg->site_count >= MAX_SITES) {
        agg->dropped_sites++;
        return -1;
    }
    if (!array_reserve(&agg->sites, agg->site_count, &agg->site_cap, sizeof *agg->sites, 16)) return -1;
    SiteEntry s = *probe;
    s.function = copy_bounded(probe->function);
    s.frames = NULL;
    if (probe->frame_count) {
        s.frames = calloc(probe->frame_count, sizeof *s.frames);
        if (!s.frames) {
            free(s.function);
            return -1;
        }
        for (size_t f = 0; f < probe->frame_count; f++) {
            s.frames[f].address = probe->frames[f].address;
            s.frames[f].module = copy_bounded(probe->frames[f].module);
        }
    }
    int idx = (int)agg->site_count;
    if (!hash_index_add(&agg->site_index, h, idx)) {
        for (size_t f = 0; f < s.frame_count; f++) free(s.frames[f].module);
        free(s.frames);
        free(s.function);
        return -1;
    }
    agg->sites[agg->site_count++] = s;
    return idx;
}

static int add_source_site(Aggregator *agg, const char *file, uint32_t line, const char *function,
                           bool function_level) {
    if (!file || !profile_path_ok(file) || line == 0) return -1;
    pthread_mutex_lock(&agg->lock);
    int result = -1;
    int f = intern_file(agg, file);
    if (f >= 0) {
        SiteEntry probe = {.file = f, .line = line, .function = (char *)function,
                           .function_level = function_level};
        result = intern_site(agg, &probe);
    }
    pthread_mutex_unlock(&agg->lock);
    return result;
}

int agg_site(Aggregator *agg, const char *file, uint32_t line, const char *function) {
    return add_source_site(agg, file, line, function, false);
}

int agg_function_site(Aggregator *agg, const char *file, uint32_t line, const char *function) {
    return add_source_site(agg, file, line, function, true);
}

int agg_native_site(Aggregator *agg, const ProfFrame *frames, size_t count) {
    if (!count) return -1;
    if (count > PROFILE_MAX_FRAMES) count = PROFILE_MAX_FRAMES;
    for (size_t i = 0; i < count; i++)
        if (!frames[i].module || frames[i].module[0] != '/') return -1;
    pthread_mutex_lock(&agg->lock);
    SiteEntry probe = {.file = -1, .frames = (ProfFrame *)frames, .frame_count = count};
    int result = intern_site(agg, &probe);
    pthread_mutex_unlock(&agg->lock);
    return result;
}

static int device_index(Aggregator *agg, uint32_t id);

/* ---- kernels and operations */
typedef struct { Aggregator *agg; const ProfKernel *k; } KernelKey;
static bool kernel_same(const void *ctx, int i) {
    const KernelKey *kk = ctx;
    const ProfKernel *a = &kk->agg->kernels[i].key, *b = kk->k;
    return a->device == b->device && !memcmp(a->grid, b->grid, sizeof a->grid) &&
           !memcmp(a->block, b->block, sizeof a->block) && a->registers == b->registers &&
           a->static_shared == b->static_shared && a->dynamic_shared == b->dynamic_shared &&
           a->local_per_thread == b->local_per_thread && strcmp(a->name, b->name) == 0;
}

static uint64_t kernel_hash(const ProfKernel *k) {
    uint64_t h = hash_string(hash_start(), k->name);
    h = hash_bytes(h, &k->device, sizeof k->device);
    h = hash_bytes(h, k->grid, sizeof k->grid);
    h = hash_bytes(h, k->block, sizeof k->block);
    uint32_t more[4] = {k->registers, k->static_shared, k->dynamic_shared, k->local_per_thread};
    return hash_bytes(h, more, sizeof more);
}

static int intern_kernel(Aggregator *agg, const AggKernel *in) {
    ProfKernel probe = {.process = 0, .device = device_index(agg, in->device),
                        .name = (char *)(in->name ? in->name : "<unknown kernel>"),
                        .registers = in->registers, .static_shared = in->static_shared,
                        .dynamic_shared = in->dynamic_shared, .local_per_thread = in->local_per_thread};
    memcpy(probe.grid, in->grid, sizeof probe.grid);
    memcpy(probe.block, in->block, sizeof probe.block);
    for (int d = 0; d < 3; d++) {
        if (!probe.grid[d]) probe.grid[d] = 1;
        if (!probe.block[d]) probe.block[d] = 1;
    }
    uint64_t h = kernel_hash(&probe);
    KernelKey key = {agg, &probe};
    int found = hash_index_find(&agg->kernel_index, h, kernel_same, &key);
    if (found >= 0) return found;
    if (agg->kernel_count >= MAX_KERNELS ||
        !array_reserve(&agg->kernels, agg->kernel_count, &agg->kernel_cap, sizeof *agg->kernels, 16)) {
        agg->dropped_kernels++;
        return -1;
    }
    KernelEntry e = {.key = probe, .comm = comm_kernel_name(probe.name)};
    e.key.name = copy_bounded(probe.name);
    if (!e.key.name) return -1;
    int idx = (int)agg->kernel_count;
    if (!hash_index_add(&agg->kernel_index, h, idx)) {
        free(e.key.name);
        return -1;
    }
    agg->kernels[agg->kernel_count++] = e;
    return idx;
}

typedef struct { Aggregator *agg; const ProfOp *op; } OpKey;
static bool op_same(const void *ctx, int i) {
    const OpKey *k = ctx;
    const ProfOp *a = &k->agg->ops[i].key, *b = k->op;
    return a->kind == b->kind && a->site == b->site && a->kernel == b->kernel && a->copy == b->copy &&
           a->src == b->src && a->dst == b->dst && a->sync == b->sync;
}

static uint64_t op_hash(const ProfOp *op) {
    int32_t fields[7] = {(int32_t)op->kind, op->site, op->kernel, (int32_t)op->copy,
                         (int32_t)op->src, (int32_t)op->dst, (int32_t)op->sync};
    return hash_bytes(hash_start(), fields, sizeof fields);
}

/* Returns the operation's index, or -1 when it was dropped. */
static int record_op(Aggregator *agg, const ProfOp *probe, uint64_t bytes, uint64_t duration, uint64_t weight) {
    uint64_t h = op_hash(probe);
    OpKey key = {agg, probe};
    int idx = hash_index_find(&agg->op_index, h, op_same, &key);
    if (idx < 0) {
        if (agg->op_count >= MAX_OPS ||
            !array_reserve(&agg->ops, agg->op_count, &agg->op_cap, sizeof *agg->ops, 16)) {
            agg->dropped_ops++;
            return -1;
        }
        idx = (int)agg->op_count;
        if (!hash_index_add(&agg->op_index, h, idx)) {
            agg->dropped_ops++;
            return -1;
        }
        memset(&agg->ops[idx], 0, sizeof agg->ops[idx]);
        agg->ops[idx].key = *probe;
        agg->op_count++;
    }
    agg->ops[idx].bytes += bytes * weight;
    stat_add_weighted(&agg->ops[idx].acc, duration, weight);
    return idx;
}

/* A site index from a caller is trusted only if it exists. */
static int checked_site(const Aggregator *agg, int site) {
    return site >= 0 && (size_t)site < agg->site_count ? site : -1;
}

/* ---- timeline: busy/idle and the largest gaps */
static DeviceTimeline *timeline_for(Aggregator *agg, uint32_t device) {
    for (size_t i = 0; i < agg->timeline_count; i++)
        if (agg->timelines[i].device == device) return &agg->timelines[i];
    if (agg->timeline_count >= MAX_DEVICES || device_index(agg, device) < 0) return NULL;
    DeviceTimeline *t = &agg->timelines[agg->timeline_count++];
    memset(t, 0, sizeof *t);
    t->device = device;
    t->last_site = -1;
    return t;
}

/* A long gap joins the list while it has room (grown as needed), then
 * replaces the shortest when it is longer: the cap keeps the largest. A gap
 * dropped for want of memory is lost; the busy time does not depend on it. */
static void keep_long_gap(DeviceTimeline *t, const Gap *g) {
    if (t->long_count < t->long_cap) {
        t->long_gaps[t->long_count++] = *g;
        return;
    }
    if (t->long_cap < PROF_LONG_GAPS_PER_DEVICE) {
        size_t cap = t->long_cap ? t->long_cap * 2 : 64;
        if (cap > PROF_LONG_GAPS_PER_DEVICE) cap = PROF_LONG_GAPS_PER_DEVICE;
        Gap *grown = realloc(t->long_gaps, cap * sizeof *grown);
        if (grown) {
            t->long_gaps = grown;
            t->long_cap = cap;
            t->long_gaps[t->long_count++] = *g;
            return;
        }
        if (!t->long_count) return;
    }
    size_t shortest = 0;
    for (size_t i = 1; i < t->long_count; i++)
        if (t->long_gaps[i].duration < t->long_gaps[shortest].duration) shortest = i;
    if (g->duration > t->long_gaps[shortest].duration) t->long_gaps[shortest] = *g;
}

static void keep_gap(DeviceTimeline *t, const Gap *g) {
    if (g->duration >= PROF_LONG_GAP_NS) {
        keep_long_gap(t, g);
        return;
    }
    if (t->gap_count < GAPS_PER_DEVICE) {
        t->gaps[t->gap_count++] = *g;
        return;
    }
    size_t smallest = 0;
    for (size_t i = 1; i < t->gap_count; i++)
        if (t->gaps[i].duration < t->gaps[smallest].duration) smallest = i;
    if (g->duration > t->gaps[smallest].duration) t->gaps[smallest] = *g;
}

static int longest_first(const void *a, const void *b) {
    const Gap *x = a, *y = b;
    return x->duration > y->duration ? -1 : x->duration < y->duration;
}

static void add_gap(Profile *p, int dev, const Gap *g) {
    p->gaps[p->gap_count++] = (ProfGap){.process = 0, .device = dev, .start_ns = g->start, .duration_ns = g->duration,
                                        .before_site = g->before, .after_site = g->after, .weight = g->weight};
}

static int cmp_interval(const void *a, const void *b) {
    const Interval *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Adds [start, end) to a union swept in start order: only the part beyond
 * the watermark counts. */
static void union_add(Union *u, uint64_t start, uint64_t end, uint64_t weight) {
    if (!u->started) {
        u->started = true;
        u->end = start;
    }
    uint64_t from = start > u->end ? start : u->end;
    if (end > from) {
        u->total += (end - from) * weight;
        u->end = end;
    }
}

/* ---- the critical path
 * Each device's work is cut into chains: a chain runs while every piece of
 * work was asked for by the host before the GPU ran out of work (launch <
 * the end of the work before), so that the GPU went from one to the next
 * without waiting for the host. It ends when the GPU ran dry before the host
 * asked for more. Its time was on the run's critical path when the host was
 * waiting for the GPU at that moment (a synchronization, a blocking copy):
 * finishing sooner would have let the host go on sooner. Otherwise the GPU
 * then waited for the host, and finishing sooner would only have lengthened
 * that wait. Work whose launch time is unknown breaks its chain at any idle
 * time; the chain still open at the end counts as critical (the run's end
 * waits for it), and so does one cut by untraced work (trace windows). */
static CriticalAcc *member_acc(Aggregator *agg, ChainMember m) {
    return m.kind == 'k' ? &agg->kernels[m.index].critical : &agg->ops[m.index].critical;
}

static void chain_resolve(Aggregator *agg, DeviceTimeline *t, bool critical) {
    for (size_t i = 0; i < t->chain_count; i++) {
        CriticalAcc *acc = member_acc(agg, t->chain[i]);
        if (critical) acc->critical += acc->pending;
        acc->pending = 0;
        acc->chained = false;
    }
    t->chain_count = 0;
}

static void chain_add(Aggregator *agg, DeviceTimeline *t, char kind, int index, uint64_t ns) {
    if (index < 0) return;
    CriticalAcc *acc = member_acc(agg, (ChainMember){kind, index});
    if (!acc->chained) {
        if (!array_reserve(&t->chain, t->chain_count, &t->chain_cap, sizeof *t->chain, 64)) {
            acc->critical += ns; /* unlisted: counted critical, as when nothing is known */
            return;
        }
        t->chain[t->chain_count++] = (ChainMember){kind, index};
        acc->chained = true;
    }
    acc->pending += ns;
}

/* Before iv joins the device's work: does it end the open chain, and how? */
static void chain_before(Aggregator *agg, DeviceTimeline *t, const Interval *iv) {
    if (iv->window != t->last_window) {
        chain_resolve(agg, t, true);
        return;
    }
    bool gpu_waited = iv->launch ? iv->launch >= t->busy_end : iv->start > t->busy_end;
    if (!gpu_waited) return;
    size_t cursor = (size_t)(t - agg->timelines);
    chain_resolve(agg, t, host_waits_at(&agg->host_waits, cursor, t->busy_end));
}

/* Sweeps the pending intervals in start order. An interval that lies (partly)
 * before what earlier sweeps counted adds only its part beyond busy_end.
 * The compute and communication unions follow the same rule with their own
 * watermarks, so they carry the same approximation: a late interval that
 * falls in a hole already passed is not counted, and since each union has
 * its own watermark the three can disagree slightly (compute or comm above
 * busy); build() clamps them so that compute_ns, comm_ns <= busy_ns. Within
 * one batch (PENDING_INTERVALS records, the usual case) all three are exact. */
static void timeline_sweep(Aggregator *agg, DeviceTimeline *t) {
    if (!t->pending_count) return;
    qsort(t->pending, t->pending_count, sizeof *t->pending, cmp_interval);
    for (size_t i = 0; i < t->pending_count; i++) {
        const Interval *iv = &t->pending[i];
        if (!t->started) {
            t->started = true;
            t->first = iv->start;
            t->busy_end = iv->start;
            /* without them the steps get no idle figures; nothing else is lost */
            t->buckets = malloc(sizeof *t->buckets);
            if (t->buckets) time_buckets_init(t->buckets, iv->start);
        } else if (iv->start > t->busy_end && iv->window == t->last_window) {
            /* between two windows lies untraced work: no gap is measured there */
            Gap g = {.start = t->busy_end - t->first, .duration = iv->start - t->busy_end,
                     .before = t->last_site, .after = iv->site, .weight = iv->weight};
            keep_gap(t, &g);
            /* the GPU waited for this work to be launched (a long gap is a phase or a wait: PR003's) */
            if (iv->op >= 0 && g.duration < PROF_LONG_GAP_NS)
                op_times_add_idle(&agg->ops[iv->op].starts, iv->start, (double)g.duration * iv->weight);
        }
        if (agg->critical_path) {
            chain_before(agg, t, iv); /* the first interval ends nothing: its chain is empty */
            uint64_t ns = (iv->end - iv->start) * iv->weight;
            chain_add(agg, t, 'k', iv->kernel, ns);
            chain_add(agg, t, 'o', iv->op, ns);
        }
        if (iv->start < t->first) t->first = iv->start;
        if (iv->weight > 1) t->weighted = true;
        union_add(iv->comm ? &t->comm : &t->compute, iv->start, iv->end, iv->weight);
        uint64_t from = iv->start > t->busy_end ? iv->start : t->busy_end;
        if (t->buckets) time_buckets_add_activity(t->buckets, iv->start, iv->weight);
        if (iv->end > from) {
            if (t->buckets) time_buckets_add_busy(t->buckets, from, iv->end, iv->weight);
            t->busy += (iv->end - from) * iv->weight;
            t->busy_end = iv->end;
            t->last_site = iv->site;
            t->last_window = iv->window;
        }
    }
    t->pending_count = 0;
}

static void timeline_add(Aggregator *agg, uint32_t device, Interval iv) {
    if (iv.end < iv.start) return;
    DeviceTimeline *t = timeline_for(agg, device);
    if (!t) return;
    if (!t->pending) {
        t->pending = malloc(PENDING_INTERVALS * sizeof *t->pending);
        if (!t->pending) return;
    }
    if (t->pending_count == PENDING_INTERVALS) timeline_sweep(agg, t);
    t->pending[t->pending_count++] = iv;
}

/* ---- public record functions */
static uint64_t span(uint64_t start, uint64_t end) {
    return end > start ? end - start : 0;
}

static uint32_t weight_of(uint32_t weight) { return weight ? weight : 1; }

static void note_start(Aggregator *agg, int op, uint64_t start_ns, uint32_t weight) {
    if (op >= 0) op_times_add(&agg->ops[op].starts, start_ns, weight);
}

void agg_kernel(Aggregator *agg, const AggKernel *k) {
    pthread_mutex_lock(&agg->lock);
    int site = checked_site(agg, k->site);
    int kernel = intern_kernel(agg, k), op = -1;
    uint64_t d = span(k->start_ns, k->end_ns);
    if (kernel >= 0) {
        stat_add_weighted(&agg->kernels[kernel].acc, d, weight_of(k->weight));
        ProfOp probe = {.kind = PROF_OP_LAUNCH, .site = site, .kernel = kernel};
        op = record_op(agg, &probe, 0, d, weight_of(k->weight));
        note_start(agg, op, k->start_ns, weight_of(k->weight));
    }
    /* a kernel past the table's cap is judged by its name on each record */
    bool comm = kernel >= 0 ? agg->kernels[kernel].comm : comm_kernel_name(k->name);
    timeline_add(agg, k->device,
                 (Interval){.start = k->start_ns, .end = k->end_ns, .launch = k->launch_ns, .site = site,
                            .kernel = kernel, .op = op, .comm = comm, .window = k->window,
                            .weight = weight_of(k->weight)});
    pthread_mutex_unlock(&agg->lock);
}

void agg_memcpy(Aggregator *agg, const AggCopy *c) {
    pthread_mutex_lock(&agg->lock);
    int site = checked_site(agg, c->site);
    ProfOp probe = {.kind = PROF_OP_MEMCPY, .site = site, .kernel = -1, .copy = c->copy,
                    .src = c->src, .dst = c->dst};
    int op = record_op(agg, &probe, c->bytes, span(c->start_ns, c->end_ns), weight_of(c->weight));
    note_start(agg, op, c->start_ns, weight_of(c->weight));
    timeline_add(agg, c->device,
                 (Interval){.start = c->start_ns, .end = c->end_ns, .launch = c->launch_ns, .site = site,
                            .kernel = -1, .op = op, .window = c->window, .weight = weight_of(c->weight)});
    pthread_mutex_unlock(&agg->lock);
}

void agg_memset(Aggregator *agg, const AggMemset *m) {
    pthread_mutex_lock(&agg->lock);
    int site = checked_site(agg, m->site);
    ProfOp probe = {.kind = PROF_OP_MEMSET, .site = site, .kernel = -1, .dst = m->dst};
    int op = record_op(agg, &probe, m->bytes, span(m->start_ns, m->end_ns), weight_of(m->weight));
    note_start(agg, op, m->start_ns, weight_of(m->weight));
    timeline_add(agg, m->device,
                 (Interval){.start = m->start_ns, .end = m->end_ns, .launch = m->launch_ns, .site = site,
                            .kernel = -1, .op = op, .window = m->window, .weight = weight_of(m->weight)});
    pthread_mutex_unlock(&agg->lock);
}

void agg_sync(Aggregator *agg, ProfSyncKind kind, uint64_t duration_ns, int site) {
    pthread_mutex_lock(&agg->lock);
    ProfOp probe = {.kind = PROF_OP_SYNC, .site = checked_site(agg, site), .kernel = -1, .sync = kind};
    record_op(agg, &probe, 0, duration_ns, 1);
    pthread_mutex_unlock(&agg->lock);
}

void agg_track_critical_path(Aggregator *agg) {
    pthread_mutex_lock(&agg->lock);
    agg->critical_path = true;
    pthread_mutex_unlock(&agg->lock);
}

void agg_host_wait(Aggregator *agg, uint64_t enter_ns, uint64_t exit_ns) {
    pthread_mutex_lock(&agg->lock);
    if (agg->critical_path && exit_ns >= enter_ns) {
        host_waits_add(&agg->host_waits, enter_ns, exit_ns);
        agg->host_wait_total += exit_ns - enter_ns;
    }
    pthread_mutex_unlock(&agg->lock);
}

void agg_alloc(Aggregator *agg, ProfMemKind kind, uint64_t bytes, uint64_t duration_ns, int site) {
    pthread_mutex_lock(&agg->lock);
    ProfOp probe = {.kind = PROF_OP_ALLOC, .site = checked_site(agg, site), .kernel = -1, .dst = kind};
    record_op(agg, &probe, bytes, duration_ns, 1);
    pthread_mutex_unlock(&agg->lock);
}

typedef struct { const NamedTable *t; const char *name; } NamedKey;
static bool named_same(const void *ctx, int i) {
    const NamedKey *k = ctx;
    return strcmp(k->t->items[i].name, k->name) == 0;
}

static void named_add(NamedTable *t, const char *name, uint64_t duration) {
    if (!name) return;
    uint64_t h = hash_string(hash_start(), name);
    NamedKey key = {t, name};
    int idx = hash_index_find(&t->index, h, named_same, &key);
    if (idx < 0) {
        if (t->count >= MAX_NAMED || !array_reserve(&t->items, t->count, &t->cap, sizeof *t->items, 16)) return;
        char *copy = copy_bounded(name);
        if (!copy) return;
        idx = (int)t->count;
        if (!hash_index_add(&t->index, h, idx)) {
            free(copy);
            return;
        }
        memset(&t->items[idx], 0, sizeof t->items[idx]);
        t->items[idx].name = copy;
        t->count++;
    }
    stat_add(&t->items[idx].acc, duration);
}

void agg_api(Aggregator *agg, const char *name, uint64_t duration_ns) {
    pthread_mutex_lock(&agg->lock);
    named_add(&agg->apis, name, duration_ns);
    pthread_mutex_unlock(&agg->lock);
}

void agg_api_batch(Aggregator *agg, const char *const *names, const uint64_t *durations, size_t count) {
    pthread_mutex_lock(&agg->lock);
    for (size_t i = 0; i < count; i++) named_add(&agg->apis, names[i], durations[i]);
    pthread_mutex_unlock(&agg->lock);
}

void agg_overhead(Aggregator *agg, const char *kind, uint64_t duration_ns) {
    pthread_mutex_lock(&agg->lock);
    named_add(&agg->overheads, kind, duration_ns);
    pthread_mutex_unlock(&agg->lock);
}

/* Index into devices of the device with this ordinal; a device seen only in
 * activity records gets a placeholder entry. Called with the lock held. */
static int device_index(Aggregator *agg, uint32_t id) {
    for (size_t i = 0; i < agg->device_count; i++)
        if (agg->devices[i].id == id) return (int)i;
    if (agg->device_count >= MAX_DEVICES) return -1;
    ProfDevice *d = &agg->devices[agg->device_count];
    memset(d, 0, sizeof *d);
    d->id = id;
    d->name = copy_bounded("unknown device");
    if (!d->name) return -1;
    return (int)agg->device_count++;
}

void agg_device(Aggregator *agg, const ProfDevice *dev) {
    pthread_mutex_lock(&agg->lock);
    int i = device_index(agg, dev->id);
    if (i >= 0) {
        char *name = copy_bounded(dev->name ? dev->name : "unknown device");
        if (name) {
            free(agg->devices[i].name);
            agg->devices[i] = *dev;
            agg->devices[i].process = 0;
            agg->devices[i].name = name;
        }
    }
    pthread_mutex_unlock(&agg->lock);
}

/* ---- building the profile */
#define ALLOC_ARRAY(ptr, n) ((ptr) = (n) ? calloc((n), sizeof *(ptr)) : NULL, (n) == 0 || (ptr))

static bool fill_apis(const NamedTable *t, Profile *p) {
    if (!ALLOC_ARRAY(p->apis, t->count)) return false;
    for (size_t i = 0; i < t->count; i++) {
        if (!(p->apis[i].name = strdup(t->items[i].name))) return false;
        p->apis[i].stats = stat_finish(&t->items[i].acc);
        p->api_count++;
    }
    return true;
}

static bool fill_overheads(const NamedTable *t, Profile *p) {
    if (!ALLOC_ARRAY(p->overheads, t->count)) return false;
    for (size_t i = 0; i < t->count; i++) {
        if (!(p->overheads[i].kind = strdup(t->items[i].name))) return false;
        p->overheads[i].stats = stat_finish(&t->items[i].acc);
        p->overhead_count++;
    }
    return true;
}

static void fill_steps(Aggregator *agg, Profile *p);

/* An entry's critical time for the profile: the settled part, and the open
 * chain's (the run's end waited for it); unknown when not tracked, or when
 * host waits were lost for want of memory (chains would read as waiting
 * for the host). */
static CriticalTime critical_of(const Aggregator *agg, const CriticalAcc *acc, const ProfStats *stats) {
    if (!agg->critical_path || agg->host_waits.lost) return (CriticalTime){0};
    uint64_t ns = acc->critical + acc->pending;
    return (CriticalTime){.known = true, .ns = ns < stats->total_ns ? ns : stats->total_ns};
}

static bool build(Aggregator *agg, Profile *p, const ProfProcess *proc) {
    ProfProcess copy = proc ? *proc : (ProfProcess){.pid = 0, .rank = -1, .local_rank = -1, .world_size = -1};
    copy.error = NULL;
    if (!ALLOC_ARRAY(p->processes, (size_t)1)) return false;
    copy.host_wait_known = agg->critical_path;
    copy.host_wait_ns = agg->host_wait_total;
    p->processes[0] = copy;
    p->process_count = 1;
    if (proc && proc->error && !(p->processes[0].error = strdup(proc->error))) return false;

    if (!ALLOC_ARRAY(p->devices, agg->device_count)) return false;
    for (size_t i = 0; i < agg->device_count; i++) {
        p->devices[i] = agg->devices[i];
        p->devices[i].process = 0;
        if (!(p->devices[i].name = strdup(agg->devices[i].name))) return false;
        p->device_count++;
    }
    if (!ALLOC_ARRAY(p->files, agg->file_count)) return false;
    for (size_t i = 0; i < agg->file_count; i++) {
        if (!(p->files[i].path = strdup(agg->files[i]))) return false;
        p->file_count++;
    }
    if (!ALLOC_ARRAY(p->sites, agg->site_count)) return false;
    for (size_t i = 0; i < agg->site_count; i++) {
        const SiteEntry *s = &agg->sites[i];
        ProfSite *d = &p->sites[i];
        d->file = s->file;
        d->line = s->line;
        d->function_level = s->function_level;
        p->site_count++;
        if (s->function && !(d->function = strdup(s->function))) return false;
        if (s->frame_count) {
            if (!ALLOC_ARRAY(d->frames, s->frame_count)) return false;
            for (size_t f = 0; f < s->frame_count; f++) {
                d->frames[f].address = s->frames[f].address;
                if (!(d->frames[f].module = strdup(s->frames[f].module))) return false;
                d->frame_count++;
            }
        }
    }
    /* every interval swept first: the entries' critical time is complete */
    for (size_t i = 0; i < agg->timeline_count; i++) timeline_sweep(agg, &agg->timelines[i]);
    if (!ALLOC_ARRAY(p->kernels, agg->kernel_count)) return false;
    for (size_t i = 0; i < agg->kernel_count; i++) {
        p->kernels[i] = agg->kernels[i].key;
        p->kernels[i].stats = stat_finish(&agg->kernels[i].acc);
        p->kernels[i].critical = critical_of(agg, &agg->kernels[i].critical, &p->kernels[i].stats);
        if (!(p->kernels[i].name = strdup(agg->kernels[i].key.name))) return false;
        p->kernel_count++;
    }
    if (!ALLOC_ARRAY(p->ops, agg->op_count)) return false;
    for (size_t i = 0; i < agg->op_count; i++) {
        p->ops[i] = agg->ops[i].key;
        p->ops[i].bytes = agg->ops[i].bytes;
        p->ops[i].stats = stat_finish(&agg->ops[i].acc);
        if (prof_op_has_critical(p->ops[i].kind))
            p->ops[i].critical = critical_of(agg, &agg->ops[i].critical, &p->ops[i].stats);
    }
    p->op_count = agg->op_count;
    if (!fill_apis(&agg->apis, p) || !fill_overheads(&agg->overheads, p)) return false;

    size_t gap_total = 0;
    for (size_t i = 0; i < agg->timeline_count; i++)
        gap_total += agg->timelines[i].gap_count + agg->timelines[i].long_count;
    if (!ALLOC_ARRAY(p->timelines, agg->timeline_count)) return false;
    if (!ALLOC_ARRAY(p->gaps, gap_total)) return false;
    for (size_t i = 0; i < agg->timeline_count; i++) {
        DeviceTimeline *t = &agg->timelines[i];
        if (!t->started) continue;
        int dev = device_index(agg, t->device);
        if (dev < 0) continue;
        uint64_t span_ns = t->busy_end > t->first ? t->busy_end - t->first : 0;
        /* an estimate from sampled windows cannot exceed the span it was measured over */
        if (t->weighted && t->busy > span_ns) t->busy = span_ns;
        if (t->busy > span_ns) span_ns = t->busy;
        /* busy = compute union comm, so busy - compute is the communication that
         * no compute overlapped; clamped for the approximation of late batches */
        uint64_t compute = t->compute.total < t->busy ? t->compute.total : t->busy;
        uint64_t comm = t->comm.total < t->busy ? t->comm.total : t->busy;
        uint64_t exposed = t->busy - compute < comm ? t->busy - compute : comm;
        p->timelines[p->timeline_count++] = (ProfTimeline){
            .process = 0, .device = dev, .span_ns = span_ns, .busy_ns = t->busy, .idle_ns = span_ns - t->busy,
            .compute_ns = compute, .comm_ns = comm, .exposed_comm_ns = exposed};
        /* every long gap, then the largest short ones while fewer than
         * GAPS_PER_DEVICE are listed (the device's largest gaps, as before) */
        for (size_t g = 0; g < t->long_count; g++) add_gap(p, dev, &t->long_gaps[g]);
        qsort(t->gaps, t->gap_count, sizeof *t->gaps, longest_first);
        for (size_t g = 0; g < t->gap_count && t->long_count + g < GAPS_PER_DEVICE; g++) add_gap(p, dev, &t->gaps[g]);
    }
    p->dropped_kernels = agg->dropped_kernels;
    p->dropped_ops = agg->dropped_ops;
    p->dropped_sites = agg->dropped_sites;
    fill_steps(agg, p);
    return true;
}

void agg_steps(Aggregator *agg, const uint64_t *marks, size_t count, uint32_t stride, uint64_t total) {
    uint64_t *copy = count ? malloc(count * sizeof *copy) : NULL;
    if (count && !copy) return; /* no phases: the profile reads as one without steps */
    if (count) memcpy(copy, marks, count * sizeof *copy);
    pthread_mutex_lock(&agg->lock);
    free(agg->step_marks);
    agg->step_marks = copy;
    agg->step_mark_count = count;
    agg->step_stride = stride;
    agg->step_total = total;
    pthread_mutex_unlock(&agg->lock);
}

/* One device's span and busy time by step phase, and the activities. The
 * idle time is the span less the busy time per phase over the whole device,
 * never per step: where tracing was sampled, busy time sits in the traced
 * windows counted `every` times over, so a step holding a window reads as
 * busier than it was long and one without any as idle throughout; only their
 * sum is an estimate. */
typedef struct {
    const TimeBuckets *buckets;
    uint64_t first, last; /* the device's span */
    double span[PROF_PHASE_COUNT], busy[PROF_PHASE_COUNT], activities[PROF_PHASE_COUNT];
} PhaseSums;

static void add_phase_range(void *ctx, ProfPhase phase, uint64_t from, uint64_t to) {
    PhaseSums *sums = ctx;
    /* nothing ran outside the span: at its ends, a bucket's whole content is the range's */
    uint64_t a = from == sums->first ? 0 : from, z = to == sums->last ? UINT64_MAX : to;
    sums->span[phase] += (double)(to - from);
    sums->busy[phase] += time_buckets_busy_between(sums->buckets, a, z);
    sums->activities[phase] += time_buckets_activities_between(sums->buckets, a, z);
}

/* The GPU's idle time and activities in each phase, over every device's own
 * active span (first to last activity, as its timeline's idle time). */
static void phase_idle(Aggregator *agg, const StepTimeline *steps, ProfSteps *out) {
    double idle[PROF_PHASE_COUNT] = {0}, activities[PROF_PHASE_COUNT] = {0};
    for (size_t i = 0; i < agg->timeline_count; i++) {
        const DeviceTimeline *t = &agg->timelines[i];
        if (!t->started) continue;
        if (!t->buckets) return; /* out of memory at the start: unknown rather than short */
        PhaseSums sums = {.buckets = t->buckets, .first = t->first, .last = t->busy_end};
        step_timeline_ranges(steps, t->first, t->busy_end, add_phase_range, &sums);
        for (int k = 0; k < PROF_PHASE_COUNT; k++) {
            idle[k] += sums.busy[k] < sums.span[k] ? sums.span[k] - sums.busy[k] : 0;
            activities[k] += sums.activities[k];
        }
    }
    for (int k = 0; k < PROF_PHASE_COUNT; k++) {
        out->idle_ns[k] = (uint64_t)(idle[k] + 0.5);
        out->activities[k] = (uint64_t)(activities[k] + 0.5);
    }
    out->phase_idle_known = true;
}

static double steady_share(void *ctx, uint64_t from, uint64_t to) {
    return (double)step_timeline_steady_ns(ctx, from, to) / (double)(to - from);
}

/* Each launch's, copy's and memset's calls in the steady steps, and the
 * GPU's idle time before them, from when they started (op_times.h): an
 * operation that ran in one phase only (a sampling loop after training, a
 * checkpoint) gets all or none of them. */
static void steady_counts(const Aggregator *agg, const StepTimeline *steps, Profile *p) {
    if (!steps->count) return;
    for (size_t i = 0; i < agg->op_count && i < p->op_count; i++) {
        ProfOp *op = &p->ops[i];
        if (!prof_op_has_critical(op->kind) || !agg->ops[i].starts.width) continue; /* GPU work, seen starting */
        double calls = op_times_calls_in(&agg->ops[i].starts, steady_share, (void *)steps);
        double idle = op_times_idle_in(&agg->ops[i].starts, steady_share, (void *)steps);
        uint64_t count = (uint64_t)llround(calls);
        op->steady = (SteadyCount){.known = true, .idle_known = true,
                                   .count = count < op->stats.count ? count : op->stats.count,
                                   .idle_ns = (uint64_t)llround(idle)};
    }
}

/* The process's steps and each gap's phase, from the step marks (none: left unknown). */
static void fill_steps(Aggregator *agg, Profile *p) {
    StepTimeline steps;
    if (!agg->step_mark_count ||
        !step_timeline_build(&steps, agg->step_marks, agg->step_mark_count, agg->step_stride, agg->step_total))
        return;
    uint64_t first = UINT64_MAX, last = 0;
    for (size_t i = 0; i < agg->timeline_count; i++) {
        const DeviceTimeline *t = &agg->timelines[i];
        if (!t->started) continue;
        if (t->first < first) first = t->first;
        if (t->busy_end > last) last = t->busy_end;
    }
    if (first == UINT64_MAX) first = last = steps.marks[0];
    step_timeline_summary(&steps, first, last, &p->processes[0].steps);
    phase_idle(agg, &steps, &p->processes[0].steps);
    steady_counts(agg, &steps, p);
    /* A gap takes the phase at its middle: the host notes a step's end while the GPU may still run
     * it, or already idle, so a gap often straddles a mark; its middle lies where most of it is. */
    for (size_t g = 0; g < p->gap_count; g++) {
        ProfGap *gap = &p->gaps[g];
        const ProfDevice *dev = gap->device >= 0 && (size_t)gap->device < p->device_count ? &p->devices[gap->device] : NULL;
        for (size_t i = 0; dev && i < agg->timeline_count; i++)
            if (agg->timelines[i].started && agg->timelines[i].device == dev->id)
                gap->phase = step_timeline_phase_at(&steps, agg->timelines[i].first + gap->start_ns +
                                                                gap->duration_ns / 2);
    }
    step_timeline_free(&steps);
}

Profile *agg_to_profile(Aggregator *agg, const ProfProcess *proc) {
    Profile *p = profile_new();
    if (!p) return NULL;
    pthread_mutex_lock(&agg->lock);
    bool ok = build(agg, p, proc);
    pthread_mutex_unlock(&agg->lock);
    if (!ok) {
        profile_free(p);
        return NULL;
    }
    return p;
}
