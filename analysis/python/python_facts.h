/* Heuristic facts about PyTorch programs, shared by the Python rules: which
 * expressions are tensors, which names hold models or optimizers, which code
 * does GPU work, and which statements run only now and then.
 *
 * The analysis reads code; it never runs it. Every answer leans towards
 * "don't know", because a rule that cries wolf gets switched off: a fact is
 * true only when the code shows it. */
#ifndef ADVISE_PYTHON_FACTS_H
#define ADVISE_PYTHON_FACTS_H

#include "analysis/python/python_query.h"

typedef enum {
    BINDING_NONE,       /* no binding seen before the offset in this scope */
    BINDING_ASSIGNMENT, /* name = value (value is the right-hand side) */
    BINDING_LOOP_TARGET,/* for name in value (value is the iterable) */
    BINDING_PARAMETER,  /* a parameter of the enclosing function */
    BINDING_OTHER,      /* with ... as name, augmented assignment, tuple unpacking of a call, ... */
} BindingKind;

/* Forgets this thread's state of a question left unfinished (a rule cut
 * short by the crash guard): the engine calls it before each rule. */
void py_facts_thread_reset(void);

/* The nearest binding of identifier `name` before `offset` within the scope
 * that holds `at` (a function body, or the module; module-level bindings are
 * searched too from inside functions). *value is the right-hand side. */
BindingKind py_binding_before(const PySource *src, TSNode at, const char *name, size_t length, size_t offset,
                              TSNode *value);

/* The bindings of identifier `id` that may reach it, nearest first: the
 * nearest one before it in its scope and, while that one sits in a branch
 * that does not hold the use (one arm of an if/else, a try, a loop body), the
 * ones before it as well, up to one whose block holds the use. Falls back to
 * a parameter, then to the module's bindings, as py_binding_before does.
 * Returns how many it wrote (at most max). */
typedef struct {
    BindingKind kind;
    TSNode value;
} PyReachingBinding;
size_t py_reaching_bindings(const PySource *src, TSNode id, PyReachingBinding *out, size_t max);

/* The expression evaluates to a torch.Tensor (as far as the code shows): a
 * torch operation, a tensor method on a tensor, a model or loss call, an
 * element of a tuple of tensors (`_, pred = out.max(1)`, `loss, _ = model(x)`),
 * a call of a function of this file that returns tensors, a name the code
 * hands to backward(), a parameter annotated Tensor or given tensors by the
 * file's calls. Everything else is "don't know" (false). */
bool py_is_tensor(const PySource *src, TSNode expr);

/* The def of this file that a bare call names: one nested in a function
 * around the call (`def _forward(): ...` inside a training loop), else one at
 * module level; a null node for imported or rebound names, and calls that
 * are not bare names. */
TSNode py_local_function_of_call(const PySource *src, TSNode call);
/* The def that `self.NAME(...)` calls from a method: `def NAME` in the body
 * of the class whose method holds the call (decorated or not); a null node
 * for other calls, calls in nested functions, and names the class does not
 * define (inherited ones). A subclass may override it: this class's own is
 * what its instances run. */
TSNode py_self_method_of_call(const PySource *src, TSNode call);
/* The expression is a torch.nn.Module instance (a model or a loss): built
 * from a torch.nn class or a class of this file deriving from one, or a name
 * whose calls feed the loss the code hands to backward (a model or loss
 * function passed in as a parameter or imported from another file), whose
 * .parameters() the code takes or that it puts in .eval() mode. */
bool py_is_module_instance(const PySource *src, TSNode expr);
/* The code shows the model stays in host memory: every binding that reaches
 * the name builds it here from a class (`Net(...)`, `nn.Linear(...)`, a
 * torchvision model) without device=, and nothing in its scope moves it
 * (`.cuda()`, `.to(device)`) or hands it to something that may
 * (`fabric.setup(model)`, `DDP(model)`, `accelerator.prepare(model)`). */
bool py_module_stays_on_host(const PySource *src, TSNode expr);

/* The expression is a torch.optim optimizer. */
bool py_is_optimizer(const PySource *src, TSNode expr);
/* The expression names a CUDA device (when a GPU is there): "cuda", "cuda:0",
 * f"cuda:{rank}", "cuda:" + str(rank), torch.device("cuda", i),
 * torch.device(0), torch.accelerator.current_accelerator() (and its .type),
 * torch.cuda.current_device(), `x.device`, `args.device`, `fabric.device`, a
 * GPU index (`local_rank`, `rank`, `args.gpu`), a name called *device or
 * `dev`, or a variable that some reaching binding assigns one of those
 * (`"cuda" if ok else "cpu"`, or an if/else that picks the accelerator in one
 * arm and the CPU in the other). */
bool py_is_device_expr(const PySource *src, TSNode expr);
/* The code shows the device is not CUDA: "cpu", "mps", torch.device("cpu"),
 * or a variable that every reaching binding assigns such a device. */
bool py_device_not_cuda(const PySource *src, TSNode expr);
/* py_is_device_expr and not py_device_not_cuda: a move to it reaches the GPU. */
bool py_is_cuda_device(const PySource *src, TSNode expr);
/* The device is read off a tensor the code already has (`x.device`,
 * `self.weight.device`, `next(model.parameters()).device`, a name bound to
 * one, also by unpacking: `_, n, device = *x.shape, x.device`): device-agnostic
 * code, which puts nothing on a GPU by itself. Not `args.device` or
 * `self.device`: those are the program's own choice. */
bool py_device_follows_tensor(const PySource *src, TSNode expr);
/* The expression spells the CPU itself: "cpu", 'cpu', torch.device("cpu")
 * (not a variable that holds it). */
bool py_is_cpu_device(const PySource *src, TSNode expr);

/* A torch factory (torch.zeros, torch.tensor, ...) with no CUDA device=:
 * the tensor is built in host memory. */
bool py_is_host_factory(const PySource *src, TSNode call);
/* The call makes CUDA the default device of torch's factories:
 * `torch.set_default_device("cuda")` (or a CUDA device expression),
 * `torch.set_default_tensor_type(torch.cuda.HalfTensor)` (or its name in a
 * string). Factories without device= build on the GPU from then on. */
bool py_call_sets_cuda_default(const PySource *src, TSNode call);
/* Work that only a device explains: a model call, backward(), an optimizer
 * step, a move to the GPU, a tensor created with a CUDA device=. */
bool py_call_is_device_work(const PySource *src, TSNode call);
/* q, a qualified callee, loads a transformers model (`AutoModel...from_pretrained`), not a tokenizer, processor or config */
bool py_is_transformers_model_load(const char *q);
/* A class name that says its from_pretrained() builds something kept in host
 * memory: a tokenizer, processor, feature extractor, configuration, model
 * card or scheduler (a word of it anywhere in name[0, len)). */
bool py_class_stays_on_host(const char *name, size_t len);
/* `m.to(device)`, `m.cuda()`, `m.eval()`, `m.half()` and the like return the
 * module they are called on: true for such a call, with *module = m. */
bool py_returns_its_module(const PySource *src, TSNode call, TSNode *module);

/* The call launches GPU work (a torch op, a model or loss call, backward(),
 * optimizer.step(), a device move), given that the file uses CUDA. Building
 * a tensor on the host is not GPU work. */
bool py_call_does_gpu_work(const PySource *src, TSNode call);
/* Some call or `@` inside node (not inside nested functions) does GPU work. */
bool py_does_gpu_work(const PySource *src, TSNode node);

/* Between node and the loop that holds it, an `if` limits node to some
 * iterations (`if step % 100 == 0:`, `if i == 0:`, `if i < 4:` with a
 * literal below 100), or node's block ends in break/return/raise, so it runs
 * at most once per loop. */
bool py_is_periodic(const PySource *src, TSNode node, TSNode loop);

/* The loop queues GPU work on each of its own iterations (a torch operation,
 * a model call, backward(), a step), in code that runs on a device (work
 * that only a device explains, or a function that mentions a CUDA device).
 * An outer loop is not hot: one whose GPU work happens in a nested loop (not
 * a periodic one) or in a function of this file that it calls whose loop
 * does GPU work or calls what the function was handed (`for epoch ...:
 * train_one_epoch()`, `for size in sizes: run_benchmark(fn, a, b)`), so that
 * its statements run once per inner loop. */
bool py_loop_is_hot(const PySource *src, TSNode loop);
/* The function's body queues GPU work at its own level and has no loop (but
 * a periodic one) that calls anything other than device moves: one call is
 * one step of work (`def train_step(batch): ...`). */
bool py_function_is_step(const PySource *src, TSNode fn);

/* The call is a host synchronisation point on a CUDA tensor or stream:
 * .item(), .cpu(), .numpy(), .tolist(), torch.cuda.synchronize(), ... */
bool py_is_sync_call(const PySource *src, TSNode call);
/* `x.to("cpu")` (or device="cpu") without non_blocking=True: a copy to the
 * host that waits for the GPU. */
bool py_is_blocking_to_cpu(const PySource *src, TSNode call);

/* Inside `with torch.no_grad():`, `with torch.inference_mode():`, a function
 * decorated with either (or with a decorator whose name contains
 * `inference_mode` or `no_grad`), or after torch.set_grad_enabled(False) in
 * scope. */
bool py_grad_disabled_at(const PySource *src, TSNode node);

/* The code around node works with a CUDA device: the file uses CUDA and the
 * enclosing function mentions `cuda` or `device`, or is called from code that
 * does (up to three calls up), or node is at module level. */
bool py_runs_on_device(const PySource *src, TSNode node);

/* The name a callee starts with is not (only) what the imports say: the file
 * defines a class or function of that name, at module level or in a function
 * enclosing the call, assigns it, or takes it as a parameter where the call
 * is. True too when the callee is not a dotted name (not ours to judge).
 * Rules that match torch classes by their import path use this to leave a
 * user's own `DataParallel` or a shadowed `DDP` alone. */
bool py_callee_shadowed(const PySource *src, TSNode call, TSNode callee);

#endif
