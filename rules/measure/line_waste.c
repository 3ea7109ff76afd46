/* lm_each_waste (line_metrics.h): the lines of a file whose per-line
 * metrics show waste, for the profile rules PR010-PR012. A hostile profile
 * may hold 100,000 entries of as many kernels: each kernel's totals and GPU
 * time are found once, by sorted lookups, never by a scan per entry. */
#include <stdlib.h>
#include <string.h>

#include "profiler/kernel_name.h"
#include "rules/measure/profile_facts.h"
#include "rules/measure/line_metrics.h"
#include "rules/rule.h"


/* ---- each kernel's totals, by name ---------------------------------------------------------- */

typedef struct {
    const char *name;
    uint64_t global, shared, local;
    uint64_t ns;             /* its GPU time */
} KernelFacts;

typedef struct {
    const char *name;
    uint64_t ns;
} NamedTime;

static int by_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b); /* each struct starts with its name */
}

static int entry_by_kernel(const void *a, const void *b) {
    return strcmp((*(const ProfLineMetrics *const *)a)->kernel, (*(const ProfLineMetrics *const *)b)->kernel);
}

/* name -> summed time, sorted by name (equal names summed into one); *count
 * set. The names point into kernels, or into bases when given. */
static NamedTime *times_by(const Profile *p, char **bases, size_t *count) {
    NamedTime *t = malloc((p->kernel_count ? p->kernel_count : 1) * sizeof *t);
    if (!t) return NULL;
    for (size_t i = 0; i < p->kernel_count; i++)
        t[i] = (NamedTime){bases ? bases[i] : p->kernels[i].name, p->kernels[i].stats.total_ns};
    qsort(t, p->kernel_count, sizeof *t, by_name);
    size_t n = 0;
    for (size_t i = 0; i < p->kernel_count; i++) {
        if (n && strcmp(t[n - 1].name, t[i].name) == 0) t[n - 1].ns = prof_add_u64(t[n - 1].ns, t[i].ns);
        else t[n++] = t[i];
    }
    *count = n;
    return t;
}

static const NamedTime *find_time(const NamedTime *t, size_t n, const char *name) {
    const char *key = name;
    return n ? bsearch(&key, t, n, sizeof *t, by_name) : NULL;
}

/* the GPU time of each kernel in facts[0..n): by its demangled name, else by
 * its base name (kernel_name.h) as profile_view_kernel matches */
static bool fill_times(const Profile *p, KernelFacts *facts, size_t n) {
    size_t exact_count = 0, base_count = 0;
    NamedTime *exact = times_by(p, NULL, &exact_count), *base = NULL;
    char **bases = NULL;
    bool ok = exact != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        const NamedTime *t = find_time(exact, exact_count, facts[i].name);
        if (t) {
            facts[i].ns = t->ns;
            continue;
        }
        if (!bases) { /* the base names, once, when some kernel needs them */
            bases = calloc(p->kernel_count ? p->kernel_count : 1, sizeof *bases);
            for (size_t k = 0; bases && k < p->kernel_count; k++)
                if (!(bases[k] = kernel_base_name(p->kernels[k].name))) ok = false;
            if (!bases || !ok || !(base = times_by(p, bases, &base_count))) {
                ok = false;
                break;
            }
        }
        char *own = kernel_base_name(facts[i].name);
        if (!own) {
            ok = false;
            break;
        }
        t = *own ? find_time(base, base_count, own) : NULL;
        facts[i].ns = t ? t->ns : 0;
        free(own);
    }
    for (size_t k = 0; bases && k < p->kernel_count; k++) free(bases[k]);
    free(bases);
    free(base);
    free(exact);
    return ok;
}

/* every kernel of the line metrics with its totals and time, sorted by name */
static KernelFacts *kernel_facts(const Profile *p, size_t *count) {
    size_t n = p->line_metric_count;
    const ProfLineMetrics **sorted = malloc(n * sizeof *sorted);
    KernelFacts *facts = malloc(n * sizeof *facts);
    if (!sorted || !facts) {
        free(sorted);
        free(facts);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) sorted[i] = &p->line_metrics[i];
    qsort(sorted, n, sizeof *sorted, entry_by_kernel);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const ProfLineMetrics *e = sorted[i];
        if (!k || strcmp(facts[k - 1].name, e->kernel) != 0) facts[k++] = (KernelFacts){.name = e->kernel};
        KernelFacts *f = &facts[k - 1];
        f->global = prof_add_u64(f->global, e->global_sectors);
        f->shared = prof_add_u64(f->shared, e->shared_wavefronts);
        f->local = prof_add_u64(f->local, e->local_sectors);
    }
    free(sorted);
    if (!fill_times(p, facts, k)) {
        free(facts);
        return NULL;
    }
    *count = k;
    return facts;
}

/* ---- the lines ---------------------------------------------------------------------------------- */

static int by_line(const void *a, const void *b) {
    const ProfLineMetrics *x = *(const ProfLineMetrics *const *)a, *y = *(const ProfLineMetrics *const *)b;
    if (x->line != y->line) return x->line < y->line ? -1 : 1;
    int c = strcmp(x->kernel, y->kernel);
    return c ? c : (x < y ? -1 : x > y);
}

/* fills w for entry e when it qualifies (see lm_each_waste) */
static bool qualifies(const ProfLineMetrics *e, LmKind kind, const KernelFacts *facts, size_t fact_count,
                      uint64_t kernel_time, LmWaste *w) {
    memset(w, 0, sizeof *w);
    lm_counts(e, kind, &w->actual, &w->ideal);
    if (kind == LM_LOCAL ? w->actual < LM_MIN_IDEAL
                         : w->ideal < LM_MIN_IDEAL || lm_ratio(w->actual, w->ideal) < LM_WASTE_RATIO)
        return false;
    const char *key = e->kernel;
    const KernelFacts *k = bsearch(&key, facts, fact_count, sizeof *facts, by_name);
    if (!k) return false; /* cannot happen: every entry's kernel is there */
    w->kernel_total = kind == LM_GLOBAL ? k->global : kind == LM_SHARED ? k->shared : prof_add_u64(k->global, k->local);
    w->line_share = w->kernel_total ? (double)w->actual / (double)w->kernel_total : 0;
    w->kernel_ns = k->ns;
    w->kernel_share = (double)k->ns / (double)kernel_time;
    if (w->line_share < LM_MIN_LINE_SHARE || w->kernel_share < LM_MIN_KERNEL_SHARE) return false;
    w->line = e->line;
    w->entry = e;
    return true;
}

static uint64_t waste_of(const LmWaste *w) { return w->actual > w->ideal ? w->actual - w->ideal : 0; }

void lm_each_waste(RuleContext *ctx, LmKind kind, void (*visit)(RuleContext *ctx, const LmWaste *w)) {
    const Profile *p = profile_view_profile(ctx->profile);
    uint64_t kernel_time = profile_view_kernel_ns(ctx->profile);
    if (!p->line_metric_count || !kernel_time) return;
    size_t n = 0;
    for (size_t i = 0; i < p->line_metric_count; i++) n += p->line_metrics[i].file == ctx->profile_file;
    if (!n) return;
    if (profile_view_freshness(ctx->profile, ctx->profile_file, ctx->doc->text, ctx->doc->length) == PROFILE_STALE)
        return; /* lines may have moved */
    size_t fact_count = 0;
    KernelFacts *facts = kernel_facts(p, &fact_count);
    const ProfLineMetrics **entries = malloc(n * sizeof *entries);
    if (!facts || !entries) {
        free(facts);
        free(entries);
        ctx->out_of_memory = true;
        return;
    }
    n = 0;
    for (size_t i = 0; i < p->line_metric_count; i++)
        if (p->line_metrics[i].file == ctx->profile_file) entries[n++] = &p->line_metrics[i];
    qsort(entries, n, sizeof *entries, by_line);
    for (size_t i = 0; i < n && !ctx->out_of_memory;) {
        size_t end = i;
        while (end < n && entries[end]->line == entries[i]->line) end++;
        LmWaste best = {0}, w;
        size_t qualifying = 0;
        for (size_t k = i; k < end; k++)
            if (qualifies(entries[k], kind, facts, fact_count, kernel_time, &w) &&
                (!qualifying++ || waste_of(&w) > waste_of(&best)))
                best = w;
        if (qualifying) {
            best.other_kernels = qualifying - 1;
            visit(ctx, &best);
        }
        i = end;
    }
    free(entries);
    free(facts);
}

const char *lm_waste_launches_words(const LmWaste *w, char *buf, size_t size) {
    LmSum one = {.kernel = w->entry->kernel, .launches = w->entry->launches, .kernels = 1};
    return lm_launches_words(&one, buf, size);
}

bool lm_waste_evidence(Finding *f, const LmWaste *w, const char *verb, const char *rest) {
    bool ok = finding_measured(f, QV(q_ns(w->kernel_ns), q_ratio(w->kernel_share)),
                               "the kernel: {} of GPU time, {} of all kernel time");
    if (ok && w->other_kernels)
        ok = finding_measured(f, QV(q_count(w->other_kernels)), "{} other kernel%s running this line %s%s %s",
                              w->other_kernels == 1 ? "" : "s", verb, w->other_kernels == 1 ? "s" : "", rest);
    return ok;
}

Finding *lm_report_ratio(RuleContext *ctx, const LmWaste *w, const char *fmt) {
    char launches[160], actual[32], ideal[32], share[16], factor[16];
    double ratio = lm_ratio(w->actual, w->ideal);
    Finding *f = pf_report_line(ctx, w->line, fmt, units_factor(ratio, factor, sizeof factor),
                                units_count(w->actual, actual, sizeof actual), units_count(w->ideal, ideal, sizeof ideal),
                                lm_waste_launches_words(w, launches, sizeof launches),
                                units_ratio(w->line_share, share, sizeof share));
    if (f && ratio >= LM_SEVERE_RATIO && w->kernel_share >= LM_WARNING_KERNEL_SHARE) f->severity = SEVERITY_WARNING;
    return f;
}
