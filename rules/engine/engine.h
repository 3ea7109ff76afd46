/* The engine: runs the enabled rules over one document, drops what
 * suppression comments silence, applies severity overrides and sorts.
 * The CLI, the LSP server and the report all call this one function. */
#ifndef ADVISE_ENGINE_H
#define ADVISE_ENGINE_H

#include "rules/engine/config.h"
#include "profiler/profile_view.h"

typedef struct {
    bool cancelled;      /* stopped by an EngineStop: the findings are incomplete */
    bool syntax_error;   /* the file did not parse cleanly; findings cover what did */
    size_t error_offset; /* where the first syntax error is */
    size_t suppressed;   /* findings silenced by comments */
    char error_message[256]; /* the compiler's words for the first error, when it gave some */
} EngineReport;

/* py may be NULL for Python documents: the engine then parses and frees its
 * own tree. Returns false only when memory runs out or the language has no
 * front end (with *error set for a person). */
bool engine_check(const Document *doc, const PySource *py, const Config *cfg, FindingList *out,
                  EngineReport *report, char **error);

/* The same for a CUDA/C++ document already parsed by the caller (the LSP
 * server keeps translation units for fast reparses). */
bool engine_check_cuda(const Document *doc, const CudaSource *cuda, const Config *cfg, FindingList *out,
                       EngineReport *report, char **error);

/* The editor's quick pass after an edit inside one top-level statement:
 * runs the rules that are not whole_file over the top-level statements
 * overlapping `region` only, and keeps only findings that start inside it. */
bool engine_check_region(const Document *doc, const PySource *py, const Config *cfg, ByteRange region,
                         FindingList *out, EngineReport *report, char **error);

/* Asked between rules; once it answers true the engine stops there, sets
 * report->cancelled and returns true with partial findings (the LSP
 * server's exit, and an edit that makes a running full pass moot). */
typedef struct {
    bool (*should_stop)(void *arg);
    void *arg;
} EngineStop;

/* engine_check and engine_check_region that stop when `stop` says so (NULL: never) */
bool engine_check_stoppable(const Document *doc, const PySource *py, const Config *cfg, const EngineStop *stop,
                            FindingList *out, EngineReport *report, char **error);
bool engine_check_region_stoppable(const Document *doc, const PySource *py, const Config *cfg, ByteRange region,
                                   const EngineStop *stop, FindingList *out, EngineReport *report, char **error);

/* Merges a profile into the findings of one document (after engine_check*):
 * - static findings get measured evidence, an estimated gain and a severity
 *   from what their lines cost (per the rule's Measure); findings in code
 *   the profile shows cold are demoted to hints, or dropped when
 *   `[profile] cold = "hide"`;
 * - the profile rules (rules/profile/) add findings only a profile gives;
 * - when the file changed since it was profiled (content hash), every
 *   measured figure is marked stale in its evidence, never silently wrong.
 * relative_path: the document's path relative to the project root, as the
 * profile names files. A document the profile does not mention is left as
 * it is. False only when memory runs out. */
bool engine_merge_profile(const Document *doc, const char *relative_path, const ProfileView *profile,
                          const Config *cfg, FindingList *out);

/* What a finding measurably cost (ns): the GPU time and host waits that the
 * profile measured at its lines (file: the document's file in profile).
 * Used to rank findings that have no estimated gain. */
uint64_t engine_measured_cost_ns(const Document *doc, const ProfileView *profile, int file, const Finding *f);

/* What a merge did to one document. */
typedef struct {
    bool mentioned;      /* the profile holds the document's file */
    bool stale;          /* ...and the file changed since it was profiled */
    size_t measured;     /* findings that got measured evidence */
    size_t demoted;      /* findings in cold code made hints */
    size_t hidden;       /* findings in cold code dropped ([profile] cold = "hide") */
    size_t suppressed;   /* profile-rule findings silenced by comments */
} MergeReport;

/* As engine_merge_profile, with the document's parse the caller already
 * holds (py for Python, cuda for CUDA; either may be NULL and is then parsed
 * here when the profile mentions the file). report may be NULL. */
bool engine_merge_profile_parsed(const Document *doc, const PySource *py, const CudaSource *cuda,
                                 const char *relative_path, const ProfileView *profile, const Config *cfg,
                                 FindingList *out, MergeReport *report);

/* Drops the profile rules' findings that repeat a static finding of the
 * file: one whose rule measures their way on the same line
 * (Rule.subsumed_by), or any of the rule Rule.subsumed_in_file_by names.
 * Over all of out: after a full merge, and after the server's quick pass
 * joined the kept findings and the edited statement's new ones. */
void engine_drop_subsumed(const Document *doc, FindingList *out);

#endif
