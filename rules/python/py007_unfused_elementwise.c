/* PY007 unfused-elementwise: elementwise chains that have a fused form:
 * x * sigmoid(x) (SiLU), the GELU formulas written out, and small functions
 * made only of elementwise tensor ops (torch.compile fuses them). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rules/rule.h"
#include "analysis/python/python_expr.h"
#include "analysis/base/text_format.h"
#include "rules/python/support/test_code.h"

static const char documentation[] =
    "## What it does\n"
    "Flags elementwise formulas that PyTorch ships as one fused kernel:\n"
    "- `x * torch.sigmoid(x)` (either order, also `x.sigmoid()`, `x.mul(torch.sigmoid(x))` and\n"
    "  `torch.mul(x, torch.sigmoid(x))`): SiLU / Swish, use `F.silu(x)`;\n"
    "- the tanh approximation of GELU, `0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 *\n"
    "  x ** 3)))`, in its common spellings (`torch.pow(x, 3)`, `x * x * x`, the constant `0.7978845608`,\n"
    "  `(2 / math.pi) ** 0.5`, the factored form `0.79788456 * x * (1 + 0.044715 * x * x)`, `/ 2`):\n"
    "  use `F.gelu(x, approximate=\"tanh\")`;\n"
    "- the exact GELU, `0.5 * x * (1 + torch.erf(x / math.sqrt(2)))` (or `x * 0.7071067811865476`):\n"
    "  use `F.gelu(x)`;\n"
    "- (hint) a module-level function made only of three or more elementwise tensor operations\n"
    "  (arithmetic operators and torch functions such as `exp`, `tanh`, `sigmoid`, `relu`, `where`,\n"
    "  `clamp`), with at least one torch call, nothing but assignments and a return: decorate it\n"
    "  with `@torch.compile`, which fuses the chain into one kernel.\n"
    "\n"
    "Not flagged: a gate `x * torch.sigmoid(y)` with different operands (GLU, SE blocks), NumPy or\n"
    "`math` formulas (`np.tanh`, `math.exp`), functions with fewer than three tensor operations, or\n"
    "with loops, branches, indexing, reductions or calls to other functions, functions already\n"
    "decorated with (or passed to) `torch.compile` / `torch.jit.script` (and the formulas inside them:\n"
    "the compiler fuses them already), and methods: `nn.Module.forward` and other methods are\n"
    "normally compiled with the module (`torch.compile(model)`), so only module-level functions get\n"
    "the hint. No hint either when the function does nothing but a SiLU/GELU formula (that finding\n"
    "covers it); when it does more (`y = x + bias` before the GELU), the hint takes the formula in,\n"
    "as evidence, instead of a second finding: `torch.compile` fuses the formula with the rest.\n"
    "Written out on purpose, and not flagged either: test files (`test_*.py`, `*_test.py`,\n"
    "`conftest.py`: they hold the eager references kernels are checked against); functions and\n"
    "classes named as references or baselines (`selective_scan_ref`, `naive_*`, `Reference*`,\n"
    "`*_baseline`, `eager_*`, `manual_*`, `slow_*`); and a SiLU that defines the activation under its\n"
    "own name: a `class SiLU`/`class Swish` module (an export-friendly copy of `nn.SiLU`) or a\n"
    "`'swish':` entry in a table of activations. A plain `def swish(x)` is still flagged: it is\n"
    "usually older than `F.silu` (torch 1.7).\n"
    "\n"
    "## Why is this slow?\n"
    "In eager mode every operator is its own kernel: `x * torch.sigmoid(x)` reads `x` twice, writes\n"
    "a temporary and reads it back, and autograd keeps that temporary alive for the backward pass.\n"
    "The tanh-GELU formula is about eight kernels and seven temporaries. Elementwise kernels are\n"
    "bound by memory bandwidth, so the chain costs several times what one fused kernel costs, plus\n"
    "a launch per operator.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "def swish(x):\n"
    "    return x * torch.sigmoid(x)\n"
    "\n"
    "def gelu(x):\n"
    "    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))\n"
    "\n"
    "def bias_elu_half(x, bias, alpha):\n"
    "    y = x + bias\n"
    "    y = torch.where(y > 0, y, alpha * (torch.exp(y) - 1))\n"
    "    return y * 0.5\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```python\n"
    "def swish(x):\n"
    "    return F.silu(x)\n"
    "\n"
    "def gelu(x):\n"
    "    return F.gelu(x, approximate=\"tanh\")\n"
    "\n"
    "@torch.compile\n"
    "def bias_elu_half(x, bias, alpha):\n"
    "    ...\n"
    "```\n"
    "\n"
    "## Fix safety\n"
    "All fixes are unsafe. `F.silu` and `F.gelu` compute the same function, but in a different order\n"
    "of floating-point operations: results may differ in the last bits. The fix uses the file's alias\n"
    "for `torch.nn.functional` (or spells `torch.nn.functional` out) and drops the operand's second\n"
    "evaluation, which matters only if the operand has side effects. Adding `@torch.compile` changes\n"
    "numerics slightly too, costs compile time on the first call and on new input shapes, and needs\n"
    "a backend that supports the device.\n";

/* ---- small syntax helpers ------------------------------------------------ */

static TSNode left_of(TSNode n) { return ts_node_child_by_field_name(n, "left", 4); }
static TSNode right_of(TSNode n) { return ts_node_child_by_field_name(n, "right", 5); }

static bool literal_near(const PySource *src, TSNode n, double want, double tol) {
    double v;
    return py_number_literal(src, n, &v) && fabs(v - want) <= tol;
}

/* f(x) for f in names, or x.method() (no other arguments); stores x */
static bool unary_torch_call(const PySource *src, TSNode n, const char *const *names, const char *method,
                             TSNode *arg) {
    n = py_unparen(n);
    if (!py_is(n, "call") || py_call_has_splat(n) || py_call_has_argument(n, "keyword_argument")) return false;
    if (py_callee_is_any(src, n, names) && py_call_positional_count(n) == 1) {
        *arg = py_unparen(py_call_positional(n, 0));
        return true;
    }
    TSNode recv;
    if (method && py_value_method_call(src, n, method, &recv) && py_call_positional_count(n) == 0) {
        *arg = py_unparen(recv);
        return true;
    }
    return false;
}

static bool same(const PySource *src, TSNode a, TSNode b) {
    return !ts_node_is_null(a) && !ts_node_is_null(b) && py_same_text(src, py_unparen(a), py_unparen(b));
}

#define MAX_FACTORS 8

/* the factors of a product, through parentheses */
static bool flatten(TSNode n, TSNode *factors, size_t *count, int depth) {
    n = py_unparen(n);
    if (depth > 8) return false;
    if (py_is_binary(n, "*"))
        return flatten(left_of(n), factors, count, depth + 1) && flatten(right_of(n), factors, count, depth + 1);
    if (*count >= MAX_FACTORS) return false;
    factors[(*count)++] = n;
    return true;
}

/* ---- SiLU ---------------------------------------------------------------- */

static const char *const sigmoid_funcs[] = {"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit",
                                            NULL};

/* gate is sigmoid(a) of the same a as other: *x = a */
static bool sigmoid_of(const PySource *src, TSNode gate, TSNode other, TSNode *x) {
    TSNode a;
    if (!unary_torch_call(src, gate, sigmoid_funcs, "sigmoid", &a) || !same(src, other, a)) return false;
    *x = a;
    return true;
}

/* a * sigmoid(a) in either order */
static bool silu_operands(const PySource *src, TSNode l, TSNode r, TSNode *x) {
    return sigmoid_of(src, r, l, x) || sigmoid_of(src, l, r, x);
}

/* x * sigmoid(x): the range to replace and the operand */
static bool match_silu(const PySource *src, TSNode n, size_t *start, TSNode *x) {
    if (!py_is_binary(n, "*")) return false;
    TSNode l = py_unparen(left_of(n)), r = py_unparen(right_of(n));
    *start = ts_node_start_byte(n);
    if (silu_operands(src, l, r, x)) return true;
    /* c * x * sigmoid(x) is (c * x) * sigmoid(x) */
    if (py_is_binary(left_of(n), "*") && sigmoid_of(src, r, right_of(left_of(n)), x)) {
        *start = ts_node_start_byte(right_of(left_of(n)));
        return true;
    }
    return false;
}

static const char *const mul_funcs[] = {"torch.mul", "torch.multiply", NULL};

/* the same product spelled as a call: x.mul(sigmoid(x)), torch.mul(x, sigmoid(x)) (either order); not the
 * in-place x.mul_(...) */
static bool match_silu_call(const PySource *src, TSNode n, TSNode *x) {
    if (!py_is(n, "call") || py_call_has_splat(n) || py_call_has_argument(n, "keyword_argument")) return false;
    TSNode recv;
    if (py_value_method_call(src, n, "mul", &recv) || py_value_method_call(src, n, "multiply", &recv))
        return py_call_positional_count(n) == 1 && sigmoid_of(src, py_call_positional(n, 0), recv, x);
    if (!py_callee_is_any(src, n, mul_funcs) || py_call_positional_count(n) != 2) return false;
    return silu_operands(src, py_unparen(py_call_positional(n, 0)), py_unparen(py_call_positional(n, 1)), x);
}

/* ---- GELU ---------------------------------------------------------------- */

static bool is_pi(const PySource *src, TSNode n) {
    char q[PY_NAME_MAX];
    n = py_unparen(n);
    if (py_qualified_name(src, n, q, sizeof q))
        return !strcmp(q, "math.pi") || !strcmp(q, "numpy.pi") || !strcmp(q, "torch.pi");
    return literal_near(src, n, 3.14159265358979, 1e-6);
}

static bool is_two_over_pi(const PySource *src, TSNode n) {
    n = py_unparen(n);
    if (py_is_binary(n, "/")) return literal_near(src, left_of(n), 2.0, 0) && is_pi(src, right_of(n));
    return literal_near(src, n, 0.6366197723675814, 1e-7);
}

/* sqrt(2 / pi) = 0.7978845608... */
static bool is_sqrt_two_over_pi(const PySource *src, TSNode n) {
    static const char *const sqrt_funcs[] = {"math.sqrt", "numpy.sqrt", NULL};
    n = py_unparen(n);
    if (literal_near(src, n, 0.7978845608028654, 1e-6)) return true;
    if (py_is(n, "call") && py_callee_is_any(src, n, sqrt_funcs) && py_call_positional_count(n) == 1)
        return is_two_over_pi(src, py_call_positional(n, 0));
    if (py_is_binary(n, "**")) return is_two_over_pi(src, left_of(n)) && literal_near(src, right_of(n), 0.5, 0);
    return false;
}

static bool is_sqrt_two(const PySource *src, TSNode n) {
    static const char *const sqrt_funcs[] = {"math.sqrt", "numpy.sqrt", NULL};
    n = py_unparen(n);
    if (literal_near(src, n, 1.4142135623730951, 1e-7)) return true;
    if (py_is(n, "call") && py_callee_is_any(src, n, sqrt_funcs) && py_call_positional_count(n) == 1)
        return literal_near(src, py_call_positional(n, 0), 2.0, 0);
    if (py_is_binary(n, "**")) return literal_near(src, left_of(n), 2.0, 0) && literal_near(src, right_of(n), 0.5, 0);
    return false;
}

static bool is_inv_sqrt_two(const PySource *src, TSNode n) {
    static const char *const sqrt_funcs[] = {"math.sqrt", "numpy.sqrt", NULL};
    n = py_unparen(n);
    if (literal_near(src, n, 0.7071067811865476, 1e-7)) return true;
    if (py_is_binary(n, "/")) return literal_near(src, left_of(n), 1.0, 0) && is_sqrt_two(src, right_of(n));
    if (py_is(n, "call") && py_callee_is_any(src, n, sqrt_funcs) && py_call_positional_count(n) == 1)
        return literal_near(src, py_call_positional(n, 0), 0.5, 0);
    if (py_is_binary(n, "**")) return literal_near(src, left_of(n), 2.0, 0) && literal_near(src, right_of(n), -0.5, 0);
    return false;
}

/* x ** p, torch.pow(x, p), x.pow(p) */
static bool is_power_of(const PySource *src, TSNode n, TSNode x, double p) {
    static const char *const pow_funcs[] = {"torch.pow", NULL};
    n = py_unparen(n);
    if (py_is_binary(n, "**")) return same(src, left_of(n), x) && literal_near(src, right_of(n), p, 0);
    if (!py_is(n, "call") || py_call_has_splat(n) || py_call_has_argument(n, "keyword_argument")) return false;
    TSNode recv;
    if (py_callee_is_any(src, n, pow_funcs) && py_call_positional_count(n) == 2)
        return same(src, py_call_positional(n, 0), x) && literal_near(src, py_call_positional(n, 1), p, 0);
    if (py_value_method_call(src, n, "pow", &recv) && py_call_positional_count(n) == 1)
        return same(src, recv, x) && literal_near(src, py_call_positional(n, 0), p, 0);
    if (p == 2.0) {
        static const char *const square[] = {"torch.square", NULL};
        TSNode a;
        if (unary_torch_call(src, n, square, "square", &a)) return same(src, a, x);
    }
    return false;
}

/* 0.044715 * x^p, with x^p spelled as a power or as p factors of x */
static bool is_cubic_term(const PySource *src, TSNode n, TSNode x, int p) {
    TSNode f[MAX_FACTORS];
    size_t count = 0;
    if (!flatten(n, f, &count, 0)) return false;
    size_t k = 0, xs = 0, pows = 0;
    for (size_t i = 0; i < count; i++) {
        if (literal_near(src, f[i], 0.044715, 1e-9)) k++;
        else if (same(src, f[i], x)) xs++;
        else if (is_power_of(src, f[i], x, p)) pows++;
        else return false;
    }
    return k == 1 && ((xs == (size_t)p && pows == 0) || (xs == 0 && pows == 1));
}

/* a + b in either order, with `which(a)` and `other(b)` */
static bool sum_of(TSNode n, TSNode *a, TSNode *b) {
    n = py_unparen(n);
    if (!py_is_binary(n, "+")) return false;
    *a = left_of(n);
    *b = right_of(n);
    return !ts_node_is_null(*a) && !ts_node_is_null(*b);
}

/* the tanh argument: sqrt(2/pi) * (x + 0.044715 * x^3), or sqrt(2/pi) * x * (1 + 0.044715 * x^2) */
static bool is_tanh_gelu_argument(const PySource *src, TSNode n, TSNode x) {
    TSNode f[MAX_FACTORS];
    size_t count = 0;
    if (!flatten(n, f, &count, 0)) return false;
    size_t c = 0, xs = 0, cubic = 0, quadratic = 0;
    for (size_t i = 0; i < count; i++) {
        TSNode a, b;
        if (is_sqrt_two_over_pi(src, f[i])) c++;
        else if (same(src, f[i], x)) xs++;
        else if (sum_of(f[i], &a, &b) && ((same(src, a, x) && is_cubic_term(src, b, x, 3)) ||
                                          (same(src, b, x) && is_cubic_term(src, a, x, 3))))
            cubic++;
        else if (sum_of(f[i], &a, &b) && ((literal_near(src, a, 1.0, 0) && is_cubic_term(src, b, x, 2)) ||
                                          (literal_near(src, b, 1.0, 0) && is_cubic_term(src, a, x, 2))))
            quadratic++;
        else return false;
    }
    return c == 1 && ((cubic == 1 && xs == 0 && quadratic == 0) || (quadratic == 1 && xs == 1 && cubic == 0));
}

/* the erf argument: x / sqrt(2) or x * (1 / sqrt(2)) */
static bool is_erf_gelu_argument(const PySource *src, TSNode n, TSNode x) {
    n = py_unparen(n);
    if (py_is_binary(n, "/")) return same(src, left_of(n), x) && is_sqrt_two(src, right_of(n));
    if (py_is_binary(n, "*"))
        return (same(src, left_of(n), x) && is_inv_sqrt_two(src, right_of(n))) ||
               (same(src, right_of(n), x) && is_inv_sqrt_two(src, left_of(n)));
    return false;
}

typedef enum { GELU_NONE, GELU_TANH, GELU_ERF } GeluKind;

/* 0.5 * x * (1 + tanh(...)) in any order of the factors, or x * (1 + tanh(...)) / 2 */
static GeluKind match_gelu(const PySource *src, TSNode n, TSNode *x_out) {
    static const char *const tanh_funcs[] = {"torch.tanh", "torch.nn.functional.tanh", NULL};
    static const char *const erf_funcs[] = {"torch.erf", "torch.special.erf", NULL};
    TSNode f[MAX_FACTORS];
    size_t count = 0;
    bool half = false;
    if (py_is_binary(n, "/")) {
        if (!literal_near(src, right_of(n), 2.0, 0) || !py_is_binary(py_unparen(left_of(n)), "*")) return GELU_NONE;
        half = true;
        if (!flatten(left_of(n), f, &count, 0)) return GELU_NONE;
    } else if (py_is_binary(n, "*")) {
        if (!flatten(n, f, &count, 0)) return GELU_NONE;
    } else {
        return GELU_NONE;
    }
    TSNode x = {0}, inner = {0};
    GeluKind kind = GELU_NONE;
    for (size_t i = 0; i < count; i++) {
        TSNode a, b, arg;
        if (!half && literal_near(src, f[i], 0.5, 0)) {
            half = true;
            continue;
        }
        if (ts_node_is_null(inner) && sum_of(f[i], &a, &b)) {
            TSNode one = literal_near(src, a, 1.0, 0) ? a : b, call = ts_node_eq(one, a) ? b : a;
            if (literal_near(src, one, 1.0, 0)) {
                if (unary_torch_call(src, call, tanh_funcs, "tanh", &arg)) kind = GELU_TANH;
                else if (unary_torch_call(src, call, erf_funcs, "erf", &arg)) kind = GELU_ERF;
                if (kind != GELU_NONE) {
                    inner = arg;
                    continue;
                }
            }
        }
        if (!ts_node_is_null(x)) return GELU_NONE;
        x = f[i];
    }
    if (!half || ts_node_is_null(x) || ts_node_is_null(inner)) return GELU_NONE;
    if (kind == GELU_TANH && !is_tanh_gelu_argument(src, inner, x)) return GELU_NONE;
    if (kind == GELU_ERF && !is_erf_gelu_argument(src, inner, x)) return GELU_NONE;
    *x_out = x;
    return kind;
}

/* ---- compiled code --------------------------------------------------------- */

static bool name_mentions_compiler(const char *q) {
    static const char *const words[] = {"compile", "jit", "script", "trace", "triton", "numba", "dynamo", NULL};
    for (size_t i = 0; words[i]; i++)
        if (strstr(q, words[i])) return true;
    return false;
}

static bool decorated_by_compiler(const PySource *src, TSNode fn) {
    TSNode parent = ts_node_parent(fn);
    if (!py_is(parent, "decorated_definition")) return false;
    uint32_t n = ts_node_named_child_count(parent);
    for (uint32_t i = 0; i < n; i++) {
        TSNode d = ts_node_named_child(parent, i);
        if (!py_is(d, "decorator")) continue;
        TSNode e = ts_node_named_child(d, 0);
        while (py_is(e, "call")) e = ts_node_child_by_field_name(e, "function", 8);
        char q[PY_NAME_MAX];
        if (py_qualified_name(src, e, q, sizeof q) && name_mentions_compiler(q)) return true;
        if (!py_is(e, "identifier") && !py_is(e, "attribute")) return true; /* something we cannot read */
    }
    return false;
}

#define MAX_PASSED 64
#define MAX_HINTED 256

typedef struct {
    RuleContext *ctx;
    TSNode passed[MAX_PASSED]; /* identifiers handed to torch.compile(f), torch.jit.script(f), ... */
    size_t passed_count;
    bool passed_overflow;
    TSNode hinted[MAX_HINTED]; /* functions that got the torch.compile hint */
    size_t hinted_count;
} State;

static bool visit_passed(TSNode n, void *data) {
    State *s = data;
    if (!py_is(n, "call")) return true;
    char q[PY_NAME_MAX];
    if (!py_callee_name(s->ctx->py, n, q, sizeof q) || !name_mentions_compiler(q)) return true;
    TSNode arg = py_call_positional(n, 0);
    if (py_is(arg, "identifier")) {
        if (s->passed_count < MAX_PASSED) s->passed[s->passed_count++] = arg;
        else s->passed_overflow = true;
    }
    return true;
}

/* decorated with torch.compile / torch.jit.script, or passed to one somewhere in the file */
static bool function_is_compiled(const State *s, TSNode fn) {
    if (decorated_by_compiler(s->ctx->py, fn)) return true;
    if (s->passed_overflow) return true;
    TSNode name = ts_node_child_by_field_name(fn, "name", 4);
    if (ts_node_is_null(name)) return false;
    for (size_t i = 0; i < s->passed_count; i++)
        if (py_same_text(s->ctx->py, s->passed[i], name)) return true;
    return false;
}

/* ---- fixes ----------------------------------------------------------------- */

static const char *torch_alias(const PySource *src) {
    for (size_t i = src->import_count; i-- > 0;)
        if (src->imports[i].qualified && strcmp(src->imports[i].qualified, "torch") == 0)
            return src->imports[i].local;
    return NULL;
}

static void add_replacement(RuleContext *ctx, Finding *f, const char *title, size_t start, size_t end,
                            const char *function, TSNode x, const char *extra) {
    char *prefix = py_functional_prefix(ctx->py);
    char *arg = py_text_dup(ctx->py, x);
    char *text = prefix && arg ? format_string("%s.%s(%s%s)", prefix, function, arg, extra) : NULL;
    if (text) {
        Fix *fix = finding_add_fix(f, title, false);
        if (!fix || !fix_add_edit(fix, start, end, text)) ctx->out_of_memory = true;
    }
    free(text);
    free(arg);
    free(prefix);
}

/* ---- the formula findings -------------------------------------------------- */

/* x * sigmoid(x) is the definition of an activation module or table entry of
 * that name: `class SiLU(nn.Module)` (a method of it), or a lambda under such
 * a key (`'swish': dict(func=lambda x: torch.sigmoid(x) * x)`). A module that
 * re-implements one torch has under the same name (since 1.7) is written out
 * on purpose (yolov5's export-friendly SiLU), and so is a table of reference
 * activations beside a custom kernel (stylegan2's bias_act). A plain `def
 * swish(x)` is not excused: it is usually older than F.silu. */
static bool defines_silu(const PySource *src, TSNode n) {
    static const char *const names[] = {"silu", "swish", NULL};
    for (TSNode p = ts_node_parent(n); !ts_node_is_null(p); p = ts_node_parent(p)) {
        TSNode name = {0};
        if (py_is(p, "class_definition")) name = ts_node_child_by_field_name(p, "name", 4);
        else if (py_is(p, "pair")) {
            name = ts_node_child_by_field_name(p, "key", 3);
            if (py_is(name, "string")) name = ts_node_named_child(name, 1); /* string_content */
        }
        if (!ts_node_is_null(name) && (py_is(name, "identifier") || py_is(name, "string_content")))
            for (size_t i = 0; names[i]; i++) /* the name itself: ScaledSwish is another activation */
                if (py_text_len(name) == strlen(names[i]) &&
                    strncasecmp(py_text_ptr(src, name), names[i], strlen(names[i])) == 0)
                    return true;
        if (py_is(p, "class_definition")) return false; /* the innermost class names it */
    }
    return false;
}

static bool visit_formulas(TSNode n, void *data) {
    State *s = data;
    RuleContext *ctx = s->ctx;
    const PySource *src = ctx->py;
    if (py_is(n, "function_definition")) {
        if (function_is_compiled(s, n) || py_in_deliberate_reference(src, ts_node_child_by_field_name(n, "body", 4)))
            return false;
        for (size_t i = 0; i < s->hinted_count; i++)
            if (ts_node_eq(s->hinted[i], n)) return false; /* the hint covers its formulas */
    }
    TSNode x;
    if (match_silu_call(src, n, &x) && !defines_silu(src, n)) {
        Finding *f = rule_report_node(ctx, n,
                                      "x.mul(sigmoid(x)) runs two kernels and keeps a temporary for backward; "
                                      "F.silu(x) is one fused kernel");
        if (f) add_replacement(ctx, f, "Use F.silu(x)", ts_node_start_byte(n), ts_node_end_byte(n), "silu", x, "");
        return false;
    }
    if (!py_is(n, "binary_operator")) return true;
    size_t start;
    GeluKind gelu = match_gelu(src, n, &x);
    if (gelu != GELU_NONE) {
        Finding *f = rule_report_node(
            ctx, n,
            gelu == GELU_TANH
                ? "the tanh approximation of GELU written out runs about eight elementwise kernels; "
                  "F.gelu(x, approximate=\"tanh\") is one"
                : "GELU written out with erf runs about five elementwise kernels; F.gelu(x) is one");
        if (f)
            add_replacement(ctx, f, gelu == GELU_TANH ? "Use F.gelu(x, approximate=\"tanh\")" : "Use F.gelu(x)",
                            ts_node_start_byte(n), ts_node_end_byte(n), "gelu", x,
                            gelu == GELU_TANH ? ", approximate=\"tanh\"" : "");
        return false;
    }
    if (match_silu(src, n, &start, &x) && !defines_silu(src, n)) {
        Finding *f = rule_report(ctx, start, ts_node_end_byte(n),
                                 "x * sigmoid(x) runs two kernels and keeps a temporary for backward; F.silu(x) is "
                                 "one fused kernel");
        if (f) add_replacement(ctx, f, "Use F.silu(x)", start, ts_node_end_byte(n), "silu", x, "");
        return false;
    }
    return true;
}

/* ---- elementwise functions ------------------------------------------------- */

static const char *const elementwise[] = {
    "abs", "neg", "negative", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "square",
    "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "atan2", "asinh", "acosh", "atanh",
    "sigmoid", "logit", "relu", "relu6", "gelu", "silu", "mish", "softplus", "softsign", "elu", "selu", "celu",
    "leaky_relu", "hardtanh", "hardswish", "hardsigmoid", "hardshrink", "softshrink", "tanhshrink", "threshold",
    "logsigmoid", "where", "clamp", "clip", "clamp_min", "clamp_max", "maximum", "minimum", "fmax", "fmin", "pow",
    "float_power", "mul", "multiply", "add", "sub", "subtract", "div", "divide", "true_divide", "erf", "erfc",
    "erfinv", "reciprocal", "sign", "sgn", "floor", "ceil", "round", "trunc", "frac", "lerp", "addcmul", "addcdiv",
    "logical_not", "logical_and", "logical_or", "logical_xor", "logaddexp", "logaddexp2", "nan_to_num", "fmod",
    "remainder", "hypot", "expit", "sinc", "xlogy", "copysign", "heaviside", "masked_fill", NULL};
static const char *const casts[] = {"float", "half", "bfloat16", "double", "to", "type_as", NULL};

static bool in_list(const char *s, size_t len, const char *const *list) {
    for (size_t i = 0; list[i]; i++)
        if (strlen(list[i]) == len && memcmp(list[i], s, len) == 0) return true;
    return false;
}

typedef struct {
    const PySource *src;
    int ops;
    int torch_calls;
    bool rejected;
    bool in_formula;   /* counting inside a SiLU/GELU formula */
    int formulas;      /* SiLU/GELU formulas met */
    int formula_ops;   /* ops that belong to them */
    TSNode first_formula;
    GeluKind first_kind; /* GELU_NONE for SiLU */
} OpCount;

/* only literals and math constants: evaluated on the host, no kernel */
static bool is_constant(const PySource *src, TSNode n, int depth) {
    n = py_unparen(n);
    if (depth > 16) return false;
    if (py_is(n, "integer") || py_is(n, "float") || py_is(n, "true") || py_is(n, "false") || py_is(n, "none"))
        return true;
    char q[PY_NAME_MAX];
    if (py_is(n, "attribute") || py_is(n, "identifier"))
        return py_qualified_name(src, n, q, sizeof q) && strncmp(q, "math.", 5) == 0;
    if (py_is(n, "call")) {
        if (!py_callee_name(src, n, q, sizeof q) || strncmp(q, "math.", 5) != 0) return false;
        TSNode args = py_call_arguments(n);
        uint32_t c = ts_node_named_child_count(args);
        for (uint32_t i = 0; i < c; i++)
            if (!is_constant(src, ts_node_named_child(args, i), depth + 1)) return false;
        return true;
    }
    if (py_is(n, "unary_operator"))
        return is_constant(src, ts_node_child_by_field_name(n, "argument", 8), depth + 1);
    if (py_is(n, "binary_operator"))
        return is_constant(src, left_of(n), depth + 1) && is_constant(src, right_of(n), depth + 1);
    return false;
}

static bool visit_ops(TSNode n, void *data) {
    OpCount *c = data;
    const PySource *src = c->src;
    if (c->rejected) return false;
    const char *type = ts_node_type(n);
    if (!strcmp(type, "comment") || !strcmp(type, "integer") || !strcmp(type, "float") || !strcmp(type, "true") ||
        !strcmp(type, "false") || !strcmp(type, "none") || !strcmp(type, "identifier") ||
        !strcmp(type, "parenthesized_expression") || !strcmp(type, "expression_list") || !strcmp(type, "tuple"))
        return true;
    if (!strcmp(type, "attribute")) return true; /* x.dtype, cfg.alpha: reads, no kernel */
    TSNode x;
    size_t start = 0;
    if (is_constant(src, n, 0)) return false;
    if (!strcmp(type, "binary_operator")) {
        if (py_is_binary(n, "@")) {
            c->rejected = true;
            return false;
        }
        GeluKind gelu = c->in_formula ? GELU_NONE : match_gelu(src, n, &x);
        if (!c->in_formula && (gelu != GELU_NONE || match_silu(src, n, &start, &x))) {
            OpCount sub = {.src = src, .in_formula = true};
            py_walk(n, visit_ops, &sub);
            int outside = 0;
            if (gelu == GELU_NONE && start != ts_node_start_byte(n)) { /* c * x * sigmoid(x): `c *` is not SiLU */
                OpCount head = {.src = src, .in_formula = true};
                py_walk(left_of(left_of(n)), visit_ops, &head);
                outside = head.ops + 1;
            }
            if (c->formulas++ == 0) {
                c->first_formula = n;
                c->first_kind = gelu;
            }
            c->ops += sub.ops;
            c->torch_calls += sub.torch_calls;
            c->formula_ops += sub.ops - outside;
            c->rejected |= sub.rejected;
            return false;
        }
        c->ops++;
        return true;
    }
    if (!strcmp(type, "unary_operator") || !strcmp(type, "comparison_operator")) {
        c->ops++;
        return true;
    }
    if (!strcmp(type, "keyword_argument")) {
        py_walk(ts_node_child_by_field_name(n, "value", 5), visit_ops, c);
        return false;
    }
    if (!strcmp(type, "argument_list")) return true;
    if (!strcmp(type, "call")) {
        if (py_call_has_splat(n)) {
            c->rejected = true;
            return false;
        }
        char q[PY_NAME_MAX];
        TSNode fn = ts_node_child_by_field_name(n, "function", 8);
        if (py_qualified_name(src, fn, q, sizeof q) &&
            (!strncmp(q, "torch.", 6) || !strncmp(q, "torch.nn.functional.", 20) ||
             !strncmp(q, "torch.special.", 14))) {
            const char *last = strrchr(q, '.') + 1;
            bool namespace_ok = !strncmp(q, "torch.nn.functional.", 20) || !strncmp(q, "torch.special.", 14) ||
                                strchr(q + 6, '.') == NULL;
            if (!namespace_ok || !in_list(last, strlen(last), elementwise)) {
                c->rejected = true;
                return false;
            }
            c->ops++;
            c->torch_calls++;
            py_walk(py_call_arguments(n), visit_ops, c);
            return false;
        }
        TSNode name = py_method_name_node(n), recv;
        if (!ts_node_is_null(name)) {
            const char *t = py_text_ptr(src, name);
            size_t len = py_text_len(name);
            recv = ts_node_child_by_field_name(ts_node_parent(name), "object", 6);
            TSNode root = recv;
            while (py_is(root, "attribute")) root = ts_node_child_by_field_name(root, "object", 6);
            bool module_root = py_is(root, "identifier") && py_resolve_import(src, py_text_ptr(src, root),
                                                                              py_text_len(root));
            if (!module_root && (in_list(t, len, elementwise) || in_list(t, len, casts))) {
                if (in_list(t, len, elementwise)) c->ops++;
                py_walk(recv, visit_ops, c);
                py_walk(py_call_arguments(n), visit_ops, c);
                return false;
            }
        }
        c->rejected = true;
        return false;
    }
    c->rejected = true; /* subscripts, conditionals, lambdas, comprehensions, strings, ... */
    return false;
}

static bool is_docstring(TSNode stmt) {
    return py_is(stmt, "expression_statement") && ts_node_named_child_count(stmt) == 1 &&
           py_is(ts_node_named_child(stmt, 0), "string");
}

/* counts the elementwise ops of a function made of assignments and a return; false when it is anything else */
static bool elementwise_ops(const PySource *src, TSNode fn, OpCount *out) {
    TSNode body = ts_node_child_by_field_name(fn, "body", 4);
    if (!py_is(body, "block")) return false;
    OpCount c = {.src = src};
    uint32_t n = ts_node_named_child_count(body);
    bool returned = false, first = true;
    for (uint32_t i = 0; i < n && !c.rejected; i++) {
        TSNode stmt = ts_node_named_child(body, i);
        if (py_is(stmt, "comment")) continue;
        if (returned) return false;
        if (first && is_docstring(stmt)) {
            first = false;
            continue;
        }
        first = false;
        if (py_is(stmt, "return_statement")) {
            if (ts_node_named_child_count(stmt) != 1) return false;
            py_walk(ts_node_named_child(stmt, 0), visit_ops, &c);
            returned = true;
            continue;
        }
        if (!py_is(stmt, "expression_statement") || ts_node_named_child_count(stmt) != 1) return false;
        TSNode assign = ts_node_named_child(stmt, 0);
        if (!py_is(assign, "assignment") || !py_is(left_of(assign), "identifier") ||
            ts_node_is_null(right_of(assign)))
            return false;
        py_walk(right_of(assign), visit_ops, &c);
    }
    if (c.rejected || !returned) return false;
    *out = c;
    return true;
}

static bool has_parameters(TSNode fn) {
    TSNode params = ts_node_child_by_field_name(fn, "parameters", 10);
    return ts_node_named_child_count(params) > 0;
}

/* Reports the torch.compile hint; true when it did (the formulas inside are then part of it). */
static bool check_function(const State *s, TSNode fn) {
    RuleContext *ctx = s->ctx;
    const PySource *src = ctx->py;
    TSNode name = ts_node_child_by_field_name(fn, "name", 4);
    if (ts_node_is_null(name) || !has_parameters(fn) || function_is_compiled(s, fn) ||
        py_in_deliberate_reference(src, ts_node_child_by_field_name(fn, "body", 4)))
        return false;
    TSNode params = ts_node_child_by_field_name(fn, "parameters", 10);
    TSNode first = ts_node_named_child(params, 0);
    if (py_is(first, "identifier") && (py_text_eq(src, first, "self") || py_text_eq(src, first, "cls"))) return false;
    OpCount c;
    if (!elementwise_ops(src, fn, &c) || c.ops < 3 || c.torch_calls < 1) return false;
    /* F.silu / F.gelu alone already covers everything the function does */
    if (c.formulas > 0 && c.ops - c.formula_ops < 1) return false;
    char *fname = py_text_dup(src, name);
    Finding *f = rule_report_node(ctx, name,
                                  "%d elementwise tensor operations in %s() each launch a kernel and pass the whole "
                                  "tensor through memory; torch.compile fuses them into one kernel",
                                  c.ops, fname ? fname : "this function");
    free(fname);
    if (!f) return true;
    f->severity = SEVERITY_HINT;
    if (c.formulas > 0) {
        size_t line = document_line_of(src->doc, ts_node_start_byte(c.first_formula)) + 1;
        const char *what = c.first_kind == GELU_TANH ? "the tanh-GELU formula"
                           : c.first_kind == GELU_ERF ? "the erf-GELU formula"
                                                      : "x * sigmoid(x)";
        const char *alone = c.first_kind == GELU_NONE ? "F.silu(x)" : "F.gelu(x)";
        if (!finding_note(f, "%s at line %zu is among them; %s would fuse only that part", what, line, alone))
            ctx->out_of_memory = true;
    }
    TSNode target = py_is(ts_node_parent(fn), "decorated_definition") ? ts_node_parent(fn) : fn;
    const char *torch = torch_alias(src);
    if (!torch || !py_starts_line(src, target)) return true;
    char indent[128];
    py_line_indent(src, ts_node_start_byte(target), indent, sizeof indent);
    char *text = format_string("%s@%s.compile\n", indent, torch);
    size_t at = src->doc->line_starts[document_line_of(src->doc, ts_node_start_byte(target))];
    Fix *fix = text ? finding_add_fix(f, "Decorate with @torch.compile", false) : NULL;
    if (!fix || !fix_add_edit(fix, at, at, text)) ctx->out_of_memory = true;
    free(text);
    return true;
}

static void check(RuleContext *ctx) {
    /* tests hold the eager references that kernels are checked against */
    if (py_is_test_path(ctx->doc->path)) return;
    TSNode root = ts_tree_root_node(ctx->py->tree);
    State *s = calloc(1, sizeof *s);
    if (!s) {
        ctx->out_of_memory = true;
        return;
    }
    s->ctx = ctx;
    py_walk(root, visit_passed, s);
    /* module-level functions only: methods are compiled with their module */
    TSTreeCursor cursor = ts_tree_cursor_new(root);
    if (ts_tree_cursor_goto_first_child(&cursor)) {
        do {
            if (s->hinted_count >= MAX_HINTED) break;
            TSNode c = ts_tree_cursor_current_node(&cursor);
            if (ctx->has_region && (ts_node_end_byte(c) <= ctx->region_start || ts_node_start_byte(c) >= ctx->region_end))
                continue;
            if (py_is(c, "decorated_definition")) c = ts_node_child_by_field_name(c, "definition", 10);
            if (py_is(c, "function_definition") && check_function(s, c)) s->hinted[s->hinted_count++] = c;
        } while (ts_tree_cursor_goto_next_sibling(&cursor));
    }
    ts_tree_cursor_delete(&cursor);
    rule_walk(ctx, visit_formulas, s);
    free(s);
}

const Rule rule_py007_unfused_elementwise = {
    .code = "PY007", .name = "unfused-elementwise", .severity = SEVERITY_INFO,
    .languages = LANGUAGE_PYTHON, .check = check, .measure = MEASURE_LAUNCHES,
    .whole_file = true, /* functions passed to torch.compile anywhere in the file */
    .summary = "SiLU, GELU or a chain of elementwise ops written out instead of a fused kernel",
    .documentation = documentation};
