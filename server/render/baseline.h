/* The baseline file of `advise check --write-baseline FILE` and
 * `--baseline FILE`: the findings a project accepts today, known by their
 * fingerprints (finding_fingerprints, SARIF's adviseFinding/v1), so that a
 * later run reports only new ones. A JSON document made to be committed,
 * sorted and diffed: a version, then one finding a line, sorted by path,
 * rule and fingerprint:
 *
 *   {
 *     "version": 1,
 *     "tool": "advise",
 *     "fingerprint": "adviseFinding/v1",
 *     "findings": [
 *       {"path": "train.py", "rule": "PY001", "fingerprint": "3f...", "line": 38, "message": "..."}
 *     ]
 *   }
 *
 * path is relative to the project root ('/'-separated; absolute for a file
 * outside it); line and message are for people only. Reading refuses, with
 * a message, anything else: another version, a file over
 * BASELINE_MAX_BYTES, wrong types, a fingerprint that is not 64 hex digits. */
#ifndef ADVISE_BASELINE_H
#define ADVISE_BASELINE_H

#include <stdbool.h>
#include <stddef.h>

#include "profiler/sha256.h"

#define BASELINE_VERSION 1
#define BASELINE_MAX_BYTES (64u * 1024u * 1024u)
#define BASELINE_MAX_ENTRIES 1000000u

typedef struct {
    char *path, *rule, *message;
    char fingerprint[SHA256_HEX_CHARS + 1];
    long long line; /* 1-based; 0 when the file did not say */
} BaselineEntry;

typedef struct {
    BaselineEntry *items;
    size_t count, cap;
} Baseline;

/* Reads and checks file. False with *error (heap, for a person) when it
 * cannot be read or is not a baseline; out then holds nothing. */
bool baseline_read(const char *file, Baseline *out, char **error);
/* Adds an entry (copies the strings); message may be NULL. False when
 * memory runs out. */
bool baseline_add(Baseline *b, const char *path, const char *rule, const char *fingerprint, long long line,
                  const char *message);
/* Sorts by path, rule and fingerprint (then line and message), bytewise:
 * the order the file is written in. */
void baseline_sort(Baseline *b);
/* Writes b (sorted first) to file atomically. False with *error. */
bool baseline_write(const char *file, Baseline *b, char **error);
void baseline_free(Baseline *b);

#endif
