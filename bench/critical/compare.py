"""bench/critical: PY009's estimate per step against the measured saving.

    python3 bench/critical/compare.py --times DIR/times.json --profiles DIR [--advise build/advise]

For each configuration: the measured saving (median fp32 - median TF32 ms
per step), and PY009's gain per step from `advise check` on mlp_train.py
with that configuration's profile, as advise estimates it now and with the
profile's critical-path figures removed (the model before them).
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def py009_gain(advise, profile):
    done = subprocess.run([advise, "check", "--no-config", "--format", "json", "--profile", profile,
                           os.path.join("bench", "critical", "mlp_train.py")],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    found = [f for f in json.loads(done.stdout)["findings"] if f["code"] == "PY009"]
    return found[0]["gain"]["seconds"] if found and found[0].get("gain") else 0.0


def without_critical_path(profile, out):
    with open(profile) as f:
        p = json.load(f)
    for entry in p["kernels"] + p["ops"]:
        entry.pop("critical_ns", None)
    for proc in p["processes"]:
        proc.pop("host_wait_ns", None)
    with open(out, "w") as f:
        json.dump(p, f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--times", required=True)
    parser.add_argument("--profiles", required=True, help="folder of prof-NAME.json")
    parser.add_argument("--advise", default=os.path.join(ROOT, "build", "advise"))
    args = parser.parse_args()
    with open(args.times) as f:
        times = json.load(f)
    steps = times["steps"]
    print(f"{'config':11} {'measured':>9} {'estimate':>9} {'before':>9}  ms per step (PY009, TF32)")
    with tempfile.TemporaryDirectory() as tmp:
        for name, entry in times["configs"].items():
            profile = os.path.abspath(os.path.join(args.profiles, f"prof-{name}.json"))
            if not os.path.exists(profile):
                continue
            measured = statistics.median(entry["fp32"]) - statistics.median(entry["tf32"])
            stripped = os.path.join(tmp, f"{name}.json")
            without_critical_path(profile, stripped)
            now = py009_gain(args.advise, profile) * 1000 / steps
            before = py009_gain(args.advise, stripped) * 1000 / steps
            print(f"{name:11} {measured:9.3f} {now:9.3f} {before:9.3f}")


if __name__ == "__main__":
    main()
