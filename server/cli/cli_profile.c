/* `advise profile`: the profiler's face in the full advise binary, which
 * also reads `[profile] dir` from advise.toml. */
#include <stdio.h>
#include <stdlib.h>

#include "server/cli/cli.h"
#include "rules/engine/config.h"
#include "profiler/driver/profile_run.h"
#include "profiler/profile_store.h"

int cli_profile(int argc, char **argv) {
    ProfileRun run;
    const char *dir_option;
    int parsed = profile_run_parse(argc, argv, &run, &dir_option);
    if (parsed != 0) return parsed < 0 ? EXIT_CLEAN : EXIT_TROUBLE;

    char *root = profile_store_root();
    if (!root) {
        fprintf(stderr, "advise: cannot find the current directory\n");
        return EXIT_TROUBLE;
    }
    Config cfg;
    config_init(&cfg);
    char *config_path = config_find(root);
    if (config_path) {
        char *error = NULL;
        if (!config_load_file(&cfg, config_path, &error)) {
            fprintf(stderr, "advise: %s\n", error);
            free(error);
            free(config_path);
            config_free(&cfg);
            free(root);
            return EXIT_TROUBLE;
        }
        free(config_path);
    }
    char *dir = profile_store_dir(root, dir_option ? dir_option : cfg.profile_dir);
    run.root = root;
    run.profile_dir = dir;
    int status = dir ? profile_run(&run) : EXIT_TROUBLE;
    free(dir);
    config_free(&cfg);
    free(root);
    return status;
}
