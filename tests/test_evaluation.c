/* The GPU evaluation's here-side steps without a GPU: tests/gpu/test_evaluate_table.py
 * runs scripts/prepare-evaluation.sh on the training sample and
 * tests/gpu/evaluate_table.py on a synthetic run made from its recorded
 * profile, and checks every figure the tables print (speedups, savings,
 * estimates from the run's own profiles, errors, the noise floor). */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/cli_harness.h"

Test(evaluation, the_tables_print_the_figures_of_a_synthetic_run) {
    RunResult r = harness_run_shell("cd '" ADVISE_SOURCE_DIR "' && python3 tests/gpu/test_evaluate_table.py '" ADVISE_BINARY "'");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "all figures as expected"), "%s%s", r.out, r.err);
    run_result_free(&r);
}
