/* What a rule is: a descriptor (stable code, kebab-case name, default
 * severity, languages, summary, documentation) and a check that reads one
 * document and reports findings. A rule never knows about LSP, JSON or SARIF.
 *
 * To add a rule: one file rules/<language>/<name>.c that defines
 * `const Rule rule_<name>` (the file name with '-' as '_'), and one fixture
 * tests/fixtures/<language>/<CODE>.py. The build registers every file in
 * rules/<language>/ by itself. */
#ifndef ADVISE_RULE_H
#define ADVISE_RULE_H

#include "../analysis/cuda_source.h"
#include "../analysis/document.h"
#include "../analysis/finding.h"
#include "../analysis/python_facts.h"
#include "../analysis/python_source.h"

typedef struct RuleContext RuleContext;

typedef struct Rule {
    const char *code;     /* stable: "PY001" */
    const char *name;     /* kebab-case: "host-sync-in-loop" */
    Severity severity;    /* default */
    unsigned languages;   /* Language bits */
    const char *summary;  /* one line */
    const char *documentation; /* markdown: what it does, why it is slow, example, use instead, fix safety */
    void (*check)(RuleContext *ctx);
    /* Findings depend on the whole file (not just the top-level statement
     * they sit in): the editor's quick re-analysis of one edited function
     * skips the rule, and the full pass that follows runs it. */
    bool whole_file;
    /* Python rules are skipped in files that neither import torch nor
     * mention CUDA; set this for a rule that applies to them anyway. */
    bool runs_without_torch;
} Rule;

struct RuleContext {
    const Rule *rule;
    const Document *doc;
    const PySource *py; /* set for Python documents */
    const CudaSource *cuda; /* set for CUDA/C++ documents */
    FindingList *out;
    bool out_of_memory;
    /* when set, only the top-level statements overlapping [region_start,
     * region_end) are analysed (see rule_walk) */
    bool has_region;
    size_t region_start, region_end;
};

/* Walks the parse tree in preorder: the whole module, or only the top-level
 * statements that overlap the context's region. Rules walk with this. */
void rule_walk(RuleContext *ctx, PyVisitor visit, void *data);

Finding *rule_report_cu(RuleContext *ctx, const CuNode *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Reports a finding over [start, end) with the rule's default severity.
 * Returns it so that the rule can add evidence and fixes; NULL when memory
 * runs out (the context remembers). */
Finding *rule_report(RuleContext *ctx, size_t start, size_t end, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
Finding *rule_report_node(RuleContext *ctx, TSNode node, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The registry: every rule, sorted by code. */
const Rule *const *rules_all(size_t *count);
/* By code or name (exact), NULL when unknown. */
const Rule *rule_find(const char *code_or_name);

#endif
