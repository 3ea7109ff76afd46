/* Objects built in place (analysis/cuda/cuda_record.c, through
 * cuda_index.c): a field of a local, or a const method's result, depends only
 * on the constructor arguments that reach it, and anything the analysis
 * cannot follow falls back to the whole object (every argument). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/cuda/cuda_index.h"
#include "analysis/cuda/cuda_query.h"
#include "tests/cuda_nodes.h"

static const char *const FILE_TEXT =
    "#include <cuda_runtime.h>\n"
    "struct Info {\n"
    "    __device__ Info(int n, int tid) : rows(n / 4), lane(tid) {\n"
    "        if (n > 8) extra = tid; else extra = 0;\n"
    "    }\n"
    "    __device__ int rows_of() const { return rows; }\n"
    "    __device__ int lane_of() const { return this->lane; }\n"
    "    __device__ void bump() { rows += lane; }\n"
    "    int rows, lane, extra;\n"
    "};\n"
    "struct Early {\n"
    "    __device__ Early(int n, int tid) : rows(n) { if (tid > 3) return; rows = 2; }\n"
    "    int rows;\n"
    "};\n"
    "struct Local {\n"
    "    __device__ Local(int n, int tid) { int t = tid; rows = n; other = t; }\n"
    "    int rows, other;\n"
    "};\n"
    "struct Own {\n"
    "    __device__ Own(int n) : rows(n), lane(threadIdx.x) {}\n"
    "    int rows, lane;\n"
    "};\n"
    "struct Mut {\n"
    "    __device__ Mut(int n, int tid) : rows(n), cache(tid) {}\n"
    "    __device__ int get() const { return rows; }\n"
    "    int rows;\n"
    "    mutable int cache;\n"
    "};\n"
    "struct Cond {\n"
    "    __device__ Cond(int n, int tid) { if (tid == 0) flag = 1; else flag = 0; rows = n; }\n"
    "    int flag, rows;\n"
    "};\n"
    "template <int N>\n"
    "struct Range {\n"
    "    template <typename P>\n"
    "    __device__ Range(const P &p, int block, int tid) : first(p.starts[block]) {\n"
    "        last = p.starts[block + 1] - first;\n"
    "        mine = first * N + tid;\n"
    "    }\n"
    "    __device__ bool empty() const { return last <= first; }\n"
    "    int first, last, mine;\n"
    "};\n"
    "__device__ void take(Info &info);\n"
    "__global__ void k(int n) {\n"
    "    Info info(n, threadIdx.x);\n"
    "    int a_rows = info.rows;\n"
    "    int a_lane = info.lane;\n"
    "    int a_extra = info.extra;\n"
    "    int a_rows_of = info.rows_of();\n"
    "    int a_lane_of = info.lane_of();\n"
    "    Info bumped(n, threadIdx.x);\n"
    "    bumped.bump();\n"
    "    int b_rows = bumped.rows;\n"
    "    Info passed(n, threadIdx.x);\n"
    "    take(passed);\n"
    "    int b_passed = passed.rows;\n"
    "    Info written(n, threadIdx.x);\n"
    "    written.lane = 0;\n"
    "    int b_written = written.rows;\n"
    "    Early early(n, threadIdx.x);\n"
    "    int c_rows = early.rows;\n"
    "    Local local(n, threadIdx.x);\n"
    "    int d_rows = local.rows;\n"
    "    int d_other = local.other;\n"
    "    Own own(n);\n"
    "    int e_rows = own.rows;\n"
    "    int e_lane = own.lane;\n"
    "    Mut mut(n, threadIdx.x);\n"
    "    int f_rows = mut.get();\n"
    "    Cond cond(n, threadIdx.x);\n"
    "    int g_flag = cond.flag;\n"
    "    int g_rows = cond.rows;\n"
    "    Info source(n, threadIdx.x);\n"
    "    Info copy = source;\n"
    "    int h_rows = copy.rows;\n"
    "    Info by_block(blockIdx.x, threadIdx.x);\n"
    "    int i_rows = by_block.rows;\n"
    "}\n"
    "struct Starts { const int *starts; };\n"
    "template <typename P>\n"
    "__global__ void t(P p) {\n"
    "    const Range<32> range(p, blockIdx.x, threadIdx.x);\n"
    "    int j_last = range.last;\n"
    "    int j_mine = range.mine;\n"
    "    bool j_empty = range.empty();\n"
    "    Range<32> loose(p, blockIdx.x, threadIdx.x);\n"
    "    take_range(loose);\n"
    "    int k_last = loose.last;\n"
    "}\n";

static CuNode *var(const CudaSource *src, const char *name) { return cuda_var(src, name); }

static CuVariance variance_of(const CudaSource *src, const char *name) {
    CuNode *v = var(src, name);
    CuIndex *ix = cu_index_new(src, cu_function_of(v));
    cr_assert_not_null(ix);
    CuVariance got = cu_index_variance(ix, v);
    cu_index_free(ix);
    return got;
}

static CudaSource *parse(Document **doc_out) { return cuda_parse_text("/tmp/advise-cuda-record-test.cu", FILE_TEXT, doc_out); }

Test(cuda_record, fields_follow_the_arguments_that_reach_them) {
    Document *doc;
    CudaSource *src = parse(&doc);
    cr_expect_eq(variance_of(src, "a_rows"), CU_UNIFORM, "rows comes from n alone");
    cr_expect_eq(variance_of(src, "a_lane"), CU_PER_THREAD, "lane is the thread index");
    cr_expect_eq(variance_of(src, "a_extra"), CU_PER_THREAD, "extra is assigned the thread index in a branch");
    cr_expect_eq(variance_of(src, "a_rows_of"), CU_UNIFORM, "a const method that reads rows");
    cr_expect_eq(variance_of(src, "a_lane_of"), CU_PER_THREAD, "a const method that reads this->lane");
    cr_expect_eq(variance_of(src, "e_rows"), CU_UNIFORM);
    cr_expect_eq(variance_of(src, "e_lane"), CU_PER_THREAD, "the constructor reads threadIdx itself");
    cr_expect_eq(variance_of(src, "g_flag"), CU_PER_THREAD, "assigned under a condition on the thread index");
    cr_expect_eq(variance_of(src, "g_rows"), CU_UNIFORM);
    cr_expect_eq(variance_of(src, "d_rows"), CU_UNIFORM, "the constructor's local does not reach rows");
    CuNode *i_rows = var(src, "i_rows");
    CuIndex *ix = cu_index_new(src, cu_function_of(i_rows));
    cr_expect_eq(cu_index_variance(ix, i_rows), CU_UNIFORM);
    cr_expect(cu_index_uses_block(ix, i_rows), "rows of blockIdx.x depends on the block");
    cu_index_free(ix);
    cuda_source_free(src);
    document_free(doc);
}

Test(cuda_record, what_cannot_be_followed_takes_the_whole_object) {
    Document *doc;
    CudaSource *src = parse(&doc);
    cr_expect_eq(variance_of(src, "b_rows"), CU_PER_THREAD, "a non-const method was called on it");
    cr_expect_eq(variance_of(src, "b_passed"), CU_PER_THREAD, "handed to a function by reference");
    cr_expect_eq(variance_of(src, "b_written"), CU_PER_THREAD, "a field written after the construction");
    cr_expect_eq(variance_of(src, "c_rows"), CU_PER_THREAD, "an early return in the constructor");
    cr_expect_eq(variance_of(src, "d_other"), CU_PER_THREAD, "a local of the constructor");
    cr_expect_eq(variance_of(src, "f_rows"), CU_PER_THREAD, "a mutable field");
    cr_expect_eq(variance_of(src, "h_rows"), CU_PER_THREAD, "a copy of another object");
    cuda_source_free(src);
    document_free(doc);
}

Test(cuda_record, class_templates_in_kernel_templates) {
    Document *doc;
    CudaSource *src = parse(&doc);
    cr_expect_eq(variance_of(src, "j_last"), CU_UNIFORM, "a dependent member, found by name in the template");
    cr_expect_eq(variance_of(src, "j_mine"), CU_PER_THREAD);
    cr_expect_eq(variance_of(src, "j_empty"), CU_UNIFORM, "a const method of the template");
    cr_expect_eq(variance_of(src, "k_last"), CU_PER_THREAD, "not const, and handed to a call");
    cuda_source_free(src);
    document_free(doc);
}
