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

bool py_names_project_function(const PySource *src, TSNode expr) {
    if (!py_is(expr, "identifier")) return false;
    const char *name = py_text_ptr(src, expr);
    size_t len = py_text_len(expr);
    if (py_is(py_index_top_level(src, name, len), "function_definition")) return true;
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
