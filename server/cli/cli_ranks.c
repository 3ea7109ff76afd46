/* `advise ranks PROFILE`: the per-rank view of a multi-process profile
 * (profiler/rank_table.h: compute, communication, exposed communication,
 * idle and wall time per process, and the straggler the others wait for), as
 * text or JSON. */
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/rank_table.h"
#include "server/cli/cli.h"
#include "server/cli/cli_profile_io.h"
#include "server/render/rank_text.h"

static void ranks_usage(FILE *out) {
    fputs("usage: advise ranks [options] PROFILE.json\n"
          "\n"
          "One row per process of a (multi-GPU) profile: GPU compute time, NCCL communication time, the\n"
          "communication that no compute overlapped, idle GPU time and wall time; then the load imbalance\n"
          "and the rank the others wait for in collectives (the one with the least NCCL kernel time).\n"
          "\n"
          "options:\n"
          "  --format text|json   output format (default text)\n"
          "\n"
          "exit status: 0 shown, 2 usage error or a profile that cannot be read\n",
          out);
}

static bool write_json(FILE *out, const char *path, const RankTable *t) {
    json_t *rows = json_array();
    for (size_t i = 0; i < t->row_count; i++) {
        const RankRow *r = &t->rows[i];
        json_t *o = json_object();
        json_object_set_new(o, "rank", r->rank >= 0 ? json_integer(r->rank) : json_null());
        json_object_set_new(o, "pid", json_integer(r->pid));
        json_object_set_new(o, "process", json_integer(r->process));
        json_object_set_new(o, "devices", cli_json_u64(r->devices));
        json_object_set_new(o, "compute_ns", cli_json_u64(r->compute_ns));
        json_object_set_new(o, "comm_ns", cli_json_u64(r->comm_ns));
        json_object_set_new(o, "exposed_comm_ns", cli_json_u64(r->exposed_comm_ns));
        json_object_set_new(o, "busy_ns", cli_json_u64(r->busy_ns));
        json_object_set_new(o, "idle_ns", cli_json_u64(r->idle_ns));
        json_object_set_new(o, "wall_ns", cli_json_u64(r->wall_ns));
        json_object_set_new(o, "nccl_kernel_ns", cli_json_u64(r->nccl_kernel_ns));
        json_object_set_new(o, "nccl_launches", cli_json_u64(r->nccl_launches));
        json_object_set_new(o, "wait_ns", cli_json_u64(r->wait_ns));
        json_array_append_new(rows, o);
    }
    json_t *straggler = t->has_straggler
                            ? json_pack("{s:i,s:I,s:o}", "waits_for_rank", t->waits_for_rank, "pid",
                                        (json_int_t)t->waits_for_pid, "mean_wait_per_call_ns",
                                        cli_json_u64(t->mean_wait_per_call_ns))
                            : json_null();
    json_t *doc = json_pack("{s:i,s:s,s:o,s:I,s:o,s:o}", "version", 1, "profile", path, "rows", rows, "ranked",
                            (json_int_t)t->ranked, "load_imbalance",
                            t->load_imbalance < 0 ? json_null() : json_real(t->load_imbalance), "straggler", straggler);
    return cli_write_json(out, doc);
}

static void write_text(FILE *out, const char *path, const Profile *p, const RankTable *t) {
    fprintf(out, "profile  %s (\"%s\", recorded %s)\n", path, p->name, p->created);
    fprintf(out, "%zu process%s, %zu with a rank and GPU activity; GPU times summed over each process's devices\n",
            t->row_count, t->row_count == 1 ? "" : "es", t->ranked);
    rank_text_write(out, t);
}

enum { OPT_FORMAT = 256, OPT_HELP };

static const struct option long_options[] = {
    {"format", required_argument, 0, OPT_FORMAT},
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

int cli_ranks(int argc, char **argv) {
    bool json = false;
    optind = 1;
    opterr = 0;
    int c;
    for (int token = optind; (c = getopt_long(argc, argv, "h", long_options, NULL)) != -1; token = optind) {
        switch (c) {
        case OPT_FORMAT:
            if (cli_format_option("ranks", optarg, &json) != EXIT_CLEAN) return EXIT_TROUBLE;
            break;
        case OPT_HELP:
        case 'h': ranks_usage(stdout); return EXIT_CLEAN;
        default: return cli_option_error("ranks", argv, token);
        }
    }
    if (argc - optind != 1) return cli_usage_error("ranks", "wants one profile (%d given)", argc - optind);
    const char *path = argv[optind];
    Profile *p = cli_read_profile("ranks", path);
    if (!p) return EXIT_TROUBLE;
    RankTable t;
    int status = EXIT_CLEAN;
    if (!rank_table_build(p, &t)) {
        fputs("advise ranks: out of memory\n", stderr);
        status = EXIT_TROUBLE;
    } else {
        bool ok = true;
        if (json) ok = write_json(stdout, path, &t);
        else write_text(stdout, path, p, &t);
        if (fflush(stdout) != 0 || ferror(stdout)) ok = false;
        if (!ok) {
            fputs("advise ranks: could not write the output\n", stderr);
            status = EXIT_TROUBLE;
        }
        rank_table_free(&t);
    }
    profile_free(p);
    return status;
}
