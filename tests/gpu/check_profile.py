#!/usr/bin/env python3
"""Checks that a profile written by `advise profile` puts each kernel launch,
copy, sync and allocation on the source line that made it.

    python3 tests/gpu/check_profile.py PROFILE.json SOURCE [SOURCE...]

Run from the repository root (profile paths are relative to it). The
expectations come from the sources themselves:

- Python: a comment `# expect: KIND [WHAT...]` on the line, where KIND is
  launch (WHAT: a regular expression one kernel name must match), memcpy
  (WHAT: direction and memory kind, e.g. `HtoD pageable`), sync or alloc.
- CUDA (.cu): every `name<<<` launch, cudaMemcpy*/cudaMemset* call,
  cuda*Synchronize call and cudaMalloc* call outside comments; a call that
  spans several lines may be attributed to any of them.

Prints one row per expectation and exits 1 if any is missing or misplaced.
Used on the H200 (tests/gpu/profile_samples.sh) and on CI against the
profiles recorded there (tests/fixtures/profiles/h200/).
"""
import json
import re
import sys

CU_PATTERNS = [
    (re.compile(r"\b([A-Za-z_]\w*)\s*<<<"), "launch"),
    (re.compile(r"\bcudaMemcpy\w*\s*\("), "memcpy"),
    (re.compile(r"\bcudaMemset\w*\s*\("), "memset"),
    (re.compile(r"\bcuda(Device|Stream|Event)Synchronize\s*\("), "sync"),
    (re.compile(r"\bcuda(Malloc|MallocHost|HostAlloc|MallocManaged|MallocAsync)\s*\("), "alloc"),
]


def strip_cu_comments(lines):
    """Lines with // and /* */ comments blanked, so counting stays aligned."""
    out, in_block = [], False
    for line in lines:
        text, i = "", 0
        while i < len(line):
            if in_block:
                end = line.find("*/", i)
                if end < 0:
                    i = len(line)
                else:
                    in_block, i = False, end + 2
            elif line.startswith("/*", i):
                in_block, i = True, i + 2
            elif line.startswith("//", i):
                break
            else:
                text += line[i]
                i += 1
        out.append(text)
    return out


def statement_span(code, start):
    """1-based lines from start to the end of the statement (first ';')."""
    end = start
    while end <= len(code) and ";" not in code[end - 1]:
        end += 1
    return set(range(start, min(end, len(code)) + 1))


def cu_expectations(path, lines):
    code = strip_cu_comments(lines)
    found = []
    for n, text in enumerate(code, 1):
        for pattern, kind in CU_PATTERNS:
            m = pattern.search(text)
            if not m:
                continue
            what = None
            if kind == "launch":
                what = r"(^|[\s:])" + re.escape(m.group(1)) + r"[(<]"
            found.append({"file": path, "line": n, "lines": statement_span(code, n), "kind": kind, "what": what,
                          "text": text.strip()})
    return found


def py_expectations(path, lines):
    found = []
    for n, text in enumerate(lines, 1):
        m = re.search(r"#\s*expect:\s*(\w+)\s*(.*)$", text)
        if not m:
            continue
        found.append({"file": path, "line": n, "lines": {n}, "kind": m.group(1), "what": m.group(2).strip() or None,
                      "text": text.split("#")[0].strip()})
    return found


def matches(profile, op, exp):
    if op["kind"] != exp["kind"]:
        return False
    what = exp["what"]
    if not what:
        return True
    if op["kind"] == "launch":
        return re.search(what, profile["kernels"][op["kernel"]]["name"]) is not None
    if op["kind"] == "memcpy":
        words = what.split()
        return all(w in (op.get("copy"), op.get("src"), op.get("dst")) for w in words)
    return True


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    with open(argv[1]) as f:
        profile = json.load(f)
    expectations = []
    for path in argv[2:]:
        with open(path) as f:
            lines = f.read().split("\n")
        expectations += cu_expectations(path, lines) if path.endswith(".cu") else py_expectations(path, lines)

    def site_of(op):
        s = op.get("site")
        if s is None:
            return None, None
        site = profile["sites"][s]
        return profile["files"][site["file"]]["path"], site["line"]

    failures = 0
    print(f"{'where':42} {'kind':7} {'result':10} code")
    for exp in expectations:
        here, elsewhere = 0, set()
        for op in profile["ops"]:
            if not matches(profile, op, exp):
                continue
            file, line = site_of(op)
            if file == exp["file"] and line in exp["lines"]:
                here += op["stats"]["count"]
            else:
                elsewhere.add(f"{file}:{line}")
        if here:
            result = f"ok x{here}"
        elif elsewhere:
            result = "MISPLACED"
            failures += 1
        else:
            result = "MISSING"
            failures += 1
        print(f"{exp['file'] + ':' + str(exp['line']):42} {exp['kind']:7} {result:10} {exp['text'][:60]}")
        if result == "MISPLACED":
            print(f"{'':42} {'':7} {'':10} found at: {', '.join(sorted(elsewhere))[:200]}")
    print(f"{len(expectations) - failures}/{len(expectations)} expectations met in {argv[1]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
