/* Profiles in the editor: the server reads the profile folder as `advise
 * check` does (the `profileDir` setting, else `[profile] dir` of the
 * project's advise.toml, else `.advise/profiles` under the project root),
 * merges it into every analysis, and watches the folder so that a new or
 * changed profile refreshes diagnostics and code lenses.
 *
 * A loaded folder is an immutable, reference-counted LspProfiles: the
 * watcher thread builds a new one off the lock and swaps it in; workers
 * and request handlers take a reference under s->lock and read it without. */
#ifndef ADVISE_LSP_PROFILE_H
#define ADVISE_LSP_PROFILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "analysis/cuda/cuda_source.h"
#include "analysis/line_map.h"
#include "analysis/python/python_source.h"
#include "profiler/profile_set.h"
#include "rules/engine/config.h"

typedef struct LspServer LspServer;
typedef struct LspDocument LspDocument;

typedef struct LspProfiles {
    int refs;          /* under s->lock */
    ProfileSet *set;   /* NULL: no usable profile in the folder */
    char *root;        /* the project root (absolute): profile paths are relative to it */
    char *dir;         /* the folder read (absolute) */
    ProfileCold cold;  /* [profile] cold of advise.toml */
    Config toml;       /* the rest of the project's advise.toml (rules, [cuda]); empty without one */
    size_t files;      /* profile files in the folder (usable or not) */
    uint64_t stamp;    /* the folder's state when read (see folder_stamp) */
    struct LspProfiles *next; /* other projects' profiles (LspServer.other_profiles) */
} LspProfiles;

/* The settings that choose the folder may have changed (initialize, new
 * settings): the folder is read again on the watcher thread, started on
 * the first call; analyses wait until it is read. Lock held. */
void lsp_profiles_configure(LspServer *s);
/* Stops the watcher and the advise/findings threads (after s->stopping is set). */
void lsp_profiles_stop(LspServer *s);

/* Waits until the configured folder has been read (lock held; returns at
 * once when the server is stopping). */
void lsp_profiles_wait_ready(LspServer *s);
/* A reference to the current profiles, or NULL (lock held). */
LspProfiles *lsp_profiles_ref(LspServer *s);
/* Releases a reference (lock held). */
void lsp_profiles_unref(LspProfiles *p);

/* The profiles of the project a document belongs to (walking up from the
 * document to advise.toml, else .git, as ruff and clangd find their
 * settings): the workspace's when it is that project, else the project's
 * own, read on first use (without the lock held; it takes it) and watched
 * from then on. A reference, or NULL for documents that are not files. */
LspProfiles *lsp_profiles_for_document(LspServer *s, const char *path);

/* The settings for a document of project p: its advise.toml, with the
 * editor's settings laid over them (select replaces, ignore and severity
 * add, [cuda] values win). Lock held. */
void lsp_config_for_project(const LspServer *s, const LspProfiles *p, Config *out);

/* Tells the user once per profile folder when a document's project holds
 * profiles but none was merged into it: window/showMessage when none of
 * them is usable, the log when none mentions the file. Lock not held. */
void lsp_profiles_explain_unmerged(LspServer *s, const LspProfiles *p, const char *path);

/* The view that holds the file at path (a document path), and its index
 * there; NULL when no profile mentions it. Any thread. */
const ProfileView *lsp_profiles_view_for(const LspProfiles *p, const char *path, int *file);

/* The view of path's profile as it applies to text: when text is not what
 * was profiled but map (edits since it was; may be NULL) follows it there
 * from the profiled text, a copy of the profile moved onto text's lines,
 * also returned in *owned for the caller to free (profile_view_free);
 * else the profile's own view (*owned NULL), or NULL when no profile
 * mentions the file. *file: the file's index in the view returned. */
const ProfileView *lsp_profiles_view_through(const LspProfiles *p, const char *path, const Document *text,
                                             const LineMap *map, int *file, ProfileView **owned);
/* Starts map as the identity over text when text is what path's profile
 * measured (its sha256 matches) and map does not already follow that text.
 * True when it started one. */
bool lsp_profiles_start_line_map(const LspProfiles *p, const char *path, const Document *text, LineMap *map);

/* Merges the profile that mentions path into findings (engine_merge_profile_parsed
 * with the parse the caller holds), through map (lsp_profiles_view_through).
 * True when nothing was to be merged; false only when memory runs out. */
bool lsp_profiles_merge(const LspProfiles *p, const char *path, const Document *doc, const PySource *py,
                        const CudaSource *cuda, const Config *cfg, const LineMap *map, FindingList *findings);

/* requests (lsp_profile_features.c) */
void lsp_handle_code_lens(LspServer *s, json_t *id, json_t *params);
/* Markdown for the measured figures of the line of offset in d (lock held),
 * or NULL when the profile has none there. */
char *lsp_profile_hover(LspServer *s, const LspDocument *d, const Document *doc, size_t offset);
/* The part of it that one view gives a line (1-based) of file: what ran
 * there, per-line metrics, device memory (`advise profile --memory`);
 * markdown, or NULL when the view has nothing there. */
char *lsp_profile_line_hover(const ProfileView *v, int file, uint32_t line);
void lsp_handle_findings(LspServer *s, json_t *id, json_t *params);

/* advise/profileSummary and advise/lineCosts (lsp_profile_summary.c) */
void lsp_handle_profile_summary(LspServer *s, json_t *id, json_t *params);
void lsp_handle_line_costs(LspServer *s, json_t *id, json_t *params);
/* What a line's share divides by (profile_view_line_share), in words. */
#define LSP_SHARE_DENOMINATOR "the run's GPU time (kernels, copies and memsets)"
/* $/cancelRequest of an advise/findings request; false when id is not one. */
bool lsp_findings_cancel(LspServer *s, json_t *id);
/* window/workDoneProgress/cancel */
void lsp_handle_progress_cancel(LspServer *s, json_t *params);
/* joins the advise/findings threads that ended (all of them when `all`) */
void lsp_findings_reap(LspServer *s, bool all);

#endif
