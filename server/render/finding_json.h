/* A finding's evidence and estimated gain as JSON, the same in every JSON
 * that carries them: `advise check --format json`, the LSP diagnostics'
 * `data` and `advise/findings` (docs/json-evidence.md). */
#ifndef ADVISE_FINDING_JSON_H
#define ADVISE_FINDING_JSON_H

#include <jansson.h>

#include "analysis/finding.h"

/* {"kind": "measured", "text": "<in words>", "template": "... {0} ...",
 *  "values": [{"value": 0.0123, "unit": "s"}, ...]} */
json_t *evidence_json(const Evidence *e);
/* The finding's evidence items, in order. */
json_t *finding_evidence_json(const Finding *f);
/* {"seconds", "scope", "model": evidence_json of the model}, or null. */
json_t *finding_gain_json(const Finding *f);

#endif
