/* The one-element-per-thread guard of a kernel (grid_guard.h). */
#include "rules/cuda/support/grid_guard.h"

#include <string.h>

#include "analysis/cuda/cuda_index.h"

/* `i < E` (less) or `i >= E` (not less), either way round, with E the same
 * for every thread of the grid */
static bool is_bound(const CudaSource *src, CuNode *cond, const CuNode *index, bool less, CuNode **bound) {
    cond = cu_strip(cond);
    if (!cond || cond->kind != CXCursor_BinaryOperator || cond->child_count != 2) return false;
    int lhs_op = less ? CXBinaryOperator_LT : CXBinaryOperator_GE;
    int rhs_op = less ? CXBinaryOperator_GT : CXBinaryOperator_LE;
    CuNode *e = NULL;
    if (cond->op == lhs_op && cu_refers_to(cond->children[0], index)) e = cond->children[1];
    else if (cond->op == rhs_op && cu_refers_to(cond->children[1], index)) e = cond->children[0];
    if (!e || cu_depends_on_thread_or_block(src, e)) return false;
    *bound = e;
    return true;
}

/* `i >= E` or `i >= E || ...`: every thread past the end leaves */
static bool is_exit_bound(const CudaSource *src, CuNode *cond, const CuNode *index, CuNode **bound) {
    cond = cu_strip(cond);
    if (cond && cond->kind == CXCursor_BinaryOperator && cond->op == CXBinaryOperator_LOr && cond->child_count == 2)
        return is_exit_bound(src, cond->children[0], index, bound) ||
               is_exit_bound(src, cond->children[1], index, bound);
    return is_bound(src, cond, index, false, bound);
}

/* memory or calls */
static bool touches_memory(const CuNode *n) {
    if (n->kind == CXCursor_ArraySubscriptExpr || n->kind == CXCursor_CallExpr ||
        (n->kind == CXCursor_UnaryOperator && n->op == CXUnaryOperator_Deref) ||
        (n->kind == CXCursor_MemberRefExpr && !cu_is_any_builtin(n)))
        return true;
    for (uint32_t i = 0; i < n->child_count; i++)
        if (touches_memory(n->children[i])) return true;
    return false;
}

/* for (int i = index; i < E; i += stride) */
static bool is_grid_stride_loop(const CudaSource *src, CuNode *s, GridGuard *g) {
    CuNode *init = s->children[0], *cond = s->children[1], *inc = s->children[2];
    CuNode *v = cu_single_var_decl(init);
    if (!v || !cu_is_global_index_x(cu_initializer(v))) return false;
    if (!is_bound(src, cond, v, true, &g->bound)) return false;
    if (!inc || inc->kind != CXCursor_CompoundAssignOperator || inc->op != CXBinaryOperator_AddAssign ||
        inc->child_count != 2 || !cu_refers_to(inc->children[0], v))
        return false;
    if (!cu_is_grid_stride_x(inc->children[1]) && !(g->stride && cu_refers_to(inc->children[1], g->stride)))
        return false;
    g->index = v;
    return true;
}

bool grid_guard_of(const CudaSource *src, const CuNode *kernel, unsigned options, GridGuard *g) {
    memset(g, 0, sizeof *g);
    CuNode *body = cu_function_body(kernel);
    if (!body || body->child_count == 0) return false;
    g->body = body;
    uint32_t k = 0;
    /* declarations first: the index, a grid stride, (maybe) other pure values */
    for (; k < body->child_count && body->children[k]->kind == CXCursor_DeclStmt; k++) {
        CuNode *stmt = body->children[k];
        bool others = options & GRID_GUARD_OTHER_DECLS;
        if (others && touches_memory(stmt)) return false;
        CuNode *v = cu_single_var_decl(stmt), *init = v ? cu_initializer(v) : NULL;
        if (init && cu_is_global_index_x(init) && !g->index) g->index = v;
        else if (init && cu_is_grid_stride_x(init) && !g->stride) g->stride = v;
        else if (!others) return false;
    }
    if (k >= body->child_count) return false;
    CuNode *s = body->children[k];
    g->guard = s;
    g->guard_at = k;
    if (s->kind == CXCursor_IfStmt && s->child_count == 2 && g->index) {
        if (k + 1 == body->child_count && is_bound(src, s->children[0], g->index, true, &g->bound)) {
            g->kind = GRID_GUARD_IF;
            return true;
        }
        if (!cu_is_bare_return(s->children[1])) return false;
        bool exit = options & GRID_GUARD_EXIT_OR ? is_exit_bound(src, s->children[0], g->index, &g->bound)
                                                 : is_bound(src, s->children[0], g->index, false, &g->bound);
        g->kind = GRID_GUARD_RETURN;
        return exit;
    }
    /* a second index would be unused or odd */
    if (s->kind == CXCursor_ForStmt && s->child_count == 4 && k + 1 == body->child_count && !g->index &&
        is_grid_stride_loop(src, s, g)) {
        g->kind = GRID_GUARD_STRIDE;
        return true;
    }
    return false;
}
