"""The profiler's overhead per training step, beside torch.profiler, in one
run on one GPU.

    python3 bench/overhead/run.py --profile BUNDLE/advise-profile [--reps 3]
        [--models gpt-small,tlm-small,gpt2] [--variants plain,advise,...]
        [--old-profile OLD/advise-profile] [--json OUT.json]

Each model of models.py is trained by step.py once per variant and
repetition, the variants interleaved (rotated each repetition), and the
median step time of each variant is printed with its overhead against the
plain run and the spread of its repetitions. Variants:

  plain            no profiler
  advise           advise-profile as shipped (after 8192 launches traced in full, one window in 8 traced)
  trace-all        advise tracing every launch (ADVISE_PROFILE_TRACE=all), as before sampling
  advise-old       --old-profile, another build (the one before a change)
  setprofile       advise with the pre-3.12 Python hook (PyEval_SetProfile)
  no-python        advise without Python call sites (CUPTI callbacks only)
  activity-only    advise with ADVISE_PROFILE_SITES=0 (no callbacks, no sites)
  kernels-only     activity-only, and of the activity kinds only kernels (ADVISE_PROFILE_ACTIVITY=kernels)
  torch.profiler   torch.profiler, CPU+CUDA activities, with_stack=True
  act:KINDS        no callbacks, only the activity kinds listed (kernels,memcpy,memset,sync,overhead; none)
  cb:KINDS         callbacks and call sites, and only the activity kinds listed
  launch:DOMAIN    advise watching launches in one API domain only (runtime or driver)
  sample:K         advise tracing one window in K after the prefix (ADVISE_PROFILE_TRACE=sample:K)
  steps:N          advise profile --steps N: the first N optimizer steps recorded, then the profiler
                   detaches and the run goes on without it

--alternate K runs the advise variants that have Python call sites (advise,
trace-all, setprofile, sample:, launch:, cb:) with ADVISE_PROFILE_ALTERNATE=K:
the profiler sleeps through every other block of K optimizer steps, and the
table adds each such variant's overhead inside its own processes (median
awake group over median dormant group, per run; the median over runs). Every
variant then times groups of K steps after the same 12-block warm-up (with
K = 10 its 6 awake blocks hold the first 8,192 launches, traced in full, on
these models), and an alternated variant's ms/step is its awake groups' median.
Processes of one model differ from each other by up to 45% on the H200
machines, far more than the overhead: the in-process figure is free of that
spread. Left on while dormant: CUPTI's subscription and the Python hook
(their cost is in neither side).

--cpus LIST pins every run to those cores (taskset -c LIST): on a shared
16-core machine, runs that the scheduler moves between cores differ by up to
20%, more than the overhead being measured.
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ALL = ["plain", "advise", "trace-all", "advise-old", "setprofile", "no-python", "activity-only", "kernels-only", "torch.profiler"]


def command(variant, args, model, out):
    step = [sys.executable, os.path.join(HERE, "step.py"), "--model", model, "--steps", str(args.steps)]
    env = {}
    if variant == "plain":
        return step, env
    if variant == "torch.profiler":
        return step + ["--torch-profiler"], env
    binary = args.old_profile if variant == "advise-old" else args.profile
    if variant.startswith("act:") or variant.startswith("cb:"):
        # act:KINDS: no callbacks, only these activity kinds; cb:KINDS: callbacks and sites too
        kinds = variant.split(":", 1)[1]
        env["ADVISE_PROFILE_ACTIVITY"] = kinds if kinds != "none" else "device"
        if variant.startswith("act:"):
            env["ADVISE_PROFILE_SITES"] = "0"
    elif variant.startswith("launch:"):
        env["ADVISE_PROFILE_LAUNCH_DOMAIN"] = variant.split(":", 1)[1]
    elif variant.startswith("sample:"):
        env["ADVISE_PROFILE_TRACE"] = variant
    elif variant == "trace-all":
        env["ADVISE_PROFILE_TRACE"] = "all"
    elif variant == "setprofile":
        env["ADVISE_PROFILE_PYTHON_HOOK"] = "setprofile"
    elif variant == "no-python":
        env["ADVISE_PROFILE_PYTHON_HOOK"] = "off"
    elif variant == "activity-only":
        env["ADVISE_PROFILE_SITES"] = "0"
    elif variant == "kernels-only":
        env["ADVISE_PROFILE_SITES"] = "0"
        env["ADVISE_PROFILE_ACTIVITY"] = "kernels"
    elif variant.startswith("steps:"):
        return [binary, "-o", out, "--steps", variant.split(":", 1)[1], "--"] + step, env
    return [binary, "-o", out, "--"] + step, env


def alternates(variant, old_alternates=False):
    """Whether the variant registers the optimizer step hook that toggles the
    profiler (profiler/inject/python_sites.c): only with Python call sites on,
    and only in this build, or in the --old-profile build when
    --old-alternates says it has the hook too (ADVISE_PROFILE_ALTERNATE,
    2026-12-03 and later)."""
    if variant == "advise-old":
        return old_alternates
    return variant in ("advise", "trace-all", "setprofile") or variant.startswith(("sample:", "launch:", "cb:"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", required=True, help="advise-profile binary")
    parser.add_argument("--old-profile", help="another advise-profile, for the advise-old variant")
    parser.add_argument("--old-alternates", action="store_true",
                        help="with --alternate: the --old-profile build alternates too (it has ADVISE_PROFILE_ALTERNATE)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--models", default="gpt-small,tlm-small,gpt2")
    parser.add_argument("--variants", default=",".join(v for v in ALL if v != "advise-old"))
    parser.add_argument("--json", help="write every measurement here")
    parser.add_argument("--alternate", type=int, default=0,
                        help="advise variants sleep through every other block of K optimizer steps")
    parser.add_argument("--cpus", help="pin every run to these cores (taskset -c LIST)")
    parser.add_argument("--keep", help="copy each run's profile into this folder (MODEL-VARIANT-REP.json)")
    args = parser.parse_args()
    args.profile = os.path.abspath(args.profile)
    if args.old_profile:
        args.old_profile = os.path.abspath(args.old_profile)
    variants = args.variants.split(",")
    models = args.models.split(",")
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    print(f"GPU: {gpu}; date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
          f"python {sys.version.split()[0]}; reps: {args.reps}; steps: {args.steps}; "
          f"cores: {args.cpus or 'any'}", flush=True)
    results = {m: {v: [] for v in variants} for m in models}
    groups = {m: {v: [] for v in variants} for m in models}
    alternated = {m: {} for m in models}  # model -> variant -> per-run awake/dormant - 1
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            for model in models:
                order = variants[rep % len(variants):] + variants[:rep % len(variants)]
                for variant in order:
                    cmd, extra = command(variant, args, model, os.path.join(tmp, f"{model}-{variant}-{rep}.json"))
                    env = dict(os.environ, **extra)
                    if args.alternate:
                        cmd += ["--blocks", str(args.alternate)]  # the same groups and warm-up for every variant
                        if alternates(variant, args.old_alternates):
                            env["ADVISE_PROFILE_ALTERNATE"] = str(args.alternate)
                    if args.cpus:
                        cmd = ["taskset", "-c", args.cpus] + cmd
                    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=HERE)
                    lines = [l for l in done.stdout.splitlines() if l.startswith("{")]
                    if done.returncode != 0 or not lines:
                        print(f"  {model} {variant}: exit {done.returncode}\n{done.stderr[-2000:]}", flush=True)
                        continue
                    r = json.loads(lines[-1])
                    profile = os.path.join(tmp, f"{model}-{variant}-{rep}.json")
                    if args.keep and os.path.exists(profile):
                        os.makedirs(args.keep, exist_ok=True)
                        shutil.copy(profile, args.keep)
                    results[model][variant].append(r["step_ms"])
                    groups[model][variant].append(r["groups_ms"])
                    inside = ""
                    if r.get("awake_ms") and r.get("dormant_ms"):
                        ratio = statistics.median(r["awake_ms"]) / statistics.median(r["dormant_ms"]) - 1
                        alternated[model].setdefault(variant, []).append(ratio)
                        inside = f" awake/dormant {100 * ratio:+.1f}%"
                    print(f"  rep {rep} {model:10s} {variant:15s} {r['step_ms']:8.3f} ms/step{inside} "
                          f"(groups {' '.join(f'{g:.3f}' for g in r['groups_ms'])})", flush=True)
    print()
    print(f"{'model':10s} {'variant':15s} {'ms/step':>8s} {'overhead':>9s} {'reps (ms)':s}")
    for model in models:
        base = statistics.median(results[model]["plain"]) if results[model].get("plain") else None
        for variant in variants:
            xs = results[model][variant]
            if not xs:
                print(f"{model:10s} {variant:15s} {'failed':>8s}")
                continue
            med = statistics.median(xs)
            over = f"{100 * (med / base - 1):+8.1f}%" if base else ""
            print(f"{model:10s} {variant:15s} {med:8.3f} {over:>9s} {' '.join(f'{x:.3f}' for x in xs)}")
    if any(alternated[m] for m in models):
        print()
        print(f"in one process (--alternate {args.alternate}): median awake group over median dormant group, per run")
        print(f"{'model':10s} {'variant':15s} {'median':>8s} {'runs':s}")
        for model in models:
            for variant, xs in alternated[model].items():
                print(f"{model:10s} {variant:15s} {100 * statistics.median(xs):+7.1f}% "
                      f"{' '.join(f'{100 * x:+.1f}%' for x in xs)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": gpu, "results": results, "groups": groups, "alternated": alternated}, f, indent=1)


if __name__ == "__main__":
    main()
