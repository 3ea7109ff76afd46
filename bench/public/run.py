"""Prepares the public workloads of workloads.py and times them as written
and with advise's advice followed, alternating, on a GPU machine.

    python3 bench/public/run.py [--corpus .corpus] [--work /tmp/advise-public]
        [--workloads cifar,lstm,gan,vae] [--variants as-written,advised,...]
        [--reps 3] [--iterations 300] [--profile BUNDLE/advise-profile]
        [--profiles-out DIR] [--profile-steps N] [--json OUT.json]
        [--prepare-only]

Each variant is a fresh copy of the workload's files under --work, with its
edits applied (the "advised" copy has the random-data edits too). Besides
as-written and advised, a workload may name further variants in
workloads.py ("variants": graphed, compiled, ...); a variant a workload does
not name is skipped for it. A variant that fails leaves the workload's
others to run. With
--profile, each workload's as-written copy is first run once under
`advise profile` (with --profile-steps N, `advise profile --steps N`: the
first N optimizer steps recorded, the rest run unprofiled), and the profile
is written to --profiles-out (then
`advise report --profile P COPY` gives the advice, here or elsewhere).

Prints the GPU, the date, and per workload the median milliseconds per
training iteration of each variant, what it saved against the first variant
(as-written) and the speed-up.
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from workloads import WORKLOADS  # noqa: E402


def apply_edits(folder, edits, workload, variant):
    for file, old, new in edits:
        path = os.path.join(folder, file)
        with open(path) as f:
            text = f.read()
        if text.count(old) != 1:
            sys.exit(f"public: {workload} ({variant}): {file} holds {text.count(old)} copies of "
                     f"{old!r}, not one: the pinned file changed?")
        with open(path, "w") as f:
            f.write(text.replace(old, new))


def edits_of(name, variant):
    """The edits of one variant beyond the random-data ones; None when the
    workload does not name that variant."""
    spec = WORKLOADS[name]
    if variant == "as-written":
        return []
    if variant == "advised":
        return spec["advised"]
    return spec.get("variants", {}).get(variant)


def prepare(name, variant, corpus, work):
    spec = WORKLOADS[name]
    source = os.path.join(corpus, spec["corpus"])
    marker = os.path.join(source, ".advise-corpus-commit")
    if os.path.exists(marker) and open(marker).read().strip() != spec["commit"]:
        sys.exit(f"public: {source} is not at {spec['commit']} (bench/realcode/corpus.sh fetches it)")
    folder = os.path.join(work, f"{name}-{variant}")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for item in spec["copy"]:
        src = os.path.join(source, item)
        dst = os.path.join(folder, os.path.basename(item))
        if os.path.isdir(src):
            shutil.copytree(src, dst)
        else:
            shutil.copy(src, dst)
    apply_edits(folder, spec["random"], name, variant)
    apply_edits(folder, edits_of(name, variant), name, variant)
    return folder


def command(name, iterations, timing):
    spec = WORKLOADS[name]
    return [sys.executable, os.path.join(HERE, "launch.py"), "--script", spec["script"],
            "--data", spec["data"], "--iterations", str(iterations),
            "--steps-per-iteration", str(spec["steps_per_iteration"]),
            "--batch", str(spec["batch"]), "--timing", timing]


def run_once(name, folder, iterations, profile=None, profile_out=None, variant="as-written", profile_steps=None):
    timing = os.path.join(folder, "timing.json")
    cmd = command(name, iterations, timing)
    if profile:
        steps = ["--steps", str(profile_steps)] if profile_steps else []
        cmd = [profile, "-o", profile_out, "--name", f"{name}-{variant}"] + steps + ["--"] + cmd
    done = subprocess.run(cmd, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = os.path.join(folder, "log.txt")
    with open(log, "a") as f:
        f.write(done.stdout)
    if done.returncode != 0:
        raise RuntimeError(f"{name} in {folder} exited {done.returncode}; last output:\n{done.stdout[-3000:]}")
    with open(timing) as f:
        result = json.load(f)
    if result["iterations"] != iterations or result["ms_per_iteration"] is None:
        raise RuntimeError(f"{name} ran {result['iterations']} iterations, not {iterations}")
    return result["ms_per_iteration"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", default=os.path.join(HERE, "..", "..", ".corpus"))
    parser.add_argument("--work", default="/tmp/advise-public")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--variants", default="as-written,advised")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--profile", help="advise-profile: record each as-written copy once first")
    parser.add_argument("--profiles-out", default="profiles")
    parser.add_argument("--profile-variants", default="as-written",
                        help="with --profile: the variants recorded, each once (as-written is written to NAME.json, "
                             "another to NAME-VARIANT.json)")
    parser.add_argument("--profile-steps", type=int,
                        help="with --profile: record only the first N optimizer steps (advise profile --steps N)")
    parser.add_argument("--json")
    parser.add_argument("--prepare-only", action="store_true")
    args = parser.parse_args()
    names = args.workloads.split(",")
    variants = args.variants.split(",")
    for name in names:
        if name not in WORKLOADS:
            sys.exit(f"public: no workload {name!r} (known: {', '.join(WORKLOADS)})")
    known = ["as-written", "advised"] + sorted({v for n in names for v in WORKLOADS[n].get("variants", {})})
    for v in variants:
        if v not in known:
            sys.exit(f"public: no variant {v!r} ({', '.join(known)})")
    # each workload's own variants, in the order asked
    mine = {n: [v for v in variants if edits_of(n, v) is not None] for n in names}
    for n in names:
        skipped = [v for v in variants if v not in mine[n]]
        if skipped:
            print(f"public: {n} has no variant {', '.join(skipped)}: skipped", flush=True)

    folders = {(n, v): prepare(n, v, os.path.abspath(args.corpus), args.work) for n in names for v in mine[n]}
    if args.prepare_only:
        for (n, v), folder in folders.items():
            print(f"{n} {v}: {folder}")
        return

    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         stdout=subprocess.PIPE, text=True).stdout.strip()
    print(gpu)
    print(datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), flush=True)
    results = {"gpu": gpu, "iterations": args.iterations, "workloads": {}}
    failed = set()

    def attempt(key, *run_args, **run_kwargs):
        # One variant (workload, variant) failing leaves the others to run; its error is shown.
        if key in failed:
            return None
        try:
            return run_once(key[0], *run_args, **run_kwargs)
        except RuntimeError as error:
            print(f"public: {error}", flush=True)
            failed.add(key)
            return None

    if args.profile:
        os.makedirs(args.profiles_out, exist_ok=True)
        for name in names:
            for variant in args.profile_variants.split(","):
                if edits_of(name, variant) is None:
                    print(f"public: {name} has no variant {variant!r} to record: skipped", flush=True)
                    continue
                file = f"{name}.json" if variant == "as-written" else f"{name}-{variant}.json"
                out = os.path.abspath(os.path.join(args.profiles_out, file))
                folder = folders.get((name, variant)) or prepare(name, variant, os.path.abspath(args.corpus), args.work)
                started = time.monotonic()
                ms = attempt((name, f"profile {variant}"), folder, args.iterations, os.path.abspath(args.profile), out,
                             variant=variant, profile_steps=args.profile_steps)
                if ms is not None:
                    key = "profiled_ms" if variant == "as-written" else f"profiled_ms {variant}"
                    results["workloads"].setdefault(name, {})[key] = ms
                    print(f"{name:6} {variant} profiled {ms:8.2f} ms/iteration -> {out} "
                          f"({time.monotonic() - started:.0f} s)", flush=True)

    times = {key: [] for key in folders}
    # workload by workload (a run cut short keeps whole workloads), the
    # variants alternating within each
    for name in names:
        for rep in range(args.reps):
            started = time.monotonic()
            for variant in mine[name]:
                ms = attempt((name, variant), folders[(name, variant)], args.iterations)
                if ms is not None:
                    times[(name, variant)].append(ms)
            print(f"{name} rep {rep + 1}: " + ", ".join(f"{v} {times[(name, v)][-1]:.2f}" for v in mine[name]
                                                        if times[(name, v)])
                  + f" ({time.monotonic() - started:.0f} s)", flush=True)
            if args.json:
                results["workloads"].setdefault(name, {}).update({v: times[(name, v)] for v in mine[name]})
                with open(args.json, "w") as f:
                    json.dump(results, f, indent=1)

    if not args.reps:  # profiles only: nothing was timed
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
        return
    print(f"\n{'workload':8} {'variant':14} {'runs':>4} {'median ms':>10} {'saved ms':>9} {'speed-up':>8}  each run (ms)")
    for name in names:
        base = None
        for v in mine[name]:
            xs = times[(name, v)]
            if not xs:
                print(f"{name:8} {v:14} failed")
                continue
            med = statistics.median(xs)
            results["workloads"].setdefault(name, {})[v] = xs
            if base is None:  # the first variant asked (as-written) is the reference
                base = med
                saved, speedup = "", ""
            else:
                saved, speedup = f"{base - med:9.2f}", f"{base / med:7.2f}x"
            print(f"{name:8} {v:14} {len(xs):4} {med:10.2f} {saved:>9} {speedup:>8}  "
                  + " ".join(f"{x:.2f}" for x in xs))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
