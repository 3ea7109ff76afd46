/* advise import: a torch.profiler (Chrome) trace into a profile. */
#include <stdlib.h>

#include "profiler/import/torch_import.h"
#include "profiler/profile.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *error = NULL;
    /* a root that exists (the traces' own project), or every import stops at it */
    Profile *p = torch_import((const char *)data, size, ADVISE_SOURCE_DIR "/tests/fixtures/traces/project",
                              "fuzz.trace.json", &error);
    free(error);
    profile_free(p);
    return 0;
}
