/* Host buffers in CUDA host code (cuda_host_buffer.h). */
#include "analysis/cuda/cuda_host_buffer.h"

#include <string.h>

bool cu_is_std_vector(const CuNode *n) {
    if (!n) return false;
    CXType t = cu_canonical_type(n);
    CXString s = clang_getTypeSpelling(t);
    const char *u = clang_getCString(s);
    if (strncmp(u, "const ", 6) == 0) u += 6;
    bool yes = strncmp(u, "std::vector<", 12) == 0 || strncmp(u, "std::__1::vector<", 17) == 0;
    clang_disposeString(s);
    if (!yes || clang_Type_getNumTemplateArguments(t) != 2) return false;
    CXString a = clang_getTypeSpelling(clang_getCanonicalType(clang_Type_getTemplateArgumentAsType(t, 1)));
    const char *v = clang_getCString(a);
    yes = strncmp(v, "std::allocator<", 15) == 0 || strncmp(v, "std::__1::allocator<", 20) == 0;
    clang_disposeString(a);
    return yes;
}

CuNode *cu_member_call_object(const CuNode *call, const char **method) {
    if (!call || call->kind != CXCursor_CallExpr || call->child_count == 0) return NULL;
    *method = cu_callee(call);
    CuNode *first = cu_strip(call->children[0]);
    if (first && first->kind == CXCursor_MemberRefExpr && first->child_count >= 1) return first->children[0];
    if (strncmp(*method, "operator", 8) == 0 && call->child_count >= 2) return call->children[0];
    return NULL;
}

bool cu_is_vector_or_array(const CuNode *n) {
    if (!n) return false;
    CXType t = cu_canonical_type(n);
    CXString s = clang_getTypeSpelling(t);
    const char *u = clang_getCString(s);
    if (strncmp(u, "const ", 6) == 0) u += 6;
    bool yes = strncmp(u, "std::vector<", 12) == 0 || strncmp(u, "std::__1::vector<", 17) == 0 ||
               strncmp(u, "std::array<", 11) == 0;
    clang_disposeString(s);
    return yes;
}

static CuNode *buffer_reference(CuNode *e, unsigned forms, int depth);

/* `&x`, `&v[i]`, `&v.front()`, `&v.at(i)`, `&p[k]` */
static CuNode *address_reference(CuNode *x, unsigned forms, int depth) {
    if (!x) return NULL;
    if (x->kind == CXCursor_ArraySubscriptExpr && x->child_count == 2)
        return buffer_reference(x->children[0], forms, depth + 1);
    if ((forms & CU_BUFFER_ADDRESS) && (x->kind == CXCursor_DeclRefExpr || x->kind == CXCursor_MemberRefExpr))
        return x->ref ? x : NULL;
    if ((forms & CU_BUFFER_CONTAINER) && x->kind == CXCursor_CallExpr) {
        const char *method;
        CuNode *obj = cu_member_call_object(x, &method);
        if (obj && (strcmp(method, "operator[]") == 0 || strcmp(method, "front") == 0 || strcmp(method, "at") == 0))
            return buffer_reference(obj, forms, depth + 1);
    }
    return NULL;
}

/* `v.data()`, `v.begin()`, `p.get()` */
static CuNode *call_reference(CuNode *e, unsigned forms, int depth) {
    if (forms & CU_BUFFER_CONTAINER) {
        const char *method;
        CuNode *obj = cu_member_call_object(e, &method);
        static const char *const views[] = {"data", "begin", "end", "cbegin", "cend", NULL};
        if (obj && cu_name_in(method, views) && cu_is_vector_or_array(obj))
            return buffer_reference(obj, forms, depth + 1);
    }
    if ((forms & CU_BUFFER_DATA_GET) && e->child_count > 0) {
        CuNode *m = cu_strip(e->children[0]);
        const char *name = cu_callee(e);
        if (m && m->kind == CXCursor_MemberRefExpr && m->child_count == 1 &&
            (strcmp(name, "data") == 0 || strcmp(name, "get") == 0))
            return buffer_reference(m->children[0], forms, depth + 1);
    }
    return NULL;
}

static CuNode *buffer_reference(CuNode *e, unsigned forms, int depth) {
    e = cu_strip(e);
    if (!e || depth > 8) return NULL;
    switch (e->kind) {
    case CXCursor_DeclRefExpr:
    case CXCursor_MemberRefExpr: return e->ref ? e : NULL;
    case CXCursor_BinaryOperator:
        if ((e->op == CXBinaryOperator_Add || e->op == CXBinaryOperator_Sub) && e->child_count == 2) {
            CuNode *l = cu_strip(e->children[0]);
            enum CXTypeKind k = l ? cu_canonical_type(l).kind : CXType_Invalid;
            if (k == CXType_Pointer || k == CXType_ConstantArray || k == CXType_IncompleteArray)
                return buffer_reference(l, forms, depth + 1);
            if (e->op == CXBinaryOperator_Add) return buffer_reference(e->children[1], forms, depth + 1);
        }
        return NULL;
    case CXCursor_UnaryOperator:
        if (e->op == CXUnaryOperator_AddrOf && e->child_count == 1)
            return address_reference(cu_strip(e->children[0]), forms, depth);
        return NULL;
    case CXCursor_CallExpr: return call_reference(e, forms, depth);
    default: return NULL;
    }
}

CuNode *cu_buffer_reference(CuNode *expr, unsigned forms) { return buffer_reference(expr, forms, 0); }

/* the variable a vector-typed object expression names */
static CuNode *vector_variable(CuNode *obj) {
    obj = cu_strip(obj);
    if (!obj || obj->kind != CXCursor_DeclRefExpr || !obj->ref || !cu_is_std_vector(obj)) return NULL;
    return obj->ref;
}

CuNode *cu_vector_of_pointer(CuNode *expr) {
    CuNode *e = cu_strip(expr);
    if (!e) return NULL;
    const char *method;
    if (e->kind == CXCursor_CallExpr) {
        CuNode *obj = cu_member_call_object(e, &method);
        return obj && strcmp(method, "data") == 0 ? vector_variable(obj) : NULL;
    }
    if (e->kind == CXCursor_BinaryOperator && (e->op == CXBinaryOperator_Add || e->op == CXBinaryOperator_Sub) &&
        e->child_count == 2) {
        CuNode *left = cu_strip(e->children[0]), *right = cu_strip(e->children[1]);
        CXType lt = left ? clang_getCanonicalType(clang_getCursorType(left->cursor)) : (CXType){0};
        if (left && lt.kind == CXType_Pointer) return cu_vector_of_pointer(left);
        if (e->op == CXBinaryOperator_Add && right) return cu_vector_of_pointer(right);
        return NULL;
    }
    if (e->kind == CXCursor_UnaryOperator && e->op == CXUnaryOperator_AddrOf && e->child_count == 1) {
        CuNode *x = cu_strip(e->children[0]);
        CuNode *obj = x ? cu_member_call_object(x, &method) : NULL;
        if (obj && (strcmp(method, "operator[]") == 0 || strcmp(method, "front") == 0 || strcmp(method, "at") == 0))
            return vector_variable(obj);
    }
    return NULL;
}

/* --- cudaHostRegister ---------------------------------------------------- */

static bool contains_call(const CuNode *n, const char *name, int depth) {
    if (!n || depth > 200) return false;
    if (cu_is_call(n, name)) return true;
    for (uint32_t i = 0; i < n->child_count; i++)
        if (contains_call(n->children[i], name, depth + 1)) return true;
    return false;
}

typedef struct {
    const CuNode *decl;
    bool found;
} RegisterSearch;

static bool visit_register(CuNode *n, void *data) {
    RegisterSearch *s = data;
    if (s->found) return false;
    if (n->kind != CXCursor_CallExpr) return true;
    uint32_t count;
    CuNode **args = cu_call_args(n, &count);
    if (cu_is_call(n, "cudaHostRegister")) {
        if (count >= 1 && cu_mentions(args[0], s->decl)) s->found = true;
        return !s->found;
    }
    /* a helper of this file that receives the pointer and registers it */
    CuNode *body = cu_is_function(n->ref) ? cu_function_body(n->ref) : NULL;
    if (body && contains_call(body, "cudaHostRegister", 0))
        for (uint32_t i = 0; i < count; i++)
            if (cu_mentions(args[i], s->decl)) s->found = true;
    return !s->found;
}

bool cu_is_host_registered(CuNode *root, const CuNode *decl) {
    RegisterSearch s = {decl, false};
    cu_walk(root, visit_register, &s);
    return s.found;
}

/* --- copies ---------------------------------------------------------------- */

typedef struct {
    const char *name;
    int dst, src, kind;         /* argument positions; -1: none */
    CuCopyDirection by_default; /* when the kind argument is left out */
} CopyApi;

static const CopyApi copy_apis[] = {
    {"cudaMemcpy", 0, 1, 3, CU_COPY_OTHER},
    {"cudaMemcpyAsync", 0, 1, 3, CU_COPY_OTHER},
    {"cudaMemcpy2D", 0, 2, 6, CU_COPY_OTHER},
    {"cudaMemcpy2DAsync", 0, 2, 6, CU_COPY_OTHER},
    {"cudaMemcpyToSymbol", -1, 1, 4, CU_COPY_TO_DEVICE},
    {"cudaMemcpyToSymbolAsync", -1, 1, 4, CU_COPY_TO_DEVICE},
    {"cudaMemcpyFromSymbol", 0, -1, 4, CU_COPY_TO_HOST},
    {"cudaMemcpyFromSymbolAsync", 0, -1, 4, CU_COPY_TO_HOST},
};

CuCopyDirection cu_copy_host_argument(const CuNode *call, CuNode **host) {
    *host = NULL;
    if (!call || call->kind != CXCursor_CallExpr) return CU_COPY_OTHER;
    const char *callee = cu_callee(call);
    const CopyApi *api = NULL;
    for (size_t i = 0; i < sizeof copy_apis / sizeof *copy_apis && !api; i++)
        if (strcmp(callee, copy_apis[i].name) == 0) api = &copy_apis[i];
    if (!api) return CU_COPY_OTHER;
    uint32_t count;
    cu_call_args(call, &count);
    CuCopyDirection dir = api->by_default;
    if ((uint32_t)api->kind < count) {
        CuNode *k = cu_call_arg(call, api->kind);
        dir = CU_COPY_OTHER;
        if (k && k->kind == CXCursor_DeclRefExpr && k->ref_name) {
            if (strcmp(k->ref_name, "cudaMemcpyHostToDevice") == 0) dir = CU_COPY_TO_DEVICE;
            else if (strcmp(k->ref_name, "cudaMemcpyDeviceToHost") == 0) dir = CU_COPY_TO_HOST;
        }
    }
    int pos = dir == CU_COPY_TO_DEVICE ? api->src : dir == CU_COPY_TO_HOST ? api->dst : -1;
    if (pos < 0 || !(*host = cu_call_arg(call, pos))) return CU_COPY_OTHER;
    return dir;
}

/* --- a vector's storage stays put ----------------------------------------- */

/* methods that neither reallocate nor hand out the vector itself */
static const char *const reading_methods[] = {"data",   "size",  "empty", "capacity", "operator[]", "at",
                                              "front",  "back",  "begin", "end",      "cbegin",     "cend",
                                              "rbegin", "rend",  "crbegin", "crend", NULL};

/* The vector is passed to a function whose parameter at that position is a
 * const reference or a value (a copy). */
static bool passed_read_only(const CuNode *call, const CuNode *arg) {
    uint32_t count;
    CuNode **args = cu_call_args(call, &count);
    int pos = -1;
    for (uint32_t i = 0; i < count; i++)
        if (args[i] == arg || cu_strip(args[i]) == cu_strip((CuNode *)arg)) pos = (int)i;
    if (pos < 0) return false;
    CXCursor fn = clang_getCursorReferenced(call->cursor);
    if (clang_Cursor_isNull(fn) || clang_Cursor_getNumArguments(fn) <= pos) return false;
    /* canonical: a reference spelled through a typedef or alias is still one */
    CXType t = clang_getCanonicalType(clang_getCursorType(clang_Cursor_getArgument(fn, (unsigned)pos)));
    if (t.kind == CXType_LValueReference) return clang_isConstQualifiedType(clang_getPointeeType(t));
    return t.kind != CXType_RValueReference && t.kind != CXType_Pointer && t.kind != CXType_Invalid;
}

/* a use of the vector (a DeclRefExpr naming it) that cannot move its storage */
static bool use_reads(const CuNode *use) {
    const CuNode *child;
    CuNode *p = cu_logical_parent(use, &child);
    if (!p) return false;
    if (p->kind == CXCursor_CXXForRangeStmt) return true;
    const char *method;
    if (p->kind == CXCursor_MemberRefExpr) {
        CuNode *call = cu_logical_parent(p, NULL);
        return call && call->kind == CXCursor_CallExpr && cu_member_call_object(call, &method) &&
               cu_name_in(method, reading_methods);
    }
    if (p->kind == CXCursor_CallExpr) {
        CuNode *obj = cu_member_call_object(p, &method);
        if (obj && cu_strip(obj) == use) return cu_name_in(method, reading_methods);
        return passed_read_only(p, child);
    }
    return false;
}

typedef struct {
    const CuNode *decl;
    const char *why;
} StorageSearch;

static bool visit_storage(CuNode *n, void *data) {
    StorageSearch *s = data;
    if (s->why) return false;
    if (n->kind == CXCursor_DeclRefExpr && n->ref == s->decl && !use_reads(n))
        s->why = "the vector is used in a way that may reallocate or hand out its storage";
    return true;
}

bool cu_vector_storage_fixed(const CuNode *decl, const char **why) {
    *why = NULL;
    if (!decl || decl->kind != CXCursor_VarDecl || !cu_is_std_vector(decl)) {
        *why = "not a std::vector variable";
        return false;
    }
    CXType type = clang_getCanonicalType(clang_getCursorType(decl->cursor));
    if (type.kind == CXType_LValueReference || type.kind == CXType_RValueReference) {
        *why = "a reference: the vector it names is owned elsewhere";
        return false;
    }
    if (clang_isConstQualifiedType(type)) {
        *why = "a const vector: its data() is not a pointer cudaHostRegister takes";
        return false;
    }
    enum CX_StorageClass storage = clang_Cursor_getStorageClass(decl->cursor);
    if (storage == CX_SC_Static || storage == CX_SC_Extern) {
        *why = "the vector outlives its function";
        return false;
    }
    CuNode *stmt = decl->parent, *fn = cu_function_of(decl);
    CuNode *body = fn && fn->child_count ? fn->children[fn->child_count - 1] : NULL;
    if (!fn || fn->kind == CXCursor_LambdaExpr || cu_is_device_code(fn) || !body ||
        body->kind != CXCursor_CompoundStmt || !stmt || stmt->kind != CXCursor_DeclStmt || stmt->parent != body) {
        *why = "the vector is not declared at the top level of a host function";
        return false;
    }
    StorageSearch s = {decl, NULL};
    cu_walk(body, visit_storage, &s);
    *why = s.why;
    return s.why == NULL;
}
