#!/usr/bin/env python3
"""The evaluation tables of advise's advice on the samples (samples/RESULTS.md).

    python3 tests/gpu/evaluate_table.py [--advise ADVISE] EVAL_DIR RUN_DIR
    python3 tests/gpu/evaluate_table.py --rules-to-isolate FINDINGS_JSON FIX_JSON

EVAL_DIR is scripts/prepare-evaluation.sh's output: each sample as written
(original/), with all fixes (advised/, beside the findings and estimated
gains from the recorded profile), and with one rule's fixes alone
(only-RULE/). RUN_DIR holds tests/gpu/evaluate_samples.sh's runs and
profiles: VERSION/STEM.rN.json (or one run, STEM.json); medians are taken
over the runs.

The first table, all fixes together, per sample: the rules whose fixes were
applied; the largest single program-scope gain among them, from the recorded
profile (the old comparison, kept for continuity); GPU time (kernels +
copies + memsets), kernel time and the command's wall time as written and as
fixed; whether the fixed version printed the same result: every number of
its result within 1e-3 relative of the original's (1e-2 for the training
sample, whose data order is random), in every run. The result is the last
output line, or what RESULT_PATTERNS names where that line is a timing.

The second table, one fix at a time, per only-RULE variant: the rule's
estimate, the sum of the program-scope gains of its findings that carry
fixes, (a) from this run's own profiles of the original (median over the
runs; needs --advise, the full advise binary, so it is computed here and not
on the GPU machine) and (b) from the recorded profile; the saving measured
in the quantity the rule's model counts (MODEL_QUANTITY); the error
|estimate - saving| / saving. An estimate under twice the spread (max - min)
of the original's runs in that quantity is marked "below noise" and left
out of the mean error, and so is a variant that saved nothing.

--rules-to-isolate prints the rules that get a variant of their own (for
prepare-evaluation.sh): those whose fixes the all-fixes run applied and that
have a program-scope gain on some finding.
"""
import difflib
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

# What each quantity sums: the ops' total_ns in the profile (GPU time for
# launches, copies and memsets; the host's time in the call for allocations).
QUANTITIES = {"gpu": ("launch", "memcpy", "memset"), "kernel": ("launch",), "copy": ("memcpy",), "alloc": ("alloc",)}

# The quantity each rule's gain model counts (rules/measure/measure_models.c, the
# rules' "The numbers" in `advise rule CODE`); a variant's saving is measured
# in it, so that time the fix does not touch (the other quantities) adds no
# noise to the comparison.
MODEL_QUANTITY = {
    # MEASURE_LAUNCHES: (N - 1) / N of the GPU time of the kernels launched at the lines
    "PY007": "kernel", "CU010": "kernel",
    # MEASURE_OPTIMIZER: the multi-tensor (foreach) kernels' time x (1 - fused share)
    "PY008": "kernel",
    # MEASURE_FP32_GEMM: the FFMA GEMM kernels' time x (1 - 1 / TF32 ratio)
    "PY009": "kernel",
    # MEASURE_COPY: the pageable copies at the finding's lines, less the pinned estimate (PR008
    # takes the same model); MEASURE_COPY_AVOIDED (PY004): the copies at the lines, less the
    # kernel that makes the data on the GPU instead. Measured as the GPU work (copies, kernels,
    # memsets) at those lines: the sample's other copies vary by 10-30% from run to run, and
    # would drown the saving.
    "PY004": "lines", "PY005": "lines", "CU006": "lines", "PR008": "lines",
    # MEASURE_ALLOC (CU008's model where its lines allocate): the host's time in the allocation calls
    "CU008": "alloc",
    # no gain model yet, evidence about kernels only (a kernel's time, its
    # sectors or wavefronts); PR007's gain is kernel-scope: a model for any of
    # them would count kernel time
    "PY006": "kernel", "CU003": "kernel", "CU004": "kernel", "CU005": "kernel", "PR001": "kernel",
    "PR007": "kernel", "PR010": "kernel", "PR011": "kernel", "PR012": "kernel",
}
# Left out, as no sum of ops measures what their models count: PR002 and
# PR003 estimate the GPU's idle time between its work (launch overhead,
# host-side gaps), PR013, PR014, PY012 and PY013 exposed communication and
# waits between ranks. A variant of one of them is shown with no saving.


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def seconds_of(profile, kinds):
    return sum(op["stats"]["total_ns"] for op in profile["ops"] if op["kind"] in kinds) / 1e9


# Where a sample prints its result, when its last line is not it: the last
# lines of these two are timings (throughput, tokens per second), which any
# change makes differ; their results are the checksum and the token ids.
RESULT_PATTERNS = {"benchmark_matmul": r"^checksum .*$", "generate_text": r"first ids \[[^\]]*\]"}


def result_of(path):
    """The sample's result in its output: the RESULT_PATTERNS match (the last one), else the last line."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return ""
    stem = os.path.basename(path).split(".")[0]
    if stem in RESULT_PATTERNS:
        found = re.findall(RESULT_PATTERNS[stem], text, re.MULTILINE)
        return found[-1] if found else ""
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else ""


def read_run(base):
    """One run: its exit status, wall seconds, seconds per quantity, its result (result_of) and profile path."""
    try:
        with open(base + ".status") as f:
            status, wall = f.read().split()
        with open(base + ".json") as f:
            profile = json.load(f)
    except (OSError, ValueError):
        return None
    return {"status": int(status), "wall": float(wall) / 1e3, "last": result_of(base + ".out"),
            "profile": base + ".json", **{q: seconds_of(profile, kinds) for q, kinds in QUANTITIES.items()}}


def lines_seconds(profile_path, name, lines):
    """GPU time (kernels, copies, memsets) the run made at these lines of the file called name."""
    with open(profile_path) as f:
        profile = json.load(f)
    files = {i for i, e in enumerate(profile.get("files", [])) if os.path.basename(e["path"]) == name}
    sites = {i for i, site in enumerate(profile.get("sites", [])) if site["file"] in files and site["line"] in lines}
    return sum(op["stats"]["total_ns"] for op in profile["ops"]
               if op["kind"] in QUANTITIES["gpu"] and op.get("site") in sites) / 1e9


def mapped_lines(original_source, variant_source, lines):
    """Where the original's lines (1-based) are in the variant: a fix that inserts lines moves the
    lines below it; a line the fix rewrote maps to its replacement's lines."""
    with open(original_source) as f:
        a = f.read().splitlines()
    with open(variant_source) as f:
        b = f.read().splitlines()
    out = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        for line in lines:
            if i1 < line <= i2:
                out |= {line - i1 + j1} if tag == "equal" else set(range(j1 + 1, j2 + 1))
    return out


def runs_of(run_dir, version, stem):
    """Every run of one version of a sample, in the order of their tags (r1, r2, ...)."""
    folder = os.path.join(run_dir, version)
    if not os.path.isdir(folder):
        return []
    tags = sorted((f[len(stem) + 1:-len(".status")] for f in os.listdir(folder)
                   if f.startswith(stem + ".") and f.endswith(".status")), key=lambda t: (len(t), t))
    runs = [read_run(os.path.join(folder, f"{stem}.{tag}")) for tag in tags]
    if not tags and os.path.exists(os.path.join(folder, stem + ".status")):
        runs = [read_run(os.path.join(folder, stem))]
    return [r for r in runs if r]


def numbers(line):
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", line)]


def same_result(a, b, tol):
    na, nb = numbers(a), numbers(b)
    if len(na) != len(nb):
        return False
    return all(abs(x - y) <= tol * max(abs(x), abs(y), 1e-12) for x, y in zip(na, nb))


def same_results(stem, original, fixed):
    """The fixed version exited 0 and printed the original's result, in every run (runs paired in order)."""
    tol = 1e-2 if stem == "train_classifier" else 1e-3
    return all(a["status"] == 0 and b["status"] == 0 and same_result(a["last"], b["last"], tol)
               for a, b in zip(original, fixed))


def load_findings(path):
    try:
        with open(path) as f:
            return json.load(f)["findings"]
    except (OSError, ValueError, KeyError):
        return []


def line_of(finding):
    return finding["range"]["start"]["line"]


def program_gain(finding):
    gain = finding.get("gain")
    return gain["seconds"] if gain and gain.get("scope") == "program" else None


def applied_rules(findings, after_fix):
    """The rules with a fixable finding that is gone after fixing (by rule and line: a fix that
    inserts lines moves the findings below it, so one left unfixed there can read as gone, and
    prepare-evaluation.sh drops a variant that comes out the same as the original)."""
    remaining = {(f["code"], line_of(f)) for f in after_fix}
    return sorted({f["code"] for f in findings if f.get("fixes") and (f["code"], line_of(f)) not in remaining})


def rules_to_isolate(findings, after_fix):
    """The rules that get a variant of their own: applied, and with a program-scope gain to check."""
    gained = {f["code"] for f in findings if program_gain(f) is not None}
    return [r for r in applied_rules(findings, after_fix) if r in gained]


def rule_estimate(findings, rule):
    """The rule's program-scope gains, summed over its findings that carry fixes: distinct findings
    of one rule sit at distinct sites, so their gains add up (gains of different rules may count the
    same time and are never added)."""
    return sum(program_gain(f) or 0.0 for f in findings if f["code"] == rule and f.get("fixes"))


def estimate_at(findings, rule, lines):
    """The rule's program-scope gains on its findings at these lines (those whose fixes the variant
    applied), whether or not this profile would have the fix offered: a fix can be withheld where the
    gain is judged too small (PR008 against the cost of pinning), but the variant applied it, and
    its gain is what advise estimates that fix saves."""
    return sum(program_gain(f) or 0.0 for f in findings if f["code"] == rule and line_of(f) in lines)


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def fresh_findings(advise, source, profile_path):
    """advise's findings on the original source with one of this run's profiles of it, or None.
    A profile names its files relative to the directory advise-profile ran in (the repository root
    on the GPU machine: .carry/eval/original/NAME); the source is copied to that relative path in a
    scratch folder, where advise matches it to the profile's file (and finds its sha256 fresh)."""
    with open(profile_path) as f:
        files = json.load(f).get("files", [])
    digest = sha256_of(source)
    paths = [e["path"] for e in files if e.get("sha256") == digest] or \
            [e["path"] for e in files if os.path.basename(e["path"]) == os.path.basename(source)]
    if not paths:
        return None
    with tempfile.TemporaryDirectory() as scratch:
        placed = os.path.join(scratch, paths[0])
        os.makedirs(os.path.dirname(placed), exist_ok=True)
        shutil.copyfile(source, placed)
        r = subprocess.run([advise, "check", "--format", "json", "--no-config", "--profile",
                            os.path.abspath(profile_path), paths[0]], cwd=scratch, capture_output=True, text=True)
    if r.returncode > 1:
        sys.exit(f"evaluate_table: {advise} check on {profile_path} failed: {r.stderr.strip()}")
    return json.loads(r.stdout)["findings"]


def ms(seconds):
    return "-" if seconds is None else f"{seconds * 1e3:.3f} ms"


def percent(x):
    return "-" if x is None else f"{x * 100:.1f}%"


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def geomean(xs):
    xs = [x for x in xs if x > 0 and not math.isnan(x)]
    return (math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")), len(xs)


def runs_note(n):
    return f"({n} run{'s' if n > 1 else ''})"


def all_fixes_table(eval_dir, run_dir, names):
    """The first table; returns the lines, the GPU and kernel speedups and the old-way errors."""
    rows, speedups, kernel_speedups, errors = [], [], [], []
    for name in names:
        stem = os.path.splitext(name)[0]
        findings = load_findings(os.path.join(eval_dir, "advised", name + ".findings.json"))
        after_fix = load_findings(os.path.join(eval_dir, "advised", name + ".fix.json"))
        applied = applied_rules(findings, after_fix)
        # the old estimate: the largest single program-scope gain of an applied rule
        gains = [program_gain(f) for f in findings if f["code"] in applied and program_gain(f) is not None]
        est = max(gains) if gains else 0.0
        runs = {v: runs_of(run_dir, v, stem) for v in ("original", "advised")}
        if not runs["original"] or not runs["advised"]:
            rows.append(f"| {name} | {', '.join(applied) or '-'} | - | run failed | | | | | |")
            continue
        med = {v: {q: median([r[q] for r in runs[v]]) for q in ("gpu", "kernel", "wall")} for v in runs}
        g0, g1 = med["original"]["gpu"], med["advised"]["gpu"]
        k0, k1 = med["original"]["kernel"], med["advised"]["kernel"]
        w0, w1 = med["original"]["wall"], med["advised"]["wall"]
        gpu_speedup = g0 / g1 if g1 > 0 else float("nan")
        speedups.append(gpu_speedup)
        if k1 > 0:
            kernel_speedups.append(k0 / k1)
        if est > 0 and g0 - g1 > 0:
            errors.append(abs(est - (g0 - g1)) / (g0 - g1))
        same = same_results(stem, runs["original"], runs["advised"])
        reps = min(len(runs["original"]), len(runs["advised"]))
        rows.append(f"| {name} | {', '.join(applied) or '-'} | {est * 1e3:.3f} ms | {g0 * 1e3:.3f} -> {g1 * 1e3:.3f} ms "
                    f"| {gpu_speedup:.2f}x | {k0 * 1e3:.3f} -> {k1 * 1e3:.3f} ms | {w0:.2f} -> {w1:.2f} s "
                    f"| {w0 / w1:.2f}x | {'yes' if same else 'NO'} {runs_note(reps)} |")
    lines = ["| sample | rules applied | est. gain (largest) | GPU time (median) | GPU speedup | kernel time | wall "
             "| wall speedup | same result |", "|---|---|---|---|---|---|---|---|---|"] + rows
    return lines, speedups, kernel_speedups, errors


def variant_row(eval_dir, run_dir, name, rule, advise, fresh_cache):
    """One row of the second table: (line, error or None, why it is left out or None)."""
    stem = os.path.splitext(name)[0]
    # the only rule applied: its variant is the advised version (prepare-evaluation.sh leaves a marker)
    version = "advised" if os.path.exists(variant_marker(eval_dir, rule, name)) else "only-" + rule
    original, variant = runs_of(run_dir, "original", stem), runs_of(run_dir, version, stem)
    quantity = MODEL_QUANTITY.get(rule)
    recorded_findings = load_findings(os.path.join(eval_dir, "advised", name + ".findings.json"))
    recorded = rule_estimate(recorded_findings, rule)
    fixed_lines = {line_of(f) for f in recorded_findings if f["code"] == rule and f.get("fixes")}
    if not original or not variant:
        return f"| {name} | {rule} | {quantity or '-'} | - | {ms(recorded)} | run failed | | | |", None, "run failed"
    fresh = None
    if advise:
        source = os.path.join(eval_dir, "original", name)
        per_run = []
        for run in original:
            if run["profile"] not in fresh_cache:
                fresh_cache[run["profile"]] = fresh_findings(advise, source, run["profile"])
            if fresh_cache[run["profile"]] is not None:
                per_run.append(estimate_at(fresh_cache[run["profile"]], rule, fixed_lines))
        fresh = median(per_run) if per_run else None
    estimate = fresh if fresh is not None else recorded
    same = "yes" if same_results(stem, original, variant) else "NO"
    same += " " + runs_note(min(len(original), len(variant)))
    if not quantity:
        return (f"| {name} | {rule} | - | {ms(fresh)} | {ms(recorded)} | no quantity for its model | | | {same} |",
                None, "no quantity")
    if quantity == "lines":
        lines = fixed_lines
        moved = mapped_lines(os.path.join(eval_dir, "original", name), os.path.join(eval_dir, version, name), lines)
        for r in original:
            r["lines"] = lines_seconds(r["profile"], name, lines)
        for r in variant:
            r["lines"] = lines_seconds(r["profile"], name, moved)
        quantity = f"lines {','.join(str(l) for l in sorted(lines))}"
        key = "lines"
    else:
        key = quantity
    saved = median([r[key] for r in original]) - median([r[key] for r in variant])
    floor = 2 * (max(r[key] for r in original) - min(r[key] for r in original))
    error = abs(estimate - saved) / saved if saved > 0 else None
    left_out = "below noise" if estimate < floor else None if saved > 0 else "no saving"
    shown = percent(error) + (f" ({left_out})" if left_out else "")
    line = (f"| {name} | {rule} | {quantity} | {ms(fresh)} | {ms(recorded)} | {ms(saved)} | {ms(floor)} "
            f"| {shown} | {same} |")
    return line, None if left_out else error, left_out


def variant_marker(eval_dir, rule, name):
    """prepare-evaluation.sh's note that only-RULE of a sample is the advised version itself."""
    return os.path.join(eval_dir, "only-" + rule, name + ".same-as-advised")


def one_fix_table(eval_dir, run_dir, names, advise):
    """The second table; returns its lines and the errors that count."""
    variants = sorted(d[len("only-"):] for d in os.listdir(eval_dir) if d.startswith("only-"))
    rows, errors, left_out, fresh_cache = [], [], {}, {}
    for name in names:
        for rule in variants:
            if not (os.path.exists(os.path.join(eval_dir, "only-" + rule, name)) or
                    os.path.exists(variant_marker(eval_dir, rule, name))):
                continue
            line, error, why = variant_row(eval_dir, run_dir, name, rule, advise, fresh_cache)
            rows.append(line)
            if error is not None:
                errors.append(error)
            elif why:
                left_out[why] = left_out.get(why, 0) + 1
    lines = ["| sample | rule | measured in | estimate (this run's profiles, median) | estimate (recorded profile) "
             "| saved (median) | noise floor (2x spread) | error | same result |",
             "|---|---|---|---|---|---|---|---|---|"] + rows
    source = ("this run's own profiles of the originals" if advise else
              "the recorded profiles (no --advise given: run this table here with --advise build/advise "
              "for estimates from this run's profiles)")
    lines.append(f"\none fix at a time: mean |estimated - measured| / measured {percent(mean(errors)) if errors else '-'} "
                 f"over {len(errors)} variant{'s' if len(errors) != 1 else ''}, estimates from {source}")
    lines.append("left out of the mean: " + (", ".join(f"{n} {why}" for why, n in sorted(left_out.items())) or "none") +
                 "; below noise: the estimate is under twice the spread (max - min) of the original's runs in the "
                 "quantity measured, so the saving cannot be told from noise (shown, not counted)")
    return lines, errors


def print_tables(eval_dir, run_dir, advise):
    names = sorted(os.listdir(os.path.join(eval_dir, "original")))
    lines, speedups, kernel_speedups, old_errors = all_fixes_table(eval_dir, run_dir, names)
    print("\n".join(lines))
    geo, n = geomean(speedups)
    kgeo, kn = geomean(kernel_speedups)
    print(f"\ngeometric-mean GPU-time speedup: {geo:.2f}x over {n} samples (kernel time alone: {kgeo:.2f}x over {kn})")
    print(f"all fixes together, the old comparison (largest single estimate, recorded profile, against the GPU "
          f"time all fixes saved): mean error {percent(mean(old_errors)) if old_errors else '-'} "
          f"over {len(old_errors)} samples with both\n")
    lines, _ = one_fix_table(eval_dir, run_dir, names, advise)
    print("\n".join(lines))


def main(argv):
    if argv[:1] == ["--rules-to-isolate"] and len(argv) == 3:
        print(" ".join(rules_to_isolate(load_findings(argv[1]), load_findings(argv[2]))))
        return 0
    advise = None
    if argv[:1] == ["--advise"] and len(argv) > 1:
        advise, argv = os.path.abspath(argv[1]), argv[2:]
    if len(argv) != 2:
        print(__doc__)
        return 2
    print_tables(argv[0], argv[1], advise)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
