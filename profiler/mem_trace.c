/* Device memory over time from CUDA's allocations; see mem_trace.h. */
#include "profiler/mem_trace.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t address;   /* 0: empty slot */
    uint64_t bytes;
    int site;
    bool used, dead;    /* dead: a released entry (tombstone) */
} LiveEntry;

typedef struct {
    uint64_t live;          /* bytes live now from this site */
    uint64_t alloc_bytes;   /* allocated from it over the run */
    uint64_t alloc_count;
    uint64_t peak_live;     /* live at the peak (snapshot) */
    uint64_t oom_live;      /* live when an allocation failed (snapshot) */
    bool listed;            /* in the device's active list */
} SiteStats;

typedef struct {
    bool used;
    uint32_t device;
    LiveEntry *live;        /* open addressing, capacity a power of two */
    size_t live_cap, live_used, live_dead;
    uint64_t untracked;     /* live bytes not in the table (it was full) */
    uint64_t total;         /* live bytes now */
    uint64_t events;
    uint64_t first_ns, last_ns;
    bool started;
    uint64_t peak, peak_ns;
    bool peak_pending;      /* the peak is the current state: its lines not yet taken */
    SiteStats *sites;       /* by site + 1 (0: no site) */
    size_t site_cap;
    int *active;            /* site + 1 of every site that allocated, in order of first allocation */
    size_t active_count, active_cap;
    /* samples: each the highest point of a stretch of `stride` events */
    ProfMemSample *samples;
    size_t sample_count;
    uint64_t stride, in_stretch;
    ProfMemSample stretch;  /* the current stretch's highest point */
    /* the first allocation that failed for lack of memory (mem_trace_oom) */
    bool oom, oom_pending;  /* pending: what was live then is not taken yet */
    uint64_t oom_ns, oom_bytes, oom_allocated;
    int oom_site;
} DevTrace;

struct MemTrace {
    pthread_mutex_t lock;
    DevTrace devices[MEM_TRACE_MAX_DEVICES];
    uint64_t unknown_releases;
};

MemTrace *mem_trace_new(void) {
    MemTrace *t = calloc(1, sizeof *t);
    if (t) pthread_mutex_init(&t->lock, NULL);
    return t;
}

void mem_trace_free(MemTrace *t) {
    if (!t) return;
    for (size_t i = 0; i < MEM_TRACE_MAX_DEVICES; i++) {
        free(t->devices[i].live);
        free(t->devices[i].sites);
        free(t->devices[i].active);
        free(t->devices[i].samples);
    }
    pthread_mutex_destroy(&t->lock);
    free(t);
}

static DevTrace *device_of(MemTrace *t, uint32_t device) {
    for (size_t i = 0; i < MEM_TRACE_MAX_DEVICES; i++) {
        DevTrace *d = &t->devices[i];
        if (d->used && d->device == device) return d;
        if (!d->used) {
            d->used = true;
            d->device = device;
            d->stride = 1;
            return d;
        }
    }
    return NULL;
}

static size_t slot_of(uint64_t address, size_t cap) {
    uint64_t h = address * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (cap - 1);
}

/* The live entry of address, or NULL. */
static LiveEntry *live_find(DevTrace *d, uint64_t address) {
    if (!d->live) return NULL;
    for (size_t i = slot_of(address, d->live_cap), n = 0; n < d->live_cap; i = (i + 1) & (d->live_cap - 1), n++) {
        LiveEntry *e = &d->live[i];
        if (!e->used) return NULL;
        if (!e->dead && e->address == address) return e;
    }
    return NULL;
}

static bool live_rehash(DevTrace *d, size_t cap) {
    LiveEntry *fresh = calloc(cap, sizeof *fresh);
    if (!fresh) return false;
    for (size_t i = 0; i < d->live_cap; i++) {
        LiveEntry *e = &d->live[i];
        if (!e->used || e->dead) continue;
        size_t k = slot_of(e->address, cap);
        while (fresh[k].used) k = (k + 1) & (cap - 1);
        fresh[k] = *e;
    }
    free(d->live);
    d->live = fresh;
    d->live_cap = cap;
    d->live_dead = 0;
    return true;
}

/* Adds a live entry; false when the table is full (or memory is short). */
static bool live_add(DevTrace *d, uint64_t address, uint64_t bytes, int site) {
    size_t live = d->live_used - d->live_dead;
    if (live >= MEM_TRACE_MAX_LIVE) return false;
    if (!d->live || (d->live_used + 1) * 4 > d->live_cap * 3) {
        size_t cap = d->live_cap ? d->live_cap : 256;
        while ((live + 1) * 2 > cap) cap *= 2;
        if (!live_rehash(d, cap)) return false;
        d->live_used = live;
    }
    size_t i = slot_of(address, d->live_cap);
    while (d->live[i].used && !d->live[i].dead) i = (i + 1) & (d->live_cap - 1);
    if (d->live[i].dead) d->live_dead--;
    else d->live_used++;
    d->live[i] = (LiveEntry){.address = address, .bytes = bytes, .site = site, .used = true};
    return true;
}

static SiteStats *site_stats(DevTrace *d, int site) {
    size_t k = (size_t)(site + 1);
    if (k >= d->site_cap) {
        size_t cap = d->site_cap ? d->site_cap : 64;
        while (cap <= k) cap *= 2;
        SiteStats *grown = realloc(d->sites, cap * sizeof *grown);
        if (!grown) return NULL;
        memset(grown + d->site_cap, 0, (cap - d->site_cap) * sizeof *grown);
        d->sites = grown;
        d->site_cap = cap;
    }
    SiteStats *s = &d->sites[k];
    if (!s->listed) {
        if (d->active_count == d->active_cap) {
            size_t cap = d->active_cap ? d->active_cap * 2 : 64;
            int *grown = realloc(d->active, cap * sizeof *grown);
            if (!grown) return NULL;
            d->active = grown;
            d->active_cap = cap;
        }
        d->active[d->active_count++] = (int)k;
        s->listed = true;
    }
    return s;
}

/* The lines live at the peak: taken when memory first goes down after a new
 * peak (or at the end), so a run that climbs pays once per climb. */
static void take_peak_lines(DevTrace *d) {
    if (!d->peak_pending) return;
    for (size_t i = 0; i < d->active_count; i++) {
        SiteStats *s = &d->sites[d->active[i]];
        s->peak_live = s->live;
    }
    d->peak_pending = false;
}

/* Two stretches into one, keeping the higher point (the earlier on a tie). */
static void halve_samples(DevTrace *d) {
    size_t n = 0;
    for (size_t i = 0; i < d->sample_count; i += 2) {
        ProfMemSample a = d->samples[i];
        if (i + 1 < d->sample_count && d->samples[i + 1].allocated > a.allocated) a = d->samples[i + 1];
        d->samples[n++] = a;
    }
    d->sample_count = n;
    d->stride *= 2;
}

static void sample(DevTrace *d, uint64_t time_ns) {
    ProfMemSample now = {time_ns - d->first_ns, d->total, d->total};
    if (d->in_stretch == 0 || now.allocated > d->stretch.allocated) d->stretch = now;
    if (++d->in_stretch < d->stride) return;
    if (!d->samples) {
        d->samples = malloc(PROFILE_MAX_MEMORY_SAMPLES * sizeof *d->samples);
        if (!d->samples) return;
    }
    if (d->sample_count == PROFILE_MAX_MEMORY_SAMPLES) halve_samples(d);
    d->samples[d->sample_count++] = d->stretch;
    d->in_stretch = 0;
}

/* What was live when the allocation failed: the state once every record before it has been applied. */
static void take_oom_lines(DevTrace *d) {
    for (size_t i = 0; i < d->active_count; i++) {
        SiteStats *s = &d->sites[d->active[i]];
        s->oom_live = s->live;
    }
    d->oom_allocated = d->total;
    d->oom_pending = false;
}

/* A record at time_ns arrives: an out-of-memory error before it sees the state as it is now. */
static void oom_catch_up(DevTrace *d, uint64_t time_ns) {
    if (d->oom_pending && time_ns > d->oom_ns) take_oom_lines(d);
}

void mem_trace_oom(MemTrace *t, uint32_t device, uint64_t bytes, uint64_t time_ns, int site) {
    if (!t) return;
    if (site < -1 || site >= (int)MEM_TRACE_MAX_SITES) site = -1;
    pthread_mutex_lock(&t->lock);
    DevTrace *d = device_of(t, device);
    if (d && !d->oom) {
        d->oom = d->oom_pending = true;
        d->oom_ns = time_ns;
        d->oom_bytes = bytes;
        d->oom_site = site;
        if (!site_stats(d, site)) d->oom_site = -1; /* listed, so that its line can be named */
    }
    pthread_mutex_unlock(&t->lock);
}

static uint64_t clock_of(DevTrace *d, uint64_t time_ns) {
    if (!d->started) {
        d->started = true;
        d->first_ns = d->last_ns = time_ns;
    }
    if (time_ns < d->last_ns) time_ns = d->last_ns;
    d->last_ns = time_ns;
    return time_ns;
}

void mem_trace_alloc(MemTrace *t, uint32_t device, uint64_t address, uint64_t bytes, uint64_t time_ns, int site) {
    if (!t) return;
    if (site < -1 || site >= (int)MEM_TRACE_MAX_SITES) site = -1;
    pthread_mutex_lock(&t->lock);
    DevTrace *d = device_of(t, device);
    if (d) {
        oom_catch_up(d, time_ns);
        time_ns = clock_of(d, time_ns);
        d->events++;
        LiveEntry *old = live_find(d, address);
        if (old) { /* its release was never seen: the address is reused, so it is gone */
            take_peak_lines(d);
            d->sites[old->site + 1].live -= old->bytes;
            d->total -= old->bytes;
            old->dead = true;
            d->live_dead++;
        }
        SiteStats *s = site_stats(d, site);
        if (!s || !live_add(d, address, bytes, site)) {
            d->untracked += bytes;   /* counted, not by line */
        } else {
            s->live += bytes;
        }
        if (s) {
            s->alloc_bytes += bytes;
            s->alloc_count++;
        }
        d->total += bytes;
        if (d->total > d->peak) {
            d->peak = d->total;
            d->peak_ns = time_ns - d->first_ns;
            d->peak_pending = true;
        }
        sample(d, time_ns);
    }
    pthread_mutex_unlock(&t->lock);
}

void mem_trace_release(MemTrace *t, uint32_t device, uint64_t address, uint64_t bytes, uint64_t time_ns) {
    if (!t) return;
    pthread_mutex_lock(&t->lock);
    DevTrace *d = device_of(t, device);
    if (d) {
        oom_catch_up(d, time_ns);
        time_ns = clock_of(d, time_ns);
        d->events++;
        take_peak_lines(d);
        LiveEntry *e = live_find(d, address);
        uint64_t freed;
        if (e) {
            freed = e->bytes;
            SiteStats *s = &d->sites[e->site + 1];
            s->live -= freed;
            e->dead = true;
            d->live_dead++;
        } else {
            t->unknown_releases++;
            freed = bytes < d->untracked ? bytes : d->untracked;
            d->untracked -= freed;
        }
        d->total -= freed;
        sample(d, time_ns);
    }
    pthread_mutex_unlock(&t->lock);
}

uint64_t mem_trace_unknown_releases(const MemTrace *t) {
    return t ? __atomic_load_n(&t->unknown_releases, __ATOMIC_RELAXED) : 0;
}

typedef struct {
    int site;
    uint64_t bytes, count;
} LineOut;

static int by_bytes(const void *a, const void *b) {
    const LineOut *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return (x->site > y->site) - (x->site < y->site);
}

/* The largest MEM_TRACE_MAX_LINES lines of one kind of device d, appended to p. */
static bool add_lines(Profile *p, const DevTrace *d, int memory, ProfMemLineKind kind, LineOut *scratch) {
    size_t n = 0;
    for (size_t i = 0; i < d->active_count; i++) {
        const SiteStats *s = &d->sites[d->active[i]];
        uint64_t bytes = kind == PROF_MEM_LINE_PEAK ? s->peak_live : kind == PROF_MEM_LINE_OOM ? s->oom_live
                                                                                               : s->alloc_bytes;
        if (!bytes) continue;
        scratch[n++] = (LineOut){d->active[i] - 1, bytes, kind == PROF_MEM_LINE_ALLOCS ? s->alloc_count : 0};
    }
    if (n) qsort(scratch, n, sizeof *scratch, by_bytes); /* scratch may be NULL when n is 0 */
    if (n > MEM_TRACE_MAX_LINES) n = MEM_TRACE_MAX_LINES;
    if (p->memory_line_count + n > PROFILE_MAX_MEMORY_LINES) n = PROFILE_MAX_MEMORY_LINES - p->memory_line_count;
    if (!n) return true;
    ProfMemLine *grown = realloc(p->memory_lines, (p->memory_line_count + n) * sizeof *grown);
    if (!grown) return false;
    p->memory_lines = grown;
    for (size_t i = 0; i < n; i++)
        p->memory_lines[p->memory_line_count++] =
            (ProfMemLine){.memory = memory, .kind = kind, .site = scratch[i].site, .bytes = scratch[i].bytes,
                          .count = scratch[i].count};
    return true;
}

static bool device_to_profile(Profile *p, DevTrace *d, int process) {
    if ((!d->events && !d->oom) || p->memory_count >= PROFILE_MAX_MEMORIES) return true;
    take_peak_lines(d);
    if (d->oom_pending) take_oom_lines(d);
    ProfMemory m = {.process = process, .device = d->device, .source = PROF_MEM_SOURCE_CUPTI,
                    .events = d->events, .window_complete = true, .max_allocated = d->peak,
                    .max_reserved = d->peak, .peak_time_ns = d->peak_ns, .peak_allocated = d->peak,
                    .peak_reserved = d->peak, .oom_site = -1};
    if (d->oom) { /* the device's free memory is not known from a callback: 0 */
        m.oom = true;
        m.oom_time_ns = d->started && d->oom_ns > d->first_ns ? d->oom_ns - d->first_ns : 0;
        m.oom_bytes = d->oom_bytes;
        m.oom_allocated = d->oom_allocated;
        m.oom_site = d->oom_site;
    }
    size_t n = d->sample_count + (d->in_stretch ? 1 : 0);
    m.samples = n ? malloc(n * sizeof *m.samples) : NULL;
    if (n && !m.samples) return false;
    if (d->sample_count) memcpy(m.samples, d->samples, d->sample_count * sizeof *m.samples);
    if (d->in_stretch) m.samples[d->sample_count] = d->stretch; /* the stretch under way */
    m.sample_count = n;
    if (m.sample_count > PROFILE_MAX_MEMORY_SAMPLES) { /* the stretch under way, merged into the last */
        ProfMemSample *last = &m.samples[PROFILE_MAX_MEMORY_SAMPLES - 1];
        if (d->stretch.allocated > last->allocated) *last = d->stretch;
        m.sample_count = PROFILE_MAX_MEMORY_SAMPLES;
    }
    ProfMemory *grown = realloc(p->memories, (p->memory_count + 1) * sizeof *grown);
    LineOut *scratch = d->active_count ? malloc(d->active_count * sizeof *scratch) : NULL;
    if (!grown || (d->active_count && !scratch)) {
        if (grown) p->memories = grown;
        free(m.samples);
        free(scratch);
        return false;
    }
    p->memories = grown;
    p->memories[p->memory_count++] = m;
    int memory = (int)p->memory_count - 1;
    bool ok = add_lines(p, d, memory, PROF_MEM_LINE_PEAK, scratch) &&
              add_lines(p, d, memory, PROF_MEM_LINE_ALLOCS, scratch) &&
              (!d->oom || add_lines(p, d, memory, PROF_MEM_LINE_OOM, scratch));
    free(scratch);
    return ok;
}

bool mem_trace_to_profile(MemTrace *t, Profile *p, int process) {
    if (!t) return true;
    pthread_mutex_lock(&t->lock);
    size_t memories = p->memory_count, lines = p->memory_line_count;
    bool ok = true;
    for (size_t i = 0; ok && i < MEM_TRACE_MAX_DEVICES && t->devices[i].used; i++)
        ok = device_to_profile(p, &t->devices[i], process);
    if (!ok) {
        for (size_t i = memories; i < p->memory_count; i++) free(p->memories[i].samples);
        p->memory_count = memories;
        p->memory_line_count = lines;
    }
    pthread_mutex_unlock(&t->lock);
    return ok;
}
