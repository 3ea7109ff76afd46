#include "rules/engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/base/env_flag.h"
#include "analysis/base/monotonic_clock.h"
#include "analysis/suppression.h"
#include "rules/engine/engine_internal.h"
#include "analysis/base/text_format.h"

static bool collect_python_comments(TSNode node, void *data) {
    void **args = data;
    Suppressions *s = args[0];
    const PySource *py = args[1];
    if (py_is(node, "comment")) {
        suppressions_add_comment(s, py->doc, ts_node_start_byte(node), ts_node_end_byte(node),
                                 py_starts_line(py, node));
        return false;
    }
    return true;
}

static void read_suppressions(const Document *doc, const PySource *py, Suppressions *s) {
    if (!strstr(doc->text, "advise:")) return; /* the common case: nothing to read */
    if (py) {
        void *args[2] = {s, (void *)py};
        py_walk(ts_tree_root_node(py->tree), collect_python_comments, args);
    } else {
        suppressions_scan_c_family(s, doc);
    }
}

size_t engine_settle_findings(const Document *doc, const PySource *py, const Config *cfg, FindingList *out,
                              size_t first_new) {
    size_t suppressed = 0;
    Suppressions sup = {0};
    read_suppressions(doc, py, &sup);
    for (size_t i = first_new; i < out->count;) {
        Finding *f = &out->items[i];
        size_t line = document_line_of(doc, f->range.start);
        if (sup.count && suppressions_cover(&sup, line, f->code, f->name)) {
            finding_list_remove(out, i);
            suppressed++;
            continue;
        }
        finding_drop_empty_fixes(f);
        const Rule *rule = rule_find(f->code);
        if (rule) f->severity = config_rule_severity(cfg, rule, f->severity);
        i++;
    }
    suppressions_free(&sup);

    /* sort the new findings only (none: items may be NULL, and NULL + 0 is
     * undefined behaviour; found by the fuzzer) */
    if (out->count > first_new) {
        FindingList tail = {out->items + first_new, out->count - first_new, out->count - first_new};
        finding_list_sort(&tail);
    }
    return suppressed;
}

/* Some enabled rule reads documents of this language (`--select PY` leaves
 * CUDA files unparsed). */
static bool any_rule_for(const Config *cfg, Language language) {
    size_t count;
    const Rule *const *all = rules_all(&count);
    for (size_t i = 0; i < count; i++)
        if (all[i]->check && (all[i]->languages & language) && config_rule_enabled(cfg, all[i])) return true;
    return false;
}

/* ADVISE_RULE_TIMING=1: one line on stderr per rule run, with its time, so
 * that a rule which walks the whole file in a one-statement pass shows up
 * (bench/README.md, "Where an edit's time goes"). */
static bool rule_timing_wanted(void) {
    static int wanted = -1;
    return env_flag("ADVISE_RULE_TIMING", &wanted);
}

static bool run(const Document *doc, const PySource *py, const CudaSource *cuda, const Config *cfg,
                const ByteRange *region, const EngineStop *stop, FindingList *out, EngineReport *report,
                char **error) {
    EngineReport local = {0};
    if (!report) report = &local;
    memset(report, 0, sizeof *report);
    if ((doc->language == LANGUAGE_PYTHON || doc->language == LANGUAGE_CUDA) && !py && !cuda &&
        !any_rule_for(cfg, doc->language))
        return true; /* nothing to run: no parse */
    PySource *owned = NULL;
    if (doc->language == LANGUAGE_PYTHON && !py) {
        if (py_source_too_wide(doc)) {
            *error = format_string("skipped: more than %d top-level lines, beyond what the Python parser can hold",
                                   PY_MAX_TOP_LEVEL_LINES);
            return false;
        }
        owned = py_source_new(doc);
        if (!owned) {
            *error = format_string("cannot parse as Python: the parser gave up after %d s (is this Python source?) "
                                   "or memory ran out",
                                   PY_PARSE_TIMEOUT_SECONDS);
            return false;
        }
        py = owned;
    }
    CudaSource *owned_cuda = NULL;
    if (doc->language == LANGUAGE_CUDA && !cuda) {
        CudaFlagOptions options = {cfg->cuda_build_dir, cfg->cuda_gpu_arch, cfg->cuda_path};
        owned_cuda = cuda_source_new(doc, &options, error);
        if (!owned_cuda) return false;
        cuda = owned_cuda;
    }
    if (doc->language != LANGUAGE_PYTHON && doc->language != LANGUAGE_CUDA) {
        *error = format_string("no analysis for this kind of file");
        return false;
    }
    if (py && py->has_errors) {
        report->syntax_error = true;
        report->error_offset = py->first_error;
    }
    if (cuda && cuda->has_errors) {
        report->syntax_error = true;
        report->error_offset = cuda->first_error;
        snprintf(report->error_message, sizeof report->error_message, "%s",
                 cuda->first_error_message ? cuda->first_error_message : "");
    }

    size_t first_new = out->count;
    size_t count;
    const Rule *const *all = rules_all(&count);
    bool oom = false;
    bool torch_file = py && (py->imports_torch || py->uses_gpu);
    for (size_t i = 0; i < count; i++) {
        const Rule *rule = all[i];
        if (!rule->check || !(rule->languages & doc->language) || !config_rule_enabled(cfg, rule)) continue;
        if (stop && stop->should_stop(stop->arg)) {
            report->cancelled = true;
            break;
        }
        if (py && !torch_file && !rule->runs_without_torch) continue;
        if (region && rule->whole_file) continue;
        RuleContext ctx = {.rule = rule, .doc = doc, .py = py, .cuda = cuda, .out = out};
        if (region) {
            ctx.has_region = true;
            ctx.region_start = region->start;
            ctx.region_end = region->end;
        }
        size_t before = out->count;
        py_facts_thread_reset();
        double began = rule_timing_wanted() ? monotonic_seconds() : 0;
        rule->check(&ctx);
        if (began > 0)
            fprintf(stderr, "advise rule timing: %s %s %.3f ms\n", rule->code, region ? "region" : "file",
                    (monotonic_seconds() - began) * 1e3);
        oom |= ctx.out_of_memory;
        if (region) /* a rule may look beyond the region; keep what starts inside it */
            for (size_t k = before; k < out->count;) {
                if (out->items[k].range.start < region->start || out->items[k].range.start >= region->end)
                    finding_list_remove(out, k);
                else
                    k++;
            }
    }

    report->suppressed += engine_settle_findings(doc, py, cfg, out, first_new);
    py_source_free(owned);
    cuda_source_free(owned_cuda); /* findings hold offsets, not nodes */
    if (oom) {
        *error = format_string("out of memory while analysing");
        return false;
    }
    return true;
}

bool engine_check(const Document *doc, const PySource *py, const Config *cfg, FindingList *out,
                  EngineReport *report, char **error) {
    return run(doc, py, NULL, cfg, NULL, NULL, out, report, error);
}

bool engine_check_cuda(const Document *doc, const CudaSource *cuda, const Config *cfg, FindingList *out,
                       EngineReport *report, char **error) {
    return run(doc, NULL, cuda, cfg, NULL, NULL, out, report, error);
}

bool engine_check_region(const Document *doc, const PySource *py, const Config *cfg, ByteRange region,
                         FindingList *out, EngineReport *report, char **error) {
    return run(doc, py, NULL, cfg, &region, NULL, out, report, error);
}

bool engine_check_stoppable(const Document *doc, const PySource *py, const Config *cfg, const EngineStop *stop,
                            FindingList *out, EngineReport *report, char **error) {
    return run(doc, py, NULL, cfg, NULL, stop, out, report, error);
}

bool engine_check_region_stoppable(const Document *doc, const PySource *py, const Config *cfg, ByteRange region,
                                   const EngineStop *stop, FindingList *out, EngineReport *report, char **error) {
    return run(doc, py, NULL, cfg, &region, stop, out, report, error);
}
