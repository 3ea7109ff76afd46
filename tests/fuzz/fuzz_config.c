/* advise.toml. */
#include <stdlib.h>

#include "rules/engine/config.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Config cfg;
    config_init(&cfg);
    char *error = NULL;
    (void)config_load_text(&cfg, (const char *)data, size, "advise.toml", &error);
    free(error);
    config_free(&cfg);
    return 0;
}
