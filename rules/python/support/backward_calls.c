#include "rules/python/support/backward_calls.h"

#include <string.h>
#include <strings.h>

static const char *const backward_functions[] = {"torch.autograd.backward", NULL};
static const char *const grad_functions[] = {"torch.autograd.grad", NULL};

static bool name_contains(const PySource *src, TSNode n, const char *word) {
    if (py_is(n, "attribute")) n = ts_node_child_by_field_name(n, "attribute", 9);
    if (!py_is(n, "identifier")) return false;
    const char *t = py_text_ptr(src, n);
    size_t len = py_text_len(n), w = strlen(word);
    for (size_t i = 0; i + w <= len; i++)
        if (strncasecmp(t + i, word, w) == 0) return true;
    return false;
}

/* `accelerator.backward(loss)`, `fabric.backward(loss)`, `model_engine.backward(loss)`:
 * frameworks whose backward takes the loss as its first argument */
static bool framework_receiver(const PySource *src, TSNode recv) {
    static const char *const words[] = {"accelerat", "fabric", "engine", "deepspeed", "trainer", "runner", NULL};
    for (size_t i = 0; words[i]; i++)
        if (name_contains(src, recv, words[i])) return true;
    return false;
}

bool py_backward_call(const PySource *src, TSNode call, BackwardCall *out) {
    if (!py_is(call, "call")) return false;
    *out = (BackwardCall){.call = call};
    TSNode recv;
    if (py_method_call(src, call, "manual_backward", &recv)) { /* Lightning */
        out->kind = BACKWARD_METHOD;
        out->differentiated = py_call_positional(call, 0);
        return true;
    }
    if (py_method_call(src, call, "backward", &recv)) {
        if (py_callee_is_any(src, call, backward_functions)) {
            out->kind = BACKWARD_FUNCTION;
            out->differentiated = py_call_positional(call, 0);
            if (ts_node_is_null(out->differentiated)) out->differentiated = py_call_keyword(src, call, "tensors");
            return true;
        }
        out->kind = BACKWARD_METHOD;
        if (py_call_positional_count(call) > 0 && framework_receiver(src, recv)) {
            out->differentiated = py_call_positional(call, 0);
            return true;
        }
        out->tensor_method = true;
        TSNode scaled;
        /* scaler.scale(loss).backward() differentiates loss */
        if (py_method_call(src, recv, "scale", &scaled) && py_call_positional_count(recv) == 1)
            recv = py_call_positional(recv, 0);
        out->differentiated = recv;
        return true;
    }
    if (py_callee_is_any(src, call, backward_functions) || py_callee_is_any(src, call, grad_functions)) {
        out->kind = py_callee_is_any(src, call, grad_functions) ? BACKWARD_GRAD : BACKWARD_FUNCTION;
        out->differentiated = py_call_positional(call, 0);
        if (ts_node_is_null(out->differentiated))
            out->differentiated = py_call_keyword(src, call, out->kind == BACKWARD_GRAD ? "outputs" : "tensors");
        return true;
    }
    return false;
}

TSNode py_backward_argument(const PySource *src, const BackwardCall *b, const char *parameter) {
    TSNode kw = py_call_keyword(src, b->call, parameter);
    if (!ts_node_is_null(kw)) return kw;
    /* positions: Tensor.backward(gradient, retain_graph, create_graph),
     * autograd.backward(tensors, grad_tensors, retain_graph, create_graph),
     * autograd.grad(outputs, inputs, grad_outputs, retain_graph, create_graph) */
    uint32_t at = strcmp(parameter, "retain_graph") == 0 ? 0 : strcmp(parameter, "create_graph") == 0 ? 1 : 99;
    TSNode null = {0};
    if (at == 99) return null;
    if (b->kind == BACKWARD_METHOD) {
        if (!b->tensor_method) return null;
        at += 1;
    } else {
        at += b->kind == BACKWARD_FUNCTION ? 2 : 3;
    }
    return py_call_positional(b->call, at);
}

TSNode py_statement_loop(TSNode node) {
    TSNode loop = py_enclosing_loop(node);
    for (int depth = 0; depth < 16 && !ts_node_is_null(loop); depth++) {
        if (py_is(loop, "for_statement") || py_is(loop, "while_statement")) return loop;
        loop = py_enclosing_loop(loop);
    }
    return (TSNode){0};
}

static bool each_read(const PySource *src, TSNode n, PyReadVisitor visit, void *data, int depth) {
    if (ts_node_is_null(n) || depth > 64) return true;
    if (py_is(n, "lambda") || py_is(n, "function_definition") || py_is(n, "class_definition")) return true;
    if (py_is(n, "identifier")) return visit(src, n, data);
    if (py_is(n, "attribute"))
        return each_read(src, ts_node_child_by_field_name(n, "object", 6), visit, data, depth + 1);
    if (py_is(n, "keyword_argument"))
        return each_read(src, ts_node_child_by_field_name(n, "value", 5), visit, data, depth + 1);
    if (py_is(n, "call")) {
        TSNode fn = ts_node_child_by_field_name(n, "function", 8);
        if (!each_read(src, fn, visit, data, depth + 1)) return false;
        return each_read(src, py_call_arguments(n), visit, data, depth + 1);
    }
    uint32_t count = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < count; i++)
        if (!each_read(src, ts_node_named_child(n, i), visit, data, depth + 1)) return false;
    return true;
}

bool py_each_read_name(const PySource *src, TSNode expr, PyReadVisitor visit, void *data) {
    return each_read(src, expr, visit, data, 0);
}

static bool stop_at_name(const PySource *src, TSNode id, void *data) {
    return !py_same_text(src, id, *(TSNode *)data);
}

bool py_reads_name(const PySource *src, TSNode expr, TSNode name) {
    return !py_each_read_name(src, expr, stop_at_name, &name);
}
