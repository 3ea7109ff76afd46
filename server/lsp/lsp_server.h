/* `advise server`: the Language Server Protocol face of the engine.
 * The only code, with jsonrpc.c, that knows LSP or JSON-RPC. */
#ifndef ADVISE_LSP_SERVER_H
#define ADVISE_LSP_SERVER_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "analysis/document.h"
#include "analysis/python/python_workspace.h"
#include "analysis/line_map.h"
#include "rules/engine/config.h"
#include "server/workspace/file_uri.h"

typedef struct LspDocument LspDocument;
typedef struct LspServer LspServer;

/* One published diagnostic as JSON text, kept until the next publish of its
 * document: a finding that an edit only moved (a copy the quick pass kept,
 * Finding.published_id) at the same line and character positions is sent
 * with the same text, without building and serializing it again. */
typedef struct {
    unsigned long id;           /* the finding's published_id */
    char *head, *tail;          /* its JSON before and after the value of data.version */
    size_t head_length, tail_length;
    Position *positions;        /* of its range, its fixes' edits, its related places, in that order */
    size_t position_count;
} LspDiagnosticText;

typedef struct {
    LspDiagnosticText *items;   /* in publishing order */
    size_t count;
} LspDiagnosticTexts;

/* One open document. The main thread owns text/version; a worker owns the
 * analysis state while `busy`. Both sides hold server->lock to touch it. */
struct LspDocument {
    char *uri;
    char *path;                 /* file path for file:// URIs, else the URI */
    Language language;
    Document *doc;              /* the current text (main thread writes) */
    int64_t version;
    /* edits since the worker last parsed, for an incremental reparse */
    struct PendingEdit *edits;
    size_t edit_count, edit_capacity;
    bool edits_overflowed;      /* too many: reparse from scratch */
    /* where the lines of the profiled text went through the edits since it
     * was open unchanged (profile figures follow them; main thread writes) */
    LineMap line_map;
    /* scheduling */
    bool dirty;
    bool busy;                  /* a worker is analysing it */
    bool closed;                /* closed while busy: the worker frees it */
    double due;                 /* monotonic seconds when analysis may start */
    double scheduled_at;        /* when the last change asked for it (ADVISE_LSP_TIMING) */
    /* worker-side parse state */
    Document *parsed_doc;
    void *parsed_py;            /* PySource* */
    void *parsed_cuda;          /* CudaSource* (kept for preamble reuse) */
    bool preamble_built;        /* the warm-up reparse ran */
    bool crash_reported;        /* the user was told that its analysis crashed */
    bool results_match_parse;   /* findings refer to parsed_doc's text (before this parse) */
    /* after a quick pass over the edited function, a full pass follows */
    bool needs_full;
    double full_due;
    /* a Python full pass that does not reparse is running (under the lock);
     * an edit then sets `superseded`, and the pass stops between rules: its
     * results would be dropped anyway, and the edit's quick pass waits for it */
    bool full_pass_running;
    atomic_bool superseded;
    /* results of the newest analysis */
    int64_t analysed_version;   /* -1: none yet */
    json_t *diagnostics;        /* array of LSP Diagnostic (pull clients) */
    LspDiagnosticTexts published; /* the same as JSON text (push clients) */
    bool has_published;
    unsigned long next_published_id; /* worker-side, while busy */
    FindingList findings;       /* in byte offsets of analysed_text */
    Document *analysed_doc;     /* the text the findings refer to */
    unsigned long result_serial;
    /* pull requests waiting for the current version */
    json_t *waiting_pulls;      /* array of {id, previousResultId} */
    LspDocument *next;
};

typedef struct {
    json_t *id;
    void (*on_response)(LspServer *s, json_t *result, json_t *error, void *data);
    void *data;
    void (*drop)(void *data); /* frees data when no response comes before exit */
} PendingClientRequest;

struct LspServer {
    pthread_mutex_t lock;
    PyWorkspaces *workspaces;   /* the Python modules of the projects open documents belong to (thread-safe) */
    pthread_cond_t work_ready;
    pthread_t workers[4];
    int worker_count;
    bool stopping;
    /* exit: analyses stop at their next check (lsp_worker.c). Set with
     * stopping, under the lock; read without it, inside a pass. */
    atomic_bool analyses_cancelled;
    int workers_running;        /* workers not yet out of their loop (lock) */
    pthread_cond_t workers_done; /* a worker left its loop */
    struct ScanThread *scans;    /* advise.checkWorkspace threads, joined at exit */

    /* lifecycle */
    bool initialized;
    bool shutdown_requested;
    /* negotiated */
    PositionEncoding encoding;
    bool pull_diagnostics;
    bool versioned_edits;        /* workspace.workspaceEdit.documentChanges */
    bool resolve_edits;          /* codeAction.resolveSupport has "edit" */
    bool client_configuration;   /* workspace/configuration */
    bool work_done_progress;
    bool related_information;
    char *root_path;

    /* settings */
    Config config;
    double debounce_seconds;
    double full_pass_delay;      /* seconds of quiet before the full pass after a quick one */
    bool quick_pass;             /* re-analyse only the edited top-level statement first */
    bool refresh_support;        /* workspace.diagnostics.refreshSupport */
    bool codelens_refresh;       /* workspace.codeLens.refreshSupport */

    /* profiles (lsp_profile.c): the loaded folder, replaced whole by the
     * watcher thread; readers take a reference under the lock */
    struct LspProfiles *profiles;    /* NULL until the first load */
    struct LspProfiles *other_profiles; /* projects of documents outside the workspace's project */
    StringList told_unmerged;        /* profile folders the user was told about (lsp_profiles_explain_unmerged) */
    bool profiles_ready;             /* false while the configured folder is read: analyses wait */
    unsigned profile_generation;     /* bumped when the settings that choose the folder may have changed */
    pthread_cond_t profile_wake;
    pthread_t profile_thread;
    bool profile_thread_started;
    struct FindingsJob *findings_jobs; /* advise/findings threads, joined at exit */

    LspDocument *documents;
    unsigned long next_serial;

    /* requests we sent to the client */
    PendingClientRequest pending[64];
    int pending_count;
    long next_request_id;
};

/* How long the end of the stream (exit, or EOF) waits for busy workers
 * before leaving them behind (0.03 s). A caller that runs the server more
 * than once in one process (the JSON-RPC fuzz target) waits them out, so
 * that no worker outlives its server. */
extern double lsp_exit_grace_seconds;
/* How many analysis workers lsp_server_run starts: 0 (the default) for as
 * many as the machine suits (3 from 4 cores, else 2). The JSON-RPC fuzz
 * target asks for 1: each of its inputs starts a server, and under ASan a
 * thread's start and end cost more than most inputs' whole run. */
extern int lsp_worker_count;
/* Serves LSP on in_fd/out_fd until exit or the end of input; returns the
 * exit status. When a worker is still busy after the grace period, it does
 * not return: the process ends there with quick_exit (lsp_server.c says why). */
int lsp_server_run(int in_fd, int out_fd);

/* helpers shared by the lsp_*.c files */
LspDocument *lsp_find_document(LspServer *s, const char *uri);
json_t *lsp_range_json(const Document *doc, ByteRange r, PositionEncoding enc);
bool lsp_range_parse(json_t *range, const Document *doc, PositionEncoding enc, size_t *start, size_t *end);
void lsp_log(int type, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
double lsp_now(void);
void lsp_schedule(LspServer *s, LspDocument *d, double delay);
/* Sends a request to the client; on_response runs on the main thread when
 * the answer comes. drop (may be NULL) frees data if the server exits first. */
void lsp_send_request(LspServer *s, const char *method, json_t *params,
                      void (*on_response)(LspServer *, json_t *, json_t *, void *), void *data,
                      void (*drop)(void *));

/* worker (lsp_worker.c) */
/* Copies the settings an analysis needs (lock held). */
void lsp_config_snapshot(const LspServer *s, Config *out);
bool lsp_workers_start(LspServer *s, int count);
/* Called last by every thread that ran guarded work or libclang: switches
 * the thread's alternate signal stack off (AddressSanitizer would otherwise
 * try to unmap LLVM's, a heap block, as its own and abort) and frees the
 * crash guard's (crash_guard_thread_end). */
void lsp_thread_end(void);
/* Cancels the analyses in progress and waits at most grace_seconds for the
 * workers to end. True when all ended (joined); false when one is still
 * inside a long analysis: it is detached, and nothing it can reach (s, its
 * documents, the workspace index, the settings) may be freed: the caller
 * leaves it all to the end of the process, which it ends with quick_exit. */
bool lsp_workers_stop(LspServer *s, double grace_seconds);
/* Frees everything a document holds (lock held or document detached). */
void lsp_document_free(LspDocument *d);
/* Answers the waiting pull requests of d from its current results (lock held). */
void lsp_answer_pulls(LspServer *s, LspDocument *d);
json_t *lsp_pull_report(LspDocument *d, const char *previous_result_id);

/* features (lsp_features.c) */
void lsp_handle_code_action(LspServer *s, json_t *id, json_t *params);
void lsp_handle_code_action_resolve(LspServer *s, json_t *id, json_t *params);
void lsp_handle_hover(LspServer *s, json_t *id, json_t *params);
void lsp_handle_execute_command(LspServer *s, json_t *id, json_t *params);
/* Waits for the workspace scans (they stop early once s->stopping is set). */
void lsp_scans_join(LspServer *s);
json_t *lsp_findings_to_diagnostics(const LspServer *s, const LspDocument *d, const FindingList *findings,
                                    const Document *doc, int64_t version);
/* The same as text for a push publish, reusing the text of d->published for
 * each finding whose published_id names one there with the same positions;
 * gives the findings without one a new published_id (from
 * d->next_published_id). Runs on the worker that holds d busy. false when
 * memory runs out (out is then empty). */
bool lsp_diagnostic_texts(const LspServer *s, LspDocument *d, FindingList *findings, const Document *doc,
                          LspDiagnosticTexts *out);
void lsp_diagnostic_texts_free(LspDiagnosticTexts *t);
bool lsp_diagnostic_texts_equal(const LspDiagnosticTexts *a, const LspDiagnosticTexts *b);
/* Sends textDocument/publishDiagnostics with these diagnostics, each with
 * data.version = version: the message lsp_findings_to_diagnostics's array
 * would make, without a JSON tree. */
bool lsp_publish_diagnostic_texts(const char *uri, int64_t version, const LspDiagnosticTexts *t);
/* The same diagnostics as a JSON array (a pull request from a client that
 * announced no pull support); NULL when memory runs out. */
json_t *lsp_diagnostic_texts_json(const LspDiagnosticTexts *t, int64_t version);
/* The LSP Diagnostic message of a finding: its message, its first item of
 * measured evidence after its kind ("measured: ...", else its first item of
 * any kind: "note: ...") and the estimated gain; all evidence goes in
 * `data` (finding_json.h). */
char *lsp_diagnostic_message(const Finding *f);
/* Applies LSP settings (initializationOptions, didChangeConfiguration or a
 * workspace/configuration answer); reports problems with window/logMessage. */
void lsp_apply_settings(LspServer *s, json_t *settings);

/* profiles (lsp_profile.c, lsp_profile_features.c) */
#include "server/lsp/lsp_profile.h"

#endif
