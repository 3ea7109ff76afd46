#include "rules/measure/line_metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/kernel_name.h"
#include "rules/measure/measure.h"
#include "rules/measure/profile_facts.h"
#include "rules/rule.h"

void lm_counts(const ProfLineMetrics *e, LmKind kind, uint64_t *actual, uint64_t *ideal) {
    switch (kind) {
    case LM_GLOBAL:
        *actual = e->global_sectors;
        *ideal = e->global_sectors_ideal;
        return;
    case LM_SHARED:
        *actual = e->shared_wavefronts;
        *ideal = e->shared_wavefronts_ideal;
        return;
    case LM_LOCAL:
        break;
    }
    *actual = e->local_sectors;
    *ideal = 0;
}


uint64_t lm_kernel_total(const Profile *p, const char *kernel, LmKind kind) {
    uint64_t total = 0;
    for (size_t i = 0; kernel && i < p->line_metric_count; i++) {
        if (strcmp(p->line_metrics[i].kernel, kernel) != 0) continue;
        uint64_t actual, ideal;
        lm_counts(&p->line_metrics[i], kind, &actual, &ideal);
        total = prof_add_u64(total, actual);
    }
    return total;
}

/* The part of the kernel's time (every configuration of that name) on the
 * critical path; -1 when a configuration did not measure it. */
static double kernel_critical_share(const Profile *p, const char *kernel) {
    uint64_t critical = 0, total = 0;
    for (size_t i = 0; kernel && i < p->kernel_count; i++)
        if (strcmp(p->kernels[i].name, kernel) == 0) {
            if (!p->kernels[i].critical.known) return -1;
            critical = prof_add_u64(critical, p->kernels[i].critical.ns);
            total = prof_add_u64(total, p->kernels[i].stats.total_ns);
        }
    return total ? (double)critical / (double)total : -1;
}

/* the kernel's GPU time and launches: by demangled name, else by base name */
static void kernel_time(const ProfileView *v, const char *kernel, uint64_t *ns, uint64_t *launches) {
    const Profile *p = profile_view_profile(v);
    *ns = *launches = 0;
    bool found = false;
    for (size_t i = 0; kernel && i < p->kernel_count; i++)
        if (strcmp(p->kernels[i].name, kernel) == 0) {
            *ns = prof_add_u64(*ns, p->kernels[i].stats.total_ns);
            *launches = prof_add_u64(*launches, p->kernels[i].stats.count);
            found = true;
        }
    if (found || !kernel) return;
    char *base = kernel_base_name(kernel);
    ProfStats sum;
    if (base && *base && profile_view_kernel(v, base, &sum, NULL)) {
        *ns = sum.total_ns;
        *launches = sum.count;
    }
    free(base);
}

uint64_t lm_kernel_ns(const ProfileView *v, const char *kernel) {
    uint64_t ns, launches;
    kernel_time(v, kernel, &ns, &launches);
    return ns;
}

void lm_global_gain(const ProfileView *v, const char *kernel, uint64_t kernel_sectors, uint64_t measured_launches,
                    uint64_t actual, uint64_t ideal, LmGain *out) {
    memset(out, 0, sizeof *out);
    out->critical.share = -1;
    uint64_t launches;
    kernel_time(v, kernel, &out->kernel_ns, &launches);
    const ProfDevice *d = profile_view_device(v);
    out->bytes_per_s = d && d->bandwidth_bytes_per_s ? d->bandwidth_bytes_per_s
                                                     : (uint64_t)MEASURE_DEVICE_DEFAULT_BYTES_PER_S;
    if (!out->kernel_ns || !launches || !measured_launches || !kernel_sectors || !out->bytes_per_s ||
        actual <= ideal || actual > kernel_sectors)
        return;
    out->known = true;
    double bytes_per_launch = (double)kernel_sectors * 32.0 / (double)measured_launches;
    double ns_per_launch = (double)out->kernel_ns / (double)launches;
    out->sector_bytes_per_s = bytes_per_launch / ns_per_launch * 1e9;
    out->bandwidth_share = out->sector_bytes_per_s / (double)out->bytes_per_s;
    out->memory_bound = out->bandwidth_share >= LM_MEMORY_BOUND_SHARE;
    if (!out->memory_bound) return;
    out->critical = critical_gain(v, (double)out->kernel_ns * (double)(actual - ideal) / (double)kernel_sectors,
                                  kernel_critical_share(profile_view_profile(v), kernel));
    out->gain_ns = out->critical.gain_ns;
}

static bool at_lines(uint32_t line, uint32_t first, uint32_t last, const uint32_t *extra, size_t extra_count) {
    if (line >= first && line <= last) return true;
    for (size_t i = 0; i < extra_count; i++)
        if (extra[i] == line) return true;
    return false;
}

/* keeps the first four distinct lines in ascending order, counting all */
static void note_line(LmSum *s, uint32_t line) {
    size_t kept = s->line_count < 4 ? s->line_count : 4;
    for (size_t i = 0; i < kept; i++)
        if (s->lines[i] == line) return;
    s->line_count++;
    if (kept < 4) {
        s->lines[kept++] = line;
    } else if (line < s->lines[3]) {
        s->lines[3] = line;
    } else {
        return;
    }
    for (size_t i = kept - 1; i > 0 && s->lines[i] < s->lines[i - 1]; i--) {
        uint32_t t = s->lines[i];
        s->lines[i] = s->lines[i - 1];
        s->lines[i - 1] = t;
    }
}

void lm_sum(const Profile *p, int file, uint32_t first, uint32_t last, const uint32_t *extra, size_t extra_count,
            LmKind kind, LmSum *out) {
    memset(out, 0, sizeof *out);
    /* the distinct kernels with counts, and each one's share of `actual` */
    enum { MAX_KERNELS = 16 };
    const char *names[MAX_KERNELS];
    uint64_t per_kernel[MAX_KERNELS], launches[MAX_KERNELS];
    size_t kernels = 0;
    for (size_t i = 0; i < p->line_metric_count; i++) {
        const ProfLineMetrics *e = &p->line_metrics[i];
        if (e->file != file || !at_lines(e->line, first, last, extra, extra_count)) continue;
        uint64_t actual, ideal;
        lm_counts(e, kind, &actual, &ideal);
        if (actual == 0 && ideal == 0) continue;
        out->actual = prof_add_u64(out->actual, actual);
        out->ideal = prof_add_u64(out->ideal, ideal);
        note_line(out, e->line);
        size_t k = 0;
        while (k < kernels && strcmp(names[k], e->kernel) != 0) k++;
        if (k == kernels) {
            out->kernels++;
            if (kernels == MAX_KERNELS) continue; /* counted, not named */
            names[kernels] = e->kernel;
            per_kernel[kernels] = launches[kernels] = 0;
            kernels++;
        }
        per_kernel[k] = prof_add_u64(per_kernel[k], actual);
        if (e->launches > launches[k]) launches[k] = e->launches;
    }
    size_t best = 0;
    for (size_t k = 0; k < kernels; k++) {
        out->kernel_total = prof_add_u64(out->kernel_total, lm_kernel_total(p, names[k], kind));
        if (per_kernel[k] > per_kernel[best]) best = k;
    }
    if (kernels) {
        out->kernel = names[best];
        out->launches = launches[best];
    }
}

uint64_t lm_sector_bytes(uint64_t sectors) { return sectors > UINT64_MAX / 32 ? UINT64_MAX : sectors * 32; }

double lm_ratio(uint64_t actual, uint64_t ideal) { return ideal ? (double)actual / (double)ideal : 0; }

bool lm_launches_evidence(Evidence *e, const LmSum *s) {
    char name[96];
    pf_kernel_display_name(s->kernel ? s->kernel : "", name, sizeof name);
    if (s->kernels > 1)
        return evidence_append(e, QV(q_count(s->kernels - 1)), "in the measured launches of %s and {} other kernel%s",
                               name, s->kernels == 2 ? "" : "s");
    if (s->launches == 1) return evidence_append(e, NO_VALUES, "in one launch of %s", name);
    return evidence_append(e, QV(q_count(s->launches)), "in {} launches of %s", name);
}

const char *lm_launches_words(const LmSum *s, char *buf, size_t size) {
    Evidence e = evidence_new(EVIDENCE_MEASURED);
    char *words = lm_launches_evidence(&e, s) ? evidence_render(&e) : NULL;
    snprintf(buf, size, "%s", words ? words : "");
    free(words);
    evidence_free(&e);
    return buf;
}

/* "COUNT WHAT[, RATIOx the ideal IDEAL]", the parts of lm_entry_words,
 * appended at buf + *n after ": " (the first, *first set) or "; " */
static void append_part(char *buf, size_t size, size_t *n, bool *first, const char *what, uint64_t actual,
                        uint64_t ideal, bool has_ideal) {
    if (*n >= size || (actual == 0 && ideal == 0)) return;
    const char *sep = *first ? ": " : "; ";
    *first = false;
    char a[UNITS_BUF], i[UNITS_BUF], x[UNITS_BUF];
    units_count(actual, a, sizeof a);
    int k = has_ideal && ideal ? snprintf(buf + *n, size - *n, "%s%s %s, %s the ideal %s", sep, a, what,
                                          units_factor(lm_ratio(actual, ideal), x, sizeof x),
                                          units_count(ideal, i, sizeof i))
                               : snprintf(buf + *n, size - *n, "%s%s %s", sep, a, what);
    if (k > 0) *n += (size_t)k;
}

const char *lm_entry_words(const ProfLineMetrics *e, char *buf, size_t size) {
    if (size == 0) return buf;
    char name[96];
    pf_kernel_display_name(e->kernel, name, sizeof name);
    for (char *c = name; *c; c++)
        if (*c == '`') *c = '\''; /* inside a Markdown code span */
    int k = e->launches == 1 ? snprintf(buf, size, "`%s`, one launch", name)
                             : snprintf(buf, size, "`%s`, %llu launches", name, (unsigned long long)e->launches);
    size_t n = k > 0 ? (size_t)k : 0;
    bool first = true;
    append_part(buf, size, &n, &first, "global sectors", e->global_sectors, e->global_sectors_ideal, true);
    append_part(buf, size, &n, &first, "shared wavefronts", e->shared_wavefronts, e->shared_wavefronts_ideal, true);
    append_part(buf, size, &n, &first, "local sectors", e->local_sectors, 0, false);
    append_part(buf, size, &n, &first, "instructions", e->instructions, 0, false);
    /* header code inlined here: CUPTI mapped it into the header (profiler/sass_lines.h) */
    append_part(buf, size, &n, &first, "of them inlined from headers (conversions, intrinsics)",
                e->inlined_instructions, 0, false);
    return buf;
}
