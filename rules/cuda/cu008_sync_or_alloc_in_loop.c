/* CU008 sync-or-alloc-in-loop: a device/stream synchronization right after
 * the launches of every loop iteration, or a cudaMalloc/cudaFree pair on
 * every iteration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/cuda/cuda_host_buffer.h"
#include "analysis/cuda/cuda_query.h"
#include "analysis/base/growable.h"
#include "rules/rule.h"

static const char documentation[] =
    "## What it does\n"
    "Flags two host-side patterns that make every iteration of a loop wait for the GPU:\n"
    "\n"
    "- `cudaDeviceSynchronize()` or `cudaStreamSynchronize(s)` inside a loop, after a kernel launch\n"
    "  of the same iteration (a `<<<...>>>` launch, `cudaLaunchKernel`, `cudaGraphLaunch`, or a\n"
    "  function of this file that launches);\n"
    "- `cudaMalloc`, `cudaMallocHost`, `cudaHostAlloc`, `cudaMallocManaged` or `cudaMallocPitch` of\n"
    "  a pointer that the same loop also releases with `cudaFree`/`cudaFreeHost`: a temporary buffer\n"
    "  allocated and freed on every iteration.\n"
    "\n"
    "Not flagged (each of these is how correct code looks):\n"
    "\n"
    "- a synchronization or allocation after (or before) the loop, or in a loop that runs once\n"
    "  (`do { ... } while (0)` of error-check macros, `for (;;) { ...; break; }`);\n"
    "- a synchronization after a device-wide one (`cudaDeviceSynchronize()`) that already waited\n"
    "  for the iteration's last launch, with no launch between (a checking macro that synchronizes,\n"
    "  then `cudaDeviceSynchronize()` again): only the first is reported, the second waits for\n"
    "  nothing;\n"
    "- a synchronization in a warm-up loop of a few runs (`for (int i = 0; i < 3; i++)`, a constant\n"
    "  count of at most 8) that is in no loop itself: a handful of waits in all;\n"
    "- a synchronization or allocation under a condition inside the loop: a periodic\n"
    "  `if (iter % 100 == 0)`, a debug switch, or a buffer that grows on demand;\n"
    "- a synchronization the iteration needs: the loop also reads on the host what the GPU\n"
    "  produced (memory handed to a launch of the loop, managed or mapped memory, the destination\n"
    "  of an asynchronous copy), reuses the host buffer of an asynchronous copy, or copies with a\n"
    "  blocking `cudaMemcpy` (which waits anyway) - convergence checks and per-iteration output;\n"
    "- loops that time their iterations (a host clock, `cudaEventRecord`/`cudaEventElapsedTime`, a\n"
    "  timer helper such as `sdkStopTimer`, also when its header was not found, or a function of\n"
    "  this file that reads a clock, such as `double get_time() { clock_gettime(...); }`);\n"
    "- a synchronization the host hands on: after it the iteration waits at a host barrier or\n"
    "  signals other threads or processes (`barrierWait`, `MPI_Barrier`, `sem_post`); a loop whose\n"
    "  condition reads a variable the GPU writes (its address goes to a copy: `while (r1 > tol)`);\n"
    "  and a loop that prints while kernels of this file print too (the synchronization flushes the\n"
    "  device's printf output in order with the host's);\n"
    "- `cudaEventSynchronize`, and the stream-ordered allocator `cudaMallocAsync`/`cudaFreeAsync`;\n"
    "- allocations of distinct buffers in a setup loop (`cudaMalloc(&bufs[i], ...)`) or of buffers\n"
    "  that the loop keeps.\n"
    "\n"
    "## Why is this slow?\n"
    "Kernel launches are asynchronous: while the GPU runs one kernel, the host queues the next,\n"
    "and launches on one stream already execute in order. A synchronization after each launch\n"
    "throws that overlap away: the GPU idles while the host returns from the wait and issues the\n"
    "next launch (several microseconds per iteration, which dominates short kernels), and with\n"
    "several streams it serializes work that could run concurrently.\n"
    "\n"
    "`cudaMalloc` and `cudaFree` are expensive driver calls (tens of microseconds to milliseconds)\n"
    "and `cudaFree` synchronizes the device: allocating a temporary buffer per iteration adds both\n"
    "costs to every iteration.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "for (int step = 0; step < steps; step++) {\n"
    "    float *d_tmp;\n"
    "    cudaMalloc(&d_tmp, bytes);\n"
    "    stencil<<<grid, block>>>(d_in, d_tmp, n);\n"
    "    update<<<grid, block>>>(d_tmp, d_in, n);\n"
    "    cudaDeviceSynchronize();\n"
    "    cudaFree(d_tmp);\n"
    "}\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```cuda\n"
    "float *d_tmp;\n"
    "cudaMalloc(&d_tmp, bytes);  // once, sized for the largest iteration\n"
    "for (int step = 0; step < steps; step++) {\n"
    "    stencil<<<grid, block>>>(d_in, d_tmp, n);\n"
    "    update<<<grid, block>>>(d_tmp, d_in, n);\n"
    "}\n"
    "cudaDeviceSynchronize();  // once, where the host needs the results\n"
    "cudaFree(d_tmp);\n"
    "```\n"
    "Check launch errors with `cudaGetLastError()` (it does not wait); synchronize every N\n"
    "iterations if progress must be reported; use `cudaMallocAsync`/`cudaFreeAsync` (a memory\n"
    "pool) when the size really changes per iteration.\n"
    "\n"
    "## Fix safety\n"
    "No automatic fix. Removing a synchronization is only correct when nothing in the iteration\n"
    "depends on the GPU having finished, and hoisting an allocation needs the largest size the\n"
    "loop will ask for; both need a person to decide.\n";

static CuNode *loop_body(const CuNode *loop) {
    if (loop->child_count == 0) return NULL;
    return loop->kind == CXCursor_DoStmt ? loop->children[0] : loop->children[loop->child_count - 1];
}

/* do { } while (0), while (false), or a body that ends in break/return */
static bool runs_once(const CuNode *loop) {
    if (loop->kind == CXCursor_DoStmt || loop->kind == CXCursor_WhileStmt) {
        CuNode *cond = loop->kind == CXCursor_DoStmt ? loop->children[loop->child_count - 1] : loop->children[0];
        long long v;
        if (loop->child_count >= 2 && cu_int_value(cu_strip(cond), &v) && v == 0) return true;
    }
    CuNode *body = loop_body(loop);
    if (body && body->kind == CXCursor_CompoundStmt && body->child_count > 0) {
        CuNode *last = cu_strip(body->children[body->child_count - 1]);
        if (last && (last->kind == CXCursor_BreakStmt || last->kind == CXCursor_ReturnStmt ||
                     last->kind == CXCursor_GotoStmt || last->kind == CXCursor_CXXThrowExpr))
            return true;
    }
    return false;
}

#define FEW_ITERATIONS 8

/* `for (int i = 0; i < 3; i++)`, `for (int r = 0; r < warmupRuns; ++r)` with
 * `const int warmupRuns = 5`: a constant count of at most FEW_ITERATIONS */
static bool few_iterations(const CuNode *loop) {
    if (loop->kind != CXCursor_ForStmt || loop->child_count != 4) return false;
    const CuNode *init = loop->children[0], *cond = cu_strip(loop->children[1]), *inc = cu_strip(loop->children[2]);
    if (init->kind != CXCursor_DeclStmt || init->child_count != 1 || init->children[0]->kind != CXCursor_VarDecl)
        return false;
    if (!cond || cond->kind != CXCursor_BinaryOperator || cond->child_count != 2 ||
        (cond->op != CXBinaryOperator_LT && cond->op != CXBinaryOperator_LE))
        return false;
    if (!inc || inc->kind != CXCursor_UnaryOperator ||
        (inc->op != CXUnaryOperator_PostInc && inc->op != CXUnaryOperator_PreInc))
        return false;
    const CuNode *var = init->children[0], *left = cu_strip(cond->children[0]);
    if (!left || left->kind != CXCursor_DeclRefExpr || left->ref != var) return false;
    long long start, bound;
    if (!cu_int_value(var, &start) || !cu_int_value(cu_strip(cond->children[1]), &bound)) return false;
    long long trips = bound - start + (cond->op == CXBinaryOperator_LE ? 1 : 0);
    return trips >= 0 && trips <= FEW_ITERATIONS;
}

/* The loop whose every iteration runs n; guarded: n sits under a condition
 * inside that loop (an if branch, a case, ?:, the right side of && or ||). */
static CuNode *repeating_loop(const CuNode *n, bool *guarded) {
    *guarded = false;
    const CuNode *child = n;
    for (CuNode *p = n->parent; p; child = p, p = p->parent) {
        if (cu_is_function(p)) return NULL;
        switch (p->kind) {
        case CXCursor_IfStmt:
            if (p->child_count > 0 && p->children[0] != child) *guarded = true;
            break;
        case CXCursor_SwitchStmt:
        case CXCursor_CaseStmt:
        case CXCursor_DefaultStmt: *guarded = true; break;
        case CXCursor_ConditionalOperator:
            if (p->child_count > 0 && p->children[0] != child) *guarded = true;
            break;
        case CXCursor_BinaryOperator:
            if ((p->op == CXBinaryOperator_LAnd || p->op == CXBinaryOperator_LOr) && p->child_count == 2 &&
                p->children[1] == child)
                *guarded = true;
            break;
        default: break;
        }
        if (!cu_is_loop(p)) continue;
        /* the init statement of a for loop runs once */
        if (p->kind == CXCursor_ForStmt && p->child_count > 0 && p->children[0] == child &&
            child->kind == CXCursor_DeclStmt)
            continue;
        if (p->kind == CXCursor_CXXForRangeStmt && child != loop_body(p)) continue; /* the range, once */
        if (runs_once(p)) continue;
        return p;
    }
    return NULL;
}

/* --- launches ------------------------------------------------------------- */

static bool contains_launch(const CuNode *n, int depth);

static bool is_launch(const CuNode *n, int depth) {
    if (n->kind != CXCursor_CallExpr) return false;
    CuLaunch l;
    if (cu_launch(n, &l)) return true;
    static const char *const launchers[] = {"cudaLaunchKernel", "cudaLaunchCooperativeKernel", "cudaLaunchKernelEx",
                                            "cudaGraphLaunch", "cuLaunchKernel", "cuLaunchKernelEx",
                                            "cuGraphLaunch", NULL};
    const char *name = cu_callee(n);
    if (cu_name_in(name, launchers)) return true;
    CuNode *callee = n->ref;
    if (depth < 2 && callee && cu_is_function(callee) && !cu_is_device_code(callee)) {
        CuNode *body = cu_function_body(callee);
        if (body && contains_launch(body, depth + 1)) return true;
    }
    return false;
}

static bool matches_launch(const CuNode *n, void *depth) { return is_launch(n, *(int *)depth); }

static bool contains_launch(const CuNode *n, int depth) { return cu_find(n, matches_launch, &depth) != NULL; }

/* --- what the iteration does with the GPU's results -------------------------- */

typedef struct {
    const CuNode **items;
    size_t count, capacity;
    bool oom;
} DeclSet;

static void set_add(DeclSet *s, const CuNode *d) {
    if (!d) return;
    for (size_t i = 0; i < s->count; i++)
        if (s->items[i] == d) return;
    if (!array_reserve(&s->items, s->count, &s->capacity, sizeof *s->items, 16)) {
        s->oom = true;
        return;
    }
    s->items[s->count++] = d;
}

static bool set_has(const DeclSet *s, const CuNode *d) {
    for (size_t i = 0; d && i < s->count; i++)
        if (s->items[i] == d) return true;
    return false;
}

/* the variable or field a pointer expression points into: p, p + k, &p[k], &x, v.data(), p.get() */
static CuNode *buffer_decl(CuNode *e) {
    CuNode *r = cu_buffer_reference(e, CU_BUFFER_ADDRESS | CU_BUFFER_DATA_GET);
    return r ? r->ref : NULL;
}

static bool is_pointer_decl(const CuNode *d) {
    enum CXTypeKind k = cu_canonical_type(d).kind;
    return k == CXType_Pointer || k == CXType_ConstantArray || k == CXType_IncompleteArray;
}

static bool is_gpu_api(const char *name) {
    if (strncmp(name, "cuda", 4) == 0 || strncmp(name, "__cuda", 6) == 0 || strncmp(name, "cublas", 6) == 0 ||
        strncmp(name, "cufft", 5) == 0 || strncmp(name, "curand", 6) == 0 || strncmp(name, "cusparse", 8) == 0 ||
        strncmp(name, "cusolver", 8) == 0 || strncmp(name, "cudnn", 5) == 0 || strncmp(name, "nccl", 4) == 0)
        return true;
    return strncmp(name, "cu", 2) == 0 && name[2] >= 'A' && name[2] <= 'Z';
}

typedef struct {
    DeclSet *set;
    bool allocations_only;
} Collect;

static int memcpy_kind(const CuNode *k) {
    k = cu_strip((CuNode *)k);
    if (!k || k->kind != CXCursor_DeclRefExpr || !k->ref_name) return 0;
    if (strcmp(k->ref_name, "cudaMemcpyHostToDevice") == 0) return 1;
    if (strcmp(k->ref_name, "cudaMemcpyDeviceToHost") == 0) return 2;
    if (strcmp(k->ref_name, "cudaMemcpyDeviceToDevice") == 0) return 3;
    return 0;
}

/* memory the GPU writes and the host can see: pointers handed to launches in
 * the loop, managed/mapped/pinned allocations, host sides of async copies */
static bool visit_gpu_visible(CuNode *n, void *data) {
    Collect *c = data;
    if (n->kind != CXCursor_CallExpr) return true;
    CuLaunch l;
    if (cu_launch(n, &l)) {
        if (c->allocations_only) return true;
        for (uint32_t i = 0; i < l.arg_count; i++) {
            CuNode *d = buffer_decl(l.args[i]);
            if (d && is_pointer_decl(d)) set_add(c->set, d);
        }
        return true;
    }
    const char *name = cu_callee(n);
    uint32_t count;
    CuNode **args = cu_call_args(n, &count);
    if ((strcmp(name, "cudaMallocManaged") == 0 || strcmp(name, "cudaHostAlloc") == 0 ||
         strcmp(name, "cudaMallocHost") == 0) &&
        count >= 1)
        set_add(c->set, buffer_decl(args[0]));
    if (strcmp(name, "cudaHostGetDevicePointer") == 0 && count >= 2) {
        set_add(c->set, buffer_decl(args[0]));
        set_add(c->set, buffer_decl(args[1]));
    }
    if (c->allocations_only) return true;
    /* results a library call writes through `&x` (cublasSnrm2(..., &norm), cudaMemcpy(&x, ...)) */
    static const char *const setup[] = {"cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaEventCreate",
                                        "cudaEventCreateWithFlags", "cudaGetDevice", "cudaGetLastError",
                                        "cudaPeekAtLastError", "cudaLaunchKernel", NULL};
    if (is_gpu_api(name) && !cu_name_in(name, setup))
        for (uint32_t i = 0; i < count; i++) {
            CuNode *a = cu_strip(args[i]);
            if (a && a->kind == CXCursor_UnaryOperator && a->op == CXUnaryOperator_AddrOf && a->child_count == 1) {
                CuNode *x = cu_strip(a->children[0]);
                if (x && x->kind == CXCursor_DeclRefExpr && x->ref && !is_pointer_decl(x->ref)) set_add(c->set, x->ref);
            }
        }
    if (strncmp(name, "cudaMemcpy", 10) == 0 && strstr(name, "Async")) {
        /* dst and src positions of the async copies */
        int dst = 0, src = 1, kind = 3;
        if (strcmp(name, "cudaMemcpy2DAsync") == 0) src = 2, kind = 6;
        else if (strcmp(name, "cudaMemcpyToSymbolAsync") == 0) dst = -1, kind = 4;
        else if (strcmp(name, "cudaMemcpyFromSymbolAsync") == 0) src = -1, kind = 4;
        int k = (uint32_t)kind < count ? memcpy_kind(args[kind]) : 0;
        if (k != 3 && k != 1 && dst >= 0 && (uint32_t)dst < count) set_add(c->set, buffer_decl(args[dst]));
        if (k != 3 && k != 2 && src >= 0 && (uint32_t)src < count) set_add(c->set, buffer_decl(args[src]));
    }
    return true;
}

typedef struct {
    const CudaSource *src;
    const DeclSet *set;
    bool found;
} UseSearch;

static bool is_assign_target(const CuNode *n) {
    const CuNode *c = n;
    CuNode *p = n->parent;
    while (p && (p->kind == CXCursor_UnexposedExpr || p->kind == CXCursor_ParenExpr)) c = p, p = p->parent;
    return p && p->kind == CXCursor_BinaryOperator && p->op == CXBinaryOperator_Assign && p->child_count == 2 &&
           p->children[0] == c;
}

/* the host touches the contents of a GPU-visible buffer */
static bool visit_use(CuNode *n, void *data) {
    UseSearch *u = data;
    if (u->found) return false;
    if (n->kind == CXCursor_UnaryExpr) return false; /* sizeof */
    switch (n->kind) {
    case CXCursor_ArraySubscriptExpr:
        if (n->child_count == 2 && set_has(u->set, buffer_decl(n->children[0]))) u->found = true;
        break;
    case CXCursor_UnaryOperator:
        if (n->op == CXUnaryOperator_Deref && n->child_count == 1 && set_has(u->set, buffer_decl(n->children[0])))
            u->found = true;
        break;
    case CXCursor_MemberRefExpr:
        if (n->child_count == 1 && n->children[0]->end < n->end && set_has(u->set, buffer_decl(n->children[0]))) {
            const char *t = u->src->doc->text + n->children[0]->end;
            if (t[0] == '-' && t[1] == '>') u->found = true;
        }
        break;
    case CXCursor_CallExpr: {
        CuLaunch l;
        if (cu_launch(n, &l)) return false; /* launch arguments are the GPU's side */
        const char *name = cu_callee(n);
        if (is_gpu_api(name)) return false;
        if (strcmp(name, "swap") == 0 || strcmp(name, "exchange") == 0) return false; /* pointer ping-pong */
        uint32_t count;
        CuNode **args = cu_call_args(n, &count);
        for (uint32_t i = 0; i < count && !u->found; i++)
            if (set_has(u->set, buffer_decl(args[i]))) u->found = true;
        break;
    }
    case CXCursor_DeclRefExpr:
        /* a scalar result (`cudaMemcpyAsync(&x, ...)`) used on the host */
        if (set_has(u->set, n->ref) && !is_pointer_decl(n->ref) && !is_assign_target(n)) u->found = true;
        break;
    default: break;
    }
    return !u->found;
}

/* the function a call names, also when its header was not found (`sdkStartTimer(&t)`) */
static const char *called_name(const CuNode *n) {
    if (n->kind == CXCursor_CallExpr) return cu_callee(n);
    const char *unresolved = cu_unresolved_callee(n);
    return unresolved ? unresolved : "";
}

typedef struct {
    const CudaSource *src;
    int depth; /* helpers of this file looked into so far */
    bool found;
} TimingSearch;

static bool visit_timing(CuNode *n, void *data) {
    TimingSearch *t = data;
    bool *found = &t->found;
    if (*found) return false;
    CuLaunch l;
    if (n->kind == CXCursor_CallExpr && cu_launch(n, &l)) return true;
    const char *name = called_name(n);
    if (!*name) return true;
    /* a timer helper of this file (`double get_time() { clock_gettime(...); }`): one level in */
    if (n->kind == CXCursor_CallExpr && n->ref && t->depth == 0) {
        CuNode *def = cu_definition_of(t->src, n->ref);
        if (def && def != cu_function_of(n)) {
            TimingSearch inner = {t->src, 1, false};
            cu_walk(def, visit_timing, &inner);
            if (inner.found) *found = true;
            if (*found) return false;
        }
    }
    char low[96];
    size_t k = 0;
    for (; name[k] && k + 1 < sizeof low; k++) low[k] = (char)(name[k] >= 'A' && name[k] <= 'Z' ? name[k] + 32 : name[k]);
    low[k] = '\0';
    static const char *const exact[] = {"clock", "clock_gettime", "gettimeofday", "time", "omp_get_wtime", "mpi_wtime",
                                        "now", "cudaeventrecord", "cudaeventelapsedtime", "queryperformancecounter",
                                        "__rdtsc", "rdtsc", "start", "stop", "tic", "toc", "elapsed", "seconds",
                                        "cpusecond", "wall_time", "walltime", NULL};
    if (cu_name_in(low, exact) || strstr(low, "timer") || strstr(low, "elapsed") || strstr(low, "gettime") ||
        strstr(low, "wtime"))
        *found = true;
    return !*found;
}

static bool visit_blocking_copy(CuNode *n, void *data) {
    bool *found = data;
    if (*found) return false;
    if (n->kind == CXCursor_CallExpr) {
        const char *name = cu_callee(n);
        if (strncmp(name, "cudaMemcpy", 10) == 0 && !strstr(name, "Async")) *found = true;
    }
    return !*found;
}

/* After the synchronization the iteration tells other threads or processes that its GPU work is
 * done (`barrierWait(...)`, `MPI_Barrier`, `sem_post`): the wait is what makes that true. */
typedef struct {
    size_t after;
    bool found;
} HandOff;

static bool visit_hand_off(CuNode *n, void *data) {
    HandOff *h = data;
    if (h->found) return false;
    if (n->start < h->after) return n->end > h->after;
    const char *name = called_name(n);
    if (!*name || strncmp(name, "cuda", 4) == 0) return true;
    char low[96];
    size_t k = 0;
    for (; name[k] && k + 1 < sizeof low; k++) low[k] = (char)(name[k] >= 'A' && name[k] <= 'Z' ? name[k] + 32 : name[k]);
    low[k] = '\0';
    if (strstr(low, "barrier") || strstr(low, "wait") || strncmp(low, "mpi_", 4) == 0 || strstr(low, "sem_post") ||
        strstr(low, "notify") || strstr(low, "signal"))
        h->found = true;
    return !h->found;
}

/* the loop's condition reads a local whose address is handed out in the function (`while (r1 > tol)`
 * with `cudaMemcpyAsync(&r1, ...)`): the GPU writes it, and the iteration waits to read it */
static bool takes_address(const CuNode *n, void *decl) {
    return n->kind == CXCursor_UnaryOperator && n->op == CXUnaryOperator_AddrOf && n->child_count == 1 &&
           cu_refers_to(n->children[0], decl);
}

/* a local whose address is handed out somewhere in fn */
static bool reads_handed_out(const CuNode *n, void *fn) {
    return n->kind == CXCursor_DeclRefExpr && n->ref && n->ref->kind == CXCursor_VarDecl &&
           cu_find(fn, takes_address, n->ref);
}

static bool condition_reads_gpu_result(const CudaSource *src, const CuNode *loop) {
    const CuNode *cond = NULL;
    if (loop->kind == CXCursor_WhileStmt && loop->child_count >= 1) cond = loop->children[0];
    else if (loop->kind == CXCursor_DoStmt && loop->child_count == 2) cond = loop->children[1];
    else if (loop->kind == CXCursor_ForStmt && loop->child_count > 0) {
        bool polarity;
        cond = cu_guard_of(src, loop, loop->children[loop->child_count - 1], &polarity);
    }
    if (!cond) return false;
    CuNode *fn = cu_function_of(loop);
    return fn && cu_find(cond, reads_handed_out, fn);
}

/* device code of this file prints, and the loop prints on the host: the synchronization flushes the
 * device's printf buffer so that the two come out in order */
static bool visit_device_printf(CuNode *n, void *data) {
    bool *found = data;
    if (*found) return false;
    if (cu_is_function(n) && n->kind != CXCursor_LambdaExpr) {
        if (!cu_is_device_code(n)) return false;
    }
    if (n->kind == CXCursor_CallExpr && strcmp(cu_callee(n), "printf") == 0) *found = true;
    return !*found;
}

/* a print written in the loop (not one inside an error-check macro) */
static bool is_host_print(const CuNode *n, void *src) {
    const char *name = called_name(n);
    if (strcmp(name, "printf") != 0 && strcmp(name, "puts") != 0 && strcmp(name, "fprintf") != 0) return false;
    size_t k = strlen(name);
    return cu_text_len(n) > k && strncmp(cu_text(src, n), name, k) == 0;
}

static bool orders_device_printf(const CudaSource *src, const CuNode *loop) {
    bool device = false;
    if (!cu_find(loop, is_host_print, (void *)src)) return false;
    cu_walk(src->root, visit_device_printf, &device);
    return device;
}

/* --- the check ------------------------------------------------------------ */

typedef struct {
    RuleContext *ctx;
} Check;

static const char *const syncs[] = {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaThreadSynchronize", NULL};
static const char *const allocators[] = {"cudaMalloc", "cudaMallocHost", "cudaHostAlloc", "cudaMallocManaged",
                                         "cudaMallocPitch", NULL};
static const char *const releasers[] = {"cudaFree", "cudaFreeHost", NULL};

typedef struct {
    const CuNode *loop, *before;
    CuNode *launch;
    bool synced_since; /* a synchronize of the iteration came after that launch, before `before` */
} LastLaunch;

/* a wait for the whole device (a stream's synchronize may wait for another stream) */
static const char *const device_syncs[] = {"cudaDeviceSynchronize", "cudaThreadSynchronize", NULL};

static bool visit_last_launch(CuNode *n, void *data) {
    LastLaunch *l = data;
    if (n->start >= l->before->start) return false;
    if (n->kind == CXCursor_CallExpr && is_launch(n, 0)) {
        bool guarded;
        if (repeating_loop(n, &guarded) == l->loop) l->launch = n;
        l->synced_since = false; /* any launch of the iteration, an inner loop's too, gives the next wait work */
        return false;
    }
    if (n->kind == CXCursor_CallExpr && l->launch && cu_name_in(cu_callee(n), device_syncs)) {
        bool guarded;
        if (repeating_loop(n, &guarded) == l->loop && !guarded) l->synced_since = true;
    }
    return true;
}

static void check_sync(Check *c, CuNode *call) {
    const CudaSource *src = c->ctx->cuda;
    bool guarded;
    CuNode *loop = repeating_loop(call, &guarded);
    if (!loop || guarded) return;
    /* a warm-up of a few runs, in no loop of its own: a handful of waits in all */
    bool outer_guarded;
    if (few_iterations(loop) && !repeating_loop(loop, &outer_guarded)) return;
    LastLaunch last = {loop, call, NULL, false};
    cu_walk(loop, visit_last_launch, &last);
    /* a second wait for the same launch (a checking macro's synchronize, then one more) waits for nothing */
    if (!last.launch || last.synced_since) return;
    /* timing code */
    TimingSearch timing = {src, 0, false};
    cu_walk(loop, visit_timing, &timing);
    if (timing.found) return;
    /* the wait is what the iteration hands on, or what its condition or output needs */
    HandOff hand_off = {call->end, false};
    cu_walk(loop, visit_hand_off, &hand_off);
    if (hand_off.found || condition_reads_gpu_result(src, loop) || orders_device_printf(src, loop)) return;
    /* a blocking copy in the iteration waits anyway */
    bool blocking = false;
    cu_walk(loop, visit_blocking_copy, &blocking);
    if (blocking) return;
    /* the iteration reads what the GPU produced */
    DeclSet set = {0};
    Collect col = {&set, false};
    cu_walk(loop, visit_gpu_visible, &col);
    col.allocations_only = true; /* managed, mapped and pinned allocations anywhere */
    cu_walk(src->root, visit_gpu_visible, &col);
    UseSearch u = {src, &set, false};
    cu_walk(loop, visit_use, &u);
    free(set.items);
    if (set.oom) c->ctx->out_of_memory = true;
    if (u.found) return;

    ByteRange at = cu_report_range(call);
    const char *kernel = "a kernel";
    char kbuf[128];
    CuLaunch l;
    if (cu_launch(last.launch, &l) && l.kernel && *l.kernel) {
        snprintf(kbuf, sizeof kbuf, "`%s`", l.kernel);
        kernel = kbuf;
    } else if (*cu_callee(last.launch)) {
        snprintf(kbuf, sizeof kbuf, "`%s`", cu_callee(last.launch));
        kernel = kbuf;
    }
    Finding *f = rule_report(c->ctx, at.start, at.end,
                             "%s() after launching %s on every iteration of this loop: the host waits for the GPU "
                             "to drain before it queues the next launch, so the GPU idles each iteration; launches "
                             "on a stream already run in order - synchronize once after the loop, or every N "
                             "iterations",
                             cu_callee(call), kernel);
    if (f && !finding_add_related(f, cu_report_range(last.launch), "the launch it waits for"))
        c->ctx->out_of_memory = true;
}

typedef struct {
    const CuNode *decl;
    CuNode *release;
} ReleaseSearch;

static bool visit_release(CuNode *n, void *data) {
    ReleaseSearch *r = data;
    if (r->release) return false;
    if (n->kind == CXCursor_CallExpr && cu_name_in(cu_callee(n), releasers)) {
        uint32_t count;
        CuNode **args = cu_call_args(n, &count);
        CuNode *a = count >= 1 ? cu_strip(args[0]) : NULL;
        if (a && (a->kind == CXCursor_DeclRefExpr || a->kind == CXCursor_MemberRefExpr) && a->ref == r->decl)
            r->release = n;
    }
    return !r->release;
}

static void check_alloc(Check *c, CuNode *call) {
    bool guarded;
    CuNode *loop = repeating_loop(call, &guarded);
    if (!loop || guarded) return;
    uint32_t count;
    CuNode **args = cu_call_args(call, &count);
    if (count < 1) return;
    /* &p: one pointer, allocated again on every iteration (not &bufs[i]) */
    CuNode *a = cu_strip(args[0]);
    if (!a || a->kind != CXCursor_UnaryOperator || a->op != CXUnaryOperator_AddrOf || a->child_count != 1) return;
    CuNode *target = cu_strip(a->children[0]);
    if (!target || (target->kind != CXCursor_DeclRefExpr && target->kind != CXCursor_MemberRefExpr) || !target->ref)
        return;
    if (target->kind == CXCursor_MemberRefExpr) {
        /* bufs[i].ptr, it->ptr: distinct objects */
        for (CuNode *b = target->child_count ? cu_strip(target->children[0]) : NULL; b;
             b = b->child_count ? cu_strip(b->children[0]) : NULL) {
            if (b->kind == CXCursor_ArraySubscriptExpr || b->kind == CXCursor_CallExpr) return;
            if (b->kind == CXCursor_DeclRefExpr && b->ref && cu_contains(loop, b->ref)) return;
            if (b->kind != CXCursor_MemberRefExpr) break;
        }
    }
    ReleaseSearch r = {target->ref, NULL};
    cu_walk(loop, visit_release, &r);
    if (!r.release) return;
    ByteRange at = cu_report_range(call);
    const char *name = target->name && *target->name ? target->name : "the buffer";
    Finding *f = rule_report(c->ctx, at.start, at.end,
                             "%s() of `%s` on every iteration of this loop, and %s() of it in the same loop: each "
                             "allocation is an expensive driver call and cudaFree synchronizes the device; allocate "
                             "once before the loop (at the largest size) and free after it, or use "
                             "cudaMallocAsync/cudaFreeAsync",
                             cu_callee(call), name, cu_callee(r.release));
    if (f && !finding_add_related(f, cu_report_range(r.release), "released here, in the same loop"))
        c->ctx->out_of_memory = true;
}

static bool visit(CuNode *n, void *data) {
    Check *c = data;
    if (cu_is_function(n) && cu_is_device_code(n)) return false;
    if (n->kind != CXCursor_CallExpr) return true;
    const char *name = cu_callee(n);
    if (cu_name_in(name, syncs)) check_sync(c, n);
    else if (cu_name_in(name, allocators)) check_alloc(c, n);
    return true;
}

static void check(RuleContext *ctx) {
    if (!ctx->cuda || !ctx->cuda->root) return;
    Check c = {ctx};
    cu_walk(ctx->cuda->root, visit, &c);
}

const Rule rule_cu008_sync_or_alloc_in_loop = {
    .code = "CU008", .name = "sync-or-alloc-in-loop", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_CUDA, .check = check, .whole_file = true, .measure = MEASURE_SYNC,
    .summary = "Device synchronization after every launch, or cudaMalloc/cudaFree, inside a loop",
    .advice = "synchronize once after the loop (or on an event), and allocate the buffers once before it",
    .documentation = documentation};
