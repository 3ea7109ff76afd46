/* What engine.c shares with profile_merge.c: the last step of
 * every run of rules over a document. */
#ifndef ADVISE_ENGINE_INTERNAL_H
#define ADVISE_ENGINE_INTERNAL_H

#include "rules/engine/engine.h"

/* For the findings from first_new on: drops those that suppression comments
 * silence, applies the config's severity overrides and sorts them. Returns
 * how many were suppressed. py may be NULL (comments are then scanned as in
 * C-family files, which is right only for those). */
size_t engine_settle_findings(const Document *doc, const PySource *py, const Config *cfg, FindingList *out,
                              size_t first_new);

/* engine_merge_profile_parsed with the profile rules taken from rules
 * instead of the registry (tests run rules of their own through it). */
bool engine_merge_profile_with(const Document *doc, const PySource *py, const CudaSource *cuda,
                               const char *relative_path, const ProfileView *profile, const Config *cfg,
                               const Rule *const *rules, size_t rule_count, FindingList *out, MergeReport *report);

/* Scales down the program-scope gains of out's findings from first on where
 * together they claim more than the run could give back (gain_cap.c). */
bool engine_cap_gains(const ProfileView *view, FindingList *out, size_t first);

#endif
