/* The shared CUDA index analysis (analysis/cuda/cuda_index.c): how values vary
 * across a block's threads, the lane coefficient through locals, splits,
 * masks, base pointers and cooperative-groups ranks, and divergence. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/cuda/cuda_index.h"
#include "analysis/cuda/cuda_query.h"
#include "tests/cuda_nodes.h"

static const char *const FILE_TEXT =
    "#include <cooperative_groups.h>\n"
    "#include <cuda_runtime.h>\n"
    "namespace cg = cooperative_groups;\n"
    "__global__ void k(const float *x, float *y, int n, int T, int C, int KW) {\n"
    "    __shared__ int flag;\n"
    "    int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    int warp = threadIdx.x / 32;\n"
    "    int lane = threadIdx.x % 32;\n"
    "    int b = idx / T;\n"
    "    int t2 = idx % T;\n"
    "    int q = idx / KW;\n"
    "    int masked = threadIdx.x & 63;\n"
    "    int shifted = threadIdx.x >> 5;\n"
    "    int rowy = threadIdx.y;\n"
    "    unsigned any = __ballot_sync(0xffffffffu, x[idx] > 0.0f);\n"
    "    cg::thread_block block = cg::this_thread_block();\n"
    "    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);\n"
    "    int r = block.thread_rank();\n"
    "    int l = tile.thread_rank();\n"
    "    int m = tile.meta_group_rank();\n"
    "    const float *row = x + b * T * C + t2 * C;\n"
    "    if (flag) return;\n"
    "    y[idx] = row[0] + warp + lane + q + masked + shifted + rowy + any + r + l + m;\n"
    "    for (int t = blockIdx.x * C + idx; t < (blockIdx.x + 1) * C + idx; t += C) {\n"
    "        __syncthreads();\n"
    "    }\n"
    "    for (int t = idx; t < n; t += blockDim.x) {\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (lane < 4) return;\n"
    "    __syncthreads();\n"
    "}\n";

static CuNode *var(const CudaSource *src, const char *name) { return cuda_var(src, name); }

typedef struct {
    const CudaSource *src;
    enum CXCursorKind kind;
    int skip;
    CuNode *found;
} FindKind;

static bool find_kind_visit(CuNode *n, void *data) {
    FindKind *f = data;
    if (f->found) return false;
    if (n->kind == f->kind && f->skip-- == 0) {
        f->found = n;
        return false;
    }
    return true;
}

/* the nth (from 0) node of a kind, in source order */
static CuNode *nth(const CudaSource *src, enum CXCursorKind kind, int n) {
    FindKind f = {src, kind, n, NULL};
    cu_walk(src->root, find_kind_visit, &f);
    cr_assert_not_null(f.found);
    return f.found;
}

static CudaSource *parse(Document **doc_out) { return cuda_parse_text("/tmp/advise-cuda-index-test.cu", FILE_TEXT, doc_out); }

static CuLane lane_of_var(CuIndex *ix, const CudaSource *src, const char *name) {
    return cu_index_lane(ix, cu_initializer(var(src, name)));
}

Test(cuda_index, variance_across_the_block) {
    Document *doc;
    CudaSource *src = parse(&doc);
    CuNode *fn = cu_function_of(var(src, "idx"));
    CuIndex *ix = cu_index_new(src, fn);
    cr_expect_eq(cu_index_variance(ix, var(src, "idx")), CU_PER_THREAD);
    cr_expect_eq(cu_index_variance(ix, var(src, "warp")), CU_WARP_UNIFORM, "tid / 32 is the warp");
    cr_expect_eq(cu_index_variance(ix, var(src, "shifted")), CU_WARP_UNIFORM, "tid >> 5 is the warp");
    cr_expect_eq(cu_index_variance(ix, var(src, "lane")), CU_PER_THREAD);
    cr_expect_eq(cu_index_variance(ix, var(src, "any")), CU_WARP_UNIFORM, "a ballot is the same in the warp");
    cr_expect_eq(cu_index_variance(ix, var(src, "r")), CU_PER_THREAD);
    cr_expect_eq(cu_index_variance(ix, var(src, "m")), CU_WARP_UNIFORM, "meta_group_rank of a 32-tile");
    cr_expect_eq(cu_index_variance(ix, var(src, "flag")), CU_UNIFORM, "a __shared__ scalar");
    cr_expect_eq(cu_index_variance(ix, var(src, "rowy")), CU_PER_THREAD, "y can split a warp");
    cr_expect(cu_index_uses_thread(ix, var(src, "rowy"), 'y'));
    cr_expect(!cu_index_uses_thread(ix, var(src, "rowy"), 'x'));
    cr_expect(cu_index_uses_block(ix, var(src, "idx")));
    cu_index_assume_block_x(ix, 64);
    cr_expect_eq(cu_index_variance(ix, var(src, "rowy")), CU_WARP_UNIFORM, "64 threads along x: y is per warp");
    cu_index_free(ix);
    cuda_source_free(src);
    document_free(doc);
}

Test(cuda_index, lane_coefficients) {
    Document *doc;
    CudaSource *src = parse(&doc);
    CuIndex *ix = cu_index_new(src, cu_function_of(var(src, "idx")));
    CuLane l = lane_of_var(ix, src, "t2");
    cr_expect(l.kind == CU_LANE_CONST && l.c == 1, "idx %% T moves with the lane");
    cr_expect_eq(lane_of_var(ix, src, "b").kind, CU_LANE_ZERO, "idx / T beside idx %% T: the row");
    cr_expect_eq(lane_of_var(ix, src, "q").kind, CU_LANE_UNKNOWN, "idx / KW alone: KW may be tiny");
    cr_expect_eq(lane_of_var(ix, src, "warp").kind, CU_LANE_ZERO);
    l = lane_of_var(ix, src, "lane");
    cr_expect(l.kind == CU_LANE_CONST && l.c == 1);
    l = lane_of_var(ix, src, "masked");
    cr_expect(l.kind == CU_LANE_CONST && l.c == 1, "& 63 keeps the lane");
    cr_expect_eq(lane_of_var(ix, src, "rowy").kind, CU_LANE_ZERO);
    l = lane_of_var(ix, src, "r");
    cr_expect(l.kind == CU_LANE_CONST && l.c == 1, "block.thread_rank()");
    l = lane_of_var(ix, src, "l");
    cr_expect(l.kind == CU_LANE_CONST && l.c == 1, "tile.thread_rank()");
    cr_expect_eq(lane_of_var(ix, src, "m").kind, CU_LANE_ZERO);
    bool global = false;
    CuLane p = cu_index_pointer_lane(ix, cu_initializer(var(src, "row")), 4, &global);
    cr_expect(global);
    cr_expect(p.kind == CU_LANE_RUNTIME && p.factor_count == 1, "a per-thread base pointer: t2 * C");
    cu_index_free(ix);
    cuda_source_free(src);
    document_free(doc);
}

Test(cuda_index, divergence) {
    Document *doc;
    CudaSource *src = parse(&doc);
    CuIndex *ix = cu_index_new(src, cu_function_of(var(src, "idx")));
    CuGuard g;
    /* barrier 0: a loop whose start and bound both move by idx */
    CuNode *first = nth(src, CXCursor_CallExpr, 0);
    for (int i = 0; strcmp(cu_callee(first), "__syncthreads") != 0; i++) first = nth(src, CXCursor_CallExpr, i);
    cr_expect_eq(cu_index_divergent_guards(ix, first, NULL, CU_WARP_UNIFORM, &g, 1), 0, "a uniform trip count");
    /* the second loop starts at idx and stops at n */
    int i = 0;
    CuNode *second = NULL, *third = NULL;
    for (int seen = 0; seen < 3; i++) {
        CuNode *c = nth(src, CXCursor_CallExpr, i);
        if (strcmp(cu_callee(c), "__syncthreads") != 0) continue;
        if (seen == 1) second = c;
        if (seen == 2) third = c;
        seen++;
    }
    cr_expect_eq(cu_index_divergent_guards(ix, second, NULL, CU_WARP_UNIFORM, &g, 1), 1);
    /* the last barrier: `if (flag) return;` is uniform, `if (lane < 4) return;` splits the warp */
    CuExit exits[4];
    int count = cu_index_divergent_exits(ix, third, CU_PER_THREAD, exits, 4);
    cr_expect_eq(count, 1);
    if (count == 1) cr_expect_eq(exits[0].exit->kind, CXCursor_ReturnStmt);
    cu_index_free(ix);
    cuda_source_free(src);
    document_free(doc);
}
