/* Benchmark: what tree-sitter's incremental reparse costs on a Python file,
 * and why, apart from advise's own work around it.
 *
 *   build/bench-reparse [--reps N] FILE.py...
 *
 * For each file: a full parse, then N edits (default 400) typed into an
 * identifier of the top-level statement in the middle of the file, one
 * character inserted, then deleted again, each followed by ts_tree_edit and
 * an incremental reparse on the old tree, as advise's server does per
 * keystroke. Printed: the medians and p95 of the reparse, and what one
 * reparse did, counted from tree-sitter's own log: subtrees reused whole,
 * subtrees not reused because they are "fragile" (reduced in a parse state
 * with more than one action: a GLR fork, such as `print (x)` as statement or
 * call, and also every list of statements, since tree-sitter's repetitions
 * carry a second action of their own), and tokens lexed again.
 *
 * Side by side: tree-sitter on the text as written (ts_parser_parse_string),
 * and as advise parses it (py_parse: Python 2's `print` statement kept out of
 * the grammar's reach, analysis/python/python_parse.c). What is left in the
 * second column is tree-sitter's own floor: a reparse still steps over every
 * top-level statement once, since the module's list of statements is never
 * reused in larger pieces (bench/README.md). A program that prints figures,
 * not a test. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <tree_sitter/api.h>

#include "analysis/python/python_parse.h"

const TSLanguage *tree_sitter_python(void);

typedef struct {
    char *text;
    uint32_t length, capacity;
} Buffer;

typedef struct {
    double full_ms, p50_ms, p95_ms;
    double typed_p50_ms, typed_p95_ms; /* a statement typed key by key, then deleted */
    unsigned statements;
    unsigned long reused, fragile, lexed; /* per reparse, from the log of one */
    bool ok;
} Figures;

static unsigned long count_reused, count_fragile, count_lexed;

static bool starts_with(const char *message, const char *prefix) {
    return strncmp(message, prefix, strlen(prefix)) == 0;
}

static void count_log(void *payload, TSLogType type, const char *message) {
    (void)payload;
    if (type != TSLogTypeParse) return;
    if (starts_with(message, "reuse_node")) count_reused++;
    else if (starts_with(message, "cant_reuse_node_is_fragile")) count_fragile++;
    else if (starts_with(message, "lexed_lookahead")) count_lexed++;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static bool read_file(const char *path, Buffer *out) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    bool ok = fseek(f, 0, SEEK_END) == 0;
    long size = ok ? ftell(f) : -1;
    ok = ok && size >= 0 && size < (1L << 30) && fseek(f, 0, SEEK_SET) == 0;
    if (ok) {
        out->capacity = (uint32_t)size + 1;
        out->text = malloc(out->capacity);
        ok = out->text && fread(out->text, 1, (size_t)size, f) == (size_t)size;
        out->length = (uint32_t)size;
    }
    fclose(f);
    return ok;
}

static TSPoint point_at(const Buffer *b, uint32_t byte) {
    TSPoint p = {0, 0};
    for (uint32_t i = 0; i < byte; i++) {
        if (b->text[i] == '\n') p.row++, p.column = 0;
        else p.column++;
    }
    return p;
}

/* the byte just after the first character of the first identifier in the
 * middle top-level statement (an edit there stays inside one token), and
 * where that statement ends */
static bool edit_site(TSNode root, uint32_t *byte, uint32_t *statement_end, unsigned *statements) {
    uint32_t n = ts_node_named_child_count(root);
    *statements = n;
    for (uint32_t k = n / 2; k < n; k++) {
        TSNode statement = ts_node_named_child(root, k), node = statement;
        while (!ts_node_is_null(node) && strcmp(ts_node_type(node), "identifier") != 0)
            node = ts_node_named_child_count(node) ? ts_node_named_child(node, 0) : ts_node_next_named_sibling(node);
        if (!ts_node_is_null(node) && ts_node_end_byte(node) > ts_node_start_byte(node)) {
            *byte = ts_node_start_byte(node) + 1;
            *statement_end = ts_node_end_byte(statement);
            return true;
        }
    }
    return false;
}

static TSTree *parse(TSParser *parser, const TSTree *old, const Buffer *b, bool as_advise) {
    return as_advise ? py_parse(parser, old, b->text, b->length) : ts_parser_parse_string(parser, old, b->text, b->length);
}

/* inserts c at byte `at` (c != 0) or deletes the byte there (c == 0), and tells the tree */
static void edit_byte(Buffer *b, TSTree *tree, uint32_t at, char c) {
    TSPoint p = point_at(b, at);
    if (c) {
        memmove(b->text + at + 1, b->text + at, b->length - at);
        b->text[at] = c;
        b->length++;
    } else {
        memmove(b->text + at, b->text + at + 1, b->length - at - 1);
        b->length--;
    }
    /* a newline moves the end to the next row */
    TSPoint one_on = c == '\n' ? (TSPoint){p.row + 1, 0} : (TSPoint){p.row, p.column + 1};
    TSInputEdit edit = {at, c ? at : at + 1, c ? at + 1 : at, p, c ? p : one_on, c ? one_on : p};
    if (!c && b->text[at] == '\n') edit.old_end_point = (TSPoint){p.row + 1, 0};
    ts_tree_edit(tree, &edit);
}

/* an incremental reparse of *tree, timed; counted from the log when asked */
static double reparse(TSParser *parser, TSTree **tree, const Buffer *b, bool as_advise, Figures *counted) {
    if (counted) {
        count_reused = count_fragile = count_lexed = 0;
        ts_parser_set_logger(parser, (TSLogger){NULL, count_log});
    }
    double start = now_ms();
    TSTree *next = parse(parser, *tree, b, as_advise);
    double took = now_ms() - start;
    if (counted) {
        ts_parser_set_logger(parser, (TSLogger){NULL, NULL});
        counted->reused = count_reused, counted->fragile = count_fragile, counted->lexed = count_lexed;
    }
    ts_tree_delete(*tree);
    *tree = next;
    return took;
}

static void percentiles(double *times, int n, double *p50, double *p95) {
    qsort(times, (size_t)n, sizeof *times, compare_doubles);
    *p50 = times[(n - 1) / 2];
    *p95 = times[(n - 1) * 95 / 100];
}

/* typed after the middle statement, key by key, then deleted key by key:
 * most prefixes are syntax errors (`z = torch.zeros(4,`), as when a person types */
static const char TYPED[] = "\nz = torch.zeros(4, device=w.device) + w[0]";
enum { TYPED_KEYS = sizeof TYPED - 1 };

static Figures measure(Buffer *b, int reps, bool as_advise) {
    Figures f = {0};
    TSParser *parser = ts_parser_new();
    ts_parser_set_language(parser, tree_sitter_python());
    double start = now_ms();
    TSTree *tree = parse(parser, NULL, b, as_advise);
    f.full_ms = now_ms() - start;
    uint32_t at, statement_end;
    double *times = malloc(sizeof *times * (size_t)(reps > 2 * TYPED_KEYS ? reps : 2 * TYPED_KEYS));
    if (!tree || !times || !edit_site(ts_tree_root_node(tree), &at, &statement_end, &f.statements)) goto done;
    /* one character into an identifier and out again; the first reparse is
     * logged, which slows it, and left out of the times */
    for (int i = 0; i < reps && tree; i++) {
        edit_byte(b, tree, at, i % 2 == 0 ? 'q' : 0);
        times[i] = reparse(parser, &tree, b, as_advise, i == 0 ? &f : NULL);
    }
    if (!tree) goto done;
    percentiles(times + 1, reps - 1, &f.p50_ms, &f.p95_ms);
    int n = 0;
    for (int k = 0; k < TYPED_KEYS && tree; k++) {
        edit_byte(b, tree, statement_end + (uint32_t)k, TYPED[k]);
        times[n++] = reparse(parser, &tree, b, as_advise, NULL);
    }
    for (int k = TYPED_KEYS - 1; k >= 0 && tree; k--) {
        edit_byte(b, tree, statement_end + (uint32_t)k, 0);
        times[n++] = reparse(parser, &tree, b, as_advise, NULL);
    }
    if (!tree) goto done;
    percentiles(times, n, &f.typed_p50_ms, &f.typed_p95_ms);
    /* the edits were told right: the tree is the one a fresh parse gives */
    TSTree *fresh = parse(parser, NULL, b, as_advise);
    char *mine = ts_node_string(ts_tree_root_node(tree)), *theirs = fresh ? ts_node_string(ts_tree_root_node(fresh)) : NULL;
    f.ok = theirs && strcmp(mine, theirs) == 0;
    if (!f.ok) fprintf(stderr, "bench-reparse: the reparsed tree differs from a fresh parse\n");
    free(mine);
    free(theirs);
    ts_tree_delete(fresh);
done:
    free(times);
    ts_tree_delete(tree);
    ts_parser_delete(parser);
    return f;
}

int main(int argc, char **argv) {
    int reps = 400, files = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
            continue;
        }
        if (argv[i][0] == '-' || reps < 3) {
            fprintf(stderr, "usage: bench-reparse [--reps N (at least 3)] FILE.py...\n");
            return 2;
        }
        Buffer as_written = {0}, as_advise = {0};
        if (!read_file(argv[i], &as_written) || !read_file(argv[i], &as_advise)) {
            fprintf(stderr, "bench-reparse: cannot read %s\n", argv[i]);
            return 1;
        }
        /* room for what the edits insert */
        as_written.text = realloc(as_written.text, as_written.length + TYPED_KEYS + 1);
        as_advise.text = realloc(as_advise.text, as_advise.length + TYPED_KEYS + 1);
        if (!as_written.text || !as_advise.text) return 1;
        Figures a = measure(&as_written, reps, false), b = measure(&as_advise, reps, true);
        if (!a.ok || !b.ok) {
            fprintf(stderr, "bench-reparse: %s has no top-level statement with an identifier to edit\n", argv[i]);
            return 1;
        }
        printf("%s: %u bytes, %u top-level statements, %d reparses each\n", argv[i], as_written.length, a.statements, reps);
        printf("  %-44s %12s %16s\n", "", "tree-sitter", "as advise parses");
        printf("  %-44s %12.2f %16.2f\n", "full parse, ms", a.full_ms, b.full_ms);
        printf("  %-44s %12.2f %16.2f\n", "reparse after a one-character edit, p50 ms", a.p50_ms, b.p50_ms);
        printf("  %-44s %12.2f %16.2f\n", "p95 ms", a.p95_ms, b.p95_ms);
        printf("  %-44s %12.2f %16.2f\n", "typing a statement key by key, p50 ms", a.typed_p50_ms, b.typed_p50_ms);
        printf("  %-44s %12.2f %16.2f\n", "p95 ms", a.typed_p95_ms, b.typed_p95_ms);
        printf("  %-44s %12lu %16lu\n", "subtrees reused whole (one reparse)", a.reused, b.reused);
        printf("  %-44s %12lu %16lu\n", "subtrees not reused: fragile", a.fragile, b.fragile);
        printf("  %-44s %12lu %16lu\n", "tokens lexed again", a.lexed, b.lexed);
        free(as_written.text);
        free(as_advise.text);
        files++;
    }
    if (!files) {
        fprintf(stderr, "usage: bench-reparse [--reps N (at least 3)] FILE.py...\n");
        return 2;
    }
    return 0;
}
