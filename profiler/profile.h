/* The profile model: what one `advise profile` run (or one imported
 * torch.profiler trace) measured, aggregated and keyed by source line.
 *
 * Plain C structs, no CUPTI and no JSON here. profile_json.h reads and writes
 * them (format documented in profiler/FORMAT.md, schema in
 * profiler/profile.schema.json); aggregate.h builds them from activity
 * records. Every index field refers into one of the Profile's arrays;
 * -1 means "none". All times are nanoseconds. */
#ifndef ADVISE_PROFILE_H
#define ADVISE_PROFILE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROFILE_FORMAT "advise-profile"
#define PROFILE_VERSION 1

/* Count, total, min, median and max of one measured quantity. The median is
 * exact up to 31 samples (RESERVOIR in aggregate.c) and a reservoir estimate beyond. */
typedef struct {
    uint64_t count;
    uint64_t total_ns;
    uint64_t min_ns;
    uint64_t median_ns;
    uint64_t max_ns;
} ProfStats;

/* How one process was traced, and what the profiler cost it per launch
 * (profiler/inject/trace_sampling.c). All zero when unknown (imported
 * traces, profiles written before it existed). After a prefix traced in
 * full, one window of device work in trace_every was traced and each of its
 * records counted trace_every times: kernel and op counts and totals, busy
 * time and gap weights are then estimates. The launch figures let rules take
 * the profiler's own cost out of the idle time they measured. */
typedef struct {
    uint32_t trace_every;            /* 1: every launch traced; 0: unknown */
    uint64_t launches;               /* device work calls (launches, copies, memsets) seen */
    uint64_t traced_launches, traced_launch_api_ns;     /* host time inside traced calls */
    uint64_t untraced_launches, untraced_launch_api_ns; /* ... and inside untraced ones */
    uint64_t callback_ns;            /* the profiler's own callback time on those calls */
} ProfCalibration;

typedef enum {
    PROF_PHASE_UNKNOWN,     /* no steps recorded */
    PROF_PHASE_FIRST,       /* start-up and the first step */
    PROF_PHASE_WARMUP,
    PROF_PHASE_STEADY,
    PROF_PHASE_SLOW,
    PROF_PHASE_AFTER,
    PROF_PHASE_COUNT
} ProfPhase;

/* The training steps of one process (profiler/step_phases.c): the ends of
 * its optimizer steps (PyTorch's torch.optim step hook), on the same clock as
 * its device work, split into phases. The first phase runs from the
 * process's first device activity to the end of the first step (start-up and
 * the first step's warm-up); then leading steps slower than 1.5x the median
 * (warm-up), the steady steps, the other slow steps (evaluation, checkpoints,
 * logging between steps), and what follows the last step. All zero when
 * unknown (no optimizer steps, imported traces, older profiles). */
typedef struct {
    uint64_t count;                  /* steps of the first optimizer that stepped; 0: none recorded */
    uint64_t median_ns;              /* the median step, over the steps recorded */
    uint64_t first_ns;               /* first device activity to the end of the first step */
    uint64_t warmup_steps, warmup_ns;
    uint64_t steady_steps, steady_ns;
    uint64_t slow_steps, slow_ns;    /* slow steps after the warm-up, whole */
    uint64_t after_ns;               /* the end of the last step to the last device activity */
    /* The GPU's idle time in each phase (ProfPhase; summed over the
     * process's devices) and the device activities (kernels, copies,
     * memsets) that started in it; estimates where tracing was sampled. Not
     * known (all 0) in profiles written before they existed. */
    bool phase_idle_known;
    uint64_t idle_ns[PROF_PHASE_COUNT];
    uint64_t activities[PROF_PHASE_COUNT];
} ProfSteps;


const char *prof_phase_name(ProfPhase phase); /* "first", ..., NULL for unknown */
int prof_phase_from_name(const char *s);      /* -1 when unknown */

/* One process that took part in the run (several with child processes or
 * distributed launchers). rank/world_size are -1 when not distributed. */
typedef struct {
    int64_t pid;
    int rank;
    int local_rank;
    int world_size;
    uint64_t wall_ns;       /* from CUDA start-up to exit in this process (--steps: to the detach) */
    char *error;            /* why nothing (or not everything) was recorded, or NULL */
    ProfCalibration calibration;
    ProfSteps steps;
    /* the host's time waiting for the GPU (FORMAT.md host_wait_ns): all that
     * faster GPU work can give back; unknown in imports and older profiles */
    bool host_wait_known;
    uint64_t host_wait_ns;
} ProfProcess;

typedef struct {
    int process;
    uint32_t id;            /* CUDA device ordinal inside its process */
    char *name;
    uint32_t sm_count;
    uint32_t cc_major, cc_minor;
    uint64_t memory_bytes;
    uint64_t bandwidth_bytes_per_s;   /* peak global-memory bandwidth */
    uint32_t max_warps_per_sm;
    uint32_t max_blocks_per_sm;
    uint32_t max_registers_per_sm;
    uint32_t max_shared_per_sm;
    uint32_t max_registers_per_block;
    uint32_t max_shared_per_block;
    uint32_t max_threads_per_block;
    uint32_t l2_bytes;
} ProfDevice;

/* A source file that holds at least one call site. path is relative to the
 * project root, '/'-separated, never absolute and never with "..". */
typedef struct {
    char *path;
    char *sha256;           /* hex of the file's content when profiled, or NULL if unreadable */
} ProfFile;

/* One native stack frame not yet resolved to a line: a return address as an
 * ELF virtual address inside module (an absolute path on the profiled
 * machine). Only the per-process parts carry these; `advise profile`
 * resolves them with DWARF line info before it writes the final profile. */
typedef struct {
    char *module;
    uint64_t address;
} ProfFrame;

/* The source line in the user's code that caused some GPU work. */
typedef struct {
    int file;               /* into files; -1 while unresolved (frames set) */
    uint32_t line;          /* 1-based; 0 while unresolved */
    char *function;         /* enclosing function, or NULL */
    bool function_level;    /* only the function is known (imported traces): line is its first line */
    ProfFrame *frames;      /* parts only: innermost first, in user modules */
    size_t frame_count;
} ProfSite;

/* How much of some GPU work's time lay on the run's critical path (FORMAT.md,
 * `critical_ns`): the part of its time after which the GPU went on without
 * waiting for the host, or after which the host was waiting for the GPU.
 * Shortening the rest would only lengthen an idle gap. known is false when
 * the profile did not measure it (imported traces, older profiles). */
typedef struct {
    bool known;
    uint64_t ns;            /* at most stats.total_ns */
} CriticalTime;

/* An operation's calls in its process's steady training steps (FORMAT.md,
 * `steady_count`, `steady_idle_ns`): how many, and how long the GPU sat idle
 * right before their work (gaps under 1 ms: the GPU waiting for them to be
 * launched). known is false where the steps are not known (no optimizer
 * steps, imported traces, older profiles); idle_known where the profile
 * has the idle time too. */
typedef struct {
    bool known, idle_known;
    uint64_t count;         /* at most stats.count */
    uint64_t idle_ns;
} SteadyCount;

typedef struct {
    int process;
    int device;             /* into devices, or -1 */
    char *name;             /* demangled */
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t registers;            /* per thread */
    uint32_t static_shared;        /* bytes per block */
    uint32_t dynamic_shared;       /* bytes per block */
    uint32_t local_per_thread;     /* bytes; > 0 means spills or local arrays */
    ProfStats stats;
    CriticalTime critical;
} ProfKernel;

typedef enum {
    PROF_OP_LAUNCH,   /* kernel launches of one kernel from one site */
    PROF_OP_MEMCPY,
    PROF_OP_MEMSET,
    PROF_OP_SYNC,
    PROF_OP_ALLOC,    /* device, pinned or managed allocations (host API time) */
    PROF_OP_KIND_COUNT
} ProfOpKind;

typedef enum {
    PROF_COPY_UNKNOWN, PROF_COPY_HTOD, PROF_COPY_DTOH, PROF_COPY_DTOD,
    PROF_COPY_HTOH, PROF_COPY_PTOP, PROF_COPY_KIND_COUNT
} ProfCopyKind;

typedef enum {
    PROF_MEM_UNKNOWN, PROF_MEM_PAGEABLE, PROF_MEM_PINNED, PROF_MEM_DEVICE,
    PROF_MEM_MANAGED, PROF_MEM_KIND_COUNT
} ProfMemKind;

typedef enum {
    PROF_SYNC_UNKNOWN, PROF_SYNC_EVENT, PROF_SYNC_STREAM_WAIT_EVENT,
    PROF_SYNC_STREAM, PROF_SYNC_CONTEXT, PROF_SYNC_KIND_COUNT
} ProfSyncKind;

/* What happened at one call site, aggregated. For LAUNCH, kernel says which
 * kernel and stats are its GPU durations; for MEMCPY/MEMSET the GPU
 * durations and bytes; for SYNC the time the host waited; for ALLOC the
 * host API time and bytes requested. */
typedef struct {
    ProfOpKind kind;
    int process;
    int site;               /* into sites, or -1 when no user frame was found */
    int kernel;             /* LAUNCH: into kernels */
    ProfCopyKind copy;      /* MEMCPY */
    ProfMemKind src, dst;   /* MEMCPY; dst alone for MEMSET and ALLOC */
    ProfSyncKind sync;      /* SYNC */
    uint64_t bytes;         /* total over all calls */
    ProfStats stats;
    CriticalTime critical;  /* LAUNCH, MEMCPY, MEMSET */
    SteadyCount steady;     /* LAUNCH, MEMCPY, MEMSET */
} ProfOp;

/* Host time spent inside one CUDA API function. */
typedef struct {
    int process;
    char *name;
    ProfStats stats;
} ProfApi;

/* CUPTI's own work and the driver's (lazy module loading, buffer flushes),
 * kept apart so that it never inflates kernel figures. */
typedef struct {
    int process;
    char *kind;
    ProfStats stats;
} ProfOverhead;

/* GPU busy/idle over one device's active span (first to last activity), and
 * how much of the busy time was communication (NCCL kernels, see
 * comm_kernels.h) and how much of that no compute overlapped. The last three
 * are 0 in profiles written before they existed. */
typedef struct {
    int process;
    int device;
    uint64_t span_ns;
    uint64_t busy_ns;       /* union of kernel, copy and memset intervals */
    uint64_t idle_ns;       /* span - busy */
    uint64_t compute_ns;    /* union of non-NCCL kernels, copies and memsets; <= busy */
    uint64_t comm_ns;       /* union of NCCL kernels; <= busy */
    uint64_t exposed_comm_ns; /* busy - compute: communication no compute overlapped; <= comm */
} ProfTimeline;

/* Idle gaps this long are the rules' gaps (PR003's, and those PR002 leaves
 * out of its idle time per launch): the profile keeps every one of them,
 * the largest PROF_LONG_GAPS_PER_DEVICE per device, and of the shorter ones
 * only enough to list each device's 16 largest gaps. */
#define PROF_LONG_GAP_NS 1000000u
#define PROF_LONG_GAPS_PER_DEVICE 4096u

/* One of the largest idle gaps: the GPU had nothing to do for duration_ns
 * after the work launched at before_site and until the work launched at
 * after_site arrived. start_ns is relative to the device's first activity. */
typedef struct {
    int process;
    int device;
    uint64_t start_ns;
    uint64_t duration_ns;
    int before_site;
    int after_site;
    uint32_t weight;        /* gaps it stands for: trace_every in a sampled window; 0 or 1: itself */
    ProfPhase phase;        /* the step phase it fell in; unknown without steps */
} ProfGap;

static inline uint64_t prof_gap_weight(const ProfGap *g) { return g->weight ? g->weight : 1; }

/* Per-instruction SASS metrics of one kernel, summed over the instructions
 * of one CUDA source line (`advise profile --source-metrics`; the kernel must
 * be built with -lineinfo). CUPTI measures one launch of one kernel per run,
 * so each entry covers `launches` launches (one per process that ran it).
 * "ideal" counts are what the same accesses would need if perfectly
 * coalesced (sectors) or free of bank conflicts (wavefronts). */
typedef struct {
    char *kernel;              /* demangled name of the kernel measured */
    int file;                  /* into files */
    uint32_t line;             /* 1-based */
    uint64_t launches;
    uint64_t instructions;     /* warp-level SASS instructions executed */
    uint64_t global_sectors, global_sectors_ideal;     /* 32-byte sectors of global loads and stores */
    uint64_t shared_wavefronts, shared_wavefronts_ideal;
    uint64_t local_sectors;    /* local memory: spills and local arrays */
    /* of `instructions`, those CUPTI mapped into a header outside the project
     * (bf16 conversions, intrinsics) and charged to this line, the nearest
     * project line of the same function (profiler/sass_lines.h) */
    uint64_t inlined_instructions;
} ProfLineMetrics;

/* Device memory (`advise profile --memory`, from PyTorch's allocator
 * history: profiler/python/advise_memory.py). One ProfMemory per process and
 * device; its lines say which source lines held or allocated the memory.
 * "Allocated" is memory in live tensors, "reserved" what the caching
 * allocator holds from cudaMalloc. The history is a ring of the latest
 * events: when window_complete is false it began after the run did, and a
 * peak before it is known only as max_allocated. */
typedef struct {
    uint64_t time_ns;       /* since the window's first event */
    uint64_t allocated, reserved;
} ProfMemSample;

/* Where a memory entry came from: PyTorch's allocator history (tensors), or
 * CUPTI's memory activity (cudaMalloc/cudaFree and friends: profiler/mem_trace.h,
 * for processes without a PyTorch entry; allocated = reserved = live bytes). */
typedef enum { PROF_MEM_SOURCE_TORCH, PROF_MEM_SOURCE_CUPTI, PROF_MEM_SOURCE_COUNT } ProfMemSource;

typedef struct {
    int process;
    uint32_t device;        /* CUDA ordinal inside its process */
    ProfMemSource source;   /* "source" in files; absent reads as torch */
    uint64_t events;        /* allocator events in the window */
    bool window_complete;
    uint64_t max_allocated, max_reserved;        /* PyTorch's own peaks over the run */
    uint64_t peak_time_ns, peak_allocated, peak_reserved; /* the highest allocated point of the window */
    uint64_t steps;         /* optimizer steps in the run */
    uint64_t steps_in_window;
    int64_t bytes_per_step; /* live memory's change per step over the window's last steps; 0 unknown */
    bool oom;               /* an allocation failed: */
    uint64_t oom_time_ns, oom_bytes, oom_device_free, oom_allocated;
    int oom_site;           /* the line that asked for it, or -1 */
    ProfMemSample *samples; /* memory over time, at most PROFILE_MAX_MEMORY_SAMPLES */
    size_t sample_count;
} ProfMemory;

typedef enum {
    PROF_MEM_LINE_PEAK,     /* live at the peak: bytes */
    PROF_MEM_LINE_GROWTH,   /* live memory rising step after step: bytes per step, count = steps measured */
    PROF_MEM_LINE_ALLOCS,   /* allocated in the window: bytes, count = allocations */
    PROF_MEM_LINE_OOM,      /* live when the allocation failed: bytes */
    PROF_MEM_LINE_KEPT,     /* live at the peak, allocated before the step that preceded it, freed later at
                             * site (the freeing line, not the allocating one): bytes, count = tensors */
    PROF_MEM_LINE_KIND_COUNT
} ProfMemLineKind;

typedef struct {
    int memory;             /* into memories */
    ProfMemLineKind kind;
    int site;               /* the allocating line (kept: the freeing line); -1: outside the project, or
                             * before recording began */
    uint64_t bytes, count;
    /* peak: the line that freed most of these bytes after the peak, and how many it freed; none
     * known when freed_bytes is 0 (freed_site is then meaningless: zeroed lines read as none) */
    uint64_t freed_bytes;
    int freed_site;
} ProfMemLine;

typedef struct {
    char *name;             /* what the user called the run */
    char *source;           /* "cupti" or "torch-profiler" */
    char *created;          /* ISO 8601 UTC */
    char *tool;             /* "advise 0.1.0" */
    char **command;         /* argv of the profiled command */
    size_t command_count;
    /* Entries dropped because a cap was reached (the file stays bounded). */
    uint64_t dropped_kernels, dropped_ops, dropped_sites;

    ProfProcess *processes; size_t process_count;
    ProfDevice *devices;    size_t device_count;
    ProfFile *files;        size_t file_count;
    ProfSite *sites;        size_t site_count;
    ProfKernel *kernels;    size_t kernel_count;
    ProfOp *ops;            size_t op_count;
    ProfApi *apis;          size_t api_count;
    ProfOverhead *overheads; size_t overhead_count;
    ProfTimeline *timelines; size_t timeline_count;
    ProfGap *gaps;          size_t gap_count;
    ProfLineMetrics *line_metrics; size_t line_metric_count;   /* optional in files; see FORMAT.md */
    ProfMemory *memories;   size_t memory_count;               /* optional in files */
    ProfMemLine *memory_lines; size_t memory_line_count;       /* optional in files */
} Profile;

/* Caps on what one profile may hold: the writer never exceeds them and the
 * reader rejects a file that does. */
#define PROFILE_MAX_FILE_BYTES   (64u << 20)
#define PROFILE_MAX_STRING       16384u
#define PROFILE_MAX_PROCESSES    1024u
#define PROFILE_MAX_DEVICES      4096u
#define PROFILE_MAX_FILES        20000u
#define PROFILE_MAX_SITES        100000u
#define PROFILE_MAX_KERNELS      20000u
#define PROFILE_MAX_OPS          200000u
#define PROFILE_MAX_APIS         4096u
#define PROFILE_MAX_OVERHEADS    1024u
#define PROFILE_MAX_GAPS         65536u
#define PROFILE_MAX_LINE_METRICS 100000u
#define PROFILE_MAX_MEMORIES     1024u
#define PROFILE_MAX_MEMORY_SAMPLES 4096u /* per memory */
#define PROFILE_MAX_MEMORY_LINES 65536u
#define PROFILE_MAX_COMMAND_ARGS 4096u
#define PROFILE_MAX_FRAMES       16u   /* per unresolved native site */

/* A Profile comes from profile_new (the adding helpers keep their indexes in
 * the same allocation) and goes back with profile_free. */
Profile *profile_new(void);
void profile_free(Profile *p);

/* Appending helpers: each returns the new element's index, or -1 when out
 * of memory. Strings are copied. */
int profile_add_file(Profile *p, const char *path);       /* dedups by path */
int profile_add_site(Profile *p, int file, uint32_t line, const char *function);  /* dedups */
/* As profile_add_site for a site known only by its function (function_level
 * set; imported traces); never merged with a line-level site. */
int profile_add_function_site(Profile *p, int file, uint32_t line, const char *function);
int profile_add_process(Profile *p, const ProfProcess *proc);
/* Process i's error (what it could not record, or left out on purpose) when
 * no earlier process of p has the same words; NULL otherwise: a run's ranks
 * that all say one thing say it once. */
const char *profile_process_error_first(const Profile *p, size_t i);
/* Adds m's counts to the entry for (m->kernel, m->file, m->line), creating it
 * when new. Returns its index, or -1 when out of memory. */
int profile_add_line_metrics(Profile *p, const ProfLineMetrics *m);
/* An unresolved native site (parts only); dedups by its frame list. */
int profile_add_native_site(Profile *p, const ProfFrame *frames, size_t count);

/* Fills each file's sha256 from its content under root (NULL when the file
 * cannot be read). */
void profile_hash_files(Profile *p, const char *root);

const char *prof_op_kind_name(ProfOpKind k);       /* "launch", "memcpy", ... */
/* Whether operations of this kind have a critical time (GPU work: launches, copies, memsets). */
bool prof_op_has_critical(ProfOpKind k);
const char *prof_copy_kind_name(ProfCopyKind k);   /* "HtoD", "DtoH", ... */
const char *prof_mem_kind_name(ProfMemKind k);     /* "pageable", "pinned", ... */
const char *prof_sync_kind_name(ProfSyncKind k);   /* "stream", "context", ... */
const char *prof_mem_line_kind_name(ProfMemLineKind k); /* "peak", "growth", "allocs", "oom" */
const char *prof_mem_source_name(ProfMemSource s);      /* "torch", "cupti" */
/* Inverse lookups; -1 when the name is unknown. */
int prof_op_kind_from_name(const char *s);
int prof_copy_kind_from_name(const char *s);
int prof_mem_kind_from_name(const char *s);
int prof_sync_kind_from_name(const char *s);
int prof_mem_line_kind_from_name(const char *s);
int prof_mem_source_from_name(const char *s);

/* A path is acceptable in a profile: relative, no "..", no empty or "."
 * components, no backslash or control characters, at most PROFILE_MAX_STRING. */
bool profile_path_ok(const char *path);

/* Concatenates src into dst (processes, devices, kernels, ops, ...) and
 * re-indexes; files and sites are deduplicated. Used to merge the parts that
 * the processes of one run wrote. False when out of memory. */
bool profile_append(Profile *dst, const Profile *src);

/* One kernel's figures summed over its launch configurations and processes
 * (the profile keeps one entry per configuration). */
typedef struct {
    const char *name;   /* points into the profile */
    uint64_t count, total_ns;
    uint64_t median_ns; /* of its most-launched configuration */
} ProfKernelTotal;
/* The profile's kernels by name, sorted by name; *count set. Heap, NULL when
 * the profile has none or memory runs out. */
ProfKernelTotal *profile_kernels_by_name(const Profile *p, size_t *count);

/* a + b, at most UINT64_MAX (sums of counts and durations) */
static inline uint64_t prof_add_u64(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }


/* Sets the labels every profile file carries (name, source, tool; created
 * is now, UTC), replacing what p held. False when out of memory. */
bool profile_set_labels(Profile *p, const char *name, const char *source, const char *tool);

/* After merging: drops the kernels and operations that cost least until the
 * profile is within PROFILE_MAX_KERNELS and PROFILE_MAX_OPS, counting them
 * in dropped_*. False when out of memory. */
bool profile_trim_to_caps(Profile *p);

#endif
