/* Builds small profiles with exact figures for the tests of the profile
 * view and of the merge (tests/test_profile_view.c, tests/test_measure.c). */
#ifndef ADVISE_PROFILE_BUILDER_H
#define ADVISE_PROFILE_BUILDER_H

#include <stdlib.h>
#include <string.h>

#include "profiler/profile.h"
#include "profiler/sha256.h"

/* A profile of one process that ran run_ns, on one H200 whose GPU was busy
 * busy_ns of its span (= run_ns), recorded 2026-11-30 15:19:37 UTC. */
static inline Profile *pb_new(uint64_t run_ns, uint64_t busy_ns) {
    Profile *p = profile_new();
    p->name = strdup("test");
    p->source = strdup("cupti");
    p->created = strdup("2026-11-30T15:19:37Z");
    p->tool = strdup("advise 0.1.0");
    ProfProcess proc = {.pid = 1, .rank = -1, .local_rank = -1, .world_size = -1, .wall_ns = run_ns};
    profile_add_process(p, &proc);
    p->devices = calloc(1, sizeof *p->devices);
    p->device_count = 1;
    p->devices[0] = (ProfDevice){.process = 0, .name = strdup("NVIDIA H200"), .sm_count = 132, .cc_major = 9};
    p->timelines = calloc(1, sizeof *p->timelines);
    p->timeline_count = 1;
    p->timelines[0] = (ProfTimeline){0, 0, run_ns, busy_ns, run_ns - busy_ns, busy_ns, 0, 0};
    return p;
}

static inline ProfStats pb_stats(uint64_t count, uint64_t total_ns) {
    uint64_t each = count ? total_ns / count : 0;
    return (ProfStats){count, total_ns, each, each, count ? total_ns - each * (count - 1) : 0};
}

static inline int pb_kernel(Profile *p, const char *name, uint64_t count, uint64_t total_ns) {
    p->kernels = realloc(p->kernels, (p->kernel_count + 1) * sizeof *p->kernels);
    p->kernels[p->kernel_count] = (ProfKernel){.process = 0, .device = 0, .name = strdup(name), .grid = {1, 1, 1},
                                               .block = {256, 1, 1}, .stats = pb_stats(count, total_ns)};
    return (int)p->kernel_count++;
}

static inline ProfOp *pb_op(Profile *p, ProfOpKind kind, const char *file, uint32_t line, uint64_t count,
                            uint64_t total_ns) {
    int f = profile_add_file(p, file);
    int site = profile_add_site(p, f, line, NULL);
    p->ops = realloc(p->ops, (p->op_count + 1) * sizeof *p->ops);
    ProfOp *op = &p->ops[p->op_count++];
    *op = (ProfOp){.kind = kind, .process = 0, .site = site, .kernel = -1, .stats = pb_stats(count, total_ns)};
    return op;
}

static inline void pb_launch(Profile *p, const char *file, uint32_t line, const char *kernel, uint64_t count,
                             uint64_t total_ns) {
    int k = pb_kernel(p, kernel, count, total_ns);
    pb_op(p, PROF_OP_LAUNCH, file, line, count, total_ns)->kernel = k;
}

static inline void pb_copy(Profile *p, const char *file, uint32_t line, ProfCopyKind dir, ProfMemKind host,
                           uint64_t bytes, uint64_t count, uint64_t total_ns) {
    ProfOp *op = pb_op(p, PROF_OP_MEMCPY, file, line, count, total_ns);
    op->copy = dir;
    op->src = dir == PROF_COPY_HTOD ? host : PROF_MEM_DEVICE;
    op->dst = dir == PROF_COPY_HTOD ? PROF_MEM_DEVICE : host;
    op->bytes = bytes;
}

/* An idle gap of duration_ns before the work of file:line (after the work
 * of before_line; 0: none known), in the given step phase. */
static inline void pb_gap(Profile *p, const char *file, uint32_t before_line, uint32_t line, uint64_t start_ns,
                          uint64_t duration_ns, ProfPhase phase) {
    int f = profile_add_file(p, file);
    int before = before_line ? profile_add_site(p, f, before_line, NULL) : -1;
    int after = profile_add_site(p, f, line, NULL);
    p->gaps = realloc(p->gaps, (p->gap_count + 1) * sizeof *p->gaps);
    p->gaps[p->gap_count++] = (ProfGap){.process = 0, .device = 0, .start_ns = start_ns, .duration_ns = duration_ns,
                                        .before_site = before, .after_site = after, .phase = phase};
}

static inline void pb_sync(Profile *p, const char *file, uint32_t line, uint64_t count, uint64_t total_ns) {
    pb_op(p, PROF_OP_SYNC, file, line, count, total_ns)->sync = PROF_SYNC_STREAM;
}

static inline void pb_alloc(Profile *p, const char *file, uint32_t line, uint64_t count, uint64_t total_ns) {
    ProfOp *op = pb_op(p, PROF_OP_ALLOC, file, line, count, total_ns);
    op->dst = PROF_MEM_DEVICE;
    op->bytes = count * 1024;
}

/* Per-line SASS metrics of one launch of kernel at file:line (added to an
 * entry already there). */
typedef struct {
    uint64_t global, global_ideal, shared, shared_ideal, local;
} PbLineCounts;

static inline void pb_line_metrics(Profile *p, const char *file, uint32_t line, const char *kernel, PbLineCounts c) {
    ProfLineMetrics m = {.kernel = (char *)kernel, .file = profile_add_file(p, file), .line = line, .launches = 1,
                         .instructions = 1000, .global_sectors = c.global, .global_sectors_ideal = c.global_ideal,
                         .shared_wavefronts = c.shared, .shared_wavefronts_ideal = c.shared_ideal,
                         .local_sectors = c.local};
    profile_add_line_metrics(p, &m);
}

/* Records text as the content of file when profiled. */
static inline void pb_hash(Profile *p, const char *file, const char *text) {
    int f = profile_add_file(p, file);
    Sha256 s;
    uint8_t digest[SHA256_DIGEST_BYTES];
    char hex[SHA256_HEX_CHARS + 1];
    sha256_init(&s);
    sha256_update(&s, text, strlen(text));
    sha256_final(&s, digest);
    sha256_hex(digest, hex);
    free(p->files[f].sha256);
    p->files[f].sha256 = strdup(hex);
}

#endif
