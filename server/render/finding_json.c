/* Evidence and gains as JSON (finding_json.h). */
#include "server/render/finding_json.h"

#include <math.h>
#include <stdlib.h>

/* a figure's value: whole counts and bytes as integers, unknown as null */
static json_t *value_json(Quantity q) {
    if (!isfinite(q.value)) return json_null();
    bool whole = q.unit == UNIT_COUNT || q.unit == UNIT_BYTES || q.unit == UNIT_CAPACITY;
    if (whole && q.value == floor(q.value) && fabs(q.value) < 9e15) return json_integer((json_int_t)q.value);
    return json_real(q.value);
}

json_t *evidence_json(const Evidence *e) {
    json_t *values = json_array();
    for (size_t i = 0; i < e->value_count; i++)
        json_array_append_new(values, json_pack("{s:o,s:s}", "value", value_json(e->values[i]), "unit",
                                                unit_json_name(e->values[i].unit)));
    char *text = evidence_render(e);
    json_t *out = json_pack("{s:s,s:s,s:s,s:o}", "kind", evidence_kind_name(e->kind), "text", text ? text : "",
                            "template", e->text ? e->text : "", "values", values);
    free(text);
    return out;
}

json_t *finding_evidence_json(const Finding *f) {
    json_t *out = json_array();
    for (size_t i = 0; i < f->evidence_count; i++) json_array_append_new(out, evidence_json(&f->evidence[i]));
    return out;
}

json_t *finding_gain_json(const Finding *f) {
    if (!f->gain.present) return json_null();
    return json_pack("{s:f,s:s,s:o}", "seconds", f->gain.seconds, "scope", f->gain.scope ? f->gain.scope : "program",
                     "model", f->gain.model.text ? evidence_json(&f->gain.model) : json_null());
}
