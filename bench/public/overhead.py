"""The profiler's cost on a public workload as written: plain runs and runs
under `advise profile` (and with parts of the profiler off), alternated in
one call on one machine.

    python3 bench/public/overhead.py --profile BUNDLE/advise-profile
        [--workload cifar] [--reps 3] [--iterations 300]
        [--variants plain,advise,no-python,activity-only,torch.profiler]
        [--alternate K] [--json OUT.json] [--profiles-out DIR]

Variants (the environment variables are the profiler's own, see
bench/overhead/run.py):

  plain          the copy as written, no profiler
  advise         advise-profile as shipped
  no-python      advise without Python call sites (ADVISE_PROFILE_PYTHON_HOOK=off)
  activity-only  advise without callbacks or call sites (ADVISE_PROFILE_SITES=0)
  no-tracing     advise with its callbacks and call sites but no kernel, copy or
                 memset traced (ADVISE_PROFILE_ACTIVITY=device)
  asleep         advise attached (CUPTI subscribed, the Python hook on) but dormant
                 from the start: no callback runs and nothing is traced
                 (ADVISE_PROFILE_ASLEEP=1), what attaching alone costs
  asleep-no-python  the same without the Python hook
  torch.profiler the copy run inside torch.profiler.profile(with_stack=True), CPU
                 and CUDA activity, nothing exported (the peer tool)
  steps:N        advise profile --steps N: the first N optimizer steps recorded,
                 then the profiler detaches and the run goes on without it
  in-process     advise with ADVISE_PROFILE_ALTERNATE=K (needs --alternate K):
                 the profiler sleeps through every other block of K optimizer
                 steps and launch.py times each block, so one process gives
                 the profiler's cost: the median awake block over the median
                 dormant one, and the median of adjacent pairs' ratios

With a steps:N variant, each run (plain included) also gets the host's
median per iteration over the same late window, the iterations after
N + 10 (launch.py's warm-up of 20 iterations untimed): whether the run goes
at plain speed once the profiler has detached. The JSON keeps each run's
host time per iteration.

--deadline S starts no run that would end more than S seconds after the
start (judged by the longest run so far) and prints the table of what ran,
so that a caller's time box does not cut the table off.

For each run: milliseconds per training iteration (launch.py's timing,
after 20 untimed iterations), the median of the host's time per iteration
and how many iterations took over twice that (stalls, which the average
holds and the in-process medians do not), and the CPU seconds (user + system) of the
run and every process it waited for (the training process and its loader
workers), from getrusage. Prints per variant the medians, and the change
against plain: of the medians, and "paired", the median over repetitions of
each run against the plain run of the same repetition (runs of one
repetition follow each other, so they share more of the machine's state).
The variants rotate each repetition.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCH_WARMUP = 20  # launch.py's --warmup default: its host times start at that iteration
sys.path.insert(0, HERE)
from run import command, prepare  # noqa: E402

ENV = {
    "plain": None,
    "advise": {},
    "no-python": {"ADVISE_PROFILE_PYTHON_HOOK": "off"},
    "activity-only": {"ADVISE_PROFILE_SITES": "0"},
    "torch.profiler": None,
    "no-tracing": {"ADVISE_PROFILE_ACTIVITY": "device"},
    "asleep": {"ADVISE_PROFILE_ASLEEP": "1"},
    "asleep-no-python": {"ADVISE_PROFILE_ASLEEP": "1", "ADVISE_PROFILE_PYTHON_HOOK": "off"},
    "in-process": {},  # ADVISE_PROFILE_ALTERNATE is added from --alternate
    "in-process-every-8": {"ADVISE_PROFILE_TRACE": "sample:8"},
    "in-process-every-64": {"ADVISE_PROFILE_TRACE": "sample:64"},
    "in-process-trace-all": {"ADVISE_PROFILE_TRACE": "all"},
    "in-process-no-tracing": {"ADVISE_PROFILE_ACTIVITY": "device"},
}


def in_process_change(blocks):
    """(median awake / median dormant - 1, median over adjacent awake-dormant
    pairs of their ratio - 1), in percent; None without both kinds."""
    awake = [b["ms"] for b in blocks if b["profiler"] == "awake"]
    dormant = [b["ms"] for b in blocks if b["profiler"] == "dormant"]
    if not awake or not dormant:
        return None
    pairs = [a["ms"] / d["ms"] for a, d in zip(blocks, blocks[1:])
             if a["profiler"] == "awake" and d["profiler"] == "dormant"]
    return ((statistics.median(awake) / statistics.median(dormant) - 1) * 100,
            (statistics.median(pairs) - 1) * 100 if pairs else None, len(awake), len(dormant))


def variant_steps(variant):
    """N of a steps:N variant, else None."""
    if not variant.startswith("steps:"):
        return None
    n = variant[len("steps:"):]
    return int(n) if n.isdigit() and int(n) > 0 else None


def run_variant(variant, workload, folder, iterations, profile, out_dir, rep, alternate):
    timing = os.path.join(folder, "timing.json")
    cmd = command(workload, iterations, timing)
    env = dict(os.environ)
    if variant == "torch.profiler":
        cmd.append("--torch-profiler")
    if variant.startswith("in-process"):
        cmd += ["--alternate", str(alternate)]
        env["ADVISE_PROFILE_ALTERNATE"] = str(alternate)
    steps = variant_steps(variant)
    if steps or ENV[variant] is not None:
        env.update(ENV.get(variant) or {})
        name = variant.replace(":", "-")
        out = os.path.join(out_dir, f"{workload}-{name}-{rep}.json")
        cmd = [profile, "-o", out, "--name", f"{workload}-{name}"] + (["--steps", str(steps)] if steps else []) + \
            ["--"] + cmd
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{variant} exited {done.returncode}:\n{done.stdout[-3000:]}")
    with open(timing) as f:
        timed = json.load(f)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return timed["ms_per_iteration"], cpu, timed.get("blocks", []), timed.get("host_iteration_ms", [])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", default=os.path.join(HERE, "..", "..", ".corpus"))
    parser.add_argument("--work", default="/tmp/advise-public")
    parser.add_argument("--workload", default="cifar")
    parser.add_argument("--variants", default="plain,advise,no-python,activity-only")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--profile", required=True, help="advise-profile")
    parser.add_argument("--alternate", type=int, default=0,
                        help="blocks of K optimizer steps for the in-process variant")
    parser.add_argument("--json")
    parser.add_argument("--profiles-out", help="keep each run's profile in this folder (else they are dropped)")
    parser.add_argument("--deadline", type=float, default=0,
                        help="seconds: start no run that would end past this (judged by the longest run so far), "
                             "then print the table of what ran")
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in ENV and not variant_steps(v):
            sys.exit(f"overhead: unknown variant {v} (known: {', '.join(ENV)}, steps:N)")
    if any(v.startswith("in-process") for v in variants) != (args.alternate > 0):
        sys.exit("overhead: the in-process variant and --alternate K (K > 0) go together")
    folder = prepare(args.workload, "as-written", os.path.abspath(args.corpus), args.work)
    profile = os.path.abspath(args.profile)
    results = {v: [] for v in variants}
    host_medians = {v: [] for v in variants}
    # steps:N: the window after the latest detach (and 10 iterations to settle), the same for every variant;
    # launch.py's host times start at its 20th iteration
    detach = max((variant_steps(v) or 0 for v in variants), default=0)
    late_from = detach + 10 - LAUNCH_WARMUP if detach else None
    late_medians = {v: [] for v in variants}
    host_runs = {v: [] for v in variants}
    in_process = []
    by_rep = []  # per repetition, each variant's ms per iteration: the pairs that share a machine state
    began, longest, stopped = time.monotonic(), 0.0, None
    with tempfile.TemporaryDirectory() as scratch:
        out_dir = scratch
        if args.profiles_out:
            out_dir = os.path.abspath(args.profiles_out)
            os.makedirs(out_dir, exist_ok=True)
        for rep in range(args.reps):
            order = variants[rep % len(variants):] + variants[:rep % len(variants)]
            by_rep.append({})
            for v in order:
                # --deadline: stop before a run that would end past it (as long as the longest so far), so
                # that the table below is printed inside a caller's time box
                if args.deadline and time.monotonic() - began + longest > args.deadline:
                    stopped = f"rep {rep + 1}, {v}"
                    break
                run_began = time.monotonic()
                ms, cpu, blocks, host = run_variant(v, args.workload, folder, args.iterations, profile, out_dir, rep,
                                              args.alternate)
                longest = max(longest, time.monotonic() - run_began)
                results[v].append((ms, cpu))
                by_rep[-1][v] = ms
                line = f"rep {rep + 1}: {v:<14} {ms:7.2f} ms/iteration, {cpu:7.1f} s of CPU"
                if host:
                    median = statistics.median(host)
                    slow = [h for h in host if h > 2 * median]
                    line += (f"; host median {median:.2f} ms, {len(slow)} iterations over twice that "
                             f"({sum(slow) - len(slow) * median:.0f} ms beyond the median)")
                    host_medians[v].append(median)
                    host_runs[v].append(host)
                    if late_from is not None and len(host) > late_from:
                        late = statistics.median(host[late_from:])
                        late_medians[v].append(late)
                        line += f"; after iteration {detach + 10}: host median {late:.2f} ms"
                change = in_process_change(blocks) if v.startswith("in-process") else None
                if change:
                    pairs = f", pairs {change[1]:+.1f}%" if change[1] is not None else ""
                    line += f"; awake over dormant {change[0]:+.1f}%{pairs} ({change[2]} and {change[3]} blocks)"
                    in_process.append({"variant": v, "rep": rep + 1, "blocks": blocks, "median_change_percent": change[0],
                                       "pair_change_percent": change[1]})
                print(line, flush=True)
            if stopped:
                print(f"--deadline {args.deadline:g} s: stopped before {stopped}", flush=True)
                break
    variants = [v for v in variants if results[v]]
    if not variants:
        sys.exit("public: no run finished before the deadline")
    # each variant against the first one's run of the same repetition
    paired = {v: [(r[v] / r[variants[0]] - 1) * 100 for r in by_rep if v in r and variants[0] in r] for v in variants}
    base = statistics.median(ms for ms, _ in results[variants[0]]) if results[variants[0]] else None
    host_base = statistics.median(host_medians[variants[0]]) if host_medians[variants[0]] else None
    print(f"\n{'variant':<14} {'runs':>4} {'median ms':>10} {'change':>8} {'paired':>8} {'host median':>12} "
          f"{'change':>8} {'CPU s':>8}  each run (ms); each pair")
    for v in variants:
        ms = statistics.median(m for m, _ in results[v])
        cpu = statistics.median(c for _, c in results[v])
        change = f"{(ms / base - 1) * 100:+.1f}%" if base and v != variants[0] else ""
        host = statistics.median(host_medians[v]) if host_medians[v] else None
        host_text = f"{host:.2f}" if host else "-"
        host_change = f"{(host / host_base - 1) * 100:+.1f}%" if host and host_base and v != variants[0] else ""
        each = " ".join(f"{m:.2f}" for m, _ in results[v])
        pairs = paired[v] if v != variants[0] else []
        pair_text = f"{statistics.median(pairs):+.1f}%" if pairs else ""
        pair_each = "; " + " ".join(f"{p:+.1f}%" for p in pairs) if pairs else ""
        print(f"{v:<14} {len(results[v]):>4} {ms:>10.2f} {change:>8} {pair_text:>8} {host_text:>12} {host_change:>8} "
              f"{cpu:>8.1f}  {each}{pair_each}")
    if late_from is not None and late_medians[variants[0]]:
        late_base = statistics.median(late_medians[variants[0]])
        print(f"\nafter iteration {detach + 10} (the profiler detached at step {detach}), host median per iteration:")
        for v in variants:
            if late_medians[v]:
                late = statistics.median(late_medians[v])
                change = f" ({(late / late_base - 1) * 100:+.1f}%)" if v != variants[0] else ""
                each = " ".join(f"{m:.2f}" for m in late_medians[v])
                print(f"  {v:<14} {late:.2f} ms{change}  {each}")
    if in_process:
        print(f"\nin one process (blocks of {args.alternate} steps, awake over dormant), per run:")
        for v in variants:
            each = " ".join(f"{r['median_change_percent']:+.1f}%" for r in in_process if r["variant"] == v)
            if each:
                print(f"  {v:<20} {each}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"workload": args.workload, "iterations": args.iterations,
                       "runs": {v: [{"ms_per_iteration": m, "cpu_seconds": c} for m, c in results[v]]
                                for v in variants},
                       "host_iteration_median_ms": host_medians,
                       "late_window_from_iteration": detach + 10 if detach else None,
                       "late_host_iteration_median_ms": late_medians if detach else None,
                       "host_iteration_ms": host_runs,
                       "paired_change_percent": {v: paired[v] for v in variants[1:]},
                       "stopped_by_deadline_before": stopped,
                       "alternate": args.alternate, "in_process": in_process}, f, indent=1)


if __name__ == "__main__":
    main()
