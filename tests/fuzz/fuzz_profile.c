/* The profile reader (JSON, then the model's checker), both kinds, and the
 * view the engine builds over an accepted profile. */
#include <stdlib.h>

#include "profiler/profile_json.h"
#include "profiler/profile_view.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (int kind = 0; kind < 2; kind++) {
        char *error = NULL;
        Profile *p = profile_from_json((const char *)data, size, kind ? PROFILE_PART : PROFILE_FINAL, &error);
        free(error);
        if (!p) continue;
        ProfileView *v = profile_view_new(p, "fuzz.json"); /* takes p */
        if (v) {
            (void)profile_view_run_ns(v);
            (void)profile_view_recoverable_idle_ns(v);
            const ProfileLineCost *lines;
            for (size_t f = 0; f < profile_view_profile(v)->file_count; f++) (void)profile_view_lines(v, (int)f, &lines);
        }
        profile_view_free(v);
    }
    return 0;
}
