/* Questions CUDA rules ask of the snapshot AST (cuda_source.h): kernels,
 * launches, loops, constants, statements, function bodies and definitions,
 * where a finding is reported, and searches (cu_find). General facts about
 * CUDA/C++ code; what a value does across threads is cuda_index.h's. */
#ifndef ADVISE_CUDA_QUERY_H
#define ADVISE_CUDA_QUERY_H

#include "analysis/cuda/cuda_source.h"
#include "analysis/finding.h"

/* Skips the wrappers libclang shows around expressions: implicit casts
 * (UnexposedExpr), parentheses, and C++ functional casts with one child. */
CuNode *cu_strip(CuNode *n);
/* One step of cu_strip: the node inside a paren, implicit conversion or cast; NULL when n is none */
CuNode *cu_unwrap_once(const CuNode *n);
/* The i-th child after stripping, or NULL. */
CuNode *cu_child(const CuNode *n, uint32_t i);

bool cu_is_kernel(const CuNode *fn);                 /* a __global__ function definition */
/* a function, method, constructor, destructor, conversion or lambda */
bool cu_is_function(const CuNode *n);
/* a call of the function `name` */
bool cu_is_call(const CuNode *n, const char *name);
/* name is one of the NULL-terminated list */
bool cu_name_in(const char *name, const char *const *list);
bool cu_is_device_code(const CuNode *fn);            /* __global__ or __device__ */
CuNode *cu_function_of(const CuNode *n);             /* the enclosing function (decl), or NULL */
/* The body of a function definition (or lambda): its last child, when that
 * is a compound statement; NULL for a declaration without a body. */
CuNode *cu_function_body(const CuNode *fn);
/* The definition of a function in this file: decl itself when it has a
 * body, else the top-level declaration with a body that clang names its
 * definition; NULL when the file does not define it. */
CuNode *cu_definition_of(const CudaSource *src, const CuNode *decl);
CuNode *cu_loop_of(const CuNode *n, const CuNode *stop); /* the nearest for/while/do below stop */
/* The statement holding n: the child of a compound statement (or of a
 * loop/if body without braces). */
CuNode *cu_statement_of(const CuNode *n);
/* The variable a declaration statement declares when it declares exactly
 * one (`int i = ...;`), else NULL. */
CuNode *cu_single_var_decl(const CuNode *stmt);
/* `return;` or `{ return; }`: a statement that only leaves a void function. */
bool cu_is_bare_return(const CuNode *stmt);
/* The function called by a CallExpr ("" when unknown). */
const char *cu_callee(const CuNode *call);
/* A call clang could not resolve (its declaration's header was not found):
 * `getLastCudaError("...")`, `sdkStartTimer(&t)` show as an expression whose
 * first child names the function. Its name, or NULL when n is not one. */
const char *cu_unresolved_callee(const CuNode *n);
/* The arguments of a CallExpr, count in *n: its children after the callee
 * (recognised by what it refers to, or by starting where the call starts)
 * and after a launch's <<<...>>> configuration. */
CuNode **cu_call_args(const CuNode *call, uint32_t *n);
/* The i-th argument of a call, stripped; NULL when there is none. */
CuNode *cu_call_arg(const CuNode *call, int i);

/* A kernel launch `k<<<grid, block, shmem, stream>>>(args)`. */
typedef struct {
    CuNode *call;      /* the launch expression */
    const char *kernel;/* the kernel's name */
    CuNode *kernel_decl; /* its definition when it is in this file */
    CuNode *config;    /* the <<<...>>> configuration (its text starts at `<<<`) */
    CuNode *grid, *block, *shared_bytes, *stream; /* NULL when not given */
    CuNode **args;
    uint32_t arg_count;
} CuLaunch;
bool cu_launch(const CuNode *n, CuLaunch *out);

/* Thread-index dependence and lane coefficients: cuda_index.h. */
/* The builtin variable and axis of `threadIdx.x`-like member expressions. */
bool cu_is_builtin_member(const CuNode *n, const char *var, char axis);

/* The canonical type of a declaration or expression, references removed. */
CXType cu_canonical_type(const CuNode *n);
/* The constant integer value of an expression, when clang can evaluate it. */
bool cu_int_value(const CuNode *n, long long *value);
/* sizeof the type of a declaration or expression, -1 when unknown. */
long long cu_type_size(const CuNode *n);
/* The spelling of the type of a declaration or expression (heap string). */
char *cu_type_spelling(const CuNode *n);

/* Leading whitespace of the line holding offset. */
size_t cu_line_indent(const CudaSource *src, size_t offset, char *buf, size_t size);
/* Only whitespace before the node on its line. */
bool cu_starts_line(const CudaSource *src, const CuNode *n);

/* The offset just after the ')' closing a statement's header (`if (...)`,
 * `for (...)`, `while (...)`, `switch (...)`), 0 when not found; semi1 and
 * semi2 (may be NULL) get the offsets of a for header's two ';'. */
size_t cu_header_end(const CudaSource *src, const CuNode *stmt, size_t *semi1, size_t *semi2);

/* When `parent` runs `child` only under a condition (if, switch, while,
 * for, do, ?:, && and ||), the condition; NULL otherwise or when the shape
 * is not understood. *polarity is false where child runs when the condition
 * is false (an else branch, the right of ||). */
const CuNode *cu_guard_of(const CudaSource *src, const CuNode *parent, const CuNode *child, bool *polarity);

/* A variable's initializer: its last child that is an expression (not a
 * type reference or attribute); NULL when it has none. */
CuNode *cu_initializer(const CuNode *decl);
/* decl is named anywhere in the expression or statement n. */
bool cu_mentions(const CuNode *n, const CuNode *decl);
/* n (casts and parentheses stripped) names decl. */
bool cu_refers_to(const CuNode *n, const CuNode *decl);
/* The kernel is launched in this file, and every launch's block has the
 * same constant x dimension (`<<<g, dim3(1, 256)>>>`, a local
 * `dim3 block(32, k)`, `<<<g, 256>>>`): *value gets it. */
bool cu_kernel_block_x(const CudaSource *src, const CuNode *kernel, long long *value);

/* threadIdx, blockIdx, blockDim or gridDim, any axis. */
bool cu_is_any_builtin(const CuNode *n);
/* blockIdx.x * blockDim.x + threadIdx.x, in any order, casts allowed. */
bool cu_is_global_index_x(CuNode *e);
/* blockDim.x * gridDim.x, in either order (a grid-stride step). */
bool cu_is_grid_stride_x(CuNode *e);

/* The first node under root (root included, in preorder) that match accepts;
 * NULL when none does. data is the caller's, handed to match. */
typedef bool (*CuMatch)(const CuNode *n, void *data);
CuNode *cu_find(const CuNode *root, CuMatch match, void *data);

/* inner is outer or below it */
bool cu_contains(const CuNode *outer, const CuNode *inner);
/* the nearest node holding both a and b, NULL when they are in different trees */
const CuNode *cu_common_ancestor(const CuNode *a, const CuNode *b);
/* for, while, do, or range-for */
bool cu_is_loop(const CuNode *n);

/* Where a finding about n is reported: its own range, or, for a node that
 * libclang gives an empty range (an argument of a macro call), the nearest
 * enclosing node that starts at the same place and has one: the macro call. */
ByteRange cu_report_range(const CuNode *n);

/* The node's text on one line for a message: whitespace runs collapsed to
 * one space, cut with "..." where it does not fit in size. */
void cu_snippet(const CudaSource *src, const CuNode *n, char *buf, size_t size);

/* n's parent, skipping implicit casts and parentheses (not explicit casts). */
const CuNode *cu_plain_parent(const CuNode *n);

/* n's parent, skipping implicit casts, parentheses and explicit casts;
 * *child (may be NULL) gets the node under it on the way up. */
CuNode *cu_logical_parent(const CuNode *n, const CuNode **child);

#endif
