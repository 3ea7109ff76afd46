#include "analysis/python/python_roles.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/python/python_facts.h"

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static bool text_is(const PySource *src, TSNode n, const char *text) {
    return !ts_node_is_null(n) && py_text_eq(src, n, text);
}

static bool is_definition_boundary(TSNode n) {
    return py_is(n, "function_definition") || py_is(n, "class_definition") || py_is(n, "lambda");
}

static bool receiver_names_optimizer(const PySource *src, TSNode recv) {
    if (py_is_optimizer(src, recv)) return true;
    char *text = py_text_dup(src, recv);
    if (!text) return false;
    for (char *p = text; *p; p++) *p = (char)tolower((unsigned char)*p);
    bool yes = strstr(text, "opt") || strstr(text, "sched") || strstr(text, "scaler");
    free(text);
    return yes;
}

bool py_call_trains(const PySource *src, TSNode n) {
    TSNode recv;
    char q[PY_NAME_MAX];
    if (py_method_call(src, n, "backward", NULL) || py_method_call(src, n, "zero_grad", NULL) ||
        py_method_call(src, n, "requires_grad_", NULL))
        return true;
    if (py_method_call(src, n, "step", &recv)) return receiver_names_optimizer(src, recv);
    if (!py_callee_name(src, n, q, sizeof q)) return false;
    if (strcmp(q, "torch.autograd.grad") == 0 || strcmp(q, "torch.autograd.backward") == 0 ||
        strcmp(q, "torch.enable_grad") == 0 || starts_with(q, "torch.autograd.functional.") ||
        starts_with(q, "torch.func.") || starts_with(q, "functorch."))
        return true;
    if (strcmp(q, "torch.set_grad_enabled") == 0 || strcmp(q, "torch.autograd.set_grad_enabled") == 0)
        return !text_is(src, py_call_positional(n, 0), "False");
    return false;
}

typedef struct {
    const PySource *src;
    TSNode root;
    bool trains, evals;
} BodyScan;

static bool visit_body(TSNode n, void *data) {
    BodyScan *s = data;
    if (!ts_node_eq(n, s->root) && is_definition_boundary(n)) return false;
    if (py_is(n, "assignment") || py_is(n, "augmented_assignment")) {
        TSNode left = ts_node_child_by_field_name(n, "left", 4);
        if (py_is(left, "attribute") && text_is(s->src, ts_node_child_by_field_name(left, "attribute", 9), "requires_grad"))
            s->trains = true;
        return true;
    }
    if (!py_is(n, "call")) return true;
    if (py_call_trains(s->src, n)) s->trains = true;
    if (py_method_call(s->src, n, "eval", NULL)) s->evals = true;
    if (py_method_call(s->src, n, "train", NULL)) {
        TSNode arg = py_call_positional(n, 0);
        if (ts_node_is_null(arg)) arg = py_call_keyword(s->src, n, "mode");
        if (text_is(s->src, arg, "False")) s->evals = true;
    }
    return true;
}

static BodyScan scan(const PySource *src, TSNode fn) {
    BodyScan s = {src, fn, false, false};
    py_walk(ts_node_child_by_field_name(fn, "body", 4), visit_body, &s);
    return s;
}

bool py_function_trains(const PySource *src, TSNode fn) { return scan(src, fn).trains; }

bool py_function_switches_to_eval(const PySource *src, TSNode fn) { return scan(src, fn).evals; }

#define MAX_WORDS 16

/* splits a snake_case or camelCase name into lowercase words */
static size_t split_words(const PySource *src, TSNode name, char words[MAX_WORDS][32]) {
    const char *t = py_text_ptr(src, name);
    size_t len = py_text_len(name), count = 0, wl = 0;
    for (size_t i = 0; i <= len; i++) {
        bool end = i == len || t[i] == '_' || (i > 0 && isupper((unsigned char)t[i]) && islower((unsigned char)t[i - 1]));
        if (end && wl > 0) {
            words[count][wl < 31 ? wl : 31] = '\0';
            if (++count == MAX_WORDS) return count;
            wl = 0;
        }
        if (i < len && t[i] != '_') {
            if (wl < 31) words[count][wl] = (char)tolower((unsigned char)t[i]);
            wl++;
        }
    }
    return count;
}

static bool word_in(const char *w, const char *const *list) {
    for (size_t i = 0; list[i]; i++)
        if (strcmp(w, list[i]) == 0) return true;
    return false;
}

static const char *const eval_words[] = {"evaluate", "evaluation", "eval", "validate", "validation", "val",
                                         "valid", "test", "testing", "predict", "prediction", "predictions",
                                         "inference", "infer", "generate", "generation", "sample", "sampling",
                                         NULL};
static const char *const train_words[] = {"train", "training", "fit", "finetune", "optimize", "update",
                                          "backward", "step", "attack", "saliency", "gradcam", "grad",
                                          "gradient", "gradients", NULL};

bool py_function_named_like_evaluation(const PySource *src, TSNode fn) {
    TSNode name = ts_node_child_by_field_name(fn, "name", 4);
    if (ts_node_is_null(name)) return false;
    char words[MAX_WORDS][32];
    size_t count = split_words(src, name, words);
    if (count > 1 && strcmp(words[0], "test") == 0) return false; /* test_*: a unit test */
    bool eval = false;
    for (size_t i = 0; i < count; i++) {
        if (word_in(words[i], train_words)) return false;
        if (word_in(words[i], eval_words)) eval = true;
    }
    return eval;
}

bool py_function_is_test_or_step_hook(const PySource *src, TSNode fn) {
    TSNode name = ts_node_child_by_field_name(fn, "name", 4);
    if (ts_node_is_null(name)) return false;
    const char *t = py_text_ptr(src, name);
    size_t len = py_text_len(name);
    return (len > 5 && strncmp(t, "test_", 5) == 0) || (len > 5 && strncmp(t + len - 5, "_step", 5) == 0);
}
