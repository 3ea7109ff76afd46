/* Device memory by source line, for the faces that show a profile beside
 * the code or in a report (hover, code lens, heat map, `advise report`):
 * the profile's memory lines (`advise profile --memory`) summed per line.
 *
 * A line may hold memory in several processes or devices (one ProfMemory
 * each). Each kind is summed per memory first (several sites can share a
 * line: the same line seen under two function names), then the figure shown
 * is the one of the memory where the line has the most, so that a share
 * never divides one GPU's bytes by another GPU's peak.
 *
 * Pure C over profile.h; indexes from the profile are checked again here. */
#ifndef ADVISE_LINE_MEMORY_H
#define ADVISE_LINE_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profiler/profile.h"

/* One kind of memory (peak, growth, allocs, oom) at one line. */
typedef struct {
    const ProfMemory *memory; /* where the line has the most of this kind; NULL: none of it */
    uint64_t bytes;           /* in that memory (growth: bytes per step) */
    uint64_t count;           /* with bytes: allocations (allocs), steps measured (growth) */
    uint64_t all_bytes;       /* summed over every memory */
    uint32_t memories;        /* how many memories the line has this kind in */
    /* peak: in that memory, the line that freed most of these bytes after the peak (freed_bytes
     * of them); none when freed_bytes is 0 */
    uint64_t freed_bytes;
    int freed_site;
} LineMemoryFigure;

typedef struct {
    int file;      /* into the profile's files */
    uint32_t line; /* 1-based */
    LineMemoryFigure kind[PROF_MEM_LINE_KIND_COUNT];
} LineMemory;

/* Every line of file (an index into p->files) with memory figures, sorted
 * by line; *count set. NULL when there is none or memory runs out. */
LineMemory *line_memory_of_file(const Profile *p, int file, size_t *count);

/* The figures of one line (1-based); false when it has none. */
bool line_memory_at(const Profile *p, int file, uint32_t line, LineMemory *out);

/* The line's bytes live at the peak over the peak of the memory they are
 * in (0 to 1); 0 when it holds nothing at the peak. */
double line_memory_peak_share(const LineMemory *l);

/* Worth a code lens: live bytes at the peak of at least 1% of that peak. */
bool line_memory_worth_lens(const LineMemory *l);

/* The lines of one memory (an index into p->memories) holding memory of
 * one kind, most bytes first (then by file and line); sites at the same
 * file and line are summed. Memory of no line (site -1: outside the
 * project, or allocated before recording began) is summed into *elsewhere.
 * *count set; NULL when there is none or memory runs out. */
typedef struct {
    int site;       /* a site at that file and line (for naming it) */
    int file;
    uint32_t line;
    uint64_t bytes, count;
    /* peak: the line that freed most of these bytes after the peak (a site), and how many; none
     * when freed_bytes is 0 */
    uint64_t freed_bytes;
    int freed_site;
} MemoryHolder;

MemoryHolder *memory_holders(const Profile *p, size_t memory, ProfMemLineKind kind, size_t *count,
                             uint64_t *elsewhere);

#endif
