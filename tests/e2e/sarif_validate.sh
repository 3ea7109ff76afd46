#!/bin/sh
# `advise check --format sarif samples/` validated two ways:
#   - by Microsoft's SARIF validator (`sarif-multitool validate`, from the
#     npm package @microsoft/sarif-multitool pinned in package-lock.json):
#     it must report no error-level result;
#   - by ajv against the SARIF 2.1.0 JSON Schema (draft 2020-12) that the
#     same package ships (node_modules/@microsoft/sarif-multitool-linux/
#     sarif-2.1.0.json; not copied into this repository).
# Needs `npm ci` in tests/e2e (run.sh does it). Prints PASS or FAIL.
#
# usage: tests/e2e/sarif_validate.sh ADVISE_BINARY
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
binary=$1
schema="$here/node_modules/@microsoft/sarif-multitool-linux/sarif-2.1.0.json"
# the package's own Linux binary: its npm wrapper (npx sarif-multitool) passes
# the arguments through a shell unquoted, which splits "Error;Warning;Note"
tool="$here/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool"
if [ ! -f "$schema" ] || [ ! -x "$tool" ]; then
    echo "FAIL: sarif: @microsoft/sarif-multitool is not installed (npm ci in tests/e2e)"
    exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/advise-sarif.XXXXXX")
trap 'rm -rf "$work"' EXIT

# exit 1 means findings, which the samples have
(cd "$repo" && "$binary" check --no-config --no-profile --format sarif -o "$work/samples.sarif" samples/)
rc=$?
if [ "$rc" -gt 1 ] || [ ! -s "$work/samples.sarif" ]; then
    echo "FAIL: sarif: advise check --format sarif samples/ exited $rc"
    exit 1
fi
status=0

# 1. the SARIF multitool; its own findings come back as SARIF
if ! timeout 120 "$tool" validate "$work/samples.sarif" --json-schema "$schema" \
    --level "Error;Warning;Note" -o "$work/validation.sarif" >"$work/validate.log" 2>&1 ||
    [ ! -s "$work/validation.sarif" ]; then
    # it exits non-zero when it finds errors; the report says which
    [ -s "$work/validation.sarif" ] || { cat "$work/validate.log"; echo "FAIL: sarif-multitool did not run"; exit 1; }
fi
node --input-type=module - "$work/validation.sarif" <<'JS' || status=1
import { readFileSync } from "node:fs";
const log = JSON.parse(readFileSync(process.argv[2], "utf8"));
const results = log.runs.flatMap((run) => run.results ?? []);
const level = (r) => r.level ?? "warning";
const errors = results.filter((r) => level(r) === "error");
const counts = {};
for (const r of results) counts[`${level(r)} ${r.ruleId}`] = (counts[`${level(r)} ${r.ruleId}`] ?? 0) + 1;
for (const [k, n] of Object.entries(counts)) console.log(`  sarif-multitool: ${n} x ${k}`);
for (const r of errors) console.log(`  ${r.ruleId}: ${r.message?.text ?? JSON.stringify(r.message?.arguments)}`);
if (errors.length) {
    console.log(`FAIL: sarif-multitool validate: ${errors.length} error(s) of ${results.length} result(s)`);
    process.exit(1);
}
console.log(`PASS: sarif-multitool validate: no errors (${results.length} warning/note result(s))`);
JS

# 2. the JSON Schema
node --input-type=module - "$here" "$schema" "$work/samples.sarif" <<'JS' || status=1
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
const [dir, schemaPath, logPath] = process.argv.slice(2);
const Ajv2020 = createRequire(path.join(dir, "package.json"))("ajv/dist/2020").default;
// formats (uri, date-time) are not checked: ajv needs ajv-formats for them
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
const validate = ajv.compile(JSON.parse(readFileSync(schemaPath, "utf8")));
const log = JSON.parse(readFileSync(logPath, "utf8"));
const results = log.runs[0].results.length, rules = log.runs[0].tool.driver.rules.length;
if (!validate(log)) {
    for (const e of validate.errors.slice(0, 20)) console.log(`  ${e.instancePath} ${e.message}`);
    console.log(`FAIL: SARIF 2.1.0 schema (ajv): ${validate.errors.length} error(s)`);
    process.exit(1);
}
console.log(`PASS: SARIF 2.1.0 schema (ajv): ${results} results, ${rules} rules`);
JS
exit $status
