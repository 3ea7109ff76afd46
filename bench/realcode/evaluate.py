#!/usr/bin/env python3
"""advise over real code nobody on this project wrote: prints what it found.

    bench/realcode/corpus.sh            # brings the pinned repositories into .corpus/
    bench/realcode/evaluate.py          # advise check over each, the tables below
    bench/realcode/evaluate.py --nvcc   # and: does every .cu that nvcc compiles parse?

For each repository: files and lines checked, seconds and lines per second,
crashes (analyses that failed: advise reports them as errors), files that did
not parse cleanly, and findings; then findings per rule and severity over the
whole corpus. With --list RULE it prints that rule's findings (path:line:
message) for reading; --save DIR keeps each repository's JSON report.

--nvcc compiles each .cu file with `nvcc -arch=sm_90 -std=c++17 -c` and the
repository's include folders (pinned below, as its build passes them), caches
the verdicts in <corpus>/.nvcc-verdicts.json (keyed by the file's content),
and checks the files nvcc compiles twice with advise: with no compile
database (advise finds the project's headers itself) and with a
compile_commands.json holding nvcc's command. Every file nvcc compiles must
parse with no error in both; the ones that do not are listed.

Nothing here passes or fails; it prints figures. Held out for the project's
own evaluation, never in the corpus: karpathy/llm.c, karpathy/nanoGPT,
pytorch/examples.
"""
import argparse
import collections
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# the include folders each repository's build gives nvcc (relative to the repository)
NVCC_INCLUDES = {
    "NVIDIA+cuda-samples": ["Common"],
    "ggml-org+ggml": ["include", "src", "src/ggml-cuda"],
    "siboehm+SGEMM_CUDA": ["src"],
}
NVCC_DEFINES = {"ggml-org+ggml": ["GGML_USE_CUDA"]}

SOURCE_SUFFIXES = (".cu", ".cuh")
CXX_SUFFIXES = (".cc", ".cpp", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx")
SKIPPED_FOLDERS = {".git", "__pycache__", "node_modules", ".venv", "venv", "site-packages"}


def checked_files(repo):
    """The files advise check analyses in a repository (as its folder walk picks them)."""
    for folder, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if d not in SKIPPED_FOLDERS and not d.startswith(".")]
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".py") or name.endswith(SOURCE_SUFFIXES):
                yield path
            elif name.endswith(CXX_SUFFIXES):
                with open(path, "rb") as f:
                    head = f.read(65536)
                if b"\0" not in head and (b"cuda" in head or b"__global__" in head or b"__device__" in head):
                    yield path


def count_lines(path):
    with open(path, "rb") as f:
        return f.read().count(b"\n")


def run_check(advise, paths, extra=()):
    start = time.monotonic()
    proc = subprocess.run([advise, "check", "--no-config", "--no-source", "--format", "json", *extra, *paths],
                          capture_output=True, text=True)
    seconds = time.monotonic() - start
    if proc.returncode < 0:
        return None, seconds, f"advise died with signal {-proc.returncode}"
    try:
        return json.loads(proc.stdout), seconds, None
    except json.JSONDecodeError:
        return None, seconds, f"advise printed no JSON (exit {proc.returncode}): {proc.stderr[-300:]}"


def evaluate(args, repos):
    per_rule = collections.Counter()
    rows = []
    listed = []
    for repo in repos:
        name = os.path.basename(repo)
        files = list(checked_files(repo))
        py_lines = sum(count_lines(p) for p in files if p.endswith(".py"))
        cu_lines = sum(count_lines(p) for p in files if not p.endswith(".py"))
        report, seconds, died = run_check(args.advise, [repo])
        if report is not None and args.save:
            os.makedirs(args.save, exist_ok=True)
            with open(os.path.join(args.save, name + ".json"), "w") as f:
                json.dump(report, f, indent=1)
        if report is None:
            rows.append((name, len(files), py_lines, cu_lines, seconds, died, "-", "-", "-"))
            continue
        crashes = [e for e in report["errors"] if "crashed" in e["message"]]
        for f in report["findings"]:
            per_rule[(f["code"], f["severity"])] += 1
            if args.list and f["code"] == args.list:
                listed.append(f'{f["path"]}:{f["range"]["start"]["line"]}: {f["severity"]}: {f["message"]}')
        rows.append((name, len(files), py_lines, cu_lines, seconds, len(crashes), len(report["errors"]) - len(crashes),
                     len(report.get("parse_failures", [])), len(report["findings"])))
        if args.verbose:
            for e in report["errors"]:
                print(f'  error {e["path"]}: {e["message"]}', file=sys.stderr)
            for e in report.get("parse_failures", []):
                print(f'  parse {e["path"]}:{e["line"]}: {e["message"]}', file=sys.stderr)

    print("| repository | files | Python lines | CUDA/C++ lines | seconds | lines/s | crashes | unreadable | "
          "parse failures | findings |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    totals = [0, 0, 0, 0.0, 0, 0, 0, 0]
    for name, files, py, cu, seconds, crashes, errors, parse, findings in rows:
        rate = (py + cu) / seconds if seconds > 0 else 0
        print(f"| {name} | {files} | {py} | {cu} | {seconds:.1f} | {rate:,.0f} | {crashes} | {errors} | {parse} | "
              f"{findings} |")
        for i, v in enumerate((files, py, cu, seconds)):
            totals[i] += v
        for i, v in enumerate((crashes, errors, parse, findings)):
            totals[4 + i] += v if isinstance(v, int) else 0
    rate = (totals[1] + totals[2]) / totals[3] if totals[3] else 0
    print(f"| all | {totals[0]} | {totals[1]} | {totals[2]} | {totals[3]:.1f} | {rate:,.0f} | {totals[4]} | "
          f"{totals[5]} | {totals[6]} | {totals[7]} |")
    print()
    print("| rule | severity | findings |")
    print("| --- | --- | ---: |")
    for (code, severity), n in sorted(per_rule.items()):
        print(f"| {code} | {severity} | {n} |")
    for line in listed:
        print(line)


def nvcc_verdicts(args, repos):
    cache_path = os.path.join(args.corpus, ".nvcc-verdicts.json")
    cache = {}
    if os.path.exists(cache_path):
        with open(cache_path) as f:
            cache = json.load(f)
    verdicts = {}
    for repo in repos:
        name = os.path.basename(repo)
        flags = [f"-I{os.path.join(repo, d)}" for d in NVCC_INCLUDES.get(name, [])]
        flags += [f"-D{d}" for d in NVCC_DEFINES.get(name, [])]
        for path in sorted(p for p in checked_files(repo) if p.endswith(".cu")):
            with open(path, "rb") as f:
                key = hashlib.sha256(f.read() + " ".join(flags).encode()).hexdigest()
            if key not in cache:
                with tempfile.TemporaryDirectory() as tmp:
                    try:
                        proc = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", *flags, "-c", path, "-o",
                                               os.path.join(tmp, "out.o")], capture_output=True, text=True,
                                              timeout=args.nvcc_timeout)
                    except subprocess.TimeoutExpired:
                        # no verdict (not cached): the file is still checked, as one nvcc may or may not compile
                        verdicts[path] = ({"ok": None, "why": f"nvcc took over {args.nvcc_timeout} s"}, flags)
                        continue
                cache[key] = {"ok": proc.returncode == 0, "why": proc.stderr.strip().split("\n")[0][:200]}
                with open(cache_path, "w") as f:
                    json.dump(cache, f)
            verdicts[path] = (cache[key], flags)
    return verdicts


def compile_database(verdicts, folder):
    entries = [{"directory": os.path.dirname(path), "file": path,
                "arguments": ["nvcc", "-arch=sm_90", "-std=c++17", *flags, "-c", path]}
               for path, (verdict, flags) in verdicts.items() if verdict["ok"]]
    with open(os.path.join(folder, "compile_commands.json"), "w") as f:
        json.dump(entries, f)


def check_nvcc(args, repos):
    if not shutil.which("nvcc"):
        print("nvcc is not on PATH: no verdicts", file=sys.stderr)
        return
    verdicts = nvcc_verdicts(args, repos)
    compiled = [p for p, (v, _) in verdicts.items() if v["ok"]]
    unknown = [p for p, (v, _) in verdicts.items() if v["ok"] is None]
    print(f"\nnvcc -arch=sm_90 compiles {len(compiled)} of {len(verdicts)} .cu files"
          + (f" ({len(unknown)} without a verdict: nvcc ran past --nvcc-timeout)" if unknown else ""))
    if unknown:
        report = json.loads(subprocess.run([args.advise, "check", "--no-config", "--no-source", "--format", "json",
                                            *unknown], capture_output=True, text=True).stdout)
        failing = report.get("parse_failures", []) + report["errors"]
        print(f"  of those, advise parses {len(unknown) - len(failing)} cleanly; {len(failing)} do not")
        for f in failing:
            print(f'    {f["path"]}: {f["message"][:200]}')
    with tempfile.TemporaryDirectory() as tmp:
        compile_database(verdicts, tmp)
        config = os.path.join(tmp, "advise.toml")
        with open(config, "w") as f:
            f.write(f'[cuda]\nbuild-dir = "{tmp}"\n')
        for label, extra in (("no compile database", ()), ("compile_commands.json", ("--config", config))):
            failing = []
            for i in range(0, len(compiled), 64):
                cmd = [args.advise, "check", "--no-source", "--format", "json", *(extra or ("--no-config",))]
                proc = subprocess.run(cmd + compiled[i:i + 64], capture_output=True, text=True)
                report = json.loads(proc.stdout)
                failing += report.get("parse_failures", []) + report["errors"]
            print(f"  advise with {label}: {len(compiled) - len(failing)} parse cleanly, {len(failing)} do not")
            for f in failing:
                print(f'    {f["path"]}: {f["message"][:200]}')


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=os.path.join(ROOT, ".corpus"))
    parser.add_argument("--advise", default=os.path.join(ROOT, "build", "advise"))
    parser.add_argument("--nvcc", action="store_true", help="check that what nvcc compiles parses")
    parser.add_argument("--nvcc-timeout", type=float, default=300, metavar="SECONDS",
                        help="give up on an nvcc compile after this long (default 300)")
    parser.add_argument("--list", metavar="RULE", help="print every finding of this rule")
    parser.add_argument("--save", metavar="DIR", help="write each repository's JSON report to DIR/<repo>.json")
    parser.add_argument("--verbose", action="store_true", help="print each unreadable and unparsed file on stderr")
    parser.add_argument("repos", nargs="*", help="repository folders (default: every one in the corpus)")
    args = parser.parse_args()
    repos = args.repos or sorted(os.path.join(args.corpus, d) for d in os.listdir(args.corpus)
                                 if os.path.isdir(os.path.join(args.corpus, d)) and not d.startswith("."))
    if not repos:
        sys.exit(f"no repositories under {args.corpus}: run bench/realcode/corpus.sh first")
    evaluate(args, repos)
    if args.nvcc:
        check_nvcc(args, repos)


if __name__ == "__main__":
    main()
