/* Device memory in the editor (`advise profile --memory`): the figures by
 * line (server/render/line_memory.c), the hover's words, the code lens's
 * title and advise/lineCosts' memory lines (server/lsp/lsp_memory_views.c),
 * on the H200 recordings of bench/memory/train.py
 * (tests/fixtures/profiles/memory/: leak_h200.json, act_h200.json), on
 * hand-made profiles (several GPUs, two sites on one line, bad indexes), and
 * a profile without memory, whose hover and lenses stay as they were. The
 * figures asserted here are the fixtures' own bytes, formatted. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/profile_json.h"
#include "profiler/profile_view.h"
#include "server/lsp/lsp_memory_views.h"
#include "server/lsp/lsp_profile.h"
#include "server/render/line_memory.h"

#define MEMORY_FIXTURES ADVISE_SOURCE_DIR "/tests/fixtures/profiles/memory/"
#define TRAIN "bench/memory/train.py"

static Profile *read_profile(const char *path) {
    char *error = NULL;
    Profile *p = profile_read_file(path, PROFILE_FINAL, &error);
    cr_assert_not_null(p, "%s: %s", path, error ? error : "");
    return p;
}

static ProfileView *load_view(const char *path) {
    char *error = NULL;
    ProfileView *v = profile_view_load(path, &error);
    cr_assert_not_null(v, "%s: %s", path, error ? error : "");
    return v;
}

static int train_file(const Profile *p) {
    for (size_t i = 0; i < p->file_count; i++)
        if (strcmp(p->files[i].path, TRAIN) == 0) return (int)i;
    cr_assert_fail("no %s in the profile", TRAIN);
    return -1;
}

/* ---- figures by line ------------------------------------------------------------ */

Test(line_memory, the_leak_run_by_line) {
    Profile *p = read_profile(MEMORY_FIXTURES "leak_h200.json");
    int file = train_file(p);
    size_t n;
    LineMemory *lines = line_memory_of_file(p, file, &n);
    cr_assert_not_null(lines);
    /* the lines of train.py in memory_lines: peak, allocs or growth */
    const uint32_t expected[] = {35, 36, 37, 53, 86, 88, 89, 90, 91, 102, 103, 108, 109, 112, 114};
    cr_assert_eq(n, sizeof expected / sizeof *expected);
    for (size_t i = 0; i < n; i++) cr_expect_eq(lines[i].line, expected[i], "line %zu", i);

    /* `h = self.up(x)`: sites 18 (peak, allocs, growth) */
    const LineMemory *up = &lines[0];
    cr_expect_eq(up->kind[PROF_MEM_LINE_PEAK].bytes, 1276116992u);
    cr_expect_eq(up->kind[PROF_MEM_LINE_PEAK].memory, &p->memories[0]);
    cr_expect_eq(up->kind[PROF_MEM_LINE_PEAK].memories, 1);
    cr_expect_eq(up->kind[PROF_MEM_LINE_GROWTH].bytes, 33554432u);
    cr_expect_eq(up->kind[PROF_MEM_LINE_GROWTH].count, 29);
    cr_expect_eq(up->kind[PROF_MEM_LINE_ALLOCS].bytes, 5168431104u);
    cr_expect_eq(up->kind[PROF_MEM_LINE_ALLOCS].count, 238);
    cr_expect_null(up->kind[PROF_MEM_LINE_OOM].memory);
    cr_expect_float_eq(line_memory_peak_share(up), 1276116992.0 / 3443663136.0, 1e-12);
    cr_expect(line_memory_worth_lens(up));

    /* `loss.backward()`: 29 allocations, 116 bytes in all, nothing live at the peak */
    const LineMemory *zero_grad = &lines[11];
    cr_expect_eq(zero_grad->line, 108);
    cr_expect_null(zero_grad->kind[PROF_MEM_LINE_PEAK].memory);
    cr_expect_eq(zero_grad->kind[PROF_MEM_LINE_ALLOCS].count, 29);
    cr_expect_eq(line_memory_peak_share(zero_grad), 0);
    cr_expect_not(line_memory_worth_lens(zero_grad));

    /* one line alone reads the same */
    LineMemory one;
    cr_assert(line_memory_at(p, file, 35, &one));
    cr_expect_eq(memcmp(&one, up, sizeof one), 0);
    cr_expect_not(line_memory_at(p, file, 1, &one), "a line without memory");
    cr_expect_not(line_memory_at(p, file, 0, &one), "line 0 is no line");
    cr_expect_not(line_memory_at(p, -1, 35, &one));
    cr_expect_not(line_memory_at(p, 99, 35, &one), "a file index beyond the files");
    free(lines);
    profile_free(p);
}

Test(line_memory, lines_worth_a_lens_hold_one_percent_of_the_peak) {
    Profile *p = read_profile(MEMORY_FIXTURES "leak_h200.json");
    size_t n;
    LineMemory *lines = line_memory_of_file(p, train_file(p), &n);
    cr_assert_not_null(lines);
    /* 1% of 3,443,663,136 bytes: 34.4 MB; line 102 holds 16.8 MB */
    uint32_t worth[8];
    size_t count = 0;
    for (size_t i = 0; i < n && count < 8; i++)
        if (line_memory_worth_lens(&lines[i])) worth[count++] = lines[i].line;
    cr_assert_eq(count, 5);
    const uint32_t expected[] = {35, 36, 37, 86, 109};
    for (size_t i = 0; i < count; i++) cr_expect_eq(worth[i], expected[i]);
    free(lines);
    profile_free(p);
}

Test(line_memory, holders_of_the_peak_for_the_report) {
    Profile *p = read_profile(MEMORY_FIXTURES "leak_h200.json");
    size_t n;
    uint64_t elsewhere;
    MemoryHolder *h = memory_holders(p, 0, PROF_MEM_LINE_PEAK, &n, &elsewhere);
    cr_assert_not_null(h);
    cr_assert_eq(n, 14);
    cr_expect_eq(elsewhere, 167895080u, "the line without a site");
    const uint32_t lines[] = {35, 36, 37, 109, 86};
    const uint64_t bytes[] = {1276116992u, 1241513984u, 327155712u, 268681296u, 134340648u};
    for (size_t i = 0; i < 5; i++) {
        cr_expect_eq(h[i].line, lines[i], "holder %zu", i);
        cr_expect_eq(h[i].bytes, bytes[i], "holder %zu", i);
        cr_expect_eq(p->sites[h[i].site].line, lines[i]);
    }
    free(h);
    h = memory_holders(p, 0, PROF_MEM_LINE_GROWTH, &n, &elsewhere);
    cr_assert_eq(n, 4);
    cr_expect_eq(h[0].bytes, 33554432u);
    cr_expect_eq(h[0].count, 29);
    cr_expect_eq(h[3].line, 112);
    cr_expect_eq(h[3].bytes, 20484u);
    free(h);
    cr_expect_null(memory_holders(p, 0, PROF_MEM_LINE_OOM, &n, &elsewhere));
    cr_expect_eq(n, 0);
    cr_expect_null(memory_holders(p, 1, PROF_MEM_LINE_PEAK, &n, &elsewhere), "a memory beyond the list");
    profile_free(p);
}

/* Two GPUs: the leak run's memory again as GPU 1 of the same process, where
 * line 35 holds 2 GB at the peak; a second site on line 35 in GPU 0; and
 * memory lines with indexes no reader would let through. */
static Profile *two_gpus(void) {
    Profile *p = read_profile(MEMORY_FIXTURES "leak_h200.json");
    ProfMemory *m = realloc(p->memories, 2 * sizeof *m);
    cr_assert_not_null(m);
    p->memories = m;
    p->memories[1] = p->memories[0];
    p->memories[1].device = 1;
    p->memories[1].samples = NULL;
    p->memories[1].sample_count = 0;
    p->memory_count = 2;
    ProfMemLine *l = realloc(p->memory_lines, (p->memory_line_count + 5) * sizeof *l);
    cr_assert_not_null(l);
    p->memory_lines = l;
    int block_forward = -1; /* site 6: line 35 as `Block.forward` */
    for (size_t i = 0; i < p->site_count; i++)
        if (p->sites[i].line == 35 && p->sites[i].function && strcmp(p->sites[i].function, "Block.forward") == 0)
            block_forward = (int)i;
    cr_assert_geq(block_forward, 0);
    int up = -1;
    for (size_t i = 0; i < p->site_count; i++)
        if (p->sites[i].line == 35 && p->sites[i].function && strcmp(p->sites[i].function, "forward") == 0) up = (int)i;
    cr_assert_geq(up, 0);
    size_t k = p->memory_line_count;
    l[k++] = (ProfMemLine){.memory = 1, .kind = PROF_MEM_LINE_PEAK, .site = up, .bytes = 2000000000u};
    l[k++] = (ProfMemLine){.memory = 0, .kind = PROF_MEM_LINE_PEAK, .site = block_forward, .bytes = 1000};
    l[k++] = (ProfMemLine){.memory = 7, .kind = PROF_MEM_LINE_PEAK, .site = up, .bytes = 1};      /* no such memory */
    l[k++] = (ProfMemLine){.memory = 0, .kind = PROF_MEM_LINE_PEAK, .site = 99999, .bytes = 1};   /* no such site */
    l[k++] = (ProfMemLine){.memory = 0, .kind = (ProfMemLineKind)9, .site = up, .bytes = 1};      /* no such kind */
    p->memory_line_count = k;
    return p;
}

Test(line_memory, several_gpus_and_sites_sharing_a_line) {
    Profile *p = two_gpus();
    LineMemory l;
    cr_assert(line_memory_at(p, train_file(p), 35, &l));
    const LineMemoryFigure *peak = &l.kind[PROF_MEM_LINE_PEAK];
    cr_expect_eq(peak->memory, &p->memories[1], "the GPU where the line holds most");
    cr_expect_eq(peak->bytes, 2000000000u);
    cr_expect_eq(peak->memories, 2);
    cr_expect_eq(peak->all_bytes, 2000000000u + 1276116992u + 1000u, "both sites of GPU 0, and GPU 1");
    size_t n;
    uint64_t elsewhere;
    MemoryHolder *h = memory_holders(p, 0, PROF_MEM_LINE_PEAK, &n, &elsewhere);
    cr_assert_not_null(h);
    cr_expect_eq(n, 14, "two sites on line 35 are one holder");
    cr_expect_eq(h[0].bytes, 1276116992u + 1000u);
    cr_expect_eq(elsewhere, 167895080u + 1u, "a site beyond the list names no line");
    free(h);

    char *md = lsp_memory_hover(p, &l);
    cr_assert_not_null(md);
    cr_expect(strstr(md, "- live at the memory peak: 2.00 GB (58% of the peak 3.44 GB) on GPU 1 of process "),
              "%s", md);
    cr_expect(strstr(md, ", where the line has the most; 3.28 GB on 2 GPUs in all\n"), "%s", md);
    free(md);
    profile_free(p);
}

/* ---- the hover -------------------------------------------------------------------- */

Test(memory_hover, the_leak_runs_first_block_line) {
    Profile *p = read_profile(MEMORY_FIXTURES "leak_h200.json");
    LineMemory l;
    cr_assert(line_memory_at(p, train_file(p), 35, &l));
    char *md = lsp_memory_hover(p, &l);
    cr_expect_str_eq(md, "Device memory:\n\n"
                         "- live at the memory peak: 1.28 GB (37% of the peak 3.44 GB)\n"
                         "- grows by 33.6 MB per optimizer step (over the last 29 steps)\n"
                         "- allocated here 238 times in the recorded window, 5.17 GB in all, about 8.2 per optimizer step\n");
    free(md);
    cr_assert(line_memory_at(p, train_file(p), 108, &l));
    md = lsp_memory_hover(p, &l);
    cr_expect_str_eq(md, "Device memory:\n\n- allocated here 29 times in the recorded window, 116 bytes in all, about once per "
                         "optimizer step\n");
    free(md);
    profile_free(p);
}

/* where the peak's memory was freed, and memory an earlier step left alive, freed here */
Test(memory_hover, freed_later_and_kept_from_an_earlier_step) {
    Profile *p = read_profile(MEMORY_FIXTURES "leak_h200.json");
    int loop = -1;
    for (size_t i = 0; i < p->site_count; i++)
        if (p->sites[i].line == 108) loop = (int)i;
    cr_assert(loop >= 0);
    for (size_t i = 0; i < p->memory_line_count; i++) {
        ProfMemLine *l = &p->memory_lines[i];
        if (l->kind == PROF_MEM_LINE_PEAK && l->site >= 0 && p->sites[l->site].line == 35) {
            l->freed_site = loop;
            l->freed_bytes = 1000000000u;
        }
    }
    ProfMemLine *l = realloc(p->memory_lines, (p->memory_line_count + 1) * sizeof *l);
    cr_assert_not_null(l);
    p->memory_lines = l;
    l[p->memory_line_count++] = (ProfMemLine){.memory = 0, .kind = PROF_MEM_LINE_KEPT, .site = loop,
                                              .bytes = 500000000u, .count = 3};
    LineMemory at;
    cr_assert(line_memory_at(p, train_file(p), 35, &at));
    char *md = lsp_memory_hover(p, &at);
    cr_expect(strstr(md, "- live at the memory peak: 1.28 GB (37% of the peak 3.44 GB); 1.00 GB of it was freed "
                         "later at bench/memory/train.py:108, which kept it alive until then\n"),
              "%s", md);
    free(md);
    for (size_t i = 0; i < p->memory_line_count; i++) { /* freed where it was made: temporaries */
        ProfMemLine *m = &p->memory_lines[i];
        if (m->kind == PROF_MEM_LINE_PEAK && m->freed_bytes) m->freed_site = m->site;
    }
    cr_assert(line_memory_at(p, train_file(p), 35, &at));
    md = lsp_memory_hover(p, &at);
    cr_expect(strstr(md, "(37% of the peak 3.44 GB); 1.00 GB of it was freed by this same line after the peak "
                         "(temporaries of its statement)\n"),
              "%s", md);
    free(md);
    cr_assert(line_memory_at(p, train_file(p), 108, &at));
    md = lsp_memory_hover(p, &at);
    cr_expect(strstr(md, "- freed here, after the peak: 500 MB that an earlier step allocated, alive at the peak "
                         "(3 tensors)\n"),
              "%s", md);
    free(md);
    profile_free(p);
}

Test(memory_hover, the_activation_runs_optimizer_step) {
    Profile *p = read_profile(MEMORY_FIXTURES "act_h200.json");
    LineMemory l;
    cr_assert(line_memory_at(p, train_file(p), 109, &l));
    char *md = lsp_memory_hover(p, &l);
    /* 1,611,677,776 of 6,959,534,244 bytes: the optimizer's state */
    cr_expect_str_eq(md, "Device memory:\n\n"
                         "- live at the memory peak: 1.61 GB (23% of the peak 6.96 GB)\n"
                         "- allocated here 3,038 times in the recorded window, 25.0 GB in all, about 105 per optimizer "
                         "step\n");
    free(md);
    profile_free(p);
}

Test(memory_hover, an_incomplete_window_and_an_out_of_memory_error) {
    Profile *p = read_profile(MEMORY_FIXTURES "leak_h200.json");
    ProfMemory *m = &p->memories[0];
    m->window_complete = false;
    m->max_allocated = 5000000000u;
    m->oom = true;
    m->oom_allocated = 4000000000u;
    ProfMemLine *l = realloc(p->memory_lines, (p->memory_line_count + 1) * sizeof *l);
    cr_assert_not_null(l);
    p->memory_lines = l;
    int up = -1;
    for (size_t i = 0; i < p->site_count; i++)
        if (p->sites[i].line == 35 && p->sites[i].function && strcmp(p->sites[i].function, "forward") == 0) up = (int)i;
    l[p->memory_line_count++] = (ProfMemLine){.memory = 0, .kind = PROF_MEM_LINE_OOM, .site = up, .bytes = 1500000000u};
    LineMemory figures;
    cr_assert(line_memory_at(p, train_file(p), 35, &figures));
    char *md = lsp_memory_hover(p, &figures);
    cr_expect(strstr(md, "- live at the memory peak: 1.28 GB (37% of the peak 3.44 GB); the recorded window began "
                         "after the run did, whose own peak was 5.00 GB\n"),
              "%s", md);
    cr_expect(strstr(md, "- live when an allocation failed for lack of memory: 1.50 GB (of 4.00 GB allocated then)\n"),
              "%s", md);
    free(md);
    profile_free(p);
}

/* The whole figure part of the hover, as the server writes it for a line:
 * the time figures first, then the memory under the same heading. */
Test(memory_hover, after_the_time_figures_of_the_line) {
    ProfileView *v = load_view(MEMORY_FIXTURES "leak_h200.json");
    cr_assert_not_null(v);
    int file = profile_view_file(v, TRAIN);
    cr_assert_geq(file, 0);
    char *md = lsp_profile_line_hover(v, file, 35);
    cr_assert_not_null(md);
    const char *head = "**Measured at this line** (profile `train`, recorded 2026-12-02 14:45 UTC on NVIDIA H200)\n\n"
                       "The line: **17% of GPU time** (55.1 ms of kernels, copies and memsets)\n\n- kernel `";
    cr_expect_eq(strncmp(md, head, strlen(head)), 0, "%s", md);
    const char *memory =
        strstr(md, "\n\nDevice memory:\n\n- live at the memory peak: 1.28 GB (37% of the peak 3.44 GB)\n");
    cr_expect_not_null(memory, "a paragraph of its own after the list of operations: %s", md);
    cr_expect(memory && strstr(md, "- allocation of device memory: 14 allocations") < memory);
    free(md);
    cr_expect_null(lsp_profile_line_hover(v, file, 1), "nothing measured at line 1");
    profile_view_free(v);
}

/* A line whose operations the profile does not hold: the heading is the memory's own. */
Test(memory_hover, a_line_with_memory_and_no_operation) {
    Profile *p = read_profile(MEMORY_FIXTURES "leak_h200.json");
    for (size_t i = 0; i < p->op_count; i++) p->ops[i].site = -1;
    ProfileView *v = profile_view_new(p, MEMORY_FIXTURES "leak_h200.json");
    cr_assert_not_null(v);
    char *md = lsp_profile_line_hover(v, profile_view_file(v, TRAIN), 102);
    cr_expect_str_eq(md, "**Measured at this line** (profile `train`, recorded 2026-12-02 14:45 UTC on NVIDIA H200)\n\n"
                         "Device memory:\n\n"
                         "- live at the memory peak: 16.8 MB (0.5% of the peak 3.44 GB)\n"
                         "- allocated here once in the recorded window, 16.8 MB in all\n");
    free(md);
    profile_view_free(v);
}

Test(memory_hover, a_profile_without_memory_says_nothing_of_it) {
    ProfileView *v = load_view(ADVISE_SOURCE_DIR "/tests/fixtures/profiles/h200/train_classifier.json");
    cr_assert_not_null(v);
    int file = profile_view_file(v, "samples/python/train_classifier.py");
    cr_assert_geq(file, 0);
    size_t n = 7;
    cr_expect_null(line_memory_of_file(profile_view_profile(v), file, &n));
    cr_expect_eq(n, 0);
    char *md = lsp_profile_line_hover(v, file, 110);
    cr_assert_not_null(md);
    cr_expect_null(strstr(md, "Device memory:"), "%s", md);
    cr_expect(strstr(md, "**Measured at this line** (profile `train_classifier`"));
    free(md);
    profile_view_free(v);
}

/* ---- the code lens and the heat map -------------------------------------------------------- */

Test(memory_lens, titles_of_the_fixtures) {
    Profile *p = read_profile(MEMORY_FIXTURES "leak_h200.json");
    LineMemory l;
    char title[96];
    cr_assert(line_memory_at(p, train_file(p), 35, &l));
    cr_expect(lsp_memory_lens_title(&l, title, sizeof title));
    cr_expect_str_eq(title, "1.28 GB live at peak (37%)");
    cr_assert(line_memory_at(p, train_file(p), 37, &l));
    cr_expect(lsp_memory_lens_title(&l, title, sizeof title));
    cr_expect_str_eq(title, "327 MB live at peak (9.5%)");
    cr_assert(line_memory_at(p, train_file(p), 102, &l));
    cr_expect_not(lsp_memory_lens_title(&l, title, sizeof title), "0.5% of the peak: no lens");
    cr_expect_str_eq(title, "");
    profile_free(p);

    p = read_profile(MEMORY_FIXTURES "act_h200.json");
    cr_assert(line_memory_at(p, train_file(p), 109, &l));
    cr_expect(lsp_memory_lens_title(&l, title, sizeof title));
    cr_expect_str_eq(title, "1.61 GB live at peak (23%)");
    profile_free(p);
}

Test(memory_lens, heat_map_line_json) {
    Profile *p = read_profile(MEMORY_FIXTURES "leak_h200.json");
    LineMemory l;
    cr_assert(line_memory_at(p, train_file(p), 36, &l));
    json_t *j = lsp_memory_line_json(&l);
    cr_assert_not_null(j);
    cr_expect_eq(json_integer_value(json_object_get(j, "line")), 35, "0-based");
    cr_expect_float_eq(json_real_value(json_object_get(j, "share")), 1241513984.0 / 3443663136.0, 1e-12);
    cr_expect_eq(json_integer_value(json_object_get(j, "peak_bytes")), 1241513984);
    cr_expect_eq(json_integer_value(json_object_get(j, "growth_bytes_per_step")), 33554432);
    cr_expect_eq(json_integer_value(json_object_get(j, "allocations")), 236);
    cr_expect_eq(json_integer_value(json_object_get(j, "allocated_bytes")), 5133828096);
    json_decref(j);
    profile_free(p);
}
