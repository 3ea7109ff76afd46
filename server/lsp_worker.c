/* Analysis workers: take a dirty document whose debounce delay has passed,
 * reparse it incrementally from a private copy of its text, run the engine,
 * and publish the diagnostics, unless the document moved on meanwhile
 * (results for an old version are never published). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../analysis/python_source.h"
#include "../rules/engine.h"
#include "jsonrpc.h"
#include "lsp_edits.h"
#include "lsp_server.h"

void lsp_document_free(LspDocument *d) {
    if (!d) return;
    free(d->uri);
    free(d->path);
    document_free(d->doc);
    free(d->edits);
    py_source_free(d->parsed_py);
    document_free(d->parsed_doc);
    json_decref(d->diagnostics);
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

/* picks the document whose analysis is due first; NULL when none is due
 * (then *wait holds the seconds to the next due time, or -1) */
static LspDocument *next_due(LspServer *s, double *wait) {
    double now = lsp_now(), soonest = -1;
    LspDocument *pick = NULL;
    for (LspDocument *d = s->documents; d; d = d->next) {
        if (!d->dirty || d->busy || d->closed) continue;
        if (d->due <= now) {
            if (!pick || d->due < pick->due) pick = d;
        } else if (soonest < 0 || d->due - now < soonest) {
            soonest = d->due - now;
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

/* brings d->parsed_doc / parsed_py up to `text` (runs without the lock) */
static bool reparse(LspDocument *d, Document *text, struct PendingEdit *edits, size_t edit_count, bool from_scratch) {
    PySource *py = d->parsed_py;
    if (py && !from_scratch) {
        for (size_t i = 0; i < edit_count; i++)
            py_source_note_edit(py, edits[i].start, edits[i].old_end, edits[i].new_end, edits[i].start_point,
                                edits[i].old_end_point, edits[i].new_end_point);
        if (py_source_reparse(py, text)) {
            document_free(d->parsed_doc);
            d->parsed_doc = text;
            return true;
        }
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

static void analyse(LspServer *s, LspDocument *d) {
    /* under the lock: snapshot the text and the edits since the last parse */
    int64_t version = d->version;
    Document *text = document_new(d->doc->path, d->doc->language, d->doc->text, d->doc->length);
    size_t edit_count = d->edit_count;
    struct PendingEdit *edits = edit_count ? malloc(edit_count * sizeof *edits) : NULL;
    if (edits) memcpy(edits, d->edits, edit_count * sizeof *edits);
    bool from_scratch = d->edits_overflowed || (edit_count && !edits);
    d->edit_count = 0;
    d->edits_overflowed = false;
    d->dirty = false;
    d->busy = true;
    Config config; /* the settings as they are now */
    config_init(&config);
    for (size_t i = 0; i < s->config.select.count; i++) string_list_add(&config.select, s->config.select.items[i]);
    for (size_t i = 0; i < s->config.ignore.count; i++) string_list_add(&config.ignore, s->config.ignore.items[i]);
    for (size_t i = 0; i < s->config.severity_count; i++)
        config_set_severity(&config, s->config.severity[i].selector, severity_name(s->config.severity[i].severity));
    pthread_mutex_unlock(&s->lock);

    FindingList findings;
    finding_list_init(&findings);
    bool ok = text && reparse(d, text, edits, edit_count, from_scratch);
    free(edits);
    char *error = NULL;
    if (ok) ok = engine_check(d->parsed_doc, d->parsed_py, &config, &findings, NULL, &error);
    Document *analysed = ok ? document_new(d->parsed_doc->path, d->parsed_doc->language, d->parsed_doc->text,
                                           d->parsed_doc->length)
                            : NULL;
    json_t *diagnostics = ok && analysed ? lsp_findings_to_diagnostics(s, d, &findings, analysed, version) : NULL;
    config_free(&config);

    pthread_mutex_lock(&s->lock);
    d->busy = false;
    if (!ok) {
        lsp_log(1, "advise: cannot analyse %s: %s", d->uri, error ? error : "out of memory");
        free(error);
        finding_list_free(&findings);
        document_free(analysed);
        json_decref(diagnostics);
        /* the parse state may be out of step with the edits: start over next time */
        py_source_free(d->parsed_py);
        d->parsed_py = NULL;
        d->edits_overflowed = true;
        return;
    }
    if (d->closed) {
        unlink_document(s, d);
        finding_list_free(&findings);
        document_free(analysed);
        json_decref(diagnostics);
        lsp_document_free(d);
        return;
    }
    if (version != d->version) {
        /* an edit came in meanwhile: drop these results, the newer version is queued */
        finding_list_free(&findings);
        document_free(analysed);
        json_decref(diagnostics);
        return;
    }
    finding_list_free(&d->findings);
    d->findings = findings;
    document_free(d->analysed_doc);
    d->analysed_doc = analysed;
    json_decref(d->diagnostics);
    d->diagnostics = diagnostics;
    d->analysed_version = version;
    d->result_serial = ++s->next_serial;
    if (s->pull_diagnostics) {
        lsp_answer_pulls(s, d);
    } else {
        /* sent under the lock so that an older version can never overtake a newer one */
        jsonrpc_send_notification("textDocument/publishDiagnostics",
                                  json_pack("{s:s,s:I,s:O}", "uri", d->uri, "version", (json_int_t)version,
                                            "diagnostics", diagnostics));
    }
}

static void *worker_main(void *arg) {
    LspServer *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        double wait;
        LspDocument *d = next_due(s, &wait);
        if (d) {
            analyse(s, d); /* returns with the lock held */
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
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

bool lsp_workers_start(LspServer *s, int count) {
    if (count > (int)(sizeof s->workers / sizeof *s->workers)) count = (int)(sizeof s->workers / sizeof *s->workers);
    for (int i = 0; i < count; i++) {
        if (pthread_create(&s->workers[i], NULL, worker_main, s) != 0) return i > 0;
        s->worker_count++;
    }
    return true;
}

void lsp_workers_stop(LspServer *s) {
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_broadcast(&s->work_ready);
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < s->worker_count; i++) pthread_join(s->workers[i], NULL);
    s->worker_count = 0;
}
