/* Per-line SASS metrics of one kernel (`advise profile --source-metrics`).
 *
 * When ADVISE_SOURCE_METRICS_KERNEL names a kernel (its mangled name, as
 * CUPTI reports launches), this process records nothing else: it keeps the
 * cubins that hold that name as they load, and around the kernel's first
 * launch it enables CUPTI's SASS patching, waits for the launch, reads the
 * per-instruction counters, maps each instruction to its CUDA source line
 * (the cubin's -lineinfo tables) and sums them per line of the project's
 * files. CUPTI 13.0 gives records for one patched kernel per run (on an
 * H200, 2026-11-30: only the first kernel launched after enabling SASS
 * metrics produced records, whether patching was lazy or not, modules
 * loaded eagerly or lazily, or metrics enabled around each launch), which
 * is why `advise profile` re-runs the command once per kernel
 * (docs/profiling.md). */
#define _GNU_SOURCE
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/inject/inject.h"
#include "profiler/inject/source_metrics.h"
#include "profiler/sass_lines.h"

/* The metrics we read, in the order of the ProfLineMetrics counters they feed. */
enum { M_INST, M_GLOBAL, M_GLOBAL_IDEAL, M_SHARED, M_SHARED_IDEAL, M_LOCAL, M_COUNT };
static const char *const metric_names[M_COUNT] = {
    "smsp__sass_inst_executed",
    "smsp__sass_sectors_mem_global",
    "smsp__sass_sectors_mem_global_ideal",
    "smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared",
    "smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared_ideal",
    "smsp__sass_sectors_mem_local",
};

typedef enum { WAITING, ENABLED, DONE } State;

/* cubins kept from module loads: only those whose bytes contain the target
 * name, so that a program loading hundreds of modules costs little. */
#define MAX_CUBINS 64
typedef struct {
    char *data;
    size_t size;
    uint64_t crc;
    bool crc_known;
} Cubin;

static const char *target;
static State state = WAITING;
static uint32_t enabled_correlation;
static CUcontext enabled_ctx;
static uint64_t metric_ids[M_COUNT];
static bool metric_found[M_COUNT];
static Cubin cubins[MAX_CUBINS];
static size_t cubin_count;
static Profile *lines;              /* the per-line sums of this process */
static char message[512];           /* why nothing was measured, for the user */
/* recursive: CUPTI may report a module load on this thread while we patch */
static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

/* Keeps the first thing that went wrong: the one the user needs to hear. */
__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...) {
    if (message[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
}

static const char *cupti_error(CUptiResult r) {
    const char *s = NULL;
    cuptiGetResultString(r, &s);
    return s ? s : "unknown error";
}

/* ---- cubins */
static void keep_cubin(const CUpti_ModuleResourceData *m) {
    if (!m || !m->pCubin || !m->cubinSize || cubin_count == MAX_CUBINS) return;
    if (!memmem(m->pCubin, m->cubinSize, target, strlen(target))) return;
    char *copy = malloc(m->cubinSize);
    if (!copy) return;
    memcpy(copy, m->pCubin, m->cubinSize);
    cubins[cubin_count++] = (Cubin){copy, m->cubinSize, 0, false};
}

static const Cubin *cubin_with_crc(uint64_t crc) {
    for (size_t i = 0; i < cubin_count; i++) {
        Cubin *c = &cubins[i];
        if (!c->crc_known) {
            CUpti_GetCubinCrcParams p = {.size = CUpti_GetCubinCrcParamsSize, .cubinSize = c->size, .cubin = c->data};
            if (cuptiGetCubinCrc(&p) != CUPTI_SUCCESS) continue;
            c->crc = p.cubinCrc;
            c->crc_known = true;
        }
        if (c->crc == crc) return c;
    }
    return NULL;
}

/* ---- configuration, once, at the target's first launch */
static bool configure(CUcontext ctx) {
    uint32_t device = 0;
    CUptiResult r = cuptiGetDeviceId(ctx, &device);
    CUpti_Profiler_Initialize_Params init = {.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    if (r == CUPTI_SUCCESS) r = cuptiProfilerInitialize(&init);
    if (r != CUPTI_SUCCESS) {
        note("source metrics: CUPTI's profiler did not start (%s)", cupti_error(r));
        return false;
    }
    CUpti_Profiler_DeviceSupported_Params support = {.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE,
                                                     .cuDevice = (CUdevice)device,
                                                     .api = CUPTI_PROFILER_SASS_METRICS};
    if (cuptiProfilerDeviceSupported(&support) != CUPTI_SUCCESS ||
        support.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
        note("source metrics: this GPU or its configuration (vGPU, confidential computing, WSL) does not allow "
             "SASS metrics");
        return false;
    }
    CUpti_Device_GetChipName_Params chip = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE,
                                            .deviceIndex = device};
    if ((r = cuptiDeviceGetChipName(&chip)) != CUPTI_SUCCESS) {
        note("source metrics: cannot name the GPU's chip (%s)", cupti_error(r));
        return false;
    }
    CUpti_SassMetrics_Config configs[M_COUNT];
    size_t n = 0;
    for (int m = 0; m < M_COUNT; m++) {
        CUpti_SassMetrics_GetProperties_Params prop = {.structSize = CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE,
                                                       .pChipName = chip.pChipName,
                                                       .pMetricName = metric_names[m]};
        if (cuptiSassMetricsGetProperties(&prop) != CUPTI_SUCCESS) continue; /* absent on this chip: stays 0 */
        metric_ids[m] = prop.metric.metricId;
        metric_found[m] = true;
        configs[n++] = (CUpti_SassMetrics_Config){.metricId = prop.metric.metricId,
                                                  .outputGranularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU};
    }
    for (int m = 0; m < M_COUNT; m++)
        if (!metric_found[m]) fprintf(stderr, "advise: source metrics: %s offers no %s; it reads 0\n", chip.pChipName, metric_names[m]);
    if (n == 0) {
        note("source metrics: the chip %s offers none of the SASS metrics advise reads", chip.pChipName);
        return false;
    }
    CUpti_SassMetricsSetConfig_Params set = {.structSize = CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE,
                                             .numOfMetricConfig = n,
                                             .pConfigs = configs,
                                             .deviceIndex = device};
    if ((r = cuptiSassMetricsSetConfig(&set)) != CUPTI_SUCCESS) {
        note("source metrics: CUPTI refused the metric configuration (%s)", cupti_error(r));
        return false;
    }
    return true;
}

/* ---- reading the counters back */
typedef struct {
    char *path;       /* relative to the project root, or <cuda-headers>/NAME (sass_outside_path) */
    uint32_t line;
    uint64_t v[M_COUNT];
    uint64_t inlined; /* of v[M_INST], instructions of a header charged here */
} LineSum;

static LineSum *line_sum(LineSum **sums, size_t *count, const char *rel, uint32_t line) {
    for (size_t i = 0; i < *count; i++)
        if ((*sums)[i].line == line && strcmp((*sums)[i].path, rel) == 0) return &(*sums)[i];
    LineSum *bigger = realloc(*sums, (*count + 1) * sizeof **sums);
    if (!bigger) return NULL;
    *sums = bigger;
    LineSum s = {.path = strdup(rel), .line = line};
    if (!s.path) return NULL;
    (*sums)[*count] = s;
    return &(*sums)[(*count)++];
}

static int metric_of(uint64_t id) {
    for (int m = 0; m < M_COUNT; m++)
        if (metric_found[m] && metric_ids[m] == id) return m;
    return -1;
}

/* The source line of one instruction: a project-relative path (*mapping
 * SASS_PROJECT), a file outside the project as sass_outside_path names it
 * (SASS_HEADER), or NULL (no line table: SASS_UNMAPPED). */
static char *source_of(const Cubin *c, const char *function, uint32_t pc, uint32_t *line, bool *has_lines,
                       SassMapping *mapping) {
    *mapping = SASS_UNMAPPED;
    CUpti_GetSassToSourceCorrelationParams p = {.size = CUpti_GetSassToSourceCorrelationParamsSize,
                                                .cubin = c->data,
                                                .functionName = function,
                                                .cubinSize = c->size,
                                                .pcOffset = pc};
    if (cuptiGetSassToSourceCorrelation(&p) != CUPTI_SUCCESS) return NULL;
    *has_lines = true;
    char joined[PATH_MAX], real[PATH_MAX];
    char *result = NULL;
    if (p.fileName && p.lineNumber > 0) {
        if (p.fileName[0] == '/' || !p.dirName || !p.dirName[0])
            snprintf(joined, sizeof joined, "%s", p.fileName);
        else
            snprintf(joined, sizeof joined, "%s/%s", p.dirName, p.fileName);
        if (!realpath(joined, real)) snprintf(real, sizeof real, "%s", joined);
        if (inject_path_is_user(real)) {
            result = strdup(inject_relative(real));
            *mapping = SASS_PROJECT;
        } else {
            char outside[256];
            result = strdup(sass_outside_path(real, outside, sizeof outside));
            *mapping = SASS_HEADER;
        }
        *line = p.lineNumber;
        if (!result) *mapping = SASS_UNMAPPED;
    }
    free(p.fileName);
    free(p.dirName);
    return result;
}

static void collect(CUcontext ctx) {
    CUpti_SassMetricsGetDataProperties_Params props = {
        .structSize = CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE, .ctx = ctx};
    CUptiResult r = cuptiSassMetricsGetDataProperties(&props);
    if (r != CUPTI_SUCCESS) {
        note("source metrics: CUPTI could not report the counters (%s)", cupti_error(r));
        return;
    }
    size_t nrec = props.numOfPatchedInstructionRecords, ninst = props.numOfInstances;
    if (nrec == 0 || ninst == 0) {
        note("source metrics: CUPTI returned no counters for %s (CUPTI measures one kernel per run)", target);
        return;
    }
    CUpti_SassMetrics_Data *data = calloc(nrec, sizeof *data);
    bool ok = data != NULL;
    for (size_t i = 0; ok && i < nrec; i++) {
        data[i].structSize = CUpti_SassMetricsFlushData_Params_STRUCT_SIZE;
        ok = (data[i].pInstanceValues = calloc(ninst, sizeof *data[i].pInstanceValues)) != NULL;
    }
    CUpti_SassMetricsFlushData_Params flush = {.structSize = CUpti_SassMetricsFlushData_Params_STRUCT_SIZE,
                                               .ctx = ctx,
                                               .numOfPatchedInstructionRecords = nrec,
                                               .numOfInstances = ninst,
                                               .pMetricsData = data};
    if (!ok) {
        note("source metrics: out of memory");
    } else if ((r = cuptiSassMetricsFlushData(&flush)) != CUPTI_SUCCESS) {
        note("source metrics: CUPTI could not flush the counters (%s)", cupti_error(r));
    } else {
        LineSum *sums = NULL;
        size_t count = 0;
        bool has_lines = false, has_cubin = false, has_project = false;
        /* each instruction's line, then header instructions charged to the project line that inlined them */
        SassRecord *records = calloc(nrec, sizeof *records);
        char **paths = calloc(nrec, sizeof *paths);
        uint32_t *line_of = calloc(nrec, sizeof *line_of);
        long *charged = calloc(nrec, sizeof *charged);
        if (!records || !paths || !line_of || !charged) nrec = 0;
        for (size_t i = 0; i < nrec; i++) {
            const Cubin *c = cubin_with_crc(data[i].cubinCrc);
            records[i] = (SassRecord){data[i].functionName, data[i].cubinCrc, data[i].pcOffset, SASS_UNMAPPED};
            if (!c || !data[i].functionName) continue;
            has_cubin = true;
            paths[i] = source_of(c, data[i].functionName, data[i].pcOffset, &line_of[i], &has_lines,
                                 &records[i].mapping);
            has_project |= records[i].mapping == SASS_PROJECT;
        }
        if (nrec && !sass_charge_inlined(records, nrec, charged)) nrec = 0;
        for (size_t i = 0; i < nrec; i++) {
            if (!paths[i]) continue;
            size_t at = charged[i] >= 0 ? (size_t)charged[i] : i; /* SASS_KEEP, SASS_NO_PROJECT: its own line */
            LineSum *sum = line_sum(&sums, &count, paths[at], line_of[at]);
            if (!sum) continue;
            for (size_t k = 0; k < ninst; k++) {
                int m = metric_of(data[i].pInstanceValues[k].metricId);
                if (m < 0) continue;
                sum->v[m] += data[i].pInstanceValues[k].value;
                if (m == M_INST && at != i) sum->inlined += data[i].pInstanceValues[k].value;
            }
        }
        for (size_t i = 0; paths && i < nrec; i++) free(paths[i]);
        free(paths);
        free(records);
        free(line_of);
        free(charged);
        if (!has_cubin)
            note("source metrics: the module holding %s was not seen loading, so its instructions cannot be "
                 "mapped to lines", target);
        else if (!has_lines)
            note("source metrics: %s has no line information: build it with -lineinfo (nvcc) to map its "
                 "instructions to source lines", target);
        else if (!has_project)
            note("source metrics: none of %s's lines is in the project's files (only headers or library "
                 "code): its counts are kept under the headers' names", target);
        lines = profile_new();
        for (size_t i = 0; i < count; i++) {
            int file = lines ? profile_add_file(lines, sums[i].path) : -1;
            if (file >= 0) {
                ProfLineMetrics lm = {.kernel = (char *)target,
                                      .file = file,
                                      .line = sums[i].line,
                                      .launches = 1,
                                      .instructions = sums[i].v[M_INST],
                                      .global_sectors = sums[i].v[M_GLOBAL],
                                      .global_sectors_ideal = sums[i].v[M_GLOBAL_IDEAL],
                                      .shared_wavefronts = sums[i].v[M_SHARED],
                                      .shared_wavefronts_ideal = sums[i].v[M_SHARED_IDEAL],
                                      .local_sectors = sums[i].v[M_LOCAL],
                                      .inlined_instructions = sums[i].inlined};
                profile_add_line_metrics(lines, &lm);
            }
            free(sums[i].path);
        }
        free(sums);
    }
    for (size_t i = 0; data && i < nrec; i++) {
        free((void *)data[i].functionName);
        free(data[i].pInstanceValues);
    }
    free(data);
}

static bool debug_wanted(void) {
    const char *d = getenv("ADVISE_SOURCE_METRICS_DEBUG");
    return d && strcmp(d, "1") == 0;
}

/* ---- the callbacks */
static CUresult (*ctx_synchronize)(void);

static void on_launch(const CUpti_CallbackData *cb) {
    if (cb->callbackSite == CUPTI_API_ENTER) {
        if (state != WAITING || !cb->symbolName || strcmp(cb->symbolName, target) != 0) return;
        state = DONE; /* one attempt, whatever happens */
        if (!configure(cb->context)) return;
        CUpti_SassMetricsEnable_Params en = {.structSize = CUpti_SassMetricsEnable_Params_STRUCT_SIZE,
                                             .ctx = cb->context,
                                             .enableLazyPatching = 1};
        CUptiResult r = cuptiSassMetricsEnable(&en);
        if (r != CUPTI_SUCCESS) {
            note("source metrics: CUPTI could not patch the kernel (%s)", cupti_error(r));
            return;
        }
        state = ENABLED;
        enabled_ctx = cb->context;
        enabled_correlation = cb->correlationId;
        return;
    }
    if (state != ENABLED || cb->correlationId != enabled_correlation) return;
    state = DONE;
    /* The counters are complete once the launch has run. Inside the launch
     * callback. Should the driver refuse the wait, the counts are still
     * read (cuptiSassMetricsFlushData returned a launch's full counts, equal
     * to Nsight Compute's, on the H200 when no wait had been made), and the
     * refusal is reported in debug output only. */
    CUresult waited = ctx_synchronize ? ctx_synchronize() : CUDA_ERROR_NOT_FOUND;
    if (waited != CUDA_SUCCESS && debug_wanted())
        fprintf(stderr, "advise-debug: cuCtxSynchronize in the launch callback returned %d\n", (int)waited);
    collect(enabled_ctx);
    CUpti_SassMetricsDisable_Params dis = {.structSize = CUpti_SassMetricsDisable_Params_STRUCT_SIZE,
                                           .ctx = enabled_ctx};
    cuptiSassMetricsDisable(&dis);
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data) {
    (void)userdata;
    pthread_mutex_lock(&lock);
    if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
        const CUpti_ResourceData *rd = data;
        keep_cubin(rd->resourceDescriptor);
    } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        on_launch(data);
    }
    pthread_mutex_unlock(&lock);
}

const char *source_metrics_target(void) {
    const char *t = getenv("ADVISE_SOURCE_METRICS_KERNEL");
    return t && *t ? t : NULL;
}

bool source_metrics_start(CUpti_SubscriberHandle *subscriber, char **error) {
    target = source_metrics_target();
    /* the runtime loads libcuda with RTLD_LOCAL: look in it, not in the global scope */
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    ctx_synchronize = (CUresult(*)(void))dlsym(driver ? driver : RTLD_DEFAULT, "cuCtxSynchronize");
    CUptiResult r = cuptiSubscribe(subscriber, on_callback, NULL);
    if (r == CUPTI_SUCCESS) r = cuptiEnableCallback(1, *subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                                    CUPTI_CBID_RESOURCE_MODULE_LOADED);
    for (CUpti_CallbackId id = 1; r == CUPTI_SUCCESS && id < CUPTI_DRIVER_TRACE_CBID_SIZE; id++) {
        const char *name = NULL;
        if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id, &name) != CUPTI_SUCCESS || !name) continue;
        if (strncmp(name, "cuLaunchKernel", 14) == 0 || strncmp(name, "cuLaunchCooperativeKernel", 25) == 0)
            r = cuptiEnableCallback(1, *subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
    }
    if (r != CUPTI_SUCCESS) {
        char buf[256];
        snprintf(buf, sizeof buf, "source metrics: CUPTI could not start (%s)", cupti_error(r));
        *error = strdup(buf);
        return false;
    }
    return true;
}

/* ADVISE_SOURCE_METRICS_DEBUG=1: print the lines measured on stderr (to
 * check CUPTI's counters on a new GPU or driver without reading profiles). */
static void debug_print(const Profile *q) {
    if (!debug_wanted() || !q) return;
    for (size_t i = 0; i < q->line_metric_count; i++) {
        const ProfLineMetrics *m = &q->line_metrics[i];
        fprintf(stderr,
                "advise-debug: %s:%u inst=%llu global=%llu/%llu shared=%llu/%llu local=%llu\n",
                q->files[m->file].path, m->line, (unsigned long long)m->instructions,
                (unsigned long long)m->global_sectors, (unsigned long long)m->global_sectors_ideal,
                (unsigned long long)m->shared_wavefronts, (unsigned long long)m->shared_wavefronts_ideal,
                (unsigned long long)m->local_sectors);
    }
}

void source_metrics_finish(Profile *part) {
    pthread_mutex_lock(&lock);
    debug_print(lines);
    if (state == WAITING) note("source metrics: %s was never launched in this process", target);
    if (lines && !profile_append(part, lines)) note("source metrics: out of memory");
    if (lines && lines->line_metric_count == 0) note("source metrics: no line of %s was measured", target);
    if (!lines && state == DONE && !message[0]) note("source metrics: nothing was measured for %s", target);
    pthread_mutex_unlock(&lock);
}

const char *source_metrics_message(void) { return message[0] ? message : NULL; }
