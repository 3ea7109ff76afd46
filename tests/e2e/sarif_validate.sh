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
# the other shapes a log takes: a baseline's counts and baselineState, and
# the notification of CUDA files skipped on a runner without the toolkit
(cd "$repo" && "$binary" check --no-config --no-profile --write-baseline "$work/baseline.json" \
    samples/python/train_classifier.py >/dev/null &&
    CUDA_PATH="$work/no-toolkit" "$binary" check --no-config --no-profile --format sarif -o "$work/variants.sarif" \
        --baseline "$work/baseline.json" samples/ 2>/dev/null)
[ -s "$work/variants.sarif" ] || { echo "FAIL: sarif: the baseline/no-toolkit run wrote nothing"; exit 1; }

for log in samples variants; do
# 1. the SARIF multitool; its own findings come back as SARIF (it will not overwrite a file)
rm -f "$work/validation.sarif"
if ! timeout 120 "$tool" validate "$work/$log.sarif" --json-schema "$schema" \
    --level "Error;Warning;Note" -o "$work/validation.sarif" >"$work/validate.log" 2>&1 ||
    [ ! -s "$work/validation.sarif" ]; then
    # it exits non-zero when it finds errors; the report says which
    [ -s "$work/validation.sarif" ] || { cat "$work/validate.log"; echo "FAIL: sarif-multitool did not run"; exit 1; }
fi
echo "  $log.sarif:"
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
node --input-type=module - "$here" "$schema" "$work/$log.sarif" <<'JS' || status=1
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
done

# GitLab Code Quality: the fields GitLab's documentation requires
# (tests/e2e/gitlab-code-quality.schema.json, written from
# docs.gitlab.com/ci/testing/code_quality, "Code Quality report format")
(cd "$repo" && "$binary" check --no-config --no-profile --format gitlab -o "$work/gl.json" samples/)
node --input-type=module - "$here" "$here/gitlab-code-quality.schema.json" "$work/gl.json" <<'JS' || status=1
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
const [dir, schemaPath, reportPath] = process.argv.slice(2);
const Ajv2020 = createRequire(path.join(dir, "package.json"))("ajv/dist/2020").default;
const validate = new Ajv2020({ strict: true, allErrors: true }).compile(JSON.parse(readFileSync(schemaPath, "utf8")));
const report = JSON.parse(readFileSync(reportPath, "utf8"));
if (!validate(report) || report.length === 0) {
    for (const e of (validate.errors ?? []).slice(0, 20)) console.log(`  ${e.instancePath} ${e.message}`);
    console.log(`FAIL: GitLab Code Quality schema: ${validate.errors?.length ?? 0} error(s), ${report.length} issue(s)`);
    process.exit(1);
}
const fingerprints = new Set(report.map((i) => i.fingerprint));
if (fingerprints.size !== report.length) {
    console.log(`FAIL: GitLab Code Quality: ${report.length - fingerprints.size} repeated fingerprint(s)`);
    process.exit(1);
}
console.log(`PASS: GitLab Code Quality schema: ${report.length} issues, unique fingerprints`);
JS

# GitHub workflow commands: the grammar of ::command key=value,...::message,
# with %, CR and LF escaped in the message, and also , and : in properties
(cd "$repo" && "$binary" check --no-config --no-profile --format github samples/ >"$work/gh.txt")
node --input-type=module - "$work/gh.txt" <<'JS' || status=1
import { readFileSync } from "node:fs";
const lines = readFileSync(process.argv[2], "utf8").split("\n").filter((l) => l.length);
const prop = "[A-Za-z]+=(?:[^,:%\\r\\n]|%25|%0D|%0A|%3A|%2C)*";
const grammar = new RegExp(`^::(error|warning|notice)(?: ${prop}(?:,${prop})*)?::(?:[^%\\r\\n]|%25|%0D|%0A)*$`);
const bad = lines.filter((l) => !grammar.test(l));
for (const l of bad.slice(0, 5)) console.log(`  not a workflow command: ${l.slice(0, 160)}`);
if (bad.length || lines.length === 0) {
    console.log(`FAIL: GitHub workflow commands: ${bad.length} of ${lines.length} line(s) off the grammar`);
    process.exit(1);
}
console.log(`PASS: GitHub workflow commands: ${lines.length} lines in the grammar`);
JS
exit $status
