/* Profile figures follow the code through edits (analysis/line_map.h,
 * profiler/profile_remap.h): where each profiled line went, which lines an
 * edit changed, and a profile moved onto the edited text. */
#include <criterion/criterion.h>
#include <string.h>

#include "analysis/document.h"
#include "analysis/line_map.h"
#include "profiler/profile_remap.h"

static const char *const SHA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/* applies one edit to doc and to map, as the language server does */
static void edit(Document *doc, LineMap *map, size_t start, size_t end, const char *text) {
    cr_assert(line_map_replace(map, doc, start, end, text, strlen(text)));
    cr_assert(document_replace(doc, start, end, text, strlen(text)));
    cr_assert_eq(map->count, doc->line_count, "the map has %zu lines, the text %zu", map->count, doc->line_count);
}

static size_t offset_of_line(const Document *doc, size_t line) { return doc->line_starts[line]; }

Test(line_map, whole_lines_inserted_and_removed_move_the_lines_after_them) {
    Document *doc = document_new("a.py", LANGUAGE_PYTHON, "a\nb\nc\nd\n", 8);
    LineMap map;
    cr_assert(line_map_start(&map, doc, SHA));
    cr_expect(line_map_is_identity(&map));
    edit(doc, &map, 0, 0, "x\ny\n"); /* two lines above "a" */
    uint32_t expected[] = {0, 0, 1, 2, 3, 4, 5};
    cr_assert_eq(map.count, 7);
    for (size_t i = 0; i < map.count; i++) cr_expect_eq(map.baseline_line[i], expected[i], "line %zu", i);
    edit(doc, &map, offset_of_line(doc, 3), offset_of_line(doc, 4), ""); /* "b" removed */
    uint32_t *to = line_map_baseline_to_current(&map);
    cr_assert_not_null(to);
    cr_expect_eq(to[1], 3); /* a */
    cr_expect_eq(to[2], 0); /* b went */
    cr_expect_eq(to[3], 4); /* c */
    cr_expect_eq(to[4], 5); /* d */
    free(to);
    line_map_free(&map);
    document_free(doc);
}

Test(line_map, a_line_edited_in_place_loses_its_baseline_line) {
    Document *doc = document_new("a.py", LANGUAGE_PYTHON, "a\nb\nc\n", 6);
    LineMap map;
    cr_assert(line_map_start(&map, doc, SHA));
    edit(doc, &map, 3, 3, "!"); /* "b!" */
    cr_expect_eq(map.baseline_line[0], 1);
    cr_expect_eq(map.baseline_line[1], 0);
    cr_expect_eq(map.baseline_line[2], 3);
    /* a new line typed in the middle of a line: both halves are new */
    edit(doc, &map, 1, 1, "\n");
    cr_expect_eq(map.baseline_line[0], 0);
    cr_expect_eq(map.baseline_line[1], 0);
    cr_expect_eq(map.baseline_line[3], 3);
    cr_expect_not(line_map_is_identity(&map));
    line_map_free(&map);
    document_free(doc);
}

Test(line_map, an_edit_out_of_step_with_the_text_empties_the_map) {
    Document *doc = document_new("a.py", LANGUAGE_PYTHON, "a\nb\n", 4);
    Document *other = document_new("a.py", LANGUAGE_PYTHON, "a\n", 2);
    LineMap map;
    cr_assert(line_map_start(&map, doc, SHA));
    cr_expect(line_map_replace(&map, other, 0, 0, "x", 1));
    cr_expect_not(line_map_valid(&map), "a map of 3 lines kept for a text of 2");
    LineMap copy;
    line_map_copy(&copy, &map);
    cr_expect_not(line_map_valid(&copy));
    document_free(doc);
    document_free(other);
}

Test(profile_remap, sites_and_line_metrics_move_and_changed_lines_lose_their_figures) {
    Profile *p = profile_new();
    cr_assert_not_null(p);
    int f = profile_add_file(p, "train.py");
    p->files[f].sha256 = strdup(SHA);
    int at5 = profile_add_site(p, f, 5, "step");
    int at7 = profile_add_site(p, f, 7, "step");
    ProfLineMetrics m = {.kernel = "k", .file = f, .line = 7, .launches = 1, .global_sectors = 10};
    cr_assert_geq(profile_add_line_metrics(p, &m), 0);
    uint32_t to[9] = {0, 1, 2, 3, 4, 0, 8, 9, 10}; /* 5 changed, 7 moved to 9 */
    Profile *moved = profile_remap_lines(p, f, to, 8, "feed");
    cr_assert_not_null(moved);
    cr_expect_eq(moved->sites[at5].line, 0);
    cr_expect_eq(moved->sites[at7].line, 9);
    cr_expect_eq(moved->line_metrics[0].line, 9);
    cr_expect_str_eq(moved->files[f].sha256, "feed");
    /* the original is untouched */
    cr_expect_eq(p->sites[at5].line, 5);
    cr_expect_str_eq(p->files[f].sha256, SHA);
    cr_expect_null(profile_remap_lines(p, 3, to, 8, "feed"), "a file the profile does not have");
    profile_free(moved);
    profile_free(p);
}
