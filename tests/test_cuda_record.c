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
    "__device__ float scale(int n);\n"
    "struct Slope {\n"
    "    __device__ Slope(int n, int tid) : rows(n), lane(tid), slope(1.0f / scale(n + 1)) {}\n"
    "    int rows, lane;\n"
    "    float slope;\n"
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
    "    Slope slope(n, threadIdx.x);\n"
    "    int s_rows = slope.rows;\n"
    "    float s_slope = slope.slope;\n"
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
    cr_expect_eq(variance_of(src, "s_rows"), CU_UNIFORM, "a free function called in an initializer changes nothing");
    cr_expect_eq(variance_of(src, "s_slope"), CU_UNIFORM, "its result depends on its argument, n");
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
    cr_expect_eq(variance_of(src, "d_rows"), CU_PER_THREAD, "a declaration in the body: nothing is followed");
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

/* What a helper's review found the first version missed: every `v_*` here
 * can differ between threads (the constructor, or code after it, puts the
 * thread index into the field read), and must not be called uniform. */
static const char *const HOLES_TEXT =
    "#include <cuda_runtime.h>\n"
    "struct A { int len; __device__ A(int b, int t) : len(b) { int &r = len; r = t; } };\n"
    "struct B { int len; int *p; __device__ B(int b, int t) : len(b), p(&len) { *p = t; } };\n"
    "struct C { int len; __device__ C(int b, int t) : len(0) { (t > 3) && (len = 1); } };\n"
    "struct D;\n"
    "__device__ void fill(D *d, int t);\n"
    "struct D { int len; __device__ D(int b, int t) : len(b) { fill(this, t); } };\n"
    "struct E { int len; __device__ E(int b, int t) : len(b) { (*this).set(t); } __device__ void set(int v) { len = v; } };\n"
    "__device__ void setr(int &x, int v);\n"
    "struct F { int len; __device__ F(int b, int t) : len(b) { setr((len), t); } };\n"
    "struct P { int v; };\n"
    "struct G { P p; int len; __device__ G(int b, int t) : len(b) { p.v = t; } __device__ int get() const { return p.v; } };\n"
    "struct H { int arr[2]; __device__ H(int b, int t) { arr[0] = t; arr[1] = b; } };\n"
    "struct IB { int bt; };\n"
    "struct I : IB { int len; __device__ I(int b, int t) : len(b) { bt = t; } __device__ int get() const { return bt; } };\n"
    "struct L { int len; int lane; __device__ L(int b, int t) : len(b), lane(t) {} };\n"
    "struct N { int arr[2]; int lane; __device__ N(int b, int t) : lane(t) {} };\n"
    "struct O { int len; int lane; __device__ O(int b, int t) : len(b), lane(t) {}\n"
    "  __device__ void set(int v) const { const_cast<O *>(this)->len = v; } };\n"
    "struct R { int len; __device__ R(int b) : len(b) {} };\n"
    "__global__ void k(int n) {\n"
    "    A a(blockIdx.x, threadIdx.x); int v_a = a.len;\n"
    "    B bb(blockIdx.x, threadIdx.x); int v_b = bb.len;\n"
    "    C c(blockIdx.x, threadIdx.x); int v_c = c.len;\n"
    "    D d(blockIdx.x, threadIdx.x); int v_d = d.len;\n"
    "    E e(blockIdx.x, threadIdx.x); int v_e = e.len;\n"
    "    F f(blockIdx.x, threadIdx.x); int v_f = f.len;\n"
    "    G g(blockIdx.x, threadIdx.x); int v_g = g.get();\n"
    "    H h(blockIdx.x, threadIdx.x); int v_h = h.arr[0];\n"
    "    I i(blockIdx.x, threadIdx.x); int v_i = i.get();\n"
    "    L l(blockIdx.x, threadIdx.x);\n"
    "    auto ref = [&]() -> int & { return l.len; };\n"
    "    ref() = threadIdx.x;\n"
    "    int v_l = l.len;\n"
    "    L m(blockIdx.x, threadIdx.x); int dummy = 0;\n"
    "    (n > 0 ? m.len : dummy) = threadIdx.x;\n"
    "    int v_m = m.len;\n"
    "    N nn(blockIdx.x, threadIdx.x); nn.arr[0] = threadIdx.x; int v_n = nn.arr[0];\n"
    "    O o(blockIdx.x, threadIdx.x); o.set(threadIdx.x); int v_o = o.len;\n"
    "    int a2 = blockIdx.x;\n"
    "    for (int step = 0; step < 4; step++) {\n"
    "        R r(a2);\n"
    "        a2 = r.len;\n"
    "        int v_r = r.len;\n"
    "        a2 = threadIdx.x;\n"
    "    }\n"
    "}\n"
    "template <class T> struct PS { int len; __device__ PS(int b, int t) : len(b) {} };\n"
    "template <> struct PS<float> { int len; __device__ PS(int b, int t) : len(t) {} };\n"
    "template <class T> struct Outer { struct Inner { int len; __device__ Inner(int b, int t) : len(t) {} }; };\n"
    "template <class T> struct Tag { int len; __device__ Tag(int b, int t) : len(b) {} };\n"
    "template <class T> struct Wrap { int len; __device__ Wrap(int b, int t) : len(t) {} };\n"
    "template <class T> __global__ void t(T *out) {\n"
    "    PS<T> ps(blockIdx.x, threadIdx.x); int v_ps = ps.len;\n"
    "    typename Outer<T>::Inner in(blockIdx.x, threadIdx.x); int v_in = in.len;\n"
    "    Wrap<Tag<T>> w(blockIdx.x, threadIdx.x); int v_w = w.len;\n"
    "}\n";

Test(cuda_record, the_reviews_counterexamples_stay_per_thread) {
    Document *doc;
    CudaSource *src = cuda_parse_text("/tmp/advise-cuda-record-holes.cu", HOLES_TEXT, &doc);
    static const char *const names[] = {"v_a", "v_b", "v_c", "v_d", "v_e", "v_f", "v_g", "v_h", "v_i",
                                        "v_l", "v_m", "v_n", "v_o", "v_r", "v_ps", "v_in", "v_w"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        cr_expect_eq(variance_of(src, names[i]), CU_PER_THREAD, "%s is called uniform", names[i]);
    cuda_source_free(src);
    document_free(doc);
}
