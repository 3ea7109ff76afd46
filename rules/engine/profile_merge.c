/* engine_merge_profile (engine.h; engine.c runs the static checks): a
 * profile's measurements merged into the findings of one document.
 *
 * For each static finding whose rule has a Measure, the model of that
 * Measure (measure_models.c) reads what the finding's lines (or its kernel)
 * cost; then:
 * - measured: the evidence and the estimated gain are attached, and the
 *   severity rises with the cost's share of the run (>= 10%: error, >= 1%:
 *   warning; never lowered), within what per-line metrics allow: they
 *   may cap the rise, or show the finding's concern did not happen in the
 *   measured launch and make it a hint (measure_lines.c);
 * - nothing measured, and the code is shown cold (the enclosing host
 *   function has no measured work at any of its lines, or the enclosing
 *   kernel never ran): a hint, hidden, or kept, per `[profile] cold`;
 * - the file changed since it was profiled: figures are marked stale,
 *   severity is not raised and nothing is judged cold (lines may have moved).
 * A severity the user set for the rule ([severity], --severity) is kept.
 * Then the profile rules (Rule.check_profile) run, filtered like the others. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/cuda/cuda_query.h"
#include "analysis/python/python_query.h"
#include "rules/engine/engine_internal.h"
#include "rules/engine/memory_evidence.h"
#include "rules/measure/measure.h"

#define CODE_MAX 40

typedef struct {
    const Document *doc;
    const PySource *py;
    const CudaSource *cuda;
    const ProfileView *view;
    int file;
    const Config *cfg;
    bool stale;
    char stale_note[128];
} Merge;

/* Where the finding sits: the enclosing function's lines, and its name when
 * it is a __global__ kernel (in *kernel, NULL otherwise). device_code: in a
 * __device__ function, whose lines never hold host call sites. */
typedef struct {
    bool has_function;
    bool at_definition;       /* the finding marks the function itself (its name) */
    uint32_t first, last;
    const char *kernel;
    const char *name;
    bool device_code;
    char name_buf[64];
} Enclosing;

typedef struct {
    size_t offset;
    CuNode *best;
} CuFind;

static bool find_deepest(CuNode *n, void *data) {
    CuFind *f = data;
    if (n->parent && (f->offset < n->start || f->offset >= n->end)) return false;
    if (n->parent) f->best = n;
    return true;
}

static uint32_t line_of(const Document *doc, size_t offset) { return (uint32_t)document_line_of(doc, offset) + 1; }

static void enclosing_of(const Merge *m, const Finding *f, Enclosing *out) {
    memset(out, 0, sizeof *out);
    Enclosing *e = out;
    if (m->cuda && m->cuda->root) {
        CuFind find = {f->range.start, NULL};
        cu_walk(m->cuda->root, find_deepest, &find);
        e->at_definition = find.best && cu_is_function(find.best);
        CuNode *fn = e->at_definition ? find.best : cu_function_of(find.best);
        while (fn && fn->kind == CXCursor_LambdaExpr) fn = cu_function_of(fn);
        if (!fn) return;
        e->has_function = true;
        e->first = line_of(m->doc, fn->start);
        e->last = line_of(m->doc, fn->end ? fn->end - 1 : fn->end);
        e->name = fn->name;
        if (cu_is_kernel(fn)) e->kernel = fn->name;
        else e->device_code = cu_is_device_code(fn);
    } else if (m->py && m->py->tree) {
        TSNode root = ts_tree_root_node(m->py->tree);
        TSNode node = ts_node_descendant_for_byte_range(root, (uint32_t)f->range.start, (uint32_t)f->range.start);
        if (ts_node_is_null(node)) return;
        TSNode fn = {0};
        for (TSNode p = node; !ts_node_is_null(p); p = ts_node_parent(p)) /* on a def's header? */
            if (py_is(p, "function_definition")) {
                TSNode body = ts_node_child_by_field_name(p, "body", 4);
                if (!ts_node_is_null(body) && f->range.start < ts_node_start_byte(body)) {
                    fn = p;
                    e->at_definition = true;
                }
                break;
            }
        if (ts_node_is_null(fn)) fn = py_enclosing_function(m->py, node);
        if (ts_node_is_null(fn)) return;
        e->has_function = true;
        e->first = line_of(m->doc, ts_node_start_byte(fn));
        e->last = line_of(m->doc, ts_node_end_byte(fn) ? ts_node_end_byte(fn) - 1 : 0);
        TSNode name = ts_node_child_by_field_name(fn, "name", 4);
        if (!ts_node_is_null(name)) {
            size_t n = py_text_len(name) < sizeof e->name_buf - 1 ? py_text_len(name) : sizeof e->name_buf - 1;
            memcpy(e->name_buf, py_text_ptr(m->py, name), n);
            e->name_buf[n] = '\0';
            e->name = e->name_buf;
        }
    }
    return;
}

/* The finding's code, shortened: its own text when it fits on one line,
 * else its first line's, trimmed; backticks become quotes. */
static void code_text(const Document *doc, const Finding *f, char *buf, size_t size) {
    size_t line = document_line_of(doc, f->range.start);
    size_t a = f->range.start, b = f->range.end;
    size_t line_end = document_line_end(doc, line);
    if (b > line_end || b <= a) {
        a = doc->line_starts[line];
        b = line_end;
    }
    while (a < b && (doc->text[a] == ' ' || doc->text[a] == '\t')) a++;
    while (b > a && (doc->text[b - 1] == ' ' || doc->text[b - 1] == '\t')) b--;
    size_t n = 0;
    for (size_t i = a; i < b && n + 4 < size; i++) {
        unsigned char c = (unsigned char)doc->text[i];
        if (n >= CODE_MAX - 1 && (c & 0xC0) != 0x80) { /* cut at a character boundary */
            memcpy(buf + n, "\xE2\x80\xA6", 3);      /* … */
            n += 3;
            break;
        }
        buf[n++] = c == '`' ? '\'' : c < 0x20 ? ' ' : (char)c;
    }
    buf[n] = '\0';
}

/* The enclosing code ran: its host function has measured work at some line,
 * or its kernel ran. Unknown (true) when there is no function to judge by. */
static bool enclosing_warm(const Merge *m, const Enclosing *e) {
    if (!e->has_function) return true;
    if (e->kernel) return profile_view_kernel(m->view, e->kernel, NULL, NULL);
    if (e->device_code) return true; /* launched through kernels we do not trace here */
    const ProfOp *op;
    return profile_view_ops_in(m->view, m->file, e->first, e->last, &op, 1) > 0;
}

/* A severity set for the rule in [severity] or --severity stays as set. */
static bool severity_pinned(const Config *cfg, const Rule *rule) {
    return config_rule_severity(cfg, rule, (Severity)0) != (Severity)0;
}

static Severity severity_for_share(uint64_t cost, uint64_t run, Severity current) {
    if (!run) return current;
    double share = (double)cost / (double)run;
    Severity s = share >= 0.10 ? SEVERITY_ERROR : share >= 0.01 ? SEVERITY_WARNING : current;
    return s < current ? s : current;
}

/* Per-line metrics judge their finding: cleared (the concern did not show
 * in the measured launch) makes it a hint; otherwise the cost share raises
 * it, never past the ceiling the metrics allow. */
static Severity severity_measured(const Measurement *meas, uint64_t run, Severity current) {
    if (meas->cleared) return SEVERITY_HINT;
    Severity s = severity_for_share(meas->cost_ns, run, current);
    if (meas->judged && s < meas->ceiling) s = meas->ceiling < current ? meas->ceiling : current;
    return s;
}

/* Where the steady training steps left the GPU idle half their time or
 * more, the host set their pace: a GPU-time gain then mostly turns into
 * more idle time. Profiles with critical-path figures scale the gain by
 * them (measure_models.c apply_critical); older ones and imported traces
 * get this caveat instead: on the H200 a language model whose GPU idled 53%
 * of its steps had TF32 estimated at 0.64 ms per step and measured at
 * 0.10 ms (bench/RESULTS.md, public workloads). */
static bool caveat_host_bound(const Merge *m, Finding *f) {
    const ProfileSteady *steady = profile_view_steady(m->view);
    if (!steady || !steady->known || !steady->span_ns || steady->idle_ns * 2 < steady->span_ns) return true;
    return finding_caveat(f,
                          "the GPU was idle %.0f%% of the steady training steps: the host sets their pace, and GPU "
                          "time saved shortens a step only where the GPU is on its critical path, so the gain per "
                          "step may be far smaller",
                          100.0 * (double)steady->idle_ns / (double)steady->span_ns);
}

static bool attach(const Merge *m, Finding *f, Measurement *meas, const Rule *rule) {
    for (size_t i = 0; i < meas->evidence_count; i++)
        if (!finding_take_evidence(f, &meas->evidence[i])) return false;
    if (m->stale && !finding_caveat(f, "%s", m->stale_note)) return false;
    if (!m->stale && meas->has_gain && meas->gain_seconds > 0 && measure_gain_is_gpu_time(rule->measure) &&
        !meas->critical.applied && !caveat_host_bound(m, f))
        return false;
    if (meas->has_gain && meas->gain_seconds > 0 && finding_take_gain(f, meas->gain_seconds, meas->scope, &meas->model) &&
        meas->steady_steps)
        finding_gain_over_steady_steps(f);
    if (!m->stale && meas->withhold_fixes) finding_drop_fixes(f);
    if (!m->stale && !severity_pinned(m->cfg, rule))
        f->severity = severity_measured(meas, profile_view_run_ns(m->view), f->severity);
    return true;
}

/* Merges one finding; *drop set when it is to be hidden. */
static bool merge_finding(const Merge *m, Finding *f, bool *drop, MergeReport *report) {
    *drop = false;
    const Rule *rule = rule_find(f->code);
    if (rule && rule->memory_evidence && !m->stale &&
        !memory_evidence_add(m->view, m->file, f, line_of(m->doc, f->range.start),
                             line_of(m->doc, f->range.end > f->range.start ? f->range.end - 1 : f->range.start)))
        return false;
    if (!rule || rule->check_profile || rule->measure == MEASURE_NONE) return true;
    Enclosing e;
    enclosing_of(m, f, &e);
    char code[CODE_MAX + 8];
    code_text(m->doc, f, code, sizeof code);
    MeasureSite site = {m->view, m->file, line_of(m->doc, f->range.start),
                        line_of(m->doc, f->range.end > f->range.start ? f->range.end - 1 : f->range.start), code,
                        e.kernel, NULL, 0, m->stale};
    if (e.at_definition && e.has_function) { /* a finding about a whole function measures all of it */
        site.first = e.first;
        site.last = e.last;
    }
    uint32_t related[MEASURE_MAX_RELATED];
    if (measure_reads_related(rule->measure)) { /* the launches it would fuse with, the accesses that conflict */
        for (size_t i = 0; i < f->related_count && site.extra_count < MEASURE_MAX_RELATED; i++)
            related[site.extra_count++] = line_of(m->doc, f->related[i].range.start);
        site.extra = related;
    }
    Measurement meas;
    if (!measure_apply(rule->measure, &site, &meas)) {
        measurement_free(&meas);
        return false;
    }
    bool ok = true;
    if (meas.measured) {
        ok = attach(m, f, &meas, rule);
        report->measured++;
    } else if (!m->stale && m->cfg->profile_cold != PROFILE_COLD_KEEP && !enclosing_warm(m, &e)) {
        if (m->cfg->profile_cold == PROFILE_COLD_HIDE) {
            *drop = true;
            report->hidden++;
        } else {
            if (!severity_pinned(m->cfg, rule)) f->severity = SEVERITY_HINT;
            report->demoted++;
            ok = e.kernel ? finding_measured(f, NO_VALUES, "the profile shows `%s` never ran: cold code", e.kernel)
                          : finding_measured(f, NO_VALUES, "the profile measured no GPU work in `%s`: cold code",
                                             e.name && *e.name ? e.name : "this function");
        }
    }
    measurement_free(&meas);
    return ok;
}

/* A static finding of a rule that measures `kind` covering line (1-based),
 * at its own lines or, when its model reads them, at a related one. */
static bool static_finding_measures(const Document *doc, const FindingList *out, Measure kind, uint32_t line) {
    for (size_t i = 0; i < out->count; i++) {
        const Finding *f = &out->items[i];
        const Rule *rule = rule_find(f->code);
        /* a copy the fix removes is a copy too */
        Measure measured = rule ? rule->measure : MEASURE_NONE;
        if (measured == MEASURE_COPY_AVOIDED) measured = MEASURE_COPY;
        if (!rule || rule->check_profile || measured != kind) continue;
        if (line_of(doc, f->range.start) <= line && line <= line_of(doc, f->range.end)) return true;
        for (size_t r = 0; measure_reads_related(kind) && r < f->related_count; r++)
            if (line_of(doc, f->related[r].range.start) == line) return true;
    }
    return false;
}

static bool finding_of_rule_in(const FindingList *out, const char *code) {
    for (size_t k = 0; k < out->count; k++)
        if (out->items[k].code && strcmp(out->items[k].code, code) == 0) return true;
    return false;
}

void engine_drop_subsumed(const Document *doc, FindingList *out) {
    for (size_t i = 0; i < out->count;) {
        const Rule *rule = rule_find(out->items[i].code);
        bool drop = false;
        if (rule && rule->check_profile) {
            drop = rule->subsumed_in_file_by && finding_of_rule_in(out, rule->subsumed_in_file_by);
            drop = drop || (rule->subsumed_by != MEASURE_NONE &&
                            static_finding_measures(doc, out, rule->subsumed_by, line_of(doc, out->items[i].range.start)));
        }
        if (drop) finding_list_remove(out, i);
        else i++;
    }
}

static bool run_profile_rules(const Merge *m, const char *relative_path, const Rule *const *rules, size_t count,
                              FindingList *out, MergeReport *report) {
    size_t first_new = out->count;
    bool oom = false;
    for (size_t i = 0; i < count; i++) {
        const Rule *rule = rules[i];
        if (!rule->check_profile || !(rule->languages & m->doc->language) || !config_rule_enabled(m->cfg, rule))
            continue;
        RuleContext ctx = {.rule = rule, .doc = m->doc, .py = m->py, .cuda = m->cuda, .out = out,
                           .profile = m->view, .profile_file = m->file, .relative_path = relative_path};
        rule->check_profile(&ctx);
        oom |= ctx.out_of_memory;
    }
    engine_drop_subsumed(m->doc, out);
    if (m->stale)
        for (size_t i = first_new; i < out->count; i++)
            oom |= !finding_caveat(&out->items[i], "%s", m->stale_note);
    report->suppressed += engine_settle_findings(m->doc, m->py, m->cfg, out, first_new);
    return !oom;
}

static void stale_note(const ProfileView *v, char *buf, size_t size) {
    const char *c = profile_view_profile(v)->created; /* YYYY-MM-DDTHH:MM:SSZ */
    snprintf(buf, size, "(profile is older than this file: figures from %.10s %.5s UTC)", c,
             strlen(c) >= 16 ? c + 11 : "");
}

bool engine_merge_profile_with(const Document *doc, const PySource *py, const CudaSource *cuda,
                               const char *relative_path, const ProfileView *profile, const Config *cfg,
                               const Rule *const *rules, size_t rule_count, FindingList *out, MergeReport *report) {
    MergeReport local;
    if (!report) report = &local;
    memset(report, 0, sizeof *report);
    int file = profile ? profile_view_file(profile, relative_path) : -1;
    if (file < 0) return true;
    report->mentioned = true;
    PySource *owned_py = NULL;
    CudaSource *owned_cuda = NULL;
    if (doc->language == LANGUAGE_PYTHON && !py && !py_source_too_wide(doc)) py = owned_py = py_source_new(doc);
    if (doc->language == LANGUAGE_CUDA && !cuda) {
        CudaFlagOptions options = {cfg->cuda_build_dir, cfg->cuda_gpu_arch, cfg->cuda_path};
        char *error = NULL;
        cuda = owned_cuda = cuda_source_new(doc, &options, &error);
        free(error); /* without a parse, findings are measured by their lines alone */
    }
    Merge m = {doc, py, cuda, profile, file, cfg, false, ""};
    m.stale = profile_view_freshness(profile, file, doc->text, doc->length) == PROFILE_STALE;
    report->stale = m.stale;
    if (m.stale) stale_note(profile, m.stale_note, sizeof m.stale_note);

    bool ok = true;
    for (size_t i = 0; ok && i < out->count;) {
        bool drop;
        ok = merge_finding(&m, &out->items[i], &drop, report);
        if (drop) finding_list_remove(out, i);
        else i++;
    }
    if (ok) ok = run_profile_rules(&m, relative_path, rules, rule_count, out, report);
    if (ok) ok = engine_cap_gains(profile, out, 0);
    finding_list_sort(out);
    py_source_free(owned_py);
    cuda_source_free(owned_cuda);
    return ok;
}

bool engine_merge_profile_parsed(const Document *doc, const PySource *py, const CudaSource *cuda,
                                 const char *relative_path, const ProfileView *profile, const Config *cfg,
                                 FindingList *out, MergeReport *report) {
    size_t count;
    const Rule *const *all = rules_all(&count);
    return engine_merge_profile_with(doc, py, cuda, relative_path, profile, cfg, all, count, out, report);
}

bool engine_merge_profile(const Document *doc, const char *relative_path, const ProfileView *profile,
                          const Config *cfg, FindingList *out) {
    return engine_merge_profile_parsed(doc, NULL, NULL, relative_path, profile, cfg, out, NULL);
}

uint64_t engine_measured_cost_ns(const Document *doc, const ProfileView *profile, int file, const Finding *f) {
    if (!profile || file < 0) return 0;
    uint32_t first = line_of(doc, f->range.start);
    uint32_t last = line_of(doc, f->range.end > f->range.start ? f->range.end - 1 : f->range.start);
    return measure_lines_cost(profile, file, first, last);
}
