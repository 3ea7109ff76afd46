/* The profile reader (JSON, then the model's checker), both kinds, and the
 * view the engine builds over an accepted profile; and the memory part a
 * PyTorch process writes under --memory, added to a profile of one process
 * (pid 100), which must still pass the writer's checks. */
#include <stdlib.h>

#include "profiler/memory_part.h"
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
    Profile *p = profile_new();
    ProfProcess proc = {.pid = 100, .rank = -1, .local_rank = -1, .world_size = -1};
    if (p && profile_set_labels(p, "fuzz", "cupti", "advise fuzz") && profile_add_process(p, &proc) == 0) {
        char *error = NULL;
        if (profile_add_memory_part(p, (const char *)data, size, &error)) {
            char *text = profile_to_json(p, PROFILE_FINAL, NULL);
            if (!text) __builtin_trap(); /* an accepted part must make a profile the writer accepts */
            free(text);
        }
        free(error);
    }
    profile_free(p);
    return 0;
}
