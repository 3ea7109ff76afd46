#define _GNU_SOURCE /* memmem */
#include "analysis/python/python_source.h"

#include "analysis/base/growable.h"
#include "analysis/finding.h"
#include "analysis/python/python_index.h"
#include "analysis/python/python_parse.h"
#include "analysis/python/python_query.h"
#include "analysis/base/text_format.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const TSLanguage *tree_sitter_python(void);

static void clear_imports(PySource *src) {
    for (size_t i = 0; i < src->import_count; i++) {
        free(src->imports[i].local);
        free(src->imports[i].qualified);
    }
    free(src->imports);
    src->imports = NULL;
    src->import_count = src->import_cap = 0;
}

static char *node_dup(const PySource *src, TSNode n) {
    size_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
    char *s = malloc(b - a + 1);
    if (!s) return NULL;
    memcpy(s, src->doc->text + a, b - a);
    s[b - a] = '\0';
    return s;
}

/* strips whitespace and comments that a dotted_name may span (`torch . nn`) */
static char *dotted_dup(const PySource *src, TSNode n) {
    char *s = node_dup(src, n);
    if (!s) return NULL;
    size_t w = 0;
    for (size_t r = 0; s[r]; r++)
        if (s[r] != ' ' && s[r] != '\t' && s[r] != '\n' && s[r] != '\r' && s[r] != '\\') s[w++] = s[r];
    s[w] = '\0';
    return s;
}

static void add_import(PySource *src, char *local, char *qualified) {
    if (!local || !qualified) goto drop;
    if (!array_reserve(&src->imports, src->import_count, &src->import_cap, sizeof *src->imports, 8)) goto drop;
    src->imports[src->import_count++] = (PyImport){local, qualified, strlen(local)};
    return;
drop:
    free(local);
    free(qualified);
}

static void collect_import(PySource *src, TSNode stmt) {
    const char *type = ts_node_type(stmt);
    if (strcmp(type, "import_statement") == 0) {
        /* import a.b.c  -> binds "a" to "a";  import a.b as x -> binds x to a.b */
        uint32_t n = ts_node_named_child_count(stmt);
        for (uint32_t i = 0; i < n; i++) {
            TSNode c = ts_node_named_child(stmt, i);
            if (strcmp(ts_node_type(c), "aliased_import") == 0) {
                TSNode name = ts_node_child_by_field_name(c, "name", 4);
                TSNode alias = ts_node_child_by_field_name(c, "alias", 5);
                if (!ts_node_is_null(name) && !ts_node_is_null(alias))
                    add_import(src, dotted_dup(src, alias), dotted_dup(src, name));
            } else if (strcmp(ts_node_type(c), "dotted_name") == 0) {
                char *full = dotted_dup(src, c);
                if (!full) continue;
                char *dot = strchr(full, '.');
                char *head = dot ? strndup(full, (size_t)(dot - full)) : strdup(full);
                free(full);
                add_import(src, head, head ? strdup(head) : NULL);
            }
        }
    } else if (strcmp(type, "import_from_statement") == 0) {
        TSNode module = ts_node_child_by_field_name(stmt, "module_name", 11);
        if (ts_node_is_null(module) || strcmp(ts_node_type(module), "dotted_name") != 0)
            return; /* relative imports name project modules: nothing to resolve */
        char *mod = dotted_dup(src, module);
        if (!mod) return;
        /* every named child after the module is an imported name (or a
         * comment); ts_node_field_name_for_child is not used: tree-sitter
         * 0.20 reports the "name" field only for the first of several */
        uint32_t n = ts_node_named_child_count(stmt);
        for (uint32_t i = 0; i < n; i++) {
            TSNode c = ts_node_named_child(stmt, i);
            const char *kind = ts_node_type(c);
            if (ts_node_eq(c, module) || (strcmp(kind, "dotted_name") != 0 && strcmp(kind, "aliased_import") != 0))
                continue;
            TSNode name = c, alias = c;
            if (strcmp(ts_node_type(c), "aliased_import") == 0) {
                name = ts_node_child_by_field_name(c, "name", 4);
                alias = ts_node_child_by_field_name(c, "alias", 5);
            }
            char *n1 = dotted_dup(src, name);
            char *q = n1 ? format_string("%s.%s", mod, n1) : NULL;
            free(n1);
            add_import(src, dotted_dup(src, alias), q);
        }
        free(mod);
    }
}

/* imports are statements: visit statements and blocks, never expressions */
static bool visit_imports(TSNode node, void *data) {
    PySource *src = data;
    const char *type = ts_node_type(node);
    if (strcmp(type, "import_statement") == 0 || strcmp(type, "import_from_statement") == 0) {
        collect_import(src, node);
        return false;
    }
    if (strcmp(type, "function_definition") == 0 || strcmp(type, "class_definition") == 0 ||
        strcmp(type, "block") == 0) {
        /* most bodies import nothing: skip them without visiting their statements */
        size_t a = ts_node_start_byte(node), n = ts_node_end_byte(node) - a;
        if (!memmem(src->doc->text + a, n, "import", 6)) return false;
    }
    return strcmp(type, "module") == 0 || strcmp(type, "block") == 0 || strstr(type, "statement") ||
           strstr(type, "definition") || strstr(type, "clause");
}

/* The top-level nodes of `tree` that touch [start, end] (and the one that
 * ends at start): whether one spells `import`, and the span they cover
 * (*from == *to == SIZE_MAX when none touches it). */
static bool touched_statements_import(TSTree *tree, const Document *doc, size_t start, size_t end, size_t *from,
                                      size_t *to) {
    TSTreeCursor cursor = ts_tree_cursor_new(ts_tree_root_node(tree));
    bool imports = false;
    *from = *to = SIZE_MAX;
    if (ts_tree_cursor_goto_first_child_for_byte(&cursor, (uint32_t)(start ? start - 1 : 0)) >= 0) {
        do {
            TSNode n = ts_tree_cursor_current_node(&cursor);
            size_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
            if (a > end) break;
            if (*from == SIZE_MAX) *from = a;
            *to = b;
            if (b > doc->length || a > b) imports = true; /* not this text's tree: assume the worst */
            else imports = memmem(doc->text + a, b - a, "import", 6) != NULL;
        } while (!imports && ts_tree_cursor_goto_next_sibling(&cursor));
    }
    ts_tree_cursor_delete(&cursor);
    return imports;
}

static void collect_imports(PySource *src) {
    clear_imports(src);
    py_walk(ts_tree_root_node(src->tree), visit_imports, src);
}

/* The text says "device" other than in `per_device_...`: Hugging Face's
 * per-device batch sizes (`per_device_train_batch_size=8`) count examples
 * per worker of any kind, a CPU's too, and name no device. */
static bool mentions_device(const char *text, size_t length) {
    for (const char *at = memmem(text, length, "device", 6); at;
         at = memmem(at + 1, length - (size_t)(at + 1 - text), "device", 6))
        if (at - text < 4 || memcmp(at - 4, "per_", 4) != 0) return true;
    return false;
}

/* keep: the imports of the last parse still hold (py_source_reparse) */
static void analyse(PySource *src, bool keep_imports) {
    py_index_free(src->index);
    src->index = NULL;
    TSNode root = ts_tree_root_node(src->tree);
    if (!keep_imports) collect_imports(src);
    src->imports_torch = false;
    for (size_t i = 0; i < src->import_count; i++)
        if (strncmp(src->imports[i].qualified, "torch", 5) == 0 &&
            (src->imports[i].qualified[5] == '\0' || src->imports[i].qualified[5] == '.'))
            src->imports_torch = true;
    src->has_errors = ts_node_has_error(root);
    src->first_error = 0;
    if (src->has_errors) {
        /* descend to the first ERROR or MISSING node */
        TSNode n = root;
        for (;;) {
            if (ts_node_is_missing(n) || strcmp(ts_node_type(n), "ERROR") == 0) break;
            uint32_t count = ts_node_child_count(n);
            bool descended = false;
            for (uint32_t i = 0; i < count; i++) {
                TSNode c = ts_node_child(n, i);
                if (ts_node_has_error(c)) {
                    n = c;
                    descended = true;
                    break;
                }
            }
            if (!descended) break;
        }
        src->first_error = ts_node_start_byte(n);
    }
    src->uses_gpu = strstr(src->doc->text, "cuda") != NULL || mentions_device(src->doc->text, src->doc->length);
    /* a torch_xla program (TPU) that never mentions CUDA: its devices are not GPUs, its
     * synchronization is xm.mark_step(), and none of the CUDA advice applies */
    bool xla = false;
    for (size_t i = 0; i < src->import_count && !xla; i++)
        xla = strncmp(src->imports[i].qualified, "torch_xla", 9) == 0;
    src->other_accelerator = xla && strstr(src->doc->text, "cuda") == NULL;
    if (src->other_accelerator) src->uses_gpu = false;
}

/* Counts the lines that start a top-level statement or comment, skipping
 * strings (a long docstring is one node) and bracketed continuations. */
bool py_source_too_wide(const Document *doc) {
    if (doc->line_count <= PY_MAX_TOP_LEVEL_LINES) return false;
    const char *t = doc->text;
    size_t n = doc->length, top = 0, depth = 0;
    char quote = 0;      /* the open string's quote character */
    bool triple = false; /* ... and whether it is a triple-quoted one */
    bool line_start = true;
    for (size_t i = 0; i < n; i++) {
        char c = t[i];
        if (quote) {
            if (c == '\\') {
                i++;
            } else if (c == quote && (!triple || (i + 2 < n && t[i + 1] == quote && t[i + 2] == quote))) {
                if (triple) i += 2;
                quote = 0;
            } else if (c == '\n' && !triple) {
                quote = 0; /* an unterminated string ends at the line's end */
                line_start = true;
            }
            continue;
        }
        if (c == '\n') {
            line_start = true;
            continue;
        }
        if (line_start) {
            line_start = false;
            if (depth == 0 && c != ' ' && c != '\t' && c != '\r' && ++top > PY_MAX_TOP_LEVEL_LINES) return true;
        }
        if (c == '#') {
            while (i + 1 < n && t[i + 1] != '\n') i++;
        } else if (c == '"' || c == '\'') {
            quote = c;
            triple = i + 2 < n && t[i + 1] == c && t[i + 2] == c;
            if (triple) i += 2;
        } else if (c == '(' || c == '[' || c == '{') {
            depth++;
        } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
            depth--;
        } else if (c == '\\' && i + 1 < n && t[i + 1] == '\n') {
            i++; /* an explicit continuation */
        }
    }
    return false;
}

PySource *py_source_new(const Document *doc) { return py_source_new_within(doc, PY_PARSE_TIMEOUT_SECONDS); }

PySource *py_source_new_within(const Document *doc, unsigned timeout_seconds) {
    if (py_source_too_wide(doc)) return NULL;
    PySource *src = calloc(1, sizeof *src);
    if (!src) return NULL;
    src->doc = doc;
    src->parser = ts_parser_new();
    if (!src->parser || !ts_parser_set_language(src->parser, tree_sitter_python())) goto fail;
    /* error recovery on text that is not Python at all can take seconds per MiB: give up instead */
    ts_parser_set_timeout_micros(src->parser, timeout_seconds * 1000000ull);
    src->tree = py_parse(src->parser, NULL, doc->text, doc->length);
    if (!src->tree) goto fail;
    analyse(src, false);
    return src;
fail:
    py_source_free(src);
    return NULL;
}

void py_source_free(PySource *src) {
    if (!src) return;
    clear_imports(src);
    py_index_free(src->index);
    if (src->tree) ts_tree_delete(src->tree);
    if (src->retired) ts_tree_delete(src->retired);
    if (src->parser) ts_parser_delete(src->parser);
    free(src);
}

TSTree *py_source_take_retired(PySource *src) {
    TSTree *t = src ? src->retired : NULL;
    if (src) src->retired = NULL;
    return t;
}

TSPoint py_point_at(const char *text, size_t offset) {
    /* tree-sitter counts rows by '\n' alone; memchr finds them several
     * times faster than a loop over bytes (three calls per keystroke) */
    uint32_t row = 0;
    size_t line_start = 0;
    const char *nl;
    while (line_start < offset && (nl = memchr(text + line_start, '\n', offset - line_start))) {
        row++;
        line_start = (size_t)(nl - text) + 1;
    }
    return (TSPoint){row, (uint32_t)(offset - line_start)};
}

void py_source_note_edit(PySource *src, size_t start, size_t old_end, size_t new_end, TSPoint start_point,
                         TSPoint old_end_point, TSPoint new_end_point) {
    /* one edit of a tree without syntax errors, in statements that do not
     * spell `import`: the imports need not be collected again if the new
     * tree says the same (py_source_reparse). The old tree and text agree
     * only before the first edit is applied. */
    if (src->edits_noted++ == 0 && src->doc && !ts_node_has_error(ts_tree_root_node(src->tree)))
        src->imports_may_change = touched_statements_import(src->tree, src->doc, start, old_end, &src->touched_from,
                                                            &src->touched_to);
    else
        src->imports_may_change = true;
    src->edit_start = start;
    src->edit_old_end = old_end;
    src->edit_new_end = new_end;
    TSInputEdit edit = {
        .start_byte = (uint32_t)start,
        .old_end_byte = (uint32_t)old_end,
        .new_end_byte = (uint32_t)new_end,
        .start_point = start_point,
        .old_end_point = old_end_point,
        .new_end_point = new_end_point,
    };
    ts_tree_edit(src->tree, &edit);
}

bool py_source_reparse(PySource *src, const Document *doc) {
    src->imports_may_change |= src->edits_noted != 1; /* kept below only for one edit */
    if (py_source_too_wide(doc)) return false;
    TSTree *tree = py_parse(src->parser, src->tree, doc->text, doc->length);
    if (!tree) return false;
    if (src->retired) ts_tree_delete(src->retired);
    src->retired = src->tree;
    src->tree = tree;
    src->doc = doc;
    /* Collecting them walks every top-level statement: 1 ms per keystroke on
     * a module of 2,000 of them. They are kept when the statements the edit
     * touched are the same span of text in both trees, moved by the edit:
     * the text after them is then the same, parsed from the same state, and
     * so is the text before. (Where that span changes, a string the edit
     * opened or closed can turn the text after it into code or back, and an
     * `import` there with it, in two trees without a syntax error.) */
    size_t from, to;
    long long delta = (long long)src->edit_new_end - (long long)src->edit_old_end;
    bool keep_imports = !src->imports_may_change && !ts_node_has_error(ts_tree_root_node(tree)) &&
                        !touched_statements_import(tree, doc, src->edit_start, src->edit_new_end, &from, &to) &&
                        from == src->touched_from &&
                        (to == SIZE_MAX ? src->touched_to == SIZE_MAX
                                        : src->touched_to != SIZE_MAX && (long long)to == (long long)src->touched_to + delta);
    src->edits_noted = 0;
    src->imports_may_change = false;
    analyse(src, keep_imports);
    return true;
}

const char *py_resolve_import(const PySource *src, const char *local, size_t length) {
    /* later imports win, as at run time */
    for (size_t i = src->import_count; i-- > 0;)
        if (src->imports[i].local_length == length && memcmp(src->imports[i].local, local, length) == 0)
            return src->imports[i].qualified;
    return NULL;
}

bool py_import_is_ambiguous(const PySource *src, const char *local, size_t length) {
    const char *first = NULL;
    for (size_t i = 0; i < src->import_count; i++) {
        if (src->imports[i].local_length != length || memcmp(src->imports[i].local, local, length) != 0) continue;
        if (!first) first = src->imports[i].qualified;
        else if (strcmp(first, src->imports[i].qualified) != 0) return true;
    }
    return false;
}
