/* Python call sites without holding the GIL at launch time.
 *
 * A hook runs with the GIL when Python functions start and return and keeps,
 * per thread, a stack of the frames that run user code (files in the
 * project, not in site-packages). It holds a reference on each, so a frame
 * it points to is never freed under us.
 *
 * On Python 3.12+ the hook is a sys.monitoring tool (PEP 669) that listens
 * to function starts, resumptions, returns, yields and unwinds only, and
 * answers DISABLE for library code: after its first call, a library
 * function runs uninstrumented, so the cost stays with the few user
 * functions. Before 3.12 (or when every tool id is taken) it is a profile
 * hook (PyEval_SetProfile), which also runs on every C call. A CUDA callback on the same
 * thread then reads the innermost user frame's current line: that thread is
 * inside a C call, so its frames cannot change meanwhile, and reading a line
 * number allocates nothing. Taking the GIL inside a driver callback instead
 * can deadlock in multi-threaded programs (under PyTorch the launching
 * thread does not hold the GIL in the cudaLaunchKernel callback).
 *
 * libpython is found with dlsym in the running process: nothing links it. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profiler/inject/inject.h"

typedef void PyObject;
typedef int (*TraceFunc)(PyObject *, PyObject *, int, PyObject *);

typedef long Py_ssize_t_;
typedef PyObject *(*FastCall)(PyObject *, PyObject *const *, Py_ssize_t_);

enum { TRACE_CALL = 0, TRACE_RETURN = 3 };

/* PyMethodDef, as the C API lays it out */
typedef struct {
    const char *name;
    void *meth;
    int flags;
    const char *doc;
} MethodDef;
enum { METH_FASTCALL_ = 0x0080 };

static struct {
    int (*is_initialized)(void);
    int (*add_pending_call)(int (*)(void *), void *);
    void (*set_profile_all)(TraceFunc, PyObject *);
    void (*set_profile)(TraceFunc, PyObject *);
    PyObject *(*get_frame)(void);                 /* borrowed */
    PyObject *(*frame_back)(PyObject *);          /* new reference */
    PyObject *(*frame_code)(PyObject *);          /* new reference */
    int (*frame_line)(PyObject *);
    int (*frame_lasti)(PyObject *);               /* 3.11+; NULL before */
    PyObject *(*import)(const char *);
    PyObject *(*call_method)(PyObject *, const char *, const char *, ...);
    PyObject *(*cfunction_new)(MethodDef *, PyObject *, PyObject *);
    PyObject *(*err_occurred)(void);
    long (*as_long)(PyObject *);
    PyObject *none;
    PyObject *(*get_attr)(PyObject *, const char *);
    const char *(*as_utf8)(PyObject *);
    void (*incref)(PyObject *);
    void (*decref)(PyObject *);
    void (*err_clear)(void);
    void *(*save_thread)(void);        /* PyEval_SaveThread: lets go of the GIL */
    void (*restore_thread)(void *);    /* PyEval_RestoreThread */
} py;

/* What we know of one code object; created under the GIL, never freed. */
typedef struct {
    const void *code;
    bool user;
    char *file;        /* relative to the project root */
    char *function;
} CodeInfo;

#define CODE_CACHE_SIZE 16384 /* power of two */
static CodeInfo *code_cache[CODE_CACHE_SIZE];
static size_t code_cache_used;

#define STACK_DEPTH 128
typedef struct {
    PyObject *frame;
    const CodeInfo *info;
} UserFrame;

static __thread UserFrame user_stack[STACK_DEPTH];
static __thread int user_depth; /* may exceed STACK_DEPTH; only the first entries are kept */
static __thread bool ran_python; /* the hook has run on this thread */

/* (code info, instruction offset) -> site, per thread: most launches repeat
 * a few lines. Keyed by the offset, which costs nothing to read, because
 * finding a line number scans the code object's location table. */
#define SITE_CACHE 256
static __thread struct {
    const CodeInfo *info;
    int lasti;
    int site;
} site_cache[SITE_CACHE];

static bool active;
/* The last site resolved on a thread running user Python code. PyTorch's own
 * threads (autograd's backward pass) have no Python frames; their work is
 * put on the line the user's code last made GPU work from, which is the line
 * that called backward() while it waits for them. */
static int last_user_site = -1;

/* Is this torch.profiler starting a profiling session (`with profile(...)`
 * and profile.start() go through these)? */
static bool starts_profiling(PyObject *code) {
    PyObject *name = py.get_attr(code, "co_qualname");
    const char *s = name ? py.as_utf8(name) : NULL;
    bool starts = s && (strcmp(s, "_KinetoProfile.start") == 0 || strcmp(s, "_KinetoProfile.prepare_trace") == 0 ||
                        strcmp(s, "_KinetoProfile.start_trace") == 0 || strcmp(s, "profile.start") == 0);
    if (name) py.decref(name);
    py.err_clear();
    return starts;
}

static CodeInfo *describe(PyObject *code) {
    CodeInfo *ci = calloc(1, sizeof *ci);
    if (!ci) return NULL;
    ci->code = code;
    PyObject *name = py.get_attr(code, "co_filename");
    const char *file = name ? py.as_utf8(name) : NULL;
    if (file && file[0] != '<') {
        char resolved[PATH_MAX];
        char joined[PATH_MAX];
        const char *path = file;
        if (file[0] != '/') {
            char cwd[PATH_MAX];
            if (getcwd(cwd, sizeof cwd) && (size_t)snprintf(joined, sizeof joined, "%s/%s", cwd, file) < sizeof joined)
                path = joined;
        }
        if (strstr(file, "/torch/profiler/profiler.py") && !inject_note[0] && starts_profiling(code))
            /* torch.profiler asks CUPTI for a second subscriber, which fails */
            snprintf(inject_note, sizeof inject_note,
                     "torch.profiler ran inside `advise profile`: CUPTI takes one profiler at a time, so "
                     "torch.profiler recorded no GPU activity (advise's profile is complete)");
        if (realpath(path, resolved) && inject_path_is_user(resolved)) {
            ci->user = true;
            ci->file = strdup(inject_relative(resolved));
            if (!ci->file) ci->user = false;
        }
    }
    if (name) py.decref(name);
    if (ci->user) {
        PyObject *fn = py.get_attr(code, "co_qualname");
        if (!fn) {
            py.err_clear();
            fn = py.get_attr(code, "co_name");
        }
        const char *s = fn ? py.as_utf8(fn) : NULL;
        if (s) ci->function = strdup(s);
        if (fn) py.decref(fn);
    }
    py.err_clear();
    return ci;
}

/* Called with the GIL held. The code object is kept alive (one reference)
 * so that its address is never reused for another code object. */
static const CodeInfo *code_info(PyObject *code) {
    size_t h = ((uintptr_t)code >> 4) & (CODE_CACHE_SIZE - 1);
    for (size_t i = h;; i = (i + 1) & (CODE_CACHE_SIZE - 1)) {
        if (!code_cache[i]) break;
        if (code_cache[i]->code == code) return code_cache[i];
        if (((i + 1) & (CODE_CACHE_SIZE - 1)) == h) return NULL;
    }
    if (code_cache_used * 4 >= CODE_CACHE_SIZE * 3) return NULL; /* full: treat as library code */
    CodeInfo *ci = describe(code);
    if (!ci) return NULL;
    py.incref(code);
    size_t i = h;
    while (code_cache[i]) i = (i + 1) & (CODE_CACHE_SIZE - 1);
    code_cache[i] = ci;
    code_cache_used++;
    return ci;
}

static void push(PyObject *frame, const CodeInfo *info) {
    if (user_depth < STACK_DEPTH) {
        py.incref(frame);
        user_stack[user_depth] = (UserFrame){frame, info};
    }
    user_depth++;
}

static void pop(PyObject *frame) {
    if (user_depth <= 0) return;
    int top = user_depth - 1;
    if (top >= STACK_DEPTH) {
        user_depth--; /* beyond what we keep: trust the nesting */
    } else if (user_stack[top].frame == frame) {
        py.decref(frame);
        user_stack[top].frame = NULL;
        user_depth--;
    }
}

/* --steps detached the profiler: no site is wanted any more, so the profile
 * hook leaves this thread at its next call, after giving back the frames it
 * holds (their returns will not be heard, and a held frame keeps its locals
 * alive). Called from the hook itself, as sys.setprofile(None) may be. */
static void leave_thread(void) {
    for (int i = 0; i < user_depth && i < STACK_DEPTH; i++)
        if (user_stack[i].frame) {
            py.decref(user_stack[i].frame);
            user_stack[i].frame = NULL;
        }
    user_depth = 0;
    py.set_profile(NULL, NULL);
}

static int profile_hook(PyObject *self, PyObject *frame, int what, PyObject *arg) {
    (void)self;
    (void)arg;
    ran_python = true;
    if (what == TRACE_CALL) {
        if (recording_detached()) {
            leave_thread();
            return 0;
        }
        PyObject *code = py.frame_code(frame);
        if (!code) return 0;
        const CodeInfo *info = code_info(code);
        py.decref(code);
        if (info && info->user) push(frame, info);
    } else if (what == TRACE_RETURN) {
        pop(frame);
    }
    return 0;
}

/* ---- sys.monitoring (3.12+): the callbacks get (code, offset[, value]) and
 * run in the frame that starts or leaves. */
static PyObject *monitoring_disable; /* sys.monitoring.DISABLE */

static PyObject *none(void) {
    py.incref(py.none);
    return py.none;
}

static PyObject *disable(void) {
    py.incref(monitoring_disable);
    return monitoring_disable;
}

/* PY_START, PY_RESUME: local events, which DISABLE turns off for that code */
static PyObject *on_enter(PyObject *self, PyObject *const *args, Py_ssize_t_ nargs) {
    (void)self;
    ran_python = true;
    /* after --steps detached the profiler no site is wanted: each function
     * stops calling us at its next start; the frames kept before still pop */
    if (nargs < 1 || recording_detached()) return nargs < 1 ? none() : disable();
    const CodeInfo *info = code_info(args[0]);
    if (!info || !info->user) return disable();
    PyObject *frame = py.get_frame();
    if (frame) push(frame, info);
    return none();
}

/* PY_THROW is not a local event: DISABLE would raise in the user's code. */
static PyObject *on_throw(PyObject *self, PyObject *const *args, Py_ssize_t_ nargs) {
    (void)self;
    ran_python = true;
    const CodeInfo *info = nargs >= 1 && !recording_detached() ? code_info(args[0]) : NULL;
    PyObject *frame = info && info->user ? py.get_frame() : NULL;
    if (frame) push(frame, info);
    return none();
}

/* PY_RETURN, PY_YIELD */
static PyObject *on_leave(PyObject *self, PyObject *const *args, Py_ssize_t_ nargs) {
    (void)self;
    if (nargs < 1) return none();
    const CodeInfo *info = code_info(args[0]);
    if (!info || !info->user) return disable();
    PyObject *frame = py.get_frame();
    if (frame) pop(frame);
    return none();
}

/* PY_UNWIND cannot be disabled: it costs only when an exception leaves a function. */
static PyObject *on_unwind(PyObject *self, PyObject *const *args, Py_ssize_t_ nargs) {
    (void)self;
    if (nargs < 1 || user_depth <= 0) return none();
    const CodeInfo *info = code_info(args[0]);
    PyObject *frame = info && info->user ? py.get_frame() : NULL;
    if (frame) pop(frame);
    return none();
}

static MethodDef enter_def = {"advise_enter", (void *)on_enter, METH_FASTCALL_, NULL};
static MethodDef leave_def = {"advise_leave", (void *)on_leave, METH_FASTCALL_, NULL};
static MethodDef throw_def = {"advise_throw", (void *)on_throw, METH_FASTCALL_, NULL};
static MethodDef unwind_def = {"advise_unwind", (void *)on_unwind, METH_FASTCALL_, NULL};

static long event_bit(PyObject *events, const char *name) {
    PyObject *v = py.get_attr(events, name);
    long bit = v ? py.as_long(v) : 0;
    if (v) py.decref(v);
    py.err_clear();
    return bit > 0 ? bit : 0;
}

static bool call_ok(PyObject *r) {
    if (!r) {
        py.err_clear();
        return false;
    }
    py.decref(r);
    return true;
}

/* Registers the callbacks under the first free tool id; false (nothing
 * left registered) when sys.monitoring is missing or every id is taken. */
static bool install_monitoring(void) {
    if (!py.import || !py.call_method || !py.cfunction_new || !py.none || !py.as_long) return false;
    PyObject *sys = py.import("sys");
    PyObject *mon = sys ? py.get_attr(sys, "monitoring") : NULL;
    if (sys) py.decref(sys);
    if (!mon) {
        py.err_clear();
        return false;
    }
    static const int tool_ids[] = {2, 3, 4}; /* PROFILER_ID, then the unnamed ones */
    int tool = -1;
    for (size_t i = 0; i < sizeof tool_ids / sizeof *tool_ids && tool < 0; i++)
        if (call_ok(py.call_method(mon, "use_tool_id", "is", tool_ids[i], "advise"))) tool = tool_ids[i];
    PyObject *events = tool >= 0 ? py.get_attr(mon, "events") : NULL;
    monitoring_disable = events ? py.get_attr(mon, "DISABLE") : NULL;
    bool ok = events && monitoring_disable;
    long mask = 0;
    struct {
        const char *event;
        MethodDef *def;
    } hooks[] = {{"PY_START", &enter_def},  {"PY_RESUME", &enter_def}, {"PY_THROW", &throw_def},
                 {"PY_RETURN", &leave_def}, {"PY_YIELD", &leave_def},  {"PY_UNWIND", &unwind_def}};
    for (size_t i = 0; ok && i < sizeof hooks / sizeof *hooks; i++) {
        long bit = event_bit(events, hooks[i].event);
        PyObject *fn = bit ? py.cfunction_new(hooks[i].def, NULL, NULL) : NULL;
        ok = fn && call_ok(py.call_method(mon, "register_callback", "ilO", tool, bit, fn));
        if (fn) py.decref(fn);
        mask |= bit;
    }
    if (ok) ok = call_ok(py.call_method(mon, "set_events", "il", tool, mask));
    if (!ok && tool >= 0) call_ok(py.call_method(mon, "free_tool_id", "i", tool));
    if (events) py.decref(events);
    py.decref(mon);
    py.err_clear();
    return ok;
}

/* Frames already running when the hook arrives (the script's module frame,
 * main(), the training loop): pushed outermost first. GIL held. */
static void seed_current_thread(void) {
    PyObject *chain[STACK_DEPTH];
    int n = 0;
    PyObject *f = py.get_frame();
    if (f) py.incref(f);
    while (f && n < STACK_DEPTH) {
        chain[n++] = f;
        f = py.frame_back(f);
    }
    if (f) py.decref(f);
    for (int i = n - 1; i >= 0; i--) {
        PyObject *code = py.frame_code(chain[i]);
        const CodeInfo *info = code ? code_info(code) : NULL;
        if (code) py.decref(code);
        if (info && info->user) push(chain[i], info);
        py.decref(chain[i]);
    }
}

/* ADVISE_PROFILE_PYTHON_HOOK (bench/overhead takes the profiler apart with
 * it): "setprofile" forces the profile hook, "off" records no Python sites. */
static bool force_setprofile; /* read at start: the program may change its environment later */

/* `advise profile --memory`: imports profiler/python/advise_memory.py from
 * the folder ADVISE_PROFILE_MEMORY names and starts it (PyTorch's allocator
 * history; it writes memory-PID.json beside the other parts at exit). The
 * folder is on sys.path only for that import. GIL held. */
static char memory_dir[PATH_MAX];
static char memory_parts[PATH_MAX];

static int start_memory(void *unused) {
    (void)unused;
    PyObject *sys = py.import("sys");
    PyObject *path = sys ? py.get_attr(sys, "path") : NULL;
    if (path && call_ok(py.call_method(path, "insert", "is", 0, memory_dir))) {
        PyObject *mod = py.import("advise_memory");
        if (mod) {
            call_ok(py.call_method(mod, "start", "ss", memory_parts, inject_root ? inject_root : "."));
            py.decref(mod);
        }
        call_ok(py.call_method(path, "remove", "s", memory_dir));
    }
    if (path) py.decref(path);
    if (sys) py.decref(sys);
    py.err_clear();
    return 0;
}

/* Training steps (step_marks.c): a torch.optim step post-hook, a C
 * function, notes each step's end. Registered only where PyTorch's
 * optimizers are already imported: importing them would change the program.
 * Only the first optimizer that steps counts: a GAN's two optimizers (or a
 * second one for some parameters) step once each per iteration, and their
 * interleaved ends would halve the intervals. GIL held. */
static const PyObject *stepping_optimizer; /* compared, never dereferenced */

/* Is this thread capturing a CUDA graph (torch.cuda.is_current_stream_capturing())?
 * A capture cannot be waited for, nor CUPTI detached during it. */
static bool capturing_a_graph(void) {
    PyObject *sys = py.import("sys");
    PyObject *modules = sys ? py.get_attr(sys, "modules") : NULL;
    PyObject *cuda = modules ? py.call_method(modules, "get", "s", "torch.cuda") : NULL;
    PyObject *answer = cuda && cuda != py.none ? py.call_method(cuda, "is_current_stream_capturing", NULL) : NULL;
    /* True is 1; an error or no answer: assume a capture, and wait for a later step */
    bool capturing = !answer || !py.as_long || py.as_long(answer) != 0;
    if (answer) py.decref(answer);
    if (cuda) py.decref(cuda);
    if (modules) py.decref(modules);
    if (sys) py.decref(sys);
    py.err_clear();
    return capturing;
}

static PyObject *on_optimizer_step(PyObject *self, PyObject *const *args, Py_ssize_t_ nargs) {
    (void)self;
    if (nargs >= 1 && !stepping_optimizer) stepping_optimizer = args[0];
    if (nargs < 1 || args[0] == stepping_optimizer) {
        step_marks_record();
        /* --steps N: the Nth step's end, on this thread between its CUDA calls (recording_window.c) */
        if (recording_window_steps() && recording_window_due(step_marks_seen()) && !capturing_a_graph()) {
            /* the wait for the device runs without the GIL: work queued on a
             * stream may call back into Python (a host function) and need it */
            void *state = py.save_thread && py.restore_thread ? py.save_thread() : NULL;
            recording_window_detach();
            if (state) py.restore_thread(state);
        }
    }
    py.incref(py.none);
    return py.none;
}
static MethodDef step_def = {"advise_optimizer_step", (void *)on_optimizer_step, METH_FASTCALL_, NULL};

static int start_steps(void *unused) {
    (void)unused;
    PyObject *sys = py.import("sys");
    PyObject *modules = sys ? py.get_attr(sys, "modules") : NULL;
    PyObject *optimizer = modules ? py.call_method(modules, "get", "s", "torch.optim.optimizer") : NULL;
    if (optimizer && optimizer != py.none) {
        PyObject *fn = py.cfunction_new(&step_def, NULL, NULL);
        if (fn) {
            call_ok(py.call_method(optimizer, "register_optimizer_step_post_hook", "O", fn));
            py.decref(fn); /* the hook table keeps its own reference */
        }
    }
    if (optimizer) py.decref(optimizer);
    if (modules) py.decref(modules);
    if (sys) py.decref(sys);
    py.err_clear();
    return 0;
}

static bool hook_off;

static int install_hook(void *unused) {
    (void)unused;
    if (hook_off) return 0;
    if (force_setprofile || !install_monitoring()) {
        if (py.set_profile_all) py.set_profile_all(profile_hook, NULL);
        else py.set_profile(profile_hook, NULL);
    }
    seed_current_thread();
    __atomic_store_n(&active, true, __ATOMIC_RELEASE);
    return 0;
}

#define LOAD(field, symbol) (*(void **)&py.field = dlsym(RTLD_DEFAULT, symbol))

void python_sites_start(void) {
    const char *hook = getenv("ADVISE_PROFILE_PYTHON_HOOK");
    const char *memory = getenv("ADVISE_PROFILE_MEMORY"), *parts = getenv("ADVISE_PROFILE_PARTS_DIR");
    bool want_memory = memory && *memory && parts && strlen(memory) < sizeof memory_dir &&
                       strlen(parts) < sizeof memory_parts;
    hook_off = hook && strcmp(hook, "off") == 0;
    if (hook_off && !want_memory) return;
    force_setprofile = hook && strcmp(hook, "setprofile") == 0;
    LOAD(is_initialized, "Py_IsInitialized");
    if (!py.is_initialized || !py.is_initialized()) return;
    LOAD(add_pending_call, "Py_AddPendingCall");
    LOAD(set_profile_all, "PyEval_SetProfileAllThreads");
    LOAD(set_profile, "PyEval_SetProfile");
    LOAD(get_frame, "PyEval_GetFrame");
    LOAD(frame_back, "PyFrame_GetBack");
    LOAD(frame_code, "PyFrame_GetCode");
    LOAD(frame_line, "PyFrame_GetLineNumber");
    LOAD(frame_lasti, "PyFrame_GetLasti");
    LOAD(import, "PyImport_ImportModule");
    LOAD(call_method, "PyObject_CallMethod");
    LOAD(cfunction_new, "PyCFunction_NewEx");
    LOAD(none, "_Py_NoneStruct");
    LOAD(as_long, "PyLong_AsLong");
    LOAD(get_attr, "PyObject_GetAttrString");
    LOAD(as_utf8, "PyUnicode_AsUTF8");
    LOAD(incref, "Py_IncRef");
    LOAD(decref, "Py_DecRef");
    LOAD(err_clear, "PyErr_Clear");
    LOAD(save_thread, "PyEval_SaveThread");
    LOAD(restore_thread, "PyEval_RestoreThread");
    if (!py.add_pending_call || !(py.set_profile_all || py.set_profile) || !py.get_frame || !py.frame_back ||
        !py.frame_code || !py.frame_line || !py.get_attr || !py.as_utf8 || !py.incref || !py.decref ||
        !py.err_clear)
        return; /* Python older than 3.9: no call sites */
    /* Runs on the main thread at its next bytecode boundary, with the GIL;
     * safe to ask for from any thread without it. */
    py.add_pending_call(install_hook, NULL);
    if (py.import && py.call_method && py.cfunction_new && py.none) py.add_pending_call(start_steps, NULL);
    if (want_memory && py.import && py.call_method) {
        strcpy(memory_dir, memory);
        strcpy(memory_parts, parts);
        py.add_pending_call(start_memory, NULL);
    }
}

bool python_sites_active(void) {
    return __atomic_load_n(&active, __ATOMIC_ACQUIRE);
}

int python_site(void) {
    if (!python_sites_active()) return -1;
    if (user_depth <= 0) {
        /* a thread running library Python code only (a DataLoader thread):
         * unknown; a thread that never ran Python code (autograd's workers,
         * which PyTorch gives a thread state up front): the line that
         * queued its work */
        if (ran_python) return -1;
        return __atomic_load_n(&last_user_site, __ATOMIC_RELAXED);
    }
    int top = (user_depth <= STACK_DEPTH ? user_depth : STACK_DEPTH) - 1;
    const UserFrame *uf = &user_stack[top];
    if (!uf->frame) return -1;
    int lasti = py.frame_lasti ? py.frame_lasti(uf->frame) : -1;
    int line = -1;
    if (lasti < 0) { /* before 3.11: the line itself is the key */
        line = py.frame_line(uf->frame);
        if (line <= 0) return -1;
        lasti = -2 - line;
    }
    unsigned slot = (unsigned)(((uintptr_t)uf->info >> 4) ^ (unsigned)lasti * 2654435761u) & (SITE_CACHE - 1);
    if (site_cache[slot].info == uf->info && site_cache[slot].lasti == lasti) {
        __atomic_store_n(&last_user_site, site_cache[slot].site, __ATOMIC_RELAXED);
        return site_cache[slot].site;
    }
    if (line < 0) line = py.frame_line(uf->frame);
    if (line <= 0) return -1;
    int site = agg_site(inject_agg, uf->info->file, (uint32_t)line, uf->info->function);
    __atomic_store_n(&last_user_site, site, __ATOMIC_RELAXED);
    if (site >= 0) {
        site_cache[slot].info = uf->info;
        site_cache[slot].lasti = lasti;
        site_cache[slot].site = site;
    }
    return site;
}
