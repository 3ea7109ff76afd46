"""The profiler's cost on a public workload as written: plain runs and runs
under `advise profile` (and with parts of the profiler off), alternated in
one call on one machine.

    python3 bench/public/overhead.py --profile BUNDLE/advise-profile
        [--workload cifar] [--reps 3] [--iterations 300]
        [--variants plain,advise,no-python,activity-only] [--json OUT.json]

Variants (the environment variables are the profiler's own, see
bench/overhead/run.py):

  plain          the copy as written, no profiler
  advise         advise-profile as shipped
  no-python      advise without Python call sites (ADVISE_PROFILE_PYTHON_HOOK=off)
  activity-only  advise without callbacks or call sites (ADVISE_PROFILE_SITES=0)

For each run: milliseconds per training iteration (launch.py's timing,
after 20 untimed iterations), and the CPU seconds (user + system) of the
run and every process it waited for (the training process and its loader
workers), from getrusage. Prints per variant the medians, and the change
against plain. The variants rotate each repetition.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import command, prepare  # noqa: E402

ENV = {
    "plain": None,
    "advise": {},
    "no-python": {"ADVISE_PROFILE_PYTHON_HOOK": "off"},
    "activity-only": {"ADVISE_PROFILE_SITES": "0"},
}


def run_variant(variant, workload, folder, iterations, profile, out_dir, rep):
    timing = os.path.join(folder, "timing.json")
    cmd = command(workload, iterations, timing)
    env = dict(os.environ)
    if ENV[variant] is not None:
        env.update(ENV[variant])
        out = os.path.join(out_dir, f"{workload}-{variant}-{rep}.json")
        cmd = [profile, "-o", out, "--name", f"{workload}-{variant}", "--"] + cmd
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{variant} exited {done.returncode}:\n{done.stdout[-3000:]}")
    with open(timing) as f:
        ms = json.load(f)["ms_per_iteration"]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return ms, cpu


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", default=os.path.join(HERE, "..", "..", ".corpus"))
    parser.add_argument("--work", default="/tmp/advise-public")
    parser.add_argument("--workload", default="cifar")
    parser.add_argument("--variants", default="plain,advise,no-python,activity-only")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--profile", required=True, help="advise-profile")
    parser.add_argument("--json")
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in ENV:
            sys.exit(f"overhead: unknown variant {v} (known: {', '.join(ENV)})")
    folder = prepare(args.workload, "as-written", os.path.abspath(args.corpus), args.work)
    profile = os.path.abspath(args.profile)
    results = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as out_dir:
        for rep in range(args.reps):
            order = variants[rep % len(variants):] + variants[:rep % len(variants)]
            for v in order:
                ms, cpu = run_variant(v, args.workload, folder, args.iterations, profile, out_dir, rep)
                results[v].append((ms, cpu))
                print(f"rep {rep + 1}: {v:<14} {ms:7.2f} ms/iteration, {cpu:7.1f} s of CPU", flush=True)
    base = statistics.median(ms for ms, _ in results[variants[0]]) if results[variants[0]] else None
    print(f"\n{'variant':<14} {'runs':>4} {'median ms':>10} {'change':>8} {'CPU s':>8}  each run (ms)")
    for v in variants:
        ms = statistics.median(m for m, _ in results[v])
        cpu = statistics.median(c for _, c in results[v])
        change = f"{(ms / base - 1) * 100:+.1f}%" if base and v != variants[0] else ""
        each = " ".join(f"{m:.2f}" for m, _ in results[v])
        print(f"{v:<14} {len(results[v]):>4} {ms:>10.2f} {change:>8} {cpu:>8.1f}  {each}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"workload": args.workload, "iterations": args.iterations,
                       "runs": {v: [{"ms_per_iteration": m, "cpu_seconds": c} for m, c in results[v]]
                                for v in variants}}, f, indent=1)


if __name__ == "__main__":
    main()
