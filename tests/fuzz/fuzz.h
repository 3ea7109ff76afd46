/* What every fuzz target shares (tests/fuzz/README.md). A target defines
 * LLVMFuzzerTestOneInput; built with clang's -fsanitize=fuzzer it is a
 * libFuzzer program (scripts/fuzz.sh), built with replay_main.c it replays
 * files (the ctest fuzz_replay_* tests: seeds and every crash found). */
#ifndef ADVISE_FUZZ_H
#define ADVISE_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/finding.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A NUL-terminated copy of the input (heap), as the entry points that take
 * C strings receive it. */
char *fuzz_string(const uint8_t *data, size_t size);

/* Aborts (a crash to libFuzzer) when a finding breaks what every client
 * relies on: a range inside the text, and fixes that each change something
 * inside it. A code action with no edit does nothing when chosen. */
void fuzz_check_findings(const FindingList *out, size_t text_length);

#endif
