#include "analysis/cuda/cuda_index.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"
#include "analysis/cuda/cuda_query.h"
#include "analysis/cuda/cuda_record.h"

/* ---- the function's assignments, gathered once ----------------------------- */

typedef enum { DEF_ASSIGN, DEF_COMPOUND, DEF_ADDRESS, DEF_STEP } DefKind;

typedef struct {
    const CuNode *decl;
    DefKind kind;
    int op;            /* DEF_COMPOUND: the operator */
    const CuNode *rhs; /* DEF_ASSIGN, DEF_COMPOUND */
    const CuNode *at;  /* the assignment, step or address-of */
} Def;

/* what threads a value depends on: bits of threadIdx axes, per thread or
 * only per warp, and blockIdx */
enum { DEP_X = 1, DEP_Y = 2, DEP_Z = 4, DEP_XYZ = 7 };

typedef struct {
    unsigned thread; /* axes that can differ between the lanes of a warp */
    unsigned warp;   /* axes that differ only between warps */
    bool block;
} Dep;

typedef struct {
    const CuNode *decl;
    /* dependence */
    bool dep_done;
    Dep dep;
    /* lane coefficient */
    CuLane lane;
    bool pointer;
    bool global; /* pointer: rooted in a parameter of the function */
    bool busy;
    bool done;
    /* an object built in place: is every use of it a read of a field or a const method call? */
    bool uses_checked;
    bool uses_read_only;
} VarEntry;

/* what obj.member depends on, once asked (member_dep) */
enum { MEMBER_NAME = 64 };

typedef struct {
    const CuNode *obj;
    char member[MEMBER_NAME];
    bool ok; /* false: follow the whole object */
    Dep dep;
    bool busy;  /* being computed: a question about it now is a cycle */
    bool final; /* no cycle was cut while it was computed: the answer can be kept */
} MemberSlot;

struct CuIndex {
    const CudaSource *src;
    const CuNode *fn;
    Def *defs;
    size_t def_count, def_cap;
    bool defs_ready;
    VarEntry *vars;
    size_t var_count, var_cap;
    const CuNode *dep_stack[16];
    int dep_depth;
    int dep_cuts; /* cycles cut while computing: results below the top are not cached */
    unsigned long cuts_total; /* every cycle cut, never reset: member_dep's answers check it */
    int depth;
    bool warp_rows; /* blockDim.x is a multiple of 32: threadIdx.y/z are the same across a warp */
    MemberSlot *members;
    size_t member_count, member_cap;
};

/* the text of a node without whitespace and outer parentheses, for comparing expressions */
static void squeeze(const CudaSource *src, const CuNode *n, char *out, size_t size) {
    out[0] = '\0';
    if (!n || !size) return;
    const char *t = cu_text(src, n);
    size_t len = cu_text_len(n), w = 0;
    while (len >= 2 && t[0] == '(' && t[len - 1] == ')') {
        /* only a pair that encloses the whole text: not `(a) + (b)` */
        int depth = 0;
        size_t i = 0;
        for (; i + 1 < len; i++) {
            depth += t[i] == '(' ? 1 : t[i] == ')' ? -1 : 0;
            if (depth == 0) break;
        }
        if (i + 1 < len) break;
        t++;
        len -= 2;
    }
    for (size_t i = 0; i < len && w + 1 < size; i++)
        if (!isspace((unsigned char)t[i])) out[w++] = t[i];
    out[w] = '\0';
}

static const CuLane lane_zero = {CU_LANE_ZERO, 0, {0}, 0, NULL};
static const CuLane lane_unknown = {CU_LANE_UNKNOWN, 0, {0}, 0, NULL};

CuIndex *cu_index_new(const CudaSource *src, const CuNode *fn) {
    CuIndex *ix = calloc(1, sizeof *ix);
    if (!ix) return NULL;
    ix->src = src;
    ix->fn = fn;
    return ix;
}

void cu_index_free(CuIndex *ix) {
    if (!ix) return;
    free(ix->defs);
    free(ix->vars);
    free(ix->members);
    free(ix);
}

const CuNode *cu_index_function(const CuIndex *ix) { return ix ? ix->fn : NULL; }

void cu_index_assume_block_x(CuIndex *ix, long long block_x) {
    if (!ix) return;
    ix->warp_rows = block_x > 0 && block_x % 32 == 0;
    /* cached answers were computed without it */
    for (size_t i = 0; i < ix->var_count; i++) ix->vars[i].dep_done = false;
    ix->member_count = 0;
}

static bool is_inc_dec(int op) {
    return op == CXUnaryOperator_PostInc || op == CXUnaryOperator_PostDec || op == CXUnaryOperator_PreInc ||
           op == CXUnaryOperator_PreDec;
}

static const CuNode *local_ref(const CuNode *n) {
    n = cu_strip((CuNode *)n);
    return n && n->kind == CXCursor_DeclRefExpr && n->ref && n->ref->kind == CXCursor_VarDecl ? n->ref : NULL;
}

static void add_def(CuIndex *ix, const CuNode *decl, DefKind kind, int op, const CuNode *rhs, const CuNode *at) {
    if (!array_reserve(&ix->defs, ix->def_count, &ix->def_cap, sizeof *ix->defs, 32)) return;
    ix->defs[ix->def_count++] = (Def){decl, kind, op, rhs, at};
}

static bool visit_defs(CuNode *n, void *data) {
    CuIndex *ix = data;
    if ((n->kind == CXCursor_BinaryOperator && n->op == CXBinaryOperator_Assign) ||
        n->kind == CXCursor_CompoundAssignOperator) {
        const CuNode *decl = n->child_count == 2 ? local_ref(n->children[0]) : NULL;
        if (decl)
            add_def(ix, decl, n->kind == CXCursor_CompoundAssignOperator ? DEF_COMPOUND : DEF_ASSIGN, n->op,
                    n->children[1], n);
    } else if (n->kind == CXCursor_UnaryOperator && n->child_count == 1 &&
               (is_inc_dec(n->op) || n->op == CXUnaryOperator_AddrOf)) {
        const CuNode *decl = local_ref(n->children[0]);
        if (decl) add_def(ix, decl, n->op == CXUnaryOperator_AddrOf ? DEF_ADDRESS : DEF_STEP, n->op, NULL, n);
    }
    return true;
}

static void gather_defs(CuIndex *ix) {
    if (ix->defs_ready) return;
    ix->defs_ready = true;
    if (ix->fn) cu_walk((CuNode *)ix->fn, visit_defs, ix);
}

static VarEntry *var_entry(CuIndex *ix, const CuNode *decl) {
    for (size_t i = 0; i < ix->var_count; i++)
        if (ix->vars[i].decl == decl) return &ix->vars[i];
    if (!array_reserve(&ix->vars, ix->var_count, &ix->var_cap, sizeof *ix->vars, 16)) return NULL;
    VarEntry *e = &ix->vars[ix->var_count++];
    memset(e, 0, sizeof *e);
    e->decl = decl;
    return e;
}

/* a variable of this function (not a parameter, a global or a __shared__ variable) */
static bool is_local(const CuIndex *ix, const CuNode *decl) {
    return ix->fn && decl && decl->kind == CXCursor_VarDecl && !(decl->attrs & CU_ATTR_SHARED) &&
           cu_function_of(decl) == ix->fn;
}

/* ---- cooperative groups ------------------------------------------------------ */

typedef enum { GROUP_UNKNOWN, GROUP_BLOCK, GROUP_GRID, GROUP_TILE } GroupKind;

/* the kind of a cooperative group from its type's spelling; *tile gets a
 * thread_block_tile's size (0 when unknown) */
static GroupKind group_kind(const CuNode *object, long long *tile) {
    *tile = 0;
    if (!object) return GROUP_UNKNOWN;
    char *type = cu_type_spelling(object);
    if (!type) return GROUP_UNKNOWN;
    GroupKind kind = GROUP_UNKNOWN;
    const char *t = strstr(type, "thread_block_tile<");
    if (t) {
        kind = GROUP_TILE;
        *tile = strtoll(t + strlen("thread_block_tile<"), NULL, 10);
    } else if (strstr(type, "grid_group")) {
        kind = GROUP_GRID;
    } else if (strstr(type, "thread_block")) {
        kind = GROUP_BLOCK;
    }
    free(type);
    return kind;
}

/* the object of a member call `obj.f()` (stripped), NULL when it is not one */
static const CuNode *member_call_object(const CuNode *call) {
    if (!call || call->kind != CXCursor_CallExpr || call->child_count == 0) return NULL;
    const CuNode *callee = cu_strip(call->children[0]);
    if (!callee || callee->kind != CXCursor_MemberRefExpr || callee->child_count != 1) return NULL;
    return cu_strip(callee->children[0]);
}

static const char *const rank_calls[] = {"thread_rank", "thread_index", NULL};
static const char *const group_size_calls[] = {"num_threads", "size",       "meta_group_size", "dim_threads",
                                               "group_dim",   "dim_blocks", "num_blocks",      "group_index",
                                               "block_index", "block_rank", NULL};
/* results that are the same in every thread of the block */
static const char *const block_uniform_calls[] = {"__syncthreads_count", "__syncthreads_and", "__syncthreads_or",
                                                  NULL};
/* results that are the same in every lane of the warp */
static const char *const warp_uniform_calls[] = {"__ballot_sync",     "__any_sync",        "__all_sync",
                                                 "__activemask",      "__reduce_add_sync", "__reduce_min_sync",
                                                 "__reduce_max_sync", "__reduce_and_sync", "__reduce_or_sync",
                                                 "__reduce_xor_sync", "__ballot",          "__any",
                                                 "__all",             NULL};

/* ---- dependence ---------------------------------------------------------------- */

static Dep dep_join(Dep a, Dep b) { return (Dep){a.thread | b.thread, a.warp | b.warp, a.block || b.block}; }

static Dep dep_to_warp(Dep a) { return (Dep){0, a.warp | a.thread, a.block}; }

static unsigned axis_bit(char axis) { return axis == 'x' ? DEP_X : axis == 'y' ? DEP_Y : axis == 'z' ? DEP_Z : 0; }

static Dep expr_dep(CuIndex *ix, const CuNode *n);
static CuLane lane_of(CuIndex *ix, const CuNode *n);

static bool const_value(const CuNode *n, long long *v) {
    n = cu_strip((CuNode *)n);
    if (!n) return false;
    if (n->kind == CXCursor_DeclRefExpr && n->ref_name && strcmp(n->ref_name, "warpSize") == 0) {
        *v = 32;
        return true;
    }
    return cu_int_value(n, v);
}

/* e / d or e >> k with e the thread's linear index (lane coefficient 1) and
 * d a multiple of 32: the warp's index */
static bool is_warp_index(CuIndex *ix, const CuNode *n) {
    if (n->kind != CXCursor_BinaryOperator || n->child_count != 2) return false;
    long long v;
    if (!const_value(n->children[1], &v)) return false;
    if (n->op == CXBinaryOperator_Div) {
        if (v <= 0 || v % 32 != 0) return false;
    } else if (n->op == CXBinaryOperator_Shr) {
        if (v < 5 || v > 30) return false;
    } else {
        return false;
    }
    CuLane l = lane_of(ix, n->children[0]);
    return l.kind == CU_LANE_CONST && l.c == 1;
}

static Dep var_dep(CuIndex *ix, const CuNode *decl) {
    Dep none = {0, 0, false};
    if (!is_local(ix, decl)) return none;
    VarEntry *e = var_entry(ix, decl);
    if (e && e->dep_done) return e->dep;
    for (int i = 0; i < ix->dep_depth; i++)
        if (ix->dep_stack[i] == decl) {
            ix->dep_cuts++;
            ix->cuts_total++;
            return none; /* a cycle: i = i + 1 */
        }
    if (ix->dep_depth >= 16) {
        ix->dep_cuts++;
        ix->cuts_total++;
        return none;
    }
    gather_defs(ix);
    int cuts = ix->dep_cuts;
    ix->dep_stack[ix->dep_depth++] = decl;
    Dep d = none;
    const CuNode *init = cu_initializer(decl);
    if (init) d = expr_dep(ix, init);
    for (size_t i = 0; i < ix->def_count; i++) {
        const Def *def = &ix->defs[i];
        if (def->decl == decl && (def->kind == DEF_ASSIGN || def->kind == DEF_COMPOUND))
            d = dep_join(d, expr_dep(ix, def->rhs));
    }
    ix->dep_depth--;
    /* cache what no cycle cut short, and anything at the top */
    if (ix->dep_depth == 0 || ix->dep_cuts == cuts) {
        e = var_entry(ix, decl); /* the table may have moved */
        if (e) {
            e->dep_done = true;
            e->dep = d;
        }
    }
    if (ix->dep_depth == 0) ix->dep_cuts = 0;
    return d;
}

/* ---- objects built in place ------------------------------------------------- */

/* a variable initialized from a member's value holds a copy: its type is
 * known and no reference (not `auto &r(obj.len)` or `decltype(auto)`) */
static bool copies_value(const CuNode *var) {
    CXType t = clang_getCanonicalType(clang_getCursorType(var->cursor));
    return (t.kind >= CXType_FirstBuiltin && t.kind <= CXType_LastBuiltin) || t.kind == CXType_Enum ||
           t.kind == CXType_Pointer;
}

/* where a scalar member expression stands: only where its value is read.
 * Inside a template libclang shows no implicit conversion on a dependent
 * expression, so the parent's kind and the member's place in it decide;
 * anything else (an assignment's left side, a step, `&`, a call's argument,
 * a returned reference, a branch of `?:` used as an lvalue) is not a read. */
static bool read_position(const CuNode *m) {
    const CuNode *p = m->parent;
    if (!p) return false;
    bool first = p->child_count >= 1 && p->children[0] == m;
    bool second = p->child_count == 2 && p->children[1] == m;
    switch (p->kind) {
    case CXCursor_UnexposedExpr: /* an implicit conversion, or a one-value initializer list */
        if (p->child_count != 1) return false;
        if (p->parent && p->parent->kind == CXCursor_VarDecl) return copies_value(p->parent);
        return true;
    case CXCursor_ParenExpr:
        return read_position(p);
    case CXCursor_BinaryOperator:
        return p->op != CXBinaryOperator_Assign || second;
    case CXCursor_CompoundAssignOperator:
        return second;
    case CXCursor_UnaryOperator:
        return !is_inc_dec(p->op) && p->op != CXUnaryOperator_AddrOf;
    case CXCursor_ArraySubscriptExpr:
        return second;
    case CXCursor_IfStmt:
    case CXCursor_WhileStmt:
    case CXCursor_DoStmt:
    case CXCursor_SwitchStmt:
        return true;
    case CXCursor_ConditionalOperator: /* its condition is read; a branch is what the whole is */
        return first || read_position(p);
    case CXCursor_VarDecl:
        return copies_value(p);
    case CXCursor_CallExpr: { /* `a - obj.len` on a dependent type: an operator call that only reads */
        bool writes;
        return cu_record_operator_call(p->cursor, &writes) && !writes;
    }
    default:
        return false;
    }
}

/* the name of the member a member expression names: libclang's spelling, or
 * in a template, where a member of a dependent type has none, the text after
 * the last `.` or `->` */
static bool member_name(const CudaSource *src, const CuNode *m, char *out, size_t size) {
    out[0] = '\0';
    if (m->name && *m->name) {
        if (strlen(m->name) >= size) return false;
        strcpy(out, m->name);
        return true;
    }
    const char *t = cu_text(src, m);
    size_t len = cu_text_len(m), from = len;
    while (from > 0 && (isalnum((unsigned char)t[from - 1]) || t[from - 1] == '_')) from--;
    if (from == len || from == 0 || (t[from - 1] != '.' && t[from - 1] != '>') || len - from >= size) return false;
    memcpy(out, t + from, len - from);
    out[len - from] = '\0';
    return !isdigit((unsigned char)out[0]);
}

/* the record that describes obj's type (cuda_record.h) */
static CXCursor object_record(const CuNode *obj) {
    CXCursor template_ref = clang_getNullCursor();
    for (uint32_t i = 0; i < obj->child_count && clang_Cursor_isNull(template_ref); i++)
        if (obj->children[i]->kind == CXCursor_TemplateRef) template_ref = obj->children[i]->cursor;
    return cu_record_of_variable(obj->cursor, template_ref);
}

typedef struct {
    CXCursor items[CU_RECORD_MAX_CTORS];
    int count;
    bool field;
} Members;

/* the field, or the const methods, that the member expression m names in record */
static bool resolve_member(const CudaSource *src, const CuNode *m, CXCursor record, Members *out) {
    char name[MEMBER_NAME];
    out->count = 0;
    if (!member_name(src, m, name, sizeof name)) return false;
    out->count = cu_record_members_named(record, name, out->items, CU_RECORD_MAX_CTORS, &out->field);
    if (out->field && !cu_record_scalar_field(out->items[0])) out->count = 0; /* an array or a record: changed in part */
    for (int i = 0; i < out->count && !out->field; i++)
        if (!cu_record_method_reads_only(out->items[i])) out->count = 0;
    return out->count > 0;
}

typedef struct {
    const CuNode *obj; /* NULL once a use was found that is not a read */
    CXCursor record;
    const CudaSource *src;
} UseCheck;

/* every use of obj in the function reads one of its fields or calls one of
 * its const methods: nothing after the construction changes it */
static bool visit_object_uses(CuNode *n, void *data) {
    UseCheck *check = data;
    if (!check->obj) return false;
    if (n->kind != CXCursor_DeclRefExpr || n->ref != check->obj) return true;
    const CuNode *q = n;
    while (q->parent && (q->parent->kind == CXCursor_UnexposedExpr || q->parent->kind == CXCursor_ParenExpr) &&
           q->parent->child_count == 1)
        q = q->parent;
    const CuNode *m = q->parent;
    Members members;
    bool ok = m && m->kind == CXCursor_MemberRefExpr && m->child_count == 1 && m->children[0] == q &&
              resolve_member(check->src, m, check->record, &members);
    if (ok && members.field)
        ok = read_position(m);
    else if (ok)
        ok = m->parent && m->parent->kind == CXCursor_CallExpr && m->parent->child_count >= 1 &&
             m->parent->children[0] == m;
    if (!ok) check->obj = NULL; /* stops the walk */
    return ok;
}

static bool uses_read_only(CuIndex *ix, const CuNode *obj, CXCursor record) {
    VarEntry *e = var_entry(ix, obj);
    if (e && e->uses_checked) return e->uses_read_only;
    /* a mutable field can change under a const method, or in a const object */
    UseCheck check = {cu_record_has_mutable_field(record) ? NULL : obj, record, ix->src};
    /* a const object keeps what its constructor gave it, wherever it is
     * passed; otherwise every use must be a read here */
    bool constant = clang_isConstQualifiedType(clang_getCursorType(obj->cursor));
    if (ix->fn && check.obj && !constant) cu_walk((CuNode *)ix->fn, visit_object_uses, &check);
    e = var_entry(ix, obj);
    if (e) {
        e->uses_checked = true;
        e->uses_read_only = check.obj != NULL;
    }
    return check.obj != NULL;
}

/* obj's construction in place: `T obj(args)` (a constructor call, or, in a
 * template, the argument list clang keeps unresolved) or `T obj;`. *ctor
 * gets the constructor when clang resolved it, else a null cursor. */
static bool construction(const CudaSource *src, const CuNode *obj, CuNode ***args, uint32_t *nargs, CXCursor *ctor) {
    *ctor = clang_getNullCursor();
    *args = NULL;
    *nargs = 0;
    CuNode *init = cu_initializer(obj);
    if (!init) return true; /* the default constructor */
    CXCursor called = clang_getCursorReferenced(init->cursor);
    enum CXCursorKind k = clang_getCursorKind(called);
    if (init->kind == CXCursor_CallExpr &&
        (k == CXCursor_Constructor ||
         (k == CXCursor_FunctionTemplate && clang_getTemplateCursorKind(called) == CXCursor_Constructor))) {
        int declared = clang_Cursor_getNumArguments(init->cursor);
        if (declared >= 0 && (uint32_t)declared != init->child_count) return false;
        *ctor = called;
    } else if (init->kind == CXCursor_UnexposedExpr && !(init->name && *init->name) && init->start < init->end &&
               cu_text(src, init)[0] == '(') {
        /* `T obj(a, b)` in a template: the parenthesized arguments */
    } else {
        return false; /* `T obj = other`, `T obj{...}`, `T obj = make()`: not followed */
    }
    *args = init->children;
    *nargs = init->child_count;
    return true;
}

static Dep record_dep_to_dep(CuIndex *ix, CuRecordDep r, CuNode **args, uint32_t nargs) {
    Dep d = {r.thread_index ? DEP_XYZ : 0, 0, r.block_index};
    for (uint32_t i = 0; i < nargs && i < 64; i++)
        if (r.params & (1ull << i)) d = dep_join(d, expr_dep(ix, args[i]));
    return d;
}

/* obj.field, or the callee obj.method of a const method call, where obj is
 * a local built in place and never changed after: what the construction's
 * arguments that reach that field (or the fields the method reads) depend
 * on, through the record's constructor (cuda_record.h). False when that
 * cannot be followed: the caller then takes the whole object's dependence. */
static bool member_dep(CuIndex *ix, const CuNode *m, Dep *out) {
    if (m->child_count != 1) return false;
    const CuNode *base = cu_strip(m->children[0]);
    const CuNode *obj = base && base->kind == CXCursor_DeclRefExpr ? base->ref : NULL;
    char name[MEMBER_NAME];
    if (!obj || !is_local(ix, obj) || !member_name(ix->src, m, name, sizeof name)) return false;
    size_t slot = ix->member_count;
    for (size_t i = 0; i < ix->member_count; i++)
        if (ix->members[i].obj == obj && strcmp(ix->members[i].member, name) == 0) {
            if (ix->members[i].busy) {
                /* `T obj(obj.len)`, or a cycle through locals: the whole object
                 * answers here, and what depends on this is not kept */
                ix->cuts_total++;
                return false;
            }
            if (ix->members[i].final) {
                *out = ix->members[i].dep;
                return ix->members[i].ok;
            }
            slot = i; /* computed under a cut cycle before: again */
        }
    Dep d = {0, 0, false};
    if (slot == ix->member_count) {
        if (!array_reserve(&ix->members, ix->member_count, &ix->member_cap, sizeof *ix->members, 8)) return false;
        ix->member_count++;
    }
    ix->members[slot] = (MemberSlot){.obj = obj, .ok = false, .dep = d, .busy = true};
    strcpy(ix->members[slot].member, name);
    unsigned long cuts = ix->cuts_total;
    CXCursor record = clang_getNullCursor(), ctor, candidates[CU_RECORD_MAX_CTORS];
    Members members;
    CuNode **args;
    uint32_t nargs;
    /* cheapest first: most locals (`float4 v = make_float4(...)`) are not built in place */
    bool ok = construction(ix->src, obj, &args, &nargs, &ctor) && !clang_Cursor_isNull(record = object_record(obj)) &&
              resolve_member(ix->src, m, record, &members) && uses_read_only(ix, obj, record);
    int count = 0;
    if (ok && !clang_Cursor_isNull(ctor)) candidates[count++] = ctor;
    else if (ok) count = cu_record_constructors(record, nargs, candidates, CU_RECORD_MAX_CTORS);
    ok = ok && count > 0;
    for (int c = 0; c < count && ok; c++)
        for (int k = 0; k < members.count && ok; k++) {
            CuRecordDep r = members.field ? cu_record_field_dep(candidates[c], members.items[k])
                                          : cu_record_method_dep(candidates[c], members.items[k]);
            /* a parameter past the arguments takes its default value, which is not followed */
            ok = r.known && (nargs >= 64 || (r.params >> nargs) == 0);
            if (ok) d = dep_join(d, record_dep_to_dep(ix, r, args, nargs));
        }
    if (!ok) d = (Dep){0, 0, false};
    ix->members[slot].ok = ok; /* the table may have moved: by index */
    ix->members[slot].dep = d;
    ix->members[slot].busy = false;
    ix->members[slot].final = ix->cuts_total == cuts;
    *out = d;
    return ok;
}

static Dep call_dep(CuIndex *ix, const CuNode *n) {
    Dep none = {0, 0, false};
    const char *callee = cu_callee(n);
    if (cu_name_in(callee, block_uniform_calls)) return none;
    const CuNode *object = member_call_object(n);
    if (cu_name_in(callee, rank_calls)) {
        long long tile;
        GroupKind kind = group_kind(object, &tile);
        if (kind == GROUP_TILE) return (Dep){DEP_X, 0, false};
        return (Dep){DEP_XYZ, 0, kind == GROUP_GRID};
    }
    if (strcmp(callee, "meta_group_rank") == 0) {
        long long tile;
        GroupKind kind = group_kind(object, &tile);
        if (kind == GROUP_TILE && tile > 0 && tile < 32) return (Dep){DEP_XYZ, 0, false};
        return (Dep){0, DEP_XYZ, false};
    }
    if (object && cu_name_in(callee, group_size_calls)) {
        bool block = strcmp(callee, "group_index") == 0 || strcmp(callee, "block_index") == 0 ||
                     strcmp(callee, "block_rank") == 0;
        return (Dep){0, 0, block};
    }
    uint32_t argc;
    CuNode **args = cu_call_args(n, &argc);
    if (cu_name_in(callee, warp_uniform_calls)) {
        Dep d = none;
        for (uint32_t i = 0; i < argc; i++) d = dep_join(d, expr_dep(ix, args[i]));
        return dep_to_warp(d);
    }
    if (strcmp(callee, "__shfl_sync") == 0 && argc >= 3) {
        /* a broadcast from one lane: the same in the whole warp */
        long long width = 32;
        Dep src_lane = expr_dep(ix, args[2]);
        if ((argc < 4 || (const_value(args[3], &width) && width >= 32)) && !src_lane.thread && !src_lane.warp)
            return dep_join(dep_to_warp(expr_dep(ix, args[1])), expr_dep(ix, args[0]));
    }
    Dep d = none;
    for (uint32_t i = 0; i < n->child_count; i++) d = dep_join(d, expr_dep(ix, n->children[i]));
    return d;
}

static Dep expr_dep(CuIndex *ix, const CuNode *n) {
    Dep none = {0, 0, false};
    if (!n) return none;
    switch (n->kind) {
    case CXCursor_LambdaExpr:
        return none;
    case CXCursor_VarDecl:
        return is_local(ix, n) ? var_dep(ix, n) : expr_dep(ix, cu_initializer(n));
    case CXCursor_DeclRefExpr:
        return n->ref ? var_dep(ix, n->ref) : none;
    case CXCursor_MemberRefExpr: {
        if (cu_is_builtin_member(n, "threadIdx", 0)) {
            unsigned bit = axis_bit(n->last_char);
            return ix->warp_rows && bit != DEP_X ? (Dep){0, bit, false} : (Dep){bit, 0, false};
        }
        if (cu_is_builtin_member(n, "blockIdx", 0)) return (Dep){0, 0, true};
        Dep member;
        if (member_dep(ix, n, &member)) return member;
        /* block.thread_index().y, block.group_index().x */
        const CuNode *base = n->child_count == 1 ? cu_strip(n->children[0]) : NULL;
        if (base && base->kind == CXCursor_CallExpr && member_call_object(base)) {
            const char *callee = cu_callee(base);
            if (strcmp(callee, "thread_index") == 0) return (Dep){axis_bit(n->last_char), 0, false};
            if (strcmp(callee, "group_index") == 0 || strcmp(callee, "block_index") == 0) return (Dep){0, 0, true};
        }
        break;
    }
    case CXCursor_CallExpr:
        return call_dep(ix, n);
    case CXCursor_BinaryOperator:
        if (is_warp_index(ix, n)) return dep_to_warp(expr_dep(ix, n->children[0]));
        break;
    default:
        break;
    }
    Dep d = none;
    for (uint32_t i = 0; i < n->child_count; i++) d = dep_join(d, expr_dep(ix, n->children[i]));
    return d;
}

CuVariance cu_index_variance(CuIndex *ix, const CuNode *expr) {
    Dep d = expr_dep(ix, expr);
    return d.thread ? CU_PER_THREAD : d.warp ? CU_WARP_UNIFORM : CU_UNIFORM;
}

bool cu_index_uses_thread(CuIndex *ix, const CuNode *expr, char axis) {
    Dep d = expr_dep(ix, expr);
    unsigned bits = d.thread | d.warp;
    return axis ? (bits & axis_bit(axis)) != 0 : bits != 0;
}

bool cu_index_uses_block(CuIndex *ix, const CuNode *expr) { return expr_dep(ix, expr).block; }

static const CuNode *owner_of(const CuNode *expr) {
    return expr && cu_is_function(expr) ? expr : cu_function_of(expr);
}

bool cu_depends_on_thread(const CudaSource *src, const CuNode *expr, char axis) {
    CuIndex *ix = cu_index_new(src, owner_of(expr));
    if (!ix) return false;
    bool yes = cu_index_uses_thread(ix, expr, axis);
    cu_index_free(ix);
    return yes;
}

bool cu_depends_on_thread_or_block(const CudaSource *src, const CuNode *expr) {
    CuIndex *ix = cu_index_new(src, owner_of(expr));
    if (!ix) return false;
    Dep d = expr_dep(ix, expr);
    cu_index_free(ix);
    return d.thread || d.warp || d.block;
}

const CuNode *cu_index_single_value(CuIndex *ix, const CuNode *decl) {
    if (!is_local(ix, decl)) return NULL;
    gather_defs(ix);
    for (size_t i = 0; i < ix->def_count; i++)
        if (ix->defs[i].decl == decl) return NULL;
    return cu_initializer(decl);
}

int cu_index_values(CuIndex *ix, const CuNode *decl, const CuNode **out, int max) {
    if (!is_local(ix, decl)) return -1;
    gather_defs(ix);
    int count = 0;
    const CuNode *init = cu_initializer(decl);
    if (init) {
        if (count == max) return -1;
        out[count++] = init;
    }
    for (size_t i = 0; i < ix->def_count; i++) {
        const Def *d = &ix->defs[i];
        if (d->decl != decl) continue;
        if (d->kind != DEF_ASSIGN || count == max) return -1;
        out[count++] = d->rhs;
    }
    return count;
}

/* ---- divergence ------------------------------------------------------------------ */

enum { MAX_TERMS = 16, TERM_TEXT = 96 };

typedef struct {
    char text[MAX_TERMS][TERM_TEXT];
    bool negative[MAX_TERMS];
    int count;
    bool overflow;
} Terms;

/* the thread-dependent terms of a sum, through locals that hold one value */
static void thread_terms(CuIndex *ix, const CuNode *n, bool negative, Terms *t, int depth) {
    n = cu_strip((CuNode *)n);
    if (!n || depth > 8) {
        t->overflow = true;
        return;
    }
    if (n->kind == CXCursor_BinaryOperator && n->child_count == 2 &&
        (n->op == CXBinaryOperator_Add || n->op == CXBinaryOperator_Sub)) {
        thread_terms(ix, n->children[0], negative, t, depth + 1);
        thread_terms(ix, n->children[1], n->op == CXBinaryOperator_Sub ? !negative : negative, t, depth + 1);
        return;
    }
    if (cu_index_variance(ix, n) == CU_UNIFORM) return;
    if (n->kind == CXCursor_DeclRefExpr) {
        const CuNode *init = n->ref ? cu_index_single_value(ix, n->ref) : NULL;
        if (init) {
            thread_terms(ix, init, negative, t, depth + 1);
            return;
        }
    }
    if (t->count == MAX_TERMS) {
        t->overflow = true;
        return;
    }
    squeeze(ix->src, n, t->text[t->count], TERM_TEXT);
    t->negative[t->count++] = negative;
}

/* the same thread-dependent terms with the same signs, in any order */
static bool same_terms(const Terms *a, const Terms *b) {
    if (a->overflow || b->overflow || a->count != b->count) return false;
    bool used[MAX_TERMS] = {false};
    for (int i = 0; i < a->count; i++) {
        bool found = false;
        for (int j = 0; j < b->count && !found; j++)
            if (!used[j] && a->negative[i] == b->negative[j] && strcmp(a->text[i], b->text[j]) == 0)
                found = used[j] = true;
        if (!found) return false;
    }
    return true;
}

/* `for (v = start; v < bound; v += step)` where start and bound move with the
 * thread by the same terms and step is uniform: every thread runs the loop
 * the same number of times */
static bool uniform_trip_count(CuIndex *ix, const CuNode *loop) {
    size_t s1, s2, h = cu_header_end(ix->src, loop, &s1, &s2);
    if (!h || !s1 || !s2) return false;
    const CuNode *init = NULL, *cond = NULL, *inc = NULL;
    for (uint32_t i = 0; i < loop->child_count; i++) {
        const CuNode *c = loop->children[i];
        if (c->start < s1) init = c; /* a declaration's extent takes in its `;` */
        else if (c->start > s1 && c->start < s2) cond = c;
        else if (c->start > s2 && c->start < h) inc = c;
    }
    if (!init || !cond || !inc) return false;
    /* the variable and its start */
    const CuNode *var = NULL, *start = NULL;
    if (init->kind == CXCursor_DeclStmt && init->child_count == 1 && init->children[0]->kind == CXCursor_VarDecl) {
        var = init->children[0];
        start = cu_initializer(var);
    } else {
        const CuNode *a = cu_strip((CuNode *)init);
        if (a && a->kind == CXCursor_BinaryOperator && a->op == CXBinaryOperator_Assign && a->child_count == 2) {
            var = local_ref(a->children[0]);
            start = a->children[1];
        }
    }
    if (!var || !start || !is_local(ix, var)) return false;
    /* the bound */
    const CuNode *c = cu_strip((CuNode *)cond), *bound = NULL;
    if (!c || c->kind != CXCursor_BinaryOperator || c->child_count != 2) return false;
    if (c->op != CXBinaryOperator_LT && c->op != CXBinaryOperator_LE && c->op != CXBinaryOperator_GT &&
        c->op != CXBinaryOperator_GE && c->op != CXBinaryOperator_NE)
        return false;
    if (cu_refers_to(c->children[0], var)) bound = c->children[1];
    else if (cu_refers_to(c->children[1], var)) bound = c->children[0];
    if (!bound) return false;
    /* the step: the only change to the variable after its start */
    gather_defs(ix);
    for (size_t i = 0; i < ix->def_count; i++) {
        const Def *d = &ix->defs[i];
        if (d->decl != var || cu_contains(init, d->at)) continue;
        if (!cu_contains(inc, d->at)) return false;
        if (d->kind == DEF_STEP) continue;
        if (d->kind != DEF_COMPOUND ||
            (d->op != CXBinaryOperator_AddAssign && d->op != CXBinaryOperator_SubAssign) ||
            cu_index_variance(ix, d->rhs) != CU_UNIFORM)
            return false;
    }
    Terms *a = calloc(2, sizeof *a);
    if (!a) return false;
    thread_terms(ix, start, false, &a[0], 0);
    thread_terms(ix, bound, false, &a[1], 0);
    bool same = same_terms(&a[0], &a[1]);
    free(a);
    return same;
}

int cu_index_divergent_guards(CuIndex *ix, const CuNode *n, const CuNode *stop, CuVariance least, CuGuard *out,
                              int max) {
    int count = 0;
    const CuNode *child = n;
    for (const CuNode *p = n->parent; p && p != stop && !cu_is_function(p); child = p, p = p->parent) {
        bool polarity;
        const CuNode *cond = cu_guard_of(ix->src, p, child, &polarity);
        if (!cond || cu_index_variance(ix, cond) < least) continue;
        if (p->kind == CXCursor_ForStmt && uniform_trip_count(ix, p)) continue;
        if (count < max) out[count] = (CuGuard){cond, p, polarity};
        count++;
    }
    return count;
}

/* the loop (or switch, for break) a break/continue leaves */
static const CuNode *jump_target(const CuNode *jump) {
    for (const CuNode *p = jump->parent; p && !cu_is_function(p); p = p->parent) {
        if (cu_is_loop(p)) return p;
        if (p->kind == CXCursor_SwitchStmt && jump->kind == CXCursor_BreakStmt) return p;
    }
    return NULL;
}

typedef struct {
    CuIndex *ix;
    const CuNode *at;
    CuVariance least_return;
    CuExit *out;
    int max, count;
} ExitSearch;

static bool visit_exit(CuNode *n, void *data) {
    ExitSearch *s = data;
    if (n->kind == CXCursor_LambdaExpr) return false;
    if (n->kind != CXCursor_ReturnStmt && n->kind != CXCursor_BreakStmt && n->kind != CXCursor_ContinueStmt)
        return true;
    const CuNode *stop = NULL;
    CuVariance least = CU_WARP_UNIFORM;
    if (n->kind == CXCursor_ReturnStmt) {
        /* reached before the point, or before its next run in a loop around both */
        const CuNode *lca = cu_common_ancestor(n, s->at);
        if (!lca) return true;
        /* the other branch of an if or ?: never runs the point after the return */
        if (lca->kind == CXCursor_IfStmt || lca->kind == CXCursor_ConditionalOperator) return true;
        if (n->end > s->at->start) {
            const CuNode *loop = NULL;
            for (const CuNode *p = lca; p && p != s->ix->fn; p = p->parent)
                if (cu_is_loop(p)) loop = p;
            if (!loop) return true;
        }
        stop = lca;
        least = s->least_return;
    } else {
        const CuNode *target = jump_target(n);
        if (!target || !cu_is_loop(target) || !cu_contains(target, s->at)) return true;
        if (n->kind == CXCursor_ContinueStmt && n->end > s->at->start) return true;
        stop = cu_common_ancestor(n, s->at);
    }
    CuGuard g;
    if (cu_index_divergent_guards(s->ix, n, stop, least, &g, 1) > 0) {
        if (s->count < s->max) s->out[s->count] = (CuExit){n, g};
        s->count++;
    }
    return true;
}

int cu_index_divergent_exits(CuIndex *ix, const CuNode *at, CuVariance least_return, CuExit *out, int max) {
    if (!ix->fn || !at) return 0;
    ExitSearch s = {ix, at, least_return, out, max, 0};
    for (uint32_t i = 0; i < ix->fn->child_count; i++) cu_walk(ix->fn->children[i], visit_exit, &s);
    return s.count;
}

/* ---- the lane coefficient -------------------------------------------------------- */

static bool is_pointer_type(const CuNode *n) {
    CXType t = clang_getCanonicalType(clang_getCursorType(n->cursor));
    return t.kind == CXType_Pointer;
}

static long long pointee_size(const CuNode *n) {
    CXType t = clang_getCanonicalType(clang_getCursorType(n->cursor));
    if (t.kind != CXType_Pointer) return -1;
    long long s = clang_Type_getSizeOf(clang_getPointeeType(t));
    return s < 0 ? -1 : s;
}

/* a reference to a non-type template parameter somewhere in n: its value is unknown here */
static bool mentions_template_param(const CuNode *n) {
    if (!n) return false;
    if (n->kind == CXCursor_DeclRefExpr && n->ref && n->ref->kind == CXCursor_NonTypeTemplateParameter) return true;
    if (n->kind == CXCursor_DeclRefExpr && !n->ref) {
        CXCursor r = clang_getCursorReferenced(n->cursor);
        if (clang_getCursorKind(r) == CXCursor_NonTypeTemplateParameter) return true;
    }
    for (uint32_t i = 0; i < n->child_count; i++)
        if (mentions_template_param(n->children[i])) return true;
    return false;
}

/* a runtime value: a parameter, or a variable that is not const */
static bool mentions_runtime_value(const CuNode *n) {
    if (!n) return false;
    if (n->kind == CXCursor_DeclRefExpr && n->ref &&
        (n->ref->kind == CXCursor_ParmDecl ||
         (n->ref->kind == CXCursor_VarDecl && !clang_isConstQualifiedType(clang_getCursorType(n->ref->cursor)))))
        return true;
    for (uint32_t i = 0; i < n->child_count; i++)
        if (mentions_runtime_value(n->children[i])) return true;
    return false;
}

/* The number of elements in a vector of fixed bytes: `16 / sizeof(T)`,
 * `max_copy_bytes() / sizeof(T_wire)`, directly or through a const local. A
 * thread taking such a vector (`x[i * VEC + k]`) reads one chunk of a few
 * bytes; neighbouring threads' chunks are adjacent, not rows apart. */
static bool is_vector_width(const CuNode *n, int depth) {
    n = cu_strip((CuNode *)n);
    if (!n || depth > 4) return false;
    if (n->kind == CXCursor_DeclRefExpr && n->ref && n->ref->kind == CXCursor_VarDecl &&
        clang_isConstQualifiedType(clang_getCursorType(n->ref->cursor)))
        return is_vector_width(cu_initializer(n->ref), depth + 1);
    if (n->kind != CXCursor_BinaryOperator || n->op != CXBinaryOperator_Div || n->child_count != 2) return false;
    const CuNode *d = cu_strip(n->children[1]);
    return d && d->kind == CXCursor_UnaryExpr && !mentions_runtime_value(n->children[0]);
}

static CuLane lane_scale(CuLane t, long long k) {
    if (k == 0) return lane_zero;
    if (t.kind == CU_LANE_CONST || t.kind == CU_LANE_RUNTIME) t.c *= k;
    return t;
}

static CuLane lane_add(CuLane x, CuLane y, bool subtract) {
    if (x.kind == CU_LANE_UNKNOWN || y.kind == CU_LANE_UNKNOWN) return lane_unknown;
    if (y.kind == CU_LANE_ZERO) return x;
    if (subtract) y = lane_scale(y, -1);
    if (x.kind == CU_LANE_ZERO) return y;
    if (x.kind == CU_LANE_CONST && y.kind == CU_LANE_CONST) {
        x.c += y.c;
        if (x.c == 0) return lane_zero;
        return x;
    }
    return lane_unknown; /* a runtime coefficient plus something else: do not guess */
}

static CuLane lane_mul(CuIndex *ix, const CuNode *l, const CuNode *r) {
    CuLane x = lane_of(ix, l), y = lane_of(ix, r);
    if (x.kind == CU_LANE_UNKNOWN || y.kind == CU_LANE_UNKNOWN) return lane_unknown;
    if (x.kind == CU_LANE_ZERO && y.kind == CU_LANE_ZERO) return lane_zero;
    if (x.kind != CU_LANE_ZERO && y.kind != CU_LANE_ZERO) return lane_unknown;
    CuLane t = x.kind != CU_LANE_ZERO ? x : y;
    const CuNode *f = x.kind != CU_LANE_ZERO ? r : l;
    long long k;
    if (cu_int_value(f, &k)) return lane_scale(t, k);
    /* a template argument (a small constant as often as not), or a vector's width */
    if (mentions_template_param(f) || is_vector_width(f, 0)) return lane_unknown;
    /* a runtime coefficient: c (kept as its constant part) times the factors */
    if (t.factor_count < CU_LANE_MAX_FACTORS) t.factors[t.factor_count++] = f;
    t.kind = CU_LANE_RUNTIME;
    return t;
}

static long long abs_ll(long long v) { return v < 0 ? -v : v; }

/* x % m: within a warp, x moves by c per lane; when m is at least 32 * |c|
 * the remainder moves the same way (it wraps at most once) */
static CuLane lane_rem(CuIndex *ix, const CuNode *x_node, const CuNode *m_node) {
    CuLane x = lane_of(ix, x_node), m = lane_of(ix, m_node);
    if (x.kind == CU_LANE_UNKNOWN || m.kind != CU_LANE_ZERO) return lane_unknown;
    if (x.kind == CU_LANE_ZERO) return lane_zero;
    if (x.kind != CU_LANE_CONST) return lane_unknown;
    long long v;
    if (const_value(m_node, &v)) return v > 0 && v >= 32 * abs_ll(x.c) ? x : lane_unknown;
    if (mentions_template_param(m_node) || cu_index_names_small_count(ix->src, m_node)) return lane_unknown;
    return x; /* a runtime modulus: a row length, not a handful of values */
}

typedef struct {
    const CudaSource *src;
    const char *x, *m;
    bool found;
} RemSearch;

static bool visit_rem(CuNode *n, void *data) {
    RemSearch *s = data;
    if (s->found) return false;
    if (n->kind == CXCursor_BinaryOperator && n->op == CXBinaryOperator_Rem && n->child_count == 2) {
        char x[96], m[96];
        squeeze(s->src, cu_strip(n->children[0]), x, sizeof x);
        squeeze(s->src, cu_strip(n->children[1]), m, sizeof m);
        s->found = strcmp(x, s->x) == 0 && strcmp(m, s->m) == 0;
    }
    return !s->found;
}

/* the function also takes x % m: x is split into a row (x / m) and a column (x % m) */
static bool split_pair(CuIndex *ix, const CuNode *x_node, const CuNode *m_node) {
    if (!ix->fn) return false;
    char x[96], m[96];
    squeeze(ix->src, cu_strip((CuNode *)x_node), x, sizeof x);
    squeeze(ix->src, cu_strip((CuNode *)m_node), m, sizeof m);
    if (!x[0] || !m[0]) return false;
    RemSearch s = {ix->src, x, m, false};
    cu_walk((CuNode *)ix->fn, visit_rem, &s);
    return s.found;
}

/* x / m: zero when m is at least 32 * |c| (the quotient changes at most once
 * per warp), exact when m divides c; by a runtime m, zero only where the
 * function splits x into x / m and x % m (a row and a column: m a row length) */
static CuLane lane_div(CuIndex *ix, const CuNode *x_node, const CuNode *m_node) {
    CuLane x = lane_of(ix, x_node), m = lane_of(ix, m_node);
    if (x.kind == CU_LANE_UNKNOWN || m.kind != CU_LANE_ZERO) return lane_unknown;
    if (x.kind == CU_LANE_ZERO) return lane_zero;
    if (x.kind != CU_LANE_CONST) return lane_unknown;
    long long v;
    if (const_value(m_node, &v)) {
        if (v <= 0) return lane_unknown;
        if (x.c % v == 0) {
            x.c /= v;
            return x;
        }
        return v >= 32 * abs_ll(x.c) ? lane_zero : lane_unknown;
    }
    if (mentions_template_param(m_node) || cu_index_names_small_count(ix->src, m_node)) return lane_unknown;
    return split_pair(ix, x_node, m_node) ? lane_zero : lane_unknown; /* the thread's row, which a warp shares */
}

static bool is_power_of_two(long long v) { return v > 0 && (v & (v - 1)) == 0; }

/* a field of a by-value parameter, or a constant of the file */
static CuLane decl_ref_lane(CuIndex *ix, const CuNode *n);

/* combines the definitions of a variable: they must agree */
typedef struct {
    bool any;
    CuLane lane;
    bool global;
} Defs;

static void defs_add(Defs *d, CuLane l, bool global) {
    if (!d->any) {
        d->any = true;
        d->lane = l;
        d->global = global;
        return;
    }
    d->global = d->global && global;
    if (d->lane.kind == CU_LANE_UNKNOWN) return;
    if (l.kind != d->lane.kind || (l.kind == CU_LANE_CONST && l.c != d->lane.c)) d->lane = lane_unknown;
}

static const CuNode *var_init(const CuNode *decl) {
    for (uint32_t i = decl->child_count; i-- > 0;) {
        const CuNode *c = decl->children[i];
        if (c->kind == CXCursor_TypeRef || c->kind == CXCursor_TemplateRef || c->kind == CXCursor_NamespaceRef ||
            c->kind == CXCursor_UnexposedAttr || clang_isAttribute(c->kind))
            continue;
        return c;
    }
    return NULL;
}

/* the assignments to a local variable */
static void collect_defs(CuIndex *ix, const CuNode *decl, bool pointer, long long unit, Defs *d) {
    gather_defs(ix);
    bool scaled = false;
    for (size_t i = 0; i < ix->def_count; i++) {
        const Def *def = &ix->defs[i];
        if (def->decl != decl) continue;
        switch (def->kind) {
        case DEF_ASSIGN:
            if (pointer) {
                bool g = false;
                CuLane l = cu_index_pointer_lane(ix, def->rhs, unit, &g);
                defs_add(d, l, g);
            } else {
                defs_add(d, lane_of(ix, def->rhs), true);
            }
            break;
        case DEF_COMPOUND: {
            /* `i += step` keeps the coefficient when step is the same for every lane */
            CuLane r = lane_of(ix, def->rhs);
            if (r.kind != CU_LANE_ZERO)
                defs_add(d, lane_unknown, false);
            else if (def->op != CXBinaryOperator_AddAssign && def->op != CXBinaryOperator_SubAssign)
                scaled = true;
            break;
        }
        case DEF_ADDRESS:
            defs_add(d, lane_unknown, false);
            break;
        case DEF_STEP:
            break;
        }
    }
    if (scaled && d->any && d->lane.kind != CU_LANE_ZERO) d->lane = lane_unknown;
}

static CuLane var_lane(CuIndex *ix, const CuNode *decl) {
    VarEntry *e = var_entry(ix, decl);
    if (!e || e->busy || e->pointer || ix->depth > 10) return lane_unknown;
    if (e->done) return e->lane;
    size_t index = (size_t)(e - ix->vars);
    e->busy = true;
    ix->depth++;
    Defs d = {0};
    const CuNode *init = var_init(decl);
    if (init) defs_add(&d, lane_of(ix, init), true);
    collect_defs(ix, decl, false, 0, &d);
    ix->depth--;
    e = &ix->vars[index]; /* the table may have moved */
    e->busy = false;
    e->done = true;
    e->lane = d.any ? d.lane : lane_unknown;
    return e->lane;
}

static bool call_is_pure_math(const CuNode *call) {
    static const char *const names[] = {"min", "max", "umin", "umax", "llmin", "llmax", "abs", "__mul24",
                                        "__umul24", NULL};
    return cu_name_in(cu_callee(call), names);
}

static CuLane decl_ref_lane(CuIndex *ix, const CuNode *n) {
    const CuNode *d = n->ref;
    if (!d) {
        if (n->ref_name && strcmp(n->ref_name, "warpSize") == 0) return lane_zero;
        CXCursor r = clang_getCursorReferenced(n->cursor);
        enum CXCursorKind k = clang_getCursorKind(r);
        if (k == CXCursor_EnumConstantDecl || k == CXCursor_NonTypeTemplateParameter) return lane_zero;
        return lane_unknown; /* decided by the thread dependence below */
    }
    if (d->kind == CXCursor_ParmDecl || d->kind == CXCursor_EnumConstantDecl ||
        d->kind == CXCursor_NonTypeTemplateParameter)
        return lane_zero;
    if (d->kind != CXCursor_VarDecl) return lane_unknown;
    if (!ix->fn || cu_function_of(d) != ix->fn || (d->attrs & CU_ATTR_SHARED)) return lane_zero;
    if (is_pointer_type(d)) return lane_unknown;
    CuLane l = var_lane(ix, d);
    /* a variable that is the thread index (coefficient 1) carries it; one that
     * already holds a stride keeps the carrier found in its definition */
    if (l.kind == CU_LANE_CONST && (l.c == 1 || l.c == -1)) l.carrier = n;
    else if ((l.kind == CU_LANE_CONST || l.kind == CU_LANE_RUNTIME) && !l.carrier) l.carrier = n;
    return l;
}

/* a rank of a cooperative group: `block.thread_rank()`, `warp.thread_rank()`,
 * `cg::this_thread_block().thread_rank()`, `warp.meta_group_rank()` */
static bool group_call_lane(const CuNode *n, CuLane *out) {
    const char *callee = cu_callee(n);
    const CuNode *object = member_call_object(n);
    if (!object) return false;
    long long tile;
    GroupKind kind = group_kind(object, &tile);
    if (strcmp(callee, "thread_rank") == 0) {
        if (kind == GROUP_BLOCK || kind == GROUP_GRID || (kind == GROUP_TILE && tile >= 32))
            *out = (CuLane){CU_LANE_CONST, 1, {0}, 0, n};
        else
            *out = lane_unknown;
        return true;
    }
    if (strcmp(callee, "meta_group_rank") == 0) {
        *out = kind == GROUP_TILE && tile >= 32 ? lane_zero : lane_unknown;
        return true;
    }
    if (cu_name_in(callee, group_size_calls)) {
        *out = lane_zero;
        return true;
    }
    return false;
}

static CuLane lane_of_node(CuIndex *ix, const CuNode *n) {
    switch (n->kind) {
    case CXCursor_IntegerLiteral:
    case CXCursor_CharacterLiteral:
    case CXCursor_CXXBoolLiteralExpr:
    case CXCursor_UnaryExpr: /* sizeof, alignof */
        return lane_zero;
    case CXCursor_MemberRefExpr: {
        if (cu_is_builtin_member(n, "threadIdx", 'x')) return (CuLane){CU_LANE_CONST, 1, {0}, 0, n};
        if (cu_is_builtin_member(n, "threadIdx", 0) || cu_is_builtin_member(n, "blockIdx", 0) ||
            cu_is_builtin_member(n, "blockDim", 0) || cu_is_builtin_member(n, "gridDim", 0))
            return lane_zero;
        const CuNode *base = n->child_count == 1 ? cu_strip(n->children[0]) : NULL;
        if (base && base->kind == CXCursor_DeclRefExpr && base->ref && base->ref->kind == CXCursor_ParmDecl)
            return lane_zero; /* a field of a by-value argument */
        if (base && base->kind == CXCursor_CallExpr && strcmp(cu_callee(base), "thread_index") == 0 &&
            member_call_object(base)) {
            long long tile;
            GroupKind kind = group_kind(member_call_object(base), &tile);
            if (kind == GROUP_BLOCK || kind == GROUP_GRID)
                return n->last_char == 'x' ? (CuLane){CU_LANE_CONST, 1, {0}, 0, n} : lane_zero;
        }
        return lane_unknown;
    }
    case CXCursor_DeclRefExpr:
        return decl_ref_lane(ix, n);
    case CXCursor_VarDecl:
        return ix->fn && cu_function_of(n) == ix->fn && !(n->attrs & CU_ATTR_SHARED) && !is_pointer_type(n)
                   ? var_lane(ix, n)
                   : lane_unknown;
    case CXCursor_BinaryOperator: {
        if (n->child_count != 2) return lane_unknown;
        const CuNode *l = n->children[0], *r = n->children[1];
        long long k;
        switch (n->op) {
        case CXBinaryOperator_Add:
            if (is_pointer_type(n)) return lane_unknown;
            return lane_add(lane_of(ix, l), lane_of(ix, r), false);
        case CXBinaryOperator_Sub:
            if (is_pointer_type(l)) return lane_unknown;
            return lane_add(lane_of(ix, l), lane_of(ix, r), true);
        case CXBinaryOperator_Mul:
            return lane_mul(ix, l, r);
        case CXBinaryOperator_Shl: {
            CuLane x = lane_of(ix, l);
            if (x.kind == CU_LANE_UNKNOWN) return x;
            if (cu_int_value(r, &k) && k >= 0 && k < 31) return lane_scale(x, 1LL << k);
            return x.kind == CU_LANE_ZERO && lane_of(ix, r).kind == CU_LANE_ZERO ? lane_zero : lane_unknown;
        }
        case CXBinaryOperator_Rem:
            return lane_rem(ix, l, r);
        case CXBinaryOperator_Div:
            return lane_div(ix, l, r);
        case CXBinaryOperator_Shr: {
            CuLane x = lane_of(ix, l);
            if (x.kind == CU_LANE_ZERO && lane_of(ix, r).kind == CU_LANE_ZERO) return lane_zero;
            if (x.kind != CU_LANE_CONST || !cu_int_value(r, &k) || k < 0 || k > 30) return lane_unknown;
            long long v = 1LL << k;
            if (x.c % v == 0) {
                x.c /= v;
                return x;
            }
            return v >= 32 * abs_ll(x.c) ? lane_zero : lane_unknown;
        }
        case CXBinaryOperator_And: {
            /* x & (2^k - 1): x % 2^k */
            for (int side = 0; side < 2; side++) {
                const CuNode *mask = side ? l : r, *x = side ? r : l;
                if (cu_int_value(mask, &k) && is_power_of_two(k + 1)) {
                    CuLane lx = lane_of(ix, x);
                    if (lx.kind == CU_LANE_ZERO) return lane_zero;
                    if (lx.kind == CU_LANE_CONST && k + 1 >= 32 * abs_ll(lx.c)) return lx;
                    return lane_unknown;
                }
            }
            break;
        }
        case CXBinaryOperator_Comma:
            return lane_of(ix, r);
        default:
            break;
        }
        CuLane x = lane_of(ix, l), y = lane_of(ix, r);
        return x.kind == CU_LANE_ZERO && y.kind == CU_LANE_ZERO ? lane_zero : lane_unknown;
    }
    case CXCursor_UnaryOperator: {
        if (n->child_count != 1) return lane_unknown;
        CuLane x = lane_of(ix, n->children[0]);
        if (n->op == CXUnaryOperator_Minus) return lane_scale(x, -1);
        if (n->op == CXUnaryOperator_Plus) return x;
        if (n->op == CXUnaryOperator_Deref) {
            bool g = false;
            CuLane p = cu_index_pointer_lane(ix, n->children[0], 0, &g);
            return p.kind == CU_LANE_ZERO ? lane_zero : lane_unknown;
        }
        return x.kind == CU_LANE_ZERO && !is_inc_dec(n->op) ? lane_zero : lane_unknown;
    }
    case CXCursor_ConditionalOperator: {
        if (n->child_count != 3) return lane_unknown;
        CuLane x = lane_of(ix, n->children[1]), y = lane_of(ix, n->children[2]);
        return x.kind == CU_LANE_ZERO && y.kind == CU_LANE_ZERO ? lane_zero : lane_unknown;
    }
    case CXCursor_ArraySubscriptExpr: {
        if (n->child_count != 2) return lane_unknown;
        /* a load: the same for every lane when its address is */
        CuLane x = lane_of(ix, n->children[1]);
        if (x.kind != CU_LANE_ZERO) return lane_unknown;
        const CuNode *base = cu_strip(n->children[0]);
        if (base && base->kind == CXCursor_DeclRefExpr && base->ref && base->ref->kind == CXCursor_VarDecl &&
            !is_pointer_type(base))
            return lane_zero; /* an array at a uniform index */
        bool g = false;
        return cu_index_pointer_lane(ix, n->children[0], 0, &g).kind == CU_LANE_ZERO ? lane_zero : lane_unknown;
    }
    case CXCursor_CallExpr: {
        CuLane g;
        if (group_call_lane(n, &g)) return g;
        if (!call_is_pure_math(n)) return lane_unknown;
        uint32_t count;
        CuNode **args = cu_call_args(n, &count);
        for (uint32_t i = 0; i < count; i++)
            if (lane_of(ix, args[i]).kind != CU_LANE_ZERO) return lane_unknown;
        return lane_zero;
    }
    default:
        return lane_unknown;
    }
}

static CuLane lane_of(CuIndex *ix, const CuNode *n) {
    n = cu_strip((CuNode *)n);
    if (!n) return lane_unknown;
    CuLane l = lane_of_node(ix, n);
    /* what does not move with threadIdx.x at all is the same for every lane */
    if (l.kind == CU_LANE_UNKNOWN && !cu_index_uses_thread(ix, n, 'x')) return lane_zero;
    return l;
}

CuLane cu_index_lane(CuIndex *ix, const CuNode *expr) { return lane_of(ix, expr); }

CuLane cu_index_pointer_lane(CuIndex *ix, const CuNode *n, long long unit, bool *global) {
    *global = false;
    CuNode *s = cu_strip((CuNode *)n);
    if (!s) return lane_unknown;
    if (s->kind == CXCursor_CXXReinterpretCastExpr || s->kind == CXCursor_CXXConstCastExpr ||
        s->kind == CXCursor_CStyleCastExpr) {
        /* a cast between pointer types: the unit changes */
        const CuNode *inner = s->child_count ? s->children[s->child_count - 1] : NULL;
        if (!inner || !is_pointer_type(inner)) return lane_unknown;
        long long inner_unit = pointee_size(inner);
        CuLane l = cu_index_pointer_lane(ix, inner, inner_unit, global);
        if (l.kind == CU_LANE_ZERO || l.kind == CU_LANE_UNKNOWN) return l;
        if (unit > 0 && inner_unit == unit) return l;
        return lane_unknown;
    }
    if (!is_pointer_type(s)) return lane_unknown;
    long long my_unit = pointee_size(s);
    if (unit > 0 && my_unit != unit) {
        /* only a zero coefficient survives a change of unit */
        CuLane l = cu_index_pointer_lane(ix, s, my_unit, global);
        return l.kind == CU_LANE_ZERO ? l : lane_unknown;
    }
    switch (s->kind) {
    case CXCursor_DeclRefExpr: {
        const CuNode *d = s->ref;
        if (!d) return lane_unknown;
        if (d->kind == CXCursor_ParmDecl) {
            *global = ix->fn && cu_function_of(d) == ix->fn;
            return lane_zero;
        }
        if (d->kind != CXCursor_VarDecl || !ix->fn || cu_function_of(d) != ix->fn || (d->attrs & CU_ATTR_SHARED))
            return lane_unknown;
        VarEntry *e = var_entry(ix, d);
        if (!e || e->busy || ix->depth > 10) return lane_unknown;
        size_t index = (size_t)(e - ix->vars);
        if (e->done) {
            if (!e->pointer) return lane_unknown;
            *global = e->global;
            return e->lane;
        }
        e->busy = true;
        ix->depth++;
        Defs defs = {0};
        const CuNode *init = var_init(d);
        if (init) {
            bool g = false;
            CuLane l = cu_index_pointer_lane(ix, init, my_unit, &g);
            defs_add(&defs, l, g);
        }
        collect_defs(ix, d, true, my_unit, &defs);
        ix->depth--;
        e = &ix->vars[index];
        e->busy = false;
        e->done = true;
        e->pointer = true;
        e->global = defs.any && defs.global;
        e->lane = defs.any ? defs.lane : lane_unknown;
        *global = e->global;
        return e->lane;
    }
    case CXCursor_BinaryOperator: {
        if (s->child_count != 2 || (s->op != CXBinaryOperator_Add && s->op != CXBinaryOperator_Sub))
            return lane_unknown;
        const CuNode *l = s->children[0], *r = s->children[1];
        bool lp = is_pointer_type(cu_strip((CuNode *)l));
        if (s->op == CXBinaryOperator_Sub && !lp) return lane_unknown;
        const CuNode *p = lp ? l : r, *i = lp ? r : l;
        CuLane pl = cu_index_pointer_lane(ix, p, my_unit, global);
        return lane_add(pl, lane_of(ix, i), s->op == CXBinaryOperator_Sub);
    }
    case CXCursor_UnaryOperator: {
        if (s->op != CXUnaryOperator_AddrOf || s->child_count != 1) return lane_unknown;
        const CuNode *sub = cu_strip(s->children[0]);
        if (!sub || sub->kind != CXCursor_ArraySubscriptExpr || sub->child_count != 2) return lane_unknown;
        if (!is_pointer_type(cu_strip(sub->children[0]))) return lane_unknown;
        CuLane pl = cu_index_pointer_lane(ix, sub->children[0], my_unit, global);
        return lane_add(pl, lane_of(ix, sub->children[1]), false);
    }
    default:
        return lane_unknown;
    }
}

bool cu_index_names_small_count(const CudaSource *src, const CuNode *n) {
    static const char *const words[] = {"chan", "comp", "bpp", "pixel_size", "pixelsize", NULL};
    if (!n) return false;
    size_t len = cu_text_len(n);
    if (len > 64) len = 64;
    char text[72];
    for (size_t i = 0; i < len; i++) text[i] = (char)tolower((unsigned char)cu_text(src, n)[i]);
    text[len] = '\0';
    for (int w = 0; words[w]; w++)
        if (strstr(text, words[w])) return true;
    return false;
}
