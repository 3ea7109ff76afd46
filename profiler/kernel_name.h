/* The base name of a kernel from its demangled name, so that a CUDA
 * function's name in the source finds its measured launches:
 *   "transpose_naive(float*, float const*, int, int)"         -> "transpose_naive"
 *   "void at::native::(anonymous namespace)::foo<4>(int)"     -> "foo"
 *   "std::enable_if<!(false), void>::type ns::gemv<float>(T)" -> "gemv"
 *   "sm80_xmma_gemm_f32f32_tn_n"                              -> itself */
#ifndef ADVISE_KERNEL_NAME_H
#define ADVISE_KERNEL_NAME_H

#include <stdbool.h>
#include <stddef.h>

/* Heap string ("" when nothing is left); NULL only when memory runs out. */
char *kernel_base_name(const char *demangled);

/* The part of a demangled name before its parameters ("relu(float*, int)"
 * -> "relu") into buf, cut at 80 bytes with an ellipsis (template kernels
 * run long); for people: hovers, sidebars. size must be at least 8. */
void kernel_short_name(const char *demangled, char *buf, size_t size);

/* A float32 matrix product on CUDA cores (FFMA), not tensor cores: cuBLAS
 * and CUTLASS name them `..._sgemm_...` or `xmma_gemm_f32f32_f32f32_..._ffma_`;
 * their TF32 versions say `tf32` or `tensor`. */
bool kernel_is_fp32_simt_gemm(const char *name);

/* A float32 matrix-vector product (cuBLAS's gemv family, e.g.
 * `gemvNSP_kernel<float, ...>`, `internal::gemvx::kernel<int, int, float, ...>`):
 * one row at a time, as attention runs when decoding token by token. */
bool kernel_is_fp32_gemv(const char *name);

/* The operator of a PyTorch elementwise kernel named after it, as its
 * functor or lambda's function says (`at::native::sigmoid_kernel_cuda(...)`,
 * `(anonymous namespace)::silu_kernel(...)` -> "sigmoid", "silu"), copied
 * into op; false for generic functors (`BinaryFunctor<..., MulFunctor>`,
 * `CUDAFunctor_add`), for backward kernels (`sigmoid_backward_kernel_cuda`)
 * and for anything else. Autograd names an operator's backward kernel
 * `<op>_backward`, so this finds a forward kernel's backward. */
bool kernel_elementwise_op(const char *name, char *op, size_t size);

#endif
