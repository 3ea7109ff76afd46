/* Reading a profile from JSON text. Every file is treated as hostile: the
 * text is parsed by jansson (duplicate keys refused), every value's type and
 * range is checked here as it is copied into the Profile, and then the rules
 * that span the whole profile (indexes, stats, paths, uniqueness) are checked
 * by profile_check, the same check the writer applies. Keys this version does
 * not know are ignored, so that a later minor addition stays readable. */
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/profile_check.h"
#include "profiler/profile_internal.h"
#include "profiler/profile_json.h"

typedef struct {
    ProfileKind kind;
    char **error;
} Reader;

#define MAX_JSON_INTEGER ((uint64_t)INT64_MAX)

/* at is the path of the object holding key ("" at the top level); a key
 * like "[2]" is an array position */
static const char *dot(const char *at, const char *key) { return *at && key[0] != '[' ? "." : ""; }

#define FAIL(r, at, key, ...) fail_at((r), (at), (key), __VA_ARGS__)

static bool fail_at(Reader *r, const char *at, const char *key, const char *format, ...)
    __attribute__((format(printf, 4, 5)));

static bool fail_at(Reader *r, const char *at, const char *key, const char *format, ...) {
    char message[256];
    va_list ap;
    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    return prof_fail(r->error, "%s%s%s: %s", at, dot(at, key), key, message);
}

static json_t *member(Reader *r, json_t *object, const char *at, const char *key) {
    json_t *v = json_object_get(object, key);
    if (!v) FAIL(r, at, key, "missing");
    return v;
}

/* ---- values ------------------------------------------------------------------------- */

static bool uint_value(Reader *r, json_t *v, const char *at, const char *key, uint64_t min, uint64_t max,
                       uint64_t *out) {
    if (!v) return false;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) < min)
        return FAIL(r, at, key, "must be a %s integer", min > 0 ? "positive" : "non-negative");
    uint64_t value = (uint64_t)json_integer_value(v);
    if (value > max) return FAIL(r, at, key, "%llu is more than %llu", (unsigned long long)value,
                                 (unsigned long long)max);
    *out = value;
    return true;
}

static bool get_u64(Reader *r, json_t *object, const char *at, const char *key, uint64_t *out) {
    return uint_value(r, member(r, object, at, key), at, key, 0, MAX_JSON_INTEGER, out);
}

/* a count added to the format later: absent (older files) reads as 0 */
static bool get_optional_u64(Reader *r, json_t *object, const char *at, const char *key, uint64_t *out) {
    json_t *v = json_object_get(object, key);
    if (!v) {
        *out = 0;
        return true;
    }
    return uint_value(r, v, at, key, 0, MAX_JSON_INTEGER, out);
}

static bool get_u32(Reader *r, json_t *object, const char *at, const char *key, uint32_t *out) {
    uint64_t value = 0;
    if (!uint_value(r, member(r, object, at, key), at, key, 0, UINT32_MAX, &value)) return false;
    *out = (uint32_t)value;
    return true;
}

/* an index into one of the arrays (-1 for null when nullable); the range is
 * profile_check's */
static bool get_index(Reader *r, json_t *object, const char *at, const char *key, bool nullable, int *out) {
    json_t *v = member(r, object, at, key);
    if (!v) return false;
    if (nullable && json_is_null(v)) {
        *out = -1;
        return true;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT_MAX)
        return FAIL(r, at, key, "must be an index (a non-negative integer)%s", nullable ? " or null" : "");
    *out = (int)json_integer_value(v);
    return true;
}

/* rank, local_rank, world_size: -1 for null */
static bool get_optional_int(Reader *r, json_t *object, const char *at, const char *key, int *out) {
    json_t *v = member(r, object, at, key);
    if (!v) return false;
    if (json_is_null(v)) {
        *out = -1;
        return true;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT_MAX)
        return FAIL(r, at, key, "must be a non-negative integer (at most %d) or null", INT_MAX);
    *out = (int)json_integer_value(v);
    return true;
}

static bool string_value(Reader *r, json_t *v, const char *at, const char *key, bool nullable, char **out) {
    if (!v) return false;
    if (nullable && json_is_null(v)) {
        *out = NULL;
        return true;
    }
    if (!json_is_string(v)) return FAIL(r, at, key, "must be a string%s", nullable ? " or null" : "");
    const char *s = json_string_value(v);
    size_t length = json_string_length(v);
    if (strlen(s) != length) return FAIL(r, at, key, "must not contain a NUL character");
    if (length > PROFILE_MAX_STRING)
        return FAIL(r, at, key, "%zu bytes long, more than the %u a string may have", length, PROFILE_MAX_STRING);
    char *copy = malloc(length + 1);
    if (!copy) return prof_fail(r->error, "out of memory");
    memcpy(copy, s, length + 1);
    *out = copy;
    return true;
}

static bool get_string(Reader *r, json_t *object, const char *at, const char *key, bool nullable, char **out) {
    return string_value(r, member(r, object, at, key), at, key, nullable, out);
}

static bool get_bool(Reader *r, json_t *object, const char *at, const char *key, bool *out) {
    json_t *v = member(r, object, at, key);
    if (!v) return false;
    if (!json_is_boolean(v)) return FAIL(r, at, key, "must be true or false");
    *out = json_is_true(v);
    return true;
}

typedef const char *(*NameOf)(int);
static const char *op_kind_name(int k) { return prof_op_kind_name((ProfOpKind)k); }
static const char *copy_kind_name(int k) { return prof_copy_kind_name((ProfCopyKind)k); }
static const char *mem_kind_name(int k) { return prof_mem_kind_name((ProfMemKind)k); }
static const char *sync_kind_name(int k) { return prof_sync_kind_name((ProfSyncKind)k); }

static bool get_enum(Reader *r, json_t *object, const char *at, const char *key, NameOf name_of, int count,
                     int *out) {
    json_t *v = member(r, object, at, key);
    if (!v) return false;
    for (int k = 0; json_is_string(v) && k < count; k++)
        if (strcmp(json_string_value(v), name_of(k)) == 0) {
            *out = k;
            return true;
        }
    char names[160] = "";
    for (int k = 0; k < count; k++) {
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s\"%s\"", k ? ", " : "", name_of(k));
    }
    return FAIL(r, at, key, "must be one of %s", names);
}

static bool get_array(Reader *r, json_t *object, const char *at, const char *key, size_t cap, json_t **out) {
    json_t *v = member(r, object, at, key);
    if (!v) return false;
    if (!json_is_array(v)) return FAIL(r, at, key, "must be an array");
    if (json_array_size(v) > cap)
        return FAIL(r, at, key, "%zu entries, more than the %zu allowed", json_array_size(v), cap);
    *out = v;
    return true;
}

/* an array of exactly n integers from min to UINT32_MAX */
static bool get_u32_tuple(Reader *r, json_t *object, const char *at, const char *key, size_t n, uint64_t min,
                          uint32_t *out) {
    json_t *v = member(r, object, at, key);
    if (!v) return false;
    if (!json_is_array(v) || json_array_size(v) != n)
        return FAIL(r, at, key, "must be an array of %zu %s integers", n, min > 0 ? "positive" : "non-negative");
    char path[96];
    snprintf(path, sizeof path, "%s%s%s", at, dot(at, key), key);
    for (size_t i = 0; i < n; i++) {
        char position[24];
        snprintf(position, sizeof position, "[%zu]", i);
        uint64_t value = 0;
        if (!uint_value(r, json_array_get(v, i), path, position, min, UINT32_MAX, &value)) return false;
        out[i] = (uint32_t)value;
    }
    return true;
}

static bool get_stats(Reader *r, json_t *object, const char *at, ProfStats *s) {
    json_t *v = member(r, object, at, "stats");
    if (!v) return false;
    char path[96];
    snprintf(path, sizeof path, "%s.stats", at);
    if (!json_is_object(v)) return prof_fail(r->error, "%s: must be an object", path);
    return get_u64(r, v, path, "count", &s->count) && get_u64(r, v, path, "total_ns", &s->total_ns) &&
           get_u64(r, v, path, "min_ns", &s->min_ns) && get_u64(r, v, path, "median_ns", &s->median_ns) &&
           get_u64(r, v, path, "max_ns", &s->max_ns);
}

/* ---- the arrays ----------------------------------------------------------------------
 * Each array is allocated zeroed at its full length first, so that a Profile
 * left half-filled by an error is still freed correctly. */

static bool allocate(Reader *r, void **array, size_t *count, size_t n, size_t size) {
    if (n == 0) return true;
    *array = calloc(n, size);
    if (!*array) return prof_fail(r->error, "out of memory");
    *count = n;
    return true;
}

#define ALLOCATE(r, array, count, n) allocate((r), (void **)&(array), &(count), (n), sizeof *(array))

static bool entry_object(Reader *r, json_t *e, const char *at) {
    return json_is_object(e) || prof_fail(r->error, "%s: must be an object", at);
}

/* Added later, optional: absent (imported traces, older files) reads as all zero. */
static bool read_calibration(Reader *r, json_t *process, const char *process_at, ProfCalibration *c) {
    json_t *o = json_object_get(process, "calibration");
    if (!o) return true;
    char at[64];
    snprintf(at, sizeof at, "%s.calibration", process_at);
    if (!json_is_object(o)) return FAIL(r, process_at, "calibration", "must be an object");
    uint64_t every;
    if (!uint_value(r, member(r, o, at, "trace_every"), at, "trace_every", 1, 1u << 20, &every) ||
        !get_u64(r, o, at, "launches", &c->launches) || !get_u64(r, o, at, "traced_launches", &c->traced_launches) ||
        !get_u64(r, o, at, "traced_launch_api_ns", &c->traced_launch_api_ns) ||
        !get_u64(r, o, at, "untraced_launches", &c->untraced_launches) ||
        !get_u64(r, o, at, "untraced_launch_api_ns", &c->untraced_launch_api_ns) ||
        !get_u64(r, o, at, "callback_ns", &c->callback_ns))
        return false;
    c->trace_every = (uint32_t)every;
    return true;
}

/* steps.idle_ns or steps.activities: one integer per phase, by name */
static bool read_phase_figures(Reader *r, json_t *steps, const char *at, const char *key, uint64_t *out) {
    json_t *o = member(r, steps, at, key);
    if (!o) return false;
    if (!json_is_object(o)) return FAIL(r, at, key, "must be an object with a figure for each phase");
    char inner[96];
    snprintf(inner, sizeof inner, "%s.%s", at, key);
    for (int ph = PROF_PHASE_FIRST; ph < PROF_PHASE_COUNT; ph++)
        if (!get_u64(r, o, inner, prof_phase_name((ProfPhase)ph), &out[ph])) return false;
    return true;
}

/* idle_ns and activities, added later still: both or neither */
static bool read_phase_idle(Reader *r, json_t *steps, const char *at, ProfSteps *s) {
    bool idle = json_object_get(steps, "idle_ns") != NULL, acts = json_object_get(steps, "activities") != NULL;
    if (!idle && !acts) return true;
    if (!read_phase_figures(r, steps, at, "idle_ns", s->idle_ns) ||
        !read_phase_figures(r, steps, at, "activities", s->activities))
        return false;
    s->phase_idle_known = true;
    return true;
}

/* Added later, optional: absent (no optimizer steps, imported traces, older files) reads as all zero. */
static bool read_steps(Reader *r, json_t *process, const char *process_at, ProfSteps *s) {
    json_t *o = json_object_get(process, "steps");
    if (!o) return true;
    char at[64];
    snprintf(at, sizeof at, "%s.steps", process_at);
    if (!json_is_object(o)) return FAIL(r, process_at, "steps", "must be an object");
    return uint_value(r, member(r, o, at, "count"), at, "count", 1, MAX_JSON_INTEGER, &s->count) &&
           get_u64(r, o, at, "median_ns", &s->median_ns) && get_u64(r, o, at, "first_ns", &s->first_ns) &&
           get_u64(r, o, at, "warmup_steps", &s->warmup_steps) && get_u64(r, o, at, "warmup_ns", &s->warmup_ns) &&
           get_u64(r, o, at, "steady_steps", &s->steady_steps) && get_u64(r, o, at, "steady_ns", &s->steady_ns) &&
           get_u64(r, o, at, "slow_steps", &s->slow_steps) && get_u64(r, o, at, "slow_ns", &s->slow_ns) &&
           get_u64(r, o, at, "after_ns", &s->after_ns) && read_phase_idle(r, o, at, s);
}

static bool read_processes(Reader *r, json_t *root, Profile *p) {
    const char *key = "processes";
    json_t *a;
    if (!get_array(r, root, "", key, PROFILE_MAX_PROCESSES, &a) ||
        !ALLOCATE(r, p->processes, p->process_count, json_array_size(a)))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        char at[48];
        snprintf(at, sizeof at, "%s[%zu]", key, i);
        ProfProcess *proc = &p->processes[i];
        uint64_t pid;
        if (!entry_object(r, e, at) || !get_u64(r, e, at, "pid", &pid) ||
            !get_optional_int(r, e, at, "rank", &proc->rank) ||
            !get_optional_int(r, e, at, "local_rank", &proc->local_rank) ||
            !get_optional_int(r, e, at, "world_size", &proc->world_size) ||
            !get_u64(r, e, at, "wall_ns", &proc->wall_ns) || !get_string(r, e, at, "error", true, &proc->error) ||
            !read_calibration(r, e, at, &proc->calibration) || !read_steps(r, e, at, &proc->steps))
            return false;
        json_t *wait = json_object_get(e, "host_wait_ns"); /* added later: absent reads as not measured */
        proc->host_wait_known = wait != NULL;
        if (wait && !uint_value(r, wait, at, "host_wait_ns", 0, MAX_JSON_INTEGER, &proc->host_wait_ns)) return false;
        proc->pid = (int64_t)pid;
    }
    return true;
}

static bool read_devices(Reader *r, json_t *root, Profile *p) {
    const char *key = "devices";
    json_t *a;
    if (!get_array(r, root, "", key, PROFILE_MAX_DEVICES, &a) ||
        !ALLOCATE(r, p->devices, p->device_count, json_array_size(a)))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        char at[48];
        snprintf(at, sizeof at, "%s[%zu]", key, i);
        ProfDevice *d = &p->devices[i];
        uint32_t cc[2];
        if (!entry_object(r, e, at) || !get_index(r, e, at, "process", false, &d->process) ||
            !get_u32(r, e, at, "id", &d->id) || !get_string(r, e, at, "name", false, &d->name) ||
            !get_u32(r, e, at, "sm_count", &d->sm_count) ||
            !get_u32_tuple(r, e, at, "compute_capability", 2, 0, cc) ||
            !get_u64(r, e, at, "memory_bytes", &d->memory_bytes) ||
            !get_u64(r, e, at, "bandwidth_bytes_per_s", &d->bandwidth_bytes_per_s) ||
            !get_u32(r, e, at, "max_warps_per_sm", &d->max_warps_per_sm) ||
            !get_u32(r, e, at, "max_blocks_per_sm", &d->max_blocks_per_sm) ||
            !get_u32(r, e, at, "max_registers_per_sm", &d->max_registers_per_sm) ||
            !get_u32(r, e, at, "max_shared_per_sm", &d->max_shared_per_sm) ||
            !get_u32(r, e, at, "max_registers_per_block", &d->max_registers_per_block) ||
            !get_u32(r, e, at, "max_shared_per_block", &d->max_shared_per_block) ||
            !get_u32(r, e, at, "max_threads_per_block", &d->max_threads_per_block) ||
            !get_u32(r, e, at, "l2_bytes", &d->l2_bytes))
            return false;
        d->cc_major = cc[0];
        d->cc_minor = cc[1];
    }
    return true;
}

static bool read_files(Reader *r, json_t *root, Profile *p) {
    const char *key = "files";
    json_t *a;
    if (!get_array(r, root, "", key, PROFILE_MAX_FILES, &a) ||
        !ALLOCATE(r, p->files, p->file_count, json_array_size(a)))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        char at[48];
        snprintf(at, sizeof at, "%s[%zu]", key, i);
        ProfFile *f = &p->files[i];
        if (!entry_object(r, e, at) || !get_string(r, e, at, "path", false, &f->path) ||
            !get_string(r, e, at, "sha256", true, &f->sha256))
            return false;
    }
    return true;
}

static bool read_frames(Reader *r, json_t *e, const char *at, ProfSite *s) {
    json_t *a;
    if (!get_array(r, e, at, "frames", PROFILE_MAX_FRAMES, &a)) return false;
    size_t n = json_array_size(a);
    if (n == 0) return prof_fail(r->error, "%s.frames: an unresolved site needs at least one frame", at);
    if (!ALLOCATE(r, s->frames, s->frame_count, n)) return false;
    for (size_t f = 0; f < n; f++) {
        json_t *frame = json_array_get(a, f);
        char path[80];
        snprintf(path, sizeof path, "%s.frames[%zu]", at, f);
        if (!entry_object(r, frame, path) || !get_string(r, frame, path, "module", false, &s->frames[f].module) ||
            !get_u64(r, frame, path, "address", &s->frames[f].address))
            return false;
    }
    return true;
}

static bool read_sites(Reader *r, json_t *root, Profile *p) {
    const char *key = "sites";
    json_t *a;
    if (!get_array(r, root, "", key, PROFILE_MAX_SITES, &a) ||
        !ALLOCATE(r, p->sites, p->site_count, json_array_size(a)))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        char at[48];
        snprintf(at, sizeof at, "%s[%zu]", key, i);
        ProfSite *s = &p->sites[i];
        if (!entry_object(r, e, at) || !get_index(r, e, at, "file", true, &s->file) ||
            !get_u32(r, e, at, "line", &s->line) || !get_string(r, e, at, "function", true, &s->function) ||
            !get_bool(r, e, at, "function_level", &s->function_level))
            return false;
        bool has_frames = json_object_get(e, "frames") != NULL;
        if (r->kind == PROFILE_FINAL && s->file < 0)
            return prof_fail(r->error, "%s: not resolved to a source line; a final profile holds resolved sites only",
                             at);
        if (r->kind == PROFILE_FINAL && has_frames)
            return prof_fail(r->error, "%s.frames: a final profile holds resolved sites only, without frames", at);
        if (s->file >= 0 && has_frames)
            return prof_fail(r->error, "%s.frames: only an unresolved site (file null) has frames", at);
        if (s->file < 0 && !read_frames(r, e, at, s)) return false;
    }
    return true;
}

/* The optional "critical_ns" of a kernel or an operation (added after the
 * first files: absent reads as not measured). */
static bool get_critical(Reader *r, json_t *e, const char *at, CriticalTime *c) {
    json_t *v = json_object_get(e, "critical_ns");
    c->known = v != NULL;
    c->ns = 0;
    return !v || uint_value(r, v, at, "critical_ns", 0, MAX_JSON_INTEGER, &c->ns);
}

/* The optional "steady_count" of an operation (likewise added later). */
static bool get_steady(Reader *r, json_t *e, const char *at, SteadyCount *c) {
    json_t *v = json_object_get(e, "steady_count"), *idle = json_object_get(e, "steady_idle_ns");
    *c = (SteadyCount){.known = v != NULL, .idle_known = v != NULL && idle != NULL};
    if (idle && !v) return prof_fail(r->error, "%s.steady_idle_ns: only with steady_count", at);
    return !v || (uint_value(r, v, at, "steady_count", 0, MAX_JSON_INTEGER, &c->count) &&
                  (!idle || uint_value(r, idle, at, "steady_idle_ns", 0, MAX_JSON_INTEGER, &c->idle_ns)));
}

static bool read_kernels(Reader *r, json_t *root, Profile *p) {
    const char *key = "kernels";
    json_t *a;
    if (!get_array(r, root, "", key, PROFILE_MAX_KERNELS, &a) ||
        !ALLOCATE(r, p->kernels, p->kernel_count, json_array_size(a)))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        char at[48];
        snprintf(at, sizeof at, "%s[%zu]", key, i);
        ProfKernel *k = &p->kernels[i];
        if (!entry_object(r, e, at) || !get_index(r, e, at, "process", false, &k->process) ||
            !get_index(r, e, at, "device", true, &k->device) || !get_string(r, e, at, "name", false, &k->name) ||
            !get_u32_tuple(r, e, at, "grid", 3, 1, k->grid) || !get_u32_tuple(r, e, at, "block", 3, 1, k->block) ||
            !get_u32(r, e, at, "registers", &k->registers) ||
            !get_u32(r, e, at, "static_shared", &k->static_shared) ||
            !get_u32(r, e, at, "dynamic_shared", &k->dynamic_shared) ||
            !get_u32(r, e, at, "local_per_thread", &k->local_per_thread) || !get_stats(r, e, at, &k->stats) ||
            !get_critical(r, e, at, &k->critical))
            return false;
    }
    return true;
}

static bool read_op(Reader *r, json_t *e, const char *at, ProfOp *op) {
    int kind, copy = 0, src = 0, dst = 0, sync = 0;
    op->kernel = -1;
    if (!entry_object(r, e, at) || !get_enum(r, e, at, "kind", op_kind_name, PROF_OP_KIND_COUNT, &kind) ||
        !get_index(r, e, at, "process", false, &op->process) || !get_index(r, e, at, "site", true, &op->site))
        return false;
    bool ok = true;
    switch ((ProfOpKind)kind) {
    case PROF_OP_LAUNCH:
        ok = get_index(r, e, at, "kernel", false, &op->kernel);
        break;
    case PROF_OP_MEMCPY:
        ok = get_enum(r, e, at, "copy", copy_kind_name, PROF_COPY_KIND_COUNT, &copy) &&
             get_enum(r, e, at, "src", mem_kind_name, PROF_MEM_KIND_COUNT, &src) &&
             get_enum(r, e, at, "dst", mem_kind_name, PROF_MEM_KIND_COUNT, &dst) &&
             get_u64(r, e, at, "bytes", &op->bytes);
        break;
    case PROF_OP_MEMSET:
    case PROF_OP_ALLOC:
        ok = get_enum(r, e, at, "dst", mem_kind_name, PROF_MEM_KIND_COUNT, &dst) &&
             get_u64(r, e, at, "bytes", &op->bytes);
        break;
    case PROF_OP_SYNC:
        ok = get_enum(r, e, at, "sync", sync_kind_name, PROF_SYNC_KIND_COUNT, &sync);
        break;
    default:
        break;
    }
    op->kind = (ProfOpKind)kind;
    op->copy = (ProfCopyKind)copy;
    op->src = (ProfMemKind)src;
    op->dst = (ProfMemKind)dst;
    op->sync = (ProfSyncKind)sync;
    return ok && get_stats(r, e, at, &op->stats) &&
           (!prof_op_has_critical(op->kind) || (get_critical(r, e, at, &op->critical) && get_steady(r, e, at, &op->steady)));
}

static bool read_ops(Reader *r, json_t *root, Profile *p) {
    const char *key = "ops";
    json_t *a;
    if (!get_array(r, root, "", key, PROFILE_MAX_OPS, &a) || !ALLOCATE(r, p->ops, p->op_count, json_array_size(a)))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        char at[48];
        snprintf(at, sizeof at, "%s[%zu]", key, i);
        if (!read_op(r, e, at, &p->ops[i])) return false;
    }
    return true;
}

static bool read_apis(Reader *r, json_t *root, Profile *p) {
    const char *key = "apis";
    json_t *a;
    if (!get_array(r, root, "", key, PROFILE_MAX_APIS, &a) || !ALLOCATE(r, p->apis, p->api_count, json_array_size(a)))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        char at[48];
        snprintf(at, sizeof at, "%s[%zu]", key, i);
        ProfApi *api = &p->apis[i];
        if (!entry_object(r, e, at) || !get_index(r, e, at, "process", false, &api->process) ||
            !get_string(r, e, at, "name", false, &api->name) || !get_stats(r, e, at, &api->stats))
            return false;
    }
    return true;
}

static bool read_overheads(Reader *r, json_t *root, Profile *p) {
    const char *key = "overheads";
    json_t *a;
    if (!get_array(r, root, "", key, PROFILE_MAX_OVERHEADS, &a) ||
        !ALLOCATE(r, p->overheads, p->overhead_count, json_array_size(a)))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        char at[48];
        snprintf(at, sizeof at, "%s[%zu]", key, i);
        ProfOverhead *o = &p->overheads[i];
        if (!entry_object(r, e, at) || !get_index(r, e, at, "process", false, &o->process) ||
            !get_string(r, e, at, "kind", false, &o->kind) || !get_stats(r, e, at, &o->stats))
            return false;
    }
    return true;
}

static bool read_timelines(Reader *r, json_t *root, Profile *p) {
    const char *key = "timelines";
    json_t *a;
    if (!get_array(r, root, "", key, PROFILE_MAX_DEVICES, &a) ||
        !ALLOCATE(r, p->timelines, p->timeline_count, json_array_size(a)))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        char at[48];
        snprintf(at, sizeof at, "%s[%zu]", key, i);
        ProfTimeline *t = &p->timelines[i];
        if (!entry_object(r, e, at) || !get_index(r, e, at, "process", false, &t->process) ||
            !get_index(r, e, at, "device", false, &t->device) || !get_u64(r, e, at, "span_ns", &t->span_ns) ||
            !get_u64(r, e, at, "busy_ns", &t->busy_ns) || !get_u64(r, e, at, "idle_ns", &t->idle_ns) ||
            !get_optional_u64(r, e, at, "compute_ns", &t->compute_ns) ||
            !get_optional_u64(r, e, at, "comm_ns", &t->comm_ns) ||
            !get_optional_u64(r, e, at, "exposed_comm_ns", &t->exposed_comm_ns))
            return false;
    }
    return true;
}

static bool read_gaps(Reader *r, json_t *root, Profile *p) {
    const char *key = "gaps";
    json_t *a;
    if (!get_array(r, root, "", key, PROFILE_MAX_GAPS, &a) || !ALLOCATE(r, p->gaps, p->gap_count, json_array_size(a)))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        char at[48];
        snprintf(at, sizeof at, "%s[%zu]", key, i);
        ProfGap *g = &p->gaps[i];
        if (!entry_object(r, e, at) || !get_index(r, e, at, "process", false, &g->process) ||
            !get_index(r, e, at, "device", false, &g->device) || !get_u64(r, e, at, "start_ns", &g->start_ns) ||
            !get_u64(r, e, at, "duration_ns", &g->duration_ns) ||
            !get_index(r, e, at, "before_site", true, &g->before_site) ||
            !get_index(r, e, at, "after_site", true, &g->after_site))
            return false;
        uint64_t weight = 1;
        json_t *w = json_object_get(e, "weight"); /* added later: absent reads as 1 */
        if (w && !uint_value(r, w, at, "weight", 1, 1u << 20, &weight)) return false;
        g->weight = (uint32_t)weight;
        json_t *phase = json_object_get(e, "phase"); /* added later: absent reads as unknown */
        if (phase) {
            int k = json_is_string(phase) ? prof_phase_from_name(json_string_value(phase)) : -1;
            if (k < 0) return FAIL(r, at, "phase", "must be one of first, warmup, steady, slow, after");
            g->phase = (ProfPhase)k;
        }
    }
    return true;
}

/* Added after the first files were written (the version stays 1): absent
 * reads as none, but when present it is checked like every other array. */
static bool read_line_metrics(Reader *r, json_t *root, Profile *p) {
    const char *key = "line_metrics";
    json_t *a;
    if (!json_object_get(root, key)) return true;
    if (!get_array(r, root, "", key, PROFILE_MAX_LINE_METRICS, &a) ||
        !ALLOCATE(r, p->line_metrics, p->line_metric_count, json_array_size(a)))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        char at[48];
        snprintf(at, sizeof at, "%s[%zu]", key, i);
        ProfLineMetrics *m = &p->line_metrics[i];
        if (!entry_object(r, e, at) || !get_string(r, e, at, "kernel", false, &m->kernel) ||
            !get_index(r, e, at, "file", false, &m->file) || !get_u32(r, e, at, "line", &m->line) ||
            !get_u64(r, e, at, "launches", &m->launches) ||
            !get_u64(r, e, at, "instructions", &m->instructions) ||
            !get_u64(r, e, at, "global_sectors", &m->global_sectors) ||
            !get_u64(r, e, at, "global_sectors_ideal", &m->global_sectors_ideal) ||
            !get_u64(r, e, at, "shared_wavefronts", &m->shared_wavefronts) ||
            !get_u64(r, e, at, "shared_wavefronts_ideal", &m->shared_wavefronts_ideal) ||
            !get_u64(r, e, at, "local_sectors", &m->local_sectors) ||
            !get_optional_u64(r, e, at, "inlined_instructions", &m->inlined_instructions))
            return false;
    }
    return true;
}

/* bytes_per_step: a signed integer */
static bool get_i64(Reader *r, json_t *object, const char *at, const char *key, int64_t *out) {
    json_t *v = member(r, object, at, key);
    if (!v) return false;
    if (!json_is_integer(v)) return FAIL(r, at, key, "must be an integer");
    *out = (int64_t)json_integer_value(v);
    return true;
}

static bool read_memory_samples(Reader *r, json_t *e, const char *at, ProfMemory *m) {
    json_t *a;
    if (!get_array(r, e, at, "samples", PROFILE_MAX_MEMORY_SAMPLES, &a) ||
        !ALLOCATE(r, m->samples, m->sample_count, json_array_size(a)))
        return false;
    char path[96];
    snprintf(path, sizeof path, "%s.samples", at);
    for (size_t k = 0; k < json_array_size(a); k++) {
        json_t *row = json_array_get(a, k);
        char position[24];
        snprintf(position, sizeof position, "[%zu]", k);
        if (!json_is_array(row) || json_array_size(row) != 3)
            return FAIL(r, path, position, "must be [time_ns, allocated, reserved]");
        ProfMemSample *s = &m->samples[k];
        if (!uint_value(r, json_array_get(row, 0), path, position, 0, MAX_JSON_INTEGER, &s->time_ns) ||
            !uint_value(r, json_array_get(row, 1), path, position, 0, MAX_JSON_INTEGER, &s->allocated) ||
            !uint_value(r, json_array_get(row, 2), path, position, 0, MAX_JSON_INTEGER, &s->reserved))
            return false;
    }
    return true;
}

static bool read_memory_oom(Reader *r, json_t *e, const char *at, ProfMemory *m) {
    json_t *o = member(r, e, at, "oom");
    m->oom_site = -1;
    if (!o) return false;
    if (json_is_null(o)) return true;
    if (!json_is_object(o)) return FAIL(r, at, "oom", "must be an object or null");
    char path[80];
    snprintf(path, sizeof path, "%s.oom", at);
    m->oom = true;
    return get_u64(r, o, path, "time_ns", &m->oom_time_ns) && get_u64(r, o, path, "bytes", &m->oom_bytes) &&
           get_u64(r, o, path, "device_free", &m->oom_device_free) &&
           get_u64(r, o, path, "allocated", &m->oom_allocated) && get_index(r, o, path, "site", true, &m->oom_site);
}

static const char *mem_source_name(int k) { return prof_mem_source_name((ProfMemSource)k); }

/* "source" was added later: absent reads as "torch" (the only source then). */
static bool read_memory_source(Reader *r, json_t *e, const char *at, ProfMemory *m) {
    int source = PROF_MEM_SOURCE_TORCH;
    if (json_object_get(e, "source") && !get_enum(r, e, at, "source", mem_source_name, PROF_MEM_SOURCE_COUNT, &source))
        return false;
    m->source = (ProfMemSource)source;
    return true;
}

/* Memory (`advise profile --memory`): absent reads as none. */
static bool read_memories(Reader *r, json_t *root, Profile *p) {
    const char *key = "memory";
    json_t *a;
    if (!json_object_get(root, key)) return true;
    if (!get_array(r, root, "", key, PROFILE_MAX_MEMORIES, &a) ||
        !ALLOCATE(r, p->memories, p->memory_count, json_array_size(a)))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        char at[48];
        snprintf(at, sizeof at, "%s[%zu]", key, i);
        ProfMemory *m = &p->memories[i];
        m->oom_site = -1;
        if (!entry_object(r, e, at) || !get_index(r, e, at, "process", false, &m->process) ||
            !get_u32(r, e, at, "device", &m->device) || !read_memory_source(r, e, at, m) ||
            !get_u64(r, e, at, "events", &m->events) ||
            !get_bool(r, e, at, "window_complete", &m->window_complete) ||
            !get_u64(r, e, at, "max_allocated", &m->max_allocated) ||
            !get_u64(r, e, at, "max_reserved", &m->max_reserved) ||
            !get_u64(r, e, at, "peak_time_ns", &m->peak_time_ns) ||
            !get_u64(r, e, at, "peak_allocated", &m->peak_allocated) ||
            !get_u64(r, e, at, "peak_reserved", &m->peak_reserved) || !get_u64(r, e, at, "steps", &m->steps) ||
            !get_u64(r, e, at, "steps_in_window", &m->steps_in_window) ||
            !get_i64(r, e, at, "bytes_per_step", &m->bytes_per_step) || !read_memory_oom(r, e, at, m) ||
            !read_memory_samples(r, e, at, m))
            return false;
    }
    return true;
}

/* A peak line's optional "freed": {"site", "bytes"} (absent: -1 and 0). */
static bool read_memory_line_freed(Reader *r, json_t *e, const char *at, ProfMemLine *l) {
    json_t *o = json_object_get(e, "freed");
    l->freed_site = -1;
    l->freed_bytes = 0;
    if (!o) return true;
    if (!json_is_object(o)) return FAIL(r, at, "freed", "must be an object");
    char path[80];
    snprintf(path, sizeof path, "%s.freed", at);
    return get_index(r, o, path, "site", false, &l->freed_site) &&
           uint_value(r, member(r, o, path, "bytes"), path, "bytes", 1, MAX_JSON_INTEGER, &l->freed_bytes);
}

static const char *mem_line_kind_name(int k) { return prof_mem_line_kind_name((ProfMemLineKind)k); }

static bool read_memory_lines(Reader *r, json_t *root, Profile *p) {
    const char *key = "memory_lines";
    json_t *a;
    if (!json_object_get(root, key)) return true;
    if (!get_array(r, root, "", key, PROFILE_MAX_MEMORY_LINES, &a) ||
        !ALLOCATE(r, p->memory_lines, p->memory_line_count, json_array_size(a)))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i);
        char at[48];
        snprintf(at, sizeof at, "%s[%zu]", key, i);
        ProfMemLine *l = &p->memory_lines[i];
        int kind = 0;
        if (!entry_object(r, e, at) || !get_index(r, e, at, "memory", false, &l->memory) ||
            !get_enum(r, e, at, "kind", mem_line_kind_name, PROF_MEM_LINE_KIND_COUNT, &kind) ||
            !get_index(r, e, at, "site", true, &l->site) || !get_u64(r, e, at, "bytes", &l->bytes) ||
            !get_u64(r, e, at, "count", &l->count) || !read_memory_line_freed(r, e, at, l))
            return false;
        l->kind = (ProfMemLineKind)kind;
    }
    return true;
}

/* ---- the top level --------------------------------------------------------------------- */

static bool read_identity(Reader *r, json_t *root) {
    json_t *format = json_object_get(root, "format");
    if (!json_is_string(format) || strcmp(json_string_value(format), PROFILE_FORMAT) != 0)
        return prof_fail(r->error, "format: not an advise profile (\"format\" must be \"%s\")", PROFILE_FORMAT);
    json_t *version = member(r, root, "", "version");
    if (!version) return false;
    if (!json_is_integer(version)) return prof_fail(r->error, "version: must be an integer");
    json_int_t v = json_integer_value(version);
    if (v > PROFILE_VERSION)
        return prof_fail(r->error,
                         "version: %lld: this profile was written by a newer advise (this one reads version %d); "
                         "upgrade advise to read it",
                         (long long)v, PROFILE_VERSION);
    if (v != PROFILE_VERSION)
        return prof_fail(r->error, "version: %lld is not a version of the format (this advise reads version %d)",
                         (long long)v, PROFILE_VERSION);
    json_t *kind = member(r, root, "", "kind");
    if (!kind) return false;
    const char *k = json_is_string(kind) ? json_string_value(kind) : "";
    bool final = strcmp(k, "final") == 0, part = strcmp(k, "part") == 0;
    if (!final && !part) return prof_fail(r->error, "kind: must be \"final\" or \"part\"");
    if (part && r->kind == PROFILE_FINAL)
        return prof_fail(r->error, "kind: a \"part\" profile (what one profiled process writes before `advise "
                                   "profile` merges them), where a \"final\" profile was expected");
    if (final && r->kind == PROFILE_PART)
        return prof_fail(r->error, "kind: a \"final\" profile, where a \"part\" profile (what one profiled "
                                   "process writes) was expected");
    return true;
}

static bool read_header(Reader *r, json_t *root, Profile *p) {
    json_t *command, *dropped;
    if (!get_string(r, root, "", "name", false, &p->name) || !get_string(r, root, "", "source", false, &p->source) ||
        !get_string(r, root, "", "created", false, &p->created) ||
        !get_string(r, root, "", "tool", false, &p->tool) ||
        !get_array(r, root, "", "command", PROFILE_MAX_COMMAND_ARGS, &command) ||
        !ALLOCATE(r, p->command, p->command_count, json_array_size(command)))
        return false;
    for (size_t i = 0; i < p->command_count; i++) {
        char position[24];
        snprintf(position, sizeof position, "[%zu]", i);
        if (!string_value(r, json_array_get(command, i), "command", position, false, &p->command[i])) return false;
    }
    if (!(dropped = member(r, root, "", "dropped"))) return false;
    if (!json_is_object(dropped)) return prof_fail(r->error, "dropped: must be an object");
    return get_u64(r, dropped, "dropped", "kernels", &p->dropped_kernels) &&
           get_u64(r, dropped, "dropped", "ops", &p->dropped_ops) &&
           get_u64(r, dropped, "dropped", "sites", &p->dropped_sites);
}

Profile *profile_from_json(const char *text, size_t length, ProfileKind kind, char **error) {
    if (error) *error = NULL;
    if (!text) {
        prof_fail(error, "no profile text");
        return NULL;
    }
    if (length > PROFILE_MAX_FILE_BYTES) {
        prof_fail(error, "%zu bytes, more than the %u a profile may have", length, PROFILE_MAX_FILE_BYTES);
        return NULL;
    }
    if (!profile_prescan(text, length, error)) return NULL;
    json_error_t problem;
    json_t *root = json_loadb(text, length, JSON_REJECT_DUPLICATES, &problem);
    if (!root) {
        prof_fail(error, "line %d, column %d: %s", problem.line, problem.column, problem.text);
        return NULL;
    }
    Reader r = {kind, error};
    Profile *p = profile_new();
    bool ok = p != NULL;
    if (ok && !json_is_object(root)) ok = prof_fail(error, "not an advise profile: the top level is not an object");
    ok = ok && read_identity(&r, root) && read_header(&r, root, p) && read_processes(&r, root, p) &&
         read_devices(&r, root, p) && read_files(&r, root, p) && read_sites(&r, root, p) &&
         read_kernels(&r, root, p) && read_ops(&r, root, p) && read_apis(&r, root, p) &&
         read_overheads(&r, root, p) && read_timelines(&r, root, p) && read_gaps(&r, root, p) &&
         read_line_metrics(&r, root, p) && read_memories(&r, root, p) && read_memory_lines(&r, root, p) &&
         profile_check(p, kind, error);
    json_decref(root);
    if (!ok) {
        prof_fail(error, "out of memory"); /* unless a message is set already */
        profile_free(p);
        return NULL;
    }
    return p;
}
