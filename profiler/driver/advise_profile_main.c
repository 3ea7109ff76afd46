/* advise-profile: `advise profile` alone, without the analysis engine (no
 * libclang, no tree-sitter), for GPU machines that have only the CUDA
 * driver. It reads no advise.toml: give -o or --profile-dir where the
 * default .advise/profiles/ under the project root does not suit. */
#include <stdio.h>
#include <stdlib.h>

#include "profiler/driver/profile_run.h"
#include "profiler/profile_store.h"

int main(int argc, char **argv) {
    ProfileRun run;
    const char *dir_option;
    int parsed = profile_run_parse(argc, argv, &run, &dir_option);
    if (parsed != 0) return parsed < 0 ? 0 : 2;
    char *root = profile_store_root();
    if (!root) {
        fprintf(stderr, "advise: cannot find the current directory\n");
        return 2;
    }
    char *dir = profile_store_dir(root, dir_option);
    run.root = root;
    run.profile_dir = dir;
    int status = dir ? profile_run(&run) : 2;
    free(dir);
    free(root);
    return status;
}
