/* Header instructions charged to the project line that inlined them
 * (profiler/sass_lines.c), and the names of what no project line takes. */
#include <criterion/criterion.h>
#include <string.h>

#include "profiler/sass_lines.h"
#include "rules/measure/line_metrics.h"

#define P SASS_PROJECT
#define H SASS_HEADER
#define U SASS_UNMAPPED

Test(sass_lines, a_header_instruction_goes_to_the_nearest_project_line_of_its_function) {
    /* given out of order: the charge follows offsets, not the records' order */
    SassRecord r[] = {
        {"k", 1, 0x40, H}, /* 0: between 0x30 (project) and 0x60 (project): 0x30 is nearer */
        {"k", 1, 0x30, P}, /* 1 */
        {"k", 1, 0x60, P}, /* 2 */
        {"k", 1, 0x58, H}, /* 3: 0x60 is nearer */
        {"k", 1, 0x10, H}, /* 4: before every project instruction: the first after it */
        {"k", 1, 0x48, H}, /* 5: 0x30 and 0x60 both 0x18 away: the preceding one */
        {"k", 1, 0x70, U}, /* 6: no line at all: stays */
    };
    long to[7];
    cr_assert(sass_charge_inlined(r, 7, to));
    cr_expect_eq(to[0], 1);
    cr_expect_eq(to[1], SASS_KEEP);
    cr_expect_eq(to[2], SASS_KEEP);
    cr_expect_eq(to[3], 2);
    cr_expect_eq(to[4], 1);
    cr_expect_eq(to[5], 1);
    cr_expect_eq(to[6], SASS_KEEP);
}

Test(sass_lines, never_across_functions_or_modules) {
    SassRecord r[] = {
        {"a", 1, 0x10, P}, /* 0 */
        {"b", 1, 0x14, H}, /* 1: b has no project line: none, though a's is 4 bytes away */
        {"a", 2, 0x18, H}, /* 2: a in another cubin: none either */
        {"a", 1, 0x100, H}, /* 3: a's own */
    };
    long to[4];
    cr_assert(sass_charge_inlined(r, 4, to));
    cr_expect_eq(to[0], SASS_KEEP);
    cr_expect_eq(to[1], SASS_NO_PROJECT);
    cr_expect_eq(to[2], SASS_NO_PROJECT);
    cr_expect_eq(to[3], 0);
    cr_assert(sass_charge_inlined(r, 0, to), "nothing to charge");
}

Test(sass_lines, what_no_project_line_takes_is_named_by_its_origin) {
    char buf[64];
    cr_expect_str_eq(sass_outside_path("/usr/local/cuda-13.0/targets/x86_64-linux/include/cuda_bf16.hpp", buf,
                                       sizeof buf),
                     "<cuda-headers>/cuda_bf16.hpp");
    cr_expect_str_eq(sass_outside_path("/opt/cutlass/include/cutlass/gemm.h", buf, sizeof buf),
                     "<outside-project>/gemm.h");
    cr_expect_str_eq(sass_outside_path("/usr/local/cuda/include/crt/sm_90_rt.hpp", buf, sizeof buf),
                     "<cuda-headers>/sm_90_rt.hpp");
    char small[24];
    cr_expect_str_eq(sass_outside_path("/usr/local/cuda/include/a_very_long_header_name.hpp", small, sizeof small),
                     "<cuda-headers>/header");
}

/* the hover's words for a line's metrics say what was inlined into it */
Test(sass_lines, the_hover_counts_what_was_inlined) {
    ProfLineMetrics bf16 = {.kernel = "void gather(__nv_bfloat16 const*, float*, int)", .line = 12, .launches = 1,
                            .instructions = 4096, .global_sectors = 3072, .global_sectors_ideal = 1024,
                            .inlined_instructions = 1024};
    char words[512];
    lm_entry_words(&bf16, words, sizeof words);
    cr_expect(strstr(words, "4,096 instructions; 1,024 of them inlined from headers (conversions, intrinsics)"),
              "%s", words);
    bf16.inlined_instructions = 0;
    lm_entry_words(&bf16, words, sizeof words);
    cr_expect_null(strstr(words, "inlined"), "%s", words);
}
