#!/usr/bin/env python3
"""A GPU-free check of the evaluation's here-side steps, end to end:
scripts/prepare-evaluation.sh on the training sample, then
tests/gpu/evaluate_table.py on a synthetic run made from its recorded
profile, whose figures this script knows.

    python3 tests/gpu/test_evaluate_table.py ADVISE

The synthetic run (three runs per version, as the GPU evaluation does):
- original: the recorded profile with its file renamed as the GPU run names
  it (.carry/eval/original/train_classifier.py) and every kernel 10% longer
  (+-1% between runs), copies x1.2/1.0/0.9 between runs; so PY008's
  estimate from this run's profiles (the median run's) is 1.1x the recorded
  one;
- only-PY008: the foreach optimizer kernels at 30% of the original's time:
  a saving well above the noise floor, the one row that counts;
- no only-PY005: its batch copies (64 KiB) ran at the pinned speed on the
  GPU, so PY005 claims no gain and gets no variant; the copies at 70% in
  copies' spread, "below noise";
- only-PY007: the kernels of its line at half, and the run exits 1 (with
  the same last line): below noise and not the same result;
- advised: PY008's and PY005's changes together.
Exits 1, naming each figure that is not what it should be.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME, STEM = "train_classifier.py", "train_classifier"
RESULT = "final: train_loss=0.1234 val_acc=0.950 device=cuda"
# per run: the kernels' and the copies' factors against the recorded profile
ORIGINAL_RUNS = [(1.11, 1.2), (1.10, 1.0), (1.09, 0.9)]  # the median run second
PY007_LINE = 51

failures = []


def expect(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def scale_stats(stats, factor):
    for key in ("total_ns", "min_ns", "median_ns", "max_ns"):
        stats[key] = round(stats[key] * factor)


def scaled(profile, kernel_factor, copy_factor, only=None):
    """A copy of the profile with the launches' and copies' times scaled (those that only() selects;
    all of them, and then the kernels' own totals too, which some gain models read, by default)."""
    p = json.loads(json.dumps(profile))
    for op in p["ops"]:
        if only is None or only(op):
            scale_stats(op["stats"], {"launch": kernel_factor, "memcpy": copy_factor}.get(op["kind"], 1.0))
    if only is None:
        for kernel in p["kernels"]:
            scale_stats(kernel["stats"], kernel_factor)
    return p


def seconds(profile, kind):
    return sum(op["stats"]["total_ns"] for op in profile["ops"] if op["kind"] == kind) / 1e9


def median3(xs):
    return sorted(xs)[1]


def write_run(run_dir, version, rep, profile, status=0, wall_ms=11000, result=RESULT):
    folder = os.path.join(run_dir, version)
    os.makedirs(folder, exist_ok=True)
    base = os.path.join(folder, f"{STEM}.r{rep}")
    with open(base + ".json", "w") as f:
        json.dump(profile, f)
    with open(base + ".status", "w") as f:
        f.write(f"{status} {wall_ms}\n")
    with open(base + ".out", "w") as f:
        f.write(f"epoch 1: mean loss 0.2\n{result}\n")


def prepare(advise, eval_dir):
    r = subprocess.run(["sh", "scripts/prepare-evaluation.sh", eval_dir, "samples/python/" + NAME], cwd=ROOT,
                       env={**os.environ, "ADVISE": advise}, capture_output=True, text=True)
    expect("prepare-evaluation.sh exit status", r.returncode, 0)
    for rule, made in (("PY005", False), ("PY007", True), ("PY008", True)):
        expect(f"only-{rule} variant made", os.path.exists(os.path.join(eval_dir, "only-" + rule, NAME)), made)
    if r.returncode:
        sys.exit(f"prepare-evaluation.sh failed:\n{r.stdout}{r.stderr}")


def recorded_gains(eval_dir):
    """(rule, seconds) of each program-scope gain on a fixable finding, from the recorded profile."""
    with open(os.path.join(eval_dir, "advised", NAME + ".findings.json")) as f:
        findings = json.load(f)["findings"]
    return [(f["code"], f["gain"]["seconds"]) for f in findings
            if f.get("fixes") and f.get("gain") and f["gain"]["scope"] == "program"]


def at_lines(profile, lines):
    """Seconds of kernels, copies and memsets made at these lines of the sample."""
    sites = {i for i, site in enumerate(profile["sites"]) if site["line"] in lines}
    return sum(op["stats"]["total_ns"] for op in profile["ops"]
               if op["kind"] in ("launch", "memcpy", "memset") and op.get("site") in sites) / 1e9


def recorded_estimate(eval_dir, rule):
    return sum(gain for code, gain in recorded_gains(eval_dir) if code == rule)


def make_run(run_dir):
    """Writes the synthetic run; returns each version's profiles."""
    with open(os.path.join(ROOT, "samples", "profiles", STEM + ".json")) as f:
        recorded = json.load(f)
    for entry in recorded["files"]:
        entry["path"] = ".carry/eval/original/" + NAME
    kernels = recorded["kernels"]
    foreach = lambda op: op["kind"] == "launch" and "multi_tensor_apply_kernel" in kernels[op["kernel"]]["name"]
    py007 = lambda op: (op["kind"] == "launch" and op.get("site") is not None
                       and recorded["sites"][op["site"]]["line"] == PY007_LINE)
    versions = {v: [] for v in ("original", "advised", "only-PY007", "only-PY008")}
    for rep, (k, c) in enumerate(ORIGINAL_RUNS, 1):
        original = scaled(recorded, k, c)
        versions["original"].append(original)
        versions["only-PY008"].append(scaled(original, 0.3, 1.0, foreach))
        versions["only-PY007"].append(scaled(original, 0.5, 1.0, py007))
        versions["advised"].append(scaled(scaled(original, 0.3, 1.0, foreach), 1.0, 0.7))
        write_run(run_dir, "original", rep, original, wall_ms=11000 + 100 * rep)
        write_run(run_dir, "only-PY008", rep, versions["only-PY008"][-1], wall_ms=10500)
        write_run(run_dir, "only-PY007", rep, versions["only-PY007"][-1], status=1)
        write_run(run_dir, "advised", rep, versions["advised"][-1], wall_ms=10000)
    return versions


def table(advise, eval_dir, run_dir, with_fresh):
    args = ["--advise", advise] if with_fresh else []
    r = subprocess.run([sys.executable, "tests/gpu/evaluate_table.py", *args, eval_dir, run_dir], cwd=ROOT,
                       capture_output=True, text=True)
    expect("evaluate_table.py exit status", r.returncode, 0)
    return r.stdout


def row(out, *first_cells):
    """The cells of the table row that begins with these cells."""
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if cells[:len(first_cells)] == list(first_cells):
            return cells
    failures.append(f"no row {first_cells} in:\n{out}")
    return None


def ms(s):
    return f"{s * 1e3:.3f} ms"


def check_all_fixes(out, v, eval_dir):
    cells = row(out, NAME)
    if not cells:
        return
    g0, g1 = (median3([seconds(p, "launch") + seconds(p, "memcpy") for p in v[x]]) for x in ("original", "advised"))
    k0, k1 = (median3([seconds(p, "launch") for p in v[x]]) for x in ("original", "advised"))
    expect("all fixes: GPU time", cells[3], f"{g0 * 1e3:.3f} -> {g1 * 1e3:.3f} ms")
    expect("all fixes: GPU speedup", cells[4], f"{g0 / g1:.2f}x")
    expect("all fixes: kernel time", cells[5], f"{k0 * 1e3:.3f} -> {k1 * 1e3:.3f} ms")
    expect("all fixes: wall", cells[6], "11.20 -> 10.00 s")
    expect("all fixes: same result", cells[8], "yes (3 runs)")
    # the old comparison: the largest single gain of an applied rule against the GPU time all fixes saved
    largest = max(gain for rule, gain in recorded_gains(eval_dir) if rule in cells[1].split(", "))
    old_error = abs(largest - (g0 - g1)) / (g0 - g1)
    expect("all fixes: largest estimate", cells[2], ms(largest))
    expect("old comparison line", f"saved): mean error {old_error * 100:.1f}% over 1 samples" in out, True)


def check_one_fix(out, v, eval_dir, with_fresh):
    k0 = [seconds(p, "launch") for p in v["original"]]
    c0 = [seconds(p, "memcpy") for p in v["original"]]
    # PY008: counted
    rec = recorded_estimate(eval_dir, "PY008")
    est = 1.10 * rec if with_fresh else rec
    saved = median3(k0) - median3([seconds(p, "launch") for p in v["only-PY008"]])
    error = abs(est - saved) / saved
    cells = row(out, NAME, "PY008")
    if cells:
        expect("PY008: quantity", cells[2], "kernel")
        expect("PY008: estimate from this run's profiles", cells[3], ms(est) if with_fresh else "-")
        expect("PY008: recorded estimate", cells[4], ms(rec))
        expect("PY008: saved", cells[5], ms(saved))
        expect("PY008: noise floor", cells[6], ms(2 * (max(k0) - min(k0))))
        expect("PY008: error", cells[7], f"{error * 100:.1f}%")
        expect("PY008: same result", cells[8], "yes (3 runs)")
    # PY005: no gain claimed, so no variant and no row
    expect("PY005: no row", any(line.startswith(f"| {NAME} | PY005 |") for line in out.splitlines()), False)
    # PY007: below noise, and a failed run is not the same result
    cells = row(out, NAME, "PY007")
    if cells:
        expect("PY007: below noise", cells[7].endswith("(below noise)"), True)
        expect("PY007: same result", cells[8], "NO (3 runs)")
    expect("mean error line", f"mean |estimated - measured| / measured {error * 100:.1f}% over 1 variant," in out, True)
    expect("left-out line", "left out of the mean: 1 below noise" in out, True)


def check_rule_estimate():
    """A rule's estimate adds its fixable findings' program-scope gains, nothing else."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
    from evaluate_table import rule_estimate
    finding = lambda code, seconds, scope="program", fixes=True: {
        "code": code, "gain": {"seconds": seconds, "scope": scope}, "fixes": [{}] if fixes else []}
    findings = [finding("PY005", 1.0), finding("PY005", 2.0), finding("PY005", 4.0, fixes=False),
                finding("PY005", 8.0, scope="kernel"), finding("PY008", 16.0), {"code": "PY005", "fixes": [{}]}]
    expect("rule_estimate of two fixable program gains", rule_estimate(findings, "PY005"), 3.0)
    from evaluate_table import estimate_at
    at = lambda code, seconds, line, fixes=True: {**finding(code, seconds, fixes=fixes),
                                                  "range": {"start": {"line": line}}}
    fresh = [at("PR008", 2.0, 103, fixes=False), at("PR008", 5.0, 140), at("PY004", 7.0, 103)]
    expect("estimate_at counts a fixed line's gain even where this profile withholds the fix",
           estimate_at(fresh, "PR008", {103}), 2.0)


def check_lines_seconds():
    """The GPU work at some lines of a profile: the ops at those lines' sites, nothing else."""
    from evaluate_table import lines_seconds
    path = os.path.join(ROOT, "samples", "profiles", STEM + ".json")
    with open(path) as f:
        profile = json.load(f)
    want = at_lines(profile, {104, 105})
    expect("lines_seconds at the batch copies", lines_seconds(path, NAME, {104, 105}), want)
    expect("the batch copies' lines did GPU work", want > 0, True)
    expect("lines_seconds of another file's name", lines_seconds(path, "other.py", {104, 105}), 0)


def check_result_of():
    """A sample's result: its checksum or token ids where its last line is a timing, else the last line."""
    from evaluate_table import result_of
    tmp = tempfile.mkdtemp()
    try:
        outputs = {"benchmark_matmul.r1.out": ("n= 4096  matmul 0.018 ms\nchecksum 4.2413e+05\n"
                                               "final: best mlp block throughput 48.8 TFLOP/s\n", "checksum 4.2413e+05"),
                   "generate_text.r2.out": ("final: generated 200 tokens in 1.075 s (186.1 tok/s) on cuda, first ids "
                                            "[76, 1872]\n", "first ids [76, 1872]"),
                   "train_classifier.r1.out": ("epoch 1\nfinal: val acc 0.93\n\n", "final: val acc 0.93"),
                   "benchmark_matmul.r2.out": ("crashed before its checksum\n", "")}
        for name, (text, want) in outputs.items():
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
            expect(f"result_of {name}", result_of(os.path.join(tmp, name)), want)
        expect("result_of a missing file", result_of(os.path.join(tmp, "none.out")), "")
    finally:
        shutil.rmtree(tmp)


def check_mapped_lines():
    """A fix that inserts lines moves the lines below it; a rewritten line maps to its replacement."""
    from evaluate_table import mapped_lines
    tmp = tempfile.mkdtemp()
    try:
        a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
        with open(a, "w") as f:
            f.write("one\ntwo\ncopy(v)\nfour\nreturn\n")
        with open(b, "w") as f:
            f.write("one\npin(v)\npinned\ntwo\ncopy(v)\nfour\nunpin(v)\nreturn\n")
        expect("mapped_lines after an insertion", mapped_lines(a, b, {3, 5}), {5, 8})
        with open(b, "w") as f:
            f.write("one\ntwo\ncopy(v, fast)\nfour\nreturn\n")
        expect("mapped_lines of a rewritten line", mapped_lines(a, b, {3}), {3})
    finally:
        shutil.rmtree(tmp)


def main(argv):
    if len(argv) != 1:
        print(__doc__)
        return 2
    advise = os.path.abspath(argv[0])
    check_rule_estimate()
    check_mapped_lines()
    check_result_of()
    check_lines_seconds()
    tmp = tempfile.mkdtemp()
    try:
        eval_dir, run_dir = os.path.join(tmp, "eval"), os.path.join(tmp, "run")
        prepare(advise, eval_dir)
        versions = make_run(run_dir)
        for with_fresh in (True, False):
            out = table(advise, eval_dir, run_dir, with_fresh)
            check_all_fixes(out, versions, eval_dir)
            check_one_fix(out, versions, eval_dir, with_fresh)
    finally:
        shutil.rmtree(tmp)
    for f in failures:
        print("WRONG", f)
    print(f"{len(failures)} wrong figures" if failures else "evaluate_table: all figures as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
