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

static CXCursor unparen(CXCursor c);

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

/* the type is spelled `[const] [ns::]Name<...>` and nothing after: the
 * template named is the object's own, not an outer one (`Outer<T>::Inner`)
 * or an argument's */
static bool spelled_as_template(const char *type, const char *name) {
    for (;;) {
        if (strncmp(type, "const ", 6) == 0) type += 6;
        else if (strncmp(type, "volatile ", 9) == 0) type += 9;
        else break;
    }
    size_t n = strlen(name);
    for (;;) {
        if (strncmp(type, name, n) == 0 && type[n] == '<') break;
        const char *colons = strstr(type, "::");
        const char *bracket = strchr(type, '<');
        if (!colons || (bracket && bracket < colons)) return false;
        type = colons + 2;
    }
    int depth = 0;
    const char *p = type + n;
    for (; *p; p++) {
        depth += *p == '<' ? 1 : *p == '>' ? -1 : 0;
        if (depth == 0) break;
    }
    return *p == '>' && p[1] == '\0';
}

typedef struct {
    CXCursor template_;
    unsigned seen;
    bool found;
} SpecializationSearch;

static enum CXChildVisitResult find_specialization(CXCursor c, CXCursor parent, CXClientData data) {
    (void)parent;
    SpecializationSearch *search = data;
    if (++search->seen > 300000) {
        search->found = true; /* too many to look through: assume there is one */
        return CXChildVisit_Break;
    }
    enum CXCursorKind k = clang_getCursorKind(c);
    if (k == CXCursor_Namespace || k == CXCursor_LinkageSpec || k == CXCursor_UnexposedDecl) return CXChildVisit_Recurse;
    if (k == CXCursor_ClassTemplatePartialSpecialization || k == CXCursor_StructDecl || k == CXCursor_ClassDecl) {
        CXCursor t = clang_getSpecializedCursorTemplate(c);
        if (!clang_Cursor_isNull(t) && same(clang_getCanonicalCursor(t), search->template_)) {
            search->found = true;
            return CXChildVisit_Break;
        }
    }
    return CXChildVisit_Continue;
}

/* a partial or explicit specialization of the class template is declared
 * at namespace scope in the translation unit: which one a dependent type
 * names is then unknown */
static bool has_specializations(CXCursor template_) {
    SpecializationSearch search = {clang_getCanonicalCursor(template_), 0, false};
    CXTranslationUnit tu = clang_Cursor_getTranslationUnit(template_);
    if (!tu) return true;
    clang_visitChildren(clang_getTranslationUnitCursor(tu), find_specialization, &search);
    return search.found;
}

CXCursor cu_record_of_variable(CXCursor var, CXCursor template_ref) {
    CXType type = clang_getCanonicalType(clang_getNonReferenceType(clang_getCursorType(var)));
    CXCursor decl = clang_getTypeDeclaration(type);
    enum CXCursorKind k = clang_getCursorKind(decl);
    if (!clang_Cursor_isNull(decl) && (k == CXCursor_StructDecl || k == CXCursor_ClassDecl)) {
        CXCursor pattern = clang_getSpecializedCursorTemplate(decl);
        if (clang_Cursor_isNull(pattern) || clang_isInvalid(clang_getCursorKind(pattern)))
            return clang_getCanonicalCursor(decl);
        /* an instantiation sits where its pattern (the template, or the partial
         * specialization it came from) is written; an explicit specialization
         * is a record of its own, written elsewhere */
        if (clang_equalLocations(clang_getCursorLocation(decl), clang_getCursorLocation(pattern)))
            return clang_getCanonicalCursor(pattern);
        return clang_getCanonicalCursor(decl);
    }
    /* a dependent specialization, inside a template: the primary template,
     * when it is the object's own and nothing specializes it */
    if (clang_Cursor_isNull(template_ref)) return clang_getNullCursor();
    CXCursor t = clang_getCursorReferenced(template_ref);
    if (clang_getCursorKind(t) != CXCursor_ClassTemplate) return clang_getNullCursor();
    CXString type_spelling = clang_getTypeSpelling(clang_getCursorType(var));
    CXString name = clang_getCursorSpelling(t);
    bool own = spelled_as_template(clang_getCString(type_spelling), clang_getCString(name));
    clang_disposeString(type_spelling);
    clang_disposeString(name);
    if (!own || has_specializations(t)) return clang_getNullCursor();
    return clang_getCanonicalCursor(t);
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

/* method, or every overload it names, is a const member function */
static bool cu_record_is_const_method(CXCursor referenced) {
    if (clang_getCursorKind(referenced) == CXCursor_OverloadedDeclRef) {
        unsigned n = clang_getNumOverloadedDecls(referenced);
        for (unsigned i = 0; i < n; i++)
            if (!cu_record_is_const_method(clang_getOverloadedDecl(referenced, i))) return false;
        return n > 0;
    }
    if (!is_method(referenced)) return false;
    return clang_CXXMethod_isConst(referenced) != 0 && clang_CXXMethod_isStatic(referenced) == 0;
}

/* ---- operators ---------------------------------------------------------------- */

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

/* operators that only read their operands on numbers (`a - b`, `a < b`, `!a`);
 * any other (assignments, steps, `<<` and `>>`, `,`, unary `&`, calls,
 * subscripts) may change an operand or hand out a reference to it */
static bool reads_only(const char *op, unsigned operands) {
    static const char *const binary[] = {"+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=",
                                         "&&", "||", "&", "|", "^", NULL};
    static const char *const unary[] = {"!", "~", "-", "+", NULL};
    const char *const *list = operands == 2 ? binary : operands == 1 ? unary : NULL;
    for (int i = 0; list && list[i]; i++)
        if (strcmp(op, list[i]) == 0) return true;
    return false;
}

bool cu_record_operator_call(CXCursor call, bool *writes) {
    *writes = true;
    if (clang_getCursorKind(call) != CXCursor_CallExpr) return false;
    char spelling[32] = "";
    CXString s = clang_getCursorSpelling(call);
    if (strncmp(clang_getCString(s), "operator", 8) == 0) snprintf(spelling, sizeof spelling, "%s", clang_getCString(s));
    clang_disposeString(s);
    Children *list = children_of(call);
    unsigned count = list ? list->count : 0;
    /* `a - b` with a dependent operand: the operands, and between or around them the callee */
    for (unsigned i = 0; list && i < count && !spelling[0]; i++) {
        enum CXCursorKind k = clang_getCursorKind(list->items[i]);
        if ((k == CXCursor_DeclRefExpr || k == CXCursor_OverloadedDeclRef) && (count == 2 || count == 3) &&
            !unresolved_operator(list->items[i], spelling, sizeof spelling))
            spelling[0] = '\0';
    }
    free(list);
    if (!spelling[0]) return false;
    *writes = !(count == 2 || count == 3) || !reads_only(spelling + 8, count - 1);
    return true;
}

/* ---- summaries -------------------------------------------------------------- */

enum { MAX_STEPS = 256 }; /* fields and methods summarised for one question: more is given up */

typedef struct {
    CXCursor ctor; /* its definition; null when only purity is asked */
    CXCursor record;
    Params params;
    CXCursor method; /* the method whose body is read (its parameters are the call's), or null */
    CXCursor busy[MAX_NESTING]; /* fields and methods being summarised: a cycle adds nothing */
    int depth;
    int steps;
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

/* a field whose value one assignment sets whole: a number, an enum or a
 * pointer (not an array, a record or a reference, which can be changed in part
 * or through another name) */
bool cu_record_scalar_field(CXCursor field) {
    if (clang_getCursorKind(field) != CXCursor_FieldDecl) return false;
    CXType t = clang_getCanonicalType(clang_getCursorType(field));
    return (t.kind >= CXType_FirstBuiltin && t.kind <= CXType_LastBuiltin && t.kind != CXType_Void) ||
           t.kind == CXType_Enum || t.kind == CXType_Pointer;
}

typedef struct {
    Summary *s;
    CuRecordDep dep;
} ExprWalk;

static enum CXChildVisitResult visit_expr(CXCursor c, CXCursor parent, CXClientData data);

/* what an expression of the constructor (or of a method) reads; unknown
 * when it can change anything (an assignment, a step, an address taken, a
 * call other than a reading operator or a const method of the object) */
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
    if (k != CXCursor_VarDecl) return; /* enumerators, template parameters: the same everywhere */
    if (named(target, "threadIdx")) {
        w->dep.thread_index = true;
        return;
    }
    if (named(target, "blockIdx")) {
        w->dep.block_index = true;
        return;
    }
    /* a local variable (not followed), or a global (the same everywhere) */
    if (is_function_kind(clang_getCursorKind(clang_getCursorSemanticParent(target)))) w->dep.known = false;
}

static bool is_step(CXCursor c) {
    enum CXUnaryOperatorKind op = clang_getCursorUnaryOperatorKind(c);
    return op == CXUnaryOperator_PostInc || op == CXUnaryOperator_PostDec || op == CXUnaryOperator_PreInc ||
           op == CXUnaryOperator_PreDec;
}

/* a call the walk may step into: a reading operator, or a const method of the object */
static bool harmless_call(Summary *s, CXCursor call) {
    bool writes;
    if (cu_record_operator_call(call, &writes)) return !writes;
    Children *list = children_of(call);
    bool yes = list && list->count >= 1 && is_own_member(strip(list->items[0]), s->record) &&
               cu_record_is_const_method(clang_getCursorReferenced(strip(list->items[0])));
    free(list);
    return yes;
}

static bool is_free_function(CXCursor f) {
    enum CXCursorKind k = clang_getCursorKind(f);
    return k == CXCursor_FunctionDecl ||
           (k == CXCursor_FunctionTemplate && clang_getTemplateCursorKind(f) == CXCursor_FunctionDecl);
}

/* `exp2f(x)`, `min(a, b)`: a function that is no member, handed no member of
 * the object itself (which a reference parameter could change): it cannot
 * change the object. Its arguments are read; what it returns is taken to
 * depend on them alone, as the index analysis takes any call. */
static bool free_call(Summary *s, const Children *list) {
    if (list->count == 0) return false;
    CXCursor callee = strip(list->items[0]);
    enum CXCursorKind k = clang_getCursorKind(callee);
    if (k != CXCursor_DeclRefExpr && k != CXCursor_OverloadedDeclRef) return false;
    /* in a template, an unresolved name refers to its overload set */
    CXCursor target = k == CXCursor_OverloadedDeclRef ? callee : clang_getCursorReferenced(callee);
    if (clang_getCursorKind(target) == CXCursor_OverloadedDeclRef) {
        unsigned n = clang_getNumOverloadedDecls(target);
        for (unsigned i = 0; i < n; i++)
            if (!is_free_function(clang_getOverloadedDecl(target, i))) return false;
        if (n == 0) return false;
    } else if (!is_free_function(target)) {
        return false;
    }
    for (unsigned i = 1; i < list->count; i++)
        if (is_own_member(unparen(list->items[i]), s->record)) return false;
    return true;
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
        CXCursor target = clang_getCursorReferenced(c);
        if (!is_own_member(c, s->record)) {
            /* `params.h`: its object is read; a member with no object named
             * that is not this record's (a base's) is not followed */
            Children *list = children_of(c);
            if (!list || list->count == 0) w->dep.known = false;
            free(list);
            return w->dep.known ? CXChildVisit_Recurse : CXChildVisit_Break;
        }
        if (cu_record_scalar_field(target)) join(&w->dep, field_summary(s, target));
        else if (cu_record_is_const_method(target)) join(&w->dep, method_summary(s, target));
        else w->dep.known = false; /* a member changed in part, or a call that can change the object */
        return CXChildVisit_Continue;
    }
    case CXCursor_BinaryOperator:
        if (clang_getCursorBinaryOperatorKind(c) == CXBinaryOperator_Assign) w->dep.known = false;
        break;
    case CXCursor_UnaryOperator:
        if (is_step(c) || clang_getCursorUnaryOperatorKind(c) == CXUnaryOperator_AddrOf) w->dep.known = false;
        break;
    case CXCursor_CallExpr: {
        if (harmless_call(s, c)) break;
        Children *list = children_of(c);
        if (list && free_call(s, list))
            for (unsigned i = 1; i < list->count && w->dep.known; i++) join(&w->dep, expr_summary(s, list->items[i]));
        else
            w->dep.known = false;
        free(list);
        return w->dep.known ? CXChildVisit_Continue : CXChildVisit_Break;
    }
    case CXCursor_CompoundAssignOperator:
    case CXCursor_CXXThisExpr: /* `this` handed out */
    case CXCursor_LambdaExpr:
    case CXCursor_OverloadedDeclRef:
    case CXCursor_DeclStmt:
    case CXCursor_CXXConstCastExpr:
    case CXCursor_CXXReinterpretCastExpr:
    case CXCursor_StmtExpr:
    case CXCursor_AsmStmt:
        w->dep.known = false;
        break;
    default:
        break;
    }
    return w->dep.known ? CXChildVisit_Recurse : CXChildVisit_Break;
}

/* ---- the writes to a field in the constructor ---------------------------------- */

typedef struct {
    Summary *s;
    CXCursor field;
    CuRecordDep dep;
    bool written;
} Writes;

static CXCursor unparen(CXCursor c) {
    while (clang_getCursorKind(c) == CXCursor_ParenExpr) {
        Children *list = children_of(c);
        bool one = list && list->count == 1;
        if (one) c = list->items[0];
        free(list);
        if (!one) break;
    }
    return c;
}

/* `field` or `(field)` of the object being built, a scalar one */
static bool own_scalar(Summary *s, CXCursor lhs) {
    lhs = unparen(lhs);
    return is_own_member(lhs, s->record) && cu_record_scalar_field(clang_getCursorReferenced(lhs));
}

/* The constructor's body, statement by statement, under conditions that
 * already depend on `under`. Only what can be followed is taken: blocks,
 * `if`/`else` without an init-statement, and expression statements that
 * assign or step one scalar field of the object from an expression that
 * only reads. Anything else makes the summary unknown. */
static void scan_writes(Writes *w, CXCursor stmt, CuRecordDep under, int nesting) {
    if (!w->dep.known) return;
    enum CXCursorKind k = clang_getCursorKind(stmt);
    Children *list = nesting > 64 ? NULL : children_of(stmt);
    if (!list || list->overflow) {
        w->dep.known = false;
        free(list);
        return;
    }
    switch (k) {
    case CXCursor_CompoundStmt:
        for (unsigned i = 0; i < list->count && w->dep.known; i++) scan_writes(w, list->items[i], under, nesting + 1);
        break;
    case CXCursor_NullStmt:
        break;
    case CXCursor_IfStmt: {
        /* children: the condition, then the branches */
        if (list->count < 2 || !clang_isExpression(clang_getCursorKind(list->items[0]))) {
            w->dep.known = false;
            break;
        }
        CuRecordDep inner = under;
        join(&inner, expr_summary(w->s, list->items[0]));
        if (!inner.known) w->dep.known = false;
        for (unsigned i = 1; i < list->count && w->dep.known; i++) scan_writes(w, list->items[i], inner, nesting + 1);
        break;
    }
    case CXCursor_BinaryOperator:
    case CXCursor_CompoundAssignOperator: {
        bool assign = k == CXCursor_CompoundAssignOperator ||
                      clang_getCursorBinaryOperatorKind(stmt) == CXBinaryOperator_Assign;
        if (!assign || list->count != 2 || !own_scalar(w->s, list->items[0])) {
            w->dep.known = false;
            break;
        }
        CuRecordDep value = expr_summary(w->s, list->items[1]);
        if (!value.known) w->dep.known = false;
        else if (same(clang_getCursorReferenced(unparen(list->items[0])), w->field)) {
            w->written = true;
            join(&w->dep, under);
            join(&w->dep, value);
        }
        break;
    }
    case CXCursor_UnaryOperator:
        if (!is_step(stmt) || list->count != 1 || !own_scalar(w->s, list->items[0])) w->dep.known = false;
        else if (same(clang_getCursorReferenced(unparen(list->items[0])), w->field)) {
            w->written = true;
            join(&w->dep, under);
        }
        break;
    default:
        w->dep.known = false; /* loops, calls, declarations, returns, ... */
        break;
    }
    free(list);
}

static CuRecordDep field_summary(Summary *s, CXCursor field) {
    CuRecordDep none = {true, 0, false, false}, unknown = {false, 0, false, false};
    if (is_busy(s, field)) return none; /* `len = len + 1` adds nothing */
    if (clang_Cursor_isNull(s->ctor)) return cu_record_scalar_field(field) ? none : unknown; /* purity alone */
    if (s->depth == MAX_NESTING || ++s->steps > MAX_STEPS || !cu_record_scalar_field(field)) return unknown;
    s->busy[s->depth++] = field;
    Writes w = {s, field, none, false};
    Children *list = children_of(s->ctor);
    bool body = false;
    for (unsigned i = 0; list && !list->overflow && i < list->count && w.dep.known; i++) {
        CXCursor c = list->items[i];
        enum CXCursorKind k = clang_getCursorKind(c);
        if (k == CXCursor_MemberRef && i + 1 < list->count) {
            /* a member initializer: the member, then its expression; every
             * one must only read, the field's own is its value */
            CuRecordDep value = expr_summary(s, list->items[i + 1]);
            if (!value.known) w.dep.known = false;
            else if (same(clang_getCursorReferenced(c), field)) {
                w.written = true;
                join(&w.dep, value);
            }
            i++;
        } else if (k == CXCursor_CompoundStmt) {
            body = true;
            scan_writes(&w, c, none, 0);
        } else if (k != CXCursor_ParmDecl && k != CXCursor_TemplateTypeParameter &&
                   k != CXCursor_NonTypeTemplateParameter && k != CXCursor_TemplateTemplateParameter &&
                   !clang_isAttribute(k)) {
            w.dep.known = false; /* a base class or a delegated constructor builds part of the object */
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

/* a const method whose body is `return <expression that only reads>;` */
static CuRecordDep method_summary(Summary *s, CXCursor method) {
    CuRecordDep none = {true, 0, false, false}, unknown = {false, 0, false, false};
    if (clang_getCursorKind(method) == CXCursor_OverloadedDeclRef) {
        CuRecordDep all = none;
        unsigned n = clang_getNumOverloadedDecls(method);
        for (unsigned i = 0; i < n && all.known; i++) join(&all, method_summary(s, clang_getOverloadedDecl(method, i)));
        return n ? all : unknown;
    }
    CXCursor def = clang_getCursorDefinition(method);
    if (clang_Cursor_isNull(def) || !cu_record_is_const_method(def)) return unknown;
    if (is_busy(s, def)) return none; /* recursion reads nothing new */
    if (s->depth == MAX_NESTING || ++s->steps > MAX_STEPS) return unknown;
    s->busy[s->depth++] = def;
    CXCursor outer = s->method;
    s->method = def;
    CuRecordDep d = unknown;
    Children *list = children_of(def), *body = NULL, *ret = NULL;
    CXCursor last = list && list->count ? list->items[list->count - 1] : clang_getNullCursor();
    if (list && !list->overflow && clang_getCursorKind(last) == CXCursor_CompoundStmt) body = children_of(last);
    if (body && body->count == 1 && clang_getCursorKind(body->items[0]) == CXCursor_ReturnStmt)
        ret = children_of(body->items[0]);
    if (ret && ret->count == 1) d = expr_summary(s, ret->items[0]);
    free(ret);
    free(body);
    free(list);
    s->method = outer;
    s->depth--;
    return d;
}

/* the record itself can be followed: no base class, no union, no anonymous
 * member union or struct, and every default member initializer only reads */
static bool plain_record(Summary *s) {
    CXCursor def = clang_getCursorDefinition(s->record);
    if (clang_Cursor_isNull(def)) return false;
    if (clang_getCursorKind(def) == CXCursor_UnionDecl ||
        (clang_getCursorKind(def) == CXCursor_ClassTemplate && clang_getTemplateCursorKind(def) == CXCursor_UnionDecl))
        return false;
    Children *list = children_of(def);
    bool ok = list && !list->overflow;
    for (unsigned i = 0; ok && i < list->count; i++) {
        CXCursor c = list->items[i];
        enum CXCursorKind k = clang_getCursorKind(c);
        if (k == CXCursor_CXXBaseSpecifier || k == CXCursor_UnionDecl ||
            ((k == CXCursor_StructDecl || k == CXCursor_ClassDecl) && clang_Cursor_isAnonymous(c)))
            ok = false;
        else if (k == CXCursor_FieldDecl) {
            Children *field_children = children_of(c);
            for (unsigned j = 0; field_children && j < field_children->count && ok; j++)
                if (clang_isExpression(clang_getCursorKind(field_children->items[j])))
                    ok = expr_summary(s, field_children->items[j]).known;
            free(field_children);
        }
    }
    free(list);
    return ok;
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
    return !s->params.overflow && plain_record(s);
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

bool cu_record_method_reads_only(CXCursor method) {
    Summary s;
    memset(&s, 0, sizeof s);
    CXCursor one = clang_getCursorKind(method) == CXCursor_OverloadedDeclRef ? clang_getOverloadedDecl(method, 0) : method;
    s.ctor = clang_getNullCursor();
    s.method = clang_getNullCursor();
    s.record = record_of(one);
    return cu_record_is_const_method(method) && method_summary(&s, method).known;
}
