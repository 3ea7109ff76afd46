/* Small questions about Python syntax trees that many rules ask: node text,
 * qualified callee names, arguments, enclosing statements and loops. */
#ifndef ADVISE_PYTHON_QUERY_H
#define ADVISE_PYTHON_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/python/python_source.h"

#define PY_NAME_MAX 256

bool py_is(TSNode node, const char *type);
const char *py_text_ptr(const PySource *src, TSNode node); /* not NUL-terminated at the node's end */
size_t py_text_len(TSNode node);
bool py_text_eq(const PySource *src, TSNode node, const char *text);
/* Two nodes spell the same text, ignoring whitespace. A null node reads as
 * empty text (two null nodes are the same); py_same_text_present is false
 * when either node is null, for fields that broken code leaves out. */
bool py_same_text(const PySource *src, TSNode a, TSNode b);
bool py_same_text_present(const PySource *src, TSNode a, TSNode b);
/* Heap copy of the node's text. */
char *py_text_dup(const PySource *src, TSNode node);
/* The node's text for a message, into buf, when it is at most max bytes on
 * one line; false (buf untouched) otherwise, for the caller's shorter words. */
bool py_short_text(const PySource *src, TSNode node, size_t max, char *buf, size_t size);

/* Dotted name of an identifier/attribute chain with its first part resolved
 * through the imports: `F.softmax` -> "torch.nn.functional.softmax". Writes
 * "" and returns false for anything else (calls, subscripts, ...). */
bool py_qualified_name(const PySource *src, TSNode expr, char *buf, size_t size);
/* The qualified name of a call's callee ("" when it is not a dotted name). */
bool py_callee_name(const PySource *src, TSNode call, char *buf, size_t size);
/* True when call's callee resolves to one of the NULL-terminated names. */
bool py_callee_is_any(const PySource *src, TSNode call, const char *const *names);
/* For `recv.method(...)`: true when the method is called `method`; stores recv. */
bool py_method_call(const PySource *src, TSNode call, const char *method, TSNode *receiver);
/* The method name of `recv.name(...)` (NULL-node otherwise). */
TSNode py_method_name_node(TSNode call);
/* py_method_call on a value: the receiver is not an imported module or a
 * name under one (`F.softmax(x)` is a function call, `x.softmax()` is not). */
bool py_value_method_call(const PySource *src, TSNode call, const char *method, TSNode *receiver);
/* `name(...)` calls the builtin: a bare name that no import rebinds
 * (`float(x)`, `print(loss)`). */
bool py_is_builtin_call(const PySource *src, TSNode call, const char *name);

TSNode py_call_arguments(TSNode call);
/* The i-th positional argument of a call, or a null node. */
TSNode py_call_positional(TSNode call, uint32_t index);
uint32_t py_call_positional_count(TSNode call);
/* The value of keyword argument `name`, or a null node. */
TSNode py_call_keyword(const PySource *src, TSNode call, const char *name);
/* The whole keyword_argument node `name=value` (for edits that remove it), or a null node. */
TSNode py_call_keyword_argument(const PySource *src, TSNode call, const char *name);
bool py_call_has_splat(TSNode call); /* *args or **kwargs present */
/* Some argument of the call is a node of this type: "keyword_argument",
 * "dictionary_splat", "list_splat". */
bool py_call_has_argument(TSNode call, const char *type);

/* The statement (child of a block or the module) that holds node. */
TSNode py_statement_of(TSNode node);
/* The function_definition enclosing node, or a null node at module level. */
TSNode py_enclosing_function(const PySource *src, TSNode node);
/* The body of the scope holding node: a function's block, or the module. */
TSNode py_scope_of(const PySource *src, TSNode node);
/* The nearest loop (for/while body, or comprehension) that runs node
 * repeatedly, within the same function; a null node when there is none.
 * Nodes in a for-loop's iterable or a loop's else clause are not inside it. */
TSNode py_enclosing_loop(TSNode node);
/* True when node is under `ancestor` */
bool py_is_within(TSNode node, TSNode ancestor);
/* The leading whitespace of the line that holds offset. */
size_t py_line_indent(const PySource *src, size_t offset, char *buf, size_t size);
/* True when the statement begins its own line (only whitespace before it). */
bool py_starts_line(const PySource *src, TSNode stmt);

/* Preorder walk; the visitor returns false to skip the node's children. */
typedef bool (*PyVisitor)(TSNode node, void *data);
void py_walk(TSNode root, PyVisitor visit, void *data);

/* Work counted on this thread: each node py_walk visits and each top-level
 * statement rule_walk steps over. Tests read it to check that a
 * one-statement pass does work that does not grow with the module. */
uint64_t py_walk_work(void);
void py_walk_add_work(uint64_t steps);

/* Text for an edit that adds keyword `kw=value` to a call's arguments, placed
 * before the closing parenthesis (handles trailing commas and empty lists).
 * Stores the insertion offset. Returns a heap string. */
char *py_keyword_insertion(const PySource *src, TSNode call, const char *kw, const char *value, size_t *offset);
/* How this file can spell torch.nn.functional in a fix: its alias (`F`), or
 * built on its name for torch or torch.nn (`torch.nn.functional`,
 * `nn.functional`). A heap string; NULL when it imports none of them. */
char *py_functional_prefix(const PySource *src);

#endif
