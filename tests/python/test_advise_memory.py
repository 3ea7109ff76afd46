"""profiler/python/advise_memory.py on synthetic allocator histories (no GPU,
no PyTorch): the replay that finds the peak, what was live at it, growth per
step and the out-of-memory point. Run: python3 -m unittest (ctest does)."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "profiler", "python"))
import advise_memory  # noqa: E402

ROOT = "/proj"
MiB = 1 << 20


class FakeCuda:
    def __init__(self, max_allocated, max_reserved):
        self.max_allocated, self.max_reserved = max_allocated, max_reserved

    def max_memory_allocated(self, device):
        return self.max_allocated

    def max_memory_reserved(self, device):
        return self.max_reserved


class FakeTorch:
    def __init__(self, max_allocated=0, max_reserved=0):
        self.cuda = FakeCuda(max_allocated, max_reserved)


def frames(line, file="/proj/train.py", name="main"):
    # innermost first, as PyTorch records them: library frames before the user's
    return [{"filename": "/usr/lib/python3/site-packages/torch/nn/modules/linear.py", "line": 125, "name": "forward"},
            {"filename": file, "line": line, "name": name}]


def alloc(addr, size, line, t):
    return {"action": "alloc", "addr": addr, "size": size, "frames": frames(line), "time_us": t}


def free(addr, size, t):
    return {"action": "free_completed", "addr": addr, "size": size, "frames": [], "time_us": t}


def free_requested(addr, size, line, t):
    return {"action": "free_requested", "addr": addr, "size": size, "frames": frames(line), "time_us": t}


def state(steps=(), max_entries=1000):
    return {"root": ROOT, "cwd": ROOT, "max_entries": max_entries, "steps": list(steps), "step_count": len(steps)}


def snapshot(trace, live_blocks=(), reserved=64 * MiB):
    blocks = [{"address": a, "size": s, "state": "active_allocated", "frames": frames(l)} for a, s, l in live_blocks]
    return {"segments": [{"device": 0, "total_size": reserved, "blocks": blocks}], "device_traces": [trace]}


def lines(part, kind):
    return {(r.get("file"), r.get("line")): r for r in part["lines"] if r["kind"] == kind}


class Replay(unittest.TestCase):
    def test_peak_and_its_holders(self):
        # 10 MiB weights at line 5 live throughout; activations at line 9 and 10 rise and fall
        trace = [alloc(1, 10 * MiB, 5, 100), alloc(2, 30 * MiB, 9, 200), alloc(3, 20 * MiB, 10, 300),
                 free(3, 20 * MiB, 400), free(2, 30 * MiB, 500), alloc(4, 5 * MiB, 11, 600)]
        snap = snapshot(trace, live_blocks=[(1, 10 * MiB, 5), (4, 5 * MiB, 11)])
        part = advise_memory._summarize(FakeTorch(60 * MiB, 64 * MiB), 0, snap, state(), 0)
        self.assertEqual(part["peak"]["allocated"], 60 * MiB)
        self.assertEqual(part["peak"]["time_ns"], 200 * 1000)
        peak = lines(part, "peak")
        self.assertEqual(peak[("train.py", 5)]["bytes"], 10 * MiB)
        self.assertEqual(peak[("train.py", 9)]["bytes"], 30 * MiB)
        self.assertEqual(peak[("train.py", 10)]["bytes"], 20 * MiB)
        self.assertNotIn(("train.py", 11), peak)  # allocated after the peak
        self.assertTrue(part["window_complete"])
        self.assertEqual(lines(part, "allocs")[("train.py", 9)]["count"], 1)

    def test_memory_allocated_before_the_window_counts(self):
        # the ring lost the allocation of block 7 (8 MiB, still live) and of block 8 (freed in the window)
        trace = [free(8, 4 * MiB, 100), alloc(2, 16 * MiB, 9, 200), free(2, 16 * MiB, 300)]
        snap = snapshot(trace, live_blocks=[(7, 8 * MiB, 3)])
        part = advise_memory._summarize(FakeTorch(28 * MiB, 64 * MiB), 0, snap, state(max_entries=3), 0)
        self.assertFalse(part["window_complete"])
        self.assertEqual(part["peak"]["allocated"], 24 * MiB)  # 8 + 16: block 8 was gone by then
        peak = lines(part, "peak")
        self.assertEqual(peak[("train.py", 3)]["bytes"], 8 * MiB)
        self.assertEqual(peak[("train.py", 9)]["bytes"], 16 * MiB)

    def test_growth_per_step_names_the_line_that_leaks(self):
        # each step: a 4 MiB activation at line 9 freed, and 1 MiB at line 12 that is never freed
        trace, t, steps, addr = [], 0, [], 100
        for step in range(10):
            trace.append(alloc(addr, 4 * MiB, 9, t + 1))
            trace.append(alloc(addr + 1, MiB, 12, t + 2))
            trace.append(free(addr, 4 * MiB, t + 3))
            steps.append(t + 5)
            t += 10
            addr += 2
        live = [(100 + 2 * i + 1, MiB, 12) for i in range(10)]
        part = advise_memory._summarize(FakeTorch(14 * MiB, 64 * MiB), 0, snapshot(trace, live), state(steps), 0)
        growth = lines(part, "growth")
        self.assertEqual(set(growth), {("train.py", 12)})
        self.assertEqual(growth[("train.py", 12)]["bytes"], MiB)
        self.assertEqual(part["steps"]["bytes_per_step"], MiB)
        self.assertEqual(part["steps"]["in_window"], 10)

    def test_steady_steps_show_no_growth(self):
        trace, t, steps = [], 0, []
        for step in range(10):
            trace += [alloc(50, 4 * MiB, 9, t + 1), free(50, 4 * MiB, t + 3)]
            steps.append(t + 5)
            t += 10
        part = advise_memory._summarize(FakeTorch(4 * MiB, 64 * MiB), 0, snapshot(trace), state(steps), 0)
        self.assertEqual(lines(part, "growth"), {})
        self.assertEqual(part["steps"]["bytes_per_step"], 0)

    def test_out_of_memory_keeps_the_failing_line_and_what_was_live(self):
        trace = [alloc(1, 40 * MiB, 5, 100),
                 {"action": "oom", "size": 80 * MiB, "device_free": 10 * MiB, "frames": frames(20), "time_us": 150},
                 free(1, 40 * MiB, 200)]
        part = advise_memory._summarize(FakeTorch(40 * MiB, 64 * MiB), 0, snapshot(trace), state(), 0)
        self.assertEqual(part["oom"]["bytes"], 80 * MiB)
        self.assertEqual((part["oom"]["file"], part["oom"]["line"]), ("train.py", 20))
        self.assertEqual(part["oom"]["allocated"], 40 * MiB)
        self.assertEqual(lines(part, "oom")[("train.py", 5)]["bytes"], 40 * MiB)

    def test_peak_rows_name_the_line_that_freed_them(self):
        # activations of line 9 are freed by the user's `del h` at line 14 (free_requested carries
        # the stack, free_completed none); the weights of line 5 stay to the end
        trace = [alloc(1, 10 * MiB, 5, 100), alloc(2, 30 * MiB, 9, 200), alloc(3, 2 * MiB, 9, 210),
                 free_requested(2, 30 * MiB, 14, 300), free(2, 30 * MiB, 301),
                 free_requested(3, 2 * MiB, 15, 310), free(3, 2 * MiB, 311)]
        part = advise_memory._summarize(FakeTorch(42 * MiB, 64 * MiB), 0,
                                        snapshot(trace, live_blocks=[(1, 10 * MiB, 5)]), state(), 0)
        peak = lines(part, "peak")
        self.assertEqual(peak[("train.py", 9)]["freed"],
                         {"file": "train.py", "line": 14, "function": "main", "bytes": 30 * MiB})
        self.assertNotIn("freed", peak[("train.py", 5)])  # never freed in the window
        self.assertEqual(lines(part, "kept"), {})  # no optimizer step: nothing was carried over

    def test_memory_a_variable_carries_into_the_next_step(self):
        # step 1: the output (line 30, 50 MiB) and activations (line 31) of the forward; the
        # activations go in backward (no Python frame); the optimizer steps at t=100. Step 2's
        # forward allocates again, reaching the peak while step 1's output is still bound; the
        # rebinding at line 25 frees it only then. Weights (line 5) are never freed.
        trace = [alloc(1, 10 * MiB, 5, 10),
                 alloc(2, 50 * MiB, 30, 20), alloc(3, 40 * MiB, 31, 30), free(3, 40 * MiB, 60),
                 alloc(4, 50 * MiB, 30, 120), alloc(5, 40 * MiB, 31, 130),
                 free_requested(2, 50 * MiB, 25, 140), free(2, 50 * MiB, 141), free(5, 40 * MiB, 160)]
        snap = snapshot(trace, live_blocks=[(1, 10 * MiB, 5), (4, 50 * MiB, 30)])
        part = advise_memory._summarize(FakeTorch(150 * MiB, 160 * MiB), 0, snap, state([100]), 0)
        self.assertEqual(part["peak"]["allocated"], 150 * MiB)
        kept = lines(part, "kept")
        self.assertEqual(set(kept), {("train.py", 25)})
        self.assertEqual((kept[("train.py", 25)]["bytes"], kept[("train.py", 25)]["count"]), (50 * MiB, 1))
        # the peak row of line 30 holds both outputs; most of it (step 1's) was freed at line 25
        self.assertEqual(lines(part, "peak")[("train.py", 30)]["bytes"], 100 * MiB)
        self.assertEqual(lines(part, "peak")[("train.py", 30)]["freed"]["line"], 25)

    def test_memory_of_the_current_step_is_not_carried(self):
        # the same loop, but the output is freed before the next forward: the peak holds only this step's
        trace = [alloc(2, 50 * MiB, 30, 20), free_requested(2, 50 * MiB, 34, 40), free(2, 50 * MiB, 41),
                 alloc(4, 50 * MiB, 30, 120), alloc(5, 40 * MiB, 31, 130),
                 free_requested(4, 50 * MiB, 34, 140), free(4, 50 * MiB, 141), free(5, 40 * MiB, 160)]
        part = advise_memory._summarize(FakeTorch(90 * MiB, 96 * MiB), 0, snapshot(trace), state([100]), 0)
        self.assertEqual(part["peak"]["allocated"], 90 * MiB)
        self.assertEqual(lines(part, "kept"), {})
        self.assertEqual(lines(part, "peak")[("train.py", 30)]["freed"]["line"], 34)

    def test_native_frames_of_the_project_are_lines(self):
        # --memory=native: C++ frames come first; the project's extension source counts, an
        # unsymbolized frame (line 0) and libtorch's own do not
        native = [{"filename": "??", "line": 0, "name": "c10::cuda::CUDACachingAllocator::malloc"},
                  {"filename": "/proj/ext/fused.cpp", "line": 0, "name": "fused_forward"},
                  {"filename": "/opt/torch/aten/src/ATen/native/Linear.cpp", "line": 88, "name": "at::linear"},
                  {"filename": "/proj/ext/fused.cpp", "line": 41, "name": "fused_forward"}] + frames(12)
        trace = [{"action": "alloc", "addr": 1, "size": MiB, "frames": native, "time_us": 10}]
        part = advise_memory._summarize(FakeTorch(MiB, 2 * MiB), 0, snapshot(trace), state(), 0)
        self.assertEqual(set(lines(part, "peak")), {("ext/fused.cpp", 41)})

    def test_frames_outside_the_project_are_not_lines(self):
        outside = {"action": "alloc", "addr": 9, "size": MiB, "time_us": 5,
                   "frames": [{"filename": "/elsewhere/lib.py", "line": 3, "name": "f"}]}
        part = advise_memory._summarize(FakeTorch(MiB, 64 * MiB), 0, snapshot([outside]), state(), 0)
        rows = [r for r in part["lines"] if r["kind"] == "peak"]
        self.assertEqual(len(rows), 1)
        self.assertNotIn("file", rows[0])

    def test_samples_are_bounded_and_keep_the_peak(self):
        trace = []
        for i in range(5000):
            trace.append(alloc(i, MiB, 9, 2 * i))
            trace.append(free(i, MiB, 2 * i + 1))
        trace[2001 * 2] = alloc(2001, 900 * MiB, 9, 4002)
        trace[2001 * 2 + 1] = free(2001, 900 * MiB, 4003)
        part = advise_memory._summarize(FakeTorch(900 * MiB, 1 << 30), 0, snapshot(trace), state(max_entries=10**6), 0)
        self.assertLessEqual(len(part["samples"]), advise_memory.MAX_SAMPLES)
        self.assertEqual(max(s[1] for s in part["samples"]), 900 * MiB)
        times = [s[0] for s in part["samples"]]
        self.assertEqual(times, sorted(times))

    def test_the_probe_ties_the_clocks_together(self):
        trace = [alloc(1, MiB, 9, 100), alloc(2, advise_memory.PROBE_BYTES, 9, 500), free(2, advise_memory.PROBE_BYTES, 501)]
        self.assertEqual(advise_memory._clock_offset(trace, 10500), 10000)
        self.assertIsNone(advise_memory._clock_offset(trace[:1], 10500))
        self.assertIsNone(advise_memory._clock_offset(trace, None))


if __name__ == "__main__":
    unittest.main()
