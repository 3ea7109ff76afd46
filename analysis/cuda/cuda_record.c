#include "analysis/cuda/cuda_record.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* ---- cursors ----------------------------------------------------------------- */

enum { MAX_CHILDREN = 256, MAX_PARAMS = 64, MAX_NESTING = 12 };

typedef struct {
    CXCursor items[MAX_CHILDREN];
    unsigned count;
    bool overflow;
} Children;

static enum CXChildVisitResult collect_child(CXCursor c, CXCursor parent, CXClientData data) {
    (void)parent;
    Children *list = data;
    if (list->count == MAX_CHILDREN) {
        list->overflow = true;
        return CXChildVisit_Break;
    }
    list->items[list->count++] = c;
    return CXChildVisit_Continue;
}

/* the direct children, in source order (heap: records can be long) */
static Children *children_of(CXCursor c) {
    Children *list = calloc(1, sizeof *list);
    if (list) clang_visitChildren(c, collect_child, list);
    return list;
}

static bool same(CXCursor a, CXCursor b) { return clang_equalCursors(a, b) != 0; }

static bool named(CXCursor c, const char *name) {
    CXString s = clang_getCursorSpelling(c);
    bool yes = strcmp(clang_getCString(s), name) == 0;
    clang_disposeString(s);
    return yes;
}

static bool is_function_kind(enum CXCursorKind k) {
    return k == CXCursor_FunctionDecl || k == CXCursor_CXXMethod || k == CXCursor_Constructor ||
           k == CXCursor_Destructor || k == CXCursor_FunctionTemplate || k == CXCursor_ConversionFunction ||
           k == CXCursor_LambdaExpr;
}

/* a constructor, or a template of one */
static bool is_constructor(CXCursor c) {
    enum CXCursorKind k = clang_getCursorKind(c);
    return k == CXCursor_Constructor ||
           (k == CXCursor_FunctionTemplate && clang_getTemplateCursorKind(c) == CXCursor_Constructor);
}

static bool is_method(CXCursor c) {
    enum CXCursorKind k = clang_getCursorKind(c);
    return k == CXCursor_CXXMethod ||
           (k == CXCursor_FunctionTemplate && clang_getTemplateCursorKind(c) == CXCursor_CXXMethod);
}

/* the record a member (field, method, constructor) belongs to */
static CXCursor record_of(CXCursor member) { return clang_getCanonicalCursor(clang_getCursorSemanticParent(member)); }

static CXCursor strip(CXCursor c) {
    for (int i = 0; i < 32; i++) {
        enum CXCursorKind k = clang_getCursorKind(c);
        if (k != CXCursor_UnexposedExpr && k != CXCursor_ParenExpr) break;
        Children *list = children_of(c);
        bool one = list && list->count == 1;
        CXCursor inner = one ? list->items[0] : c;
        free(list);
        if (!one) break;
        c = inner;
    }
    return c;
}

/* `field` or `this->field`: a member of the object being built */
static bool is_own_member(CXCursor member_ref, CXCursor record) {
    if (clang_getCursorKind(member_ref) != CXCursor_MemberRefExpr) return false;
    CXCursor target = clang_getCursorReferenced(member_ref);
    if (clang_Cursor_isNull(target) || !same(record_of(target), record)) return false;
    Children *list = children_of(member_ref);
    bool own = list && (list->count == 0 ||
                        (list->count == 1 && clang_getCursorKind(strip(list->items[0])) == CXCursor_CXXThisExpr));
    free(list);
    return own;
}

/* ---- parameters and constructors ------------------------------------------- */

typedef struct {
    CXCursor items[MAX_PARAMS];
    unsigned count;
    unsigned required; /* those without a default value */
    bool overflow;
} Params;

static bool has_default_value(CXCursor parm) {
    Children *list = children_of(parm);
    bool yes = false;
    for (unsigned i = 0; list && i < list->count; i++)
        if (clang_isExpression(clang_getCursorKind(list->items[i]))) yes = true;
    free(list);
    return yes;
}

static Params params_of(CXCursor fn) {
    Params p = {0};
    Children *list = children_of(fn);
    for (unsigned i = 0; list && i < list->count; i++) {
        if (clang_getCursorKind(list->items[i]) != CXCursor_ParmDecl) continue;
        if (p.count == MAX_PARAMS) {
            p.overflow = true;
            break;
        }
        p.items[p.count++] = list->items[i];
        if (!has_default_value(list->items[i])) p.required = p.count;
    }
    free(list);
    return p;
}

int cu_record_constructors(CXCursor record, unsigned nargs, CXCursor *out, int max) {
    CXCursor def = clang_getCursorDefinition(record);
    if (clang_Cursor_isNull(def)) return 0;
    Children *list = children_of(def);
    int count = 0;
    for (unsigned i = 0; list && i < list->count; i++) {
        CXCursor c = list->items[i];
        if (!is_constructor(c)) continue;
        Params p = params_of(c);
        if (p.overflow || nargs > p.count || nargs < p.required) continue;
        if (count == max) {
            count = 0; /* more candidates than the caller can weigh: none */
            break;
        }
        out[count++] = c;
    }
    free(list);
    return count;
}

int cu_record_members_named(CXCursor record, const char *name, CXCursor *out, int max, bool *field) {
    *field = false;
    CXCursor def = clang_getCursorDefinition(record);
    if (clang_Cursor_isNull(def) || !name || !*name) return 0;
    Children *list = children_of(def);
    int count = 0;
    bool methods = false;
    for (unsigned i = 0; list && !list->overflow && i < list->count; i++) {
        CXCursor c = list->items[i];
        bool is_field = clang_getCursorKind(c) == CXCursor_FieldDecl;
        if ((!is_field && !is_method(c)) || !named(c, name)) continue;
        if (count == max) {
            count = 0;
            break;
        }
        out[count++] = c;
        *field |= is_field;
        methods |= !is_field;
    }
    if (!list || list->overflow || (*field && (methods || count != 1))) count = 0;
    free(list);
    return count;
}

CXCursor cu_record_of_variable(CXCursor var, CXCursor template_ref) {
    if (!clang_Cursor_isNull(template_ref)) {
        CXCursor t = clang_getCursorReferenced(template_ref);
        if (clang_getCursorKind(t) == CXCursor_ClassTemplate) return clang_getCanonicalCursor(t);
    }
    CXType type = clang_getCanonicalType(clang_getNonReferenceType(clang_getCursorType(var)));
    CXCursor decl = clang_getTypeDeclaration(type);
    if (clang_Cursor_isNull(decl) || clang_isInvalid(clang_getCursorKind(decl))) return clang_getNullCursor();
    CXCursor pattern = clang_getSpecializedCursorTemplate(decl);
    if (!clang_Cursor_isNull(pattern) && !clang_isInvalid(clang_getCursorKind(pattern)))
        return clang_getCanonicalCursor(pattern);
    enum CXCursorKind k = clang_getCursorKind(decl);
    if (k != CXCursor_StructDecl && k != CXCursor_ClassDecl) return clang_getNullCursor();
    return clang_getCanonicalCursor(decl);
}

bool cu_record_has_mutable_field(CXCursor record) {
    CXCursor def = clang_getCursorDefinition(record);
    if (clang_Cursor_isNull(def)) return true;
    Children *list = children_of(def);
    bool yes = !list || list->overflow;
    for (unsigned i = 0; list && i < list->count; i++)
        if (clang_getCursorKind(list->items[i]) == CXCursor_FieldDecl && clang_CXXField_isMutable(list->items[i]))
            yes = true;
    free(list);
    return yes;
}

bool cu_record_is_const_method(CXCursor referenced) {
    if (clang_getCursorKind(referenced) == CXCursor_OverloadedDeclRef) {
        unsigned n = clang_getNumOverloadedDecls(referenced);
        for (unsigned i = 0; i < n; i++)
            if (!cu_record_is_const_method(clang_getOverloadedDecl(referenced, i))) return false;
        return n > 0;
    }
    if (!is_method(referenced)) return false;
    return clang_CXXMethod_isConst(referenced) != 0 && clang_CXXMethod_isStatic(referenced) == 0;
}

/* ---- summaries -------------------------------------------------------------- */

typedef struct {
    CXCursor ctor; /* its definition */
    CXCursor record;
    Params params;
    CXCursor method; /* the method whose body is read (its locals and parameters are its own), or null */
    CXCursor busy[MAX_NESTING]; /* fields and methods being summarised: a cycle adds nothing */
    int depth;
} Summary;

static void join(CuRecordDep *into, CuRecordDep d) {
    into->known = into->known && d.known;
    into->params |= d.params;
    into->thread_index |= d.thread_index;
    into->block_index |= d.block_index;
}

static CuRecordDep field_summary(Summary *s, CXCursor field);
static CuRecordDep method_summary(Summary *s, CXCursor method);

static bool is_busy(Summary *s, CXCursor c) {
    for (int i = 0; i < s->depth; i++)
        if (same(s->busy[i], c)) return true;
    return false;
}

typedef struct {
    Summary *s;
    CuRecordDep dep;
} ExprWalk;

static enum CXChildVisitResult visit_expr(CXCursor c, CXCursor parent, CXClientData data);

/* what an expression of the constructor (or of a method) reads */
static CuRecordDep expr_summary(Summary *s, CXCursor e) {
    ExprWalk w = {s, {true, 0, false, false}};
    if (clang_Cursor_isNull(e)) return w.dep;
    /* the expression itself, then its children */
    enum CXChildVisitResult first = visit_expr(e, clang_getNullCursor(), &w);
    if (first == CXChildVisit_Recurse) clang_visitChildren(e, visit_expr, &w);
    return w.dep;
}

static void read_declaration(ExprWalk *w, CXCursor target) {
    Summary *s = w->s;
    enum CXCursorKind k = clang_getCursorKind(target);
    if (k == CXCursor_ParmDecl) {
        for (unsigned i = 0; i < s->params.count; i++)
            if (same(s->params.items[i], target)) {
                w->dep.params |= 1ull << i;
                return;
            }
        /* a method's own parameter: an argument of the call, the caller's to add */
        if (!clang_Cursor_isNull(s->method) &&
            same(clang_getCanonicalCursor(clang_getCursorSemanticParent(target)), clang_getCanonicalCursor(s->method)))
            return;
        w->dep.known = false;
        return;
    }
    if (k != CXCursor_VarDecl) return; /* enumerators, template parameters, functions: the same everywhere */
    if (named(target, "threadIdx")) {
        w->dep.thread_index = true;
        return;
    }
    if (named(target, "blockIdx")) {
        w->dep.block_index = true;
        return;
    }
    if (!is_function_kind(clang_getCursorKind(clang_getCursorSemanticParent(target)))) return; /* a global */
    /* a local variable: in a method, whatever it holds came from reads this
     * walk sees as well; in the constructor it is not followed */
    if (clang_Cursor_isNull(s->method)) w->dep.known = false;
}

static enum CXChildVisitResult visit_expr(CXCursor c, CXCursor parent, CXClientData data) {
    (void)parent;
    ExprWalk *w = data;
    Summary *s = w->s;
    switch (clang_getCursorKind(c)) {
    case CXCursor_DeclRefExpr:
        read_declaration(w, clang_getCursorReferenced(c));
        return CXChildVisit_Continue;
    case CXCursor_MemberRefExpr: {
        if (!is_own_member(c, s->record)) return CXChildVisit_Recurse; /* `params.h`: its object is read */
        CXCursor target = clang_getCursorReferenced(c);
        if (clang_getCursorKind(target) == CXCursor_FieldDecl) join(&w->dep, field_summary(s, target));
        else if (cu_record_is_const_method(target)) join(&w->dep, method_summary(s, target));
        else w->dep.known = false; /* a call that can change the object */
        return CXChildVisit_Continue;
    }
    case CXCursor_CXXThisExpr: /* `this` handed out */
    case CXCursor_LambdaExpr:
    case CXCursor_OverloadedDeclRef:
        w->dep.known = false;
        return CXChildVisit_Continue;
    default:
        return w->dep.known ? CXChildVisit_Recurse : CXChildVisit_Break;
    }
}

/* ---- the writes to a field in the constructor ---------------------------------- */

typedef struct {
    Summary *s;
    CXCursor field;
    CuRecordDep dep;
    bool written;
} Writes;

static bool is_loop_or_branch(enum CXCursorKind k) {
    return k == CXCursor_IfStmt || k == CXCursor_WhileStmt || k == CXCursor_ForStmt || k == CXCursor_DoStmt ||
           k == CXCursor_SwitchStmt || k == CXCursor_ConditionalOperator;
}

/* an overloaded operator that changes its left operand (`a += b`, `a = b`, `++a`, `in >> a`): libclang
 * shows an operator on a dependent type as a call, `operator-` for `a - b` */
bool cu_record_operator_writes(const char *spelling) {
    static const char *const writing[] = {"=",  "+=", "-=", "*=",  "/=",  "%=", "&=", "|=",
                                          "^=", "<<=", ">>=", "++", "--", ">>", NULL};
    if (strncmp(spelling, "operator", 8) != 0) return false;
    const char *op = spelling + 8;
    while (*op == ' ') op++;
    for (int i = 0; writing[i]; i++)
        if (strcmp(op, writing[i]) == 0) return true;
    return !*op || op[0] == '(' || op[0] == '['; /* a call or subscript operator may hand out a reference */
}

/* the operator token of an operator call whose callee clang left unresolved
 * (a dependent operand): the one token of the callee's extent */
static bool unresolved_operator(CXCursor callee, char *out, size_t size) {
    CXTranslationUnit tu = clang_Cursor_getTranslationUnit(callee);
    CXToken *tokens = NULL;
    unsigned count = 0;
    if (!tu) return false;
    clang_tokenize(tu, clang_getCursorExtent(callee), &tokens, &count);
    bool ok = count == 1 && clang_getTokenKind(tokens[0]) == CXToken_Punctuation;
    if (ok) {
        CXString s = clang_getTokenSpelling(tu, tokens[0]);
        ok = (size_t)snprintf(out, size, "operator%s", clang_getCString(s)) < size;
        clang_disposeString(s);
    }
    clang_disposeTokens(tu, tokens, count);
    return ok;
}

bool cu_record_operator_call(CXCursor call, bool *writes) {
    *writes = false;
    if (clang_getCursorKind(call) != CXCursor_CallExpr) return false;
    char spelling[32] = "";
    CXString s = clang_getCursorSpelling(call);
    bool named_operator = strncmp(clang_getCString(s), "operator", 8) == 0;
    if (named_operator) snprintf(spelling, sizeof spelling, "%s", clang_getCString(s));
    clang_disposeString(s);
    if (!named_operator) {
        /* `a - b` with a dependent operand: the operands, and between or around them the callee */
        Children *list = children_of(call);
        for (unsigned i = 0; list && i < list->count && !spelling[0]; i++) {
            enum CXCursorKind k = clang_getCursorKind(list->items[i]);
            if ((k == CXCursor_DeclRefExpr || k == CXCursor_OverloadedDeclRef) && (list->count == 2 || list->count == 3) &&
                !unresolved_operator(list->items[i], spelling, sizeof spelling))
                spelling[0] = '\0';
        }
        free(list);
        if (!spelling[0]) return false;
    }
    *writes = cu_record_operator_writes(spelling);
    return true;
}

static bool is_step(CXCursor c) {
    enum CXUnaryOperatorKind op = clang_getCursorUnaryOperatorKind(c);
    return op == CXUnaryOperator_PostInc || op == CXUnaryOperator_PostDec || op == CXUnaryOperator_PreInc ||
           op == CXUnaryOperator_PreDec;
}

/* the statements of the constructor's body, under conditions that already
 * depend on `under` */
static void scan_writes(Writes *w, CXCursor stmt, CuRecordDep under, int nesting) {
    if (!w->dep.known) return;
    enum CXCursorKind k = clang_getCursorKind(stmt);
    if (nesting > 64 || k == CXCursor_ReturnStmt || k == CXCursor_GotoStmt || k == CXCursor_BreakStmt ||
        k == CXCursor_ContinueStmt || k == CXCursor_CXXTryStmt || k == CXCursor_CXXThrowExpr ||
        k == CXCursor_LambdaExpr) {
        w->dep.known = false; /* which writes happen would depend on more than their conditions */
        return;
    }
    Children *list = children_of(stmt);
    if (!list || list->overflow) {
        w->dep.known = false;
        free(list);
        return;
    }
    bool assign = (k == CXCursor_BinaryOperator && clang_getCursorBinaryOperatorKind(stmt) == CXBinaryOperator_Assign) ||
                  k == CXCursor_CompoundAssignOperator;
    if (assign && list->count == 2) {
        CXCursor lhs = strip(list->items[0]);
        if (is_own_member(lhs, w->s->record) && same(clang_getCursorReferenced(lhs), w->field)) {
            w->written = true;
            join(&w->dep, under);
            join(&w->dep, expr_summary(w->s, list->items[1]));
        }
    } else if (k == CXCursor_UnaryOperator && list->count == 1) {
        CXCursor operand = strip(list->items[0]);
        if (is_own_member(operand, w->s->record)) {
            if (clang_getCursorUnaryOperatorKind(stmt) == CXUnaryOperator_AddrOf) w->dep.known = false;
            else if (is_step(stmt) && same(clang_getCursorReferenced(operand), w->field)) join(&w->dep, under);
        }
    } else if (k == CXCursor_CallExpr) {
        /* a member of the object bound to a reference parameter, or a method
         * that can change the object: the callee could write the field; an
         * operator that only reads its operands (`a - b` on a dependent type) cannot */
        bool writes = true;
        bool reading_operator = cu_record_operator_call(stmt, &writes) && !writes;
        for (unsigned i = 0; i < list->count && !reading_operator; i++) {
            CXCursor arg = list->items[i];
            if (clang_getCursorKind(arg) == CXCursor_MemberRefExpr && is_own_member(arg, w->s->record)) {
                CXCursor target = clang_getCursorReferenced(arg);
                if (clang_getCursorKind(target) == CXCursor_FieldDecl || !cu_record_is_const_method(target))
                    w->dep.known = false;
            }
        }
    }
    /* a branch's or loop's conditions: every statement under it depends on them */
    CuRecordDep inner = under;
    if (is_loop_or_branch(k))
        for (unsigned i = 0; i < list->count; i++)
            if (clang_isExpression(clang_getCursorKind(list->items[i])) && (k != CXCursor_ConditionalOperator || i == 0))
                join(&inner, expr_summary(w->s, list->items[i]));
    for (unsigned i = 0; i < list->count && w->dep.known; i++) scan_writes(w, list->items[i], inner, nesting + 1);
    free(list);
}

static CuRecordDep field_summary(Summary *s, CXCursor field) {
    CuRecordDep none = {true, 0, false, false}, unknown = {false, 0, false, false};
    if (is_busy(s, field)) return none; /* `len = len + 1` adds nothing */
    if (s->depth == MAX_NESTING) return unknown;
    s->busy[s->depth++] = field;
    Writes w = {s, field, none, false};
    Children *list = children_of(s->ctor);
    bool body = false;
    for (unsigned i = 0; list && !list->overflow && i < list->count && w.dep.known; i++) {
        CXCursor c = list->items[i];
        enum CXCursorKind k = clang_getCursorKind(c);
        if (k == CXCursor_MemberRef && i + 1 < list->count) {
            /* a member initializer: the member, then its expression */
            if (same(clang_getCursorReferenced(c), field)) {
                w.written = true;
                join(&w.dep, expr_summary(s, list->items[i + 1]));
            }
            i++;
        } else if (k == CXCursor_CXXBaseSpecifier || k == CXCursor_TypeRef || k == CXCursor_TemplateRef) {
            w.dep.known = false; /* a base class or a delegated constructor builds part of the object */
        } else if (k == CXCursor_CompoundStmt) {
            body = true;
            scan_writes(&w, c, none, 0);
        }
    }
    if (!list || list->overflow || !body) w.dep.known = false;
    free(list);
    if (w.dep.known && !w.written) {
        /* a default member initializer, or nothing: an indeterminate value that no thread chose */
        Children *field_children = children_of(field);
        for (unsigned i = 0; field_children && i < field_children->count; i++)
            if (clang_isExpression(clang_getCursorKind(field_children->items[i])))
                join(&w.dep, expr_summary(s, field_children->items[i]));
        free(field_children);
    }
    s->depth--;
    return w.dep;
}

static CuRecordDep method_summary(Summary *s, CXCursor method) {
    CuRecordDep none = {true, 0, false, false}, unknown = {false, 0, false, false};
    if (clang_getCursorKind(method) == CXCursor_OverloadedDeclRef) {
        CuRecordDep all = none;
        unsigned n = clang_getNumOverloadedDecls(method);
        for (unsigned i = 0; i < n && all.known; i++) join(&all, method_summary(s, clang_getOverloadedDecl(method, i)));
        return n ? all : unknown;
    }
    CXCursor def = clang_getCursorDefinition(method);
    if (clang_Cursor_isNull(def)) return unknown; /* defined elsewhere */
    if (is_busy(s, def)) return none;             /* recursion reads nothing new */
    if (s->depth == MAX_NESTING) return unknown;
    s->busy[s->depth++] = def;
    CXCursor outer = s->method;
    s->method = def;
    CuRecordDep d = none;
    Children *list = children_of(def);
    bool body = false;
    for (unsigned i = 0; list && !list->overflow && i < list->count; i++)
        if (clang_getCursorKind(list->items[i]) == CXCursor_CompoundStmt) {
            body = true;
            join(&d, expr_summary(s, list->items[i])); /* every read in the body, conditions included */
        }
    if (!list || list->overflow || !body) d.known = false;
    free(list);
    s->method = outer;
    s->depth--;
    return d;
}

static bool start_summary(Summary *s, CXCursor ctor) {
    memset(s, 0, sizeof *s);
    /* a copy or move: the fields come from the other object, through member
     * initializers libclang does not show when the compiler wrote them */
    if (clang_CXXConstructor_isCopyConstructor(ctor) || clang_CXXConstructor_isMoveConstructor(ctor)) return false;
    s->ctor = clang_getCursorDefinition(ctor);
    if (clang_Cursor_isNull(s->ctor)) return false;
    s->record = record_of(s->ctor);
    s->params = params_of(s->ctor);
    s->method = clang_getNullCursor();
    return !s->params.overflow;
}

CuRecordDep cu_record_field_dep(CXCursor ctor, CXCursor field) {
    Summary s;
    CuRecordDep unknown = {false, 0, false, false};
    if (!start_summary(&s, ctor) || !same(record_of(field), s.record)) return unknown;
    return field_summary(&s, field);
}

CuRecordDep cu_record_method_dep(CXCursor ctor, CXCursor method) {
    Summary s;
    CuRecordDep unknown = {false, 0, false, false};
    if (!start_summary(&s, ctor) || !cu_record_is_const_method(method)) return unknown;
    if (clang_getCursorKind(method) != CXCursor_OverloadedDeclRef && !same(record_of(method), s.record))
        return unknown;
    return method_summary(&s, method);
}
