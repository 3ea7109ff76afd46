/* What the memory rules (PR015-PR018) share: the profile's memory lines
 * (`advise profile --memory`) of one kind that fall in the document being
 * checked, summed per source line. */
#ifndef ADVISE_MEMORY_LINES_H
#define ADVISE_MEMORY_LINES_H

#include <stddef.h>
#include <stdint.h>

#include "profiler/profile.h"
#include "rules/rule.h"

/* The "Fix safety" section every memory rule's page shares. */
#define MEMORY_RULE_FIX_SAFETY                                                                          \
    "## Fix safety\n"                                                                                   \
    "No automatic fix: which change is right depends on the program (and each costs something:\n"     \
    "compute, precision or batch size); the finding names the options with their savings.\n"          \
    "\n"

typedef struct {
    uint32_t line;
    const ProfSite *site;     /* the first site at the line */
    const ProfMemory *memory; /* the process and device where it holds the most */
    uint64_t bytes;           /* summed over processes and devices */
    uint64_t count;
    uint64_t memory_bytes;    /* its bytes in that one memory */
    /* peak: the line that freed most of its bytes after the peak, and how many (NULL, 0: none) */
    const ProfSite *freed;
    uint64_t freed_bytes;
} MemLine;

/* The lines of this document with memory of that kind, most bytes first;
 * *count set. NULL when there are none or memory runs out (the context
 * then remembers). The caller frees the array. */
MemLine *mem_lines_of_document(RuleContext *ctx, ProfMemLineKind kind, size_t *count);
/* As mem_lines_of_document, with the lines of memory entries of that source only. */
MemLine *mem_lines_of_document_from(RuleContext *ctx, ProfMemLineKind kind, ProfMemSource source, size_t *count);

/* The line of the whole profile (any file) that holds the most bytes of
 * that kind in memory m: its site, or NULL. */
const ProfSite *mem_top_site(const Profile *p, const ProfMemory *m, ProfMemLineKind kind, uint64_t *bytes);

#endif
