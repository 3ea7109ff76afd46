/* The LSP main loop: reads messages, keeps documents, answers requests from
 * cached analysis results, and hands analysis to the workers. It never waits
 * on analysis. One handler per method. */
#include "server/lsp/lsp_server.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/base/monotonic_clock.h"
#include "analysis/base/growable.h"
#include "analysis/python/python_source.h"
#include "advise_version.h"
#include "server/lsp/jsonrpc.h"
#include "server/lsp/lsp_edits.h"

#define DEFAULT_DEBOUNCE_SECONDS 0.0005
#define MAX_PENDING_EDITS 256

double lsp_now(void) { return monotonic_seconds(); }

void lsp_log(int type, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char buf[2048];
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    jsonrpc_send_notification("window/logMessage", json_pack("{s:i,s:s}", "type", type, "message", buf));
}

/* ---- URIs --------------------------------------------------------------- */

/* ---- documents ------------------------------------------------------------ */

LspDocument *lsp_find_document(LspServer *s, const char *uri) {
    for (LspDocument *d = s->documents; d; d = d->next)
        if (!d->closed && strcmp(d->uri, uri) == 0) return d;
    return NULL;
}

void lsp_schedule(LspServer *s, LspDocument *d, double delay) {
    d->dirty = true;
    d->scheduled_at = lsp_now();
    d->due = d->scheduled_at + delay;
    pthread_cond_broadcast(&s->work_ready);
}

static const char *string_at(json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static const char *document_uri(json_t *params) {
    return string_at(json_object_get(params, "textDocument"), "uri");
}

/* ---- client requests we sent ------------------------------------------------ */

/* The requests in flight are shared by the main loop (answers) and the
 * workers (which may ask for a diagnostic refresh while holding s->lock), so
 * they have a lock of their own, never held while calling out. */
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

void lsp_send_request(LspServer *s, const char *method, json_t *params,
                      void (*on_response)(LspServer *, json_t *, json_t *, void *), void *data,
                      void (*drop)(void *)) {
    PendingClientRequest forgotten = {0};
    pthread_mutex_lock(&pending_lock);
    long id = ++s->next_request_id;
    if (s->pending_count == (int)(sizeof s->pending / sizeof *s->pending)) {
        /* a client that never answers: forget the oldest request */
        forgotten = s->pending[0];
        memmove(s->pending, s->pending + 1, (size_t)(s->pending_count - 1) * sizeof *s->pending);
        s->pending_count--;
    }
    s->pending[s->pending_count++] = (PendingClientRequest){json_integer(id), on_response, data, drop};
    json_t *msg = json_pack("{s:s,s:I,s:s}", "jsonrpc", "2.0", "id", (json_int_t)id, "method", method);
    if (params) json_object_set_new(msg, "params", params); /* some requests take none */
    /* sent under the lock: an answer cannot be read before its request is recorded */
    jsonrpc_send(msg);
    pthread_mutex_unlock(&pending_lock);
    json_decref(forgotten.id);
    if (forgotten.drop) forgotten.drop(forgotten.data);
}

/* Runs the handler of the request that id answers; result or error as the client sent them. */
static void handle_client_response(LspServer *s, json_t *id, json_t *result, json_t *error) {
    pthread_mutex_lock(&pending_lock);
    for (int i = 0; i < s->pending_count; i++) {
        if (!json_equal(s->pending[i].id, id)) continue;
        PendingClientRequest p = s->pending[i];
        memmove(s->pending + i, s->pending + i + 1, (size_t)(s->pending_count - i - 1) * sizeof *s->pending);
        s->pending_count--;
        pthread_mutex_unlock(&pending_lock);
        if (p.on_response) p.on_response(s, result, error, p.data);
        json_decref(p.id);
        return;
    }
    pthread_mutex_unlock(&pending_lock);
}

/* ---- lifecycle ------------------------------------------------------------- */

static json_t *get_path(json_t *obj, const char *path) {
    char key[64];
    const char *p = path;
    while (obj && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof key) return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        obj = json_object_get(obj, key);
        p += n + (dot ? 1 : 0);
    }
    return obj;
}

/* New settings: analyse the open documents again. Push clients get the new
 * diagnostics published; pull clients are told to pull again when they can
 * be (a pull that comes before the analysis waits for it). */
static void settings_changed(LspServer *s) {
    pthread_mutex_lock(&s->lock);
    lsp_profiles_configure(s); /* profileDir may have changed: analyses wait for the folder */
    for (LspDocument *d = s->documents; d; d = d->next)
        if (!d->closed && d->language != LANGUAGE_UNKNOWN) lsp_schedule(s, d, 0);
    pthread_mutex_unlock(&s->lock);
    if (s->pull_diagnostics && s->refresh_support)
        lsp_send_request(s, "workspace/diagnostic/refresh", NULL, NULL, NULL, NULL);
}

static void on_configuration(LspServer *s, json_t *result, json_t *error, void *data) {
    (void)error, (void)data;
    if (json_is_array(result) && json_array_size(result) > 0 && json_is_object(json_array_get(result, 0))) {
        pthread_mutex_lock(&s->lock);
        lsp_apply_settings(s, json_array_get(result, 0));
        pthread_mutex_unlock(&s->lock);
        settings_changed(s);
    }
}

static void request_configuration(LspServer *s) {
    if (!s->client_configuration) return;
    lsp_send_request(s, "workspace/configuration", json_pack("{s:[{s:s}]}", "items", "section", "advise"),
                     on_configuration, NULL, NULL);
}

static void handle_initialize(LspServer *s, json_t *id, json_t *params) {
    json_t *caps = json_object_get(params, "capabilities");
    /* position encoding: prefer utf-8 (our native), then utf-32, else the default utf-16 */
    json_t *encodings = get_path(caps, "general.positionEncodings");
    const char *chosen = "utf-16";
    s->encoding = POSITION_UTF16;
    size_t i;
    json_t *e;
    bool has8 = false, has32 = false;
    json_array_foreach(encodings, i, e) {
        if (json_is_string(e) && strcmp(json_string_value(e), "utf-8") == 0) has8 = true;
        if (json_is_string(e) && strcmp(json_string_value(e), "utf-32") == 0) has32 = true;
    }
    if (has8) {
        s->encoding = POSITION_UTF8;
        chosen = "utf-8";
    } else if (has32) {
        s->encoding = POSITION_UTF32;
        chosen = "utf-32";
    }
    s->pull_diagnostics = json_is_object(get_path(caps, "textDocument.diagnostic"));
    s->versioned_edits = json_is_true(get_path(caps, "workspace.workspaceEdit.documentChanges"));
    s->client_configuration = json_is_true(get_path(caps, "workspace.configuration"));
    s->work_done_progress = json_is_true(get_path(caps, "window.workDoneProgress"));
    s->refresh_support = json_is_true(get_path(caps, "workspace.diagnostics.refreshSupport"));
    s->codelens_refresh = json_is_true(get_path(caps, "workspace.codeLens.refreshSupport"));
    s->related_information = json_is_true(get_path(caps, "textDocument.publishDiagnostics.relatedInformation")) ||
                             s->pull_diagnostics;
    json_t *props = get_path(caps, "textDocument.codeAction.resolveSupport.properties");
    json_array_foreach(props, i, e) if (json_is_string(e) && strcmp(json_string_value(e), "edit") == 0)
        s->resolve_edits = true;
    const char *root_uri = string_at(params, "rootUri");
    json_t *folders = json_object_get(params, "workspaceFolders");
    if (json_is_array(folders) && json_array_size(folders) > 0)
        root_uri = string_at(json_array_get(folders, 0), "uri");
    if (root_uri) s->root_path = file_uri_to_path(root_uri);
    else if (string_at(params, "rootPath")) s->root_path = strdup(string_at(params, "rootPath"));
    json_t *options = json_object_get(params, "initializationOptions");
    pthread_mutex_lock(&s->lock);
    if (json_is_object(options)) lsp_apply_settings(s, options);
    lsp_profiles_configure(s); /* read on the watcher thread; the first analyses wait for it */
    pthread_mutex_unlock(&s->lock);

    json_t *code_action = json_pack("{s:[s,s,s],s:b}", "codeActionKinds", "quickfix", "source.fixAll.advise",
                                    "source.fixAll", "resolveProvider", s->resolve_edits);
    json_t *capabilities = json_pack(
        "{s:s,s:{s:b,s:i,s:{s:b}},s:o,s:b,s:{s:b},s:{s:[s,s,s]}}", "positionEncoding", chosen, "textDocumentSync",
        "openClose", 1, "change", 2, "save", "includeText", 0, "codeActionProvider", code_action, "hoverProvider", 1,
        "codeLensProvider", "resolveProvider", 0, "executeCommandProvider", "commands", "advise.applySafeFixes",
        "advise.checkWorkspace", "advise.showProfile");
    if (s->pull_diagnostics)
        json_object_set_new(capabilities, "diagnosticProvider",
                            json_pack("{s:s,s:b,s:b}", "identifier", "advise", "interFileDependencies", 0,
                                      "workspaceDiagnostics", 0));
    jsonrpc_send_result(id, json_pack("{s:o,s:{s:s,s:s}}", "capabilities", capabilities, "serverInfo", "name",
                                      "advise", "version", ADVISE_VERSION));
    s->initialized = true;
}

/* ---- text synchronisation ----------------------------------------------------- */

static void handle_did_open(LspServer *s, json_t *params) {
    json_t *td = json_object_get(params, "textDocument");
    const char *uri = string_at(td, "uri"), *text = string_at(td, "text");
    json_t *version = json_object_get(td, "version");
    if (!uri || !text) {
        lsp_log(1, "advise: didOpen without uri or text");
        return;
    }
    pthread_mutex_lock(&s->lock);
    LspDocument *old = lsp_find_document(s, uri);
    if (old) { /* opened twice: the new text wins */
        old->closed = true;
        if (!old->busy) {
            LspDocument **pp = &s->documents;
            while (*pp != old) pp = &(*pp)->next;
            *pp = old->next;
            lsp_document_free(old);
        }
    }
    LspDocument *d = calloc(1, sizeof *d);
    d->uri = strdup(uri);
    d->path = file_uri_to_path(uri);
    const char *lang = string_at(td, "languageId");
    d->language = language_for_path(d->path);
    if (lang && strcmp(lang, "python") == 0) d->language = LANGUAGE_PYTHON;
    if (lang && (strcmp(lang, "cuda") == 0 || strcmp(lang, "cuda-cpp") == 0 || strcmp(lang, "cpp") == 0 ||
                 strcmp(lang, "c") == 0))
        d->language = LANGUAGE_CUDA;
    d->doc = document_new(d->path, d->language, text, json_string_length(json_object_get(td, "text")));
    d->version = json_is_integer(version) ? json_integer_value(version) : 0;
    d->analysed_version = -1;
    finding_list_init(&d->findings);
    d->waiting_pulls = json_array();
    d->next = s->documents;
    s->documents = d;
    if (d->language != LANGUAGE_UNKNOWN) lsp_schedule(s, d, 0);
    pthread_mutex_unlock(&s->lock);
}

static void note_edit(LspDocument *d, size_t start, size_t old_end, size_t new_end, TSPoint sp, TSPoint op,
                      TSPoint np) {
    if (d->edits_overflowed) return;
    if (d->edit_count == d->edit_capacity) {
        if (d->edit_capacity >= MAX_PENDING_EDITS) {
            d->edits_overflowed = true;
            return;
        }
        if (!array_reserve(&d->edits, d->edit_count, &d->edit_capacity, sizeof *d->edits, 8)) {
            d->edits_overflowed = true;
            return;
        }
    }
    d->edits[d->edit_count++] = (struct PendingEdit){start, old_end, new_end, sp, op, np};
}

static void handle_did_change(LspServer *s, json_t *params) {
    const char *uri = document_uri(params);
    json_t *changes = json_object_get(params, "contentChanges");
    json_t *version = get_path(params, "textDocument.version");
    if (!uri || !json_is_array(changes)) {
        lsp_log(1, "advise: didChange without uri or contentChanges");
        return;
    }
    pthread_mutex_lock(&s->lock);
    LspDocument *d = lsp_find_document(s, uri);
    if (!d) {
        pthread_mutex_unlock(&s->lock);
        lsp_log(2, "advise: didChange for a document that is not open: %s", uri);
        return;
    }
    size_t i;
    json_t *change;
    json_array_foreach(changes, i, change) {
        json_t *text = json_object_get(change, "text");
        if (!json_is_string(text)) continue;
        json_t *range = json_object_get(change, "range");
        size_t start = 0, end = d->doc->length;
        if (range && !lsp_range_parse(range, d->doc, s->encoding, &start, &end)) {
            lsp_log(1, "advise: didChange with an invalid range in %s; the change is ignored", uri);
            continue;
        }
        if (!range) d->edits_overflowed = true; /* a full replacement: parse afresh */
        /* the profile's lines follow the edit; a full replacement loses them */
        if (range) line_map_replace(&d->line_map, d->doc, start, end, json_string_value(text), json_string_length(text));
        else line_map_free(&d->line_map);
        TSPoint sp = py_point_at(d->doc->text, start), op = py_point_at(d->doc->text, end);
        size_t len = json_string_length(text);
        if (!document_replace(d->doc, start, end, json_string_value(text), len)) {
            lsp_log(1, "advise: out of memory applying a change to %s", uri);
            continue;
        }
        TSPoint np = py_point_at(d->doc->text, start + len);
        note_edit(d, start, end, start + len, sp, op, np);
    }
    if (json_is_integer(version)) d->version = json_integer_value(version);
    else d->version++;
    if (d->busy && d->full_pass_running) atomic_store(&d->superseded, true);
    if (d->language != LANGUAGE_UNKNOWN) lsp_schedule(s, d, s->debounce_seconds);
    pthread_mutex_unlock(&s->lock);
}

static void handle_did_close(LspServer *s, json_t *params) {
    const char *uri = document_uri(params);
    if (!uri) return;
    pthread_mutex_lock(&s->lock);
    LspDocument *d = lsp_find_document(s, uri);
    char *python_path = d && d->language == LANGUAGE_PYTHON && d->path ? strdup(d->path) : NULL;
    if (d) {
        /* waiting pulls get an empty report */
        size_t i;
        json_t *w;
        json_array_foreach(d->waiting_pulls, i, w)
            jsonrpc_send_result(json_object_get(w, "id"), json_pack("{s:s,s:[]}", "kind", "full", "items"));
        json_array_clear(d->waiting_pulls);
        d->closed = true;
        if (!d->busy) {
            LspDocument **pp = &s->documents;
            while (*pp != d) pp = &(*pp)->next;
            *pp = d->next;
            lsp_document_free(d);
        }
    }
    pthread_mutex_unlock(&s->lock);
    if (python_path) { /* the workspace index reads the file from disk again */
        py_workspace_forget_editor(py_workspaces_for(s->workspaces, python_path), python_path);
        free(python_path);
    }
    if (!s->pull_diagnostics)
        jsonrpc_send_notification("textDocument/publishDiagnostics",
                                  json_pack("{s:s,s:[]}", "uri", uri, "diagnostics"));
}

/* ---- pull diagnostics ------------------------------------------------------------- */

static void handle_pull_diagnostics(LspServer *s, json_t *id, json_t *params) {
    const char *uri = document_uri(params);
    const char *previous = string_at(params, "previousResultId");
    pthread_mutex_lock(&s->lock);
    LspDocument *d = uri ? lsp_find_document(s, uri) : NULL;
    if (!d || d->language == LANGUAGE_UNKNOWN) {
        pthread_mutex_unlock(&s->lock);
        jsonrpc_send_result(id, json_pack("{s:s,s:[]}", "kind", "full", "items"));
        return;
    }
    if (d->analysed_version == d->version && !d->dirty && !d->busy) {
        json_t *report = lsp_pull_report(d, previous);
        pthread_mutex_unlock(&s->lock);
        jsonrpc_send_result(id, report);
        return;
    }
    /* answered by the worker when this version is analysed */
    json_array_append_new(d->waiting_pulls, json_pack("{s:O,s:s?}", "id", id, "previous", previous));
    pthread_mutex_unlock(&s->lock);
}

static void handle_cancel(LspServer *s, json_t *params) {
    json_t *id = json_object_get(params, "id");
    if (!id) return;
    if (lsp_findings_cancel(s, id)) return; /* its thread answers -32800 */
    pthread_mutex_lock(&s->lock);
    for (LspDocument *d = s->documents; d; d = d->next) {
        size_t i;
        json_t *w;
        json_array_foreach(d->waiting_pulls, i, w) {
            if (json_equal(json_object_get(w, "id"), id)) {
                jsonrpc_send_error(id, LSP_REQUEST_CANCELLED, "cancelled");
                json_array_remove(d->waiting_pulls, i);
                pthread_mutex_unlock(&s->lock);
                return;
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
    /* other requests are answered as soon as they arrive: nothing left to cancel */
}

static void handle_did_change_configuration(LspServer *s, json_t *params) {
    if (s->client_configuration) {
        /* pull model: the notification only says that something changed; ask for the current values */
        request_configuration(s);
        return;
    }
    json_t *settings = json_object_get(params, "settings");
    json_t *ours = json_object_get(settings, "advise");
    pthread_mutex_lock(&s->lock);
    if (json_is_object(ours)) lsp_apply_settings(s, ours);
    else if (json_is_object(settings) && json_object_size(settings) > 0) lsp_apply_settings(s, settings);
    pthread_mutex_unlock(&s->lock);
    settings_changed(s);
}

/* ---- dispatch -------------------------------------------------------------------- */

typedef void (*RequestHandler)(LspServer *s, json_t *id, json_t *params);
typedef void (*NotificationHandler)(LspServer *s, json_t *params);

static const struct {
    const char *method;
    RequestHandler handler;
} requests[] = {
    {"textDocument/diagnostic", handle_pull_diagnostics},
    {"textDocument/codeAction", lsp_handle_code_action},
    {"codeAction/resolve", lsp_handle_code_action_resolve},
    {"textDocument/hover", lsp_handle_hover},
    {"workspace/executeCommand", lsp_handle_execute_command},
    {"textDocument/codeLens", lsp_handle_code_lens},
    {"advise/findings", lsp_handle_findings},
    {"advise/profileSummary", lsp_handle_profile_summary},
    {"advise/lineCosts", lsp_handle_line_costs},
};

static const struct {
    const char *method;
    NotificationHandler handler;
} notifications[] = {
    {"textDocument/didOpen", handle_did_open},
    {"textDocument/didChange", handle_did_change},
    {"textDocument/didClose", handle_did_close},
    {"$/cancelRequest", handle_cancel},
    {"workspace/didChangeConfiguration", handle_did_change_configuration},
    {"window/workDoneProgress/cancel", lsp_handle_progress_cancel},
};

static bool valid_id(json_t *id) { return json_is_integer(id) || json_is_string(id); }

/* ---- U+0000 ------------------------------------------------------------------------ */

/* Messages are decoded with JSON_ALLOW_NUL: JSON allows "\u0000" and an
 * editor's buffer can hold it, so document text may carry it (it is read
 * with json_string_length, never strlen). Every other string (a method, a
 * URI, an id, a command, a path, a setting) is read by C code up to its first
 * NUL, where "exit\u0000x" would read as "exit" and one URI as another:
 * such a message is refused instead. Strings the server sent (diagnostics
 * that come back in a code action's context) never hold NUL: rule messages
 * and fixes are C strings. */

static bool has_nul(json_t *v);

/* members of object v other than skip (NULL: all); v not an object: itself */
static bool has_nul_except(json_t *v, const char *skip) {
    if (!json_is_object(v)) return has_nul(v);
    const char *key;
    json_t *member;
    json_object_foreach(v, key, member) {
        if (skip && strcmp(key, skip) == 0) continue;
        if (has_nul(member)) return true;
    }
    return false;
}

static bool has_nul(json_t *v) {
    if (json_is_string(v)) return memchr(json_string_value(v), '\0', json_string_length(v)) != NULL;
    if (json_is_object(v)) return has_nul_except(v, NULL);
    size_t i;
    json_t *item;
    json_array_foreach(v, i, item) if (has_nul(item)) return true;
    return false;
}

/* Document text: params.textDocument.text (didOpen), params.contentChanges[].text
 * (didChange) and params.text (didSave). True when a NUL is anywhere else in params. */
static bool nul_outside_text(json_t *params) {
    if (!json_is_object(params)) return has_nul(params);
    const char *key;
    json_t *v;
    json_object_foreach(params, key, v) {
        bool bad;
        if (strcmp(key, "text") == 0) bad = !json_is_string(v) && has_nul(v);
        else if (strcmp(key, "textDocument") == 0) bad = has_nul_except(v, "text");
        else if (strcmp(key, "contentChanges") == 0 && json_is_array(v)) {
            size_t i;
            json_t *change;
            bad = false;
            json_array_foreach(v, i, change) bad = bad || has_nul_except(change, "text");
        } else bad = has_nul(v);
        if (bad) return true;
    }
    return false;
}

/* A message with a NUL outside document text: requests get an error,
 * responses reach their handler as an error, notifications are logged and
 * dropped. False when the message is fine. */
static bool refuse_nul(LspServer *s, json_t *msg) {
    json_t *method = json_object_get(msg, "method"), *params = json_object_get(msg, "params");
    bool in_envelope = has_nul_except(msg, "params");
    /* exit's params are ignored (dispatch), so they cannot be misread */
    bool is_exit = json_is_string(method) && json_string_length(method) == 4 &&
                   strcmp(json_string_value(method), "exit") == 0;
    bool in_params = !is_exit && nul_outside_text(params);
    if (!in_envelope && !in_params) return false;
    static const char why[] = "U+0000 is allowed only in document text";
    json_t *id = json_object_get(msg, "id");
    if (!method && id && !has_nul(id)) {
        json_t *error = json_pack("{s:i,s:s}", "code", JSONRPC_INVALID_PARAMS, "message", why);
        handle_client_response(s, id, NULL, error);
        json_decref(error);
    } else if (id) {
        jsonrpc_send_error(valid_id(id) ? id : NULL, in_envelope ? JSONRPC_INVALID_REQUEST : JSONRPC_INVALID_PARAMS,
                           why);
    } else {
        lsp_log(1, "advise: a notification was dropped: %s", why);
    }
    return true;
}

/* returns false when the server should exit; *code is the exit status */
static bool dispatch(LspServer *s, json_t *msg, int *code) {
    if (!json_is_object(msg)) {
        jsonrpc_send_error(NULL, JSONRPC_INVALID_REQUEST, "a message must be a JSON object");
        return true;
    }
    json_t *id = json_object_get(msg, "id");
    json_t *method_json = json_object_get(msg, "method");
    if (refuse_nul(s, msg)) return true;
    if (!method_json) {
        if (id && (json_object_get(msg, "result") || json_object_get(msg, "error")))
            handle_client_response(s, id, json_object_get(msg, "result"), json_object_get(msg, "error"));
        else jsonrpc_send_error(valid_id(id) ? id : NULL, JSONRPC_INVALID_REQUEST, "message without a method");
        return true;
    }
    if (!json_is_string(method_json) || (id && !valid_id(id)) ||
        !json_is_string(json_object_get(msg, "jsonrpc")) ||
        strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0) {
        jsonrpc_send_error(valid_id(id) ? id : NULL, JSONRPC_INVALID_REQUEST,
                           "not a JSON-RPC 2.0 request (jsonrpc, method or id is wrong)");
        return true;
    }
    const char *method = json_string_value(method_json);
    /* exit's params are void in LSP: whatever a client puts there (null, {},
     * something invalid), it wants the process gone, and one left behind
     * would outlive its editor */
    if (strcmp(method, "exit") == 0) {
        *code = s->shutdown_requested ? 0 : 1;
        return false;
    }
    json_t *params = json_object_get(msg, "params");
    /* "params": null is taken as no params: Eglot (jsonrpc.el) sends it with
     * shutdown and exit, whose params are void in LSP */
    if (json_is_null(params)) params = NULL;
    if (params && !json_is_object(params) && !json_is_array(params)) {
        if (id) jsonrpc_send_error(id, JSONRPC_INVALID_REQUEST, "params must be an object or an array");
        return true;
    }
    bool is_request = id != NULL;

    if (is_request && strcmp(method, "initialize") == 0) {
        if (s->initialized) jsonrpc_send_error(id, JSONRPC_INVALID_REQUEST, "initialize was already received");
        else if (!json_is_object(params)) jsonrpc_send_error(id, JSONRPC_INVALID_PARAMS, "initialize needs params");
        else handle_initialize(s, id, params);
        return true;
    }
    if (!s->initialized) {
        if (is_request) jsonrpc_send_error(id, LSP_SERVER_NOT_INITIALIZED, "the server is not initialized yet");
        return true; /* notifications before initialize are dropped, except exit */
    }
    if (s->shutdown_requested) {
        if (is_request) jsonrpc_send_error(id, JSONRPC_INVALID_REQUEST, "the server is shutting down");
        return true;
    }
    if (is_request && strcmp(method, "shutdown") == 0) {
        s->shutdown_requested = true;
        jsonrpc_send_result(id, json_null());
        return true;
    }
    if (!is_request && strcmp(method, "initialized") == 0) {
        request_configuration(s);
        return true;
    }
    if (is_request) {
        for (size_t i = 0; i < sizeof requests / sizeof *requests; i++)
            if (strcmp(method, requests[i].method) == 0) {
                if (!json_is_object(params)) jsonrpc_send_error(id, JSONRPC_INVALID_PARAMS, "params must be an object");
                else requests[i].handler(s, id, params);
                return true;
            }
        char buf[256];
        snprintf(buf, sizeof buf, "unknown method: %.200s", method);
        jsonrpc_send_error(id, JSONRPC_METHOD_NOT_FOUND, buf);
        return true;
    }
    for (size_t i = 0; i < sizeof notifications / sizeof *notifications; i++)
        if (strcmp(method, notifications[i].method) == 0) {
            if (json_is_object(params)) notifications[i].handler(s, params);
            return true;
        }
    return true; /* unknown notifications ($/setTrace, ...) are ignored */
}

/* How long exit waits for the workers to end before it leaves a busy one
 * behind: idle workers wake and end in far less (then everything is freed
 * as usual), and exit as a whole stays well within 100 ms. */
double lsp_exit_grace_seconds = 0.03;
int lsp_worker_count = 0;

int lsp_server_run(int in_fd, int out_fd) {
    jsonrpc_set_output(out_fd);
    LspServer *s = calloc(1, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->work_ready, NULL);
    config_init(&s->config);
    s->workspaces = py_workspaces_new();
    s->debounce_seconds = DEFAULT_DEBOUNCE_SECONDS;
    s->full_pass_delay = 0.25;
    s->quick_pass = true;
    s->encoding = POSITION_UTF16;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (!lsp_workers_start(s, lsp_worker_count > 0 ? lsp_worker_count : cores >= 4 ? 3 : 2)) {
        fprintf(stderr, "advise server: cannot start worker threads\n");
        return 1;
    }
    JsonRpcReader *reader = jsonrpc_reader_new(in_fd);
    int code = 1; /* the stream ended without exit */
    for (;;) {
        char *body = NULL, *error = NULL;
        size_t len = 0;
        ReadStatus st = jsonrpc_read(reader, &body, &len, &error);
        if (st == READ_EOF || st == READ_IO_ERROR) break;
        if (st == READ_BAD_FRAME) {
            jsonrpc_send_error(NULL, JSONRPC_PARSE_ERROR, error ? error : "malformed message");
            free(error);
            continue;
        }
        json_error_t jerr;
        /* "42" is JSON, but not a request; "\u0000" is allowed in strings (refuse_nul says where) */
        json_t *msg = json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        free(body);
        if (!msg) {
            char buf[300];
            snprintf(buf, sizeof buf, "invalid JSON: %s (line %d, column %d)", jerr.text, jerr.line, jerr.column);
            jsonrpc_send_error(NULL, JSONRPC_PARSE_ERROR, buf);
            continue;
        }
        bool go_on = dispatch(s, msg, &code);
        json_decref(msg);
        if (!go_on) break;
    }
    /* sets stopping: workspace scans end after their current file */
    bool workers_ended = lsp_workers_stop(s, lsp_exit_grace_seconds);
    lsp_scans_join(s);
    lsp_profiles_stop(s); /* the watcher and advise/findings threads */
    jsonrpc_reader_free(reader);
    if (!workers_ended) {
        /* A worker is still inside an analysis and uses s: nothing of it is
         * freed (lsp_workers_stop says why), and the process ends here, with
         * quick_exit rather than a return to exit(). exit() runs the
         * libraries' static destructors on this thread while the worker runs
         * on: LLVM's free what libclang is reading inside a CUDA parse (a
         * heap use after free that ThreadSanitizer reported at exit).
         * quick_exit runs only the at_quick_exit handlers (the CUDA prefix
         * folder of cuda_pch.c) and ends every thread at once. */
        quick_exit(code);
    }
    pthread_mutex_lock(&s->lock);
    while (s->documents) {
        LspDocument *d = s->documents;
        s->documents = d->next;
        lsp_document_free(d);
    }
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < s->pending_count; i++) {
        json_decref(s->pending[i].id);
        if (s->pending[i].drop) s->pending[i].drop(s->pending[i].data);
    }
    config_free(&s->config);
    py_workspaces_free(s->workspaces);
    free(s->root_path);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->work_ready);
    free(s);
    return code;
}
