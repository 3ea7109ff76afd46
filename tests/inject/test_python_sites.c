/* The Python call-site hook (profiler/inject/python_sites.c) in a real
 * interpreter, embedded here, with stand-ins for the rest of the injection
 * library: the hook resolves the user line that makes a CUDA call, and
 * after `--steps` detached the profiler the hook leaves, giving back the
 * frames it held. Both hooks are tried: the sys.monitoring tool (3.12 and
 * later) and the profile hook (forced with ADVISE_PROFILE_PYTHON_HOOK=setprofile,
 * the only one before 3.12). Built where Python's embedding headers are found. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profiler/inject/inject.h"

/* ---- stand-ins for the injection library ---------------------------------- */
Aggregator *inject_agg;
char inject_note[512];
const char *inject_root;
static char user_dir[256];
static bool detached;
static char last_site_file[256];
static uint32_t last_site_line;

bool inject_path_is_user(const char *path) { return strncmp(path, user_dir, strlen(user_dir)) == 0; }
const char *inject_relative(const char *path) {
    size_t n = strlen(user_dir);
    return strncmp(path, user_dir, n) == 0 && path[n] == '/' ? path + n + 1 : path;
}
int agg_site(Aggregator *agg, const char *file, uint32_t line, const char *function) {
    (void)agg;
    (void)function;
    snprintf(last_site_file, sizeof last_site_file, "%s", file);
    last_site_line = line;
    return 1;
}
static uint64_t steps_wanted, steps_seen; /* --steps N, and the optimizer steps the hook counted */
static int gil_at_detach = -1;             /* PyGILState_Check() inside the detach */
bool recording_detached(void) { return detached; }
bool recording_window_detach(void) {
    gil_at_detach = PyGILState_Check();
    return detached = true;
}
bool recording_window_due(uint64_t steps) { return steps_wanted && steps >= steps_wanted && !detached; }
uint64_t recording_window_steps(void) { return steps_wanted; }
void step_marks_record(void) { steps_seen++; }
uint64_t step_marks_seen(void) { return steps_seen; }

/* ---- what the Python code calls ------------------------------------------- */
/* `probe.launch()`: a CUDA call as the injection library's callback sees it
 * (inside a C function called from Python): which user line made it? */
static PyObject *launch(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    last_site_line = 0;
    last_site_file[0] = 0;
    int site = python_site();
    return PyLong_FromLong(site < 0 ? -1 : (long)last_site_line);
}
/* `probe.detach()`: --steps's detach, at an optimizer step's end */
static PyObject *detach(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    detached = true;
    Py_RETURN_NONE;
}
/* `probe.profiling()`: is a C profile function set on this thread? */
static PyObject *profiling(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(PyThreadState_Get()->c_profilefunc != NULL);
}
static PyMethodDef probe_methods[] = {{"launch", launch, METH_NOARGS, NULL},
                                      {"detach", detach, METH_NOARGS, NULL},
                                      {"profiling", profiling, METH_NOARGS, NULL},
                                      {NULL, NULL, 0, NULL}};
static struct PyModuleDef probe_module = {PyModuleDef_HEAD_INIT, "probe", NULL, -1, probe_methods,
                                          NULL, NULL, NULL, NULL};
static PyObject *probe_init(void) { return PyModule_Create(&probe_module); }

/* The user's script, in a folder of its own (the stand-in calls it user code).
 * Line numbers matter: the assertions name them. */
static const char script[] =
    "import gc, probe, weakref\n"                      /* 1 */
    "class Tracked: pass\n"                            /* 2 */
    "def step():\n"                                    /* 3 */
    "    return probe.launch()\n"                      /* 4 */
    "def train():\n"                                   /* 5 */
    "    held = Tracked()\n"                           /* 6 */
    "    ref = weakref.ref(held)\n"                    /* 7 */
    "    line = step()\n"                              /* 8 */
    "    probe.detach()\n"                             /* 9 */
    "    after = step()\n"                             /* 10 */
    "    return ref, line, after, probe.profiling()\n" /* 11 */
    "ref, line, after, profiling = train()\n"          /* 12 */
    "gc.collect()\n"                                   /* 13 */
    "RESULT = (line, after, profiling, ref() is None, probe.profiling())\n";

static void run_script(const char *hook, long *line, long *after, bool *profiling_inside, bool *freed,
                       bool *profiling_after) {
    snprintf(user_dir, sizeof user_dir, "/tmp/advise-python-sites-XXXXXX");
    cr_assert_not_null(mkdtemp(user_dir));
    char path[320];
    snprintf(path, sizeof path, "%s/train.py", user_dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(script, f);
    fclose(f);
    if (hook) setenv("ADVISE_PROFILE_PYTHON_HOOK", hook, 1);
    else unsetenv("ADVISE_PROFILE_PYTHON_HOOK");
    PyImport_AppendInittab("probe", probe_init);
    Py_InitializeEx(0);
    python_sites_start();
    /* the hook is installed by a pending call, on the main thread's next bytecode */
    cr_assert_eq(PyRun_SimpleString("for _ in range(100): pass\n"), 0);
    cr_assert(python_sites_active(), "the hook is installed");
    PyObject *globals = PyDict_New();
    PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
    PyObject *code = Py_CompileString(script, path, Py_file_input);
    cr_assert_not_null(code);
    PyObject *done = PyEval_EvalCode(code, globals, globals);
    if (!done) PyErr_Print();
    cr_assert_not_null(done);
    PyObject *result = PyDict_GetItemString(globals, "RESULT");
    cr_assert_not_null(result);
    *line = PyLong_AsLong(PyTuple_GetItem(result, 0));
    *after = PyLong_AsLong(PyTuple_GetItem(result, 1));
    *profiling_inside = PyObject_IsTrue(PyTuple_GetItem(result, 2));
    *freed = PyObject_IsTrue(PyTuple_GetItem(result, 3));
    *profiling_after = PyObject_IsTrue(PyTuple_GetItem(result, 4));
    Py_DECREF(done);
    Py_DECREF(code);
    Py_DECREF(globals);
    unlink(path);
    rmdir(user_dir);
}

/* Each test runs in its own process (Criterion): one interpreter each. */
Test(python_sites, the_profile_hook_finds_the_line_then_leaves_after_the_detach) {
    long line = 0, after = 0;
    bool inside = false, freed = false, profiling = true;
    run_script("setprofile", &line, &after, &inside, &freed, &profiling);
    cr_assert_eq(line, 4, "the launch is charged to the user line that made it (line %ld)", line);
    cr_assert_eq(after, -1, "after the detach no site is resolved (%ld)", after);
    cr_assert(!inside, "the profile hook left the thread at its first call after the detach");
    cr_assert(!profiling);
    cr_assert(freed, "the frames the hook held were given back: train()'s locals were freed");
}

Test(python_sites, the_default_hook_finds_the_line_and_lets_go_of_frames) {
    long line = 0, after = 0;
    bool inside = true, freed = false, profiling = true;
    run_script(NULL, &line, &after, &inside, &freed, &profiling);
    cr_assert_eq(line, 4, "the launch is charged to the user line that made it (line %ld)", line);
    cr_assert(freed, "no frame is kept past its return: train()'s locals were freed");
#if PY_VERSION_HEX >= 0x030C0000
    /* sys.monitoring: no profile function at all */
    cr_assert(!inside && !profiling);
#else
    cr_assert_eq(after, -1, "after the detach no site is resolved (%ld)", after);
    cr_assert(!inside && !profiling, "before 3.12 the default is the profile hook, which leaves after the detach");
#endif
}

/* torch.optim's step post-hook, with stand-ins for the two torch modules the
 * hook asks (torch is not needed): the Nth step of the first optimizer
 * detaches, without the GIL, and a graph capture in progress puts it off. */
static const char fake_torch[] =
    "import sys, types\n"
    "hooks = []\n"
    "optim = types.ModuleType('torch.optim.optimizer')\n"
    "optim.register_optimizer_step_post_hook = hooks.append\n"
    "cuda = types.ModuleType('torch.cuda')\n"
    "cuda.capturing = False\n"
    "cuda.is_current_stream_capturing = lambda: cuda.capturing\n"
    "sys.modules['torch.optim.optimizer'] = optim\n"
    "sys.modules['torch.cuda'] = cuda\n";

static void step(const char *optimizer) {
    char code[128];
    snprintf(code, sizeof code, "hooks[0](%s, (), {})\n", optimizer);
    cr_assert_eq(PyRun_SimpleString(code), 0);
}

Test(python_sites, the_nth_optimizer_step_detaches_without_the_gil) {
    snprintf(user_dir, sizeof user_dir, "/nonexistent-user-dir");
    steps_wanted = 3;
    setenv("ADVISE_PROFILE_PYTHON_HOOK", "setprofile", 1);
    Py_InitializeEx(0);
    cr_assert_eq(PyRun_SimpleString(fake_torch), 0);
    python_sites_start();
    cr_assert_eq(PyRun_SimpleString("for _ in range(100): pass\nopt, other = object(), object()\n"), 0);
    cr_assert_eq(PyRun_SimpleString("assert len(hooks) == 1, hooks\n"), 0, "the step hook is registered");
    step("opt");
    step("other"); /* a second optimizer's steps are not counted */
    step("opt");
    cr_assert(!detached, "two steps of three");
    cr_assert_eq(PyRun_SimpleString("cuda.capturing = True\n"), 0);
    step("opt");
    cr_assert(!detached, "not during a graph capture: a later step detaches");
    cr_assert_eq(PyRun_SimpleString("cuda.capturing = False\n"), 0);
    step("opt");
    cr_assert(detached, "the first step after the capture detaches");
    cr_assert_eq(steps_seen, 4, "the first optimizer's steps only (%llu)", (unsigned long long)steps_seen);
    cr_assert_eq(gil_at_detach, 0, "the detach (and its wait for the device) runs without the GIL");
    cr_assert_eq(PyRun_SimpleString("x = sum(range(10))\n"), 0, "Python runs on after the detach");
}
