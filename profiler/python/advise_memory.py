"""Device memory of a PyTorch process, for `advise profile --memory`.

The injection library imports this module inside the profiled process when
CUDA starts (profiler/inject/python_sites.c) and calls start(). It turns on
PyTorch's allocator history (torch.cuda.memory._record_memory_history: every
tensor allocation and free, with its Python stack, in a ring of max_entries)
and counts optimizer steps. At exit, finish() takes PyTorch's snapshot once,
replays the history and writes a bounded summary next to the profile's other
parts: memory over time, the peak and what was live at it by allocating
line (with the line that freed it afterwards), memory a variable carried
from one optimizer step into the next (live at the peak, freed later at a
line of the project), live memory that grows from step to step, allocations
per line, and the failing allocation of an out-of-memory error with what was
live then.

It must not change the program: every failure is reported in the part and
swallowed, nothing runs on the user's hot path except PyTorch's own history
and one cheap hook per optimizer step.
"""
import atexit
import json
import os
import sys
import time

MAX_SAMPLES = 512     # points of memory over time
MAX_LINES = 64        # lines per kind (peak holders, kept, growth, allocations)
MAX_STEP_MARKS = 4096 # step ends kept (the latest ones)

_state = None


def start(parts_dir, root, max_entries=200000):
    """Turn the allocator history on; register the step hook and the exit."""
    global _state
    if _state is not None:
        return
    _state = {"parts": parts_dir, "root": os.path.realpath(root), "cwd": os.getcwd(),
              "max_entries": int(max_entries), "steps": [], "step_count": 0, "error": None,
              "pid": os.getpid()}
    try:
        import torch
        # `advise profile --memory=native` asks for C++ frames too (ADVISE_PROFILE_MEMORY_STACKS=all)
        stacks = "all" if os.environ.get("ADVISE_PROFILE_MEMORY_STACKS") == "all" else "python"
        torch.cuda.memory._record_memory_history(max_entries=int(max_entries), stacks=stacks)
        _state["torch"] = torch
    except Exception as e:  # an old PyTorch, or CUDA not usable: say so in the part
        _state["error"] = "could not record PyTorch's allocator history: %s" % (e,)
    try:
        from torch.optim.optimizer import register_optimizer_step_post_hook
        register_optimizer_step_post_hook(_on_step)
    except Exception:
        pass  # no steps: growth per step is not measured
    atexit.register(finish)


def _on_step(optimizer, args, kwargs):
    s = _state
    s["step_count"] += 1
    marks = s["steps"]
    marks.append(time.time_ns() // 1000)
    if len(marks) > 2 * MAX_STEP_MARKS:
        del marks[:MAX_STEP_MARKS]


def _user_frame(frames, s, cache):
    """The innermost frame in the project (frames come innermost first). With
    --memory=native the stacks hold C++ frames too: one of the project's (a C++
    extension's source) counts like a Python one; frames without a line
    (unsymbolized C++ code) never do."""
    for f in frames or ():
        name = f.get("filename") or ""
        if int(f.get("line") or 0) < 1:
            continue
        hit = cache.get(name)
        if hit is None:
            path = name if os.path.isabs(name) else os.path.join(s["cwd"], name)
            path = os.path.realpath(path)
            root = s["root"]
            hit = False
            if path.startswith(root + os.sep) and "site-packages" not in path and "dist-packages" not in path:
                hit = os.path.relpath(path, root).replace(os.sep, "/")
            cache[name] = hit
        if hit:
            return (hit, int(f.get("line") or 0), f.get("name") or "")
    return None


PROBE_BYTES = 1536 * 1024 + 512 * 3  # an odd size, to find the probe in the history


def _probe(torch, device):
    """Allocates and frees a probe tensor; the wall time (microseconds) it happened at, or None."""
    try:
        before = time.time_ns() // 1000
        probe = torch.empty(PROBE_BYTES, dtype=torch.uint8, device=device)
        after = time.time_ns() // 1000
        del probe
        return (before + after) // 2
    except Exception:
        return None


def _clock_offset(trace, probe_us):
    """Microseconds to add to a trace entry's time_us to get time.time_ns()//1000.
    PyTorch stamps entries with its own clock; the probe's allocation ties the two
    together. None when the probe is not in the history."""
    if probe_us is None:
        return None
    for e in reversed(trace):
        if e.get("action") == "alloc" and e.get("size", 0) >= PROBE_BYTES and "time_us" in e:
            return probe_us - int(e["time_us"])
    return None


def _downsample(points, limit):
    """At most limit points; each bucket keeps its highest point, so the peak stays."""
    if len(points) <= limit:
        return points
    out = []
    per = len(points) / float(limit)
    for b in range(limit):
        chunk = points[int(b * per):max(int((b + 1) * per), int(b * per) + 1)]
        out.append(max(chunk, key=lambda p: p[1]))
    return out


def _top(table, limit):
    rows = sorted(table.items(), key=lambda kv: -kv[1][0])[:limit]
    return rows


def _summarize(torch, device, snapshot, s, offset):
    trace = snapshot["device_traces"][device] if device < len(snapshot["device_traces"]) else []
    cache = {}
    # The state at the end: live blocks (with the stack that allocated them) and reserved segments.
    end_live = {}
    end_reserved = 0
    for seg in snapshot["segments"]:
        if seg.get("device") != device:
            continue
        end_reserved += int(seg.get("total_size", 0))
        for b in seg.get("blocks", ()):
            if b.get("state") in ("active_allocated", "active_awaiting_free", "active_pending_free"):
                # requested bytes, as the history's events count them (blocks are rounded up)
                size = int(b.get("requested_size") or b["size"])
                end_live[int(b["address"])] = (size, _user_frame(b.get("frames"), s, cache), None)
    # Pair the window's events by address: an alloc opens a block, its free_completed closes it.
    open_blocks = {}
    before_window = {}   # freed in the window, allocated before it: live at its start
    alloc_delta = 0
    seg_delta = 0
    for e in trace:
        a = e.get("action")
        if a == "alloc":
            open_blocks[int(e["addr"])] = 1
            alloc_delta += int(e["size"])
        elif a == "free_completed":
            addr = int(e["addr"])
            if addr in open_blocks:
                del open_blocks[addr]
            else:
                before_window[addr] = (int(e["size"]), None, None)
            alloc_delta -= int(e["size"])
        elif a in ("segment_alloc", "segment_map"):
            seg_delta += int(e["size"])
        elif a in ("segment_free", "segment_unmap"):
            seg_delta -= int(e["size"])
    live = _live_at_window_start(before_window, end_live, open_blocks)
    allocated = sum(v[0] for v in live.values())
    reserved = max(0, end_reserved - seg_delta)

    steps = sorted(t - offset for t in s["steps"]) if offset is not None else []
    step_i = 0
    step_live = []       # per step end in the window: {site: bytes}
    by_site = {}         # site: live bytes now
    for v in live.values():
        by_site[v[1]] = by_site.get(v[1], 0) + v[0]
    allocs = {}          # site: [bytes, count]
    points = []
    peak = (allocated, reserved, trace[0].get("time_us", 0) if trace else 0, -1)
    oom = None
    t0 = None
    for i, e in enumerate(trace):
        a = e.get("action")
        t = int(e.get("time_us", i))
        if t0 is None:
            t0 = t
        while step_i < len(steps) and steps[step_i] <= t:
            if steps[step_i] >= t0:
                step_live.append(dict(by_site))
            step_i += 1
        if a == "alloc":
            size = int(e["size"])
            site = _user_frame(e.get("frames"), s, cache)
            live[int(e["addr"])] = (size, site, step_i)
            by_site[site] = by_site.get(site, 0) + size
            row = allocs.setdefault(site, [0, 0])  # per line: bytes and allocations in the window
            row[0] += size
            row[1] += 1
            allocated += size
        elif a == "free_completed":
            size, site, _ = live.pop(int(e["addr"]), (int(e["size"]), None, None))
            by_site[site] = by_site.get(site, 0) - size
            allocated -= size
        elif a in ("segment_alloc", "segment_map"):
            reserved += int(e["size"])
        elif a in ("segment_free", "segment_unmap"):
            reserved -= int(e["size"])
        elif a == "oom" and oom is None:
            site = _user_frame(e.get("frames"), s, cache)
            oom = {"time_ns": (t - t0) * 1000, "bytes": int(e.get("size", 0)),
                   "device_free": int(e.get("device_free", 0)), "site": site,
                   "holders": dict(by_site), "allocated": allocated}
        points.append(((t - t0) * 1000, allocated, reserved))
        if allocated > peak[0]:
            peak = (allocated, reserved, t, i)
    # Steps that ended after the last event: the state then is the final one.
    for t in steps[step_i:]:
        if t0 is not None and t >= t0:
            step_live.append(dict(by_site))
    # The live set at the peak: replay once more up to it (cheaper than copying at every new peak).
    peak_live = _live_at(trace, peak[3], before_window, end_live, open_blocks, steps, s, cache)
    peak_sites = {}
    for size, site, _ in peak_live.values():
        peak_sites[site] = peak_sites.get(site, 0) + size
    steps_before_peak = sum(1 for t in steps if t <= peak[2])
    freed_at = _freed_at(trace, peak[3], peak_live, s, cache)
    max_allocated = int(torch.cuda.max_memory_allocated(device))
    part = {
        "device": device,
        "entries": len(trace),
        "window_complete": len(trace) < s["max_entries"],
        "max_allocated": max_allocated,
        "max_reserved": int(torch.cuda.max_memory_reserved(device)),
        "peak": {"time_ns": max(0, (peak[2] - (t0 or 0)) * 1000), "allocated": peak[0], "reserved": peak[1]},
        "samples": [list(p) for p in _downsample(points, MAX_SAMPLES)],
        "lines": [],
        "steps": {"count": s["step_count"], "in_window": len(step_live)},
    }
    lines = part["lines"]

    def add(kind, table, count_of=None):
        for site, v in _top(table, MAX_LINES):
            row = {"kind": kind, "bytes": int(v[0]), "count": int(v[1])}
            if site:
                row.update({"file": site[0], "line": site[1], "function": site[2]})
            lines.append(row)

    add("peak", {k: (b, 0) for k, b in peak_sites.items() if b > 0})
    _add_freed(lines, peak_live, freed_at)
    add("kept", _kept(peak_live, freed_at, steps_before_peak))
    add("allocs", {k: (v[0], v[1]) for k, v in allocs.items()})
    # Growth: a line whose live bytes rose at most step ends over the last ones in the window.
    if len(step_live) >= 4:
        recent = step_live[-min(len(step_live), 32):]
        growth = {}
        sites = set()
        for d in recent:
            sites.update(d)
        n = len(recent)
        for site in sites:
            ys = [d.get(site, 0) for d in recent]
            rises = sum(1 for a, b in zip(ys, ys[1:]) if b > a)
            per_step = (ys[-1] - ys[0]) / float(n - 1)
            if per_step > 0 and rises >= 0.75 * (n - 1):
                growth[site] = (int(per_step), n)
        add("growth", growth)
        total = [sum(d.values()) for d in recent]
        part["steps"]["bytes_per_step"] = int((total[-1] - total[0]) / float(n - 1))
    if oom:
        o = {"time_ns": oom["time_ns"], "bytes": oom["bytes"], "device_free": oom["device_free"],
             "allocated": oom["allocated"]}
        if oom["site"]:
            o.update({"file": oom["site"][0], "line": oom["site"][1], "function": oom["site"][2]})
        part["oom"] = o
        add("oom", {k: (b, 0) for k, b in oom["holders"].items() if b > 0})
    return part


def _live_at_window_start(before_window, end_live, open_blocks):
    """Blocks live when the window began: freed in it but allocated before it, and
    live at the end without an allocation in it (alive across the whole window)."""
    live = dict(before_window)
    for addr, v in end_live.items():
        if addr not in open_blocks:
            live[addr] = v
    return live


def _live_at(trace, index, before_window, end_live, open_blocks, steps, s, cache):
    """The blocks live just after trace[index]: address -> (bytes, allocating line,
    optimizer steps ended before the allocation; None when it predates the window)."""
    live = _live_at_window_start(before_window, end_live, open_blocks)
    step_i = 0
    for i, e in enumerate(trace[:index + 1]):
        a = e.get("action")
        t = int(e.get("time_us", i))
        while step_i < len(steps) and steps[step_i] <= t:
            step_i += 1
        if a == "alloc":
            live[int(e["addr"])] = (int(e["size"]), _user_frame(e.get("frames"), s, cache), step_i)
        elif a == "free_completed":
            live.pop(int(e["addr"]), None)
    return live


def _freed_at(trace, index, peak_live, s, cache):
    """Where each block live at the peak was freed afterwards: address -> the line
    (None: no frame in the project, as for frees on autograd's backward thread).
    Blocks still live at the end of the window are absent. The free's own stack
    is PyTorch's free_requested entry (context="all", the history's default);
    free_completed stands in when that is missing."""
    pending = set(peak_live)
    out = {}
    for e in trace[index + 1:]:
        if not pending:
            break
        a = e.get("action")
        if a not in ("free_requested", "free_completed"):
            continue
        addr = int(e["addr"])
        if addr not in pending:
            continue
        site = _user_frame(e.get("frames"), s, cache)
        if a == "free_completed":
            pending.discard(addr)
            out.setdefault(addr, site)
        elif site is not None or addr not in out:
            out[addr] = site
    return out


def _add_freed(lines, peak_live, freed_at):
    """Each peak row gets the line that freed most of its bytes after the peak."""
    by_site = {}
    for addr, (size, site, _) in peak_live.items():
        if addr in freed_at and freed_at[addr] is not None:
            table = by_site.setdefault(site, {})
            table[freed_at[addr]] = table.get(freed_at[addr], 0) + size
    for row in lines:
        if row["kind"] != "peak":
            continue
        site = (row["file"], row["line"], row["function"]) if "file" in row else None
        table = by_site.get(site)
        if table:
            where, size = max(table.items(), key=lambda kv: kv[1])
            row["freed"] = {"file": where[0], "line": where[1], "function": where[2], "bytes": int(size)}


def _kept(peak_live, freed_at, steps_before_peak):
    """Memory live at the peak that an earlier step allocated and a project line
    freed later, by the freeing line: what a variable carried into the next step."""
    table = {}
    for addr, (size, _, step) in peak_live.items():
        where = freed_at.get(addr)
        if where is None or step is None or step >= steps_before_peak:
            continue
        row = table.setdefault(where, [0, 0])
        row[0] += size
        row[1] += 1
    return {k: (v[0], v[1]) for k, v in table.items()}


def finish():
    s = _state
    if s is None or s.get("done") or os.getpid() != s["pid"]:
        return
    s["done"] = True
    parts = []
    error = s["error"]
    torch = s.get("torch")
    if torch is not None and error is None:
        try:
            devices = [d for d in range(torch.cuda.device_count())
                       if torch.cuda.is_initialized() and torch.cuda.max_memory_reserved(d) > 0]
            probes = {d: _probe(torch, d) for d in devices} if s["steps"] else {}
            # one snapshot holds every device's history: it is the costly part of the exit
            snapshot = torch.cuda.memory._snapshot() if devices else None
            for device in devices:
                traces = snapshot["device_traces"]
                trace = traces[device] if device < len(traces) else []
                offset = _clock_offset(trace, probes[device]) if s["steps"] else 0
                parts.append(_summarize(torch, device, snapshot, s, offset))
            torch.cuda.memory._record_memory_history(enabled=None)
        except Exception as e:
            error = "could not read PyTorch's allocator history: %s: %s" % (type(e).__name__, e)
    out = {"format": "advise-memory-part", "version": 1, "pid": s["pid"], "devices": parts}
    if error:
        out["error"] = error
    path = os.path.join(s["parts"], "memory-%d.json" % s["pid"])
    try:
        with open(path + ".tmp", "w") as f:
            json.dump(out, f, separators=(",", ":"))
        os.replace(path + ".tmp", path)
    except OSError as e:
        sys.stderr.write("advise: could not write the memory profile %s: %s\n" % (path, e))
