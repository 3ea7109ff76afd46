/* What the text and HTML memory sections share (report_memory.h). */
#include "server/render/report_memory.h"

#include "analysis/units.h"

bool report_has_memory(const ReportInput *in) {
    for (size_t i = 0; i < in->profile_count; i++)
        if (in->profiles[i].profile && in->profiles[i].profile->memory_count) return true;
    return false;
}

uint64_t report_memory_span_ns(const ProfMemory *m) {
    uint64_t span = m->peak_time_ns;
    for (size_t i = 0; i < m->sample_count; i++) /* in order of time when validated; not assumed here */
        if (m->samples[i].time_ns > span) span = m->samples[i].time_ns;
    if (m->oom && m->oom_time_ns > span) span = m->oom_time_ns;
    return span;
}

uint64_t report_memory_top_bytes(const ProfMemory *m) {
    uint64_t top = m->peak_reserved > m->peak_allocated ? m->peak_reserved : m->peak_allocated;
    for (size_t i = 0; i < m->sample_count; i++) {
        if (m->samples[i].allocated > top) top = m->samples[i].allocated;
        if (m->samples[i].reserved > top) top = m->samples[i].reserved;
    }
    return top;
}

const char *report_memory_per_step(const ProfMemory *m, char *buf, size_t size) {
    int64_t v = m->bytes_per_step;
    uint64_t magnitude = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v; /* INT64_MIN too */
    char bytes[UNITS_BUF];
    snprintf(buf, size, "%s%s", v < 0 ? "-" : "+", units_bytes(magnitude, bytes, sizeof bytes));
    return buf;
}
