/* What every fuzz target shares (tests/fuzz/README.md). A target defines
 * LLVMFuzzerTestOneInput; built with clang's -fsanitize=fuzzer it is a
 * libFuzzer program (scripts/fuzz.sh), built with replay_main.c it replays
 * files (the ctest fuzz_replay_* tests: seeds and every crash found). */
#ifndef ADVISE_FUZZ_H
#define ADVISE_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A NUL-terminated copy of the input (heap), as the entry points that take
 * C strings receive it. */
char *fuzz_string(const uint8_t *data, size_t size);

#endif
