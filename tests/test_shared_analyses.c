/* The small analyses that rules used to keep copies of, on their own:
 * Python expressions (python_expr), call and text questions
 * (python_query), the CPU device and blocking host copies (python_facts),
 * function bodies, definitions and searches (cuda_query), what a host
 * pointer points into (cuda_host_buffer), the grid guard CU009 and CU010
 * share (rules/cuda/support/grid_guard) and growable arrays. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/cuda/cuda_host_buffer.h"
#include "analysis/cuda/cuda_query.h"
#include "analysis/base/growable.h"
#include "analysis/python/python_expr.h"
#include "analysis/python/python_facts.h"
#include "analysis/python/python_query.h"
#include "rules/cuda/support/grid_guard.h"

/* ---- Python ----------------------------------------------------------------- */

static const char PY_TEXT[] = "import torch\n"
                              "import torch.nn.functional as F\n"
                              "a = ((x))\n"
                              "b = (  # why\n"
                              "    x)\n"
                              "c = -(2.5)\n"
                              "d = +1_000\n"
                              "e = -(64)\n"
                              "f = q @ k\n"
                              "g = t.to('cpu')\n"
                              "h = t.to(device=torch.device(\"cpu\"), non_blocking=True)\n"
                              "i = float(t)\n"
                              "j = F.softmax(s)\n"
                              "k = s.softmax(-1)\n"
                              "m = DDP(net, find_unused_parameters=True, **extra)\n"
                              "n = some.long_function_name(argument_one, argument_two, argument_three)\n";

typedef struct {
    Document *doc;
    PySource *src;
} Py;

static Py py_parse(void) {
    Py p;
    p.doc = document_new("t.py", LANGUAGE_PYTHON, PY_TEXT, strlen(PY_TEXT));
    cr_assert_not_null(p.doc);
    p.src = py_source_new(p.doc);
    cr_assert_not_null(p.src);
    return p;
}

static void py_free(Py *p) {
    py_source_free(p->src);
    document_free(p->doc);
}

/* the right-hand side of the assignment to `name` */
static TSNode rhs(const Py *p, const char *name) {
    char needle[16];
    snprintf(needle, sizeof needle, "\n%s = ", name);
    const char *at = strstr(PY_TEXT, needle);
    cr_assert_not_null(at, "no assignment to %s", name);
    uint32_t offset = (uint32_t)(at - PY_TEXT) + 1;
    TSNode n = ts_node_named_descendant_for_byte_range(ts_tree_root_node(p->src->tree), offset, offset);
    while (!ts_node_is_null(n) && !py_is(n, "assignment")) n = ts_node_parent(n);
    cr_assert(!ts_node_is_null(n));
    return ts_node_child_by_field_name(n, "right", 5);
}

Test(python_expr, unparen_passes_parentheses_and_comments) {
    Py p = py_parse();
    cr_expect(py_is(py_unparen(rhs(&p, "a")), "identifier"));
    cr_expect(py_is(py_unparen(rhs(&p, "b")), "identifier"), "a comment inside the parentheses is passed over");
    cr_expect(py_is(py_unparen(rhs(&p, "f")), "binary_operator"), "anything else as is");
    py_free(&p);
}

Test(python_expr, literals_and_operators) {
    Py p = py_parse();
    double v;
    long l;
    cr_expect(py_number_literal(p.src, rhs(&p, "c"), &v) && v == -2.5);
    cr_expect(py_number_literal(p.src, rhs(&p, "d"), &v) && v == 1000, "_ separators");
    cr_expect(!py_int_literal(p.src, rhs(&p, "d"), &l), "integers without separators only");
    cr_expect(py_int_literal(p.src, rhs(&p, "e"), &l) && l == -64);
    cr_expect(!py_number_literal(p.src, rhs(&p, "a"), &v));
    cr_expect_str_eq(py_binary_operator(rhs(&p, "f")), "@");
    cr_expect(py_is_binary(rhs(&p, "f"), "@") && !py_is_binary(rhs(&p, "f"), "*"));
    cr_expect_null(py_binary_operator(rhs(&p, "a")));
    py_free(&p);
}

Test(python_query, calls_and_text) {
    Py p = py_parse();
    cr_expect(py_is_blocking_to_cpu(p.src, rhs(&p, "g")));
    cr_expect(!py_is_blocking_to_cpu(p.src, rhs(&p, "h")), "non_blocking=True");
    cr_expect(py_is_cpu_device(p.src, py_call_keyword(p.src, rhs(&p, "h"), "device")));
    cr_expect(py_is_builtin_call(p.src, rhs(&p, "i"), "float"));
    TSNode recv;
    cr_expect(!py_value_method_call(p.src, rhs(&p, "j"), "softmax", &recv), "F.softmax is a function");
    cr_expect(py_value_method_call(p.src, rhs(&p, "k"), "softmax", &recv) && py_text_eq(p.src, recv, "s"));
    TSNode m = rhs(&p, "m");
    TSNode kw = py_call_keyword_argument(p.src, m, "find_unused_parameters");
    cr_expect(py_is(kw, "keyword_argument"));
    cr_expect(py_text_eq(p.src, py_call_keyword(p.src, m, "find_unused_parameters"), "True"));
    cr_expect(py_call_has_argument(m, "keyword_argument") && py_call_has_argument(m, "dictionary_splat"));
    cr_expect(!py_call_has_argument(m, "list_splat"));
    char *prefix = py_functional_prefix(p.src);
    cr_expect_str_eq(prefix, "F");
    free(prefix);
    char buf[64] = "untouched";
    cr_expect(py_short_text(p.src, rhs(&p, "f"), 40, buf, sizeof buf));
    cr_expect_str_eq(buf, "q @ k");
    strcpy(buf, "untouched");
    cr_expect(!py_short_text(p.src, rhs(&p, "n"), 40, buf, sizeof buf));
    cr_expect_str_eq(buf, "untouched");
    TSNode null = {0};
    cr_expect(py_same_text(p.src, null, null), "null nodes read as empty text");
    cr_expect(!py_same_text_present(p.src, null, null));
    cr_expect(py_same_text_present(p.src, rhs(&p, "a"), rhs(&p, "a")));
    py_free(&p);
}

/* ---- CUDA --------------------------------------------------------------------- */

static const char CU_TEXT[] = "#include <cuda_runtime.h>\n"
                              "#include <vector>\n"
                              "__global__ void scale(float *y, int n);\n"
                              "__global__ void scale(float *y, int n) {\n"
                              "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                              "    if (i >= n || n < 0) return;\n"
                              "    y[i] *= 2.0f;\n"
                              "}\n"
                              "__global__ void stride(float *y, int n) {\n"
                              "    int s = blockDim.x * gridDim.x;\n"
                              "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += s) y[i] += 1.0f;\n"
                              "}\n"
                              "void host(float *p, std::vector<float> &v, int k) {\n"
                              "    float x = 0;\n"
                              "    cudaMemcpy(p + k, &v[2], 4, cudaMemcpyHostToDevice);\n"
                              "    cudaMemcpy(v.data(), &x, 4, cudaMemcpyDeviceToHost);\n"
                              "}\n";

typedef struct {
    Document *doc;
    CudaSource *src;
} Cu;

static Cu cu_parse(void) {
    Cu c;
    c.doc = document_new("/tmp/advise-shared-analyses-test.cu", LANGUAGE_CUDA, CU_TEXT, strlen(CU_TEXT));
    cr_assert_not_null(c.doc);
    char *error = NULL;
    c.src = cuda_source_new(c.doc, NULL, &error);
    cr_assert_not_null(c.src, "cuda_source_new failed: %s", error ? error : "?");
    return c;
}

static void cu_free(Cu *c) {
    cuda_source_free(c->src);
    document_free(c->doc);
}

static bool named(const CuNode *n, void *name) {
    return (n->kind == CXCursor_FunctionDecl || n->kind == CXCursor_VarDecl) && strcmp(n->name, name) == 0;
}

static bool is_memcpy(const CuNode *n, void *skip) {
    return cu_is_call(n, "cudaMemcpy") && (*(int *)skip)-- == 0;
}

Test(cuda_query, bodies_definitions_and_find) {
    Cu c = cu_parse();
    CuNode *decl = cu_find(c.src->root, named, "scale");
    cr_assert_not_null(decl, "the first `scale` is the declaration");
    cr_expect_null(cu_function_body(decl));
    CuNode *def = cu_definition_of(c.src, decl);
    cr_assert_not_null(def);
    cr_expect_neq(def, decl);
    cr_expect_not_null(cu_function_body(def));
    cr_expect_eq(cu_definition_of(c.src, def), def);
    CuNode *i = cu_find(def, named, "i");
    cr_assert_not_null(i);
    cr_expect_eq(cu_single_var_decl(i->parent), i);
    cr_expect(cu_is_bare_return(cu_function_body(def)->children[1]->children[1]));
    cr_expect_null(cu_find(def, named, "no_such_name"));
    cu_free(&c);
}

Test(cuda_host_buffer, buffer_reference_forms) {
    Cu c = cu_parse();
    int skip = 0;
    CuNode *first = cu_find(c.src->root, is_memcpy, &skip);
    skip = 1;
    CuNode *second = cu_find(c.src->root, is_memcpy, &skip);
    cr_assert(first && second);
    CuNode *r = cu_buffer_reference(cu_call_arg(first, 0), 0);
    cr_expect(r && strcmp(r->ref->name, "p") == 0, "p + k points into p");
    cr_expect_null(cu_buffer_reference(cu_call_arg(first, 1), 0), "&v[2]: a container form");
    r = cu_buffer_reference(cu_call_arg(first, 1), CU_BUFFER_CONTAINER);
    cr_expect(r && strcmp(r->ref->name, "v") == 0);
    cr_expect_null(cu_buffer_reference(cu_call_arg(second, 1), CU_BUFFER_CONTAINER), "&x: the address form");
    r = cu_buffer_reference(cu_call_arg(second, 1), CU_BUFFER_ADDRESS);
    cr_expect(r && strcmp(r->ref->name, "x") == 0);
    r = cu_buffer_reference(cu_call_arg(second, 0), CU_BUFFER_DATA_GET);
    cr_expect(r && strcmp(r->ref->name, "v") == 0, "v.data()");
    cu_free(&c);
}

Test(grid_guard, shapes_and_options) {
    Cu c = cu_parse();
    CuNode *scale = cu_definition_of(c.src, cu_find(c.src->root, named, "scale"));
    GridGuard g;
    cr_expect(!grid_guard_of(c.src, scale, 0, &g), "`i >= n || ...` needs GRID_GUARD_EXIT_OR");
    cr_expect(grid_guard_of(c.src, scale, GRID_GUARD_EXIT_OR, &g));
    cr_expect_eq(g.kind, GRID_GUARD_RETURN);
    cr_expect_eq(g.guard_at, 1u);
    cr_expect(g.index && strcmp(g.index->name, "i") == 0);
    CuNode *stride = cu_find(c.src->root, named, "stride");
    cr_expect(grid_guard_of(c.src, stride, 0, &g));
    cr_expect_eq(g.kind, GRID_GUARD_STRIDE);
    cr_expect(g.stride && strcmp(g.stride->name, "s") == 0);
    cu_free(&c);
}

/* ---- growable arrays ----------------------------------------------------------- */

Test(growable, doubles_from_the_first_capacity) {
    int *items = NULL;
    size_t count = 0, cap = 0;
    for (int k = 0; k < 100; k++) {
        cr_assert(array_reserve(&items, count, &cap, sizeof *items, 8));
        items[count++] = k;
    }
    cr_expect_eq(cap, 128u, "8, 16, 32, 64, 128");
    cr_expect_eq(items[99], 99);
    free(items);
}

Test(growable, reserve_n_from_empty_takes_the_first_capacity_or_more) {
    char *text = NULL;
    size_t len = 0, cap = 0;
    cr_assert(array_reserve_n(&text, len, 0, &cap, 1, 64), "nothing wanted: nothing to do");
    cr_expect_null(text);
    cr_expect_eq(cap, 0u);
    cr_assert(array_reserve_n(&text, len, 10, &cap, 1, 64));
    cr_assert_not_null(text);
    cr_expect_eq(cap, 64u);
    free(text);
    text = NULL, cap = 0;
    cr_assert(array_reserve_n(&text, len, 200, &cap, 1, 64));
    cr_expect_eq(cap, 256u, "64 doubled until 200 fit");
    free(text);
}

Test(growable, reserve_n_keeps_the_contents_and_doubles_until_they_fit) {
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (int k = 0; k < 50; k++) {
        char piece[16];
        int n = snprintf(piece, sizeof piece, "%d,", k);
        cr_assert(array_reserve_n(&text, len, (size_t)n + 1, &cap, 1, 8));
        memcpy(text + len, piece, (size_t)n + 1);
        len += (size_t)n;
        cr_assert_leq(len + 1, cap);
    }
    cr_expect_eq(cap & (cap - 1), 0u, "8 doubled: a power of two");
    cr_expect(strncmp(text, "0,1,2,3,", 8) == 0);
    cr_expect(strcmp(text + len - 6, "48,49,") == 0);
    size_t before = cap;
    cr_assert(array_reserve_n(&text, len, cap - len, &cap, 1, 8), "fits exactly: no growth");
    cr_expect_eq(cap, before);
    cr_assert(array_reserve_n(&text, len, 5 * before, &cap, 1, 8));
    cr_expect_eq(cap, 8 * before, "doubled three times at once");
    cr_expect(strcmp(text + len - 6, "48,49,") == 0);
    free(text);
}

Test(growable, reserve_n_refuses_counts_that_overflow) {
    long *items = NULL;
    size_t cap = 0;
    cr_assert(array_reserve(&items, 0, &cap, sizeof *items, 4));
    items[0] = 42;
    long *was = items;
    cr_expect(!array_reserve_n(&items, 1, SIZE_MAX, &cap, sizeof *items, 4), "count + more wraps around");
    cr_expect(!array_reserve_n(&items, SIZE_MAX / sizeof *items, 1, &cap, sizeof *items, 4), "bytes overflow");
    cr_expect(!array_reserve(&items, SIZE_MAX, &cap, sizeof *items, 4));
    cr_expect_eq(items, was, "the array is as it was");
    cr_expect_eq(cap, 4u);
    cr_expect_eq(items[0], 42);
    free(items);
}
