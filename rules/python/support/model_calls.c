#define _GNU_SOURCE /* memmem */
#include "rules/python/support/model_calls.h"

#include <string.h>

#include "analysis/python/python_facts.h"
#include "analysis/python/python_index.h"
#include "analysis/python/python_workspace.h"

bool py_names_model(const PySource *src, TSNode expr) {
    static const char *const words[] = {"model", "net", "encoder", "decoder", "backbone", "generator",
                                        "discriminator", "policy", "critic", "actor", "classifier", "transformer",
                                        "unet", NULL};
    TSNode name = py_is(expr, "attribute") ? ts_node_child_by_field_name(expr, "attribute", 9) : expr;
    if (!py_is(name, "identifier")) return false;
    const char *t = py_text_ptr(src, name);
    size_t len = py_text_len(name);
    for (size_t i = 0; words[i]; i++)
        if (memmem(t, len, words[i], strlen(words[i]))) return true;
    return false;
}

typedef struct {
    const PySource *src;
    bool found;
} ParameterCallSearch;

/* a call of one of the enclosing function's parameters, or of a method of one (`model.generate(x)`) */
static bool visit_parameter_call(TSNode n, void *data) {
    ParameterCallSearch *s = data;
    if (s->found) return false;
    if (!py_is(n, "call")) return true;
    TSNode callee = ts_node_child_by_field_name(n, "function", 8);
    for (int depth = 0; depth < 16 && py_is(callee, "attribute"); depth++)
        callee = ts_node_child_by_field_name(callee, "object", 6);
    if (py_is(callee, "identifier") &&
        py_binding_before(s->src, callee, py_text_ptr(s->src, callee), py_text_len(callee),
                          ts_node_start_byte(callee), NULL) == BINDING_PARAMETER)
        s->found = true;
    return !s->found;
}

/* What the function gives back carries no autograd graph, as its body
 * shows: it computes under torch.no_grad() or inference_mode (LLMs-from-
 * scratch's evaluate_model), or it queues no GPU work and calls none of its
 * parameters (query_model, which posts to a server). A helper that runs the
 * model it is handed (`def run_model(model, x): return model(x.to(device))`)
 * or a functional model (`def model(xb): return F.log_softmax(xb @ w + b)`)
 * is neither. */
static bool function_gives_no_graph(const PySource *src, TSNode def) {
    TSNode outer = ts_node_parent(def);
    TSNode whole = py_is(outer, "decorated_definition") ? outer : def;
    const char *text = py_text_ptr(src, whole);
    size_t len = py_text_len(whole);
    if (memmem(text, len, "no_grad", 7) || memmem(text, len, "inference_mode", 14)) return true;
    TSNode body = ts_node_child_by_field_name(def, "body", 4);
    if (ts_node_is_null(body) || py_does_gpu_work(src, body)) return false;
    ParameterCallSearch s = {src, false};
    py_walk(body, visit_parameter_call, &s);
    return !s.found;
}

bool py_names_project_function(const PySource *src, TSNode expr) {
    if (!py_is(expr, "identifier")) return false;
    const char *name = py_text_ptr(src, expr);
    size_t len = py_text_len(expr);
    /* `generator = Generator().cuda()` in the function hides a module-level `def generator` */
    BindingKind kind = py_binding_before(src, expr, name, len, ts_node_start_byte(expr), NULL);
    if (kind == BINDING_ASSIGNMENT || kind == BINDING_PARAMETER || kind == BINDING_LOOP_TARGET) return false;
    TSNode def = py_index_top_level(src, name, len);
    if (py_is(def, "function_definition")) return function_gives_no_graph(src, def);
    char spelled[256];
    if (!src->workspace || len >= sizeof spelled) return false;
    memcpy(spelled, name, len);
    spelled[len] = '\0';
    return py_workspace_is_function(src->workspace, src->module, spelled);
}

bool py_is_model_like(const PySource *src, TSNode expr) {
    if (!py_is(expr, "identifier") && !py_is(expr, "attribute")) return false;
    if (py_names_project_function(src, expr)) return py_is_module_instance(src, expr);
    return py_names_model(src, expr) || py_is_module_instance(src, expr);
}

TSNode py_called_model(const PySource *src, TSNode call) {
    TSNode null = {0};
    if (!py_is(call, "call")) return null;
    TSNode callee = ts_node_child_by_field_name(call, "function", 8), recv;
    if (py_method_call(src, call, "forward", &recv)) callee = recv;
    return py_is_model_like(src, callee) ? callee : null;
}
