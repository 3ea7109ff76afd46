/* CU011 unchecked-cuda-error: a CUDA runtime call whose cudaError_t is thrown
 * away, and a kernel launch that no cudaGetLastError()/cudaPeekAtLastError()
 * follows. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/cuda/cuda_query.h"
#include "analysis/base/growable.h"
#include "rules/rule.h"
#include "analysis/base/text_format.h"

static const char documentation[] =
    "## What it does\n"
    "Flags CUDA runtime calls (`cudaMalloc`, `cudaMemcpy`, `cudaStreamCreate`, ... any `cuda*`\n"
    "function that returns `cudaError_t`) written as bare statements, so that their result is\n"
    "thrown away, and kernel launches `k<<<grid, block>>>(...)` that no `cudaGetLastError()` or\n"
    "`cudaPeekAtLastError()` follows in the same function.\n"
    "\n"
    "## Why is this slow?\n"
    "It is not slow, it is blind: a failed `cudaMalloc` leaves a garbage pointer, a failed copy\n"
    "leaves stale data, and a launch with an invalid configuration (too many threads, too much\n"
    "shared memory, too many registers) never runs at all. None of these stop the program; the\n"
    "error surfaces much later, in another call, or never, and performance measurements of a\n"
    "kernel that did not run are meaningless. A launch returns nothing: its configuration error\n"
    "is reported only by `cudaGetLastError()` (a later `cudaDeviceSynchronize()` reports errors\n"
    "that happen while the kernel runs, not a launch that was refused).\n"
    "\n"
    "Not flagged: results that are assigned, compared, returned or passed to a function or macro\n"
    "(`CUDA_CHECK(...)`, `checkCudaErrors(...)`, any wrapper); calls cast to `(void)`, which is an\n"
    "explicit choice; calls spelled inside a macro expansion; `cudaGetLastError()` itself (a bare\n"
    "call is the usual way to clear an error); `cudaEventQuery()` and `cudaStreamQuery()`, whose\n"
    "usual result, `cudaErrorNotReady`, is a status rather than a failure (a bare query after\n"
    "`cudaEventRecord` flushes the queued work to the device); calls followed in the same function by a checked\n"
    "`cudaGetLastError()`/`cudaPeekAtLastError()` (which report the last error of any runtime\n"
    "call); cleanup in destructors, `catch` blocks, error branches (`if (err != cudaSuccess) {\n"
    "cudaFree(p); return err; }`, the `else` of `if (err == cudaSuccess)`, a branch that frees and\n"
    "returns or exits) and after a `goto` label; device code; calls and launches written inside a\n"
    "macro's body (the macro is where a check belongs). A launch is checked when\n"
    "`cudaGetLastError()`, `cudaPeekAtLastError()`, a function or macro built on them (such as\n"
    "`getLastCudaError(...)`, `C10_CUDA_KERNEL_LAUNCH_CHECK()`, also when its header was not found)\n"
    "or a helper of this file that calls them comes after it in the function or anywhere in the loop\n"
    "that repeats it. Otherwise the launching function's callers decide: a launch inside a wrapper is\n"
    "checked when every use of the wrapper in this file (a call from a `switch`/`if` dispatcher, a\n"
    "function pointer, a template launcher that takes the kernel) is followed by a check before any\n"
    "other launch or call of a function of this file, in the calling function or, through further\n"
    "wrappers, in its callers. A launching function that nothing in this file calls is not flagged:\n"
    "its callers are in other files and may check there; `main` and functions this file binds for\n"
    "Python (`PYBIND11_MODULE`, `TORCH_LIBRARY`) have no such caller and are flagged.\n"
    "\n"
    "## Example\n"
    "```cuda\n"
    "cudaMalloc(&d_x, bytes);\n"
    "cudaMemcpy(d_x, h_x, bytes, cudaMemcpyHostToDevice);\n"
    "scale<<<blocks, 256>>>(d_x, n);\n"
    "cudaDeviceSynchronize();\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```cuda\n"
    "#define CUDA_CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \\\n"
    "    fprintf(stderr, \"%s:%d: %s\\n\", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)\n"
    "\n"
    "CUDA_CHECK(cudaMalloc(&d_x, bytes));\n"
    "CUDA_CHECK(cudaMemcpy(d_x, h_x, bytes, cudaMemcpyHostToDevice));\n"
    "scale<<<blocks, 256>>>(d_x, n);\n"
    "CUDA_CHECK(cudaGetLastError());\n"
    "CUDA_CHECK(cudaDeviceSynchronize());\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "When the file already wraps CUDA calls in a checking macro or function (`CUDA_CHECK(...)`), an\n"
    "unsafe fix wraps the call in it, or adds `CUDA_CHECK(cudaGetLastError());` after the launch.\n"
    "It is unsafe because the checker changes what happens on failure (it usually exits). Without\n"
    "such a checker there is no fix, nor when the checker is a macro that names its argument twice\n"
    "(`if ((call) != cudaSuccess) { ... cudaGetErrorString(call) ... }`): wrapped in it, a call\n"
    "would run again on failure.\n";

/* ---- small helpers ------------------------------------------------------- */

static bool is_wrapper(const CuNode *n) {
    return n && (n->kind == CXCursor_UnexposedExpr || n->kind == CXCursor_ParenExpr) && n->child_count == 1;
}

/* the outermost implicit wrapper around n (n itself when none) */
static CuNode *outer(CuNode *n) {
    while (n->parent && is_wrapper(n->parent)) n = n->parent;
    return n;
}

/* n (after wrappers) stands alone as a statement: its value is discarded */
static bool is_discarded(CuNode *n) {
    CuNode *top = outer(n);
    CuNode *p = top->parent;
    if (!p) return false;
    switch (p->kind) {
    case CXCursor_CompoundStmt:
        return true;
    case CXCursor_IfStmt:
        return p->child_count >= 2 && top != p->children[0];
    case CXCursor_DoStmt:
        return p->child_count >= 1 && top == p->children[0];
    case CXCursor_ForStmt:
    case CXCursor_WhileStmt:
    case CXCursor_CXXForRangeStmt:
    case CXCursor_CaseStmt:
    case CXCursor_DefaultStmt:
    case CXCursor_LabelStmt:
        return p->child_count >= 2 && top == p->children[p->child_count - 1];
    default:
        return false;
    }
}

/* the node's tokens come from a macro expansion (or a macro argument) */
static bool in_macro(const CuNode *n) {
    CXSourceLocation a = clang_getRangeStart(clang_getCursorExtent(n->cursor));
    CXFile fe, ff;
    unsigned oe, of;
    clang_getExpansionLocation(a, &fe, NULL, NULL, &oe);
    clang_getFileLocation(a, &ff, NULL, NULL, &of);
    return oe != of || !fe || !ff || !clang_File_isEqual(fe, ff);
}

static bool type_is_cuda_error(CXType t) {
    t = clang_getCanonicalType(t);
    if (t.kind != CXType_Enum) return false;
    CXString s = clang_getCursorSpelling(clang_getTypeDeclaration(t));
    bool yes = strcmp(clang_getCString(s), "cudaError") == 0;
    clang_disposeString(s);
    return yes;
}

/* a call of a cuda* runtime function that returns cudaError_t */
static bool is_cuda_api_call(const CuNode *n) {
    if (!n || n->kind != CXCursor_CallExpr) return false;
    const char *name = cu_callee(n);
    if (strncmp(name, "cuda", 4) != 0 || !isupper((unsigned char)name[4])) return false;
    return type_is_cuda_error(clang_getCursorType(n->cursor));
}

/* `cudaEventQuery(e)`, `cudaStreamQuery(s)`: their usual result,
 * cudaErrorNotReady, is a status, not a failure (a checking macro would
 * abort on it), and a bare query is an idiom: it flushes the queued launches
 * to the device (WDDM drivers batch them) right after a cudaEventRecord */
static bool is_status_query(const CuNode *n) {
    const char *name = cu_callee(n);
    return strcmp(name, "cudaEventQuery") == 0 || strcmp(name, "cudaStreamQuery") == 0;
}

static bool is_last_error_call(const CuNode *n) {
    if (!n || n->kind != CXCursor_CallExpr) return false;
    const char *name = cu_callee(n);
    return strcmp(name, "cudaGetLastError") == 0 || strcmp(name, "cudaPeekAtLastError") == 0;
}

static bool contains_ci(const char *s, const char *needle) {
    size_t k = strlen(needle);
    for (; *s; s++)
        if (strncasecmp(s, needle, k) == 0) return true;
    return false;
}

/* ---- what counts as an error check ------------------------------------- */

typedef struct {
    RuleContext *ctx;
    const CudaSource *src;
    /* a checker learned from this file: a macro or function that CUDA calls are passed to */
    char checker[64];
    size_t checker_define; /* offset of its #define in this file, or SIZE_MAX */
    bool checker_repeats;  /* that macro names its argument twice: a call wrapped in it would run again */
} State;

static bool body_checks_last_error(const CuNode *fn, int depth);

/* whether functions of this file check the last error, per thread (the
 * server's workers run rules concurrently) and reset for every check */
enum { HELPER_CACHE = 256 };
static _Thread_local struct {
    const CuNode *fn[HELPER_CACHE];
    bool checks[HELPER_CACHE];
    int count;
} helper_cache;

static const char *const checker_words[] = {"lasterror",    "last_error",  "lastcudaerror", "last_cuda_error",
                                            "checkerror",   "check_error", "launch_check",  "launchcheck",
                                            "checklaunch",  "check_launch", "kernelcheck",  "check_kernel",
                                            "checkkernel",  NULL};

static bool named_as_checker(const char *name) {
    for (int i = 0; checker_words[i]; i++)
        if (contains_ci(name, checker_words[i])) return true;
    return false;
}

/* a call that reads the last error (and does not throw it away) */
static bool is_error_check(const CuNode *n, int depth) {
    const char *unresolved = cu_unresolved_callee(n);
    if (unresolved) {
        /* getLastCudaError("..."): a checker by its name, unless it is handed another CUDA call's result */
        if (!named_as_checker(unresolved)) return false;
        for (uint32_t i = 1; i < n->child_count; i++) {
            const CuNode *arg = cu_strip(n->children[i]);
            if (arg && arg->kind == CXCursor_CallExpr && strncmp(cu_callee(arg), "cuda", 4) == 0 && !is_last_error_call(arg))
                return false;
        }
        return true;
    }
    if (!n || n->kind != CXCursor_CallExpr) return false;
    if (is_last_error_call(n)) return !is_discarded((CuNode *)n);
    /* a checker of the last error by its name (getLastCudaError("..."), cudaCheckError()), as long as it is
     * not checking the result of some other call it is given */
    const char *name = cu_callee(n);
    if (named_as_checker(name)) {
        uint32_t argc;
        CuNode **args = cu_call_args(n, &argc);
        for (uint32_t i = 0; i < argc; i++)
            if (type_is_cuda_error(clang_getCursorType(cu_strip(args[i])->cursor))) return false;
        return true;
    }
    /* a helper of this file that checks */
    if (n->ref && depth < 2 && cu_is_function(n->ref)) {
        /* remembered per check: big files call the same helpers again and again */
        if (depth == 0)
            for (int i = 0; i < helper_cache.count; i++)
                if (helper_cache.fn[i] == n->ref) return helper_cache.checks[i];
        bool checks = body_checks_last_error(n->ref, depth + 1);
        if (depth == 0 && helper_cache.count < HELPER_CACHE) {
            helper_cache.fn[helper_cache.count] = n->ref;
            helper_cache.checks[helper_cache.count++] = checks;
        }
        return checks;
    }
    return false;
}

typedef struct {
    size_t after;
    int depth;
} CheckSearch;

static bool is_check_after(const CuNode *n, void *data) {
    const CheckSearch *s = data;
    return n->start >= s->after && is_error_check(n, s->depth);
}

static bool has_check_in(CuNode *root, size_t after, int depth) {
    CheckSearch s = {after, depth};
    return cu_find(root, is_check_after, &s) != NULL;
}

static bool visit_busy(CuNode *n, void *data) {
    bool *busy = data;
    CuLaunch l;
    if (n->kind == CXCursor_CallExpr && (cu_launch(n, &l) || (n->ref && cu_is_function(n->ref)))) *busy = true;
    return !*busy;
}

/* a helper that checks the last error and does nothing else of note: no
 * launches, no calls of other functions of this file */
static bool body_checks_last_error(const CuNode *fn, int depth) {
    bool busy = false;
    cu_walk((CuNode *)fn, visit_busy, &busy);
    if (busy) return false;
    for (uint32_t i = 0; i < fn->child_count; i++)
        if (fn->children[i]->kind == CXCursor_CompoundStmt && has_check_in(fn->children[i], 0, depth)) return true;
    return false;
}

/* an error check comes after offset in fn, or anywhere in a loop around node */
static bool checked_after(CuNode *fn, const CuNode *node) {
    if (has_check_in(fn, node->end, 0)) return true;
    for (CuNode *p = node->parent; p && p != fn; p = p->parent)
        if ((p->kind == CXCursor_ForStmt || p->kind == CXCursor_WhileStmt || p->kind == CXCursor_DoStmt ||
             p->kind == CXCursor_CXXForRangeStmt) &&
            has_check_in(p, 0, 0))
            return true;
    return false;
}

/* ---- callers ------------------------------------------------------------------ */

/* whether the callers of a function look at the last error after calling it */
typedef enum { CALLERS_UNCHECKED, CALLERS_CHECKED, CALLERS_UNKNOWN } Callers;

typedef struct {
    const CuNode *fn;
    CXCursor canonical;
    const CuNode **uses;
    size_t count, cap;
    bool oom;
} UseSearch;

static bool names_fn(const CuNode *n, const UseSearch *s) {
    if (n->ref == s->fn) return true;
    const char *name = n->kind == CXCursor_OverloadedDeclRef ? n->name : n->ref_name;
    if (!name || strcmp(name, s->fn->name) != 0) return false;
    if (n->kind == CXCursor_OverloadedDeclRef) return true; /* a call in a template: by name */
    CXCursor r = clang_getCursorReferenced(n->cursor);
    return !clang_Cursor_isNull(r) && clang_equalCursors(clang_getCanonicalCursor(r), s->canonical);
}

static bool visit_use(CuNode *n, void *data) {
    UseSearch *s = data;
    if (s->oom) return false;
    if (n == s->fn) return false; /* its own body: recursion is not a caller */
    if ((n->kind == CXCursor_DeclRefExpr || n->kind == CXCursor_MemberRefExpr ||
         n->kind == CXCursor_OverloadedDeclRef) &&
        names_fn(n, s)) {
        /* a DeclRefExpr over an OverloadedDeclRef is one use */
        if (n->kind == CXCursor_OverloadedDeclRef && n->parent && n->parent->kind == CXCursor_DeclRefExpr &&
            s->count && s->uses[s->count - 1] == n->parent)
            return true;
        if (!array_reserve(&s->uses, s->count, &s->cap, sizeof *s->uses, 8)) {
            s->oom = true;
            return false;
        }
        s->uses[s->count++] = n;
        return false;
    }
    return true;
}

/* the next thing of note after `after` in fn: an error check, or a launch or a call of another
 * function of this file that comes first (runtime calls in between, such as a synchronize, are fine:
 * they leave the launch's error for cudaGetLastError) */
typedef struct {
    size_t after;
    int state; /* 0 nothing yet, 1 a check, 2 another launch first */
} NextEvent;

static bool visit_next(CuNode *n, void *data) {
    NextEvent *e = data;
    if (e->state) return false;
    if (n->end <= e->after) return false;
    if (n->start < e->after) return true; /* an ancestor of the call: look inside */
    if (is_error_check(n, 0)) {
        e->state = 1;
        return false;
    }
    CuLaunch l;
    if (n->kind == CXCursor_CallExpr && (cu_launch(n, &l) || (n->ref && cu_is_function(n->ref)))) {
        e->state = 2;
        return false;
    }
    return true;
}

/* after the use of a launching function in fn, the next thing of note is an error check (or one
 * sits in a loop around the use, checking the previous round) */
static bool checked_next(CuNode *fn, const CuNode *use) {
    NextEvent e = {use->end, 0};
    cu_walk(fn, visit_next, &e);
    if (e.state == 1) return true;
    for (CuNode *p = use->parent; p && p != fn; p = p->parent)
        if (cu_is_loop(p) && has_check_in(p, 0, 0)) return true;
    return false;
}

/* the file binds the function for Python (pybind11, a torch library): it is called from Python,
 * which never looks at the CUDA last error */
static bool bound_for_python(const CudaSource *src, const CuNode *fn) {
    const char *text = src->doc->text;
    const char *module = strstr(text, "PYBIND11_MODULE");
    if (!module) module = strstr(text, "TORCH_LIBRARY");
    if (!module || !fn->name || !*fn->name) return false;
    size_t k = strlen(fn->name);
    for (const char *p = strstr(module, fn->name); p; p = strstr(p + 1, fn->name)) {
        bool start = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        bool end = !(isalnum((unsigned char)p[k]) || p[k] == '_');
        if (start && end) return true;
    }
    return false;
}

/* every use of fn in this file (a call, or its address taken) is followed by
 * an error check in the using function, or in the callers of that one (a
 * wrapper called from a dispatcher, a template launcher, a function pointer);
 * UNKNOWN when some callers are not in this file */
static Callers callers_of(const CudaSource *src, const CuNode *fn, int depth) {
    if (!fn || depth > 3) return CALLERS_UNKNOWN;
    if (fn->kind == CXCursor_FunctionDecl && fn->name && strcmp(fn->name, "main") == 0) return CALLERS_UNCHECKED;
    UseSearch s = {fn, clang_getCanonicalCursor(fn->cursor), NULL, 0, 0, false};
    if (fn->kind == CXCursor_LambdaExpr) {
        /* the lambda is used where it is written: what follows it in the enclosing function */
        CuNode *outer = cu_function_of(fn);
        if (!outer) return CALLERS_UNKNOWN;
        if (checked_next(outer, fn)) return CALLERS_CHECKED;
        return callers_of(src, outer, depth + 1);
    }
    if (!fn->name || !*fn->name) return CALLERS_UNKNOWN;
    cu_walk(src->root, visit_use, &s);
    Callers result = CALLERS_CHECKED;
    if (s.oom) result = CALLERS_UNKNOWN;
    else if (s.count == 0) result = CALLERS_UNKNOWN; /* called from other files */
    for (size_t i = 0; i < s.count && result != CALLERS_UNCHECKED; i++) {
        CuNode *caller = cu_function_of(s.uses[i]);
        Callers r;
        if (!caller) r = CALLERS_UNKNOWN; /* a table of functions at file scope */
        else if (checked_next(caller, s.uses[i])) r = CALLERS_CHECKED;
        else r = callers_of(src, caller, depth + 1);
        if (r == CALLERS_UNCHECKED) result = CALLERS_UNCHECKED;
        else if (r == CALLERS_UNKNOWN) result = CALLERS_UNKNOWN;
    }
    if (result == CALLERS_UNKNOWN && bound_for_python(src, fn)) result = CALLERS_UNCHECKED;
    free(s.uses);
    return result;
}

/* remembered per check: a file's launches share their few launching functions */
enum { CALLER_CACHE = 128 };
static _Thread_local struct {
    const CuNode *fn[CALLER_CACHE];
    Callers callers[CALLER_CACHE];
    int count;
} caller_cache;

static Callers callers_check(const CudaSource *src, const CuNode *fn) {
    for (int i = 0; i < caller_cache.count; i++)
        if (caller_cache.fn[i] == fn) return caller_cache.callers[i];
    Callers c = callers_of(src, fn, 0);
    if (caller_cache.count < CALLER_CACHE) {
        caller_cache.fn[caller_cache.count] = fn;
        caller_cache.callers[caller_cache.count++] = c;
    }
    return c;
}

/* ---- cleanup contexts -------------------------------------------------- */

static bool is_cuda_error_expr(const CuNode *n) {
    n = cu_strip((CuNode *)n);
    return n && (n->kind == CXCursor_DeclRefExpr || n->kind == CXCursor_CallExpr ||
                 n->kind == CXCursor_MemberRefExpr) &&
           type_is_cuda_error(clang_getCursorType(n->cursor));
}

static bool is_success(const CuNode *n) {
    n = cu_strip((CuNode *)n);
    return n && n->kind == CXCursor_DeclRefExpr && strcmp(n->name, "cudaSuccess") == 0;
}

/* which branch of `if (cond)` handles a CUDA failure: 1 the then branch,
 * 2 the else branch, 0 neither or unknown */
static int error_branch(const CuNode *cond) {
    cond = cu_strip((CuNode *)cond);
    if (!cond) return 0;
    if (cond->kind == CXCursor_BinaryOperator && cond->child_count == 2) {
        const CuNode *a = cond->children[0], *b = cond->children[1];
        if (cond->op == CXBinaryOperator_NE || cond->op == CXBinaryOperator_EQ) {
            bool compares = (is_success(a) && is_cuda_error_expr(b)) || (is_success(b) && is_cuda_error_expr(a));
            if (!compares) return 0;
            return cond->op == CXBinaryOperator_NE ? 1 : 2;
        }
        if (cond->op == CXBinaryOperator_LOr || cond->op == CXBinaryOperator_LAnd) {
            int x = error_branch(a), y = error_branch(b);
            /* `e1 != ok || e2 != ok` fails when either fails; `e1 == ok && e2 == ok` succeeds when both do */
            if (cond->op == CXBinaryOperator_LOr && x != 2 && y != 2 && (x == 1 || y == 1)) return 1;
            if (cond->op == CXBinaryOperator_LAnd && x != 1 && y != 1 && (x == 2 || y == 2)) return 2;
            return 0;
        }
        return 0;
    }
    if (cond->kind == CXCursor_UnaryOperator && cond->op == CXUnaryOperator_LNot && cond->child_count == 1)
        return is_cuda_error_expr(cond->children[0]) ? 2 : 0;
    return is_cuda_error_expr(cond) ? 1 : 0; /* if (err) */
}

static bool ends_in_exit(const CuNode *block) {
    if (!block) return false;
    const CuNode *last = block;
    if (block->kind == CXCursor_CompoundStmt) {
        if (block->child_count == 0) return false;
        last = block->children[block->child_count - 1];
    }
    if (last->kind == CXCursor_ReturnStmt || last->kind == CXCursor_GotoStmt || last->kind == CXCursor_BreakStmt)
        return true;
    CuNode *e = cu_strip((CuNode *)last);
    if (e && e->kind == CXCursor_CallExpr) {
        const char *name = cu_callee(e);
        return strcmp(name, "exit") == 0 || strcmp(name, "abort") == 0 || strcmp(name, "_Exit") == 0 ||
               strcmp(name, "quick_exit") == 0;
    }
    return e && e->kind == CXCursor_CXXThrowExpr;
}

static bool is_release_call(const CuNode *call) {
    const char *name = cu_callee(call);
    return strstr(name, "Free") || strstr(name, "Destroy") || strstr(name, "Reset") || strstr(name, "Unregister") ||
           strstr(name, "Detach");
}

/* the call cleans up on a failure path: destructor, catch block, error
 * branch, or after a goto label */
static bool in_cleanup(const CuNode *call, const CuNode *fn) {
    if (fn->kind == CXCursor_Destructor) return true;
    const CuNode *child = call;
    for (CuNode *p = call->parent; p && p != fn; child = p, p = p->parent) {
        if (p->kind == CXCursor_CXXCatchStmt) return true;
        if (p->kind == CXCursor_IfStmt && p->child_count >= 2 && child != p->children[0]) {
            int branch = error_branch(p->children[0]);
            if (branch && p->child_count > (uint32_t)branch && child == p->children[branch]) return true;
            if (ends_in_exit(child) && is_release_call(call)) return true;
        }
    }
    /* after a label in the function (the target of `goto cleanup`) */
    CuNode *stack[1024];
    int sp = 0;
    stack[sp++] = (CuNode *)fn;
    while (sp > 0) {
        CuNode *n = stack[--sp];
        if (n->kind == CXCursor_LabelStmt && n->start < call->start) return true;
        for (uint32_t i = 0; i < n->child_count && sp < 1024; i++) stack[sp++] = n->children[i];
    }
    return false;
}

/* ---- the checker this file uses (for the fix) --------------------------- */

static size_t ident_at(const char *text, size_t len, size_t at, char *out, size_t size) {
    size_t n = 0;
    if (at >= len || !(isalpha((unsigned char)text[at]) || text[at] == '_')) return 0;
    while (at + n < len && (isalnum((unsigned char)text[at + n]) || text[at + n] == '_')) n++;
    if (n + 1 > size) return 0;
    memcpy(out, text + at, n);
    out[n] = '\0';
    return n;
}

static bool visit_learn(CuNode *n, void *data) {
    State *st = data;
    if (st->checker[0]) return false;
    if (!is_cuda_api_call(n)) return true;
    const Document *doc = st->src->doc;
    if (in_macro(n)) {
        /* CHECK(cudaX(...)): the expansion starts at the macro name, the call is its first argument */
        CXSourceLocation a = clang_getRangeStart(clang_getCursorExtent(n->cursor));
        CXFile fe, ff;
        unsigned oe, of;
        clang_getExpansionLocation(a, &fe, NULL, NULL, &oe);
        clang_getFileLocation(a, &ff, NULL, NULL, &of);
        if (!fe || !ff || !clang_File_isEqual(fe, ff) || of <= oe || of > doc->length) return true;
        char name[64];
        size_t k = ident_at(doc->text, doc->length, oe, name, sizeof name);
        if (!k) return true;
        size_t i = oe + k;
        while (i < of && isspace((unsigned char)doc->text[i])) i++;
        if (i >= of || doc->text[i] != '(') return true;
        for (i++; i < of; i++)
            if (!isspace((unsigned char)doc->text[i])) return true;
        const char *callee = cu_callee(n);
        if (strncmp(doc->text + of, callee, strlen(callee)) != 0) return true;
        snprintf(st->checker, sizeof st->checker, "%s", name);
        return false;
    }
    /* check(cudaX(...)): a function whose first parameter takes the error */
    CuNode *top = outer(n);
    CuNode *p = top->parent;
    if (!p || p->kind != CXCursor_CallExpr || is_cuda_api_call(p)) return true;
    uint32_t argc;
    CuNode **args = cu_call_args(p, &argc);
    if (argc < 1 || args[0] != top) return true;
    CXCursor fn = clang_getCursorReferenced(p->cursor);
    if (clang_Cursor_isNull(fn)) return true;
    bool takes_error = clang_Cursor_getNumArguments(fn) >= 1 &&
                       type_is_cuda_error(clang_getCursorType(clang_Cursor_getArgument(fn, 0)));
    const char *name = cu_callee(p);
    if (!takes_error && !(contains_ci(name, "check") || contains_ci(name, "err") || contains_ci(name, "assert")))
        return true;
    if (in_macro(p) || strchr(name, ':') || strlen(name) >= sizeof st->checker) return true;
    /* the callee's name must be what the source spells */
    if (strncmp(cu_text(st->src, p), name, strlen(name)) != 0) return true;
    snprintf(st->checker, sizeof st->checker, "%s", name);
    return false;
}

static bool is_word_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* `#define CHECK_CUDA(call) if ((call) != cudaSuccess) { ... cudaGetErrorString(call) ... }`:
 * the body (to the end of its continued lines) names the parameter more than once, so
 * `CHECK_CUDA(cudaFree(p))` would call cudaFree again on failure. at: the macro's name. */
static bool macro_repeats_argument(const Document *doc, size_t at, size_t name_len) {
    const char *p = doc->text + at + name_len, *end = doc->text + doc->length;
    if (p >= end || *p != '(') return false;
    const char *param = ++p;
    while (p < end && is_word_char(*p)) p++;
    size_t param_len = (size_t)(p - param);
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    if (!param_len || p >= end || *p != ')') return false; /* one named parameter only */
    int uses = 0;
    for (p++; p < end && *p != '\n'; p++) {
        if (*p == '\\' && p + 1 < end && (p[1] == '\n' || (p[1] == '\r' && p + 2 < end && p[2] == '\n'))) {
            p += p[1] == '\r' ? 2 : 1; /* a continued line */
            continue;
        }
        if ((size_t)(end - p) >= param_len && strncmp(p, param, param_len) == 0 && !is_word_char(p[-1]) &&
            (p + param_len == end || !is_word_char(p[param_len]))) {
            uses++;
            p += param_len - 1;
        }
    }
    return uses > 1;
}

static void learn_checker(State *st) {
    st->checker[0] = '\0';
    st->checker_define = SIZE_MAX;
    st->checker_repeats = false;
    cu_walk(st->src->root, visit_learn, st);
    if (!st->checker[0]) return;
    /* where the file defines it as a macro, the fix may only use it below */
    const Document *doc = st->src->doc;
    size_t k = strlen(st->checker);
    for (size_t line = 0; line < doc->line_count; line++) {
        const char *p = doc->text + doc->line_starts[line], *end = doc->text + document_line_end(doc, line);
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if (p >= end || *p != '#') continue;
        p++;
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if ((size_t)(end - p) < 7 || strncmp(p, "define", 6) != 0) continue;
        p += 6;
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if ((size_t)(end - p) >= k && strncmp(p, st->checker, k) == 0 &&
            (p + k == end || !is_word_char(p[k]))) {
            st->checker_define = (size_t)(p - doc->text);
            st->checker_repeats = macro_repeats_argument(doc, st->checker_define, k);
            return;
        }
    }
}

/* a fix may wrap a call in the checker: it is defined above offset, and it
 * evaluates its argument once (a second evaluation would call again on
 * failure, or report the error that the first cudaGetLastError() cleared) */
static bool checker_usable_at(const State *st, size_t offset) {
    return st->checker[0] && !st->checker_repeats && (st->checker_define == SIZE_MAX || st->checker_define < offset);
}

/* the `;` that ends the expression statement n, or SIZE_MAX */
static size_t semicolon_after(const CudaSource *src, const CuNode *n) {
    const Document *doc = src->doc;
    size_t i = n->end;
    while (i < doc->length && (doc->text[i] == ' ' || doc->text[i] == '\t')) i++;
    return i < doc->length && doc->text[i] == ';' ? i : SIZE_MAX;
}

/* ---- the check ---------------------------------------------------------- */

/* The call is written in this file, not produced by a macro's body (whose nodes
 * all sit at the macro's use, `TORCH_BINDING(f32)`): the text there starts with
 * the callee's name. */
static bool call_spelled_here(const CudaSource *src, const CuNode *call) {
    const char *name = cu_callee(call), *text = cu_text(src, call);
    size_t len = cu_text_len(call), k = strlen(name);
    if (len >= 2 && text[0] == ':' && text[1] == ':') {
        text += 2;
        len -= 2;
    }
    return k && len > k && strncmp(text, name, k) == 0;
}

/* a launch written here: its text holds the `<<<` */
static bool launch_spelled_here(const CudaSource *src, const CuNode *call) {
    const char *text = cu_text(src, call);
    size_t len = cu_text_len(call);
    for (size_t i = 0; i + 2 < len; i++)
        if (text[i] == '<' && text[i + 1] == '<' && text[i + 2] == '<') return true;
    return false;
}

static void report_api_call(State *st, CuNode *call) {
    const char *name = cu_callee(call);
    Finding *f = rule_report_cu(st->ctx, call,
                                "the cudaError_t returned by %s() is discarded: a failure goes unnoticed and "
                                "surfaces later, in an unrelated call",
                                name);
    if (!f) return;
    if (checker_usable_at(st, call->start) && !in_macro(call)) {
        char *before = format_string("%s(", st->checker);
        char title[160];
        snprintf(title, sizeof title, "Check the result with %s(...)", st->checker);
        Fix *fix = before ? finding_add_fix(f, title, false) : NULL;
        if (!fix || !fix_add_edit(fix, call->start, call->start, before) ||
            !fix_add_edit(fix, call->end, call->end, ")"))
            st->ctx->out_of_memory = true;
        free(before);
    }
}

/* the kernel as the launch names it: its name, or the callee's text (`kern<T>`, a template
 * launcher's parameter) where clang resolves no declaration */
static void kernel_name(const CudaSource *src, const CuLaunch *l, char *buf, size_t size) {
    if (l->kernel && *l->kernel) {
        snprintf(buf, size, "%s", l->kernel);
        return;
    }
    const char *text = cu_text(src, l->call);
    size_t len = l->config && l->config->start > l->call->start ? l->config->start - l->call->start : 0;
    size_t w = 0;
    for (size_t i = 0; i < len && w + 1 < size; i++)
        if (!isspace((unsigned char)text[i])) buf[w++] = text[i];
    buf[w] = '\0';
    if (!w) snprintf(buf, size, "the kernel");
}

static void report_launch(State *st, CuLaunch *l) {
    char name[96];
    kernel_name(st->src, l, name, sizeof name);
    Finding *f = rule_report_cu(st->ctx, l->call,
                                "no cudaGetLastError() after this launch of %s: a launch that is refused (invalid "
                                "configuration, too many resources requested) fails silently, and a later "
                                "synchronize does not report it",
                                name);
    if (!f) return;
    /* the fix: a checked cudaGetLastError() on the next line */
    const CudaSource *src = st->src;
    const Document *doc = src->doc;
    CuNode *top = outer(l->call);
    if (!checker_usable_at(st, l->call->start) || top->parent->kind != CXCursor_CompoundStmt ||
        !cu_starts_line(src, top))
        return;
    size_t semi = semicolon_after(src, top);
    if (semi == SIZE_MAX) return;
    size_t line = document_line_of(doc, semi);
    size_t line_end = document_line_end(doc, line);
    for (size_t i = semi + 1; i < line_end; i++)
        if (doc->text[i] != ' ' && doc->text[i] != '\t') return;
    if (line_end >= doc->length) return;
    char indent[128];
    cu_line_indent(src, top->start, indent, sizeof indent);
    size_t at = line + 1 < doc->line_count ? doc->line_starts[line + 1] : doc->length;
    char *text = format_string("%s%s(cudaGetLastError());\n", indent, st->checker);
    char title[160];
    snprintf(title, sizeof title, "Add %s(cudaGetLastError()) after the launch", st->checker);
    Fix *fix = text ? finding_add_fix(f, title, false) : NULL;
    if (!fix || !fix_add_edit(fix, at, at, text)) st->ctx->out_of_memory = true;
    free(text);
}

static bool visit(CuNode *n, void *data) {
    State *st = data;
    if (n->kind != CXCursor_CallExpr) return true;
    CuNode *fn = cu_function_of(n);
    if (!fn || cu_is_device_code(fn) || (fn->kind == CXCursor_LambdaExpr && cu_is_device_code(cu_function_of(fn))))
        return true;
    CuLaunch l;
    if (cu_launch(n, &l)) {
        if (in_macro(n) || !launch_spelled_here(st->src, n) || checked_after(fn, n) || in_cleanup(n, fn)) return true;
        /* the function's callers check after calling it, or live in other files that may */
        if (callers_check(st->src, fn) != CALLERS_UNCHECKED) return true;
        report_launch(st, &l);
        return true;
    }
    if (!is_cuda_api_call(n) || is_last_error_call(n) || is_status_query(n) || in_macro(n) ||
        !call_spelled_here(st->src, n) ||
        !is_discarded(n))
        return true;
    if (in_cleanup(n, fn) || checked_after(fn, n)) return true;
    report_api_call(st, n);
    return true;
}

static void check(RuleContext *ctx) {
    if (!ctx->cuda || !ctx->cuda->root) return;
    State st = {.ctx = ctx, .src = ctx->cuda};
    helper_cache.count = 0;
    caller_cache.count = 0;
    learn_checker(&st);
    cu_walk(ctx->cuda->root, visit, &st);
}

const Rule rule_cu011_unchecked_cuda_error = {
    .code = "CU011", .name = "unchecked-cuda-error", .severity = SEVERITY_HINT, .correctness = true,
    .languages = LANGUAGE_CUDA, .check = check, .whole_file = true,
    .summary = "CUDA runtime result discarded, or a kernel launch with no error check after it",
    .documentation = documentation};
