/* PY006 unfused-attention: softmax(q @ k^T * scale [+ mask]) @ v written out
 * by hand, in one statement or over several, where
 * F.scaled_dot_product_attention computes the same in one fused kernel. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rules/rule.h"
#include "analysis/python/python_expr.h"
#include "analysis/python/python_index.h"
#include "analysis/base/text_format.h"
#include "rules/python/support/test_code.h"
#include "rules/python/support/torch_floor.h"

static const char documentation[] =
    "## What it does\n"
    "Flags attention written out by hand: `softmax(q @ k.transpose(-2, -1) * scale [+ mask], dim=-1) @ v`,\n"
    "in one expression or over several statements (names are followed to their most recent\n"
    "assignment in the same function). Recognized spellings: `torch.softmax`, `F.softmax`,\n"
    "`x.softmax(dim=-1)` (the last dimension, written `-1`); scores as `q @ k.transpose(-2, -1)`,\n"
    "`k.transpose(-1, -2)`, `k.mT`, `torch.matmul(q, ...)`, `torch.bmm(q, k.transpose(1, 2))`;\n"
    "scaled by `* scale` or `/ math.sqrt(d)` or not at all (q scaled beforehand); an optional\n"
    "additive mask (`+ mask`) or `.masked_fill(cond, float('-inf'))`; then `attn @ v` or\n"
    "`torch.matmul(attn, v)`. The finding sits on the final product with `v`, and points at the\n"
    "softmax.\n"
    "\n"
    "Not flagged: a softmax over classification logits (no `q @ k^T`), matmul chains without a\n"
    "softmax, a softmax over another dimension than the last, `attn @ v` where `attn` is not a\n"
    "softmax of `q @ k^T` (or is changed in between, e.g. by a head mask), scores changed by\n"
    "anything else than a scale and a mask (soft-capping, relative-position tricks that are not\n"
    "additive), functions that also call `scaled_dot_product_attention` (a deliberate fallback\n"
    "path), code that uses the attention weights elsewhere (returned, stored, logged):\n"
    "the fused kernel does not return them, a reference written out on purpose to test or time a\n"
    "fused kernel against (a function or class named naive, unfused, manual, reference, ref,\n"
    "baseline, eager, vanilla or slow), and q or k split off the last dimension\n"
    "(`q, k, v = qkv.unbind(-1)`: no head dimension, not the (..., L, E) layout the kernel takes).\n"
    "Nor in a project that declares a torch older than 2.0 (`torch==1.13.1` in a\n"
    "`requirements*.txt`, `pyproject.toml`, `setup.py`, `setup.cfg` or `environment.yml` of the\n"
    "file's folder or the nearest parent that has one): `F.scaled_dot_product_attention` came in 2.0.\n"
    "\n"
    "## Why is this slow?\n"
    "Written out, attention runs as four or five kernels (matmul, scale, mask, softmax, matmul)\n"
    "and materializes the full `L x S` score matrix per head in GPU memory, writing and reading it\n"
    "several times: memory traffic and memory use grow with the square of the sequence length.\n"
    "`F.scaled_dot_product_attention` dispatches to FlashAttention or the memory-efficient kernel,\n"
    "which tile the computation in on-chip memory and never store the score matrix.\n"
    "\n"
    "## Example\n"
    "```python\n"
    "scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
    "scores = scores.masked_fill(mask == 0, float('-inf'))\n"
    "attn = scores.softmax(dim=-1)\n"
    "out = attn @ v\n"
    "```\n"
    "\n"
    "## Use instead\n"
    "```python\n"
    "out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask != 0, scale=1 / math.sqrt(q.size(-1)))\n"
    "```\n"
    "For a causal mask, `is_causal=True` (without `attn_mask`) is faster still. With dropout on the\n"
    "attention weights, pass `dropout_p=p if self.training else 0.0`.\n"
    "\n"
    "## With a profile\n"
    "When the products at these lines ran as float32 matrix-vector kernels (cuBLAS gemv: one query\n"
    "row at a time, as in token-by-token decoding with a KV cache), there is no score matrix to keep\n"
    "and PyTorch has no float32 flash kernel: on an H200 the fix made the `generate_text` sample's\n"
    "decode attention 2.3x slower (6.4 ms of kernels became 14.5 ms, mostly the memory-efficient\n"
    "fmha kernel). The finding then becomes a hint and its fix is withheld; bf16 attention, or a\n"
    "static KV cache with CUDA graphs, is what speeds decoding up.\n"
    "\n"
    "## Fix safety\n"
    "The fix is unsafe. It replaces the final product with\n"
    "`F.scaled_dot_product_attention(q, k, v, attn_mask=..., scale=...)` (the file's alias for\n"
    "`torch.nn.functional`) and deletes the intermediate assignments when their names are used\n"
    "nowhere else in the function. The scale is always passed explicitly (`* s` -> `scale=s`,\n"
    "`/ x` -> `scale=1 / x`, none -> `scale=1.0`), an additive mask becomes `attn_mask=mask`, and\n"
    "`masked_fill(cond, -inf)` becomes the boolean `attn_mask=~cond` (True means take part). Results\n"
    "differ in the last bits (the fused kernels accumulate differently and keep the softmax in\n"
    "float32); rows that are masked out entirely (or filled with a finite minimum such as\n"
    "`torch.finfo(dtype).min`) may give different values; a float mask must have the query's\n"
    "dtype; the scale must be a Python number. No fix is offered when dropout sits between the\n"
    "softmax and the product (use `dropout_p=`), when the transposed dimensions may not be the last\n"
    "two (`k.transpose(2, 3)`, `k.T`), when the scale may be a tensor, when a mask is applied\n"
    "conditionally or in place, when several masks are combined, or when deleting the intermediate\n"
    "statements is not clearly safe (leaving them would compute attention twice). When the code\n"
    "shows q to have 5 dimensions or more (`qkv.reshape(B, L, N, 3, H, D).permute(...)` and\n"
    "`q, k, v = qkv.unbind(0)`: attention inside windows), the finding says to fold the leading\n"
    "dimensions into the batch first and offers no rewrite: the fused kernels take 4-D (batch,\n"
    "heads, length, head_dim) inputs, and the call alone would run the same unfused math. The same\n"
    "holds below 4-D: when the product shows q to have 3 dimensions (`torch.bmm`) or 2 (`k.T`), or\n"
    "the code shows its shape, the finding says to add the heads (and batch) dimensions first\n"
    "(`q.unsqueeze(1)`, `q[None, None]`), and no rewrite is offered.\n";

#define MAX_CHAIN 24
#define MAX_CHAINS 32
#define MAX_DEPTH 12

typedef enum { SCALE_NONE, SCALE_MUL, SCALE_DIV } ScaleKind;
typedef enum { MASK_ADD, MASK_FILL } MaskKind;

#define CACHE_SIZE 512

/* Per-scope memory: py_binding_before walks the whole scope, so its answers
 * are kept for the identifiers already asked about. */
typedef struct {
    RuleContext *ctx;
    TSNode scope;
    bool has_softmax; /* the scope calls some softmax: else nothing to find */
    bool has_fused;   /* the scope calls scaled_dot_product_attention & co. */
    const void *ids[CACHE_SIZE];
    BindingKind kinds[CACHE_SIZE];
    TSNode values[CACHE_SIZE];
    size_t count;
    bool floor_read, before_sdpa; /* the project declares a torch without F.scaled_dot_product_attention */
} State;

typedef struct {
    const PySource *src;
    State *state;
    TSNode fn;         /* enclosing function, or null at module level */
    TSNode scope;      /* its body, or the module */
    TSNode final_node; /* the product with v */
    TSNode softmax;
    TSNode q, k, v;
    ScaleKind scale_kind;
    TSNode scale;
    int mask_count;
    MaskKind mask_kind;
    TSNode mask; /* MASK_ADD: the added term; MASK_FILL: the condition */
    bool fill_known;
    bool dropout;
    bool unclear;   /* the transposed dimensions may not be the last two */
    int shown_rank; /* what the product itself says of q's rank: 2 for `k.T`, 3 for bmm; 0 when nothing */
    bool unfixable; /* conditional or mutated bindings, unknown fill value, ... */
    TSNode stmts[MAX_CHAIN]; /* expression statements of the followed assignments */
    TSNode values[MAX_CHAIN];
    size_t nstmts;
    TSNode reads[MAX_CHAIN]; /* the identifiers that were followed */
    size_t nreads;
    bool overflow;
} Match;

/* ---- small syntax helpers ------------------------------------------------ */

static TSNode left_of(TSNode n) { return ts_node_child_by_field_name(n, "left", 4); }
static TSNode right_of(TSNode n) { return ts_node_child_by_field_name(n, "right", 5); }

static bool is_minus_one(const PySource *src, TSNode n) {
    long v;
    return py_int_literal(src, n, &v) && v == -1;
}

static bool keywords_within(const PySource *src, TSNode call, const char *const *allowed) {
    TSNode args = py_call_arguments(call);
    uint32_t n = ts_node_named_child_count(args);
    for (uint32_t i = 0; i < n; i++) {
        TSNode a = ts_node_named_child(args, i);
        if (!py_is(a, "keyword_argument")) continue;
        TSNode key = ts_node_child_by_field_name(a, "name", 4);
        bool ok = false;
        for (size_t j = 0; allowed[j] && !ok; j++) ok = py_text_eq(src, key, allowed[j]);
        if (!ok) return false;
    }
    return true;
}

static const char *last_component(const char *q) {
    const char *dot = strrchr(q, '.');
    return dot ? dot + 1 : q;
}

/* ---- following names ----------------------------------------------------- */

/* The dotted text of an identifier/attribute chain (no calls or subscripts). */
static bool dotted_text(const PySource *src, TSNode n, char *buf, size_t size) {
    if (!py_is(n, "identifier") && !py_is(n, "attribute")) return false;
    TSNode root = n;
    while (py_is(root, "attribute")) root = ts_node_child_by_field_name(root, "object", 6);
    if (!py_is(root, "identifier")) return false;
    size_t len = 0;
    const char *t = py_text_ptr(src, n);
    for (size_t i = 0; i < py_text_len(n); i++) {
        if (isspace((unsigned char)t[i]) || t[i] == '\\') continue;
        if (len + 1 >= size) return false;
        buf[len++] = t[i];
    }
    buf[len] = '\0';
    return len > 0;
}

/* the base of an assignment target: `a.b[i].c` -> "a.b" */
static bool target_base(const PySource *src, TSNode n, char *buf, size_t size) {
    for (int i = 0; i < 16; i++) {
        n = py_unparen(n);
        if (dotted_text(src, n, buf, size)) return true;
        if (py_is(n, "subscript")) n = ts_node_child_by_field_name(n, "value", 5);
        else if (py_is(n, "attribute")) n = ts_node_child_by_field_name(n, "object", 6);
        else return false;
    }
    return false;
}

/* one of a, b is the other, or a dotted prefix of it */
static bool chains_related(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    size_t m = la < lb ? la : lb;
    if (memcmp(a, b, m) != 0) return false;
    if (la == lb) return true;
    char next = la < lb ? b[m] : a[m];
    return next == '.';
}

typedef struct {
    const PySource *src;
    const Match *skip; /* when set, its chain statements (deleted by the fix) do not count */
    char (*chains)[PY_NAME_MAX];
    size_t count;
    size_t from, to;
    bool mutated;
} MutationSearch;

static void check_target(MutationSearch *s, TSNode target, int depth) {
    if (depth > 8 || ts_node_is_null(target)) return;
    target = py_unparen(target);
    if (py_is(target, "pattern_list") || py_is(target, "tuple_pattern") || py_is(target, "list_pattern") ||
        py_is(target, "tuple") || py_is(target, "list") || py_is(target, "expression_list")) {
        uint32_t n = ts_node_named_child_count(target);
        for (uint32_t i = 0; i < n; i++) check_target(s, ts_node_named_child(target, i), depth + 1);
        return;
    }
    if (py_is(target, "list_splat_pattern") || py_is(target, "list_splat")) {
        check_target(s, ts_node_named_child(target, 0), depth + 1);
        return;
    }
    char base[PY_NAME_MAX];
    if (!target_base(s->src, target, base, sizeof base)) {
        s->mutated = true; /* something we cannot name: assume the worst */
        return;
    }
    for (size_t i = 0; i < s->count; i++)
        if (chains_related(base, s->chains[i])) s->mutated = true;
}

static bool visit_mutation(TSNode n, void *data) {
    MutationSearch *s = data;
    if (s->mutated) return false;
    if (ts_node_end_byte(n) <= s->from || ts_node_start_byte(n) >= s->to) return false;
    if (py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda")) return false;
    if (s->skip)
        for (size_t i = 0; i < s->skip->nstmts; i++)
            if (ts_node_eq(n, s->skip->stmts[i])) return false;
    bool inside = ts_node_start_byte(n) >= s->from && ts_node_end_byte(n) <= s->to;
    if (py_is(n, "assignment") || py_is(n, "augmented_assignment")) {
        if (inside) check_target(s, left_of(n), 0);
    } else if (py_is(n, "named_expression")) {
        if (inside) check_target(s, ts_node_child_by_field_name(n, "name", 4), 0);
    } else if (py_is(n, "for_statement") || py_is(n, "for_in_clause")) {
        check_target(s, left_of(n), 0); /* a loop around the range rebinds too */
    } else if (py_is(n, "delete_statement")) {
        if (inside) check_target(s, ts_node_named_child(n, 0), 0);
    } else if (py_is(n, "as_pattern")) {
        TSNode alias = ts_node_child_by_field_name(n, "alias", 5);
        if (inside && !ts_node_is_null(alias)) check_target(s, ts_node_named_child(alias, 0), 0);
    } else if (py_is(n, "call") && inside) {
        /* in-place methods: x.masked_fill_(...), x.mul_(...) */
        TSNode name = py_method_name_node(n);
        if (!ts_node_is_null(name)) {
            const char *t = py_text_ptr(s->src, name);
            size_t len = py_text_len(name);
            if (len > 1 && t[len - 1] == '_' && t[0] != '_') {
                TSNode recv = ts_node_child_by_field_name(ts_node_parent(name), "object", 6);
                char base[PY_NAME_MAX];
                if (target_base(s->src, recv, base, sizeof base)) {
                    for (size_t i = 0; i < s->count; i++)
                        if (chains_related(base, s->chains[i])) s->mutated = true;
                }
            }
        }
    }
    return !s->mutated;
}

/* Is any of the chains rebound or changed in place between from and to? */
static bool mutated_between(const Match *m, char (*chains)[PY_NAME_MAX], size_t count, size_t from, size_t to,
                            bool skip_chain) {
    if (from >= to || count == 0) return false;
    MutationSearch s = {.src = m->src, .skip = skip_chain ? m : NULL, .chains = chains, .count = count, .from = from,
                        .to = to};
    py_walk(m->scope, visit_mutation, &s);
    return s.mutated;
}

typedef struct {
    const PySource *src;
    char (*chains)[PY_NAME_MAX];
    size_t count;
    bool overflow;
} ChainCollect;

static bool visit_collect(TSNode n, void *data) {
    ChainCollect *c = data;
    if (py_is(n, "keyword_argument")) {
        py_walk(ts_node_child_by_field_name(n, "value", 5), visit_collect, c);
        return false;
    }
    char buf[PY_NAME_MAX];
    if (dotted_text(c->src, n, buf, sizeof buf)) {
        if (c->count < MAX_CHAINS) memcpy(c->chains[c->count++], buf, sizeof buf);
        else c->overflow = true;
        return false;
    }
    if (py_is(n, "attribute")) {
        py_walk(ts_node_child_by_field_name(n, "object", 6), visit_collect, c);
        return false;
    }
    if (py_is(n, "lambda") || py_is(n, "list_comprehension") || py_is(n, "generator_expression") ||
        py_is(n, "set_comprehension") || py_is(n, "dictionary_comprehension") || py_is(n, "named_expression"))
        c->overflow = true; /* bindings of their own: do not move them */
    return true;
}

static bool bound_by_chain(const Match *m, TSNode id, size_t *first, size_t *last);
static BindingKind binding_of(const Match *m, TSNode id, TSNode *value);

static bool visit_chain_read(TSNode n, void *data) {
    void **args = data;
    const Match *m = args[0];
    bool *found = args[1];
    if (*found) return false;
    if (!py_is(n, "identifier")) return true;
    TSNode parent = ts_node_parent(n);
    if (py_is(parent, "attribute") && ts_node_eq(ts_node_child_by_field_name(parent, "attribute", 9), n)) return true;
    if (py_is(parent, "keyword_argument") && ts_node_eq(ts_node_child_by_field_name(parent, "name", 4), n)) return true;
    size_t first, last;
    if (!bound_by_chain(m, n, &first, &last)) return true;
    TSNode value;
    if (binding_of(m, n, &value) == BINDING_ASSIGNMENT)
        for (size_t i = 0; i < m->nstmts; i++)
            if (ts_node_eq(m->values[i], value)) *found = true;
    return !*found;
}

/* expr reads a value that one of the chain statements computes */
static bool reads_chain_value(const Match *m, TSNode expr) {
    bool found = false;
    const void *args[2] = {m, &found};
    py_walk(expr, visit_chain_read, (void *)args);
    return found;
}

/* The expression can be evaluated at `to` instead of where it stands: it reads
 * no intermediate value (those are deleted), and none of the names it reads is
 * rebound or changed in place in between. */
static bool movable(const Match *m, TSNode expr, size_t to) {
    if (ts_node_is_null(expr)) return true;
    if (reads_chain_value(m, expr)) return false;
    if (ts_node_start_byte(expr) >= ts_node_start_byte(m->final_node)) return true; /* already there */
    char chains[MAX_CHAINS][PY_NAME_MAX];
    ChainCollect c = {.src = m->src, .chains = chains};
    py_walk(expr, visit_collect, &c);
    if (c.overflow) return false;
    return !mutated_between(m, chains, c.count, ts_node_end_byte(py_statement_of(expr)), to, true);
}

static BindingKind binding_of(const Match *m, TSNode id, TSNode *value) {
    State *st = m->state;
    for (size_t i = 0; i < st->count; i++)
        if (st->ids[i] == id.id) {
            *value = st->values[i];
            return st->kinds[i];
        }
    TSNode v = {0};
    BindingKind kind =
        py_binding_before(m->src, id, py_text_ptr(m->src, id), py_text_len(id), ts_node_start_byte(id), &v);
    if (st->count < CACHE_SIZE) {
        st->ids[st->count] = id.id;
        st->kinds[st->count] = kind;
        st->values[st->count++] = v;
    }
    *value = v;
    return kind;
}

static void record(Match *m, TSNode stmt, TSNode value, TSNode read) {
    if (m->nreads < MAX_CHAIN) m->reads[m->nreads++] = read;
    else m->overflow = true;
    for (size_t i = 0; i < m->nstmts; i++)
        if (ts_node_eq(m->stmts[i], stmt)) return;
    if (m->nstmts < MAX_CHAIN) {
        m->stmts[m->nstmts] = stmt;
        m->values[m->nstmts++] = value;
    } else {
        m->overflow = true;
    }
}

/* Follows identifiers to the right-hand side of their most recent plain
 * assignment in the same function. Stops at anything else. */
static TSNode resolve(Match *m, TSNode n) {
    n = py_unparen(n);
    for (int hops = 0; py_is(n, "identifier") && hops < 12; hops++) {
        TSNode value = {0};
        BindingKind kind = binding_of(m, n, &value);
        if (kind != BINDING_ASSIGNMENT || ts_node_is_null(value)) return n;
        TSNode assign = ts_node_parent(value);
        if (!py_is(assign, "assignment")) return n; /* walrus, a = b = ... */
        TSNode stmt = ts_node_parent(assign);
        if (!py_is(stmt, "expression_statement") || ts_node_named_child_count(stmt) != 1) return n;
        TSNode fn = py_enclosing_function(m->src, stmt);
        if (!ts_node_eq(fn, m->fn)) return n; /* module globals, other functions */
        /* the binding runs on every path to the read */
        if (!py_is_within(n, ts_node_parent(stmt))) m->unfixable = true;
        char name[1][PY_NAME_MAX];
        if (dotted_text(m->src, n, name[0], sizeof name[0]) &&
            mutated_between(m, name, 1, ts_node_end_byte(stmt), ts_node_start_byte(n), false))
            m->unfixable = true;
        record(m, stmt, value, n);
        n = py_unparen(value);
    }
    return n;
}

/* ---- the operands' rank ----------------------------------------------------- */

/* How many dimensions the code shows a tensor to have, -1 when it does not:
 * the arguments of a reshape, view or permute (`x.reshape(B, L, N, 3, H, D)`),
 * one fewer after unbind or an integer index (`q, k, v = qkv.unbind(0)`,
 * `qkv[0]`), the same through transpose, contiguous and arithmetic, and
 * through the names the function binds. */
static int known_rank(const PySource *src, TSNode n, int depth) {
    n = py_unparen(n);
    if (ts_node_is_null(n) || depth > 12) return -1;
    if (py_is(n, "identifier")) {
        TSNode value = {0};
        BindingKind kind = py_binding_before(src, n, py_text_ptr(src, n), py_text_len(n), ts_node_start_byte(n),
                                             &value);
        if (kind != BINDING_ASSIGNMENT && kind != BINDING_OTHER) return -1;
        if (ts_node_is_null(value) || ts_node_start_byte(value) >= ts_node_start_byte(n)) return -1;
        TSNode recv;
        if (kind == BINDING_OTHER) { /* q, k, v = qkv.unbind(0) */
            if (!py_is(value, "call") || !py_value_method_call(src, value, "unbind", &recv)) return -1;
            int r = known_rank(src, recv, depth + 1);
            return r > 0 ? r - 1 : -1;
        }
        return known_rank(src, value, depth + 1);
    }
    if (py_is(n, "subscript")) { /* qkv[0] */
        TSNode index = ts_node_child_by_field_name(n, "subscript", 9);
        long i;
        if (ts_node_is_null(index) || !py_int_literal(src, index, &i)) return -1;
        int r = known_rank(src, ts_node_child_by_field_name(n, "value", 5), depth + 1);
        return r > 0 ? r - 1 : -1;
    }
    if (py_is(n, "binary_operator")) {
        int r = known_rank(src, left_of(n), depth + 1);
        return r >= 0 ? r : known_rank(src, right_of(n), depth + 1);
    }
    if (!py_is(n, "call") || py_call_has_splat(n)) return -1;
    TSNode recv;
    if (py_value_method_call(src, n, "reshape", &recv) || py_value_method_call(src, n, "view", &recv) ||
        py_value_method_call(src, n, "permute", &recv)) {
        uint32_t count = py_call_positional_count(n);
        TSNode first = py_call_positional(n, 0);
        if (count == 1 && (py_is(first, "tuple") || py_is(first, "list"))) return (int)ts_node_named_child_count(first);
        return count >= 1 && !py_is(first, "list_splat") ? (int)count : -1;
    }
    static const char *const same_rank[] = {"transpose", "contiguous", "float", "half", "bfloat16", "to",
                                            "clone", "detach", "softmax", NULL};
    for (size_t i = 0; same_rank[i]; i++)
        if (py_value_method_call(src, n, same_rank[i], &recv)) return known_rank(src, recv, depth + 1);
    return -1;
}

/* ---- recognizing the pattern --------------------------------------------- */

static bool is_transpose_last(Match *m, TSNode call, bool bmm, TSNode *k) {
    TSNode recv;
    TSNode a = {0}, b = {0};
    if (py_call_has_splat(call) || py_call_has_argument(call, "keyword_argument")) return false;
    static const char *const transpose_funcs[] = {"torch.transpose", "torch.swapaxes", "torch.swapdims", NULL};
    if (py_callee_is_any(m->src, call, transpose_funcs) && py_call_positional_count(call) == 3) {
        *k = py_call_positional(call, 0);
        a = py_call_positional(call, 1);
        b = py_call_positional(call, 2);
    } else if ((py_value_method_call(m->src, call, "transpose", &recv) ||
                py_value_method_call(m->src, call, "swapaxes", &recv) ||
                py_value_method_call(m->src, call, "swapdims", &recv)) &&
               py_call_positional_count(call) == 2) {
        *k = recv;
        a = py_call_positional(call, 0);
        b = py_call_positional(call, 1);
    } else if (py_value_method_call(m->src, call, "permute", &recv)) {
        uint32_t n = py_call_positional_count(call);
        if (n < 3 || n > 8) return false;
        long d[8];
        for (uint32_t i = 0; i < n; i++)
            if (!py_int_literal(m->src, py_call_positional(call, i), &d[i])) return false;
        for (uint32_t i = 0; i + 2 < n; i++)
            if (d[i] != (long)i) return false;
        if (d[n - 2] != (long)n - 1 || d[n - 1] != (long)n - 2) return false;
        *k = recv;
        return true;
    } else {
        return false;
    }
    long x, y;
    if (!py_int_literal(m->src, a, &x) || !py_int_literal(m->src, b, &y)) return false;
    long lo = x < y ? x : y, hi = x < y ? y : x;
    if (lo == -2 && hi == -1) return true;
    if (bmm && lo == 1 && hi == 2) return true;
    if (lo >= 0 && hi == lo + 1) { /* transpose(2, 3): the last two only for 4-D tensors */
        m->unclear = true;
        return true;
    }
    return false;
}

static bool parse_kt(Match *m, TSNode n, bool bmm) {
    n = resolve(m, n);
    if (py_is(n, "attribute")) {
        TSNode attr = ts_node_child_by_field_name(n, "attribute", 9);
        TSNode obj = ts_node_child_by_field_name(n, "object", 6);
        if (ts_node_is_null(obj)) return false;
        if (py_text_eq(m->src, attr, "mT")) {
            m->k = obj;
            return true;
        }
        if (py_text_eq(m->src, attr, "T")) { /* reverses every dimension: 2-D only */
            m->k = obj;
            m->unclear = true;
            m->shown_rank = 2;
            return true;
        }
        return false;
    }
    if (!py_is(n, "call")) return false;
    TSNode k;
    if (!is_transpose_last(m, n, bmm, &k) || ts_node_is_null(k)) return false;
    m->k = k;
    return true;
}

static bool parse_qk(Match *m, TSNode n) {
    n = resolve(m, n);
    static const char *const matmul_funcs[] = {"torch.matmul", NULL};
    static const char *const bmm_funcs[] = {"torch.bmm", NULL};
    TSNode recv;
    if (py_is_binary(n, "@")) {
        m->q = left_of(n);
        return !ts_node_is_null(m->q) && parse_kt(m, right_of(n), false);
    }
    if (!py_is(n, "call") || py_call_has_splat(n) || py_call_has_argument(n, "keyword_argument")) return false;
    bool bmm = py_callee_is_any(m->src, n, bmm_funcs);
    if ((bmm || py_callee_is_any(m->src, n, matmul_funcs)) && py_call_positional_count(n) == 2) {
        m->q = py_call_positional(n, 0);
        if (bmm) m->shown_rank = 3; /* bmm takes 3-D tensors only */
        return parse_kt(m, py_call_positional(n, 1), bmm);
    }
    bmm = py_value_method_call(m->src, n, "bmm", &recv);
    if ((bmm || py_value_method_call(m->src, n, "matmul", &recv)) && py_call_positional_count(n) == 1) {
        m->q = recv;
        if (bmm) m->shown_rank = 3;
        return parse_kt(m, py_call_positional(n, 0), bmm);
    }
    return false;
}

static bool parse_scaled(Match *m, TSNode n) {
    n = resolve(m, n);
    if (py_is_binary(n, "*")) {
        Match saved = *m;
        if (parse_qk(m, left_of(n))) {
            m->scale_kind = SCALE_MUL;
            m->scale = right_of(n);
        } else {
            *m = saved;
            if (!parse_qk(m, right_of(n))) return false;
            m->scale_kind = SCALE_MUL;
            m->scale = left_of(n);
        }
        /* a tensor factor is a multiplicative mask or a bias, not a scale */
        return !py_is_tensor(m->src, m->scale);
    }
    if (py_is_binary(n, "/")) {
        if (!parse_qk(m, left_of(n))) return false;
        m->scale_kind = SCALE_DIV; /* dividing by a tensor is a 0-d scale: recognized, not fixed */
        m->scale = right_of(n);
        return true;
    }
    m->scale_kind = SCALE_NONE;
    return parse_qk(m, n);
}

/* float('-inf'), -math.inf, -1e9, torch.finfo(x.dtype).min, ... */
static bool is_large_negative(const PySource *src, TSNode n, int depth) {
    if (depth > 4) return false;
    n = py_unparen(n);
    double v;
    if (py_number_literal(src, n, &v)) return v <= -1e4;
    char q[PY_NAME_MAX];
    if (py_is(n, "call")) {
        TSNode fn = ts_node_child_by_field_name(n, "function", 8);
        if (py_is(fn, "identifier") && py_text_eq(src, fn, "float") && py_call_positional_count(n) == 1) {
            TSNode s = py_call_positional(n, 0);
            if (!py_is(s, "string")) return false;
            char *t = py_text_dup(src, s);
            bool yes = t && (strstr(t, "-inf") || strstr(t, "-Inf") || strstr(t, "-INF"));
            free(t);
            return yes;
        }
        return false;
    }
    if (py_is(n, "attribute")) {
        /* torch.finfo(dtype).min */
        TSNode attr = ts_node_child_by_field_name(n, "attribute", 9);
        TSNode obj = ts_node_child_by_field_name(n, "object", 6);
        static const char *const finfo[] = {"torch.finfo", "numpy.finfo", NULL};
        return py_text_eq(src, attr, "min") && py_is(obj, "call") && py_callee_is_any(src, obj, finfo);
    }
    if (py_is(n, "unary_operator")) {
        TSNode op = ts_node_child_by_field_name(n, "operator", 8);
        TSNode arg = py_unparen(ts_node_child_by_field_name(n, "argument", 8));
        if (ts_node_is_null(op) || strcmp(ts_node_type(op), "-") != 0) return false;
        if (py_qualified_name(src, arg, q, sizeof q)) {
            if (!strcmp(q, "math.inf") || !strcmp(q, "torch.inf") || !strcmp(q, "numpy.inf")) return true;
        }
        if (py_is(arg, "call")) {
            TSNode fn = ts_node_child_by_field_name(arg, "function", 8);
            if (py_is(fn, "identifier") && py_text_eq(src, fn, "float") && py_call_positional_count(arg) == 1) {
                TSNode s = py_call_positional(arg, 0);
                char *t = py_is(s, "string") ? py_text_dup(src, s) : NULL;
                bool yes = t && (strstr(t, "inf") || strstr(t, "Inf") || strstr(t, "INF"));
                free(t);
                return yes;
            }
        }
        if (py_is(arg, "attribute")) { /* -torch.finfo(dtype).max */
            TSNode attr = ts_node_child_by_field_name(arg, "attribute", 9);
            TSNode obj = ts_node_child_by_field_name(arg, "object", 6);
            static const char *const finfo[] = {"torch.finfo", "numpy.finfo", NULL};
            return py_text_eq(src, attr, "max") && py_is(obj, "call") && py_callee_is_any(src, obj, finfo);
        }
        return false;
    }
    if (py_is(n, "identifier")) { /* mask_value = torch.finfo(x.dtype).min, in this function */
        TSNode value;
        if (py_binding_before(src, n, py_text_ptr(src, n), py_text_len(n), ts_node_start_byte(n), &value) ==
                BINDING_ASSIGNMENT &&
            ts_node_eq(py_enclosing_function(src, value), py_enclosing_function(src, n)))
            return is_large_negative(src, value, depth + 1);
    }
    return false;
}

static bool parse_masked(Match *m, TSNode n, int depth) {
    if (depth > MAX_DEPTH) return false;
    n = resolve(m, n);
    if (py_is_binary(n, "+")) {
        Match saved = *m;
        if (parse_masked(m, left_of(n), depth + 1)) {
            if (m->mask_count++ == 0) {
                m->mask_kind = MASK_ADD;
                m->mask = right_of(n);
            }
            return true;
        }
        *m = saved;
        if (parse_masked(m, right_of(n), depth + 1)) {
            if (m->mask_count++ == 0) {
                m->mask_kind = MASK_ADD;
                m->mask = left_of(n);
            }
            return true;
        }
        *m = saved;
        return false;
    }
    TSNode recv;
    if (py_value_method_call(m->src, n, "masked_fill", &recv)) {
        if (py_call_has_splat(n)) return false;
        TSNode cond = py_call_positional(n, 0), value = py_call_positional(n, 1);
        if (ts_node_is_null(cond)) cond = py_call_keyword(m->src, n, "mask");
        if (ts_node_is_null(value)) value = py_call_keyword(m->src, n, "value");
        if (ts_node_is_null(cond) || ts_node_is_null(value)) return false;
        if (!parse_masked(m, recv, depth + 1)) return false;
        if (m->mask_count++ == 0) {
            m->mask_kind = MASK_FILL;
            m->mask = cond;
            m->fill_known = is_large_negative(m->src, value, 0);
        }
        return true;
    }
    return parse_scaled(m, n);
}

static bool is_softmax(Match *m, TSNode n, TSNode *input) {
    static const char *const softmax_funcs[] = {"torch.softmax", "torch.nn.functional.softmax",
                                                "torch.special.softmax", NULL};
    static const char *const allowed_kw[] = {"dim", "dtype", NULL};
    if (!py_is(n, "call") || py_call_has_splat(n) || !keywords_within(m->src, n, allowed_kw)) return false;
    TSNode dim = py_call_keyword(m->src, n, "dim");
    TSNode recv;
    if (py_callee_is_any(m->src, n, softmax_funcs)) {
        uint32_t count = py_call_positional_count(n);
        if (count < 1 || count > 2) return false;
        *input = py_call_positional(n, 0);
        if (count == 2) {
            if (!ts_node_is_null(dim)) return false;
            dim = py_call_positional(n, 1);
        }
    } else if (py_value_method_call(m->src, n, "softmax", &recv)) {
        uint32_t count = py_call_positional_count(n);
        if (count > 1) return false;
        *input = recv;
        if (count == 1) {
            if (!ts_node_is_null(dim)) return false;
            dim = py_call_positional(n, 0);
        }
    } else {
        return false;
    }
    return !ts_node_is_null(dim) && is_minus_one(m->src, dim);
}

/* F.dropout(p_attn, p=...), torch.dropout(...), self.attn_drop(p_attn) */
static bool is_dropout(Match *m, TSNode n, TSNode *input) {
    static const char *const dropout_funcs[] = {"torch.nn.functional.dropout", "torch.dropout", NULL};
    if (!py_is(n, "call") || py_call_has_splat(n)) return false;
    if (py_callee_is_any(m->src, n, dropout_funcs)) {
        *input = py_call_positional(n, 0);
        if (ts_node_is_null(*input)) *input = py_call_keyword(m->src, n, "input");
        return !ts_node_is_null(*input);
    }
    char q[PY_NAME_MAX];
    if (!py_callee_name(m->src, n, q, sizeof q) || py_call_positional_count(n) != 1 ||
        py_call_has_argument(n, "keyword_argument"))
        return false;
    const char *last = last_component(q);
    for (const char *p = last; *p; p++)
        if (strncasecmp(p, "drop", 4) == 0) {
            *input = py_call_positional(n, 0);
            return true;
        }
    return false;
}

/* dtype casts around the softmax: .float(), .to(q.dtype), .type_as(q) */
static bool is_cast(Match *m, TSNode n, TSNode *inner) {
    TSNode recv;
    if (!py_is(n, "call") || py_call_has_splat(n)) return false;
    if (py_value_method_call(m->src, n, "float", &recv) && py_call_positional_count(n) == 0 &&
        !py_call_has_argument(n, "keyword_argument")) {
        *inner = recv;
        return true;
    }
    if (py_value_method_call(m->src, n, "type_as", &recv) && py_call_positional_count(n) == 1 &&
        !py_call_has_argument(n, "keyword_argument")) {
        *inner = recv;
        return true;
    }
    static const char *const to_kw[] = {"dtype", NULL};
    if (py_value_method_call(m->src, n, "to", &recv) &&
        py_call_positional_count(n) + (py_call_has_argument(n, "keyword_argument") ? 1 : 0) == 1 &&
        keywords_within(m->src, n, to_kw)) {
        *inner = recv;
        return true;
    }
    return false;
}

static bool parse_probs(Match *m, TSNode n) {
    n = resolve(m, n);
    for (int i = 0; i < 8; i++) {
        TSNode inner;
        if (is_cast(m, n, &inner)) {
            n = resolve(m, inner);
        } else if (!m->dropout && is_dropout(m, n, &inner)) {
            m->dropout = true;
            n = resolve(m, inner);
        } else {
            break;
        }
    }
    TSNode input;
    if (!is_softmax(m, n, &input)) return false;
    m->softmax = n;
    input = resolve(m, input);
    TSNode inner;
    for (int i = 0; i < 2 && is_cast(m, input, &inner); i++) input = resolve(m, inner);
    return parse_masked(m, input, 0);
}

/* the final product: p @ v, torch.matmul(p, v), torch.bmm(p, v), p.matmul(v) */
static bool final_operands(const PySource *src, TSNode n, TSNode *p, TSNode *v) {
    static const char *const funcs[] = {"torch.matmul", "torch.bmm", NULL};
    TSNode recv;
    if (py_is_binary(n, "@")) {
        *p = left_of(n);
        *v = right_of(n);
    } else if (py_is(n, "call") && !py_call_has_splat(n) && !py_call_has_argument(n, "keyword_argument")) {
        if (py_callee_is_any(src, n, funcs) && py_call_positional_count(n) == 2) {
            *p = py_call_positional(n, 0);
            *v = py_call_positional(n, 1);
        } else if ((py_value_method_call(src, n, "matmul", &recv) || py_value_method_call(src, n, "bmm", &recv)) &&
                   py_call_positional_count(n) == 1) {
            *p = recv;
            *v = py_call_positional(n, 0);
        } else {
            return false;
        }
    } else {
        return false;
    }
    return !ts_node_is_null(*p) && !ts_node_is_null(*v);
}

/* ---- where the intermediate names are read ------------------------------- */

static const char *const fused_attention_names[] = {"scaled_dot_product_attention", "flash_attn_func",
                                                    "flash_attn_varlen_func",       "flash_attn_qkvpacked_func",
                                                    "memory_efficient_attention",   "flex_attention",
                                                    NULL};
static const char *const softmax_names[] = {"softmax", NULL};

typedef struct {
    const PySource *src;
    const char *const *names;
    bool found;
} CallSearch;

/* a call whose callee's own name (`f(...)`, `x.f(...)`) is one of the names */
static bool visit_named_call(TSNode n, void *data) {
    CallSearch *s = data;
    if (s->found) return false;
    if (!py_is(n, "call")) return true;
    TSNode fn = ts_node_child_by_field_name(n, "function", 8);
    TSNode name = py_is(fn, "attribute") ? ts_node_child_by_field_name(fn, "attribute", 9) : fn;
    for (size_t i = 0; py_is(name, "identifier") && s->names[i] && !s->found; i++)
        s->found = py_text_eq(s->src, name, s->names[i]);
    return !s->found;
}

static bool scope_calls(const PySource *src, TSNode scope, const char *const *names) {
    CallSearch s = {src, names, false};
    py_walk(scope, visit_named_call, &s);
    return s.found;
}

typedef struct {
    Match *m;
    bool used;   /* the intermediate values are read elsewhere: the user needs them */
    bool unsure; /* cannot tell: no fix */
} UseSearch;

static bool is_variable_reference(TSNode n) {
    TSNode parent = ts_node_parent(n);
    if (ts_node_is_null(parent)) return false;
    if (py_is(parent, "attribute") && ts_node_eq(ts_node_child_by_field_name(parent, "attribute", 9), n))
        return false;
    if (py_is(parent, "keyword_argument") && ts_node_eq(ts_node_child_by_field_name(parent, "name", 4), n))
        return false;
    return true;
}


static TSNode stmt_target(TSNode stmt) { return left_of(ts_node_named_child(stmt, 0)); }

/* the earliest and latest chain statements that bind the identifier's name */
static bool bound_by_chain(const Match *m, TSNode id, size_t *first, size_t *last) {
    bool any = false;
    for (size_t i = 0; i < m->nstmts; i++) {
        TSNode target = stmt_target(m->stmts[i]);
        if (!py_is(target, "identifier") || !py_same_text(m->src, target, id)) continue;
        size_t s = ts_node_start_byte(m->stmts[i]);
        if (!any || s < *first) *first = s;
        if (!any || s > *last) *last = s;
        any = true;
    }
    return any;
}

static bool is_write(TSNode id) {
    TSNode child = id;
    for (TSNode p = ts_node_parent(id); !ts_node_is_null(p); child = p, p = ts_node_parent(p)) {
        if (py_is(p, "pattern_list") || py_is(p, "tuple_pattern") || py_is(p, "list_pattern") || py_is(p, "tuple") ||
            py_is(p, "list") || py_is(p, "parenthesized_expression") || py_is(p, "expression_list") ||
            py_is(p, "list_splat_pattern"))
            continue;
        if (py_is(p, "assignment") || py_is(p, "for_statement") || py_is(p, "for_in_clause"))
            return ts_node_eq(left_of(p), child);
        if (py_is(p, "delete_statement")) return true;
        return false;
    }
    return false;
}

/* n is the receiver of an in-place method, or the base of an assigned subscript or attribute */
static bool changed_in_place(const PySource *src, TSNode n) {
    TSNode child = n;
    for (TSNode p = ts_node_parent(n); !ts_node_is_null(p); child = p, p = ts_node_parent(p)) {
        if (py_is(p, "subscript") && ts_node_eq(ts_node_child_by_field_name(p, "value", 5), child)) continue;
        if (py_is(p, "attribute") && ts_node_eq(ts_node_child_by_field_name(p, "object", 6), child)) {
            TSNode call = ts_node_parent(p);
            TSNode attr = ts_node_child_by_field_name(p, "attribute", 9);
            if (py_is(call, "call") && ts_node_eq(ts_node_child_by_field_name(call, "function", 8), p)) {
                const char *t = py_text_ptr(src, attr);
                size_t len = py_text_len(attr);
                return len > 1 && t[len - 1] == '_' && t[0] != '_';
            }
            continue;
        }
        if (ts_node_eq(child, n)) return false;
        return (py_is(p, "assignment") || py_is(p, "augmented_assignment")) && ts_node_eq(left_of(p), child);
    }
    return false;
}

static bool visit_use(TSNode n, void *data) {
    UseSearch *s = data;
    Match *m = s->m;
    if (s->used) return false;
    if (!py_is(n, "identifier")) return true;
    size_t first = 0, last = 0;
    if (!bound_by_chain(m, n, &first, &last) || !is_variable_reference(n)) return true;
    for (size_t i = 0; i < m->nstmts; i++)
        if (ts_node_eq(stmt_target(m->stmts[i]), n)) return true;
    for (size_t i = 0; i < m->nreads; i++)
        if (ts_node_eq(m->reads[i], n)) return true;
    /* other reads inside the replaced code: dropped with it (a fill value, a cast's
     * argument) or caught by movable() */
    if (py_is_within(n, m->final_node)) return true;
    for (size_t i = 0; i < m->nstmts; i++)
        if (py_is_within(n, m->stmts[i])) return true;
    /* inside a nested function or lambda: it may read the value whenever it runs */
    for (TSNode p = ts_node_parent(n); !ts_node_is_null(p) && !ts_node_eq(p, m->scope); p = ts_node_parent(p))
        if (py_is(p, "function_definition") || py_is(p, "lambda") || py_is(p, "class_definition")) {
            s->used = true;
            return false;
        }
    if (is_write(n)) return true;
    if (changed_in_place(m->src, n)) { /* scores.masked_fill_(...), scores[mask] = ...: still attention */
        s->unsure = true;
        return true;
    }
    if (ts_node_start_byte(n) < first) {
        /* an earlier read; in a loop around the chain it sees the previous iteration's value */
        for (TSNode p = ts_node_parent(n); !ts_node_is_null(p) && !ts_node_eq(p, m->scope); p = ts_node_parent(p))
            if ((py_is(p, "for_statement") || py_is(p, "while_statement")) && py_is_within(m->stmts[0], p))
                s->unsure = true;
        return true;
    }
    TSNode value = {0};
    BindingKind kind = binding_of(m, n, &value);
    if (kind == BINDING_NONE || ts_node_is_null(value)) {
        s->used = true;
        return false;
    }
    for (size_t i = 0; i < m->nstmts; i++)
        if (ts_node_eq(m->values[i], value)) { /* reads the scores or the weights */
            s->used = true;
            return false;
        }
    /* a later assignment that runs on every path to this read hides the chain's value */
    TSNode stmt = py_statement_of(value);
    if (ts_node_start_byte(stmt) > last && py_is_within(n, ts_node_parent(stmt))) return true;
    s->used = true;
    return false;
}

/* ---- the fix -------------------------------------------------------------- */

static bool name_suggests_scalar(const char *name) {
    static const char *const parts[] = {"scale", "scaling", "sqrt", "dim", "d_k", "dk", "head_size", "d_head",
                                        "d_model", "n_embd", "factor", NULL};
    char lower[PY_NAME_MAX];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof lower; i++) lower[i] = (char)tolower((unsigned char)name[i]);
    lower[i] = '\0';
    for (size_t j = 0; parts[j]; j++)
        if (strstr(lower, parts[j])) return true;
    return false;
}

/* A Python number as far as the code shows: SDPA's scale must not be a tensor. */
static bool scalar_like(const Match *m, TSNode n, int depth) {
    if (depth > 8 || ts_node_is_null(n)) return false;
    n = py_unparen(n);
    const PySource *src = m->src;
    double v;
    if (py_number_literal(src, n, &v)) return true;
    if (py_is(n, "unary_operator")) return scalar_like(m, ts_node_child_by_field_name(n, "argument", 8), depth + 1);
    if (py_is(n, "binary_operator")) {
        if (py_is_binary(n, "@")) return false;
        return scalar_like(m, left_of(n), depth + 1) && scalar_like(m, right_of(n), depth + 1);
    }
    if (py_is(n, "call")) {
        static const char *const numeric[] = {"math.sqrt", "math.pow", "math.log", "math.exp", "float", "int",
                                              "len", "numpy.sqrt", NULL};
        TSNode recv;
        return py_callee_is_any(src, n, numeric) || py_value_method_call(src, n, "size", &recv) ||
               py_value_method_call(src, n, "dim", &recv);
    }
    if (py_is(n, "subscript")) { /* q.shape[-1], q.size()[-1] */
        TSNode value = ts_node_child_by_field_name(n, "value", 5);
        TSNode recv;
        if (py_is(value, "attribute"))
            return py_text_eq(src, ts_node_child_by_field_name(value, "attribute", 9), "shape");
        return py_is(value, "call") && py_value_method_call(src, value, "size", &recv);
    }
    if (py_is(n, "identifier")) {
        TSNode value;
        BindingKind kind =
            py_binding_before(src, n, py_text_ptr(src, n), py_text_len(n), ts_node_start_byte(n), &value);
        if (kind == BINDING_ASSIGNMENT && ts_node_eq(py_enclosing_function(src, value), m->fn))
            return scalar_like(m, value, depth + 1);
        if (kind == BINDING_PARAMETER) {
            TSNode type = ts_node_child_by_field_name(value, "type", 4);
            if (!ts_node_is_null(type)) return py_text_eq(src, type, "float") || py_text_eq(src, type, "int");
            TSNode def = ts_node_child_by_field_name(value, "value", 5);
            if (!ts_node_is_null(def) && py_number_literal(src, def, &v)) return true;
        }
    }
    if (py_is(n, "identifier") || py_is(n, "attribute")) {
        TSNode last = py_is(n, "attribute") ? ts_node_child_by_field_name(n, "attribute", 9) : n;
        char *name = py_text_dup(src, last);
        bool yes = name && name_suggests_scalar(name);
        free(name);
        return yes;
    }
    return false;
}

static bool is_primary(TSNode n) {
    return py_is(n, "identifier") || py_is(n, "attribute") || py_is(n, "call") || py_is(n, "subscript") ||
           py_is(n, "integer") || py_is(n, "float") || py_is(n, "parenthesized_expression");
}

static char *scale_text(const Match *m) {
    if (m->scale_kind == SCALE_NONE) return strdup("1.0");
    char *t = py_text_dup(m->src, m->scale);
    if (!t) return NULL;
    if (m->scale_kind == SCALE_MUL) return t;
    char *out = (is_primary(m->scale) || py_is_binary(m->scale, "**")) ? format_string("1 / %s", t)
                                                                     : format_string("1 / (%s)", t);
    free(t);
    return out;
}

/* masked_fill(cond, -inf) drops where cond holds: SDPA's boolean mask says where to attend */
static char *mask_text(const Match *m) {
    const PySource *src = m->src;
    if (m->mask_kind == MASK_ADD) return py_text_dup(src, m->mask);
    TSNode cond = py_unparen(m->mask);
    if (py_is(cond, "comparison_operator") && ts_node_named_child_count(cond) == 2 && ts_node_child_count(cond) == 3) {
        TSNode op = ts_node_child(cond, 1);
        const char *flip = NULL;
        if (strcmp(ts_node_type(op), "==") == 0) flip = "!=";
        else if (strcmp(ts_node_type(op), "!=") == 0) flip = "==";
        if (flip) {
            char *a = py_text_dup(src, ts_node_named_child(cond, 0));
            char *b = py_text_dup(src, ts_node_named_child(cond, 1));
            char *out = a && b ? format_string("%s %s %s", a, flip, b) : NULL;
            free(a);
            free(b);
            return out;
        }
    }
    if (py_is(cond, "unary_operator")) {
        TSNode op = ts_node_child_by_field_name(cond, "operator", 8);
        if (!ts_node_is_null(op) && strcmp(ts_node_type(op), "~") == 0)
            return py_text_dup(src, ts_node_child_by_field_name(cond, "argument", 8));
    }
    TSNode recv;
    if (py_value_method_call(src, cond, "logical_not", &recv) && py_call_positional_count(cond) == 0)
        return py_text_dup(src, recv);
    char *t = py_text_dup(src, cond);
    if (!t) return NULL;
    char *out = is_primary(cond) ? format_string("~%s", t) : format_string("~(%s)", t);
    free(t);
    return out;
}

/* [start, end) of the whole lines that hold stmt, when nothing else shares them */
static bool statement_lines(const PySource *src, TSNode stmt, size_t *start, size_t *end) {
    const Document *doc = src->doc;
    if (!py_starts_line(src, stmt)) return false;
    size_t i = ts_node_end_byte(stmt);
    while (i < doc->length && (doc->text[i] == ' ' || doc->text[i] == '\t' || doc->text[i] == '\r')) i++;
    if (i < doc->length && doc->text[i] == '#')
        while (i < doc->length && doc->text[i] != '\n') i++;
    if (i < doc->length && doc->text[i] != '\n') return false;
    *start = doc->line_starts[document_line_of(doc, ts_node_start_byte(stmt))];
    *end = i < doc->length ? i + 1 : i;
    return true;
}

static void add_fix(RuleContext *ctx, Finding *f, const Match *m) {
    const PySource *src = m->src;
    if (m->dropout || m->unclear || m->unfixable || m->overflow || m->mask_count > 1) return;
    if (m->mask_count == 1 && m->mask_kind == MASK_FILL && !m->fill_known) return;
    if (m->scale_kind != SCALE_NONE && !scalar_like(m, m->scale, 0)) return;
    size_t to = ts_node_start_byte(m->final_node);
    if (!movable(m, m->q, to) || !movable(m, m->k, to) || reads_chain_value(m, m->v)) return;
    if (m->scale_kind != SCALE_NONE && !movable(m, m->scale, to)) return;
    if (m->mask_count == 1 && !movable(m, m->mask, to)) return;
    size_t starts[MAX_CHAIN], ends[MAX_CHAIN];
    for (size_t i = 0; i < m->nstmts; i++)
        if (!statement_lines(src, m->stmts[i], &starts[i], &ends[i])) return;

    char *prefix = py_functional_prefix(src);
    char *q = py_text_dup(src, m->q), *k = py_text_dup(src, m->k), *v = py_text_dup(src, m->v);
    char *scale = scale_text(m);
    char *mask = m->mask_count == 1 ? mask_text(m) : NULL;
    char *mask_kw = mask ? format_string(", attn_mask=%s", mask) : strdup("");
    char *call = prefix && q && k && v && scale && mask_kw
                     ? format_string("%s.scaled_dot_product_attention(%s, %s, %s%s, scale=%s)", prefix, q, k, v,
                                     mask_kw, scale)
                     : NULL;
    if (call && (m->mask_count == 0 || mask)) {
        Fix *fix = finding_add_fix(f, "Use F.scaled_dot_product_attention", false);
        bool ok = fix && fix_add_edit(fix, ts_node_start_byte(m->final_node), ts_node_end_byte(m->final_node), call);
        for (size_t i = 0; ok && i < m->nstmts; i++) ok = fix_add_edit(fix, starts[i], ends[i], "");
        if (!ok) ctx->out_of_memory = true;
    }
    free(call);
    free(mask_kw);
    free(mask);
    free(scale);
    free(q);
    free(k);
    free(v);
    free(prefix);
}

/* ---- the check ------------------------------------------------------------ */

/* `q, k, v = qkv.unbind(-1)`: vectors split off the last dimension have no
 * head dimension, so they are not in the (..., L, E) layout the fused kernel takes */
static bool split_off_last_dim(const Match *m, TSNode t) {
    if (!py_is(t, "identifier")) return false;
    TSNode value = {0};
    if (py_binding_before(m->src, t, py_text_ptr(m->src, t), py_text_len(t), ts_node_start_byte(t), &value) !=
        BINDING_OTHER)
        return false;
    TSNode recv;
    if (!py_value_method_call(m->src, value, "unbind", &recv) && !py_value_method_call(m->src, value, "chunk", &recv) &&
        !py_value_method_call(m->src, value, "split", &recv))
        return false;
    TSNode dim = py_call_keyword(m->src, value, "dim");
    if (ts_node_is_null(dim))
        dim = py_call_positional(value, py_value_method_call(m->src, value, "unbind", &recv) ? 0 : 1);
    return !ts_node_is_null(dim) && is_minus_one(m->src, dim);
}

/* Reports the written-out attention at n. The fused kernels take
 * (batch, heads, length, head_dim): for a q the code shows to be 5-D or more
 * the call alone would run the same math, so the message says to fold the
 * leading dimensions into the batch, and no rewrite is offered. */
static void report(RuleContext *ctx, TSNode n, Match *m, bool use_unsure) {
    int rank = known_rank(ctx->py, m->q, 0);
    if (rank < 0 && m->shown_rank > 0) rank = m->shown_rank;
    bool folded = rank > 4, short_rank = rank == 2 || rank == 3;
    Finding *f;
    if (short_rank)
        f = rule_report_node(
            ctx, n,
            "attention written out as softmax(q @ k^T) @ v runs several kernels and stores the whole score "
            "matrix; F.scaled_dot_product_attention fuses it into one kernel, but only for 4-D (batch, heads, "
            "length, head_dim) inputs, and q here is %d-D (with fewer dimensions it runs the same unfused math): "
            "%s, the same for k and v, call it, and take %s of the result",
            rank, rank == 3 ? "give it a heads dimension (`q.unsqueeze(1)`)" : "give it batch and heads dimensions (`q[None, None]`)",
            rank == 3 ? "`.squeeze(1)`" : "`[0, 0]`");
    else if (folded)
        f = rule_report_node(
            ctx, n,
            "attention written out as softmax(q @ k^T) @ v runs several kernels and stores the whole score "
            "matrix; F.scaled_dot_product_attention fuses it into one kernel, but only for 4-D (batch, heads, "
            "length, head_dim) inputs, and q here is %d-D: fold its leading dimensions into the batch "
            "(`q.reshape(-1, *q.shape[-3:])`, the same for k and v, and the result back) and call it then",
            rank);
    else
        f = rule_report_node(ctx, n,
                             m->dropout
                                 ? "attention written out as softmax(q @ k^T) @ v runs several kernels and stores "
                                   "the whole score matrix; F.scaled_dot_product_attention (with dropout_p=) fuses "
                                   "it into one kernel"
                                 : "attention written out as softmax(q @ k^T) @ v runs several kernels and stores "
                                   "the whole score matrix; F.scaled_dot_product_attention fuses it into one kernel");
    if (!f) return;
    ByteRange r = {ts_node_start_byte(m->softmax), ts_node_end_byte(m->softmax)};
    if (!finding_add_related(f, r, "the softmax over the attention scores")) ctx->out_of_memory = true;
    if (folded || short_rank) return;
    if (m->unclear)
        finding_caveat(f, "the transposed dimensions are the last two only for tensors of a certain rank: check the "
                          "shapes before fusing");
    if (!use_unsure) add_fix(ctx, f, m);
}

/* F.scaled_dot_product_attention came in torch 2.0: a project that declares
 * an older release (deit's torch==1.13.1) cannot call it. Read once, when a
 * finding is due. */
static bool project_predates_sdpa(State *st) {
    if (!st->floor_read) {
        st->floor_read = true;
        TorchVersion v;
        st->before_sdpa = torch_floor_of_project(st->ctx->doc->path, &v) && v < TORCH_VERSION(2, 0);
    }
    return st->before_sdpa;
}

static bool visit(TSNode n, void *data) {
    State *st = data;
    RuleContext *ctx = st->ctx;
    const PySource *src = ctx->py;
    if (!py_is_binary(n, "@") && !py_is(n, "call")) return true;
    TSNode p, v;
    if (!final_operands(src, n, &p, &v)) return true;
    TSNode scope = py_scope_of(src, n);
    if (!ts_node_eq(scope, st->scope)) {
        st->scope = scope;
        st->count = 0;
        st->has_softmax = scope_calls(src, scope, softmax_names);
        st->has_fused = st->has_softmax && scope_calls(src, scope, fused_attention_names);
    }
    if (!st->has_softmax || st->has_fused) return true;
    Match *m = calloc(1, sizeof *m);
    if (!m) {
        ctx->out_of_memory = true;
        return false;
    }
    m->src = src;
    m->state = st;
    m->fn = py_enclosing_function(src, n);
    m->scope = scope;
    m->final_node = n;
    m->v = v;
    if (parse_probs(m, p) && !py_in_deliberate_reference(src, n) && !split_off_last_dim(m, m->q) &&
        !split_off_last_dim(m, m->k)) {
        UseSearch use = {.m = m};
        py_walk(m->scope, visit_use, &use);
        if (!use.used && !project_predates_sdpa(st)) report(ctx, n, m, use.unsure);
    }
    free(m);
    return true;
}

static void check(RuleContext *ctx) {
    State *st = calloc(1, sizeof *st);
    if (!st) {
        ctx->out_of_memory = true;
        return;
    }
    st->ctx = ctx;
    rule_walk(ctx, visit, st);
    free(st);
}

const Rule rule_py006_unfused_attention = {
    .code = "PY006", .name = "unfused-attention", .severity = SEVERITY_WARNING,
    .languages = LANGUAGE_PYTHON, .check = check, .measure = MEASURE_ATTENTION,
    .summary = "softmax(q @ k^T) @ v written out instead of F.scaled_dot_product_attention",
    .documentation = documentation};
