#include "profiler/memory_part.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/profile_internal.h"

#define MAX_INTEGER ((json_int_t)INT64_MAX)

static bool u64_of(json_t *o, const char *key, uint64_t *out, char **error) {
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return prof_fail(error, "%s: must be a non-negative integer", key);
    *out = (uint64_t)json_integer_value(v);
    return true;
}

/* The site of a line's "file", "line" and "function" (all absent: -1). */
static bool site_of(Profile *p, json_t *o, int *site, char **error) {
    json_t *file = json_object_get(o, "file");
    *site = -1;
    if (!file) return true;
    json_t *line = json_object_get(o, "line"), *function = json_object_get(o, "function");
    if (!json_is_string(file) || !profile_path_ok(json_string_value(file)) ||
        strlen(json_string_value(file)) != json_string_length(file))
        return prof_fail(error, "file: must be a path relative to the project");
    if (!json_is_integer(line) || json_integer_value(line) < 1 || json_integer_value(line) > UINT32_MAX)
        return prof_fail(error, "line: must be a line number");
    const char *fn = json_is_string(function) ? json_string_value(function) : NULL;
    if (fn && (!*fn || strlen(fn) > PROFILE_MAX_STRING)) fn = NULL;
    int f = profile_add_file(p, json_string_value(file));
    *site = f < 0 ? -1 : profile_add_site(p, f, (uint32_t)json_integer_value(line), fn);
    return *site >= 0 || prof_fail(error, "out of memory");
}

static bool read_samples(json_t *samples, ProfMemory *m, char **error) {
    if (!json_is_array(samples)) return prof_fail(error, "samples: must be an array");
    size_t n = json_array_size(samples);
    if (n > PROFILE_MAX_MEMORY_SAMPLES) return prof_fail(error, "samples: %zu, more than %u", n, PROFILE_MAX_MEMORY_SAMPLES);
    m->samples = n ? calloc(n, sizeof *m->samples) : NULL;
    if (n && !m->samples) return prof_fail(error, "out of memory");
    m->sample_count = n;
    for (size_t i = 0; i < n; i++) {
        json_t *row = json_array_get(samples, i);
        json_int_t v[3];
        if (!json_is_array(row) || json_array_size(row) != 3) return prof_fail(error, "samples[%zu]: must be a triple", i);
        for (size_t k = 0; k < 3; k++) {
            json_t *x = json_array_get(row, k);
            if (!json_is_integer(x) || json_integer_value(x) < 0) return prof_fail(error, "samples[%zu]: must be counts", i);
            v[k] = json_integer_value(x);
        }
        if (i > 0 && (uint64_t)v[0] < m->samples[i - 1].time_ns)
            return prof_fail(error, "samples[%zu]: earlier than the one before", i);
        m->samples[i] = (ProfMemSample){(uint64_t)v[0], (uint64_t)v[1], (uint64_t)v[2]};
    }
    return true;
}

/* A peak line's "freed": where most of its bytes were freed after the peak. */
static bool read_freed(Profile *p, json_t *freed, ProfMemLine *l, char **error) {
    if (!freed) return true;
    if (!json_is_object(freed) || !json_object_get(freed, "file"))
        return prof_fail(error, "freed: must be an object with file, line and function");
    if (l->kind != PROF_MEM_LINE_PEAK) return prof_fail(error, "freed: only a peak line has it");
    if (!u64_of(freed, "bytes", &l->freed_bytes, error) || !site_of(p, freed, &l->freed_site, error)) return false;
    if (!l->freed_bytes || l->freed_bytes > l->bytes) return prof_fail(error, "freed.bytes: none, or more than the line holds");
    return true;
}

static bool read_lines(Profile *p, json_t *lines, int memory, char **error) {
    if (!json_is_array(lines)) return prof_fail(error, "lines: must be an array");
    for (size_t i = 0; i < json_array_size(lines); i++) {
        json_t *o = json_array_get(lines, i);
        json_t *kind = json_is_object(o) ? json_object_get(o, "kind") : NULL;
        int k = json_is_string(kind) ? prof_mem_line_kind_from_name(json_string_value(kind)) : -1;
        if (k < 0) return prof_fail(error, "lines[%zu].kind: must be peak, kept, growth, allocs or oom", i);
        ProfMemLine l = {.memory = memory, .kind = (ProfMemLineKind)k, .freed_site = -1};
        if (!u64_of(o, "bytes", &l.bytes, error) || !u64_of(o, "count", &l.count, error) ||
            !site_of(p, o, &l.site, error) || !read_freed(p, json_object_get(o, "freed"), &l, error))
            return false;
        if (p->memory_line_count >= PROFILE_MAX_MEMORY_LINES) return true; /* bounded: the rest is dropped */
        ProfMemLine *grown = realloc(p->memory_lines, (p->memory_line_count + 1) * sizeof *grown);
        if (!grown) return prof_fail(error, "out of memory");
        p->memory_lines = grown;
        p->memory_lines[p->memory_line_count++] = l;
    }
    return true;
}

static bool read_oom(Profile *p, json_t *o, ProfMemory *m, char **error) {
    m->oom_site = -1;
    if (!o) return true;
    if (!json_is_object(o)) return prof_fail(error, "oom: must be an object");
    m->oom = true;
    return u64_of(o, "time_ns", &m->oom_time_ns, error) && u64_of(o, "bytes", &m->oom_bytes, error) &&
           u64_of(o, "device_free", &m->oom_device_free, error) && u64_of(o, "allocated", &m->oom_allocated, error) &&
           site_of(p, o, &m->oom_site, error);
}

static bool read_device(Profile *p, json_t *d, int process, char **error) {
    if (!json_is_object(d)) return prof_fail(error, "devices: each must be an object");
    if (p->memory_count >= PROFILE_MAX_MEMORIES) return true;
    ProfMemory m = {.process = process, .oom_site = -1};
    json_t *peak = json_object_get(d, "peak"), *steps = json_object_get(d, "steps");
    uint64_t device = 0;
    json_t *bps = json_is_object(steps) ? json_object_get(steps, "bytes_per_step") : NULL;
    bool ok = u64_of(d, "device", &device, error) && u64_of(d, "entries", &m.events, error) &&
              u64_of(d, "max_allocated", &m.max_allocated, error) && u64_of(d, "max_reserved", &m.max_reserved, error) &&
              (json_is_object(peak) || prof_fail(error, "peak: must be an object")) &&
              u64_of(peak, "time_ns", &m.peak_time_ns, error) && u64_of(peak, "allocated", &m.peak_allocated, error) &&
              u64_of(peak, "reserved", &m.peak_reserved, error) &&
              (json_is_object(steps) || prof_fail(error, "steps: must be an object")) &&
              u64_of(steps, "count", &m.steps, error) && u64_of(steps, "in_window", &m.steps_in_window, error);
    if (ok && device > 1u << 20) ok = prof_fail(error, "device: not a device ordinal");
    if (ok && m.steps_in_window > m.steps) m.steps_in_window = m.steps;
    if (ok && bps) {
        if (!json_is_integer(bps)) ok = prof_fail(error, "steps.bytes_per_step: must be an integer");
        else m.bytes_per_step = (int64_t)json_integer_value(bps);
    }
    m.device = (uint32_t)device;
    m.window_complete = json_is_true(json_object_get(d, "window_complete"));
    ok = ok && read_oom(p, json_object_get(d, "oom"), &m, error) && read_samples(json_object_get(d, "samples"), &m, error);
    for (size_t i = 0; ok && i < p->memory_count; i++)
        if (p->memories[i].process == process && p->memories[i].device == m.device)
            ok = prof_fail(error, "device %u of this process appears twice", m.device);
    ProfMemory *grown = ok ? realloc(p->memories, (p->memory_count + 1) * sizeof *grown) : NULL;
    if (ok && !grown) ok = prof_fail(error, "out of memory");
    if (!ok) {
        free(m.samples);
        return false;
    }
    p->memories = grown;
    p->memories[p->memory_count++] = m;
    return read_lines(p, json_object_get(d, "lines"), (int)p->memory_count - 1, error);
}

bool profile_add_memory_part(Profile *p, const char *text, size_t length, char **error) {
    if (length > MEMORY_PART_MAX_BYTES) return prof_fail(error, "%zu bytes, more than a memory part may have", length);
    json_error_t problem;
    json_t *root = json_loadb(text, length, JSON_REJECT_DUPLICATES, &problem);
    if (!root) return prof_fail(error, "line %d: %s", problem.line, problem.text);
    size_t memories = p->memory_count, lines = p->memory_line_count;
    json_t *format = json_object_get(root, "format"), *err = json_object_get(root, "error");
    json_t *devices = json_object_get(root, "devices");
    uint64_t pid = 0;
    int process = -1;
    bool ok = json_is_object(root) && json_is_string(format) &&
              strcmp(json_string_value(format), MEMORY_PART_FORMAT) == 0;
    if (!ok) prof_fail(error, "not an advise memory part");
    if (ok && json_is_string(err)) ok = prof_fail(error, "%.300s", json_string_value(err));
    ok = ok && u64_of(root, "pid", &pid, error);
    for (size_t i = 0; ok && i < p->process_count; i++)
        if ((uint64_t)p->processes[i].pid == pid) process = (int)i;
    if (ok && process < 0) ok = prof_fail(error, "process %llu ran no CUDA work that was profiled", (unsigned long long)pid);
    if (ok && !json_is_array(devices)) ok = prof_fail(error, "devices: must be an array");
    for (size_t i = 0; ok && i < json_array_size(devices); i++) ok = read_device(p, json_array_get(devices, i), process, error);
    json_decref(root);
    if (!ok) { /* all or nothing: drop what this part added */
        for (size_t i = memories; i < p->memory_count; i++) free(p->memories[i].samples);
        p->memory_count = memories;
        p->memory_line_count = lines;
    }
    return ok;
}
