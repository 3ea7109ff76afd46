/* Float32 matmul precision in PyTorch code: where a module makes a
 * precision choice (TF32, autocast, a GradScaler, a half/bfloat16/float64
 * cast or dtype, a framework's reduced `precision=`), and which of its
 * matmul sites do float32 work at scale (a big nn.Linear, attention or a
 * transformer, a transformer-style pretrained model, a matmul on a big
 * dense tensor the code builds). PY009 asks these of the file it checks;
 * the workspace index (python_module_facts.c) asks them once per module so
 * that a program's other modules can be asked too.
 *
 * Both read the code only, and lean towards "no": a size the code does
 * not show is no evidence of scale. */
#ifndef ADVISE_PYTHON_PRECISION_H
#define ADVISE_PYTHON_PRECISION_H

#include <stdbool.h>

#include "analysis/python/python_source.h"

/* Tensor checks one walk may spend on matmul operands (each follows
 * bindings through the file). */
#define PY_MATMUL_CHECK_BUDGET 256

/* The node itself (not its children) makes a precision choice: setting
 * torch.backends.cuda.matmul.allow_tf32 or any fp32_precision knob (to any
 * value), turning cuDNN TF32 off, calling set_float32_matmul_precision,
 * torch autocast or a GradScaler, `.half()`/`.bfloat16()`/`.double()`,
 * naming torch.float16/bfloat16/float64, a string that says bf16/fp16/...,
 * or a keyword such as `torch_dtype=`, `precision="bf16-mixed"`, `bf16=True`.
 * Walkers need not descend into strings: their text is judged whole. */
bool py_node_makes_precision_choice(const PySource *src, TSNode node);

/* The node (a call or an `@`) is a float32 matmul site at scale. budget:
 * tensor checks left, decremented (PY_MATMUL_CHECK_BUDGET to start).
 * from_parameters (may be NULL): set when a size the verdict rests on came
 * from a parameter (its default, or what a call of its function in this
 * file passes), so that a caller in another file may pass other sizes. */
bool py_is_matmul_at_scale(const PySource *src, TSNode node, int *budget, bool *from_parameters);

/* The site multiplies tensors (`a @ b`, torch.mm, x.matmul), as opposed to
 * building a layer. */
bool py_matmul_site_is_tensor_work(const PySource *src, TSNode site);

/* The call is torch.matmul, torch.mm, torch.einsum, F.linear, ... by name,
 * whatever its operands. */
bool py_is_matmul_function_call(const PySource *src, TSNode call);

#endif
