/* Questions about host buffers in CUDA host code: which std::vector a copy's
 * host pointer points into, which variable or field any pointer expression
 * points into, whether a buffer is pinned with cudaHostRegister, which
 * argument of a cudaMemcpy* call is the host side, and whether a vector's
 * storage stays put for the rest of its function. Shared by CU006, CU007,
 * CU008, PR008 and the pin fix. */
#ifndef ADVISE_CUDA_HOST_BUFFER_H
#define ADVISE_CUDA_HOST_BUFFER_H

#include "analysis/cuda/cuda_query.h"

/* std::vector<T> with the default allocator (after references and typedefs) */
bool cu_is_std_vector(const CuNode *n);
/* std::vector<T> (any allocator) or std::array<T, N), const or not: storage
 * that .data() and iterators point into */
bool cu_is_vector_or_array(const CuNode *n);

/* The object of a member call `v.data()` or an operator call `v[0]`, with
 * the method's name in *method; NULL for other calls. */
CuNode *cu_member_call_object(const CuNode *call, const char **method);

/* The declaration of the std::vector whose storage a host pointer
 * expression points into: `v.data()`, `v.data() + k`, `&v[i]`, `&v.front()`,
 * `&v.at(i)`; NULL for anything else. */
CuNode *cu_vector_of_pointer(CuNode *expr);

/* What cu_buffer_reference follows besides `p`, `p + k`, `k + p`, `p - k`
 * and `&p[k]` (p a pointer or an array), which it always does: */
enum {
    CU_BUFFER_ADDRESS = 1 << 0,   /* `&x`: x's own storage */
    CU_BUFFER_CONTAINER = 1 << 1, /* a vector's or array's storage (cu_is_vector_or_array): v.data(), v.begin(),
                                     v.end(), v.cbegin(), v.cend(); `&v[i]`, `&v.front()`, `&v.at(i)` */
    CU_BUFFER_DATA_GET = 1 << 2,  /* `.data()` or `.get()` of any object (smart pointers, thrust vectors) */
};
/* The reference (a DeclRefExpr or MemberRefExpr whose ->ref is set) to the
 * variable or field that a pointer expression points into, following the
 * forms above that `forms` names; NULL for anything else. CU007 follows
 * containers (it compares a copy's host buffer with later reads of it);
 * CU008 follows addresses and .data()/.get() (it collects the buffers a
 * loop's launches and copies touch). */
CuNode *cu_buffer_reference(CuNode *expr, unsigned forms);

/* decl is passed to cudaHostRegister somewhere under root, directly or
 * through a helper of this file that registers its argument. */
bool cu_is_host_registered(CuNode *root, const CuNode *decl);

typedef enum { CU_COPY_OTHER, CU_COPY_TO_DEVICE, CU_COPY_TO_HOST } CuCopyDirection;

/* For a call of cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2D, cudaMemcpy2DAsync,
 * cudaMemcpyToSymbol(Async) or cudaMemcpyFromSymbol(Async) whose direction
 * is written as an enumerator: the direction and the host-side argument
 * (stripped). CU_COPY_OTHER and NULL otherwise (device to device, a
 * variable or cudaMemcpyDefault for the kind, another function). */
CuCopyDirection cu_copy_host_argument(const CuNode *call, CuNode **host);

/* A local std::vector whose storage stays where it is from its declaration
 * to the end of its scope: declared at the top level of a host function's
 * body (not static, not a reference, not const, not in a lambda), and every
 * later use reads through it (data, size, [], at, front, back, begin/end, a
 * range-for, passing it by const reference or by value). *why gets the
 * reason when it is not. */
bool cu_vector_storage_fixed(const CuNode *vector_decl, const char **why);

#endif
