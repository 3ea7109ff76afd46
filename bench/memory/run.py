"""`advise profile --memory` on the H200: is it right, what does following
its advice buy, and what does recording cost. One run, one GPU:

    python3 bench/memory/run.py --profile BUNDLE/advise-profile --out DIR [--reps 3]

For each workload of train.py (leak, act) and probe.py (probe):
  - agreement: a --memory profile of a run that stops at its peak
    (--selfcheck), against torch.cuda.memory_allocated() and the live
    bytes by line in PyTorch's own snapshot taken at that moment (not for
    probe, whose peak is inside a forward, not after it);
  - the advice's input: a --memory profile of the "before" run
    (profile-before-MODEL.json; `advise check --profile` reads it);
  - before/after the advice: the peak (max_memory_allocated) at one batch
    size, and the largest batch that fits under a --cap-gib memory cap
    (bisection, one process per try);
  - overhead: the median step time, plain against --memory, alternated.
Prints a table last; writes DIR/memory-bench.json and the profiles."""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def train(args, model, variant, batch, steps, extra=(), profile=None):
    script = "probe.py" if model == "probe" else "train.py"
    cmd = [sys.executable, os.path.join(HERE, script), "--model", model, "--variant", variant,
           "--batch", str(batch), "--steps", str(steps)] + list(extra)
    if profile:
        cmd = [args.profile, "--memory", "-o", profile, "--"] + cmd
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[7:])
            r["stderr"] = p.stderr[-2000:]
            return r
    return {"error": (p.stdout + p.stderr)[-1500:], "rc": p.returncode}


def largest_batch(args, model, variant, lo, hi):
    """Largest batch in [lo, hi) that trains --fit-steps steps under the cap (bisection)."""
    fits = lambda b: "error" not in train(args, model, variant, b, args.fit_steps, ["--cap-gib", str(args.cap_gib)])
    if not fits(lo):
        return 0
    while hi - lo > max(8, lo // 16):
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def agreement(args, model, out):
    path = os.path.join(out, "memory-%s.json" % model)
    r = train(args, model, "before", args.batch, args.steps, ["--selfcheck"], profile=path)
    if "error" in r:
        return {"error": r["error"]}
    with open(path) as f:
        prof = json.load(f)
    mem = prof["memory"][0]
    sites = prof["sites"]
    files = prof["files"]
    ours = {}
    for line in prof["memory_lines"]:
        if line["kind"] != "peak":
            continue
        key = "?"
        if line["site"] is not None:
            s = sites[line["site"]]
            key = "%s:%d" % (os.path.basename(files[s["file"]]["path"]), s["line"])
        ours[key] = ours.get(key, 0) + line["bytes"]
    theirs = r["selfcheck"]["lines"]
    keys = sorted(set(ours) | set(theirs), key=lambda k: -max(ours.get(k, 0), theirs.get(k, 0)))
    worst = max((abs(ours.get(k, 0) - theirs.get(k, 0)) / float(max(theirs.get(k, 0), 1)) for k in keys
                 if max(ours.get(k, 0), theirs.get(k, 0)) >= 0.01 * r["selfcheck"]["allocated"]), default=0.0)
    return {"peak_advise": mem["peak_allocated"], "max_allocated_advise": mem["max_allocated"],
            "allocated_torch": r["selfcheck"]["allocated"],
            "peak_error": abs(mem["peak_allocated"] - r["selfcheck"]["allocated"]) / float(r["selfcheck"]["allocated"]),
            "worst_line_error": worst,
            "lines": [[k, ours.get(k, 0), theirs.get(k, 0)] for k in keys[:12]],
            "window_complete": mem["window_complete"], "events": mem["events"],
            "growth": [l for l in prof["memory_lines"] if l["kind"] == "growth"][:5]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--fit-steps", type=int, default=30)
    ap.add_argument("--cap-gib", type=float, default=8)
    ap.add_argument("--models", default="leak,act")
    ap.add_argument("--skip-fit", action="store_true")
    ap.add_argument("--fit-only", action="store_true", help="only the largest batch that fits")
    args = ap.parse_args()
    args.profile = os.path.abspath(args.profile)
    os.makedirs(args.out, exist_ok=True)
    import torch
    gpu = torch.cuda.get_device_name(0)
    results = {"gpu": gpu, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "torch": torch.__version__,
               "python": sys.version.split()[0], "models": {}}
    for model in args.models.split(","):
        res = results["models"][model] = {}
        if args.fit_only:
            res["fits"] = {v: largest_batch(args, model, v, 64, 1 << 16) for v in ("before", "after")}
            print(json.dumps({model: res}), flush=True)
            continue
        res["agreement"] = agreement(args, model, args.out) if model != "probe" else {}
        r = train(args, model, "before", args.batch, args.steps,
                  profile=os.path.join(args.out, "profile-before-%s.json" % model))
        res["profiled_before"] = {"peak": r.get("peak"), "error": r.get("error")}
        for variant in ("before", "after"):
            r = train(args, model, variant, args.batch, args.steps)
            res[variant] = {"peak": r.get("peak"), "step_ms": r.get("step_ms"), "error": r.get("error")}
            if not args.skip_fit:
                res[variant]["fits"] = largest_batch(args, model, variant, 64, 1 << 16)
        plain, memory = [], []
        for rep in range(args.reps):
            order = [False, True] if rep % 2 == 0 else [True, False]
            for with_memory in order:
                prof = os.path.join(args.out, "overhead-%s-%d.json" % (model, rep)) if with_memory else None
                r = train(args, model, "after", args.batch, args.steps, profile=prof)
                (memory if with_memory else plain).append(r.get("step_ms"))
        res["overhead"] = {"plain_ms": plain, "memory_ms": memory}
        print(json.dumps({model: res}), flush=True)
    name = "memory-fit.json" if args.fit_only else "memory-bench.json"
    with open(os.path.join(args.out, name), "w") as f:
        json.dump(results, f, indent=1)
    if args.fit_only:
        print("\n%s, %s: largest batch that trains %d steps under %.0f GiB" % (gpu, results["date"], args.fit_steps, args.cap_gib))
        for model, res in results["models"].items():
            print("| %s | before %d | after %d |" % (model, res["fits"]["before"], res["fits"]["after"]))
        return
    print("\n%s, %s, PyTorch %s" % (gpu, results["date"], results["torch"]))
    print("| workload | peak before | peak after | fits before | fits after | advise peak vs torch | worst line | step plain | step --memory |")
    print("|---|---|---|---|---|---|---|---|---|")
    G = float(1 << 30)
    for model, res in results["models"].items():
        a = res["agreement"]
        pm = [x for x in res["overhead"]["plain_ms"] if x]
        mm = [x for x in res["overhead"]["memory_ms"] if x]
        print("| %s | %.2f GiB | %.2f GiB | %s | %s | %s | %s | %s | %s |" % (
            model, (res["before"]["peak"] or 0) / G, (res["after"]["peak"] or 0) / G,
            res["before"].get("fits"), res["after"].get("fits"),
            "%.3f%%" % (100 * a["peak_error"]) if "peak_error" in a else a.get("error", "?")[-200:],
            "%.3f%%" % (100 * a["worst_line_error"]) if "worst_line_error" in a else "",
            "%.2f" % statistics.median(pm) if pm else "?", "%.2f (%+.1f%%)" % (statistics.median(mm), 100 * (statistics.median(mm) / statistics.median(pm) - 1)) if mm and pm else "?"))


if __name__ == "__main__":
    main()
