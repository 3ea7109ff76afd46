/* Entry point of the injection library: InitializeInjection (called by the
 * CUDA driver at cuInit), the CUPTI callbacks, and the profile part written
 * at exit. See inject.h. */
#define _GNU_SOURCE
#include <cupti.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profiler/inject/inject.h"
#include "profiler/profile_json.h"
#include "profiler/inject/source_metrics.h"

#define BUFFER_SIZE (8u << 20)
/* Correlation ids count every CUDA API call, not just launches (PyTorch
 * makes several per kernel), and an activity buffer reaches us only when it
 * is full, tens of thousands of records later: the table must span all the
 * ids issued meanwhile, or a record finds its slot taken by a newer id and
 * loses its site. 2^16 slots lost 15% of a decoding loop's launches on the
 * H200 (samples/python/generate_text.py); 2^20 (8 MiB) spans a full buffer. */
#define CORRELATION_SLOTS (1u << 20)

Aggregator *inject_agg;
MemTrace *inject_mem;
char inject_note[512];
const char *inject_root;
size_t inject_root_len;

static CUpti_SubscriberHandle subscriber;
static pid_t owner_pid;              /* forked children must not write */
static uint64_t start_ns;
static char *parts_dir;
static char *start_error;            /* why recording could not start */
static bool metrics_mode;            /* a --source-metrics run: line metrics of one kernel only */

/* ---- paths */
bool inject_path_is_user(const char *path) {
    if (!inject_root || strncmp(path, inject_root, inject_root_len) != 0) return false;
    if (path[inject_root_len] != '/') return false;
    return !strstr(path, "/site-packages/") && !strstr(path, "/dist-packages/");
}

const char *inject_relative(const char *path) {
    return path + inject_root_len + 1;
}

/* ---- correlation id -> site and trace window, lock-free: one 64-bit slot
 * per id modulo the table size (an id is looked up soon after it is
 * written): the id, then the window tag (12 bits) and site + 1 (20 bits;
 * sites stay under MAX_SITES in aggregate.c). */
static uint64_t correlation_slots[CORRELATION_SLOTS];
/* ... and when the host's call began (CUPTI's clock), written before the
 * slot so that a reader who finds the id finds its time too, or a later one */
static uint64_t correlation_launch[CORRELATION_SLOTS];

#define SITE_BITS 20u
#define SITE_MASK ((1u << SITE_BITS) - 1u)

void correlation_put(uint32_t correlation, int site, uint32_t window, uint64_t launch_ns) {
    uint32_t low = (window << SITE_BITS) | ((uint32_t)(site + 1) & SITE_MASK);
    uint64_t packed = ((uint64_t)correlation << 32) | low;
    uint32_t slot = correlation & (CORRELATION_SLOTS - 1);
    __atomic_store_n(&correlation_launch[slot], launch_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&correlation_slots[slot], packed, __ATOMIC_RELEASE);
}

int correlation_get(uint32_t correlation, uint32_t *window, uint64_t *launch_ns) {
    uint32_t slot = correlation & (CORRELATION_SLOTS - 1);
    uint64_t packed = __atomic_load_n(&correlation_slots[slot], __ATOMIC_ACQUIRE);
    if ((uint32_t)(packed >> 32) != correlation) {
        if (window) *window = 0;
        if (launch_ns) *launch_ns = 0;
        return -1;
    }
    if (window) *window = (uint32_t)packed >> SITE_BITS;
    if (launch_ns) *launch_ns = __atomic_load_n(&correlation_launch[slot], __ATOMIC_RELAXED);
    return (int)((uint32_t)packed & SITE_MASK) - 1;
}

/* ---- call sites */
static __thread int outer_site = -1;   /* site of the outermost API call running on this thread */
static __thread uint32_t outer_window; /* its trace window tag (trace_sampling.c) */
static __thread bool outer_traced;     /* whether its device work is traced */
static __thread uint64_t outer_callback_ns; /* the callbacks' own time on it so far */
static __thread int api_nesting;       /* API calls running on this thread, nested */
static __thread uint64_t api_enter_ns; /* when the outermost one began */
static __thread uint64_t api_enter_cupti; /* the same on CUPTI's clock (work and syncs only; else 0) */
static __thread uint32_t api_epoch;    /* the callbacks' epoch this thread's nesting belongs to */
static uint32_t callbacks_epoch;       /* raised each time the callbacks come back on (inject_set_dormant) */

int callsite_current(void) {
    int site = -1;
    if (native_sites_wanted()) site = native_site();
    if (site < 0 && python_sites_active()) site = python_site();
    return site;
}

/* ---- which API calls we watch */
/* WATCH_SITE: only the call site, for the allocations of CUPTI's memory
 * records (--memory) that WATCH_ALLOC does not read */
typedef enum { WATCH_NONE, WATCH_WORK, WATCH_SYNC, WATCH_ALLOC, WATCH_SITE } Watch;

static bool memory_wanted; /* `advise profile --memory` */

static Watch classify(const char *name) {
    while (*name == '_') name++; /* CUDA 13 launches <<<>>> through __cudaLaunchKernel */
    static const char *const work[] = {"cudaLaunch", "cudaMemcpy", "cudaMemset", "cudaGraphLaunch",
                                       "cuLaunch", "cuMemcpy", "cuMemset", "cuGraphLaunch", NULL};
    static const char *const sync[] = {"cudaDeviceSynchronize", "cudaStreamSynchronize",
                                       "cudaEventSynchronize", "cudaStreamWaitEvent", "cuCtxSynchronize",
                                       "cuStreamSynchronize", "cuEventSynchronize", "cuStreamWaitEvent",
                                       NULL};
    static const char *const alloc[] = {"cudaMalloc", "cudaHostAlloc", "cuMemAlloc", "cuMemHostAlloc",
                                        NULL};
    for (int i = 0; work[i]; i++)
        if (strncmp(name, work[i], strlen(work[i])) == 0) return WATCH_WORK;
    for (int i = 0; sync[i]; i++)
        if (strncmp(name, sync[i], strlen(sync[i])) == 0) return WATCH_SYNC;
    for (int i = 0; alloc[i]; i++)
        if (strncmp(name, alloc[i], strlen(alloc[i])) == 0) {
            /* cudaMallocArray/Pitch/3D have other parameter layouts */
            if (strstr(name, "Array") || strstr(name, "Pitch") || strstr(name, "3D") ||
                strstr(name, "FromPool") || strstr(name, "Mipmapped"))
                return memory_wanted ? WATCH_SITE : WATCH_NONE;
            return WATCH_ALLOC;
        }
    if (memory_wanted && strncmp(name, "cuMemCreate", 11) == 0) return WATCH_SITE;
    return WATCH_NONE;
}

static ProfSyncKind sync_kind_of(const char *name) {
    if (strstr(name, "StreamWaitEvent")) return PROF_SYNC_STREAM_WAIT_EVENT;
    if (strstr(name, "EventSynchronize")) return PROF_SYNC_EVENT;
    if (strstr(name, "StreamSynchronize")) return PROF_SYNC_STREAM;
    if (strstr(name, "DeviceSynchronize") || strstr(name, "CtxSynchronize")) return PROF_SYNC_CONTEXT;
    return PROF_SYNC_UNKNOWN;
}

static ProfMemKind alloc_kind(const char *name) {
    if (strstr(name, "Host")) return PROF_MEM_PINNED;
    if (strstr(name, "Managed")) return PROF_MEM_MANAGED;
    return PROF_MEM_DEVICE;
}

/* A call in which the host may have waited for the GPU (the critical path,
 * agg_host_wait): a synchronization other than cudaStreamWaitEvent (which
 * makes a stream wait, not the host), and a launch or copy call long enough
 * to have blocked (a synchronous or pageable copy, a full launch queue). */
#define BLOCKING_CALL_NS 20000u

static bool host_waited(Watch watch, const char *name, uint64_t took) {
    if (watch == WATCH_SYNC) return !strstr(name, "WaitEvent");
    return watch == WATCH_WORK && took >= BLOCKING_CALL_NS;
}

/* Every allocation call we watch takes (pointer out, size, ...). */
typedef struct {
    void *out;
    size_t size;
} AllocParams;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* What each callback id is, classified once when callbacks are enabled: a
 * Watch, with GRAPH_LAUNCH set on the launches of a whole CUDA graph. */
#define GRAPH_LAUNCH 0x80u
static uint8_t runtime_watch[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static uint8_t driver_watch[CUPTI_DRIVER_TRACE_CBID_SIZE];

static uint8_t watch_entry(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE) return runtime_watch[cbid];
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE) return driver_watch[cbid];
    return WATCH_NONE;
}

static Watch watch_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    return (Watch)(watch_entry(domain, cbid) & ~GRAPH_LAUNCH);
}

static bool is_graph_launch(const char *name) {
    while (*name == '_') name++;
    return strncmp(name, "cudaGraphLaunch", 15) == 0 || strncmp(name, "cuGraphLaunch", 13) == 0;
}

/* The runtime calls the driver: a synchronization or an allocation is a
 * runtime callback around a driver one (launches are watched in the driver
 * domain alone, launch_domain_wanted). Only the outermost call on a thread
 * finds the site and takes the time; a nested one just shares its site, so
 * a call pays for one site lookup and two clock reads. */
static void on_api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData *cb) {
    if (cb->callbackSite == CUPTI_API_ENTER) {
        uint32_t epoch = __atomic_load_n(&callbacks_epoch, __ATOMIC_RELAXED);
        if (api_epoch != epoch) { /* the callbacks were off meanwhile: an exit may have gone unseen */
            api_epoch = epoch;
            api_nesting = 0;
        }
        if (api_nesting++ > 0) {
            correlation_put(cb->correlationId, outer_site, outer_window, api_enter_cupti);
            return;
        }
        uint64_t entered = now_ns();
        uint8_t entry = watch_entry(domain, cbid);
        Watch watch = (Watch)(entry & ~GRAPH_LAUNCH);
        outer_window = 0;
        outer_traced = false;
        /* the critical path compares when the host asked with when the GPU ran dry */
        api_enter_cupti = 0;
        if ((watch == WATCH_WORK || watch == WATCH_SYNC) && cuptiGetTimestamp(&api_enter_cupti) != CUPTI_SUCCESS)
            api_enter_cupti = 0;
        if (watch == WATCH_WORK) outer_window = trace_sampling_on_launch(entry & GRAPH_LAUNCH, &outer_traced);
        outer_site = callsite_current();
        correlation_put(cb->correlationId, outer_site, outer_window, api_enter_cupti);
        api_enter_ns = now_ns();
        outer_callback_ns = api_enter_ns - entered;
        return;
    }
    if (api_epoch != __atomic_load_n(&callbacks_epoch, __ATOMIC_RELAXED)) {
        /* the exit of a call that began while the callbacks were off: its entry was never seen */
        api_epoch = __atomic_load_n(&callbacks_epoch, __ATOMIC_RELAXED);
        api_nesting = 0;
        return;
    }
    if (api_nesting == 0) return; /* an exit whose entry came before we subscribed */
    if (--api_nesting > 0) return;
    uint64_t exited = now_ns();
    uint64_t took = exited - api_enter_ns;
    api_time_add(cb->functionName, took);
    Watch watch = watch_of(domain, cbid);
    if (watch == WATCH_ALLOC && cb->functionParams) {
        const AllocParams *p = cb->functionParams;
        ProfMemKind kind = alloc_kind(cb->functionName);
        agg_alloc(inject_agg, kind, p->size, took, outer_site);
        /* --memory: a device allocation that failed for lack of memory (cudaErrorMemoryAllocation and
         * CUDA_ERROR_OUT_OF_MEMORY are both 2) */
        if (inject_mem && kind == PROF_MEM_DEVICE && cb->functionReturnValue &&
            *(const int *)cb->functionReturnValue == 2) {
            uint32_t device = 0;
            uint64_t when = 0;
            if (cuptiGetDeviceId(cb->context, &device) == CUPTI_SUCCESS && cuptiGetTimestamp(&when) == CUPTI_SUCCESS)
                mem_trace_oom(inject_mem, device, p->size, when, outer_site);
        }
    }
    /* the host's wait: what CUPTI's SYNCHRONIZATION record measured, without its cost */
    if (watch == WATCH_SYNC) agg_sync(inject_agg, sync_kind_of(cb->functionName), took, outer_site);
    if (host_waited(watch, cb->functionName, took) && api_enter_cupti) {
        uint64_t left = 0;
        if (cuptiGetTimestamp(&left) == CUPTI_SUCCESS) agg_host_wait(inject_agg, api_enter_cupti, left);
    }
    if (watch == WATCH_WORK) trace_sampling_launch_time(outer_traced, took, outer_callback_ns + (now_ns() - exited));
    outer_site = -1;
}

static void CUPTIAPI on_api(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                            const void *data) {
    (void)userdata;
    /* --steps: once the detach began, nothing; until then the detach waits for us */
    if (!recording_callback_enter()) return;
    on_api_call(domain, cbid, data);
    recording_callback_leave();
}

/* Launches, copies and memsets are watched in the driver's API domain only.
 * A runtime call (cudaLaunchKernel) makes a driver call (cuLaunchKernel) for
 * its work, and libraries such as cuBLAS launch through the driver
 * directly, so the driver domain sees every launch, and each device record
 * carries that driver call's correlation id. Watching the runtime domain
 * too made CUPTI call us four times per launch instead of two: on the H200,
 * a small transformer's training step cost 4.6-8.1% more under the profiler
 * with both domains and 0.5-1.5% with the driver's alone, with the same
 * launches, copies and sites recorded (bench/overhead, 2026-12-03).
 * ADVISE_PROFILE_LAUNCH_DOMAIN=both or runtime (bench/overhead's launch:
 * variants) watches them as before, or in the runtime domain alone, which
 * misses the libraries' own launches. */
static bool launch_domain_wanted(CUpti_CallbackDomain domain) {
    const char *only = getenv("ADVISE_PROFILE_LAUNCH_DOMAIN");
    if (only && strcmp(only, "both") == 0) return true;
    if (only && strcmp(only, "runtime") == 0) return domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    return domain == CUPTI_CB_DOMAIN_DRIVER_API;
}

static void enable_watched(CUpti_CallbackDomain domain, CUpti_CallbackId limit, uint8_t *table) {
    bool launches = launch_domain_wanted(domain);
    for (CUpti_CallbackId id = 1; id < limit; id++) {
        const char *name = NULL;
        if (cuptiGetCallbackName(domain, id, &name) != CUPTI_SUCCESS || !name) continue;
        Watch w = classify(name);
        if (w == WATCH_WORK && !launches) w = WATCH_NONE;
        table[id] = (uint8_t)(w | (w == WATCH_WORK && is_graph_launch(name) ? GRAPH_LAUNCH : 0));
        if (w != WATCH_NONE) cuptiEnableCallback(1, subscriber, domain, id);
    }
}

/* The alternation of bench/overhead (ADVISE_PROFILE_ALTERNATE, step_marks.c):
 * dormant, CUPTI calls none of our callbacks and traces no device work, so
 * the same process runs with and without the profiler's per-launch cost. */
void inject_set_dormant(bool dormant) {
    if (!dormant) __atomic_add_fetch(&callbacks_epoch, 1, __ATOMIC_RELAXED);
    for (CUpti_CallbackId id = 1; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; id++)
        if (runtime_watch[id] != WATCH_NONE) cuptiEnableCallback(!dormant, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
    for (CUpti_CallbackId id = 1; id < CUPTI_DRIVER_TRACE_CBID_SIZE; id++)
        if (driver_watch[id] != WATCH_NONE) cuptiEnableCallback(!dormant, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
    trace_sampling_set_dormant(dormant);
}

/* ---- activity buffers */
static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = aligned_alloc(8, BUFFER_SIZE);
    *size = *buffer ? BUFFER_SIZE : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
    (void)ctx;
    (void)stream;
    (void)size;
    if (valid) records_consume(buffer, valid);
    free(buffer);
}

/* ---- the process's identity */
static int env_int(const char *a, const char *b) {
    const char *v = getenv(a);
    if (!v && b) v = getenv(b);
    if (!v || !*v) return -1;
    char *end;
    long n = strtol(v, &end, 10);
    return *end || n < 0 || n > INT32_MAX ? -1 : (int)n;
}

/* The fields every profile file carries; the parent replaces them. */
static bool label(Profile *p) {
    return profile_set_labels(p, "part", "cupti", "advise-inject");
}

/* What --steps N left out of this process's profile, or that it left out
 * nothing; the same words in every process, so that a run's processes
 * (ranks) that did the same say it once. */
static void window_note(char *out, size_t size) {
    unsigned long long n = (unsigned long long)recording_window_steps();
    if (recording_window_finished())
        snprintf(out, size,
                 "--steps %llu: recorded until the end of the process's optimizer step %llu, then the profiler "
                 "detached and the rest of the run went without it",
                 n, n);
    else if (recording_detached())
        snprintf(out, size,
                 "--steps %llu: after optimizer step %llu the profiler stopped recording but could not detach from "
                 "CUPTI (a callback did not return), so the rest of the run still paid part of its cost",
                 n, n);
    else
        snprintf(out, size,
                 "--steps %llu: the process made fewer optimizer steps (torch.optim) outside CUDA graph captures, so "
                 "all of its run was recorded",
                 n);
}

static void write_part(void) {
    if (getpid() != owner_pid || !parts_dir) return;
    ProfProcess proc = {.pid = getpid(),
                        .rank = env_int("RANK", "OMPI_COMM_WORLD_RANK"),
                        .local_rank = env_int("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"),
                        .world_size = env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"),
                        .wall_ns = now_ns() - start_ns,
                        .error = start_error};
    char message[1024] = "";
    size_t dropped = 0;
    if (recording_window_finished()) {
        dropped = recording_window_dropped(); /* CUPTI is gone: asking now would attach it again */
        proc.wall_ns = recording_window_wall_ns(); /* what the profile covers */
    } else if (start_error || cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) != CUPTI_SUCCESS) {
        dropped = 0;
    }
    /* the notes, joined: dropped records, the injection's own note, what --steps left out */
    if (!start_error) {
        size_t used = 0;
        if (dropped) used += (size_t)snprintf(message, sizeof message, "CUPTI dropped %zu activity records", dropped);
        if (inject_note[0] && used < sizeof message)
            used += (size_t)snprintf(message + used, sizeof message - used, "%s%s", used ? "; " : "", inject_note);
        if (!metrics_mode && recording_window_steps() && used < sizeof message) {
            char window[320];
            window_note(window, sizeof window);
            snprintf(message + used, sizeof message - used, "%s%s", used ? "; " : "", window);
        }
        if (message[0]) proc.error = message;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/part-%ld.json", parts_dir, (long)getpid());
    if (!start_error && !metrics_mode) trace_sampling_fill(&proc.calibration);
    if (inject_agg && !metrics_mode) step_marks_flush(inject_agg);
    Profile *p = inject_agg ? agg_to_profile(inject_agg, &proc) : NULL;
    if (p && inject_mem && !mem_trace_to_profile(inject_mem, p, 0))
        fprintf(stderr, "advise: --memory: out of memory while writing the device memory of process %ld\n",
                (long)getpid());
    if (p && metrics_mode) {
        source_metrics_finish(p);
        const char *msg = source_metrics_message();
        if (msg && p->process_count == 1 && !p->processes[0].error) p->processes[0].error = strdup(msg);
    }
    char *err = NULL;
    if (!p || !label(p) || !profile_write_file(p, PROFILE_PART, path, &err)) {
        /* Leave at least the reason, so that `advise profile` can say it. */
        char msg[1024];
        snprintf(msg, sizeof msg, "could not write the profile of process %ld: %.900s", (long)getpid(),
                 err ? err : "out of memory");
        profile_free(p);
        Aggregator *empty = agg_new();
        proc.error = msg;
        p = empty ? agg_to_profile(empty, &proc) : NULL;
        agg_free(empty);
        char *err2 = NULL;
        if (!p || !label(p) || !profile_write_file(p, PROFILE_PART, path, &err2)) fprintf(stderr, "advise: %s\n", msg);
        free(err2);
    }
    free(err);
    profile_free(p);
}

static void at_exit(void) {
    if (getpid() != owner_pid) return;
    if (!start_error) {
        /* after --steps detached CUPTI, a call would attach it again; its records were flushed then */
        if (!recording_window_finished()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        /* nothing new is attributed after this point */
        api_times_flush_all();
    }
    write_part();
}

static void after_fork_in_child(void) {
    /* A forked child cannot use the parent's CUDA context; it writes nothing.
     * (A child that execs loads this library afresh.) */
    owner_pid = 0;
    recording_window_forget();
}

static void fail(const char *what, CUptiResult r) {
    const char *msg = NULL;
    cuptiGetResultString(r, &msg);
    char buf[512];
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
        snprintf(buf, sizeof buf,
                 "CUPTI is already in use by another profiler (torch.profiler, Nsight Systems or Nsight "
                 "Compute); nothing was recorded");
    else
        snprintf(buf, sizeof buf, "CUPTI could not start (%s: %s); nothing was recorded", what,
                 msg ? msg : "unknown error");
    if (!start_error) start_error = strdup(buf);
}

/* Synchronizations are timed by the callbacks (on_api), not by CUPTI's
 * SYNCHRONIZATION records, and CUPTI's OVERHEAD records are off unless asked
 * for: on the H200 either kind cost the launching thread more per launch
 * than tracing the kernels did (bench/overhead, `act:` variants). */
static const CUpti_ActivityKind activity_kinds[] = {
    CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_OVERHEAD};

static const char *activity_word(CUpti_ActivityKind kind) {
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return "kernels";
    case CUPTI_ACTIVITY_KIND_MEMCPY: return "memcpy";
    case CUPTI_ACTIVITY_KIND_MEMSET: return "memset";
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return "overhead";
    default: return NULL;
    }
}

/* Is an activity kind in the comma-separated list (when there is none:
 * every kind but OVERHEAD)? */
static bool activity_wanted(const char *list, CUpti_ActivityKind kind) {
    const char *word = activity_word(kind);
    if (!word) return true;
    if (!list) return kind != CUPTI_ACTIVITY_KIND_OVERHEAD;
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return true;
    return false;
}

__attribute__((visibility("default"))) int InitializeInjection(void) {
    static int done;
    if (done++) return 1;
    parts_dir = getenv("ADVISE_PROFILE_PARTS_DIR");
    const char *root = getenv("ADVISE_PROJECT_ROOT");
    if (!parts_dir || !*parts_dir) {
        fprintf(stderr, "advise: libadvise_inject was loaded without `advise profile`; nothing is recorded\n");
        return 1;
    }
    static char root_buf[PATH_MAX];
    if (root && realpath(root, root_buf)) {
        inject_root = root_buf;
        inject_root_len = strlen(root_buf);
        if (inject_root_len == 1) inject_root_len = 0; /* "/" */
    }
    owner_pid = getpid();
    start_ns = now_ns();
    inject_agg = agg_new();
    if (inject_agg) agg_track_critical_path(inject_agg);
    pthread_atfork(NULL, NULL, after_fork_in_child);
    atexit(at_exit);
    if (!inject_agg) {
        start_error = strdup("out of memory");
        return 1;
    }

    if (source_metrics_target()) {
        metrics_mode = true;
        source_metrics_start(&subscriber, &start_error);
        return 1;
    }
    CUptiResult r = cuptiSubscribe(&subscriber, on_api, NULL);
    if (r != CUPTI_SUCCESS) {
        fail("cuptiSubscribe", r);
        return 1;
    }
    /* One buffer for all threads, not one per thread (CUPTI's default): with
     * per-thread buffers a thread's records (PyTorch's autograd thread runs
     * the backward pass) arrive whole buffers late, and the busy-time sweep
     * (aggregate.c) lost 31% of a training loop's busy time on the H200. */
    uint8_t per_thread = 0;
    size_t attr_size = sizeof per_thread;
    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &attr_size, &per_thread);
    if ((r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS) {
        fail("cuptiActivityRegisterCallbacks", r);
        return 1;
    }
    /* ADVISE_PROFILE_ACTIVITY=kernels,sync,...: only these kinds (bench/overhead
     * measures what each costs); the device record is always wanted */
    const char *kinds = getenv("ADVISE_PROFILE_ACTIVITY");
    for (size_t i = 0; i < sizeof activity_kinds / sizeof *activity_kinds; i++) {
        if (!activity_wanted(kinds, activity_kinds[i])) continue;
        if ((r = cuptiActivityEnable(activity_kinds[i])) != CUPTI_SUCCESS &&
            activity_kinds[i] != CUPTI_ACTIVITY_KIND_OVERHEAD) {
            fail("cuptiActivityEnable", r);
            return 1;
        }
    }
    /* --memory: device memory over time from CUDA's own allocations (every
     * process; the parent keeps PyTorch's tensor-level entry where there is one) */
    const char *memory = getenv("ADVISE_PROFILE_MEMORY");
    if (memory && *memory) {
        memory_wanted = true;
        inject_mem = mem_trace_new();
        if (inject_mem && (r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2)) != CUPTI_SUCCESS) {
            const char *msg = NULL;
            cuptiGetResultString(r, &msg);
            snprintf(inject_note, sizeof inject_note, "--memory: CUPTI's memory activity could not start (%s); "
                     "cudaMalloc and cudaFree are not recorded", msg ? msg : "unknown error");
            mem_trace_free(inject_mem);
            inject_mem = NULL;
        }
    }
    /* ADVISE_PROFILE_SITES=0: activity only, no call sites and no API times
     * (the least overhead; see docs/profiling.md). Without the callbacks
     * nothing sees the launches, so everything is traced. */
    const char *sites = getenv("ADVISE_PROFILE_SITES");
    if (sites && strcmp(sites, "0") == 0) return 1;
    /* --steps (never with --memory, whose timeline needs the whole run: the driver refuses both) */
    if (!memory_wanted) recording_window_start(subscriber, start_ns);
    trace_sampling_start(activity_wanted(kinds, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                         activity_wanted(kinds, CUPTI_ACTIVITY_KIND_MEMCPY),
                         activity_wanted(kinds, CUPTI_ACTIVITY_KIND_MEMSET));
    enable_watched(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, runtime_watch);
    enable_watched(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, driver_watch);
    native_sites_start();
    python_sites_start();
    /* ADVISE_PROFILE_ASLEEP=1 (bench/public/overhead.py's asleep variants):
     * attached, subscribed and hooked, but dormant from the start, so that
     * runs across processes show what the profiler costs before any of its
     * callbacks or tracing does (which ADVISE_PROFILE_ALTERNATE cannot: its
     * dormant blocks keep all that on). */
    const char *asleep = getenv("ADVISE_PROFILE_ASLEEP");
    if (asleep && strcmp(asleep, "1") == 0) inject_set_dormant(true);
    return 1;
}
