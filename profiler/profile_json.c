/* Writing profiles as JSON, and the files: the atomic write and the careful
 * read (profile_json_parse.c turns the text into a Profile).
 *
 * The text is compact JSON with one top-level key per line and one array
 * entry per line, so that two profiles compare well with diff. The same
 * Profile always gives the same bytes. */
#include "profiler/profile_json.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/base/read_bounded.h"
#include "analysis/base/atomic_file.h"
#include "analysis/base/growable.h"
#include "profiler/profile_check.h"
#include "profiler/profile_internal.h"

/* ---- building JSON values --------------------------------------------------------
 * Each builder returns a new value or NULL when out of memory. The profile has
 * passed profile_check, so every integer fits a JSON integer and every string
 * is valid UTF-8. */

typedef struct {
    json_t *object;
    bool ok;
} Obj;

static Obj obj_new(void) {
    json_t *o = json_object();
    return (Obj){o, o != NULL};
}

/* takes value (NULL means out of memory) */
static void put(Obj *o, const char *key, json_t *value) {
    if (!value || !o->ok || json_object_set_new(o->object, key, value) != 0) {
        json_decref(value);
        o->ok = false;
    }
}

static json_t *obj_done(Obj *o) {
    if (o->ok) return o->object;
    json_decref(o->object);
    return NULL;
}

static json_t *integer(uint64_t v) { return json_integer((json_int_t)v); }
static json_t *string_or_null(const char *s) { return s ? json_string(s) : json_null(); }
static json_t *index_or_null(int i) { return i >= 0 ? json_integer(i) : json_null(); }

static json_t *integers(const uint32_t *v, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, integer(v[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *stats_json(const ProfStats *s) {
    Obj o = obj_new();
    put(&o, "count", integer(s->count));
    put(&o, "total_ns", integer(s->total_ns));
    put(&o, "min_ns", integer(s->min_ns));
    put(&o, "median_ns", integer(s->median_ns));
    put(&o, "max_ns", integer(s->max_ns));
    return obj_done(&o);
}

static json_t *process_json(const Profile *p, size_t i) {
    const ProfProcess *proc = &p->processes[i];
    Obj o = obj_new();
    put(&o, "pid", json_integer(proc->pid));
    put(&o, "rank", index_or_null(proc->rank));
    put(&o, "local_rank", index_or_null(proc->local_rank));
    put(&o, "world_size", index_or_null(proc->world_size));
    put(&o, "wall_ns", integer(proc->wall_ns));
    if (proc->host_wait_known) put(&o, "host_wait_ns", integer(proc->host_wait_ns)); /* absent: not measured */
    put(&o, "error", string_or_null(proc->error));
    const ProfCalibration *c = &proc->calibration;
    if (c->trace_every) { /* written only when known (imported traces have none) */
        Obj k = obj_new();
        put(&k, "trace_every", integer(c->trace_every));
        put(&k, "launches", integer(c->launches));
        put(&k, "traced_launches", integer(c->traced_launches));
        put(&k, "traced_launch_api_ns", integer(c->traced_launch_api_ns));
        put(&k, "untraced_launches", integer(c->untraced_launches));
        put(&k, "untraced_launch_api_ns", integer(c->untraced_launch_api_ns));
        put(&k, "callback_ns", integer(c->callback_ns));
        put(&o, "calibration", obj_done(&k));
    }
    const ProfSteps *s = &proc->steps;
    if (s->count) { /* written only when steps were recorded */
        Obj k = obj_new();
        put(&k, "count", integer(s->count));
        put(&k, "median_ns", integer(s->median_ns));
        put(&k, "first_ns", integer(s->first_ns));
        put(&k, "warmup_steps", integer(s->warmup_steps));
        put(&k, "warmup_ns", integer(s->warmup_ns));
        put(&k, "steady_steps", integer(s->steady_steps));
        put(&k, "steady_ns", integer(s->steady_ns));
        put(&k, "slow_steps", integer(s->slow_steps));
        put(&k, "slow_ns", integer(s->slow_ns));
        put(&k, "after_ns", integer(s->after_ns));
        if (s->phase_idle_known) {
            Obj idle = obj_new(), acts = obj_new();
            for (int ph = PROF_PHASE_FIRST; ph < PROF_PHASE_COUNT; ph++) {
                put(&idle, prof_phase_name((ProfPhase)ph), integer(s->idle_ns[ph]));
                put(&acts, prof_phase_name((ProfPhase)ph), integer(s->activities[ph]));
            }
            put(&k, "idle_ns", obj_done(&idle));
            put(&k, "activities", obj_done(&acts));
        }
        put(&o, "steps", obj_done(&k));
    }
    return obj_done(&o);
}

static json_t *device_json(const Profile *p, size_t i) {
    const ProfDevice *d = &p->devices[i];
    uint32_t cc[2] = {d->cc_major, d->cc_minor};
    Obj o = obj_new();
    put(&o, "process", json_integer(d->process));
    put(&o, "id", integer(d->id));
    put(&o, "name", json_string(d->name));
    put(&o, "sm_count", integer(d->sm_count));
    put(&o, "compute_capability", integers(cc, 2));
    put(&o, "memory_bytes", integer(d->memory_bytes));
    put(&o, "bandwidth_bytes_per_s", integer(d->bandwidth_bytes_per_s));
    put(&o, "max_warps_per_sm", integer(d->max_warps_per_sm));
    put(&o, "max_blocks_per_sm", integer(d->max_blocks_per_sm));
    put(&o, "max_registers_per_sm", integer(d->max_registers_per_sm));
    put(&o, "max_shared_per_sm", integer(d->max_shared_per_sm));
    put(&o, "max_registers_per_block", integer(d->max_registers_per_block));
    put(&o, "max_shared_per_block", integer(d->max_shared_per_block));
    put(&o, "max_threads_per_block", integer(d->max_threads_per_block));
    put(&o, "l2_bytes", integer(d->l2_bytes));
    return obj_done(&o);
}

static json_t *file_json(const Profile *p, size_t i) {
    Obj o = obj_new();
    put(&o, "path", json_string(p->files[i].path));
    put(&o, "sha256", string_or_null(p->files[i].sha256));
    return obj_done(&o);
}

static json_t *frames_json(const ProfSite *s) {
    json_t *a = json_array();
    for (size_t f = 0; a && f < s->frame_count; f++) {
        Obj o = obj_new();
        put(&o, "module", json_string(s->frames[f].module));
        put(&o, "address", integer(s->frames[f].address));
        if (json_array_append_new(a, obj_done(&o)) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *site_json(const Profile *p, size_t i) {
    const ProfSite *s = &p->sites[i];
    Obj o = obj_new();
    put(&o, "file", index_or_null(s->file));
    put(&o, "line", integer(s->line));
    put(&o, "function", string_or_null(s->function));
    put(&o, "function_level", json_boolean(s->function_level));
    if (s->file < 0) put(&o, "frames", frames_json(s)); /* a resolved site's frames are not written */
    return obj_done(&o);
}

static json_t *kernel_json(const Profile *p, size_t i) {
    const ProfKernel *k = &p->kernels[i];
    Obj o = obj_new();
    put(&o, "process", json_integer(k->process));
    put(&o, "device", index_or_null(k->device));
    put(&o, "name", json_string(k->name));
    put(&o, "grid", integers(k->grid, 3));
    put(&o, "block", integers(k->block, 3));
    put(&o, "registers", integer(k->registers));
    put(&o, "static_shared", integer(k->static_shared));
    put(&o, "dynamic_shared", integer(k->dynamic_shared));
    put(&o, "local_per_thread", integer(k->local_per_thread));
    put(&o, "stats", stats_json(&k->stats));
    if (k->critical.known) put(&o, "critical_ns", integer(k->critical.ns)); /* absent: not measured */
    return obj_done(&o);
}

/* only the fields of the op's kind are written */
static json_t *op_json(const Profile *p, size_t i) {
    const ProfOp *op = &p->ops[i];
    Obj o = obj_new();
    put(&o, "kind", json_string(prof_op_kind_name(op->kind)));
    put(&o, "process", json_integer(op->process));
    put(&o, "site", index_or_null(op->site));
    switch (op->kind) {
    case PROF_OP_LAUNCH:
        put(&o, "kernel", json_integer(op->kernel));
        break;
    case PROF_OP_MEMCPY:
        put(&o, "copy", json_string(prof_copy_kind_name(op->copy)));
        put(&o, "src", json_string(prof_mem_kind_name(op->src)));
        put(&o, "dst", json_string(prof_mem_kind_name(op->dst)));
        put(&o, "bytes", integer(op->bytes));
        break;
    case PROF_OP_MEMSET:
    case PROF_OP_ALLOC:
        put(&o, "dst", json_string(prof_mem_kind_name(op->dst)));
        put(&o, "bytes", integer(op->bytes));
        break;
    case PROF_OP_SYNC:
        put(&o, "sync", json_string(prof_sync_kind_name(op->sync)));
        break;
    default:
        break;
    }
    put(&o, "stats", stats_json(&op->stats));
    if (op->critical.known && prof_op_has_critical(op->kind)) put(&o, "critical_ns", integer(op->critical.ns));
    if (op->steady.known && prof_op_has_critical(op->kind)) {
        put(&o, "steady_count", integer(op->steady.count));
        if (op->steady.idle_known) put(&o, "steady_idle_ns", integer(op->steady.idle_ns));
    }
    return obj_done(&o);
}

static json_t *api_json(const Profile *p, size_t i) {
    Obj o = obj_new();
    put(&o, "process", json_integer(p->apis[i].process));
    put(&o, "name", json_string(p->apis[i].name));
    put(&o, "stats", stats_json(&p->apis[i].stats));
    return obj_done(&o);
}

static json_t *overhead_json(const Profile *p, size_t i) {
    Obj o = obj_new();
    put(&o, "process", json_integer(p->overheads[i].process));
    put(&o, "kind", json_string(p->overheads[i].kind));
    put(&o, "stats", stats_json(&p->overheads[i].stats));
    return obj_done(&o);
}

static json_t *timeline_json(const Profile *p, size_t i) {
    const ProfTimeline *t = &p->timelines[i];
    Obj o = obj_new();
    put(&o, "process", json_integer(t->process));
    put(&o, "device", json_integer(t->device));
    put(&o, "span_ns", integer(t->span_ns));
    put(&o, "busy_ns", integer(t->busy_ns));
    put(&o, "idle_ns", integer(t->idle_ns));
    put(&o, "compute_ns", integer(t->compute_ns));
    put(&o, "comm_ns", integer(t->comm_ns));
    put(&o, "exposed_comm_ns", integer(t->exposed_comm_ns));
    return obj_done(&o);
}

static json_t *gap_json(const Profile *p, size_t i) {
    const ProfGap *g = &p->gaps[i];
    Obj o = obj_new();
    put(&o, "process", json_integer(g->process));
    put(&o, "device", json_integer(g->device));
    put(&o, "start_ns", integer(g->start_ns));
    put(&o, "duration_ns", integer(g->duration_ns));
    put(&o, "before_site", index_or_null(g->before_site));
    put(&o, "after_site", index_or_null(g->after_site));
    if (g->weight > 1) put(&o, "weight", integer(g->weight)); /* absent: 1 */
    if (prof_phase_name(g->phase)) put(&o, "phase", json_string(prof_phase_name(g->phase))); /* absent: unknown */
    return obj_done(&o);
}

static json_t *line_metric_json(const Profile *p, size_t i) {
    const ProfLineMetrics *m = &p->line_metrics[i];
    Obj o = obj_new();
    put(&o, "kernel", json_string(m->kernel));
    put(&o, "file", json_integer(m->file));
    put(&o, "line", integer(m->line));
    put(&o, "launches", integer(m->launches));
    put(&o, "instructions", integer(m->instructions));
    put(&o, "global_sectors", integer(m->global_sectors));
    put(&o, "global_sectors_ideal", integer(m->global_sectors_ideal));
    put(&o, "shared_wavefronts", integer(m->shared_wavefronts));
    put(&o, "shared_wavefronts_ideal", integer(m->shared_wavefronts_ideal));
    put(&o, "local_sectors", integer(m->local_sectors));
    put(&o, "inlined_instructions", integer(m->inlined_instructions));
    return obj_done(&o);
}

static json_t *memory_json(const Profile *p, size_t i) {
    const ProfMemory *m = &p->memories[i];
    Obj o = obj_new();
    put(&o, "process", json_integer(m->process));
    put(&o, "device", integer(m->device));
    put(&o, "source", json_string(prof_mem_source_name(m->source)));
    put(&o, "events", integer(m->events));
    put(&o, "window_complete", json_boolean(m->window_complete));
    put(&o, "max_allocated", integer(m->max_allocated));
    put(&o, "max_reserved", integer(m->max_reserved));
    put(&o, "peak_time_ns", integer(m->peak_time_ns));
    put(&o, "peak_allocated", integer(m->peak_allocated));
    put(&o, "peak_reserved", integer(m->peak_reserved));
    put(&o, "steps", integer(m->steps));
    put(&o, "steps_in_window", integer(m->steps_in_window));
    put(&o, "bytes_per_step", json_integer(m->bytes_per_step));
    if (m->oom) {
        Obj oom = obj_new();
        put(&oom, "time_ns", integer(m->oom_time_ns));
        put(&oom, "bytes", integer(m->oom_bytes));
        put(&oom, "device_free", integer(m->oom_device_free));
        put(&oom, "allocated", integer(m->oom_allocated));
        put(&oom, "site", index_or_null(m->oom_site));
        put(&o, "oom", obj_done(&oom));
    } else {
        put(&o, "oom", json_null());
    }
    json_t *samples = json_array();
    for (size_t k = 0; samples && k < m->sample_count; k++) {
        const ProfMemSample *s = &m->samples[k];
        json_t *row = json_pack("[ooo]", integer(s->time_ns), integer(s->allocated), integer(s->reserved));
        if (!row || json_array_append_new(samples, row) != 0) {
            json_decref(samples);
            samples = NULL;
        }
    }
    put(&o, "samples", samples);
    return obj_done(&o);
}

static json_t *memory_line_json(const Profile *p, size_t i) {
    const ProfMemLine *l = &p->memory_lines[i];
    Obj o = obj_new();
    put(&o, "memory", json_integer(l->memory));
    put(&o, "kind", json_string(prof_mem_line_kind_name(l->kind)));
    put(&o, "site", index_or_null(l->site));
    put(&o, "bytes", integer(l->bytes));
    put(&o, "count", integer(l->count));
    if (l->freed_bytes) {
        Obj freed = obj_new();
        put(&freed, "site", json_integer(l->freed_site));
        put(&freed, "bytes", integer(l->freed_bytes));
        put(&o, "freed", obj_done(&freed));
    }
    return obj_done(&o);
}

/* ---- the text ------------------------------------------------------------------------ */

typedef struct {
    char *data;
    size_t length, capacity;
    bool ok;
    bool too_big;   /* more than a reader accepts: writing stopped there */
} Text;

static void append(Text *t, const char *s, size_t n) {
    if (!t->ok) return;
    if (n > (size_t)PROFILE_MAX_FILE_BYTES + 1 - t->length) { /* + 1: the final NUL */
        t->ok = false;
        t->too_big = true;
        return;
    }
    if (!array_reserve_n(&t->data, t->length, n, &t->capacity, 1, 4096)) {
        t->ok = false;
        return;
    }
    memcpy(t->data + t->length, s, n);
    t->length += n;
}

static void append_str(Text *t, const char *s) { append(t, s, strlen(s)); }

/* one value, compact; takes value (NULL means out of memory) */
static void append_value(Text *t, json_t *value) {
    char *s = value ? json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY) : NULL;
    json_decref(value);
    if (!s) {
        t->ok = false;
        return;
    }
    append_str(t, s);
    free(s);
}

/* `"key":value,` on a line of its own */
static void append_member(Text *t, const char *key, json_t *value) {
    append_str(t, "\"");
    append_str(t, key);
    append_str(t, "\":");
    append_value(t, value);
    append_str(t, ",\n");
}

/* an array with one entry per line; the last member of the object when last */
static void append_array(Text *t, const char *key, const Profile *p, size_t count,
                         json_t *(*entry)(const Profile *, size_t), bool last) {
    append_str(t, "\"");
    append_str(t, key);
    append_str(t, count ? "\":[\n" : "\":[");
    for (size_t i = 0; i < count && t->ok; i++) {
        append_value(t, entry(p, i));
        append_str(t, i + 1 < count ? ",\n" : "\n");
    }
    append_str(t, last ? "]\n" : "],\n");
}

static json_t *command_json(const Profile *p) {
    json_t *a = json_array();
    for (size_t i = 0; a && i < p->command_count; i++)
        if (json_array_append_new(a, json_string(p->command[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *dropped_json(const Profile *p) {
    Obj o = obj_new();
    put(&o, "kernels", integer(p->dropped_kernels));
    put(&o, "ops", integer(p->dropped_ops));
    put(&o, "sites", integer(p->dropped_sites));
    return obj_done(&o);
}

char *profile_to_json(const Profile *p, ProfileKind kind, char **error) {
    if (error) *error = NULL;
    if (!profile_check(p, kind, error)) return NULL;
    Text t = {NULL, 0, 0, true, false};
    append_str(&t, "{\n");
    append_member(&t, "format", json_string(PROFILE_FORMAT));
    append_member(&t, "version", json_integer(PROFILE_VERSION));
    append_member(&t, "kind", json_string(kind == PROFILE_FINAL ? "final" : "part"));
    append_member(&t, "name", json_string(p->name));
    append_member(&t, "source", json_string(p->source));
    append_member(&t, "created", json_string(p->created));
    append_member(&t, "tool", json_string(p->tool));
    append_member(&t, "command", command_json(p));
    append_member(&t, "dropped", dropped_json(p));
    append_array(&t, "processes", p, p->process_count, process_json, false);
    append_array(&t, "devices", p, p->device_count, device_json, false);
    append_array(&t, "files", p, p->file_count, file_json, false);
    append_array(&t, "sites", p, p->site_count, site_json, false);
    append_array(&t, "kernels", p, p->kernel_count, kernel_json, false);
    append_array(&t, "ops", p, p->op_count, op_json, false);
    append_array(&t, "apis", p, p->api_count, api_json, false);
    append_array(&t, "overheads", p, p->overhead_count, overhead_json, false);
    append_array(&t, "timelines", p, p->timeline_count, timeline_json, false);
    append_array(&t, "gaps", p, p->gap_count, gap_json, false);
    /* memory is written only when recorded (--memory), so other profiles read as before */
    bool memory = p->memory_count > 0;
    append_array(&t, "line_metrics", p, p->line_metric_count, line_metric_json, !memory);
    if (memory) {
        append_array(&t, "memory", p, p->memory_count, memory_json, false);
        append_array(&t, "memory_lines", p, p->memory_line_count, memory_line_json, true);
    }
    append_str(&t, "}\n");
    append(&t, "", 1);
    if (!t.ok) {
        free(t.data);
        if (t.too_big)
            prof_fail(error, "the profile would be more than the %u bytes a profile file may have (are some names "
                      "very long?)", PROFILE_MAX_FILE_BYTES);
        else
            prof_fail(error, "out of memory while writing the profile");
        return NULL;
    }
    return t.data;
}

/* ---- files ------------------------------------------------------------------------------ */

bool profile_write_file(const Profile *p, ProfileKind kind, const char *path, char **error) {
    if (error) *error = NULL;
    if (!path || !*path) return prof_fail(error, "no path to write the profile to");
    char *problem = NULL;
    char *text = profile_to_json(p, kind, &problem);
    if (!text) {
        prof_fail(error, "%s: %s", path, problem ? problem : "out of memory");
        free(problem);
        return false;
    }
    char *problem_writing = NULL;
    bool ok = atomic_file_write_bytes(path, NULL, text, strlen(text), &problem_writing);
    if (!ok) {
        prof_fail(error, "%s", problem_writing ? problem_writing : "out of memory");
        free(problem_writing);
    }
    free(text);
    return ok;
}

Profile *profile_read_file(const char *path, ProfileKind kind, char **error) {
    if (error) *error = NULL;
    if (!path || !*path) {
        prof_fail(error, "no profile path given");
        return NULL;
    }
    /* never open a FIFO or a device: opening one can block or act */
    struct stat st;
    if (stat(path, &st) != 0) {
        prof_fail(error, "%s: %s", path, strerror(errno));
        return NULL;
    }
    int fd = S_ISREG(st.st_mode) ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY) : -1;
    if (fd < 0 && S_ISREG(st.st_mode)) {
        prof_fail(error, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0) close(fd);
        prof_fail(error, "%s: not a regular file", path);
        return NULL;
    }
    if ((uint64_t)st.st_size > PROFILE_MAX_FILE_BYTES) {
        close(fd);
        prof_fail(error, "%s: %lld bytes, more than the %u a profile may have", path, (long long)st.st_size,
                  PROFILE_MAX_FILE_BYTES);
        return NULL;
    }
    /* read to the end even if the file grew since fstat, up to the cap */
    char *text = NULL;
    size_t length = 0;
    bool too_large = false;
    bool ok = read_fd_bounded(fd, PROFILE_MAX_FILE_BYTES, &text, &length, &too_large);
    int saved = errno;
    close(fd);
    if (!ok) {
        prof_fail(error, "%s: %s", path, saved == ENOMEM ? "out of memory" : strerror(saved));
        return NULL;
    }
    if (too_large) {
        free(text);
        prof_fail(error, "%s: more than the %u bytes a profile may have", path, PROFILE_MAX_FILE_BYTES);
        return NULL;
    }
    char *problem = NULL;
    Profile *p = profile_from_json(text, length, kind, &problem);
    free(text);
    if (!p) prof_fail(error, "%s: %s", path, problem ? problem : "out of memory");
    free(problem);
    return p;
}
