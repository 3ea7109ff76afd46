// Checks profiler/profile.schema.json (JSON Schema draft 2020-12) with ajv
// against profiles the writer produced:
//   - tests/fixtures/profiles/valid/*.json must pass,
//   - tests/fixtures/profiles/invalid/*.json must fail
//     (test_profile_format checks that both folders hold exactly what the C
//     writer produces, and that the C reader refuses every invalid one),
//   - and variants built here on the caps and the path rule must land on the
//     same side as the reader puts them.
// ajv comes from tests/e2e/node_modules (pinned in tests/e2e/package-lock.json;
// tests/e2e/run.sh installs it with `npm ci` and runs this script).
//
// usage: node tests/profile_schema_check.mjs
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.dirname(here);
const fixtures = path.join(here, "fixtures", "profiles");
const requireFromE2e = createRequire(path.join(here, "e2e", "package.json"));

let Ajv2020;
try {
    Ajv2020 = requireFromE2e("ajv/dist/2020").default;
} catch {
    console.error("profile schema: ajv is not installed; run `npm ci` in tests/e2e (tests/e2e/run.sh does)");
    process.exit(2);
}

const schema = JSON.parse(readFileSync(path.join(repo, "profiler", "profile.schema.json"), "utf8"));
const ajv = new Ajv2020({ strict: true, allErrors: true });
const validate = ajv.compile(schema);

let failures = 0;
let checks = 0;
function firstError() {
    const e = validate.errors?.[0];
    return e ? `${e.instancePath || "/"} ${e.message}` : "(no error)";
}
function expect(name, profile, valid) {
    checks++;
    const ok = validate(profile);
    if (ok !== valid) {
        failures++;
        console.error(`FAIL ${name}: expected ${valid ? "valid" : "invalid"}` + (ok ? "" : `, ajv says ${firstError()}`));
    }
}

const read = (folder, file) => JSON.parse(readFileSync(path.join(fixtures, folder, file), "utf8"));
const listed = (folder) => readdirSync(path.join(fixtures, folder)).filter((f) => f.endsWith(".json")).sort();

// ---- the writer's fixtures
const valid = listed("valid");
const invalid = listed("invalid");
if (valid.length === 0 || invalid.length === 0) {
    console.error(`profile schema: no fixtures under ${fixtures}`);
    process.exit(1);
}
for (const file of valid) expect(`valid/${file}`, read("valid", file), true);
for (const file of invalid) expect(`invalid/${file}`, read("invalid", file), false);

// ---- variants of the full profile, each on the side the reader puts it
const base = read("valid", "final-full.json");
function variant(name, change, valid) {
    const p = structuredClone(base);
    change(p);
    expect(`final-full.json with ${name}`, p, valid);
}
const long = (n) => "k".repeat(n);

variant("1024 processes (the cap)", (p) => { while (p.processes.length < 1024) p.processes.push(p.processes[0]); }, true);
variant("1025 processes", (p) => { while (p.processes.length < 1025) p.processes.push(p.processes[0]); }, false);
variant("4097 command arguments", (p) => { while (p.command.length < 4097) p.command.push("x"); }, false);
variant("a 16384-byte kernel name (the cap)", (p) => { p.kernels[0].name = long(16384); }, true);
variant("a 16385-byte kernel name", (p) => { p.kernels[0].name = long(16385); }, false);
variant("a 16385-byte command argument", (p) => { p.command[0] = long(16385); }, false);
variant("frames in a site of a final profile", (p) => { p.sites[0].frames = []; }, false);
variant("an unknown top-level key", (p) => { p.future = { anything: [1, 2] }; }, true);
variant("an unknown key in an op", (p) => { p.ops[0].occupancy = 0.5; }, true);
variant("bytes of the wrong type in a launch (no field of a launch)", (p) => { p.ops[0].bytes = "x"; }, true);
variant("a memcpy without src", (p) => { delete p.ops[1].src; }, false);
variant("a memset with copy \"HtoX\" (no field of a memset)", (p) => { p.ops[2].copy = "HtoX"; }, true);
variant("an alloc with dst \"host\"", (p) => { p.ops[4].dst = "host"; }, false);
variant("a count-0 stats with max_ns 1", (p) => { p.ops[6].stats.max_ns = 1; }, false);
variant("a negative gap start", (p) => { p.gaps[0].start_ns = -1; }, false);
variant("rank 2147483648", (p) => { p.processes[0].rank = 2147483648; }, false);
variant("compute capability [9, 0, 1]", (p) => { p.devices[0].compute_capability = [9, 0, 1]; }, false);
variant("a block of [1024, 1]", (p) => { p.kernels[0].block = [1024, 1]; }, false);
variant("a grid of 4294967295 blocks (the u32 limit)", (p) => { p.kernels[0].grid[0] = 4294967295; }, true);
variant("a grid of 4294967296 blocks", (p) => { p.kernels[0].grid[0] = 4294967296; }, false);
variant("a NUL in a name", (p) => { p.name = "a\u0000b"; }, false);
variant("created with fractional seconds", (p) => { p.created = "2026-11-30T15:01:02.5Z"; }, false);
variant("created on day 32", (p) => { p.created = "2026-11-32T15:01:02Z"; }, false);
variant("source torch-profiler", (p) => { p.source = "torch-profiler"; }, true);
variant("kind part", (p) => { p.kind = "part"; }, false);
variant("no line_metrics (older profiles)", (p) => { delete p.line_metrics; }, true);
variant("line_metrics null", (p) => { p.line_metrics = null; }, false);
variant("a line metrics entry on line 0", (p) => { p.line_metrics[0].line = 0; }, false);
variant("a line metrics entry with 0 launches", (p) => { p.line_metrics[0].launches = 0; }, false);
variant("a line metrics entry without local_sectors", (p) => { delete p.line_metrics[1].local_sectors; }, false);
variant("a line metrics entry with negative sectors", (p) => { p.line_metrics[0].global_sectors = -1; }, false);
variant("a line metrics entry with a string file", (p) => { p.line_metrics[0].file = "0"; }, false);
variant("a line metrics entry with a null kernel", (p) => { p.line_metrics[0].kernel = null; }, false);
variant("an unknown key in a line metrics entry", (p) => { p.line_metrics[0].stall_cycles = 5; }, true);
variant("100000 line metrics entries (the cap)",
    (p) => { while (p.line_metrics.length < 100000) p.line_metrics.push({ ...p.line_metrics[0], line: p.line_metrics.length + 100 }); }, true);
variant("100001 line metrics entries",
    (p) => { while (p.line_metrics.length < 100001) p.line_metrics.push(p.line_metrics[0]); }, false);

const paths = {
    "train.py": true, "src/pkg/model.py": true, ".hidden/x.py": true, "a/.../b.py": true, "..a/b": true,
    "a/b./c": true, "caf\u00e9.py": true, "with space.py": true,
    "": false, "/abs.py": false, "../up.py": false, "a/../b": false, "a/..": false, "..": false, ".": false,
    "./a.py": false, "a/./b": false, "a//b": false, "a/": false, "a\\b.py": false, "tab\there": false,
    "del\u007f": false,
};
for (const [value, ok] of Object.entries(paths))
    variant(`path ${JSON.stringify(value)}`, (p) => { p.files[1].path = value; }, ok);

if (failures > 0) {
    console.error(`profile schema: ${failures} of ${checks} checks failed`);
    process.exit(1);
}
console.log(`profile schema: ${checks} checks passed (${valid.length} valid and ${invalid.length} invalid fixtures, ` +
    `${checks - valid.length - invalid.length} variants)`);
