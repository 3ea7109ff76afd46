/* Calls that run a model, as PY015 (whose outputs carry a graph) and PY016
 * (which calls build one) read them: `model(x)`, `self.encoder(x)`,
 * `net.forward(x)`, where the callee is an nn.Module instance as the file
 * shows it (python_facts.h) or is named like a model. */
#ifndef ADVISE_RULES_PYTHON_MODEL_CALLS_H
#define ADVISE_RULES_PYTHON_MODEL_CALLS_H

#include "analysis/python/python_query.h"

/* The name (or the attribute's last name) says model: model, net, encoder,
 * decoder, backbone, generator, discriminator, policy, critic, actor,
 * classifier, transformer, unet, as part of the name (`student_model`, `netG`). */
bool py_names_model(const PySource *src, TSNode expr);

/* `evaluate_model`, `query_model`: a function that a module of the
 * workspace defines, or that this file defines at module level and whose
 * body shows that what it gives back carries no graph (it computes under
 * no_grad, or runs no GPU work and calls none of its parameters). Its name
 * says nothing of what it is: it is a function, whatever words it holds.
 * Not a name the function's scope binds itself (`generator = G().cuda()`). */
bool py_names_project_function(const PySource *src, TSNode expr);

/* expr is a model: an nn.Module instance the file shows, or named like one
 * (not a function the project defines, whatever its name). */
bool py_is_model_like(const PySource *src, TSNode expr);

/* The model that call runs, or a null node: the callee of `model(x)`, the
 * receiver of `model.forward(x)`. */
TSNode py_called_model(const PySource *src, TSNode call);

#endif
