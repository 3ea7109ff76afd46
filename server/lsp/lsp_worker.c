/* Analysis workers: take a dirty document whose debounce delay has passed,
 * reparse it incrementally from a private copy of its text, run the engine,
 * and publish the diagnostics, unless the document moved on meanwhile
 * (results for an old version are never published). */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/base/env_flag.h"
#include "analysis/crash_guard.h"
#include "analysis/cuda/cuda_source.h"
#include "analysis/python/python_index.h"
#include "analysis/python/python_source.h"
#include "rules/engine/engine.h"
#include "rules/rule.h"
#include "server/lsp/jsonrpc.h"
#include "server/lsp/lsp_edits.h"
#include "server/lsp/lsp_server.h"
#include "analysis/base/text_format.h"

void lsp_document_free(LspDocument *d) {
    if (!d) return;
    free(d->uri);
    free(d->path);
    document_free(d->doc);
    free(d->edits);
    line_map_free(&d->line_map);
    py_source_free(d->parsed_py);
    cuda_source_free(d->parsed_cuda);
    document_free(d->parsed_doc);
    json_decref(d->diagnostics);
    lsp_diagnostic_texts_free(&d->published);
    finding_list_free(&d->findings);
    document_free(d->analysed_doc);
    json_decref(d->waiting_pulls);
    free(d);
}

json_t *lsp_pull_report(LspDocument *d, const char *previous_result_id) {
    char result_id[32];
    snprintf(result_id, sizeof result_id, "%lu", d->result_serial);
    if (previous_result_id && strcmp(previous_result_id, result_id) == 0)
        return json_pack("{s:s,s:s}", "kind", "unchanged", "resultId", result_id);
    if (!d->diagnostics && d->has_published) { /* a push client that pulls anyway */
        json_t *items = lsp_diagnostic_texts_json(&d->published, d->analysed_version);
        return json_pack("{s:s,s:s,s:o}", "kind", "full", "resultId", result_id, "items", items ? items : json_array());
    }
    return json_pack("{s:s,s:s,s:O}", "kind", "full", "resultId", result_id, "items",
                     d->diagnostics ? d->diagnostics : json_array());
}

void lsp_answer_pulls(LspServer *s, LspDocument *d) {
    size_t i;
    json_t *w;
    json_array_foreach(d->waiting_pulls, i, w)
        jsonrpc_send_result(json_object_get(w, "id"), lsp_pull_report(d, json_string_value(json_object_get(w, "previous"))));
    json_array_clear(d->waiting_pulls);
}

/* picks the document whose analysis is due first: an edited one, or one
 * whose full pass is due; NULL when none is due (then *wait holds the
 * seconds to the next due time, or -1) */
static LspDocument *next_due(LspServer *s, double *wait) {
    double now = lsp_now(), soonest = -1;
    if (!s->profiles_ready) { /* the profile folder is being read: the watcher wakes us */
        *wait = -1;
        return NULL;
    }
    LspDocument *pick = NULL;
    double pick_due = 0;
    for (LspDocument *d = s->documents; d; d = d->next) {
        if (d->busy || d->closed) continue;
        double due;
        if (d->dirty) due = d->due;
        else if (d->needs_full) due = d->full_due;
        else continue;
        if (due <= now) {
            if (!pick || due < pick_due) {
                pick = d;
                pick_due = due;
            }
        } else if (soonest < 0 || due - now < soonest) {
            soonest = due - now;
        }
    }
    *wait = soonest;
    return pick;
}

static void unlink_document(LspServer *s, LspDocument *d) {
    LspDocument **pp = &s->documents;
    while (*pp && *pp != d) pp = &(*pp)->next;
    if (*pp) *pp = d->next;
}

/* CUDA: libclang reparses the whole buffer but reuses its precompiled preamble */
static bool reparse_cuda(LspDocument *d, Document *text, const Config *cfg, char **error) {
    CudaSource *cuda = d->parsed_cuda;
    if (cuda && cuda_source_reparse(cuda, text, error)) {
        document_free(d->parsed_doc);
        d->parsed_doc = text;
        return true;
    }
    free(*error);
    *error = NULL;
    cuda_source_free(cuda);
    d->parsed_cuda = NULL;
    CudaFlagOptions options = {cfg->cuda_build_dir, cfg->cuda_gpu_arch, cfg->cuda_path};
    CudaSource *fresh = cuda_source_new(text, &options, error);
    if (!fresh) {
        document_free(text);
        return false;
    }
    document_free(d->parsed_doc);
    d->parsed_doc = text;
    d->parsed_cuda = fresh;
    return true;
}

/* A top-level function or class definition, and where the next top-level
 * statement starts. */
typedef struct {
    uint32_t start, next;
    bool has_next;
    TSSymbol symbol;
    uint32_t tops; /* named top-level nodes: statements and comments */
} DefinitionSpan;

/* The span of a top-level definition, where the cursor stands on it. */
static bool definition_of(TSNode def, TSTreeCursor *at_def, size_t a, size_t b, uint32_t tops, DefinitionSpan *span) {
    const char *type = ts_node_type(def);
    if (strcmp(type, "function_definition") != 0 && strcmp(type, "class_definition") != 0) return false;
    bool has_next = ts_tree_cursor_goto_next_sibling(at_def);
    uint32_t next = has_next ? ts_node_start_byte(ts_tree_cursor_current_node(at_def)) : 0;
    if (a && has_next && b >= next) return false;
    *span = (DefinitionSpan){ts_node_start_byte(def), next, has_next, ts_node_symbol(def), tops};
    return true;
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f'; }

/* definition_around on a tree without a syntax error, in a logarithmic
 * number of steps: the module's statements are found by byte through its
 * hidden repetition nodes (counting them from the first, twice per
 * keystroke, took about 0.5 ms on a module of 2,000 statements). *decided
 * is false where it cannot tell, and the caller counts. */
static bool definition_around_clean(const PySource *py, size_t a, size_t b, DefinitionSpan *span, bool *decided) {
    *decided = true;
    TSNode root = ts_tree_root_node(py->tree);
    uint32_t goal;
    if (a) { /* the last byte before a that a node must hold: not whitespace */
        size_t q = a;
        while (q > 0 && is_blank(py->doc->text[q - 1])) q--;
        if (q == 0) return false; /* nothing starts before a */
        goal = (uint32_t)(q - 1);
    } else {
        goal = span->start;
    }
    TSTreeCursor cursor = ts_tree_cursor_new(root);
    bool ok = false;
    /* tree-sitter 0.20 stops at a child that ends at the goal byte too (a
     * `\` line continuation before a definition): the one after it holds it */
    bool found = ts_tree_cursor_goto_first_child_for_byte(&cursor, goal) >= 0;
    while (found && ts_node_end_byte(ts_tree_cursor_current_node(&cursor)) <= goal)
        found = ts_tree_cursor_goto_next_sibling(&cursor);
    if (!found) {
        *decided = false;
    } else {
        TSNode def = ts_tree_cursor_current_node(&cursor);
        uint32_t s = ts_node_start_byte(def);
        if (a ? s > goal : s != goal) *decided = false; /* a byte outside every node: count instead */
        else ok = definition_of(def, &cursor, a, b, ts_node_named_child_count(root), span);
    }
    ts_tree_cursor_delete(&cursor);
    return ok;
}

/* With a > 0: the top-level function or class definition of py's tree that
 * is the last top-level statement to start before byte a, when the next
 * one starts after byte b (an edit of [a, b] touches the definition or the
 * blank lines after it, nothing else). With a == 0: the one that starts at
 * span->start. Either way no other top-level statement may hold a syntax
 * error. */
static bool definition_around(const PySource *py, size_t a, size_t b, DefinitionSpan *span) {
    bool decided;
    if (!ts_node_has_error(ts_tree_root_node(py->tree))) {
        bool found = definition_around_clean(py, a, b, span, &decided);
        if (decided) return found;
    }
    TSTreeCursor cursor = ts_tree_cursor_new(ts_tree_root_node(py->tree));
    TSNode def = {0};
    bool def_error = false, has_next = false;
    uint32_t errors = 0, tops = 0, next = 0;
    if (ts_tree_cursor_goto_first_child(&cursor)) {
        do {
            TSNode n = ts_tree_cursor_current_node(&cursor);
            uint32_t s = ts_node_start_byte(n);
            bool error = ts_node_has_error(n) || ts_node_is_missing(n);
            tops += ts_node_is_named(n);
            errors += error;
            if (a ? s < a : s == span->start) {
                def = n;
                def_error = error;
                has_next = false;
            } else if (!ts_node_is_null(def) && !has_next) {
                next = s;
                has_next = true;
            }
        } while (ts_tree_cursor_goto_next_sibling(&cursor));
    }
    ts_tree_cursor_delete(&cursor);
    if (ts_node_is_null(def) || errors != (def_error ? 1u : 0u)) return false;
    if (a && has_next && b >= next) return false;
    const char *type = ts_node_type(def);
    if (strcmp(type, "function_definition") != 0 && strcmp(type, "class_definition") != 0) return false;
    *span = (DefinitionSpan){ts_node_start_byte(def), next, has_next, ts_node_symbol(def), tops};
    return true;
}

/* brings d->parsed_doc / parsed_py up to `text` (runs without the lock) */
static bool reparse(LspDocument *d, Document *text, struct PendingEdit *edits, size_t edit_count, bool from_scratch) {
    PySource *py = d->parsed_py;
    if (py && !from_scratch) {
        /* One edit inside a top-level function or class leaves the module
         * scope's bindings as they were (the index skips definitions'
         * insides): they are carried over the reparse, moved, instead of
         * being collected again over the whole module at its next global. */
        PyCarriedBindings *carried = NULL;
        DefinitionSpan before = {0};
        if (edit_count == 1 && edits[0].start > 0 && definition_around(py, edits[0].start, edits[0].old_end, &before))
            carried = py_index_take_module(py);
        for (size_t i = 0; i < edit_count; i++)
            py_source_note_edit(py, edits[i].start, edits[i].old_end, edits[i].new_end, edits[i].start_point,
                                edits[i].old_end_point, edits[i].new_end_point);
        if (py_source_reparse(py, text)) {
            if (carried) {
                /* the same definition, and the same statements after it, moved by the edit */
                long long delta = (long long)edits[0].new_end - (long long)edits[0].old_end;
                DefinitionSpan after = {.start = before.start};
                if (definition_around(py, 0, 0, &after) && after.symbol == before.symbol && after.tops == before.tops &&
                    after.has_next == before.has_next && (!after.has_next || (long long)after.next == before.next + delta))
                    py_index_put_module(py, carried, edits[0].start, edits[0].old_end, edits[0].new_end);
                else
                    py_index_carried_free(carried);
            }
            document_free(d->parsed_doc);
            d->parsed_doc = text;
            return true;
        }
        py_index_carried_free(carried);
    }
    py_source_free(py);
    d->parsed_py = NULL;
    PySource *fresh = py_source_new(text);
    if (!fresh) {
        document_free(text);
        return false;
    }
    document_free(d->parsed_doc);
    d->parsed_doc = text;
    d->parsed_py = fresh;
    return true;
}

/* The span of the new text that the edits touched, and the change in length. */
static bool edited_span(const struct PendingEdit *edits, size_t count, size_t *a, size_t *b, long long *delta) {
    if (count == 0) return false;
    *delta = 0;
    for (size_t i = 0; i < count; i++) {
        const struct PendingEdit *e = &edits[i];
        long long d = (long long)e->new_end - (long long)e->old_end;
        if (i == 0) {
            *a = e->start;
            *b = e->new_end;
        } else {
            size_t na = *a < e->start ? *a : (*a >= e->old_end ? (size_t)((long long)*a + d) : e->start);
            size_t nb = *b <= e->start ? *b : (*b >= e->old_end ? (size_t)((long long)*b + d) : e->new_end);
            *a = na < e->start ? na : e->start;
            *b = nb > e->new_end ? nb : e->new_end;
        }
        *delta += d;
    }
    return true;
}

/* stmt holds the edited span [a, b] and is a statement */
static bool holds_edit(TSNode stmt, size_t a, size_t b) {
    size_t s = ts_node_start_byte(stmt), e = ts_node_end_byte(stmt);
    /* an ERROR node is no statement: error recovery made it of several */
    return s <= a && b <= e && (a < e || a == b) && ts_node_is_named(stmt) && !ts_node_is_missing(stmt) &&
           strcmp(ts_node_type(stmt), "ERROR") != 0;
}

static bool single_unit_counting(const PySource *py, size_t a, size_t b, size_t *ua, size_t *ub);

/* The top-level statement of the new tree that holds [a, b], if exactly one
 * does, it is a statement (not an ERROR node that recovery made of several),
 * and every other top-level statement parsed cleanly (a syntax error
 * elsewhere could mean that error recovery reshaped more than this one). */
static bool single_unit(const PySource *py, size_t a, size_t b, size_t *ua, size_t *ub) {
    /* The statement found by byte, through the module's hidden nodes (as
     * definition_around_clean). Without a syntax error in the tree it is the
     * answer; when the tree has one and the statement does not, the error is
     * elsewhere. Only an edited statement that holds an error makes the
     * others be counted. (Against the counting walk over 4.9 million
     * generated cases, the answers differ only where the tree has an error
     * that no top-level statement holds, as when the root itself is an
     * ERROR node: the walk saw none and allowed the quick pass, this holds
     * the edit for the whole-file pass, as for an error elsewhere.) */
    TSNode root = ts_tree_root_node(py->tree);
    TSTreeCursor cursor = ts_tree_cursor_new(root);
    TSNode unit = {0};
    bool more = ts_tree_cursor_goto_first_child_for_byte(&cursor, (uint32_t)a) >= 0;
    for (; more; more = ts_tree_cursor_goto_next_sibling(&cursor)) {
        TSNode stmt = ts_tree_cursor_current_node(&cursor);
        if (ts_node_start_byte(stmt) > a) break;
        if (holds_edit(stmt, a, b)) {
            unit = stmt;
            break;
        }
        if (ts_node_has_error(stmt) || ts_node_is_missing(stmt)) break; /* the counting walk stops here too */
    }
    ts_tree_cursor_delete(&cursor);
    if (ts_node_is_null(unit)) return single_unit_counting(py, a, b, ua, ub);
    if (!ts_node_has_error(root)) {
        *ua = ts_node_start_byte(unit);
        *ub = ts_node_end_byte(unit);
        return true;
    }
    if (!ts_node_has_error(unit)) return false;
    return single_unit_counting(py, a, b, ua, ub);
}

static bool single_unit_counting(const PySource *py, size_t a, size_t b, size_t *ua, size_t *ub) {
    TSNode root = ts_tree_root_node(py->tree);
    TSTreeCursor cursor = ts_tree_cursor_new(root);
    bool found = false, errors_elsewhere = false;
    if (ts_tree_cursor_goto_first_child(&cursor)) {
        do {
            TSNode stmt = ts_tree_cursor_current_node(&cursor);
            if (!found && holds_edit(stmt, a, b)) {
                *ua = ts_node_start_byte(stmt);
                *ub = ts_node_end_byte(stmt);
                found = true;
                continue;
            }
            if (ts_node_has_error(stmt) || ts_node_is_missing(stmt)) errors_elsewhere = true;
        } while (!errors_elsewhere && ts_tree_cursor_goto_next_sibling(&cursor));
    }
    ts_tree_cursor_delete(&cursor);
    return found && !errors_elsewhere;
}

static bool shift_range(ByteRange *r, size_t ua, size_t ub_old, long long delta) {
    if (r->end <= ua) return true;
    if (r->start >= ub_old) {
        r->start = (size_t)((long long)r->start + delta);
        r->end = (size_t)((long long)r->end + delta);
        return true;
    }
    return false; /* touches the re-analysed statement */
}

/* Keeps the old findings outside the re-analysed statement [ua, ub_old) of
 * the old text, moved to the new text's offsets; fixes and related places
 * that reach into the statement are dropped (the full pass brings them back).
 * Findings of whole-file rules (which the quick pass does not run) are kept
 * inside the statement too, unless they touch the edited span [ea, eb_old):
 * they stay visible until the full pass confirms or removes them. */
static void keep_outside(const FindingList *old, size_t ua, size_t ub_old, size_t ea, size_t eb_old, long long delta,
                         FindingList *out) {
    for (size_t i = 0; i < old->count; i++) {
        const Finding *f = &old->items[i];
        ByteRange r = f->range;
        const Rule *rule = rule_find(f->code);
        bool whole_file = rule && rule->whole_file;
        size_t span_a = whole_file ? ea : ua, span_b = whole_file ? eb_old : ub_old;
        if (!shift_range(&r, span_a, span_b, delta)) continue;
        Finding *g = finding_list_push(out);
        if (!g) return;
        g->code = f->code;
        g->name = f->name;
        g->severity = f->severity;
        g->range = r;
        g->advice = f->advice; /* static: the rule's */
        g->message = strdup(f->message);
        /* the items keep their kinds: what the profile measured stays measured */
        for (size_t k = 0; k < f->evidence_count; k++) {
            Evidence copy;
            if (evidence_copy(&copy, &f->evidence[k])) finding_take_evidence(g, &copy);
        }
        if (f->gain.present) {
            Evidence model;
            if (evidence_copy(&model, &f->gain.model) && finding_take_gain(g, f->gain.seconds, f->gain.scope, &model) &&
                f->gain.steady_steps)
                finding_gain_over_steady_steps(g);
        }
        bool whole = true; /* nothing dropped: the copy says what f said (its JSON can be reused) */
        for (size_t k = 0; k < f->related_count; k++) {
            ByteRange rr = f->related[k].range;
            if (shift_range(&rr, span_a, span_b, delta)) whole &= finding_add_related(g, rr, f->related[k].message);
            else whole = false;
        }
        for (size_t k = 0; k < f->fix_count; k++) {
            const Fix *fix = &f->fixes[k];
            bool ok = true;
            ByteRange moved[64];
            for (size_t e = 0; e < fix->edit_count && ok; e++) {
                if (e >= 64) ok = false;
                else {
                    moved[e] = fix->edits[e].range;
                    ok = shift_range(&moved[e], span_a, span_b, delta);
                }
            }
            if (!ok) {
                whole = false;
                continue;
            }
            Fix *copy = finding_add_fix(g, fix->title, fix->safe);
            whole &= copy != NULL;
            for (size_t e = 0; copy && e < fix->edit_count; e++)
                whole &= fix_add_edit(copy, moved[e].start, moved[e].end, fix->edits[e].new_text);
        }
        if (whole && g->message && g->evidence_count == f->evidence_count && g->gain.present == f->gain.present)
            g->published_id = f->published_id;
    }
}

/* Removes the findings of profile rules (the quick pass makes them anew). */
static bool drop_profile_rule_findings(FindingList *list) {
    for (size_t i = 0; i < list->count;) {
        const Rule *rule = rule_find(list->items[i].code);
        if (rule && rule->check_profile) finding_list_remove(list, i);
        else i++;
    }
    return true;
}

/* Moves every finding of from to the end of to; false when memory runs out. */
static bool move_findings(FindingList *from, FindingList *to) {
    size_t i = 0;
    for (; i < from->count; i++) {
        Finding *g = finding_list_push(to);
        if (!g) break;
        *g = from->items[i];
    }
    bool ok = i == from->count;
    /* what was not moved stays with from and is freed with it */
    if (!ok) memmove(from->items, from->items + i, (from->count - i) * sizeof *from->items);
    from->count -= i;
    return ok;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static void copy_config(const Config *from, Config *to) {
    config_init(to);
    to->cuda_build_dir = dup_or_null(from->cuda_build_dir);
    to->cuda_gpu_arch = dup_or_null(from->cuda_gpu_arch);
    to->cuda_path = dup_or_null(from->cuda_path);
    for (size_t i = 0; i < from->select.count; i++) string_list_add(&to->select, from->select.items[i]);
    for (size_t i = 0; i < from->ignore.count; i++) string_list_add(&to->ignore, from->ignore.items[i]);
    for (size_t i = 0; i < from->severity_count; i++)
        config_set_severity(to, from->severity[i].selector, severity_name(from->severity[i].severity));
}

void lsp_config_snapshot(const LspServer *s, Config *out) {
    copy_config(&s->config, out);
    if (s->config.profile_dir) out->profile_dir = strdup(s->config.profile_dir);
}

/* The workspace index looks for files changed on disk at most this often. */
#define WORKSPACE_REFRESH_SECONDS 10

/* One analysis pass, run outside the lock under the crash guard: brings the
 * parse up to the text, runs the rules (only over the edited statement in a
 * quick pass) and merges the profile. */
typedef struct {
    LspDocument *d;
    const atomic_bool *cancel; /* the server's analyses_cancelled */
    const atomic_bool *superseded; /* the document's, for a pass that may stop for an edit; else NULL */
    Document *text; /* owned until reparsed */
    struct PendingEdit *edits; /* freed here */
    size_t edit_count;
    bool edited, from_scratch, quick_allowed, had_results;
    const Config *config;
    LspProfiles *profiles;
    const LineMap *line_map; /* the snapshot's: where the profiled lines went */
    PyWorkspaces *workspaces;
    /* results */
    bool ok, quick, warm_up, crashed;
    bool cancelled; /* stopped at a check: no results (ok is false) */
    char *error;
    FindingList findings;
    double began, parsed, facts_ready, rules_done; /* lsp_now() at each phase's end, for ADVISE_LSP_TIMING */
} AnalysisPass;

/* ADVISE_LSP_TIMING=1: one line on stderr per finished pass, with the time
 * of each phase (bench/README.md, "Where an edit's time goes"). */
static bool timing_wanted(void) {
    static int wanted = -1;
    return env_flag("ADVISE_LSP_TIMING", &wanted);
}

/* Cooperative cancellation: the pass looks at the flags between its phases
 * (parse, rules, profile merge) and between rules, and stops there, leaving
 * d's parse state whole (the parser and a rule are never cut short). */
static bool pass_cancelled(AnalysisPass *p) {
    if (atomic_load(p->cancel) || (p->superseded && atomic_load(p->superseded))) p->cancelled = true;
    return p->cancelled;
}

static bool pass_should_stop(void *arg) { return pass_cancelled(arg); }

static void run_pass(void *arg) {
    AnalysisPass *p = arg;
    LspDocument *d = p->d;
    bool edited = p->edited;
    const Config *config = p->config;
    crash_guard_debug_crash_point(d->path);
    if (pass_cancelled(p)) { /* before the parse: the snapshot is ours to free */
        document_free(p->text);
        p->text = NULL;
        free(p->edits);
        p->edits = NULL;
        p->ok = false;
        return;
    }
    bool ok = true;
    bool is_cuda = d->language == LANGUAGE_CUDA;
    p->began = lsp_now();
    p->warm_up = is_cuda && !edited && d->parsed_cuda && d->parsed_doc;
    if (edited && is_cuda) ok = p->text && reparse_cuda(d, p->text, config, &p->error);
    /* a CUDA file's first parse skips the precompiled preamble so that its
     * diagnostics come sooner; this pass builds it, so that edits are fast */
    else if (p->warm_up)
        ok = reparse_cuda(d, document_clone(d->parsed_doc), config, &p->error);
    else if (edited) ok = p->text && reparse(d, p->text, p->edits, p->edit_count, p->from_scratch);
    PySource *py = d->parsed_py;
    p->parsed = lsp_now();
    PyWorkspace *ws = ok && py && !is_cuda ? py_workspaces_for(p->workspaces, d->path) : NULL;
    py_workspace_refresh_if_older(ws, WORKSPACE_REFRESH_SECONDS);

    /* quick pass: only the top-level statement that holds every edit */
    size_t a = 0, b = 0, ua = 0, ub = 0;
    long long delta = 0;
    bool incremental = ok && !is_cuda && edited && p->quick_allowed && p->had_results && !p->from_scratch &&
                       edited_span(p->edits, p->edit_count, &a, &b, &delta);
    bool quick = incremental && single_unit(py, a, b, &ua, &ub);
    /* An edit that leaves a syntax error the quick pass cannot confine to
     * one statement (a half-typed bracket or string whose error runs on past
     * it, or a statement broken elsewhere) is held: the last findings, moved
     * by the edit, less those it touches, answer it at once, and the
     * whole-file pass runs once the typing pauses (full_pass_delay, as after
     * a quick pass). Findings of half-parsed text would come and go with
     * each keystroke, and the whole-file pass for each keystroke took 600 ms
     * on a 6,000-line file. Text that parses (a paste across statements)
     * gets its whole-file pass at once. */
    bool held = incremental && !quick && ts_node_has_error(ts_tree_root_node(py->tree));
    free(p->edits);
    p->edits = NULL;
    /* The facts of the project's modules, this buffer's own included: a full
     * pass answers for the whole text as a fresh open of it would, so the
     * index takes this text's facts first. Extracting them walks the whole
     * file: a quick pass leaves that to the full pass that follows it. */
    if (ok && ws && !quick && !held) py_workspace_update(ws, py);
    PyWorkspaceView *view = ws ? py_workspace_view(ws) : NULL;
    if (py) py_workspace_attach(py, view);
    FindingList *findings = &p->findings;
    EngineStop stop = {pass_should_stop, p};
    p->facts_ready = lsp_now();
    if (ok && pass_cancelled(p)) ok = false; /* before the rules, the long part */
    if (ok && held) {
        size_t b_old = (size_t)((long long)b - delta);
        keep_outside(&d->findings, a, b_old, a, b_old, delta, findings);
        finding_list_sort(findings);
    } else if (ok && quick) {
        keep_outside(&d->findings, ua, (size_t)((long long)ub - delta), a, (size_t)((long long)b - delta), delta,
                     findings);
        /* the statement's findings are measured afresh; the profile rules run over the whole new text */
        FindingList region;
        finding_list_init(&region);
        ok = engine_check_region_stoppable(d->parsed_doc, py, config, (ByteRange){ua, ub}, &stop, &region, NULL,
                                           &p->error);
        if (ok && pass_cancelled(p)) ok = false;
        if (ok && !lsp_profiles_merge(p->profiles, d->path, d->parsed_doc, py, NULL, config, p->line_map, &region)) ok = false;
        ok = ok && drop_profile_rule_findings(findings) && move_findings(&region, findings);
        /* the region's profile rules saw only its own static findings: now the file's */
        if (ok) engine_drop_subsumed(d->parsed_doc, findings);
        finding_list_free(&region);
        finding_list_sort(findings);
    } else if (ok && is_cuda) {
        ok = engine_check_cuda(d->parsed_doc, d->parsed_cuda, config, findings, NULL, &p->error);
        if (ok && pass_cancelled(p)) ok = false;
        ok = ok && lsp_profiles_merge(p->profiles, d->path, d->parsed_doc, NULL, d->parsed_cuda, config, p->line_map, findings);
    } else if (ok) {
        ok = engine_check_stoppable(d->parsed_doc, py, config, &stop, findings, NULL, &p->error);
        if (ok && pass_cancelled(p)) ok = false;
        ok = ok && lsp_profiles_merge(p->profiles, d->path, d->parsed_doc, py, NULL, config, p->line_map, findings);
    }
    if (py) py_workspace_attach(py, NULL);
    py_workspace_view_release(view);
    p->rules_done = lsp_now();
    p->ok = ok;
    p->quick = quick || held; /* either way the whole-file pass follows */
}

/* After a cancelled pass (lock held): the document is left as if never
 * analysed since its last edit. A pass cancelled before its parse took the
 * pending edits with it, so the next parse starts afresh. */
static void drop_cancelled(LspServer *s, LspDocument *d) {
    d->edits_overflowed = true;
    d->dirty = true;
    if (d->closed) { /* closed while busy: ours to free */
        unlink_document(s, d);
        lsp_document_free(d);
    }
}

/* Called with the lock held; returns with it held. *garbage: the parse
 * tree the reparse replaced, for the caller to free after the lock is let
 * go (after the publish: freeing a large module's tree takes milliseconds). */
static void analyse(LspServer *s, LspDocument *d, TSTree **garbage) {
    bool edited = d->dirty;
    int64_t version = d->version;
    Document *text = NULL;
    struct PendingEdit *edits = NULL;
    size_t edit_count = 0;
    bool from_scratch = false;
    if (edited) {
        /* snapshot the text and the edits since the last parse */
        text = document_clone(d->doc);
        edit_count = d->edit_count;
        edits = edit_count ? malloc(edit_count * sizeof *edits) : NULL;
        if (edits) memcpy(edits, d->edits, edit_count * sizeof *edits);
        from_scratch = d->edits_overflowed || (edit_count && !edits) || !d->parsed_py;
        d->edit_count = 0;
        d->edits_overflowed = false;
        d->dirty = false;
    }
    d->needs_full = false;
    d->busy = true;
    /* only a Python pass that does not reparse may stop for an edit: it
     * leaves the parse as it found it (a CUDA warm-up pass reparses) */
    d->full_pass_running = !edited && d->language == LANGUAGE_PYTHON;
    atomic_store(&d->superseded, false);
    bool had_results = d->results_match_parse;
    LineMap line_map; /* it follows d->doc, which the parse below reads (or a snapshot of it) */
    line_map_copy(&line_map, &d->line_map);
    pthread_mutex_unlock(&s->lock);
    /* the document's project: its advise.toml and profiles, found walking up from it */
    LspProfiles *profiles = lsp_profiles_for_document(s, d->path);
    pthread_mutex_lock(&s->lock);
    Config config; /* the settings as they are now */
    lsp_config_for_project(s, profiles, &config);
    bool quick_allowed = s->quick_pass;
    pthread_mutex_unlock(&s->lock);

    bool is_cuda = d->language == LANGUAGE_CUDA;
    AnalysisPass pass = {.d = d, .cancel = &s->analyses_cancelled,
                         .superseded = !edited && !is_cuda ? &d->superseded : NULL,
                         .text = text, .edits = edits, .edit_count = edit_count, .edited = edited,
                         .from_scratch = from_scratch, .quick_allowed = quick_allowed, .config = &config,
                         .profiles = profiles, .line_map = &line_map, .workspaces = s->workspaces, .had_results = d->results_match_parse && d->analysed_version >= 0};
    finding_list_init(&pass.findings);
    int sig;
    if (!crash_guard_run(run_pass, &pass, &sig)) {
        /* the parse state may be half-built: leave it (leaked), never touch it again */
        d->parsed_py = NULL;
        d->parsed_cuda = NULL;
        d->parsed_doc = NULL;
        finding_list_init(&pass.findings);
        pass.ok = false;
        pass.error = format_string("advise crashed while analysing this file (%s), so it has no findings; this is a "
                                   "bug in advise, please report it with the file",
                                   crash_guard_signal_name(sig));
        pass.crashed = true;
    }
    /* still ours (busy): no other worker touches the parse state */
    if (!pass.crashed && d->parsed_py) *garbage = py_source_take_retired(d->parsed_py);
    /* a pass that ended before the exit came: its results are not wanted either */
    bool cancelled = pass.cancelled || atomic_load(&s->analyses_cancelled);
    bool ok = pass.ok && !cancelled, quick = pass.quick, warm_up = pass.warm_up;
    if (ok) lsp_profiles_explain_unmerged(s, profiles, d->path);
    char *error = pass.error;
    FindingList findings = pass.findings;
    Document *analysed = ok ? document_clone(d->parsed_doc) : NULL;
    /* pull clients get the JSON array; a push publish is written from each
     * diagnostic's text, kept from the last publish where the finding is the same */
    json_t *diagnostics = NULL;
    LspDiagnosticTexts texts = {NULL, 0};
    bool have_diagnostics = false;
    if (ok && analysed && s->pull_diagnostics)
        have_diagnostics = (diagnostics = lsp_findings_to_diagnostics(s, d, &findings, analysed, version)) != NULL;
    else if (ok && analysed)
        have_diagnostics = lsp_diagnostic_texts(s, d, &findings, analysed, &texts);
    config_free(&config);
    line_map_free(&line_map);
    double texts_done = lsp_now();

    pthread_mutex_lock(&s->lock);
    lsp_profiles_unref(profiles);
    d->busy = false;
    d->full_pass_running = false;
    d->results_match_parse = false;
    if (cancelled && !s->stopping && pass.superseded && !pass.crashed) {
        /* a full pass stopped for an edit: the parse and the last results are
         * as before it, so the edit gets its quick pass; the full pass comes
         * again once the typing pauses */
        free(error);
        finding_list_free(&findings);
        document_free(analysed);
        json_decref(diagnostics);
        lsp_diagnostic_texts_free(&texts);
        d->results_match_parse = had_results;
        d->needs_full = true;
        d->full_due = lsp_now() + s->full_pass_delay;
        if (d->closed) {
            unlink_document(s, d);
            lsp_document_free(d);
        }
        return;
    }
    if (cancelled || s->stopping) { /* stopping, read under the lock: nothing is published after exit */
        free(error);
        finding_list_free(&findings);
        document_free(analysed);
        json_decref(diagnostics);
        lsp_diagnostic_texts_free(&texts);
        drop_cancelled(s, d);
        return;
    }
    if (!ok || !analysed || !have_diagnostics) {
        lsp_log(1, "advise: cannot analyse %s: %s", d->uri, error ? error : "out of memory");
        if (pass.crashed && !d->crash_reported) { /* once per document: the log may not be open */
            d->crash_reported = true;
            jsonrpc_send_notification("window/showMessage",
                                      json_pack("{s:i,s:s}", "type", 1, "message",
                                                error ? error : "advise crashed while analysing this file"));
        }
        free(error);
        finding_list_free(&findings);
        document_free(analysed);
        json_decref(diagnostics);
        lsp_diagnostic_texts_free(&texts);
        if (d->closed) { /* closed while busy: ours to free (it would stay in the list until exit) */
            unlink_document(s, d);
            lsp_document_free(d);
            return;
        }
        /* the parse state may be out of step with the edits: start over next time */
        py_source_free(d->parsed_py);
        d->parsed_py = NULL;
        cuda_source_free(d->parsed_cuda);
        d->parsed_cuda = NULL;
        d->edits_overflowed = true;
        return;
    }
    if (d->closed) {
        unlink_document(s, d);
        finding_list_free(&findings);
        document_free(analysed);
        json_decref(diagnostics);
        lsp_diagnostic_texts_free(&texts);
        lsp_document_free(d);
        return;
    }
    if (version != d->version) {
        /* an edit came in meanwhile: drop these results, the newer version is queued */
        finding_list_free(&findings);
        document_free(analysed);
        json_decref(diagnostics);
        lsp_diagnostic_texts_free(&texts);
        return;
    }
    /* the text analysed is what the profile measured: from here on its figures follow the edits */
    if (profiles) lsp_profiles_start_line_map(profiles, d->path, analysed, &d->line_map);
    bool changed = d->analysed_version != version ||
                   (s->pull_diagnostics ? !d->diagnostics || !json_equal(d->diagnostics, diagnostics)
                                        : !d->has_published || !lsp_diagnostic_texts_equal(&d->published, &texts));
    finding_list_free(&d->findings);
    d->findings = findings;
    document_free(d->analysed_doc);
    d->analysed_doc = analysed;
    json_decref(d->diagnostics);
    d->diagnostics = diagnostics;
    lsp_diagnostic_texts_free(&d->published);
    d->published = texts;
    d->has_published = !s->pull_diagnostics;
    d->analysed_version = version;
    d->results_match_parse = true;
    if (quick || (is_cuda && edited && !d->preamble_built)) {
        d->needs_full = true;
        d->full_due = lsp_now() + (quick ? s->full_pass_delay : 0);
        pthread_cond_broadcast(&s->work_ready);
    }
    if (warm_up) d->preamble_built = true;
    if (changed) d->result_serial = ++s->next_serial;
    if (s->pull_diagnostics) {
        lsp_answer_pulls(s, d);
        if (changed && !edited && s->refresh_support)
            lsp_send_request(s, "workspace/diagnostic/refresh", NULL, NULL, NULL, NULL);
    } else if (changed) {
        /* sent under the lock so that an older version can never overtake a newer one */
        lsp_publish_diagnostic_texts(d->uri, version, &d->published);
    }
    if (timing_wanted())
        fprintf(stderr,
                "advise timing: version %lld %s, waited %.2f ms, parse %.2f, facts %.2f, rules %.2f, "
                "texts %.2f, publish %.2f ms\n",
                (long long)version, quick ? "quick" : edited ? "full, reparsed" : "full",
                (pass.began - d->scheduled_at) * 1e3, (pass.parsed - pass.began) * 1e3,
                (pass.facts_ready - pass.parsed) * 1e3, (pass.rules_done - pass.facts_ready) * 1e3,
                (texts_done - pass.rules_done) * 1e3, (lsp_now() - texts_done) * 1e3);
}

/* Frees the thread's alternate signal stack (crash_guard.c gives each
 * thread that runs guarded work 256 KiB). Each advise/findings request and
 * workspace scan runs on a thread of its own: without this, each left its
 * stack behind (heaptrack over the soak: 256 KiB per advise/findings). */
void lsp_thread_end(void) {
    crash_guard_thread_end();
}

/* Freeing a parse tree leaves thousands of small blocks in glibc's fast
 * free lists, and the next request for a large block sweeps them all
 * (malloc_consolidate): that was the next keystroke's snapshot of the
 * text, 5% of the server's time on a 6,000-line module, on the path to
 * its answer. A large block asked for and given back right after the
 * tree's release makes the sweep happen now, after the publish, while the
 * editor reads it. (Only a matter of when: it changes no result.) */
static void sweep_free_lists(void) {
    void *p = malloc(64 * 1024); /* above the small sizes, below the mmap threshold */
    __asm__ volatile("" : : "r"(p) : "memory"); /* kept: the compiler may not pair and drop the two */
    free(p);
}

static void *worker_main(void *arg) {
    LspServer *s = arg;
    bool analysed = false; /* since this worker last gave memory back */
    double trimmed_at = 0;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        double wait;
        LspDocument *d = next_due(s, &wait);
        if (d) {
            TSTree *garbage = NULL;
            analyse(s, d, &garbage); /* returns with the lock held */
            analysed = true;
            if (garbage) {
                pthread_mutex_unlock(&s->lock);
                ts_tree_delete(garbage);
                sweep_free_lists();
                pthread_mutex_lock(&s->lock);
            }
            continue;
        }
        /* going idle after analyses: give the heap's free pages back to the
         * system (at most once a second). Over a long session the one arena
         * (cli_server.c) otherwise kept pages that freed parse trees and
         * findings left between live blocks: the soak's RSS crept up. */
        if (analysed && lsp_now() - trimmed_at >= 1.0) {
            analysed = false;
            pthread_mutex_unlock(&s->lock);
            malloc_trim(0);
            trimmed_at = lsp_now();
            pthread_mutex_lock(&s->lock);
            continue;
        }
        if (wait < 0) {
            pthread_cond_wait(&s->work_ready, &s->lock);
        } else {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long long ns = ts.tv_nsec + (long long)(wait * 1e9) + 1;
            ts.tv_sec += ns / 1000000000;
            ts.tv_nsec = ns % 1000000000;
            pthread_cond_timedwait(&s->work_ready, &s->lock, &ts);
        }
    }
    s->workers_running--; /* from here on this thread touches nothing of s */
    pthread_cond_broadcast(&s->workers_done);
    pthread_mutex_unlock(&s->lock);
    lsp_thread_end();
    return NULL;
}

bool lsp_workers_start(LspServer *s, int count) {
    if (count > (int)(sizeof s->workers / sizeof *s->workers)) count = (int)(sizeof s->workers / sizeof *s->workers);
    atomic_init(&s->analyses_cancelled, false);
    pthread_cond_init(&s->workers_done, NULL);
    for (int i = 0; i < count; i++) {
        pthread_mutex_lock(&s->lock);
        s->workers_running++; /* before the thread runs: it decrements when it ends */
        pthread_mutex_unlock(&s->lock);
        if (pthread_create(&s->workers[i], NULL, worker_main, s) != 0) {
            pthread_mutex_lock(&s->lock);
            s->workers_running--;
            pthread_mutex_unlock(&s->lock);
            return i > 0;
        }
        s->worker_count++;
    }
    return true;
}

/* Exit must not wait for an analysis: LSP clients give the server little
 * time between exit and a kill, and one document can take the rules tens of
 * seconds. How this stays free of races:
 * - stopping and analyses_cancelled are set together under s->lock. Workers
 *   read stopping under the lock (their loop, and the publishing step of
 *   analyse, so nothing is published after exit); a pass reads the atomic
 *   flag between phases, where it must not take the lock (crash guard).
 * - A worker counts itself out of workers_running under the lock when it
 *   leaves its loop; after that it touches nothing of s. When all have
 *   left within the grace period, they are joined and the caller frees
 *   everything as before.
 * - Otherwise one is still inside a phase that has no check (the parser or
 *   the rules over a large document, in code outside the server). It is
 *   detached, and the caller frees nothing it can reach: s with its lock and
 *   conditions, the documents (its own is one), the workspace index, the
 *   settings. Profiles are counted references, taken and dropped under the
 *   lock: the worker keeps its own. lsp_server_run then ends the process
 *   with quick_exit, which stops the thread without running the libraries'
 *   destructors under it; should its phase end first, it sees the flag and
 *   drops its results without publishing. */
bool lsp_workers_stop(LspServer *s, double grace_seconds) {
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    atomic_store(&s->analyses_cancelled, true);
    pthread_cond_broadcast(&s->work_ready);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long long ns = until.tv_nsec + (long long)(grace_seconds * 1e9);
    until.tv_sec += ns / 1000000000;
    until.tv_nsec = ns % 1000000000;
    while (s->workers_running > 0)
        if (pthread_cond_timedwait(&s->workers_done, &s->lock, &until) == ETIMEDOUT) break;
    bool all_ended = s->workers_running == 0;
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < s->worker_count; i++) {
        if (all_ended) pthread_join(s->workers[i], NULL);
        else pthread_detach(s->workers[i]); /* one that has ended is released now, the others when they end */
    }
    s->worker_count = 0;
    if (all_ended) pthread_cond_destroy(&s->workers_done);
    return all_ended;
}
