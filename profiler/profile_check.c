#include "profiler/profile_check.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analysis/base/hash_index.h"
#include "profiler/profile_internal.h"

typedef struct {
    const Profile *p;
    ProfileKind kind;
    char **error;
} Check;

#define MAX_JSON_INTEGER ((uint64_t)INT64_MAX)

/* at is the JSON path of the object ("" at the top level), field its key */
static const char *dot(const char *at) { return *at ? "." : ""; }

/* ---- the pieces ------------------------------------------------------------------- */

/* As strict as jansson: no overlong forms, no surrogates, nothing past U+10FFFF. */
bool profile_utf8_ok(const char *text, size_t length) {
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < length;) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07;
        else return false;
        if (length - i < n) return false;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return false;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += n;
    }
    return true;
}

static bool digits(const char *s, int n, int min, int max) {
    int value = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        value = value * 10 + (s[i] - '0');
    }
    return value >= min && value <= max;
}

bool profile_created_ok(const char *s) {
    return s && strlen(s) == 20 && digits(s, 4, 0, 9999) && s[4] == '-' && digits(s + 5, 2, 1, 12) && s[7] == '-' &&
           digits(s + 8, 2, 1, 31) && s[10] == 'T' && digits(s + 11, 2, 0, 23) && s[13] == ':' &&
           digits(s + 14, 2, 0, 59) && s[16] == ':' && digits(s + 17, 2, 0, 60) && s[19] == 'Z';
}

bool profile_sha256_ok(const char *s) {
    if (!s || strlen(s) != 64) return false;
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

bool profile_module_path_ok(const char *s) {
    if (!s || s[0] != '/') return false;
    for (const char *c = s; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) return false;
    return true;
}

bool profile_source_ok(const char *s) { return s && (strcmp(s, "cupti") == 0 || strcmp(s, "torch-profiler") == 0); }

/* ---- fields ------------------------------------------------------------------------- */

static bool string_ok(Check *c, const char *at, const char *field, const char *s, bool nullable) {
    if (!s) return nullable || prof_fail(c->error, "%s%s%s: missing", at, dot(at), field);
    size_t length = strlen(s);
    if (length > PROFILE_MAX_STRING)
        return prof_fail(c->error, "%s%s%s: %zu bytes long, more than the %u a string may have", at, dot(at), field,
                         length, PROFILE_MAX_STRING);
    if (!profile_utf8_ok(s, length)) return prof_fail(c->error, "%s%s%s: not valid UTF-8", at, dot(at), field);
    return true;
}

static bool integer_ok(Check *c, const char *at, const char *field, uint64_t value) {
    return value <= MAX_JSON_INTEGER ||
           prof_fail(c->error, "%s%s%s: %llu is more than 2^63-1, the largest integer a profile may hold", at, dot(at),
                     field, (unsigned long long)value);
}

static bool index_ok(Check *c, const char *at, const char *field, int i, size_t count, const char *array,
                     bool nullable) {
    if (i == -1 && nullable) return true;
    if (i >= 0 && (size_t)i < count) return true;
    if (i == -1) return prof_fail(c->error, "%s.%s: missing (an index into %s is required)", at, field, array);
    return prof_fail(c->error, "%s.%s: %d is not an index into %s, which has %zu entries", at, field, i, array, count);
}

/* a device (index already checked) belongs to the process of the entry that names it */
static bool device_of_ok(Check *c, const char *at, int device, int process) {
    int owner = c->p->devices[device].process;
    return owner == process ||
           prof_fail(c->error, "%s.device: device %d belongs to process %d, not to process %d", at, device, owner,
                     process);
}

static bool stats_ok(Check *c, const char *owner, const ProfStats *s) {
    char at[64];
    snprintf(at, sizeof at, "%s.stats", owner);
    if (!integer_ok(c, at, "count", s->count) || !integer_ok(c, at, "total_ns", s->total_ns) ||
        !integer_ok(c, at, "min_ns", s->min_ns) || !integer_ok(c, at, "median_ns", s->median_ns) ||
        !integer_ok(c, at, "max_ns", s->max_ns))
        return false;
    if (s->count == 0) {
        if (s->total_ns || s->min_ns || s->median_ns || s->max_ns)
            return prof_fail(c->error, "%s: count is 0, so total_ns, min_ns, median_ns and max_ns must be 0", at);
        return true;
    }
    if (s->median_ns < s->min_ns) return prof_fail(c->error, "%s.median_ns: less than min_ns", at);
    if (s->max_ns < s->median_ns) return prof_fail(c->error, "%s.max_ns: less than median_ns", at);
    if (s->total_ns < s->max_ns) return prof_fail(c->error, "%s.total_ns: less than max_ns", at);
    return true;
}

static bool cap_ok(Check *c, const char *array, size_t count, size_t cap) {
    return count <= cap ||
           prof_fail(c->error, "%s: %zu entries, more than the %zu allowed", array, count, cap);
}

static bool enum_ok(Check *c, const char *at, const char *field, int value, int count) {
    return (value >= 0 && value < count) || prof_fail(c->error, "%s.%s: %d is not a known value", at, field, value);
}

/* ---- arrays -------------------------------------------------------------------------- */

static bool header_ok(Check *c) {
    const Profile *p = c->p;
    if (!string_ok(c, "", "name", p->name, false) || !string_ok(c, "", "source", p->source, false) ||
        !string_ok(c, "", "created", p->created, false) || !string_ok(c, "", "tool", p->tool, false))
        return false;
    if (!profile_source_ok(p->source))
        return prof_fail(c->error, "source: \"%s\" is not one of \"cupti\", \"torch-profiler\"", p->source);
    if (!profile_created_ok(p->created))
        return prof_fail(c->error, "created: \"%s\" is not a UTC time like \"2026-11-30T15:01:02Z\"", p->created);
    if (!cap_ok(c, "command", p->command_count, PROFILE_MAX_COMMAND_ARGS)) return false;
    for (size_t i = 0; i < p->command_count; i++) {
        char field[32];
        snprintf(field, sizeof field, "command[%zu]", i);
        if (!string_ok(c, "", field, p->command[i], false)) return false;
    }
    return integer_ok(c, "dropped", "kernels", p->dropped_kernels) && integer_ok(c, "dropped", "ops", p->dropped_ops) &&
           integer_ok(c, "dropped", "sites", p->dropped_sites);
}

static bool rank_ok(Check *c, const char *at, const char *field, int value) {
    return value >= -1 ||
           prof_fail(c->error, "%s.%s: %d; must be -1 (none, null in JSON) or a number from 0", at, field, value);
}

static bool processes_ok(Check *c) {
    const Profile *p = c->p;
    for (size_t i = 0; i < p->process_count; i++) {
        const ProfProcess *proc = &p->processes[i];
        char at[48];
        snprintf(at, sizeof at, "processes[%zu]", i);
        if (proc->pid < 0) return prof_fail(c->error, "%s.pid: %lld is negative", at, (long long)proc->pid);
        if (!rank_ok(c, at, "rank", proc->rank) || !rank_ok(c, at, "local_rank", proc->local_rank) ||
            !rank_ok(c, at, "world_size", proc->world_size) || !integer_ok(c, at, "wall_ns", proc->wall_ns) ||
            !string_ok(c, at, "error", proc->error, true) ||
            (proc->host_wait_known && !integer_ok(c, at, "host_wait_ns", proc->host_wait_ns)))
            return false;
        const ProfCalibration *k = &proc->calibration;
        if (k->trace_every > (1u << 20))
            return prof_fail(c->error, "%s.calibration.trace_every: %u is more than %u", at, k->trace_every, 1u << 20);
        if (k->trace_every && (k->traced_launches > k->launches || k->untraced_launches > k->launches))
            return prof_fail(c->error, "%s.calibration: more traced or untraced launches than launches", at);
        const ProfSteps *s = &proc->steps;
        uint64_t phased = s->warmup_steps + s->steady_steps + s->slow_steps;
        if (s->count && (phased > s->count || s->warmup_steps > s->count || s->steady_steps > s->count))
            return prof_fail(c->error, "%s.steps: more steps in its phases than steps", at);
        if (!s->count && (phased || s->median_ns || s->first_ns || s->after_ns))
            return prof_fail(c->error, "%s.steps: phases without steps", at);
        if (!integer_ok(c, at, "steps.median_ns", s->median_ns) || !integer_ok(c, at, "steps.first_ns", s->first_ns) ||
            !integer_ok(c, at, "steps.warmup_ns", s->warmup_ns) || !integer_ok(c, at, "steps.steady_ns", s->steady_ns) ||
            !integer_ok(c, at, "steps.slow_ns", s->slow_ns) || !integer_ok(c, at, "steps.after_ns", s->after_ns))
            return false;
        if (s->phase_idle_known && !s->count) return prof_fail(c->error, "%s.steps: idle by phase without steps", at);
        for (int ph = 0; ph < PROF_PHASE_COUNT; ph++) {
            if (!integer_ok(c, at, "steps.idle_ns", s->idle_ns[ph]) ||
                !integer_ok(c, at, "steps.activities", s->activities[ph]))
                return false;
            if (!s->phase_idle_known && (s->idle_ns[ph] || s->activities[ph]))
                return prof_fail(c->error, "%s.steps: idle figures marked unknown", at);
        }
        if (s->idle_ns[PROF_PHASE_UNKNOWN] || s->activities[PROF_PHASE_UNKNOWN])
            return prof_fail(c->error, "%s.steps: idle time outside every phase", at);
    }
    return true;
}

static bool devices_ok(Check *c) {
    const Profile *p = c->p;
    for (size_t i = 0; i < p->device_count; i++) {
        const ProfDevice *d = &p->devices[i];
        char at[48];
        snprintf(at, sizeof at, "devices[%zu]", i);
        if (!index_ok(c, at, "process", d->process, p->process_count, "processes", false) ||
            !string_ok(c, at, "name", d->name, false) || !integer_ok(c, at, "memory_bytes", d->memory_bytes) ||
            !integer_ok(c, at, "bandwidth_bytes_per_s", d->bandwidth_bytes_per_s))
            return false;
    }
    return true;
}

static bool files_ok(Check *c) {
    const Profile *p = c->p;
    HashIndex seen = {0};
    bool ok = true;
    for (size_t i = 0; ok && i < p->file_count; i++) {
        const ProfFile *f = &p->files[i];
        char at[48];
        snprintf(at, sizeof at, "files[%zu]", i);
        if (!string_ok(c, at, "path", f->path, false) || !string_ok(c, at, "sha256", f->sha256, true)) {
            ok = false;
        } else if (!profile_path_ok(f->path)) {
            ok = prof_fail(c->error,
                           "%s.path: \"%s\" is not a path inside the project (relative, '/'-separated, without "
                           "\".\", \"..\" or empty parts, backslashes or control characters)",
                           at, f->path);
        } else if (f->sha256 && !profile_sha256_ok(f->sha256)) {
            ok = prof_fail(c->error, "%s.sha256: must be 64 lowercase hex digits or null", at);
        } else {
            uint64_t hash = prof_file_key_hash(f->path);
            size_t cursor = 0;
            for (int j; ok && (j = hash_index_next(&seen, hash, &cursor)) >= 0;)
                if (strcmp(p->files[j].path, f->path) == 0)
                    ok = prof_fail(c->error, "%s.path: \"%s\" is also files[%d]; each file appears once", at, f->path,
                                   j);
            if (ok && !hash_index_add(&seen, hash, (int)i)) ok = prof_fail(c->error, "out of memory");
        }
    }
    hash_index_free(&seen);
    return ok;
}

static bool site_ok(Check *c, size_t i) {
    const Profile *p = c->p;
    const ProfSite *s = &p->sites[i];
    char at[48];
    snprintf(at, sizeof at, "sites[%zu]", i);
    if (!string_ok(c, at, "function", s->function, true)) return false;
    if (s->file != -1) { /* resolved; frames, if any, are not part of the format */
        if (!index_ok(c, at, "file", s->file, p->file_count, "files", false)) return false;
        return s->line >= 1 || prof_fail(c->error, "%s.line: must be 1 or more", at);
    }
    if (c->kind == PROFILE_FINAL)
        return prof_fail(c->error, "%s: not resolved to a source line; a final profile holds resolved sites only", at);
    if (s->line != 0) return prof_fail(c->error, "%s.line: must be 0 in an unresolved site", at);
    if (s->function_level) return prof_fail(c->error, "%s.function_level: must be false in an unresolved site", at);
    if (s->frame_count == 0 || !s->frames)
        return prof_fail(c->error, "%s.frames: an unresolved site needs at least one frame", at);
    if (s->frame_count > PROFILE_MAX_FRAMES)
        return prof_fail(c->error, "%s.frames: %zu entries, more than the %u allowed", at, s->frame_count,
                         PROFILE_MAX_FRAMES);
    for (size_t f = 0; f < s->frame_count; f++) {
        char frame[96];
        snprintf(frame, sizeof frame, "%s.frames[%zu]", at, f);
        if (!string_ok(c, frame, "module", s->frames[f].module, false) ||
            !integer_ok(c, frame, "address", s->frames[f].address))
            return false;
        if (!profile_module_path_ok(s->frames[f].module))
            return prof_fail(c->error, "%s.module: must be an absolute path without control characters", frame);
    }
    return true;
}

static bool sites_ok(Check *c) {
    const Profile *p = c->p;
    HashIndex seen = {0};
    bool ok = true;
    for (size_t i = 0; ok && i < p->site_count; i++) {
        if (!site_ok(c, i)) {
            ok = false;
            break;
        }
        ProfSite key = p->sites[i];
        if (key.file >= 0) key.frame_count = 0;
        uint64_t hash = prof_site_key_hash(&key);
        size_t cursor = 0;
        for (int j; ok && (j = hash_index_next(&seen, hash, &cursor)) >= 0;) {
            ProfSite other = p->sites[j];
            if (other.file >= 0) other.frame_count = 0;
            if (prof_site_same_key(&other, &key))
                ok = prof_fail(c->error, "sites[%zu]: the same site as sites[%d]; each site appears once", i, j);
        }
        if (ok && !hash_index_add(&seen, hash, (int)i)) ok = prof_fail(c->error, "out of memory");
    }
    hash_index_free(&seen);
    return ok;
}

/* Critical time is a part of the entry's GPU time. */
static bool critical_ok(Check *c, const char *at, const CriticalTime *critical, const ProfStats *stats) {
    if (!critical->known) return true;
    if (!integer_ok(c, at, "critical_ns", critical->ns)) return false;
    if (critical->ns > stats->total_ns)
        return prof_fail(c->error, "%s.critical_ns: %llu is more than stats.total_ns (%llu)", at,
                         (unsigned long long)critical->ns, (unsigned long long)stats->total_ns);
    return true;
}

/* The calls in the steady steps are some of the operation's calls. */
static bool steady_ok(Check *c, const char *at, const SteadyCount *steady, const ProfStats *stats) {
    if (!steady->known) return true;
    if (!integer_ok(c, at, "steady_count", steady->count)) return false;
    if (steady->idle_known && !integer_ok(c, at, "steady_idle_ns", steady->idle_ns)) return false;
    if (steady->count > stats->count)
        return prof_fail(c->error, "%s.steady_count: %llu is more than stats.count (%llu)", at,
                         (unsigned long long)steady->count, (unsigned long long)stats->count);
    return true;
}

static bool kernels_ok(Check *c) {
    const Profile *p = c->p;
    for (size_t i = 0; i < p->kernel_count; i++) {
        const ProfKernel *k = &p->kernels[i];
        char at[48];
        snprintf(at, sizeof at, "kernels[%zu]", i);
        if (!index_ok(c, at, "process", k->process, p->process_count, "processes", false) ||
            !index_ok(c, at, "device", k->device, p->device_count, "devices", true) ||
            (k->device >= 0 && !device_of_ok(c, at, k->device, k->process)) ||
            !string_ok(c, at, "name", k->name, false))
            return false;
        for (int d = 0; d < 3; d++) {
            if (k->grid[d] == 0) return prof_fail(c->error, "%s.grid[%d]: must be a positive integer", at, d);
            if (k->block[d] == 0) return prof_fail(c->error, "%s.block[%d]: must be a positive integer", at, d);
        }
        if (!stats_ok(c, at, &k->stats) || !critical_ok(c, at, &k->critical, &k->stats)) return false;
    }
    return true;
}

static bool op_ok(Check *c, size_t i) {
    const Profile *p = c->p;
    const ProfOp *op = &p->ops[i];
    char at[48];
    snprintf(at, sizeof at, "ops[%zu]", i);
    if (!enum_ok(c, at, "kind", (int)op->kind, PROF_OP_KIND_COUNT) ||
        !index_ok(c, at, "process", op->process, p->process_count, "processes", false) ||
        !index_ok(c, at, "site", op->site, p->site_count, "sites", true))
        return false;
    switch (op->kind) {
    case PROF_OP_LAUNCH:
        if (!index_ok(c, at, "kernel", op->kernel, p->kernel_count, "kernels", false)) return false;
        if (p->kernels[op->kernel].process != op->process)
            return prof_fail(c->error, "%s.kernel: kernel %d belongs to process %d, not to process %d", at, op->kernel,
                             p->kernels[op->kernel].process, op->process);
        break;
    case PROF_OP_MEMCPY:
        if (!enum_ok(c, at, "copy", (int)op->copy, PROF_COPY_KIND_COUNT) ||
            !enum_ok(c, at, "src", (int)op->src, PROF_MEM_KIND_COUNT) ||
            !enum_ok(c, at, "dst", (int)op->dst, PROF_MEM_KIND_COUNT) || !integer_ok(c, at, "bytes", op->bytes))
            return false;
        break;
    case PROF_OP_MEMSET:
    case PROF_OP_ALLOC:
        if (!enum_ok(c, at, "dst", (int)op->dst, PROF_MEM_KIND_COUNT) || !integer_ok(c, at, "bytes", op->bytes))
            return false;
        break;
    case PROF_OP_SYNC:
        if (!enum_ok(c, at, "sync", (int)op->sync, PROF_SYNC_KIND_COUNT)) return false;
        break;
    default:
        break;
    }
    if (op->critical.known && !prof_op_has_critical(op->kind))
        return prof_fail(c->error, "%s.critical_ns: only launches, copies and memsets have one", at);
    if (op->steady.known && !prof_op_has_critical(op->kind))
        return prof_fail(c->error, "%s.steady_count: only launches, copies and memsets have one", at);
    return stats_ok(c, at, &op->stats) && critical_ok(c, at, &op->critical, &op->stats) &&
           steady_ok(c, at, &op->steady, &op->stats);
}

static bool ops_ok(Check *c) {
    for (size_t i = 0; i < c->p->op_count; i++)
        if (!op_ok(c, i)) return false;
    return true;
}

/* apis and overheads: a process, a name and stats */
static bool named_stats_ok(Check *c, const char *array, size_t i, int process, const char *field, const char *name,
                           const ProfStats *stats) {
    char at[48];
    snprintf(at, sizeof at, "%s[%zu]", array, i);
    return index_ok(c, at, "process", process, c->p->process_count, "processes", false) &&
           string_ok(c, at, field, name, false) && stats_ok(c, at, stats);
}

static bool timelines_ok(Check *c) {
    const Profile *p = c->p;
    for (size_t i = 0; i < p->timeline_count; i++) {
        const ProfTimeline *t = &p->timelines[i];
        char at[48];
        snprintf(at, sizeof at, "timelines[%zu]", i);
        if (!index_ok(c, at, "process", t->process, p->process_count, "processes", false) ||
            !index_ok(c, at, "device", t->device, p->device_count, "devices", false) ||
            !device_of_ok(c, at, t->device, t->process) || !integer_ok(c, at, "span_ns", t->span_ns))
            return false;
        if (t->busy_ns > t->span_ns) return prof_fail(c->error, "%s.busy_ns: more than span_ns", at);
        if (t->idle_ns != t->span_ns - t->busy_ns)
            return prof_fail(c->error, "%s.idle_ns: must be span_ns - busy_ns (%llu)", at,
                             (unsigned long long)(t->span_ns - t->busy_ns));
        if (t->compute_ns > t->busy_ns) return prof_fail(c->error, "%s.compute_ns: more than busy_ns", at);
        if (t->comm_ns > t->busy_ns) return prof_fail(c->error, "%s.comm_ns: more than busy_ns", at);
        if (t->exposed_comm_ns > t->comm_ns) return prof_fail(c->error, "%s.exposed_comm_ns: more than comm_ns", at);
    }
    return true;
}

static bool gaps_ok(Check *c) {
    const Profile *p = c->p;
    for (size_t i = 0; i < p->gap_count; i++) {
        const ProfGap *g = &p->gaps[i];
        char at[48];
        snprintf(at, sizeof at, "gaps[%zu]", i);
        if (!index_ok(c, at, "process", g->process, p->process_count, "processes", false) ||
            !index_ok(c, at, "device", g->device, p->device_count, "devices", false) ||
            !device_of_ok(c, at, g->device, g->process) || !integer_ok(c, at, "start_ns", g->start_ns) ||
            !integer_ok(c, at, "duration_ns", g->duration_ns) ||
            !index_ok(c, at, "before_site", g->before_site, p->site_count, "sites", true) ||
            !index_ok(c, at, "after_site", g->after_site, p->site_count, "sites", true))
            return false;
        if (g->weight > (1u << 20))
            return prof_fail(c->error, "%s.weight: %u is more than %u", at, g->weight, 1u << 20);
        if ((unsigned)g->phase >= PROF_PHASE_COUNT) return prof_fail(c->error, "%s.phase: unknown", at);
        if (g->phase != PROF_PHASE_UNKNOWN && !p->processes[g->process].steps.count)
            return prof_fail(c->error, "%s.phase: its process recorded no steps", at);
    }
    return true;
}

static bool line_metric_ok(Check *c, size_t i) {
    const Profile *p = c->p;
    const ProfLineMetrics *m = &p->line_metrics[i];
    char at[48];
    snprintf(at, sizeof at, "line_metrics[%zu]", i);
    if (!string_ok(c, at, "kernel", m->kernel, false) ||
        !index_ok(c, at, "file", m->file, p->file_count, "files", false))
        return false;
    if (m->line < 1) return prof_fail(c->error, "%s.line: must be 1 or more", at);
    if (m->launches < 1) return prof_fail(c->error, "%s.launches: must be 1 or more", at);
    if (m->inlined_instructions > m->instructions)
        return prof_fail(c->error, "%s.inlined_instructions: must be at most instructions", at);
    return integer_ok(c, at, "launches", m->launches) && integer_ok(c, at, "instructions", m->instructions) &&
           integer_ok(c, at, "global_sectors", m->global_sectors) &&
           integer_ok(c, at, "global_sectors_ideal", m->global_sectors_ideal) &&
           integer_ok(c, at, "shared_wavefronts", m->shared_wavefronts) &&
           integer_ok(c, at, "shared_wavefronts_ideal", m->shared_wavefronts_ideal) &&
           integer_ok(c, at, "local_sectors", m->local_sectors) &&
           integer_ok(c, at, "inlined_instructions", m->inlined_instructions);
}

/* each (kernel, file, line) once: the model adds a line's counts up (profile_add_line_metrics) */
static bool line_metrics_ok(Check *c) {
    const Profile *p = c->p;
    HashIndex seen = {0};
    bool ok = true;
    for (size_t i = 0; ok && i < p->line_metric_count; i++) {
        if (!line_metric_ok(c, i)) {
            ok = false;
            break;
        }
        const ProfLineMetrics *m = &p->line_metrics[i];
        uint64_t hash = hash_u64(hash_u64(hash_string(hash_start(), m->kernel), (uint64_t)m->file), m->line);
        size_t cursor = 0;
        for (int j; ok && (j = hash_index_next(&seen, hash, &cursor)) >= 0;) {
            const ProfLineMetrics *o = &p->line_metrics[j];
            if (o->file == m->file && o->line == m->line && strcmp(o->kernel, m->kernel) == 0)
                ok = prof_fail(c->error,
                               "line_metrics[%zu]: the same kernel, file and line as line_metrics[%d]; each appears "
                               "once",
                               i, j);
        }
        if (ok && !hash_index_add(&seen, hash, (int)i)) ok = prof_fail(c->error, "out of memory");
    }
    hash_index_free(&seen);
    return ok;
}

static bool memory_ok(Check *c, size_t i) {
    const Profile *p = c->p;
    const ProfMemory *m = &p->memories[i];
    char at[48];
    snprintf(at, sizeof at, "memory[%zu]", i);
    if (!index_ok(c, at, "process", m->process, p->process_count, "processes", false) ||
        !index_ok(c, at, "oom.site", m->oom_site, p->site_count, "sites", true) ||
        !cap_ok(c, "samples", m->sample_count, PROFILE_MAX_MEMORY_SAMPLES) ||
        !integer_ok(c, at, "events", m->events) || !integer_ok(c, at, "max_allocated", m->max_allocated) ||
        !integer_ok(c, at, "max_reserved", m->max_reserved) || !integer_ok(c, at, "peak_time_ns", m->peak_time_ns) ||
        !integer_ok(c, at, "peak_allocated", m->peak_allocated) ||
        !integer_ok(c, at, "peak_reserved", m->peak_reserved) || !integer_ok(c, at, "steps", m->steps) ||
        !integer_ok(c, at, "steps_in_window", m->steps_in_window) ||
        !integer_ok(c, at, "oom.time_ns", m->oom_time_ns) || !integer_ok(c, at, "oom.bytes", m->oom_bytes) ||
        !integer_ok(c, at, "oom.device_free", m->oom_device_free) ||
        !integer_ok(c, at, "oom.allocated", m->oom_allocated))
        return false;
    if (m->steps_in_window > m->steps) return prof_fail(c->error, "%s.steps_in_window: more than steps", at);
    if ((unsigned)m->source >= PROF_MEM_SOURCE_COUNT) return prof_fail(c->error, "%s.source: unknown", at);
    if (m->device > UINT32_MAX / 2) return prof_fail(c->error, "%s.device: not a device ordinal", at);
    for (size_t k = 0; k < m->sample_count; k++) {
        const ProfMemSample *s = &m->samples[k];
        if (!integer_ok(c, at, "samples", s->time_ns) || !integer_ok(c, at, "samples", s->allocated) ||
            !integer_ok(c, at, "samples", s->reserved))
            return false;
        if (k > 0 && s->time_ns < m->samples[k - 1].time_ns)
            return prof_fail(c->error, "%s.samples[%zu]: earlier than the sample before it", at, k);
    }
    for (size_t j = 0; j < i; j++)
        if (p->memories[j].process == m->process && p->memories[j].device == m->device)
            return prof_fail(c->error, "%s: the same process and device as memory[%zu]; each appears once", at, j);
    return true;
}

static bool memories_ok(Check *c) {
    const Profile *p = c->p;
    for (size_t i = 0; i < p->memory_count; i++)
        if (!memory_ok(c, i)) return false;
    for (size_t i = 0; i < p->memory_line_count; i++) {
        const ProfMemLine *l = &p->memory_lines[i];
        char at[48];
        snprintf(at, sizeof at, "memory_lines[%zu]", i);
        if (!index_ok(c, at, "memory", l->memory, p->memory_count, "memory", false) ||
            !index_ok(c, at, "site", l->site, p->site_count, "sites", true) || !integer_ok(c, at, "bytes", l->bytes) ||
            !integer_ok(c, at, "count", l->count))
            return false;
        if ((unsigned)l->kind >= PROF_MEM_LINE_KIND_COUNT) return prof_fail(c->error, "%s.kind: unknown", at);
        if (l->freed_bytes) {
            if (l->kind != PROF_MEM_LINE_PEAK) return prof_fail(c->error, "%s.freed: only a peak line has it", at);
            if (!index_ok(c, at, "freed.site", l->freed_site, p->site_count, "sites", false) ||
                !integer_ok(c, at, "freed.bytes", l->freed_bytes))
                return false;
            if (l->freed_bytes > l->bytes) return prof_fail(c->error, "%s.freed.bytes: more than the line's bytes", at);
        }
    }
    return true;
}

bool profile_check(const Profile *p, ProfileKind kind, char **error) {
    if (!p) return prof_fail(error, "no profile");
    if (kind != PROFILE_FINAL && kind != PROFILE_PART) return prof_fail(error, "unknown profile kind %d", (int)kind);
    Check c = {p, kind, error};
    if (!header_ok(&c)) return false;
    if (!cap_ok(&c, "processes", p->process_count, PROFILE_MAX_PROCESSES) ||
        !cap_ok(&c, "devices", p->device_count, PROFILE_MAX_DEVICES) ||
        !cap_ok(&c, "files", p->file_count, PROFILE_MAX_FILES) ||
        !cap_ok(&c, "sites", p->site_count, PROFILE_MAX_SITES) ||
        !cap_ok(&c, "kernels", p->kernel_count, PROFILE_MAX_KERNELS) ||
        !cap_ok(&c, "ops", p->op_count, PROFILE_MAX_OPS) || !cap_ok(&c, "apis", p->api_count, PROFILE_MAX_APIS) ||
        !cap_ok(&c, "overheads", p->overhead_count, PROFILE_MAX_OVERHEADS) ||
        !cap_ok(&c, "timelines", p->timeline_count, PROFILE_MAX_DEVICES) ||
        !cap_ok(&c, "gaps", p->gap_count, PROFILE_MAX_GAPS) ||
        !cap_ok(&c, "line_metrics", p->line_metric_count, PROFILE_MAX_LINE_METRICS) ||
        !cap_ok(&c, "memory", p->memory_count, PROFILE_MAX_MEMORIES) ||
        !cap_ok(&c, "memory_lines", p->memory_line_count, PROFILE_MAX_MEMORY_LINES))
        return false;
    if (!processes_ok(&c) || !devices_ok(&c) || !files_ok(&c) || !sites_ok(&c) || !kernels_ok(&c) || !ops_ok(&c))
        return false;
    for (size_t i = 0; i < p->api_count; i++)
        if (!named_stats_ok(&c, "apis", i, p->apis[i].process, "name", p->apis[i].name, &p->apis[i].stats))
            return false;
    for (size_t i = 0; i < p->overhead_count; i++)
        if (!named_stats_ok(&c, "overheads", i, p->overheads[i].process, "kind", p->overheads[i].kind,
                            &p->overheads[i].stats))
            return false;
    return timelines_ok(&c) && gaps_ok(&c) && line_metrics_ok(&c) && memories_ok(&c);
}
