/* Typed evidence: the one formatter of each unit (analysis/units.h) at its
 * edges, and evidence items (analysis/evidence.h) built from printf text
 * with "{}" placeholders and rendered back, braces and percent signs in
 * names included; their JSON (server/render/finding_json.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "analysis/finding.h"
#include "server/render/finding_json.h"
#include "tests/evidence_text.h"

static const char *fmt(Quantity q) {
    static char bufs[4][UNITS_BUF];
    static unsigned next;
    return units_format(q, bufs[next++ % 4], UNITS_BUF);
}

/* ---- units ------------------------------------------------------------------------------------ */

Test(units, durations) {
    cr_expect_str_eq(fmt(q_seconds(0)), "0 ns");
    cr_expect_str_eq(fmt(q_ns(1)), "1 ns");
    cr_expect_str_eq(fmt(q_seconds(4e-10)), "0 ns", "sub-nanosecond");
    cr_expect_str_eq(fmt(q_ns(812)), "812 ns");
    cr_expect_str_eq(fmt(q_seconds(999.4e-9)), "999 ns");
    cr_expect_str_eq(fmt(q_seconds(999.6e-9)), "1.00 \xC2\xB5s", "rounded into the next unit");
    cr_expect_str_eq(fmt(q_ns(6930)), "6.93 \xC2\xB5s");
    cr_expect_str_eq(fmt(q_ns(93633)), "93.6 \xC2\xB5s");
    cr_expect_str_eq(fmt(q_ns(999999)), "1.00 ms");
    cr_expect_str_eq(fmt(q_seconds(9.996e-3)), "10.0 ms", "three digits, not 10.00");
    cr_expect_str_eq(fmt(q_seconds(99.96e-3)), "100 ms");
    cr_expect_str_eq(fmt(q_seconds(0.9994)), "999 ms");
    cr_expect_str_eq(fmt(q_ns(999500000)), "1.00 s", "999.5 ms rounds to a second, not to 1000 ms");
    cr_expect_str_eq(fmt(q_ns(2410000000ull)), "2.41 s");
    cr_expect_str_eq(fmt(q_seconds(3600)), "3600 s");
    cr_expect_str_eq(fmt(q_seconds(1e20)), "1e+20 s", "huge: an exponent, not 21 digits");
    cr_expect_str_eq(fmt(q_ns(UINT64_MAX)), "18446744074 s");
    cr_expect_str_eq(fmt(q_seconds(-0.00137)), "-1.37 ms", "negative: a sign before the magnitude");
    cr_expect_str_eq(fmt(q_seconds(NAN)), "? s");
    cr_expect_str_eq(fmt(q_seconds(INFINITY)), "? s");
}

Test(units, bytes_capacities_and_bandwidth) {
    cr_expect_str_eq(fmt(q_bytes(0)), "0 bytes");
    cr_expect_str_eq(fmt(q_bytes(64)), "64 bytes");
    cr_expect_str_eq(fmt(q_bytes(999)), "999 bytes");
    cr_expect_str_eq(fmt(q_bytes(1000)), "1.00 kB");
    cr_expect_str_eq(fmt(q_bytes(204800)), "205 kB");
    cr_expect_str_eq(fmt(q_bytes(16u << 20)), "16.8 MB");
    cr_expect_str_eq(fmt(q_bytes(999999999)), "1.00 GB");
    cr_expect_str_eq(fmt(q_bytes(1500000000000ull)), "1.50 TB");
    cr_expect_str_eq(fmt(q_bytes(UINT64_MAX)), "18446744 TB");
    cr_expect_str_eq(fmt((Quantity){UNIT_BYTES, NAN}), "? bytes");
    cr_expect_str_eq(fmt(q_capacity(49152)), "48 KiB");
    cr_expect_str_eq(fmt(q_capacity(233472)), "228 KiB");
    cr_expect_str_eq(fmt(q_capacity(1000)), "1000 bytes");
    cr_expect_str_eq(fmt(q_capacity(1536)), "1536 bytes", "not a whole KiB");
    cr_expect_str_eq(fmt(q_capacity(1u << 20)), "1 MiB");
    cr_expect_str_eq(fmt(q_capacity(0)), "0 bytes");
    cr_expect_str_eq(fmt(q_rate(48.5e9)), "48.5 GB/s");
    cr_expect_str_eq(fmt(q_rate(2e9)), "2.00 GB/s");
    cr_expect_str_eq(fmt(q_rate(4.8e12)), "4.80 TB/s");
    cr_expect_str_eq(fmt(q_rate(3472)), "3.47 kB/s");
    cr_expect_str_eq(fmt(q_rate(0)), "0 bytes/s");
    cr_expect_str_eq(fmt(q_rate(-1e9)), "-1.00 GB/s");
}

Test(units, counts_shares_factors_and_numbers) {
    cr_expect_str_eq(fmt(q_count(0)), "0");
    cr_expect_str_eq(fmt(q_count(999)), "999");
    cr_expect_str_eq(fmt(q_count(1000)), "1,000");
    cr_expect_str_eq(fmt(q_count(1234567)), "1,234,567");
    cr_expect_str_eq(fmt(q_count(UINT64_MAX)), "18,446,744,073,709,551,616", "exact to 2^53, then the double's");
    cr_expect_str_eq(fmt((Quantity){UNIT_COUNT, -1234}), "-1,234");
    cr_expect_str_eq(fmt((Quantity){UNIT_COUNT, NAN}), "?");
    cr_expect_str_eq(fmt(q_ratio(0)), "0%");
    cr_expect_str_eq(fmt(q_ratio(0.0004)), "<0.1%");
    cr_expect_str_eq(fmt(q_ratio(0.005)), "0.5%");
    cr_expect_str_eq(fmt(q_ratio(0.042)), "4.2%");
    cr_expect_str_eq(fmt(q_ratio(0.0996)), "10%", "rounded: two digits, not 10.0%");
    cr_expect_str_eq(fmt(q_ratio(0.314)), "31%");
    cr_expect_str_eq(fmt(q_ratio(1)), "100%");
    cr_expect_str_eq(fmt(q_ratio(12.5)), "1250%");
    cr_expect_str_eq(fmt(q_ratio(-0.25)), "-25%");
    cr_expect_str_eq(fmt(q_share(1, 8)), "12%");
    cr_expect_str_eq(fmt(q_share(1, 100000)), "<0.1%");
    cr_expect_str_eq(fmt(q_share(3, 0)), "?%", "a share of nothing is unknown");
    cr_expect_str_eq(fmt(q_ratio(NAN)), "?%");
    cr_expect_str_eq(fmt(q_factor(4.5)), "4.5x");
    cr_expect_str_eq(fmt(q_factor(32)), "32.0x");
    cr_expect_str_eq(fmt(q_factor(NAN)), "?x");
    cr_expect_str_eq(fmt(q_number(0.75)), "0.75");
    cr_expect_str_eq(fmt(q_number(12.5)), "12.5");
    cr_expect_str_eq(fmt(q_number(0)), "0.00");
}

Test(units, json_names_and_small_buffers) {
    cr_expect_str_eq(unit_json_name(UNIT_SECONDS), "s");
    cr_expect_str_eq(unit_json_name(UNIT_BYTES), "bytes");
    cr_expect_str_eq(unit_json_name(UNIT_CAPACITY), "bytes");
    cr_expect_str_eq(unit_json_name(UNIT_BYTES_PER_SECOND), "bytes/s");
    cr_expect_str_eq(unit_json_name(UNIT_COUNT), "count");
    cr_expect_str_eq(unit_json_name(UNIT_RATIO), "ratio");
    cr_expect_str_eq(unit_json_name(UNIT_FACTOR), "factor");
    cr_expect_str_eq(unit_json_name(UNIT_NUMBER), "number");
    char tiny[4];
    cr_expect_str_eq(units_count(1234567, tiny, sizeof tiny), "1,2", "truncated, terminated");
    cr_expect_str_eq(units_ns(1370000, tiny, sizeof tiny), "1.3");
    cr_expect_null(units_ns(1, NULL, 0));
}

/* ---- evidence items ----------------------------------------------------------------------------- */

Test(evidence, placeholders_become_numbered_figures) {
    Evidence e = evidence_new(EVIDENCE_MEASURED);
    cr_assert(evidence_append(&e, QV(q_count(500), q_ns(220000)), "this `%s` ran {} time%s and waited {}", "loss.item()",
                              "s"));
    cr_assert(evidence_append(&e, QV(q_share(11, 100)), " ({} of the run)"));
    cr_expect_str_eq(e.text, "this `loss.item()` ran {0} times and waited {1} ({2} of the run)");
    cr_expect_eq(e.value_count, 3);
    cr_expect_eq(e.values[0].unit, UNIT_COUNT);
    cr_expect_eq(e.values[0].value, 500);
    cr_expect_float_eq(e.values[1].value, 220e-6, 1e-15);
    cr_expect_str_eq(ev(&e), "this `loss.item()` ran 500 times and waited 220 \xC2\xB5s (11% of the run)");
    cr_expect_str_eq(evidence_kind_name(e.kind), "measured");
    evidence_free(&e);
    cr_expect_null(e.text);
}

Test(evidence, braces_and_percent_signs_in_names_stay_text) {
    Evidence e = evidence_new(EVIDENCE_MEASURED);
    /* a name holding what looks like placeholders, and a percent sign */
    cr_assert(evidence_append(&e, QV(q_count(3)), "`%s` ran {} times at 100%% (%s)", "f{}{0}}", "50% {x}"));
    cr_expect_str_eq(e.text, "`f{{}}{{0}}}}` ran {0} times at 100% (50% {{x}})");
    cr_expect_str_eq(ev(&e), "`f{}{0}}` ran 3 times at 100% (50% {x})");
    evidence_free(&e);
    /* without figures every brace is text, "{}" included */
    e = evidence_new(EVIDENCE_NOTE);
    cr_assert(evidence_append(&e, NO_VALUES, "a dict `{}` and `%s`", "{1}"));
    cr_expect_str_eq(e.text, "a dict `{{}}` and `{{1}}`");
    cr_expect_str_eq(ev(&e), "a dict `{}` and `{1}`");
    cr_expect_eq(e.value_count, 0);
    evidence_free(&e);
}

Test(evidence, odd_templates_render_safely) {
    Quantity one = q_count(7);
    Evidence e = {.kind = EVIDENCE_MODEL, .text = (char *)"{0} then {5}, {x}, { 0}, {", .values = &one,
                  .value_count = 1};
    cr_expect_str_eq(ev(&e), "7 then ?, {x}, { 0}, {", "a placeholder without a figure reads ?");
    Evidence none = evidence_new(EVIDENCE_NOTE);
    cr_expect_str_eq(ev(&none), "", "an empty item renders empty");
}

Test(evidence, copies_are_deep) {
    Evidence e = evidence_new(EVIDENCE_CAVEAT), copy;
    cr_assert(evidence_append(&e, QV(q_bytes(512)), "{} left"));
    cr_assert(evidence_copy(&copy, &e));
    evidence_free(&e);
    cr_expect_eq(copy.kind, EVIDENCE_CAVEAT);
    cr_expect_str_eq(ev(&copy), "512 bytes left");
    evidence_free(&copy);
    Evidence empty = evidence_new(EVIDENCE_NOTE);
    cr_assert(evidence_copy(&copy, &empty));
    cr_expect_null(copy.text);
}

Test(evidence, a_finding_holds_items_of_each_kind) {
    Finding f = {0};
    cr_assert(finding_note(&f, "the formula at line %d is among them", 43));
    cr_assert(finding_measured(&f, QV(q_ns(1500000), q_ratio(0.02)), "it ran {} ({} of the run)"));
    cr_assert(finding_model(&f, NO_VALUES, "pinning would gain nothing here"));
    cr_assert(finding_caveat(&f, "(profile is older than this file)"));
    cr_assert(finding_set_gain(&f, 0.0015, "program", QV(q_count(16)), "allocating once instead of {} times"));
    cr_assert_eq(f.evidence_count, 4);
    EvidenceKind kinds[] = {EVIDENCE_NOTE, EVIDENCE_MEASURED, EVIDENCE_MODEL, EVIDENCE_CAVEAT};
    for (size_t i = 0; i < 4; i++) cr_expect_eq(f.evidence[i].kind, kinds[i], "item %zu", i);
    cr_expect_str_eq(ev(&f.evidence[1]), "it ran 1.50 ms (2.0% of the run)");
    cr_expect_eq(f.gain.model.kind, EVIDENCE_MODEL);
    cr_expect_str_eq(ev(&f.gain.model), "allocating once instead of 16 times");

    json_t *items = finding_evidence_json(&f);
    char *dump = json_dumps(items, 0);
    cr_expect_str_eq(dump,
                     "[{\"kind\": \"note\", \"text\": \"the formula at line 43 is among them\", \"template\": \"the "
                     "formula at line 43 is among them\", \"values\": []}, {\"kind\": \"measured\", \"text\": \"it "
                     "ran 1.50 ms (2.0% of the run)\", \"template\": \"it ran {0} ({1} of the run)\", \"values\": "
                     "[{\"value\": 0.0015, \"unit\": \"s\"}, {\"value\": 0.02, \"unit\": \"ratio\"}]}, {\"kind\": "
                     "\"model\", \"text\": \"pinning would gain nothing here\", \"template\": \"pinning would gain "
                     "nothing here\", \"values\": []}, {\"kind\": \"caveat\", \"text\": \"(profile is older than this "
                     "file)\", \"template\": \"(profile is older than this file)\", \"values\": []}]");
    free(dump);
    json_decref(items);
    json_t *gain = finding_gain_json(&f);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(gain, "model"), "kind")), "model");
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(json_object_get(json_object_get(gain, "model"),
                                                                                   "values"),
                                                                   0),
                                                    "value")),
                 16, "counts are JSON integers");
    json_decref(gain);
    json_t *unknown = evidence_json(&(Evidence){EVIDENCE_MEASURED, (char *)"{0}", &(Quantity){UNIT_RATIO, NAN}, 1});
    cr_expect(json_is_null(json_object_get(json_array_get(json_object_get(unknown, "values"), 0), "value")),
              "an unknown figure is null");
    json_decref(unknown);
    finding_free(&f);
    cr_expect_eq(f.evidence_count, 0);
}
