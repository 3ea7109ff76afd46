#include "analysis/cuda/cuda_query.h"

#include <stdlib.h>
#include <string.h>

CuNode *cu_unwrap_once(const CuNode *n) {
    if (!n) return NULL;
    if ((n->kind == CXCursor_UnexposedExpr || n->kind == CXCursor_ParenExpr) && n->child_count == 1)
        return n->children[0];
    if ((n->kind == CXCursor_CStyleCastExpr || n->kind == CXCursor_CXXFunctionalCastExpr ||
         n->kind == CXCursor_CXXStaticCastExpr) &&
        n->child_count >= 1)
        return n->children[n->child_count - 1];
    return NULL;
}

CuNode *cu_strip(CuNode *n) {
    for (int i = 0; n && i < 32; i++) {
        CuNode *inner = cu_unwrap_once(n);
        if (!inner) break;
        n = inner;
    }
    return n;
}

CuNode *cu_child(const CuNode *n, uint32_t i) { return n && i < n->child_count ? cu_strip(n->children[i]) : NULL; }

bool cu_is_kernel(const CuNode *fn) {
    return fn && (fn->kind == CXCursor_FunctionDecl || fn->kind == CXCursor_FunctionTemplate) &&
           (fn->attrs & CU_ATTR_GLOBAL);
}

bool cu_is_device_code(const CuNode *fn) {
    return fn && (fn->kind == CXCursor_FunctionDecl || fn->kind == CXCursor_FunctionTemplate ||
                  fn->kind == CXCursor_CXXMethod) &&
           (fn->attrs & (CU_ATTR_GLOBAL | CU_ATTR_DEVICE));
}

CuNode *cu_function_body(const CuNode *fn) {
    if (!fn || fn->child_count == 0) return NULL;
    CuNode *last = fn->children[fn->child_count - 1];
    return last->kind == CXCursor_CompoundStmt ? last : NULL;
}

CuNode *cu_definition_of(const CudaSource *src, const CuNode *decl) {
    if (!decl) return NULL;
    if (cu_function_body(decl)) return (CuNode *)decl;
    CXCursor def = clang_getCursorDefinition(decl->cursor);
    if (clang_Cursor_isNull(def)) return NULL;
    for (uint32_t i = 0; i < src->root->child_count; i++) {
        CuNode *n = src->root->children[i];
        if (clang_equalCursors(n->cursor, def) && cu_function_body(n)) return n;
    }
    return NULL;
}

bool cu_is_function(const CuNode *n) {
    return n && (n->kind == CXCursor_FunctionDecl || n->kind == CXCursor_FunctionTemplate ||
                 n->kind == CXCursor_CXXMethod || n->kind == CXCursor_Constructor ||
                 n->kind == CXCursor_Destructor || n->kind == CXCursor_ConversionFunction ||
                 n->kind == CXCursor_LambdaExpr);
}

CuNode *cu_function_of(const CuNode *n) {
    for (CuNode *p = n ? n->parent : NULL; p; p = p->parent)
        if (cu_is_function(p)) return p;
    return NULL;
}

bool cu_is_call(const CuNode *n, const char *name) {
    return n && n->kind == CXCursor_CallExpr && strcmp(cu_callee(n), name) == 0;
}

bool cu_name_in(const char *name, const char *const *list) {
    for (; *list; list++)
        if (strcmp(name, *list) == 0) return true;
    return false;
}

CuNode *cu_loop_of(const CuNode *n, const CuNode *stop) {
    const CuNode *child = n;
    for (CuNode *p = n ? n->parent : NULL; p && p != stop; child = p, p = p->parent) {
        if (p->kind == CXCursor_FunctionDecl || p->kind == CXCursor_LambdaExpr || p->kind == CXCursor_CXXMethod)
            return NULL;
        if (p->kind == CXCursor_ForStmt || p->kind == CXCursor_WhileStmt || p->kind == CXCursor_DoStmt ||
            p->kind == CXCursor_CXXForRangeStmt) {
            /* the init statement of a for loop runs once */
            if (p->kind == CXCursor_ForStmt && p->child_count > 0 && p->children[0] == child &&
                child->kind == CXCursor_DeclStmt)
                continue;
            return p;
        }
    }
    return NULL;
}

CuNode *cu_statement_of(const CuNode *n) {
    const CuNode *child = n;
    for (CuNode *p = n ? n->parent : NULL; p; child = p, p = p->parent) {
        if (p->kind == CXCursor_CompoundStmt) return (CuNode *)child;
        if ((p->kind == CXCursor_ForStmt || p->kind == CXCursor_WhileStmt || p->kind == CXCursor_IfStmt ||
             p->kind == CXCursor_DoStmt) &&
            child == p->children[p->child_count - 1] && child->kind != CXCursor_CompoundStmt)
            return (CuNode *)child;
    }
    return NULL;
}

CuNode *cu_single_var_decl(const CuNode *stmt) {
    if (!stmt || stmt->kind != CXCursor_DeclStmt || stmt->child_count != 1) return NULL;
    CuNode *v = stmt->children[0];
    return v->kind == CXCursor_VarDecl ? v : NULL;
}

bool cu_is_bare_return(const CuNode *s) {
    if (!s) return false;
    if (s->kind == CXCursor_ReturnStmt) return s->child_count == 0;
    return s->kind == CXCursor_CompoundStmt && s->child_count == 1 && s->children[0]->kind == CXCursor_ReturnStmt &&
           s->children[0]->child_count == 0;
}

/* the name a callee expression spells: `f`, `tk<T>` (an overload set in a template), a function
 * whose declaration was not found */
static const char *callee_name(const CuNode *f) {
    f = cu_strip((CuNode *)f);
    if (!f) return "";
    if (f->kind == CXCursor_DeclRefExpr && (!f->ref_name || !*f->ref_name) && f->child_count >= 1 &&
        f->children[0]->kind == CXCursor_OverloadedDeclRef)
        f = f->children[0];
    if (f->kind == CXCursor_OverloadedDeclRef) return f->name ? f->name : "";
    if (f->kind == CXCursor_DeclRefExpr) return f->ref_name && *f->ref_name ? f->ref_name : f->name ? f->name : "";
    return "";
}

const char *cu_callee(const CuNode *call) {
    if (!call || call->kind != CXCursor_CallExpr) return "";
    if (call->ref_name && *call->ref_name) return call->ref_name;
    if (call->name && *call->name) return call->name;
    /* a call clang left unresolved (a template, a missing header): the name its callee spells */
    if (call->child_count > 0 && call->children[0]->start == call->start) return callee_name(call->children[0]);
    return "";
}

const char *cu_unresolved_callee(const CuNode *n) {
    if (!n || n->kind != CXCursor_UnexposedExpr || n->child_count < 1) return NULL;
    const CuNode *f = n->children[0];
    if (f->start != n->start) return NULL;
    if (f->kind != CXCursor_OverloadedDeclRef && f->kind != CXCursor_DeclRefExpr) return NULL;
    const char *name = callee_name(f);
    /* a call: the name is followed by its arguments */
    return *name && n->end > f->end ? name : NULL;
}

static bool is_push_config(const CuNode *n) {
    return n && n->kind == CXCursor_CallExpr && strcmp(cu_callee(n), "__cudaPushCallConfiguration") == 0;
}

CuNode **cu_call_args(const CuNode *call, uint32_t *n) {
    /* children: the callee (it starts where the call starts), a launch's
     * <<<...>>> configuration, then the arguments as written (default
     * arguments do not appear) */
    *n = 0;
    if (!call || call->kind != CXCursor_CallExpr || call->child_count == 0) return NULL;
    uint32_t skip = 0;
    CuNode *first = cu_strip(call->children[0]);
    const char *callee = cu_callee(call);
    if (first && (first->kind == CXCursor_DeclRefExpr || first->kind == CXCursor_MemberRefExpr ||
                  first->kind == CXCursor_OverloadedDeclRef) &&
        *callee && first->name && strcmp(first->name, callee) == 0)
        skip = 1;
    else if (call->children[0]->start == call->start && call->children[0]->end < call->end)
        skip = 1;
    if (skip < call->child_count && is_push_config(cu_strip(call->children[skip]))) skip++;
    *n = call->child_count - skip;
    return *n ? call->children + skip : NULL;
}

CuNode *cu_call_arg(const CuNode *call, int i) {
    uint32_t n;
    CuNode **args = cu_call_args(call, &n);
    return i >= 0 && (uint32_t)i < n ? cu_strip(args[i]) : NULL;
}

bool cu_launch(const CuNode *n, CuLaunch *out) {
    if (!n || n->kind != CXCursor_CallExpr) return false;
    CuNode *config = NULL;
    for (uint32_t i = 0; i < n->child_count; i++) {
        CuNode *c = n->children[i];
        if (is_push_config(cu_strip(c))) {
            config = cu_strip(c);
            break;
        }
    }
    if (!config) return false;
    memset(out, 0, sizeof *out);
    out->call = (CuNode *)n;
    out->config = config;
    out->kernel = cu_callee(n);
    /* the kernel declaration when defined in this file */
    for (uint32_t i = 0; i < n->child_count; i++) {
        CuNode *c = cu_strip(n->children[i]);
        if (c && c->kind == CXCursor_DeclRefExpr && c->ref && cu_is_kernel(c->ref)) out->kernel_decl = c->ref;
    }
    uint32_t nc;
    CuNode **cargs = cu_call_args(config, &nc);
    if (nc > 0) out->grid = cargs[0];
    if (nc > 1) out->block = cargs[1];
    if (nc > 2) out->shared_bytes = cargs[2];
    if (nc > 3) out->stream = cargs[3];
    out->args = cu_call_args(n, &out->arg_count);
    return true;
}

bool cu_is_builtin_member(const CuNode *n, const char *var, char axis) {
    n = cu_strip((CuNode *)n);
    if (!n || n->kind != CXCursor_MemberRefExpr || n->child_count < 1) return false;
    const CuNode *base = cu_strip(n->children[0]);
    if (!base || base->kind != CXCursor_DeclRefExpr || strcmp(base->name, var) != 0) return false;
    /* libclang gives these members no spelling: read the text after the dot */
    char got = n->last_char;
    return (got == 'x' || got == 'y' || got == 'z') && (axis == 0 || axis == got);
}

bool cu_int_value(const CuNode *n, long long *value) {
    if (!n) return false;
    CXEvalResult r = clang_Cursor_Evaluate(n->cursor);
    if (!r) return false;
    bool ok = clang_EvalResult_getKind(r) == CXEval_Int;
    if (ok) *value = clang_EvalResult_getAsLongLong(r);
    clang_EvalResult_dispose(r);
    return ok;
}

long long cu_type_size(const CuNode *n) {
    if (!n) return -1;
    CXType t = clang_getCursorType(n->cursor);
    long long s = clang_Type_getSizeOf(t);
    return s < 0 ? -1 : s;
}

char *cu_type_spelling(const CuNode *n) {
    CXString s = clang_getTypeSpelling(clang_getCursorType(n->cursor));
    char *copy = strdup(clang_getCString(s));
    clang_disposeString(s);
    return copy;
}

size_t cu_line_indent(const CudaSource *src, size_t offset, char *buf, size_t size) {
    const Document *doc = src->doc;
    size_t line = document_line_of(doc, offset);
    size_t i = doc->line_starts[line], n = 0;
    while (i < doc->length && (doc->text[i] == ' ' || doc->text[i] == '\t') && n + 1 < size) buf[n++] = doc->text[i++];
    if (size) buf[n] = '\0';
    return n;
}

bool cu_starts_line(const CudaSource *src, const CuNode *n) {
    const Document *doc = src->doc;
    size_t line = document_line_of(doc, n->start);
    for (size_t i = doc->line_starts[line]; i < n->start; i++)
        if (doc->text[i] != ' ' && doc->text[i] != '\t') return false;
    return true;
}

size_t cu_header_end(const CudaSource *src, const CuNode *stmt, size_t *semi1, size_t *semi2) {
    const char *text = src->doc->text;
    size_t i = stmt->start, end = stmt->end;
    if (semi1) *semi1 = 0;
    if (semi2) *semi2 = 0;
    while (i < end && text[i] != '(') i++;
    if (i >= end) return 0;
    int depth = 0, semis = 0;
    for (; i < end; i++) {
        char c = text[i];
        if (c == '(' || c == '[' || c == '{') depth++;
        else if (c == ')' || c == ']' || c == '}') {
            if (--depth == 0) return c == ')' ? i + 1 : 0;
        } else if (c == ';' && depth == 1) {
            if (semis == 0 && semi1) *semi1 = i;
            if (semis == 1 && semi2) *semi2 = i;
            semis++;
        } else if (c == '\'' || c == '"') {
            for (i++; i < end && text[i] != c; i++)
                if (text[i] == '\\') i++;
        }
    }
    return 0;
}

const CuNode *cu_guard_of(const CudaSource *src, const CuNode *parent, const CuNode *child, bool *polarity) {
    *polarity = true;
    switch (parent->kind) {
    case CXCursor_IfStmt:
    case CXCursor_SwitchStmt:
    case CXCursor_WhileStmt: {
        size_t h = cu_header_end(src, parent, NULL, NULL);
        if (!h || child->start < h) return NULL;
        const CuNode *cond = NULL;
        uint32_t branch = 0;
        for (uint32_t i = 0; i < parent->child_count; i++) {
            const CuNode *c = parent->children[i];
            if (c->start < h) cond = c;
            else {
                if (c == child) *polarity = branch == 0;
                branch++;
            }
        }
        if (parent->kind != CXCursor_IfStmt) *polarity = true;
        return cond;
    }
    case CXCursor_ForStmt: {
        size_t s1, s2, h = cu_header_end(src, parent, &s1, &s2);
        if (!h || !s1 || !s2 || child->start < h) return NULL;
        for (uint32_t i = 0; i < parent->child_count; i++) {
            const CuNode *c = parent->children[i];
            if (c->start > s1 && c->end <= s2) return c;
        }
        return NULL;
    }
    case CXCursor_DoStmt:
        if (parent->child_count == 2 && child == parent->children[0]) return parent->children[1];
        return NULL;
    case CXCursor_ConditionalOperator:
        if (parent->child_count == 3 && child != parent->children[0]) {
            *polarity = child == parent->children[1];
            return parent->children[0];
        }
        return NULL;
    case CXCursor_BinaryOperator:
        if ((parent->op == CXBinaryOperator_LAnd || parent->op == CXBinaryOperator_LOr) && parent->child_count == 2 &&
            child == parent->children[1]) {
            *polarity = parent->op == CXBinaryOperator_LAnd;
            return parent->children[0];
        }
        return NULL;
    default:
        return NULL;
    }
}

CuNode *cu_initializer(const CuNode *decl) {
    CuNode *init = NULL;
    for (uint32_t i = 0; i < decl->child_count; i++) {
        enum CXCursorKind k = decl->children[i]->kind;
        if (k != CXCursor_TypeRef && k != CXCursor_TemplateRef && k != CXCursor_NamespaceRef && clang_isExpression(k))
            init = decl->children[i];
    }
    return init;
}

CXType cu_canonical_type(const CuNode *n) {
    CXType t = clang_getCanonicalType(clang_getCursorType(n->cursor));
    return clang_getCanonicalType(clang_getNonReferenceType(t));
}

bool cu_mentions(const CuNode *n, const CuNode *decl) {
    if (!n) return false;
    if ((n->kind == CXCursor_DeclRefExpr || n->kind == CXCursor_MemberRefExpr) && n->ref == decl) return true;
    for (uint32_t i = 0; i < n->child_count; i++)
        if (cu_mentions(n->children[i], decl)) return true;
    return false;
}

bool cu_refers_to(const CuNode *n, const CuNode *decl) {
    n = cu_strip((CuNode *)n);
    return n && decl && (n->kind == CXCursor_DeclRefExpr || n->kind == CXCursor_MemberRefExpr) && n->ref == decl;
}

bool cu_is_any_builtin(const CuNode *n) {
    return cu_is_builtin_member(n, "threadIdx", 0) || cu_is_builtin_member(n, "blockIdx", 0) ||
           cu_is_builtin_member(n, "blockDim", 0) || cu_is_builtin_member(n, "gridDim", 0);
}

bool cu_is_global_index_x(CuNode *e) {
    e = cu_strip(e);
    if (!e || e->kind != CXCursor_BinaryOperator || e->op != CXBinaryOperator_Add || e->child_count != 2) return false;
    for (int k = 0; k < 2; k++) {
        CuNode *t = cu_strip(e->children[k]), *m = cu_strip(e->children[1 - k]);
        if (!cu_is_builtin_member(t, "threadIdx", 'x') || !m || m->kind != CXCursor_BinaryOperator ||
            m->op != CXBinaryOperator_Mul || m->child_count != 2)
            continue;
        CuNode *a = cu_strip(m->children[0]), *b = cu_strip(m->children[1]);
        if ((cu_is_builtin_member(a, "blockIdx", 'x') && cu_is_builtin_member(b, "blockDim", 'x')) ||
            (cu_is_builtin_member(a, "blockDim", 'x') && cu_is_builtin_member(b, "blockIdx", 'x')))
            return true;
    }
    return false;
}

bool cu_is_grid_stride_x(CuNode *e) {
    e = cu_strip(e);
    if (!e || e->kind != CXCursor_BinaryOperator || e->op != CXBinaryOperator_Mul || e->child_count != 2) return false;
    CuNode *a = cu_strip(e->children[0]), *b = cu_strip(e->children[1]);
    return (cu_is_builtin_member(a, "blockDim", 'x') && cu_is_builtin_member(b, "gridDim", 'x')) ||
           (cu_is_builtin_member(a, "gridDim", 'x') && cu_is_builtin_member(b, "blockDim", 'x'));
}

CuNode *cu_logical_parent(const CuNode *n, const CuNode **child) {
    const CuNode *c = n;
    CuNode *p = n->parent;
    while (p && (p->kind == CXCursor_UnexposedExpr || p->kind == CXCursor_ParenExpr ||
                 p->kind == CXCursor_CStyleCastExpr || p->kind == CXCursor_CXXStaticCastExpr ||
                 p->kind == CXCursor_CXXReinterpretCastExpr || p->kind == CXCursor_CXXConstCastExpr ||
                 p->kind == CXCursor_CXXFunctionalCastExpr)) {
        c = p;
        p = p->parent;
    }
    if (child) *child = c;
    return p;
}

typedef struct {
    CuMatch match;
    void *data;
    CuNode *found;
} Find;

static bool visit_find(CuNode *n, void *data) {
    Find *f = data;
    if (f->found) return false;
    if (f->match(n, f->data)) f->found = n;
    return !f->found;
}

CuNode *cu_find(const CuNode *root, CuMatch match, void *data) {
    Find f = {match, data, NULL};
    if (root) cu_walk((CuNode *)root, visit_find, &f);
    return f.found;
}

bool cu_contains(const CuNode *outer, const CuNode *inner) {
    for (const CuNode *p = inner; p; p = p->parent)
        if (p == outer) return true;
    return false;
}

const CuNode *cu_common_ancestor(const CuNode *a, const CuNode *b) {
    for (const CuNode *p = a; p; p = p->parent)
        if (cu_contains(p, b)) return p;
    return NULL;
}

bool cu_is_loop(const CuNode *n) {
    return n && (n->kind == CXCursor_ForStmt || n->kind == CXCursor_WhileStmt || n->kind == CXCursor_DoStmt ||
                 n->kind == CXCursor_CXXForRangeStmt);
}

/* the x dimension of a launch's block: a dim3 built in place or in a local variable */
static bool block_x_value(const CuNode *block, long long *value) {
    const CuNode *b = cu_strip((CuNode *)block);
    for (int hops = 0; b && hops < 8; hops++) {
        if (b->kind == CXCursor_DeclRefExpr) {
            /* a local dim3: its initializer */
            if (!b->ref || b->ref->kind != CXCursor_VarDecl) return false;
            b = cu_strip(cu_initializer(b->ref));
        } else if (b->kind == CXCursor_CallExpr && strcmp(cu_callee(b), "dim3") == 0) {
            /* dim3(x, y, z), or a copy of another dim3 */
            const CuNode *x = cu_call_arg(b, 0);
            if (!x) return false;
            if (cu_int_value(x, value)) return true;
            b = x;
        } else {
            return cu_int_value(b, value);
        }
    }
    return false;
}

typedef struct {
    const CuNode *kernel;
    long long value;
    int launches, agreeing;
} BlockSearch;

static bool visit_block_launch(CuNode *n, void *data) {
    BlockSearch *s = data;
    CuLaunch l;
    if (n->kind != CXCursor_CallExpr || !cu_launch(n, &l)) return true;
    if (l.kernel_decl != s->kernel && strcmp(l.kernel, s->kernel->name) != 0) return true;
    long long v;
    if (l.block && block_x_value(l.block, &v) && (s->launches == 0 || (s->agreeing == s->launches && v == s->value))) {
        s->value = v;
        s->agreeing++;
    }
    s->launches++;
    return true;
}

bool cu_kernel_block_x(const CudaSource *src, const CuNode *kernel, long long *value) {
    if (!src || !src->root || !kernel || !kernel->name || !*kernel->name) return false;
    BlockSearch s = {kernel, 0, 0, 0};
    cu_walk(src->root, visit_block_launch, &s);
    if (s.launches == 0 || s.agreeing != s.launches) return false;
    *value = s.value;
    return true;
}

ByteRange cu_report_range(const CuNode *n) {
    const CuNode *r = n;
    while (r->start == r->end && r->parent && r->parent->start == r->start) r = r->parent;
    return (ByteRange){r->start, r->end};
}

void cu_snippet(const CudaSource *src, const CuNode *n, char *buf, size_t size) {
    if (!size) return;
    size_t len = n ? cu_text_len(n) : 0, w = 0;
    const char *text = n ? cu_text(src, n) : "";
    for (size_t i = 0; i < len && w + 4 < size; i++) {
        char c = text[i];
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
        if (c == ' ' && w > 0 && buf[w - 1] == ' ') continue;
        buf[w++] = c;
    }
    if (len > 0 && w + 4 >= size) {
        memcpy(buf + w, "...", 3);
        w += 3;
    }
    buf[w] = '\0';
}

const CuNode *cu_plain_parent(const CuNode *n) {
    const CuNode *p = n ? n->parent : NULL;
    while (p && (p->kind == CXCursor_UnexposedExpr || p->kind == CXCursor_ParenExpr) && p->child_count == 1)
        p = p->parent;
    return p;
}
