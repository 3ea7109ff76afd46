/* The profile model and its JSON format: SHA-256 against the FIPS 180-4 /
 * NIST example vectors, the enum names and the path rule, the adding
 * helpers' deduplication, merging parts, hashing source files, the writer
 * (deterministic, atomic, refusing broken profiles) and the reader (every
 * rule, with the JSON path in each message; files that are not regular or
 * too big; thousands of mutated files that must give a Profile or a message,
 * never a crash). The committed fixtures in tests/fixtures/profiles/ are
 * checked here to be exactly what the writer produces (regenerate them with
 * ADVISE_UPDATE_FIXTURES=1) and against the JSON Schema by
 * tests/profile_schema_check.mjs. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profiler/profile.h"
#include "profiler/profile_check.h"
#include "profiler/profile_json.h"
#include "profiler/sha256.h"

/* ---- helpers ------------------------------------------------------------------------- */

static char *temp_dir(void) {
    char *dir = strdup("/tmp/advise-profile-XXXXXX");
    cr_assert(mkdtemp(dir) != NULL, "mkdtemp failed");
    return dir;
}

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = malloc(n);
    snprintf(path, n, "%s/%s", dir, name);
    return path;
}

static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char *path = join(dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(path);
        else unlink(path);
        free(path);
    }
    closedir(d);
    rmdir(dir);
}

static char *read_all(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t capacity = 4096, n = 0;
    char *data = malloc(capacity + 1);
    for (size_t got; (got = fread(data + n, 1, capacity - n, f)) > 0;) {
        n += got;
        if (n == capacity) data = realloc(data, (capacity *= 2) + 1);
    }
    fclose(f);
    data[n] = '\0';
    if (length) *length = n;
    return data;
}

static void write_all(const char *path, const char *data, size_t length) {
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot write %s", path);
    cr_assert(fwrite(data, 1, length, f) == length);
    fclose(f);
}

#define PUSH(array, count, value)                                                         \
    do {                                                                                  \
        (array) = realloc((array), ((count) + 1) * sizeof *(array));                      \
        cr_assert((array) != NULL);                                                       \
        (array)[(count)++] = (value);                                                     \
    } while (0)

static ProfStats stats(uint64_t count, uint64_t total, uint64_t min, uint64_t median, uint64_t max) {
    return (ProfStats){count, total, min, median, max};
}

static ProfDevice h200(int process, uint32_t id) {
    return (ProfDevice){.process = process, .id = id, .name = strdup("NVIDIA H200"), .sm_count = 132,
                        .cc_major = 9, .cc_minor = 0, .memory_bytes = 150754820096u,
                        .bandwidth_bytes_per_s = 4800000000000u, .max_warps_per_sm = 64, .max_blocks_per_sm = 32,
                        .max_registers_per_sm = 65536, .max_shared_per_sm = 233472,
                        .max_registers_per_block = 65536, .max_shared_per_block = 232448,
                        .max_threads_per_block = 1024, .l2_bytes = 52428800};
}

static void set_header(Profile *p, const char *name, const char *source) {
    p->name = strdup(name);
    p->source = strdup(source);
    p->created = strdup("2026-11-30T15:01:02Z");
    p->tool = strdup("advise 0.1.0");
}

static void set_command(Profile *p, const char *const *argv) {
    for (; *argv; argv++) PUSH(p->command, p->command_count, strdup(*argv));
}

/* A final profile of a two-process distributed run with one entry of every
 * kind and both the null and the non-null form of every nullable field. */
static Profile *sample_final(void) {
    Profile *p = profile_new();
    set_header(p, "train-step", "cupti");
    set_command(p, (const char *[]){"torchrun", "--nproc-per-node=2", "train.py", "--epochs", "1", NULL});
    p->dropped_ops = 3;
    p->dropped_sites = 1;
    cr_assert(profile_add_process(p, &(ProfProcess){4242, 0, 0, 2, 5000000000u, NULL,
                                                    {8, 60000, 15000, 195000000, 45000, 324000000, 36000000},
                                                    {.count = 100, .median_ns = 16000000, .first_ns = 900000000,
                                                     .warmup_steps = 2, .warmup_ns = 60000000, .steady_steps = 94,
                                                     .steady_ns = 1504000000, .slow_steps = 3, .slow_ns = 450000000,
                                                     .after_ns = 20000000, .phase_idle_known = true,
                                                     .idle_ns = {0, 400000000, 30000000, 520000000, 300000000, 0},
                                                     .activities = {0, 2100, 420, 39480, 1260, 40}},
                                                    true, 812000000}) == 0);
    cr_assert(profile_add_process(p, &(ProfProcess){4243, 1, 1, 2, 5100000000u, "CUPTI buffer full: records lost", {0}, {0}, false, 0}) == 1);
    PUSH(p->devices, p->device_count, h200(0, 0));
    PUSH(p->devices, p->device_count, h200(1, 1));
    cr_assert(profile_add_file(p, "train.py") == 0);
    cr_assert(profile_add_file(p, "model/layers.py") == 1);
    p->files[0].sha256 = strdup("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
    cr_assert(profile_add_site(p, 0, 12, "main") == 0);
    cr_assert(profile_add_site(p, 1, 40, "forward") == 1);
    cr_assert(profile_add_site(p, 0, 30, NULL) == 2);
    cr_assert(profile_add_function_site(p, 1, 38, "Linear.forward") == 3);
    PUSH(p->kernels, p->kernel_count,
         ((ProfKernel){0, 0, strdup("void gemm<float, 128>(float const*, float*, int)"), {128, 2, 1}, {256, 1, 1}, 64,
                       1024, 49152, 0, stats(10, 5000, 400, 500, 600), {true, 3000}}));
    PUSH(p->kernels, p->kernel_count,
         ((ProfKernel){1, 1, strdup("elementwise_add \"quoted\" \xc3\xa9"), {4096, 1, 1}, {128, 1, 1}, 16, 0, 0, 8,
                       stats(3, 90, 30, 30, 30)}));
    PUSH(p->kernels, p->kernel_count,
         ((ProfKernel){0, -1, strdup("unknown_device_kernel"), {1, 1, 1}, {32, 1, 1}, 8, 0, 0, 0, stats(1, 7, 7, 7, 7)}));
    PUSH(p->ops, p->op_count, ((ProfOp){.kind = PROF_OP_LAUNCH, .process = 0, .site = 1, .kernel = 0,
                                        .stats = stats(10, 5000, 400, 500, 600), .critical = {true, 3000},
                                        .steady = {.known = true, .idle_known = true, .count = 9, .idle_ns = 1200}}));
    PUSH(p->ops, p->op_count, ((ProfOp){.kind = PROF_OP_MEMCPY, .process = 0, .site = 0, .kernel = -1,
                                        .copy = PROF_COPY_HTOD, .src = PROF_MEM_PAGEABLE, .dst = PROF_MEM_DEVICE,
                                        .bytes = 4194304, .stats = stats(2, 4000, 1900, 2000, 2100)}));
    PUSH(p->ops, p->op_count, ((ProfOp){.kind = PROF_OP_MEMSET, .process = 0, .site = -1, .kernel = -1,
                                        .dst = PROF_MEM_DEVICE, .bytes = 1024, .stats = stats(1, 3, 3, 3, 3)}));
    PUSH(p->ops, p->op_count, ((ProfOp){.kind = PROF_OP_SYNC, .process = 0, .site = 2, .kernel = -1,
                                        .sync = PROF_SYNC_STREAM, .stats = stats(4, 800, 100, 200, 300)}));
    PUSH(p->ops, p->op_count, ((ProfOp){.kind = PROF_OP_ALLOC, .process = 1, .site = 0, .kernel = -1,
                                        .dst = PROF_MEM_PINNED, .bytes = 1u << 20, .stats = stats(1, 50, 50, 50, 50)}));
    PUSH(p->ops, p->op_count, ((ProfOp){.kind = PROF_OP_LAUNCH, .process = 1, .site = 3, .kernel = 1,
                                        .stats = stats(3, 90, 30, 30, 30)}));
    PUSH(p->ops, p->op_count, ((ProfOp){.kind = PROF_OP_MEMCPY, .process = 1, .site = 0, .kernel = -1,
                                        .copy = PROF_COPY_UNKNOWN, .src = PROF_MEM_UNKNOWN, .dst = PROF_MEM_MANAGED,
                                        .bytes = 0, .stats = stats(0, 0, 0, 0, 0)}));
    PUSH(p->apis, p->api_count, ((ProfApi){0, strdup("cudaLaunchKernel"), stats(10, 100, 5, 9, 30)}));
    PUSH(p->apis, p->api_count, ((ProfApi){1, strdup("cudaMemcpyAsync"), stats(2, 4100, 2000, 2050, 2100)}));
    PUSH(p->overheads, p->overhead_count, ((ProfOverhead){0, strdup("lazy_module_loading"), stats(1, 47000000, 47000000, 47000000, 47000000)}));
    PUSH(p->timelines, p->timeline_count, ((ProfTimeline){0, 0, 1000000, 600000, 400000, 500000, 200000, 100000}));
    PUSH(p->timelines, p->timeline_count, ((ProfTimeline){1, 1, 2000, 2000, 0, 2000, 0, 0}));
    PUSH(p->gaps, p->gap_count, ((ProfGap){0, 0, 1000, 50000, 1, 2, 8, PROF_PHASE_SLOW}));
    PUSH(p->gaps, p->gap_count, ((ProfGap){1, 1, 0, 10, -1, 3, 1, PROF_PHASE_UNKNOWN}));
    /* a Triton-style kernel whose lines are in a Python file: the store line
     * uncoalesced and bank-conflicted, the next one spilling */
    ProfLineMetrics store = {.kernel = "void gemm<float, 128>(float const*, float*, int)", .file = 1, .line = 52,
                             .launches = 2, .instructions = 1048576, .global_sectors = 18874368,
                             .global_sectors_ideal = 4194304, .shared_wavefronts = 1048576,
                             .shared_wavefronts_ideal = 32768, .local_sectors = 0};
    cr_assert(profile_add_line_metrics(p, &store) == 0);
    ProfLineMetrics spill = {.kernel = "void gemm<float, 128>(float const*, float*, int)", .file = 1, .line = 53,
                             .launches = 2, .instructions = 4096, .local_sectors = 8192,
                             .inlined_instructions = 1024}; /* a bf16 conversion inlined from cuda_bf16.hpp */
    cr_assert(profile_add_line_metrics(p, &spill) == 1);
    /* --memory: one process's device, with an OOM at train.py:30 */
    ProfMemSample *samples = malloc(3 * sizeof *samples);
    cr_assert_not_null(samples);
    samples[0] = (ProfMemSample){0, 0, 0};
    samples[1] = (ProfMemSample){1000, 6u << 20, 8u << 20};
    samples[2] = (ProfMemSample){2000, 5u << 20, 8u << 20};
    PUSH(p->memories, p->memory_count,
         ((ProfMemory){.process = 0, .device = 0, .events = 120, .window_complete = true, .max_allocated = 6u << 20,
                       .max_reserved = 8u << 20, .peak_time_ns = 1000, .peak_allocated = 6u << 20,
                       .peak_reserved = 8u << 20, .steps = 10, .steps_in_window = 10, .bytes_per_step = -4096,
                       .oom = true, .oom_time_ns = 2000, .oom_bytes = 1u << 30, .oom_device_free = 1u << 20,
                       .oom_allocated = 5u << 20, .oom_site = 2, .samples = samples, .sample_count = 3}));
    PUSH(p->memory_lines, p->memory_line_count,
         ((ProfMemLine){0, PROF_MEM_LINE_PEAK, 1, 4u << 20, 0, .freed_bytes = 3u << 20, .freed_site = 2}));
    PUSH(p->memory_lines, p->memory_line_count, ((ProfMemLine){0, PROF_MEM_LINE_PEAK, -1, 2u << 20, 0}));
    PUSH(p->memory_lines, p->memory_line_count, ((ProfMemLine){0, PROF_MEM_LINE_GROWTH, 1, 65536, 8}));
    PUSH(p->memory_lines, p->memory_line_count, ((ProfMemLine){0, PROF_MEM_LINE_ALLOCS, 1, 40u << 20, 300}));
    PUSH(p->memory_lines, p->memory_line_count, ((ProfMemLine){0, PROF_MEM_LINE_OOM, 1, 4u << 20, 0}));
    PUSH(p->memory_lines, p->memory_line_count, ((ProfMemLine){0, PROF_MEM_LINE_KEPT, 2, 3u << 20, 2}));
    return p;
}

/* The smallest final profile: one process that never used CUDA. */
static Profile *sample_minimal(void) {
    Profile *p = profile_new();
    set_header(p, "empty", "cupti");
    set_command(p, (const char *[]){"python", "noop.py", NULL});
    cr_assert(profile_add_process(p, &(ProfProcess){1, -1, -1, -1, 20000000, "CUDA was never initialised", {0}, {0}, false, 0}) == 0);
    return p;
}

/* An imported torch.profiler trace: function-level sites, no command, no hashes. */
static Profile *sample_import(void) {
    Profile *p = profile_new();
    set_header(p, "imported trace", "torch-profiler");
    cr_assert(profile_add_process(p, &(ProfProcess){777, -1, -1, -1, 1500000, NULL, {0}, {0}, false, 0}) == 0);
    PUSH(p->devices, p->device_count, h200(0, 0));
    cr_assert(profile_add_file(p, "src/pkg/model.py") == 0);
    cr_assert(profile_add_function_site(p, 0, 10, "Net.forward") == 0);
    cr_assert(profile_add_site(p, 0, 10, "Net.forward") == 1); /* a line-level site is a different site */
    PUSH(p->kernels, p->kernel_count,
         ((ProfKernel){0, 0, strdup("ampere_sgemm_128x64_tn"), {64, 8, 1}, {128, 1, 1}, 122, 0, 32768, 0,
                       stats(100, 100000, 900, 1000, 1500)}));
    PUSH(p->ops, p->op_count, ((ProfOp){.kind = PROF_OP_LAUNCH, .process = 0, .site = 0, .kernel = 0,
                                        .stats = stats(100, 100000, 900, 1000, 1500)}));
    PUSH(p->ops, p->op_count, ((ProfOp){.kind = PROF_OP_SYNC, .process = 0, .site = 1, .kernel = -1,
                                        .sync = PROF_SYNC_CONTEXT, .stats = stats(1, 5, 5, 5, 5)}));
    PUSH(p->timelines, p->timeline_count, ((ProfTimeline){0, 0, 150000, 100000, 50000, 100000, 0, 0}));
    return p;
}

/* What one profiled process writes: native sites not yet resolved to lines. */
static Profile *sample_part(void) {
    Profile *p = profile_new();
    set_header(p, "part", "cupti");
    set_command(p, (const char *[]){"./app", NULL});
    cr_assert(profile_add_process(p, &(ProfProcess){99, -1, -1, -1, 1000, NULL, {0}, {0}, false, 0}) == 0);
    PUSH(p->devices, p->device_count, h200(0, 0));
    ProfFrame frames[2] = {{"/work/app/build/app", 0x401a2c}, {"/work/app/build/libnet.so", 0x1f00}};
    cr_assert(profile_add_native_site(p, frames, 2) == 0);
    cr_assert(profile_add_file(p, "app.py") == 0);
    cr_assert(profile_add_site(p, 0, 3, "main") == 1);
    PUSH(p->kernels, p->kernel_count,
         ((ProfKernel){0, 0, strdup("k"), {1, 1, 1}, {1, 1, 1}, 0, 0, 0, 0, stats(1, 1, 1, 1, 1)}));
    PUSH(p->ops, p->op_count, ((ProfOp){.kind = PROF_OP_LAUNCH, .process = 0, .site = 0, .kernel = 0,
                                        .stats = stats(1, 1, 1, 1, 1)}));
    ProfLineMetrics line = {.kernel = "k", .file = 0, .line = 3, .launches = 1, .instructions = 64,
                            .global_sectors = 8, .global_sectors_ideal = 8};
    cr_assert(profile_add_line_metrics(p, &line) == 0);
    return p;
}

static char *to_json(const Profile *p, ProfileKind kind) {
    char *error = NULL;
    char *text = profile_to_json(p, kind, &error);
    cr_assert_not_null(text, "the writer refused: %s", error ? error : "(no message)");
    cr_assert_null(error);
    return text;
}

static Profile *from_json(const char *text, ProfileKind kind) {
    char *error = NULL;
    Profile *p = profile_from_json(text, strlen(text), kind, &error);
    cr_assert_not_null(p, "the reader refused: %s\n---\n%s", error ? error : "(no message)", text);
    cr_assert_null(error);
    return p;
}

/* the reader refuses text with a message that holds needle */
static void refused(const char *text, size_t length, ProfileKind kind, const char *needle) {
    char *error = NULL;
    Profile *p = profile_from_json(text, length, kind, &error);
    cr_expect_null(p, "accepted, expected \"%s\":\n%.*s", needle, (int)(length > 2000 ? 2000 : length), text);
    profile_free(p);
    cr_assert_not_null(error, "no message, expected \"%s\"", needle);
    cr_expect(strstr(error, needle) != NULL, "message \"%s\" lacks \"%s\"", error, needle);
    free(error);
}

/* the writer refuses p with a message that holds needle */
static void write_refused(const Profile *p, ProfileKind kind, const char *needle) {
    char *error = NULL;
    char *text = profile_to_json(p, kind, &error);
    cr_expect_null(text, "written, expected \"%s\"", needle);
    free(text);
    cr_assert_not_null(error, "no message, expected \"%s\"", needle);
    cr_expect(strstr(error, needle) != NULL, "message \"%s\" lacks \"%s\"", error, needle);
    free(error);
}

/* ---- SHA-256 ---------------------------------------------------------------------------- */

static void expect_sha256(const void *data, size_t length, const char *expected) {
    Sha256 s;
    uint8_t digest[SHA256_DIGEST_BYTES];
    char hex[SHA256_HEX_CHARS + 1];
    sha256_init(&s);
    sha256_update(&s, data, length);
    sha256_final(&s, digest);
    sha256_hex(digest, hex);
    cr_expect_str_eq(hex, expected, "sha256 of %zu bytes", length);
    /* fed one byte, then in uneven pieces: the same digest */
    const uint8_t *bytes = data;
    sha256_init(&s);
    for (size_t i = 0, step = 1; i < length; i += step, step = step % 13 + 1)
        sha256_update(&s, bytes + i, i + step > length ? length - i : step);
    sha256_final(&s, digest);
    sha256_hex(digest, hex);
    cr_expect_str_eq(hex, expected, "sha256 of %zu bytes fed in pieces", length);
}

Test(sha256, nist_example_vectors) {
    expect_sha256("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect_sha256("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    expect_sha256(m448, strlen(m448), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                       "mnopqrstnopqrstu";
    expect_sha256(m896, strlen(m896), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    char *million = malloc(1000000);
    memset(million, 'a', 1000000);
    expect_sha256(million, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(million);
}

/* lengths around the padding boundaries (one or two final blocks) */
Test(sha256, block_boundaries) {
    static const struct {
        size_t length;
        const char *hex;
    } cases[] = {
        {55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
        {56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
        {63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
        {64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
        {65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"},
        {119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
        {120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"},
        {1000, "1e9bc38cbf860b9ec31918b065f9b52476c549a782e0e7990bed8ce3868d2371"},
    };
    uint8_t data[1000];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7 + 3);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) expect_sha256(data, cases[c].length, cases[c].hex);
}

/* ---- names and paths ---------------------------------------------------------------------- */

Test(profile_model, enum_names_round_trip) {
    const char *ops[] = {"launch", "memcpy", "memset", "sync", "alloc"};
    for (int k = 0; k < PROF_OP_KIND_COUNT; k++) {
        cr_expect_str_eq(prof_op_kind_name((ProfOpKind)k), ops[k]);
        cr_expect_eq(prof_op_kind_from_name(ops[k]), k);
    }
    const char *copies[] = {"unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
    for (int k = 0; k < PROF_COPY_KIND_COUNT; k++) {
        cr_expect_str_eq(prof_copy_kind_name((ProfCopyKind)k), copies[k]);
        cr_expect_eq(prof_copy_kind_from_name(copies[k]), k);
    }
    const char *mems[] = {"unknown", "pageable", "pinned", "device", "managed"};
    for (int k = 0; k < PROF_MEM_KIND_COUNT; k++) {
        cr_expect_str_eq(prof_mem_kind_name((ProfMemKind)k), mems[k]);
        cr_expect_eq(prof_mem_kind_from_name(mems[k]), k);
    }
    const char *syncs[] = {"unknown", "event", "stream_wait_event", "stream", "context"};
    for (int k = 0; k < PROF_SYNC_KIND_COUNT; k++) {
        cr_expect_str_eq(prof_sync_kind_name((ProfSyncKind)k), syncs[k]);
        cr_expect_eq(prof_sync_kind_from_name(syncs[k]), k);
    }
    cr_expect_eq(prof_op_kind_from_name("Launch"), -1, "names are case-sensitive");
    cr_expect_eq(prof_copy_kind_from_name("htod"), -1);
    cr_expect_eq(prof_mem_kind_from_name(""), -1);
    cr_expect_eq(prof_sync_kind_from_name(NULL), -1);
    cr_expect_null(prof_op_kind_name(PROF_OP_KIND_COUNT));
    cr_expect_null(prof_copy_kind_name((ProfCopyKind)-1));
    cr_expect_null(prof_mem_kind_name(PROF_MEM_KIND_COUNT));
    cr_expect_null(prof_sync_kind_name(PROF_SYNC_KIND_COUNT));
}

Test(profile_model, path_rule) {
    const char *good[] = {"train.py", "src/pkg/model.py", ".hidden/x.py", "a/.../b", "name with spaces.py",
                          "caf\xc3\xa9.py", "a..b/c", "..a", "a/b./c"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        cr_expect(profile_path_ok(good[i]), "refused \"%s\"", good[i]);
    const char *bad[] = {NULL, "", "/abs/path.py", "../up.py", "a/../b.py", "a/..", "..", ".", "./a.py", "a/./b",
                         "a//b", "a/", "a\\b.py", "C:\\x.py", "tab\there", "new\nline", "del\x7f", "esc\x1b"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_expect(!profile_path_ok(bad[i]), "accepted \"%s\"", bad[i] ? bad[i] : "(null)");
    char *longest = malloc(PROFILE_MAX_STRING + 2);
    memset(longest, 'a', PROFILE_MAX_STRING);
    longest[PROFILE_MAX_STRING] = '\0';
    cr_expect(profile_path_ok(longest));
    longest[PROFILE_MAX_STRING] = 'a';
    longest[PROFILE_MAX_STRING + 1] = '\0';
    cr_expect(!profile_path_ok(longest), "a path over the string cap");
    free(longest);
}

/* ---- the adding helpers ------------------------------------------------------------------- */

Test(profile_model, files_and_sites_are_deduplicated) {
    Profile *p = profile_new();
    char path[] = "train.py";
    cr_expect_eq(profile_add_file(p, path), 0);
    path[0] = 'T'; /* the profile holds a copy */
    cr_expect_eq(profile_add_file(p, "train.py"), 0);
    cr_expect_eq(profile_add_file(p, "Train.py"), 1);
    cr_expect_eq(p->file_count, 2);
    cr_expect_str_eq(p->files[0].path, "train.py");
    cr_expect_null(p->files[0].sha256);

    cr_expect_eq(profile_add_site(p, 0, 3, "f"), 0);
    cr_expect_eq(profile_add_site(p, 0, 3, "f"), 0);
    cr_expect_eq(profile_add_site(p, 0, 3, NULL), 1, "no function differs from a function");
    cr_expect_eq(profile_add_site(p, 0, 3, ""), 2);
    cr_expect_eq(profile_add_site(p, 0, 4, "f"), 3);
    cr_expect_eq(profile_add_site(p, 1, 3, "f"), 4);
    cr_expect_eq(profile_add_function_site(p, 0, 3, "f"), 5, "function-level apart from line-level");
    cr_expect_eq(profile_add_function_site(p, 0, 3, "f"), 5);
    cr_expect(p->sites[5].function_level && !p->sites[0].function_level);

    ProfFrame a[2] = {{"/bin/app", 10}, {"/lib/x.so", 20}};
    ProfFrame b[2] = {{"/bin/app", 10}, {"/lib/x.so", 21}};
    cr_expect_eq(profile_add_native_site(p, a, 2), 6);
    cr_expect_eq(profile_add_native_site(p, a, 2), 6);
    cr_expect_eq(profile_add_native_site(p, a, 1), 7, "a prefix is another frame list");
    cr_expect_eq(profile_add_native_site(p, b, 2), 8);
    cr_expect_eq(profile_add_native_site(p, a, 0), -1, "a native site needs frames");
    cr_expect(p->sites[6].file == -1 && p->sites[6].line == 0 && p->sites[6].frame_count == 2);
    cr_expect(p->sites[6].frames != a && p->sites[6].frames[1].module != a[1].module, "frames are copied");
    cr_expect_eq(p->site_count, 9);
    profile_free(p);
}

Test(profile_model, processes_are_copied) {
    Profile *p = profile_new();
    char error[] = "lost";
    ProfProcess proc = {12, 1, 0, 4, 99, error, {0}, {0}, false, 0};
    cr_expect_eq(profile_add_process(p, &proc), 0);
    cr_expect_eq(profile_add_process(p, &proc), 1, "processes are not deduplicated");
    error[0] = 'L';
    cr_expect_str_eq(p->processes[0].error, "lost");
    cr_expect(p->processes[1].pid == 12 && p->processes[1].world_size == 4 && p->processes[1].wall_ns == 99);
    profile_free(p);
}

/* deduplication is not quadratic: the caps' worth of files and sites, each
 * site added twice, take a fraction of a second (minutes if every add
 * compared with every site) */
Test(profile_model, many_sites_stay_fast) {
    Profile *p = profile_new();
    char path[32];
    for (int i = 0; i < (int)PROFILE_MAX_FILES; i++) {
        snprintf(path, sizeof path, "f%d.py", i);
        cr_assert_eq(profile_add_file(p, path), i);
    }
    for (int i = 0; i < (int)PROFILE_MAX_SITES; i++)
        cr_assert_eq(profile_add_site(p, i % (int)PROFILE_MAX_FILES, (uint32_t)(i / PROFILE_MAX_FILES + 1), "f"), i);
    for (int i = 0; i < (int)PROFILE_MAX_SITES; i++)
        cr_assert_eq(profile_add_site(p, i % (int)PROFILE_MAX_FILES, (uint32_t)(i / PROFILE_MAX_FILES + 1), "f"), i);
    snprintf(path, sizeof path, "f%d.py", 12345);
    cr_expect_eq(profile_add_file(p, path), 12345);
    cr_expect_eq(p->site_count, PROFILE_MAX_SITES);
    profile_free(p);
}

/* arrays that other code filled or replaced are indexed again before use */
Test(profile_model, helpers_work_on_arrays_filled_elsewhere) {
    Profile *sample = sample_final();
    char *text = to_json(sample, PROFILE_FINAL);
    Profile *p = from_json(text, PROFILE_FINAL); /* the reader fills the arrays itself */
    cr_expect_eq(profile_add_file(p, "model/layers.py"), 1);
    cr_expect_eq(profile_add_site(p, 0, 12, "main"), 0);
    cr_expect_eq(profile_add_function_site(p, 1, 38, "Linear.forward"), 3);
    cr_expect_eq(profile_add_file(p, "new.py"), 2);
    cr_expect_eq(profile_add_site(p, 2, 1, NULL), 4);

    /* a files array replaced by other code, one entry longer */
    ProfFile *files = calloc(p->file_count + 1, sizeof *files);
    memcpy(files, p->files, p->file_count * sizeof *files);
    files[p->file_count] = (ProfFile){strdup("added/elsewhere.py"), NULL};
    free(p->files);
    p->files = files;
    p->file_count++;
    cr_expect_eq(profile_add_file(p, "added/elsewhere.py"), 3);
    cr_expect_eq(profile_add_file(p, "train.py"), 0);
    cr_expect_eq(profile_add_file(p, "after.py"), 4);
    cr_expect_str_eq(p->files[3].path, "added/elsewhere.py");

    /* a files array grown by other code with realloc (perhaps in place) past
     * the room the helpers had left */
    size_t grown = p->file_count + 20;
    p->files = realloc(p->files, grown * sizeof *p->files);
    for (size_t i = p->file_count; i < grown; i++) {
        char name[32];
        snprintf(name, sizeof name, "grown/%zu.py", i);
        p->files[i] = (ProfFile){strdup(name), NULL};
    }
    p->file_count = grown;
    cr_expect_eq(profile_add_file(p, "grown/7.py"), 7);
    cr_expect_eq(profile_add_file(p, "one/more.py"), (int)grown);
    cr_expect_str_eq(p->files[grown].path, "one/more.py");

    /* a sites array shrunk by other code */
    free(p->sites[4].function);
    p->site_count = 4;
    cr_expect_eq(profile_add_site(p, 2, 1, NULL), 4);
    cr_expect_eq(profile_add_site(p, 0, 30, NULL), 2);
    profile_free(p);
    profile_free(sample);
    free(text);
}

/* ---- merging parts ------------------------------------------------------------------------- */

Test(profile_model, append_reindexes_and_deduplicates) {
    Profile *a = sample_final();
    Profile *b = sample_import();
    cr_assert(profile_add_file(b, "train.py") == 1);
    b->files[1].sha256 = strdup("1111111111111111111111111111111111111111111111111111111111111111");
    cr_assert(profile_add_site(b, 1, 12, "main") == 2); /* the same as a's site 0 */
    b->ops[1].site = 2;
    b->dropped_kernels = 5;
    b->dropped_ops = UINT64_MAX;
    ProfLineMetrics line = {.kernel = "ampere_sgemm_128x64_tn", .file = 1, .line = 7, .launches = 1,
                            .global_sectors = 64, .global_sectors_ideal = 64};
    cr_assert(profile_add_line_metrics(b, &line) == 0);

    Profile *merged = profile_new();
    cr_assert(profile_append(merged, a));
    cr_assert(profile_append(merged, b));
    cr_expect_str_eq(merged->name, "train-step", "the first part's header is kept");
    cr_expect_str_eq(merged->source, "cupti");
    cr_expect_eq(merged->command_count, 5);
    cr_expect_eq(merged->dropped_kernels, 5);
    cr_expect_eq(merged->dropped_ops, (uint64_t)INT64_MAX, "dropped counts stop at 2^63-1");
    cr_expect_eq(merged->dropped_sites, 1);

    cr_expect_eq(merged->process_count, 3);
    cr_expect_eq(merged->processes[2].pid, 777);
    cr_expect_eq(merged->device_count, 3);
    cr_expect_eq(merged->devices[2].process, 2);
    cr_expect_eq(merged->file_count, 3, "train.py once");
    cr_expect_str_eq(merged->files[2].path, "src/pkg/model.py");
    cr_expect_str_eq(merged->files[0].sha256, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                     "a file's hash from the first part that had one");
    cr_expect_eq(merged->site_count, 6, "b's train.py:12 main is a's site 0");
    cr_expect(merged->sites[4].file == 2 && merged->sites[4].function_level);
    cr_expect(merged->sites[5].file == 2 && !merged->sites[5].function_level);

    cr_expect_eq(merged->kernel_count, 4);
    cr_expect(merged->kernels[3].process == 2 && merged->kernels[3].device == 2);
    cr_expect_eq(merged->kernels[2].device, -1, "no device stays no device");
    cr_expect_eq(merged->op_count, 9);
    const ProfOp *launch = &merged->ops[7], *sync = &merged->ops[8];
    cr_expect(launch->kind == PROF_OP_LAUNCH && launch->process == 2 && launch->kernel == 3 && launch->site == 4);
    cr_expect(sync->kind == PROF_OP_SYNC && sync->site == 0 && sync->kernel == -1);
    cr_expect_eq(merged->ops[2].site, -1);
    cr_expect_eq(merged->timeline_count, 3);
    cr_expect(merged->timelines[2].process == 2 && merged->timelines[2].device == 2);
    cr_expect_eq(merged->gaps[1].before_site, -1);
    cr_expect_eq(merged->gaps[1].after_site, 3);
    cr_expect_eq(merged->line_metric_count, 3, "a's two lines, and b's train.py line");
    cr_expect(merged->line_metrics[1].file == 1 && merged->line_metrics[1].line == 53);
    cr_expect(merged->line_metrics[2].file == 0 && merged->line_metrics[2].line == 7,
              "b's file 1 (train.py) is the merge's file 0");
    cr_expect_str_eq(merged->line_metrics[2].kernel, "ampere_sgemm_128x64_tn");

    /* the merge is a valid profile, and merging a alone gives a's bytes */
    char *text = to_json(merged, PROFILE_FINAL);
    Profile *only_a = profile_new();
    cr_assert(profile_append(only_a, a));
    char *a_text = to_json(a, PROFILE_FINAL), *only_a_text = to_json(only_a, PROFILE_FINAL);
    cr_expect_str_eq(only_a_text, a_text);
    free(text);
    free(a_text);
    free(only_a_text);
    profile_free(only_a);
    profile_free(merged);
    profile_free(a);
    profile_free(b);
}

Test(profile_model, append_parts_with_native_sites) {
    Profile *one = sample_part(), *two = sample_part();
    two->processes[0].pid = 100;
    ProfFrame other = {"/work/app/build/app", 0x401b00};
    cr_assert(profile_add_native_site(two, &other, 1) == 2);
    two->ops[0].site = 2;
    Profile *merged = profile_new();
    cr_assert(profile_append(merged, one) && profile_append(merged, two));
    cr_expect_eq(merged->site_count, 3, "native sites deduplicated by their frames");
    cr_expect_eq(merged->ops[1].site, 2);
    cr_expect_eq(merged->ops[1].kernel, 1);
    char *text = to_json(merged, PROFILE_PART);
    free(text);
    write_refused(merged, PROFILE_FINAL, "sites[0]: not resolved to a source line");
    profile_free(merged);
    profile_free(one);
    profile_free(two);
}

Test(profile_model, append_to_itself) {
    Profile *p = sample_final();
    cr_assert(profile_append(p, p));
    cr_expect_eq(p->process_count, 4);
    cr_expect_eq(p->file_count, 2);
    cr_expect_eq(p->site_count, 4);
    cr_expect_eq(p->kernel_count, 6);
    cr_expect(p->ops[7].kernel == 3 && p->ops[7].process == 2);
    cr_expect_str_eq(p->kernels[3].name, p->kernels[0].name);
    cr_expect_eq(p->dropped_ops, 6);
    cr_expect_eq(p->line_metric_count, 2, "the same kernel, file and line: their counts added");
    cr_expect(p->line_metrics[0].launches == 4 && p->line_metrics[0].global_sectors == 2 * 18874368u &&
              p->line_metrics[0].global_sectors_ideal == 2 * 4194304u && p->line_metrics[1].local_sectors == 16384);
    free(to_json(p, PROFILE_FINAL));
    profile_free(p);
}

/* ---- hashing source files ------------------------------------------------------------------ */

Test(profile_model, hash_files_under_root) {
    char *root = temp_dir();
    char *sub = join(root, "pkg");
    mkdir(sub, 0755);
    char *abc = join(root, "pkg/abc.py");
    write_all(abc, "abc", 3);
    char *empty = join(root, "empty.py");
    write_all(empty, "", 0);
    char *fifo = join(root, "pipe.py");
    cr_assert(mkfifo(fifo, 0644) == 0);

    Profile *p = profile_new();
    profile_add_file(p, "pkg/abc.py");
    profile_add_file(p, "empty.py");
    profile_add_file(p, "missing.py");
    profile_add_file(p, "pipe.py"); /* a FIFO: never opened, never blocks */
    profile_add_file(p, "pkg");     /* a folder */
    profile_add_file(p, "../escape.py");
    p->files[2].sha256 = strdup("stale");
    profile_hash_files(p, root);
    cr_expect_str_eq(p->files[0].sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    cr_expect_str_eq(p->files[1].sha256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    for (size_t i = 2; i < p->file_count; i++) cr_expect_null(p->files[i].sha256, "files[%zu]", i);
    profile_free(p);
    remove_tree(root);
    free(root);
    free(sub);
    free(abc);
    free(empty);
    free(fifo);
}

/* ---- writing and reading ---------------------------------------------------------------------- */

/* write, read, write again: the same bytes (so every field survives) */
static void round_trip(Profile *(*sample)(void), ProfileKind kind) {
    Profile *p = sample();
    char *first = to_json(p, kind);
    char *again = to_json(p, kind);
    cr_expect_str_eq(first, again, "the writer is deterministic");
    Profile *read = from_json(first, kind);
    char *second = to_json(read, kind);
    cr_expect_str_eq(second, first);
    profile_free(read);
    profile_free(p);
    free(first);
    free(again);
    free(second);
}

Test(profile_json, round_trips) {
    round_trip(sample_final, PROFILE_FINAL);
    round_trip(sample_minimal, PROFILE_FINAL);
    round_trip(sample_import, PROFILE_FINAL);
    round_trip(sample_part, PROFILE_PART);
    round_trip(sample_final, PROFILE_PART); /* a part may hold resolved sites only */
}

Test(profile_json, fields_read_back) {
    Profile *sample = sample_final();
    char *text = to_json(sample, PROFILE_FINAL);
    Profile *p = from_json(text, PROFILE_FINAL);
    cr_expect_str_eq(p->name, "train-step");
    cr_expect_str_eq(p->created, "2026-11-30T15:01:02Z");
    cr_expect_str_eq(p->command[1], "--nproc-per-node=2");
    cr_expect(p->processes[1].rank == 1 && p->processes[1].world_size == 2);
    cr_expect_str_eq(p->processes[1].error, "CUPTI buffer full: records lost");
    cr_expect_null(p->processes[0].error);
    cr_expect(p->devices[1].process == 1 && p->devices[1].cc_major == 9 && p->devices[1].l2_bytes == 52428800);
    cr_expect_eq(p->devices[0].bandwidth_bytes_per_s, 4800000000000u);
    cr_expect_null(p->files[1].sha256);
    cr_expect_null(p->sites[2].function);
    cr_expect(p->sites[3].function_level && p->sites[3].line == 38);
    cr_expect_str_eq(p->kernels[1].name, "elementwise_add \"quoted\" \xc3\xa9");
    cr_expect(p->kernels[0].grid[1] == 2 && p->kernels[0].dynamic_shared == 49152);
    cr_expect_eq(p->kernels[2].device, -1);
    const ProfOp *copy = &p->ops[1];
    cr_expect(copy->kind == PROF_OP_MEMCPY && copy->copy == PROF_COPY_HTOD && copy->src == PROF_MEM_PAGEABLE &&
              copy->dst == PROF_MEM_DEVICE && copy->bytes == 4194304 && copy->kernel == -1);
    cr_expect(p->ops[3].sync == PROF_SYNC_STREAM && p->ops[4].dst == PROF_MEM_PINNED);
    cr_expect(p->ops[0].stats.median_ns == 500 && p->ops[0].stats.total_ns == 5000);
    cr_expect(p->gaps[1].before_site == -1 && p->gaps[1].after_site == 3);
    cr_expect(p->timelines[0].idle_ns == 400000);
    cr_expect(p->timelines[0].compute_ns == 500000 && p->timelines[0].comm_ns == 200000 &&
              p->timelines[0].exposed_comm_ns == 100000);
    cr_assert_eq(p->line_metric_count, 2);
    const ProfLineMetrics *m = &p->line_metrics[0];
    cr_expect_str_eq(m->kernel, "void gemm<float, 128>(float const*, float*, int)");
    cr_expect(m->file == 1 && m->line == 52 && m->launches == 2 && m->instructions == 1048576);
    cr_expect(m->global_sectors == 18874368 && m->global_sectors_ideal == 4194304);
    cr_expect(m->shared_wavefronts == 1048576 && m->shared_wavefronts_ideal == 32768 && m->local_sectors == 0);
    cr_expect(p->line_metrics[1].line == 53 && p->line_metrics[1].local_sectors == 8192);
    cr_expect(p->line_metrics[1].inlined_instructions == 1024 && m->inlined_instructions == 0);
    profile_free(p);
    profile_free(sample);
    free(text);
}

/* the layout: one top-level key per line, one array entry per line */
Test(profile_json, layout) {
    Profile *p = sample_minimal();
    char *text = to_json(p, PROFILE_FINAL);
    const char *expected =
        "{\n"
        "\"format\":\"advise-profile\",\n"
        "\"version\":1,\n"
        "\"kind\":\"final\",\n"
        "\"name\":\"empty\",\n"
        "\"source\":\"cupti\",\n"
        "\"created\":\"2026-11-30T15:01:02Z\",\n"
        "\"tool\":\"advise 0.1.0\",\n"
        "\"command\":[\"python\",\"noop.py\"],\n"
        "\"dropped\":{\"kernels\":0,\"ops\":0,\"sites\":0},\n"
        "\"processes\":[\n"
        "{\"pid\":1,\"rank\":null,\"local_rank\":null,\"world_size\":null,\"wall_ns\":20000000,"
        "\"error\":\"CUDA was never initialised\"}\n"
        "],\n"
        "\"devices\":[],\n"
        "\"files\":[],\n"
        "\"sites\":[],\n"
        "\"kernels\":[],\n"
        "\"ops\":[],\n"
        "\"apis\":[],\n"
        "\"overheads\":[],\n"
        "\"timelines\":[],\n"
        "\"gaps\":[],\n"
        "\"line_metrics\":[]\n"
        "}\n";
    cr_expect_str_eq(text, expected);
    free(text);
    profile_free(p);
}

Test(profile_json, kinds_must_match) {
    Profile *p = sample_final();
    char *final = to_json(p, PROFILE_FINAL), *part = to_json(p, PROFILE_PART);
    refused(final, strlen(final), PROFILE_PART, "kind: a \"final\" profile, where a \"part\" profile");
    refused(part, strlen(part), PROFILE_FINAL, "kind: a \"part\" profile");
    free(final);
    free(part);
    profile_free(p);
}

/* ---- what the writer refuses ------------------------------------------------------------------- */

Test(profile_json, writer_refuses_broken_profiles) {
    Profile *p = sample_final();
#define BREAK_AND_EXPECT(statement, restore, kind, needle) \
    do {                                                   \
        statement;                                         \
        write_refused(p, kind, needle);                    \
        restore;                                           \
    } while (0)
    char *name = p->name;
    BREAK_AND_EXPECT(p->name = NULL, p->name = name, PROFILE_FINAL, "name: missing");
    char *source = p->source;
    BREAK_AND_EXPECT(p->source = "nsys", p->source = source, PROFILE_FINAL, "source: \"nsys\" is not one of");
    char *created = p->created;
    BREAK_AND_EXPECT(p->created = "2026-11-30 15:01:02", p->created = created, PROFILE_FINAL,
                     "created: \"2026-11-30 15:01:02\" is not a UTC time");
    BREAK_AND_EXPECT(p->created = "2026-13-30T15:01:02Z", p->created = created, PROFILE_FINAL, "created:");
    char *arg = p->command[2];
    BREAK_AND_EXPECT(p->command[2] = "bad \xff byte", p->command[2] = arg, PROFILE_FINAL, "command[2]: not valid UTF-8");
    BREAK_AND_EXPECT(p->dropped_ops = (uint64_t)INT64_MAX + 1, p->dropped_ops = 3, PROFILE_FINAL,
                     "dropped.ops: 9223372036854775808 is more than 2^63-1");
    BREAK_AND_EXPECT(p->processes[0].pid = -5, p->processes[0].pid = 4242, PROFILE_FINAL,
                     "processes[0].pid: -5 is negative");
    BREAK_AND_EXPECT(p->processes[1].rank = -2, p->processes[1].rank = 1, PROFILE_FINAL, "processes[1].rank: -2");
    BREAK_AND_EXPECT(p->devices[1].process = 2, p->devices[1].process = 1, PROFILE_FINAL,
                     "devices[1].process: 2 is not an index into processes, which has 2 entries");
    char *path = p->files[1].path;
    BREAK_AND_EXPECT(p->files[1].path = "../secret.py", p->files[1].path = path, PROFILE_FINAL,
                     "files[1].path: \"../secret.py\" is not a path inside the project");
    BREAK_AND_EXPECT(p->files[1].path = "train.py", p->files[1].path = path, PROFILE_FINAL,
                     "files[1].path: \"train.py\" is also files[0]");
    BREAK_AND_EXPECT(p->files[1].sha256 = "ABC", p->files[1].sha256 = NULL, PROFILE_FINAL,
                     "files[1].sha256: must be 64 lowercase hex digits or null");
    BREAK_AND_EXPECT(p->sites[1].line = 0, p->sites[1].line = 40, PROFILE_FINAL, "sites[1].line: must be 1 or more");
    BREAK_AND_EXPECT(p->sites[1].file = 9, p->sites[1].file = 1, PROFILE_FINAL,
                     "sites[1].file: 9 is not an index into files");
    char *function = p->sites[1].function;
    BREAK_AND_EXPECT((p->sites[1].line = 12, p->sites[1].file = 0, p->sites[1].function = "main"),
                     (p->sites[1].line = 40, p->sites[1].file = 1, p->sites[1].function = function), PROFILE_FINAL,
                     "sites[1]: the same site as sites[0]; each site appears once");

    BREAK_AND_EXPECT(p->sites[2].file = -1, p->sites[2].file = 0, PROFILE_FINAL,
                     "sites[2]: not resolved to a source line; a final profile holds resolved sites only");
    BREAK_AND_EXPECT((p->sites[2].file = -1, p->sites[2].line = 0), (p->sites[2].file = 0, p->sites[2].line = 30),
                     PROFILE_PART, "sites[2].frames: an unresolved site needs at least one frame");
    BREAK_AND_EXPECT(p->kernels[0].grid[1] = 0, p->kernels[0].grid[1] = 2, PROFILE_FINAL,
                     "kernels[0].grid[1]: must be a positive integer");
    BREAK_AND_EXPECT(p->kernels[0].block[2] = 0, p->kernels[0].block[2] = 1, PROFILE_FINAL,
                     "kernels[0].block[2]: must be a positive integer");
    BREAK_AND_EXPECT(p->kernels[0].device = 1, p->kernels[0].device = 0, PROFILE_FINAL,
                     "kernels[0].device: device 1 belongs to process 1, not to process 0");
    BREAK_AND_EXPECT(p->kernels[0].stats.median_ns = 300, p->kernels[0].stats.median_ns = 500, PROFILE_FINAL,
                     "kernels[0].stats.median_ns: less than min_ns");
    BREAK_AND_EXPECT(p->kernels[0].stats.max_ns = 450, p->kernels[0].stats.max_ns = 600, PROFILE_FINAL,
                     "kernels[0].stats.max_ns: less than median_ns");
    BREAK_AND_EXPECT(p->kernels[0].stats.total_ns = 599, p->kernels[0].stats.total_ns = 5000, PROFILE_FINAL,
                     "kernels[0].stats.total_ns: less than max_ns");
    BREAK_AND_EXPECT(p->ops[6].stats.total_ns = 1, p->ops[6].stats.total_ns = 0, PROFILE_FINAL,
                     "ops[6].stats: count is 0, so total_ns, min_ns, median_ns and max_ns must be 0");
    BREAK_AND_EXPECT(p->ops[0].kernel = 1, p->ops[0].kernel = 0, PROFILE_FINAL,
                     "ops[0].kernel: kernel 1 belongs to process 1, not to process 0");
    BREAK_AND_EXPECT(p->ops[0].kernel = -1, p->ops[0].kernel = 0, PROFILE_FINAL, "ops[0].kernel: missing");
    BREAK_AND_EXPECT(p->ops[0].kind = PROF_OP_KIND_COUNT, p->ops[0].kind = PROF_OP_LAUNCH, PROFILE_FINAL,
                     "ops[0].kind: 5 is not a known value");
    BREAK_AND_EXPECT(p->ops[1].copy = PROF_COPY_KIND_COUNT, p->ops[1].copy = PROF_COPY_HTOD, PROFILE_FINAL,
                     "ops[1].copy: 6 is not a known value");
    BREAK_AND_EXPECT(p->ops[1].bytes = UINT64_MAX, p->ops[1].bytes = 4194304, PROFILE_FINAL,
                     "ops[1].bytes: 18446744073709551615 is more than 2^63-1");
    BREAK_AND_EXPECT(p->ops[3].site = 4, p->ops[3].site = 2, PROFILE_FINAL, "ops[3].site: 4 is not an index into sites");
    char *kernel_name = p->kernels[1].name;
    BREAK_AND_EXPECT(p->kernels[1].name = "\xc0\xaf overlong", p->kernels[1].name = kernel_name, PROFILE_FINAL,
                     "kernels[1].name: not valid UTF-8");
    BREAK_AND_EXPECT(p->timelines[0].idle_ns = 1, p->timelines[0].idle_ns = 400000, PROFILE_FINAL,
                     "timelines[0].idle_ns: must be span_ns - busy_ns (400000)");
    BREAK_AND_EXPECT(p->timelines[0].busy_ns = 2000000, p->timelines[0].busy_ns = 600000, PROFILE_FINAL,
                     "timelines[0].busy_ns: more than span_ns");
    BREAK_AND_EXPECT(p->timelines[0].compute_ns = 600001, p->timelines[0].compute_ns = 500000, PROFILE_FINAL,
                     "timelines[0].compute_ns: more than busy_ns");
    BREAK_AND_EXPECT(p->timelines[0].comm_ns = 600001, p->timelines[0].comm_ns = 200000, PROFILE_FINAL,
                     "timelines[0].comm_ns: more than busy_ns");
    BREAK_AND_EXPECT(p->timelines[0].exposed_comm_ns = 200001, p->timelines[0].exposed_comm_ns = 100000,
                     PROFILE_FINAL, "timelines[0].exposed_comm_ns: more than comm_ns");
    BREAK_AND_EXPECT(p->timelines[1].device = -1, p->timelines[1].device = 1, PROFILE_FINAL,
                     "timelines[1].device: missing");
    BREAK_AND_EXPECT(p->gaps[0].device = 1, p->gaps[0].device = 0, PROFILE_FINAL,
                     "gaps[0].device: device 1 belongs to process 1, not to process 0");
    BREAK_AND_EXPECT(p->gaps[1].before_site = -7, p->gaps[1].before_site = -1, PROFILE_FINAL,
                     "gaps[1].before_site: -7 is not an index into sites");
    BREAK_AND_EXPECT(p->apis[1].process = 5, p->apis[1].process = 1, PROFILE_FINAL,
                     "apis[1].process: 5 is not an index into processes");
    char *kind = p->overheads[0].kind;
    BREAK_AND_EXPECT(p->overheads[0].kind = NULL, p->overheads[0].kind = kind, PROFILE_FINAL,
                     "overheads[0].kind: missing");
    size_t gaps = p->gap_count;
    BREAK_AND_EXPECT(p->gap_count = PROFILE_MAX_GAPS + 1, p->gap_count = gaps, PROFILE_FINAL,
                     "gaps: 65537 entries, more than the 65536 allowed");
    ProfLineMetrics *lm = &p->line_metrics[1];
    BREAK_AND_EXPECT(lm->line = 0, lm->line = 53, PROFILE_FINAL, "line_metrics[1].line: must be 1 or more");
    BREAK_AND_EXPECT(lm->launches = 0, lm->launches = 2, PROFILE_FINAL, "line_metrics[1].launches: must be 1 or more");
    BREAK_AND_EXPECT(lm->inlined_instructions = 4097, lm->inlined_instructions = 1024, PROFILE_FINAL,
                     "line_metrics[1].inlined_instructions: must be at most instructions");
    BREAK_AND_EXPECT(lm->file = 2, lm->file = 1, PROFILE_FINAL,
                     "line_metrics[1].file: 2 is not an index into files, which has 2 entries");
    BREAK_AND_EXPECT(lm->file = -1, lm->file = 1, PROFILE_FINAL, "line_metrics[1].file: missing");
    BREAK_AND_EXPECT(lm->local_sectors = (uint64_t)INT64_MAX + 1, lm->local_sectors = 8192, PROFILE_FINAL,
                     "line_metrics[1].local_sectors: 9223372036854775808 is more than 2^63-1");
    char *lm_kernel = lm->kernel;
    BREAK_AND_EXPECT(lm->kernel = NULL, lm->kernel = lm_kernel, PROFILE_FINAL, "line_metrics[1].kernel: missing");
    BREAK_AND_EXPECT(lm->kernel = "bad \xff", lm->kernel = lm_kernel, PROFILE_FINAL,
                     "line_metrics[1].kernel: not valid UTF-8");
    BREAK_AND_EXPECT(lm->line = 52, lm->line = 53, PROFILE_FINAL,
                     "line_metrics[1]: the same kernel, file and line as line_metrics[0]; each appears once");
    size_t line_metrics = p->line_metric_count;
    BREAK_AND_EXPECT(p->line_metric_count = PROFILE_MAX_LINE_METRICS + 1, p->line_metric_count = line_metrics,
                     PROFILE_FINAL, "line_metrics: 100001 entries, more than the 100000 allowed");
    lm->line = 52;
    lm->file = 0; /* the same kernel and line in another file: another entry */
    free(to_json(p, PROFILE_FINAL));
    lm->file = 1;
    lm->line = 53;

    char *long_name = malloc(PROFILE_MAX_STRING + 2);
    memset(long_name, 'k', PROFILE_MAX_STRING + 1);
    long_name[PROFILE_MAX_STRING + 1] = '\0';
    BREAK_AND_EXPECT(p->kernels[1].name = long_name, p->kernels[1].name = kernel_name, PROFILE_FINAL,
                     "kernels[1].name: 16385 bytes long, more than the 16384 a string may have");
    long_name[PROFILE_MAX_STRING] = '\0';
    p->kernels[1].name = long_name; /* exactly the cap: fine */
    free(to_json(p, PROFILE_FINAL));
    p->kernels[1].name = kernel_name;
    free(long_name);
    profile_free(p);

    /* native frames, in a part */
    p = sample_part();
    ProfSite *native = &p->sites[0];
    char *module = native->frames[0].module;
    BREAK_AND_EXPECT(native->frames[0].module = "build/app", native->frames[0].module = module, PROFILE_PART,
                     "sites[0].frames[0].module: must be an absolute path");
    BREAK_AND_EXPECT(native->frames[1].address = (uint64_t)INT64_MAX + 1, native->frames[1].address = 0x1f00,
                     PROFILE_PART, "sites[0].frames[1].address: 9223372036854775808 is more than 2^63-1");
    BREAK_AND_EXPECT(native->line = 7, native->line = 0, PROFILE_PART, "sites[0].line: must be 0 in an unresolved site");
    BREAK_AND_EXPECT(native->function_level = true, native->function_level = false, PROFILE_PART,
                     "sites[0].function_level: must be false in an unresolved site");
    size_t frames = native->frame_count;
    BREAK_AND_EXPECT(native->frame_count = PROFILE_MAX_FRAMES + 1, native->frame_count = frames, PROFILE_PART,
                     "sites[0].frames: 17 entries, more than the 16 allowed");
    ProfFrame almost[2] = {{"/work/app/build/app", 0x401a2c}, {"/work/app/build/libnet.so", 0x1f01}};
    cr_assert(profile_add_native_site(p, almost, 2) == 2);
    BREAK_AND_EXPECT(p->sites[2].frames[1].address = 0x1f00, p->sites[2].frames[1].address = 0x1f01, PROFILE_PART,
                     "sites[2]: the same site as sites[0]");
    free(to_json(p, PROFILE_PART));
    profile_free(p);
#undef BREAK_AND_EXPECT
}

/* the text would be more than the reader accepts: every string within the
 * string cap, but 4200 kernels with 16 KiB names */
Test(profile_json, writer_refuses_more_than_the_file_cap) {
    Profile *p = sample_minimal();
    size_t n = 4200;
    p->kernels = calloc(n, sizeof *p->kernels);
    for (size_t i = 0; i < n; i++) {
        char *name = malloc(PROFILE_MAX_STRING + 1);
        memset(name, 'k', PROFILE_MAX_STRING);
        snprintf(name, 16, "%zu", i);
        name[strlen(name)] = 'k';
        name[PROFILE_MAX_STRING] = '\0';
        p->kernels[i] = (ProfKernel){0, -1, name, {1, 1, 1}, {1, 1, 1}, 0, 0, 0, 0, stats(0, 0, 0, 0, 0), {0}};
        p->kernel_count = i + 1;
    }
    write_refused(p, PROFILE_FINAL, "the profile would be more than the 67108864 bytes a profile file may have");
    p->kernel_count = 4000; /* 65.6 MB: fits */
    char *text = to_json(p, PROFILE_FINAL);
    cr_expect_gt(strlen(text), 64000000);
    free(text);
    p->kernel_count = n;
    profile_free(p);
}

/* ---- what the reader refuses ------------------------------------------------------------------- */

/* The JSON value at a '/'-separated path of keys and array positions, set to
 * value (taken; NULL deletes it). */
static void set_at(json_t *root, const char *path, json_t *value) {
    char *copy = strdup(path);
    json_t *node = root;
    char *save = NULL, *part = strtok_r(copy, "/", &save);
    while (part) {
        char *next = strtok_r(NULL, "/", &save);
        bool is_index = part[0] >= '0' && part[0] <= '9';
        if (!next) {
            if (is_index && value) cr_assert(json_array_set_new(node, strtoul(part, NULL, 10), value) == 0, "%s", path);
            else if (is_index) cr_assert(json_array_remove(node, strtoul(part, NULL, 10)) == 0, "%s", path);
            else if (value) cr_assert(json_object_set_new(node, part, value) == 0, "%s", path);
            else cr_assert(json_object_del(node, part) == 0, "%s", path);
        } else {
            node = is_index ? json_array_get(node, strtoul(part, NULL, 10)) : json_object_get(node, part);
            cr_assert_not_null(node, "no %s in %s", part, path);
        }
        part = next;
    }
    free(copy);
}

static json_t *sample_tree(Profile *(*sample)(void), ProfileKind kind) {
    Profile *p = sample();
    char *text = to_json(p, kind);
    json_t *root = json_loads(text, 0, NULL);
    cr_assert_not_null(root);
    free(text);
    profile_free(p);
    return root;
}

static char *dump(const json_t *root) {
    char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    cr_assert_not_null(text);
    return text;
}

typedef struct {
    const char *path;
    const char *value; /* JSON text; NULL deletes */
    const char *needle;
} Mutation;

static void expect_mutations_refused(Profile *(*sample)(void), ProfileKind kind, const Mutation *m, size_t n) {
    for (size_t i = 0; i < n; i++) {
        json_t *root = sample_tree(sample, kind);
        json_t *value = NULL;
        if (m[i].value) {
            json_error_t e;
            value = json_loads(m[i].value, JSON_DECODE_ANY, &e);
            cr_assert_not_null(value, "bad test value %s: %s", m[i].value, e.text);
        }
        set_at(root, m[i].path, value);
        char *text = dump(root);
        refused(text, strlen(text), kind, m[i].needle);
        free(text);
        json_decref(root);
    }
}

Test(profile_json, reader_names_the_place_of_each_problem) {
    static const Mutation final[] = {
        {"format", "\"advise-profile2\"", "format: not an advise profile"},
        {"format", NULL, "format: not an advise profile"},
        {"version", "2", "version: 2: this profile was written by a newer advise (this one reads version 1); "
                         "upgrade advise to read it"},
        {"version", "0", "version: 0 is not a version of the format"},
        {"version", "1.0", "version: must be an integer"},
        {"version", NULL, "version: missing"},
        {"kind", "\"draft\"", "kind: must be \"final\" or \"part\""},
        {"name", "7", "name: must be a string"},
        {"name", NULL, "name: missing"},
        {"tool", "null", "tool: must be a string"},
        {"source", "\"nsys\"", "source: \"nsys\" is not one of \"cupti\", \"torch-profiler\""},
        {"created", "\"yesterday\"", "created: \"yesterday\" is not a UTC time"},
        {"created", "\"2026-11-30T25:01:02Z\"", "created:"},
        {"command", "\"python train.py\"", "command: must be an array"},
        {"command/1", "5", "command[1]: must be a string"},
        {"dropped", "[]", "dropped: must be an object"},
        {"dropped/ops", "-3", "dropped.ops: must be a non-negative integer"},
        {"dropped/sites", NULL, "dropped.sites: missing"},
        {"processes", "{}", "processes: must be an array"},
        {"processes/0", "[]", "processes[0]: must be an object"},
        {"processes/0/pid", "-1", "processes[0].pid: must be a non-negative integer"},
        {"processes/0/rank", "\"0\"", "processes[0].rank: must be a non-negative integer (at most 2147483647) or null"},
        {"processes/0/world_size", "2147483648", "processes[0].world_size: must be a non-negative integer"},
        {"processes/1/error", "false", "processes[1].error: must be a string or null"},
        {"processes/1/wall_ns", "1e9", "processes[1].wall_ns: must be a non-negative integer"},
        {"devices/0/process", "null", "devices[0].process: must be an index (a non-negative integer)"},
        {"devices/0/process", "2", "devices[0].process: 2 is not an index into processes, which has 2 entries"},
        {"devices/0/id", "4294967296", "devices[0].id: 4294967296 is more than 4294967295"},
        {"devices/0/compute_capability", "[9]", "devices[0].compute_capability: must be an array of 2 non-negative"},
        {"devices/0/compute_capability/1", "-1", "devices[0].compute_capability[1]: must be a non-negative integer"},
        {"devices/1/l2_bytes", NULL, "devices[1].l2_bytes: missing"},
        {"files/0/path", "\"../x.py\"", "files[0].path: \"../x.py\" is not a path inside the project"},
        {"files/0/path", "\"/home/me/train.py\"", "files[0].path: \"/home/me/train.py\" is not a path inside"},
        {"files/0/path", "\"a\\\\b.py\"", "files[0].path: \"a\\b.py\" is not a path inside the project"},
        {"files/1/path", "\"train.py\"", "files[1].path: \"train.py\" is also files[0]; each file appears once"},
        {"files/0/sha256", "\"9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08\"",
         "files[0].sha256: must be 64 lowercase hex digits or null"},
        {"files/0/sha256", "\"9f86\"", "files[0].sha256: must be 64 lowercase hex digits or null"},
        {"sites/0/line", "0", "sites[0].line: must be 1 or more"},
        {"sites/0/file", "2", "sites[0].file: 2 is not an index into files, which has 2 entries"},
        {"sites/0/file", "null", "sites[0]: not resolved to a source line; a final profile holds resolved sites only"},
        {"sites/0/frames", "[{\"module\":\"/bin/app\",\"address\":1}]",
         "sites[0].frames: a final profile holds resolved sites only, without frames"},
        {"sites/0/function_level", "1", "sites[0].function_level: must be true or false"},
        {"sites/2/function", NULL, "sites[2].function: missing"},
        {"sites/1", "{\"file\":0,\"line\":12,\"function\":\"main\",\"function_level\":false}",
         "sites[1]: the same site as sites[0]; each site appears once"},
        {"kernels/0/grid/1", "0", "kernels[0].grid[1]: must be a positive integer"},
        {"kernels/0/grid/1", "-4", "kernels[0].grid[1]: must be a positive integer"},
        {"kernels/0/grid/2", "1.5", "kernels[0].grid[2]: must be a positive integer"},
        {"kernels/0/grid", "[1,1]", "kernels[0].grid: must be an array of 3 positive integers"},
        {"kernels/0/block", "[1,1,1,1]", "kernels[0].block: must be an array of 3 positive integers"},
        {"kernels/0/block/0", "4294967296", "kernels[0].block[0]: 4294967296 is more than 4294967295"},
        {"kernels/0/registers", "-1", "kernels[0].registers: must be a non-negative integer"},
        {"kernels/0/process", "7", "kernels[0].process: 7 is not an index into processes"},
        {"kernels/0/device", "1", "kernels[0].device: device 1 belongs to process 1, not to process 0"},
        {"kernels/0/device", "\"0\"", "kernels[0].device: must be an index (a non-negative integer) or null"},
        {"kernels/0/name", "null", "kernels[0].name: must be a string"},
        {"kernels/1/stats", NULL, "kernels[1].stats: missing"},
        {"kernels/1/stats", "[]", "kernels[1].stats: must be an object"},
        {"kernels/0/stats/count", "1.5", "kernels[0].stats.count: must be a non-negative integer"},
        {"kernels/0/stats/median_ns", "1", "kernels[0].stats.median_ns: less than min_ns"},
        {"kernels/0/stats/max_ns", "401", "kernels[0].stats.max_ns: less than median_ns"},
        {"kernels/0/stats/total_ns", "1", "kernels[0].stats.total_ns: less than max_ns"},
        {"ops/6/stats/max_ns", "1", "ops[6].stats: count is 0, so total_ns, min_ns, median_ns and max_ns must be 0"},
        {"ops/0/kind", "\"launchx\"", "ops[0].kind: must be one of \"launch\", \"memcpy\", \"memset\", \"sync\", "
                                     "\"alloc\""},
        {"ops/0/kernel", NULL, "ops[0].kernel: missing"},
        {"ops/0/kernel", "null", "ops[0].kernel: must be an index (a non-negative integer)"},
        {"ops/0/kernel", "1", "ops[0].kernel: kernel 1 belongs to process 1, not to process 0"},
        {"ops/0/site", "99", "ops[0].site: 99 is not an index into sites, which has 4 entries"},
        {"ops/1/copy", "\"HtoX\"", "ops[1].copy: must be one of \"unknown\", \"HtoD\", \"DtoH\", \"DtoD\", \"HtoH\", "
                                   "\"PtoP\""},
        {"ops/1/src", "\"host\"", "ops[1].src: must be one of \"unknown\", \"pageable\", \"pinned\", \"device\", "
                                  "\"managed\""},
        {"ops/1/bytes", "-1", "ops[1].bytes: must be a non-negative integer"},
        {"ops/2/dst", NULL, "ops[2].dst: missing"},
        {"ops/3/sync", "\"barrier\"", "ops[3].sync: must be one of \"unknown\", \"event\", \"stream_wait_event\", "
                                      "\"stream\", \"context\""},
        {"ops/4/bytes", "true", "ops[4].bytes: must be a non-negative integer"},
        {"apis/0/name", "[\"x\"]", "apis[0].name: must be a string"},
        {"apis/1/process", "2", "apis[1].process: 2 is not an index into processes"},
        {"overheads/0/kind", NULL, "overheads[0].kind: missing"},
        {"timelines/0/idle_ns", "5", "timelines[0].idle_ns: must be span_ns - busy_ns (400000)"},
        {"timelines/1/busy_ns", "2001", "timelines[1].busy_ns: more than span_ns"},
        {"timelines/0/compute_ns", "600001", "timelines[0].compute_ns: more than busy_ns"},
        {"timelines/0/comm_ns", "-1", "timelines[0].comm_ns: must be a non-negative integer"},
        {"timelines/0/comm_ns", "700000", "timelines[0].comm_ns: more than busy_ns"},
        {"timelines/0/exposed_comm_ns", "300000", "timelines[0].exposed_comm_ns: more than comm_ns"},
        {"timelines/0/exposed_comm_ns", "1.0", "timelines[0].exposed_comm_ns: must be a non-negative integer"},
        {"timelines/1/device", "null", "timelines[1].device: must be an index (a non-negative integer)"},
        {"timelines/1/device", "0", "timelines[1].device: device 0 belongs to process 0, not to process 1"},
        {"gaps/0/before_site", "-1", "gaps[0].before_site: must be an index (a non-negative integer) or null"},
        {"gaps/0/after_site", "4", "gaps[0].after_site: 4 is not an index into sites"},
        {"gaps/1/duration_ns", "9223372036854775807.0", "gaps[1].duration_ns: must be a non-negative integer"},
        {"gaps", NULL, "gaps: missing"},
        {"line_metrics", "{}", "line_metrics: must be an array"},
        {"line_metrics", "null", "line_metrics: must be an array"},
        {"line_metrics/0", "[]", "line_metrics[0]: must be an object"},
        {"line_metrics/0/kernel", "null", "line_metrics[0].kernel: must be a string"},
        {"line_metrics/0/kernel", NULL, "line_metrics[0].kernel: missing"},
        {"line_metrics/0/file", "2", "line_metrics[0].file: 2 is not an index into files, which has 2 entries"},
        {"line_metrics/0/file", "null", "line_metrics[0].file: must be an index (a non-negative integer)"},
        {"line_metrics/0/line", "0", "line_metrics[0].line: must be 1 or more"},
        {"line_metrics/0/line", "4294967296", "line_metrics[0].line: 4294967296 is more than 4294967295"},
        {"line_metrics/0/launches", "0", "line_metrics[0].launches: must be 1 or more"},
        {"line_metrics/0/inlined_instructions", "-1", "line_metrics[0].inlined_instructions"},
        {"line_metrics/0/instructions", "1.5", "line_metrics[0].instructions: must be a non-negative integer"},
        {"line_metrics/0/global_sectors", "-1", "line_metrics[0].global_sectors: must be a non-negative integer"},
        {"line_metrics/0/global_sectors_ideal", NULL, "line_metrics[0].global_sectors_ideal: missing"},
        {"line_metrics/1/shared_wavefronts", "\"8\"", "line_metrics[1].shared_wavefronts: must be a non-negative"},
        {"line_metrics/1/shared_wavefronts_ideal", "true", "line_metrics[1].shared_wavefronts_ideal: must be"},
        {"line_metrics/1/local_sectors", NULL, "line_metrics[1].local_sectors: missing"},
        {"line_metrics/1/line", "52", "line_metrics[1]: the same kernel, file and line as line_metrics[0]"},
    };
    expect_mutations_refused(sample_final, PROFILE_FINAL, final, sizeof final / sizeof *final);

    static const Mutation part[] = {
        {"sites/0/frames", NULL, "sites[0].frames: missing"},
        {"sites/0/frames", "[]", "sites[0].frames: an unresolved site needs at least one frame"},
        {"sites/0/frames/0/module", "\"build/app\"", "sites[0].frames[0].module: must be an absolute path"},
        {"sites/0/frames/0/module", "\"/bin/a\\tb\"", "sites[0].frames[0].module: must be an absolute path"},
        {"sites/0/frames/1/address", "-1", "sites[0].frames[1].address: must be a non-negative integer"},
        {"sites/0/frames/1", "7", "sites[0].frames[1]: must be an object"},
        {"sites/0/line", "3", "sites[0].line: must be 0 in an unresolved site"},
        {"sites/1/frames", "[{\"module\":\"/bin/app\",\"address\":1}]",
         "sites[1].frames: only an unresolved site (file null) has frames"},
        {"kind", "\"final\"", "kind: a \"final\" profile, where a \"part\" profile"},
        {"line_metrics/0/file", "1", "line_metrics[0].file: 1 is not an index into files, which has 1 entries"},
    };
    expect_mutations_refused(sample_part, PROFILE_PART, part, sizeof part / sizeof *part);
}

/* more than a cap allows, and strings over the string cap */
Test(profile_json, reader_enforces_caps) {
    json_t *root = sample_tree(sample_minimal, PROFILE_FINAL);
    json_t *processes = json_object_get(root, "processes");
    json_t *one = json_array_get(processes, 0);
    while (json_array_size(processes) <= PROFILE_MAX_PROCESSES) json_array_append(processes, one);
    char *text = dump(root);
    refused(text, strlen(text), PROFILE_FINAL, "processes: 1025 entries, more than the 1024 allowed");
    free(text);
    json_array_remove(processes, 0);
    text = dump(root);
    Profile *p = from_json(text, PROFILE_FINAL); /* exactly the cap */
    cr_expect_eq(p->process_count, PROFILE_MAX_PROCESSES);
    profile_free(p);
    free(text);

    json_t *command = json_object_get(root, "command");
    while (json_array_size(command) <= PROFILE_MAX_COMMAND_ARGS) json_array_append_new(command, json_string("x"));
    text = dump(root);
    refused(text, strlen(text), PROFILE_FINAL, "command: 4097 entries, more than the 4096 allowed");
    free(text);
    json_decref(root);

    root = sample_tree(sample_final, PROFILE_FINAL);
    char *long_name = malloc(PROFILE_MAX_STRING + 2);
    memset(long_name, 'k', PROFILE_MAX_STRING + 1);
    long_name[PROFILE_MAX_STRING + 1] = '\0';
    set_at(root, "kernels/1/name", json_string(long_name));
    text = dump(root);
    refused(text, strlen(text), PROFILE_FINAL, "kernels[1].name: 16385 bytes long, more than the 16384 a string may have");
    free(text);
    free(long_name);
    json_decref(root);

    root = sample_tree(sample_final, PROFILE_FINAL);
    json_t *lines = json_object_get(root, "line_metrics");
    while (json_array_size(lines) <= PROFILE_MAX_LINE_METRICS) json_array_append(lines, json_array_get(lines, 0));
    text = dump(root);
    refused(text, strlen(text), PROFILE_FINAL, "line_metrics: 100001 entries, more than the 100000 allowed");
    free(text);
    json_decref(root);

    root = sample_tree(sample_part, PROFILE_PART);
    json_t *frames = json_object_get(json_array_get(json_object_get(root, "sites"), 0), "frames");
    while (json_array_size(frames) <= PROFILE_MAX_FRAMES) json_array_append(frames, json_array_get(frames, 0));
    text = dump(root);
    refused(text, strlen(text), PROFILE_PART, "sites[0].frames: 17 entries, more than the 16 allowed");
    free(text);
    json_decref(root);
}

/* keys this version does not know are ignored, at the top and inside entries */
Test(profile_json, unknown_keys_are_ignored) {
    json_t *root = sample_tree(sample_final, PROFILE_FINAL);
    set_at(root, "future_section", json_pack("[{s:i}]", "x", 1));
    set_at(root, "kernels/0/occupancy", json_real(0.5));
    set_at(root, "ops/0/bytes", json_integer(12)); /* a field of another kind of op */
    set_at(root, "ops/3/kernel", json_string("ignored"));
    set_at(root, "kernels/0/stats/p99_ns", json_integer(1));
    char *text = dump(root);
    Profile *p = from_json(text, PROFILE_FINAL);
    cr_expect_eq(p->ops[0].bytes, 0, "bytes is no field of a launch");
    cr_expect_eq(p->ops[3].kernel, -1);
    profile_free(p);
    free(text);
    json_decref(root);
}

/* line_metrics came after the first files: a file without it reads as
 * having none (and is written back with an empty array) */
Test(profile_json, line_metrics_are_optional) {
    json_t *root = sample_tree(sample_final, PROFILE_FINAL);
    set_at(root, "line_metrics", NULL);
    set_at(root, "memory", NULL); /* optional too (memory_are_optional); without it line_metrics is last */
    set_at(root, "memory_lines", NULL);
    char *text = dump(root);
    cr_assert_null(strstr(text, "line_metrics"));
    Profile *p = from_json(text, PROFILE_FINAL);
    cr_expect_eq(p->line_metric_count, 0);
    cr_expect_null(p->line_metrics);
    char *again = to_json(p, PROFILE_FINAL);
    cr_expect(strstr(again, "\"gaps\":[\n") && strstr(again, "],\n\"line_metrics\":[]\n}\n"),
              "written after gaps, empty:\n%s", again);
    free(again);
    profile_free(p);
    free(text);
    json_decref(root);

    /* an empty array is the same as none */
    root = sample_tree(sample_minimal, PROFILE_FINAL);
    text = dump(root);
    cr_expect(strstr(text, "\"line_metrics\":[]") != NULL);
    p = from_json(text, PROFILE_FINAL);
    cr_expect_eq(p->line_metric_count, 0);
    profile_free(p);
    free(text);
    json_decref(root);
}

/* --memory's arrays: absent reads as none and is written as none (other
 * profiles stay as they were); present, they come after line_metrics */
Test(profile_json, memory_is_optional) {
    json_t *root = sample_tree(sample_final, PROFILE_FINAL);
    char *text = dump(root);
    Profile *p = from_json(text, PROFILE_FINAL);
    cr_expect_eq(p->memory_count, 1);
    cr_expect_eq(p->memory_line_count, 6);
    cr_expect_eq(p->memories[0].bytes_per_step, -4096);
    cr_expect_eq(p->memories[0].oom_site, 2);
    char *again = to_json(p, PROFILE_FINAL);
    cr_expect(strstr(again, "\n\"line_metrics\":[\n") && strstr(again, "],\n\"memory\":[\n") &&
                  strstr(again, "],\n\"memory_lines\":[\n"),
              "memory after line_metrics:\n%s", again);
    free(again);
    profile_free(p);
    free(text);
    set_at(root, "memory", NULL);
    set_at(root, "memory_lines", NULL);
    text = dump(root);
    p = from_json(text, PROFILE_FINAL);
    cr_expect_eq(p->memory_count, 0);
    cr_expect_eq(p->memory_line_count, 0);
    again = to_json(p, PROFILE_FINAL);
    cr_expect_null(strstr(again, "\"memory\":"), "no memory written:\n%s", again);
    free(again);
    profile_free(p);
    free(text);
    json_decref(root);
}

static void refused_text(const char *text, const char *needle) { refused(text, strlen(text), PROFILE_FINAL, needle); }

/* what a schema cannot say about memory, the reader checks */
Test(profile_json, memory_rules_beyond_the_schema) {
    static const struct {
        const char *at, *value, *needle;
    } cases[] = {
        {"memory/0/samples/2/0", "10", "memory[0].samples[2]: earlier than the sample before it"},
        {"memory/0/steps_in_window", "11", "memory[0].steps_in_window: more than steps"},
        {"memory_lines/0/site", "99", "memory_lines[0].site"},
        {"memory_lines/0/memory", "1", "memory_lines[0].memory"},
        {"memory/0/process", "7", "memory[0].process"},
        {"memory_lines/0/freed/site", "99", "memory_lines[0].freed.site"},
        {"processes/0/steps/warmup_steps", "101", "processes[0].steps: more steps in its phases than steps"},
        {"processes/0/steps/idle_ns/steady", "-1", "processes[0].steps.idle_ns.steady: must be a non-negative integer"},
        {"gaps/1/phase", "\"steady\"", "gaps[1].phase: its process recorded no steps"},
        {"memory_lines/0/freed/bytes", "99999999", "memory_lines[0].freed.bytes: more than the line's bytes"},
        {"memory_lines/2/freed", "{\"site\":1,\"bytes\":5}", "memory_lines[2].freed: only a peak line has it"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *root = sample_tree(sample_final, PROFILE_FINAL);
        json_t *value = json_loads(cases[i].value, JSON_DECODE_ANY, NULL);
        set_at(root, cases[i].at, value);
        char *text = dump(root);
        refused_text(text, cases[i].needle);
        free(text);
        json_decref(root);
    }
}

/* text that is not JSON, or not JSON jansson accepts */
Test(profile_json, reader_refuses_bad_text) {
    refused("", 0, PROFILE_FINAL, "line 1, column 0:");
    refused_text("{", "line 1, column 1:");
    refused_text("[]", "not an advise profile: the top level is not an object");
    refused_text("\"advise-profile\"", "line 1");
    refused_text("{\"format\":\"advise-profile\",\n\"format\":\"advise-profile\"}", "duplicate object key");
    refused_text("{\"format\":\"advise-profile\",\n\"format\":\"advise-profile\"}", "line 2");
    refused_text("{\"format\":\"advise\\u0000-profile\"}", "line 1");
    refused_text("{\"format\":\"advise-profile\",\"version\":99999999999999999999}", "too big");
    refused_text("{\"format\":\"advise-profile\"} {}", "end of file expected");
    const char bad_utf8[] = "{\"format\":\"advise-\xff-profile\"}";
    refused(bad_utf8, sizeof bad_utf8 - 1, PROFILE_FINAL, "unable to decode byte 0xff");
    const char overlong[] = "{\"name\":\"\xc0\xaf\"}";
    refused(overlong, sizeof overlong - 1, PROFILE_FINAL, "unable to decode byte");
    const char nul_byte[] = "{\"format\":\"advise-profile\"}\0 trailing";
    refused(nul_byte, sizeof nul_byte - 1, PROFILE_FINAL, "line 1");

    size_t depth = 100000;
    char *deep = malloc(depth + 1);
    memset(deep, '[', depth);
    deep[depth] = '\0';
    refused(deep, depth, PROFILE_FINAL, "line 1");
    free(deep);

    char *error = NULL;
    cr_expect_null(profile_from_json(NULL, 0, PROFILE_FINAL, &error));
    cr_expect_not_null(error);
    free(error);
    /* NULL error pointers are fine too */
    cr_expect_null(profile_from_json("{", 1, PROFILE_FINAL, NULL));
    cr_expect_null(profile_to_json(NULL, PROFILE_FINAL, NULL));
}

/* ---- files -------------------------------------------------------------------------------------- */

Test(profile_files, write_is_atomic_and_readable) {
    char *dir = temp_dir();
    char *path = join(dir, "run.json");
    Profile *p = sample_final();
    char *error = NULL;
    mode_t old_mask = umask(077);
    bool written = profile_write_file(p, PROFILE_FINAL, path, &error);
    umask(old_mask);
    cr_assert(written, "%s", error ? error : "");
    cr_expect_null(error);
    struct stat st;
    cr_assert(stat(path, &st) == 0);
    cr_expect_eq(st.st_mode & 0777, 0644, "mode %o", st.st_mode & 0777);

    size_t length;
    char *text = read_all(path, &length);
    char *expected = to_json(p, PROFILE_FINAL);
    cr_expect_str_eq(text, expected);
    free(text);

    /* overwrite with another profile: replaced whole, nothing left beside it */
    Profile *q = sample_minimal();
    cr_assert(profile_write_file(q, PROFILE_FINAL, path, &error), "%s", error ? error : "");
    DIR *d = opendir(dir);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') {
            entries++;
            cr_expect_str_eq(e->d_name, "run.json", "left behind: %s", e->d_name);
        }
    closedir(d);
    cr_expect_eq(entries, 1);
    Profile *back = profile_read_file(path, PROFILE_FINAL, &error);
    cr_assert_not_null(back, "%s", error ? error : "");
    cr_expect_str_eq(back->name, "empty");
    profile_free(back);

    /* a profile the writer refuses leaves the old file alone */
    free(q->name);
    q->name = NULL;
    cr_expect(!profile_write_file(q, PROFILE_FINAL, path, &error));
    cr_assert_not_null(error);
    cr_expect(strncmp(error, path, strlen(path)) == 0 && strstr(error, ": name: missing"), "%s", error);
    free(error);
    error = NULL;
    back = profile_read_file(path, PROFILE_FINAL, NULL);
    cr_expect(back && strcmp(back->name, "empty") == 0);
    profile_free(back);

    /* a folder that does not exist */
    char *nowhere = join(dir, "missing/run.json");
    cr_expect(!profile_write_file(p, PROFILE_FINAL, nowhere, &error));
    cr_assert_not_null(error);
    cr_expect(strstr(error, "cannot create a file beside it") && strstr(error, nowhere), "%s", error);
    free(error);

    free(expected);
    free(nowhere);
    profile_free(p);
    profile_free(q);
    remove_tree(dir);
    free(dir);
    free(path);
}

static void read_refused(const char *path, const char *needle) {
    char *error = NULL;
    Profile *p = profile_read_file(path, PROFILE_FINAL, &error);
    cr_expect_null(p, "read %s", path);
    profile_free(p);
    cr_assert_not_null(error);
    cr_expect(strncmp(error, path, strlen(path)) == 0, "message \"%s\" does not name %s", error, path);
    cr_expect(strstr(error, needle) != NULL, "message \"%s\" lacks \"%s\"", error, needle);
    free(error);
}

Test(profile_files, read_refuses_what_is_not_a_profile_file) {
    char *dir = temp_dir();
    char *missing = join(dir, "missing.json");
    read_refused(missing, "No such file or directory");
    read_refused(dir, "not a regular file");
    char *fifo = join(dir, "pipe.json");
    cr_assert(mkfifo(fifo, 0644) == 0);
    read_refused(fifo, "not a regular file"); /* and it does not wait for a writer */
    /* a device, where the machine has a real one (some CI sandboxes make
     * /dev/null a plain file) */
    struct stat null_stat;
    if (stat("/dev/null", &null_stat) == 0 && S_ISCHR(null_stat.st_mode))
        read_refused("/dev/null", "not a regular file");

    char *big = join(dir, "big.json");
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(fd >= 0 && ftruncate(fd, (off_t)PROFILE_MAX_FILE_BYTES + 1) == 0);
    close(fd);
    read_refused(big, "67108865 bytes, more than the 67108864 a profile may have");

    char *broken = join(dir, "broken.json");
    const char *broken_text = "{\n\"format\": \"advise-profile\",\n\"version\": 1,,\n}";
    write_all(broken, broken_text, strlen(broken_text));
    read_refused(broken, "line 3, column");

    /* a link to a profile is read */
    Profile *p = sample_import();
    char *target = join(dir, "target.json"), *link = join(dir, "link.json");
    cr_assert(profile_write_file(p, PROFILE_FINAL, target, NULL));
    cr_assert(symlink(target, link) == 0);
    char *error = NULL;
    Profile *back = profile_read_file(link, PROFILE_FINAL, &error);
    cr_expect_not_null(back, "%s", error ? error : "");
    profile_free(back);
    profile_free(p);

    remove_tree(dir);
    free(dir);
    free(missing);
    free(fifo);
    free(big);
    free(broken);
    free(target);
    free(link);
}

/* ---- mutated files: a Profile or a message, never a crash ----------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void) { /* xorshift64*, fixed seed: the same variants every run */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1du;
}

static size_t below(size_t n) { return n ? (size_t)(rng() % n) : 0; }

/* Whatever the reader accepts, the writer accepts too and reads back the same. */
static void reader_survives(const char *text, size_t length, ProfileKind kind) {
    char *error = NULL;
    Profile *p = profile_from_json(text, length, kind, &error);
    cr_assert((p == NULL) != (error == NULL), "either a profile or a message");
    if (!p) {
        cr_assert(error[0] != '\0');
        free(error);
        return;
    }
    char *written = profile_to_json(p, kind, &error);
    cr_assert_not_null(written, "the reader accepted what the writer refuses: %s\n---\n%.*s", error ? error : "",
                       (int)length, text);
    Profile *again = profile_from_json(written, strlen(written), kind, &error);
    cr_assert_not_null(again, "the writer wrote what the reader refuses: %s", error ? error : "");
    char *rewritten = profile_to_json(again, kind, NULL);
    cr_assert_str_eq(rewritten, written);
    free(rewritten);
    free(written);
    profile_free(again);
    profile_free(p);
}

static void mutate_bytes(Profile *(*sample)(void), ProfileKind kind, int variants) {
    static const char *const tokens[] = {"null", "-1", "0", "1e400", "1.5", "\"", "[", "]", "{", "}", ",", ":",
                                         "18446744073709551616", "9223372036854775807", "\\u0000", "\\ud800",
                                         "\xc3", "\xff", "\"\":0,", "true", "[[[[[[", "\"..\""};
    Profile *p = sample();
    char *base = to_json(p, kind);
    profile_free(p);
    size_t base_length = strlen(base);
    char *buffer = malloc(base_length * 4 + 1024);
    for (int v = 0; v < variants; v++) {
        memcpy(buffer, base, base_length);
        size_t length = base_length;
        for (int m = 0, edits = 1 + (int)below(3); m < edits; m++) {
            size_t at = below(length), span = 1 + below(32);
            if (span > length - at) span = length - at;
            switch (below(6)) {
            case 0: /* flip a bit */
                if (length) buffer[at] ^= (char)(1u << below(8));
                break;
            case 1: /* a digit, quote or bracket elsewhere */
                if (length) buffer[at] = "0123456789\"[]{},:-.e\\ "[below(22)];
                break;
            case 2: /* truncate */
                length = at;
                break;
            case 3: /* delete a range */
                memmove(buffer + at, buffer + at + span, length - at - span);
                length -= span;
                break;
            case 4: /* duplicate a range, placed anywhere */
                if (length + span <= base_length * 4) {
                    size_t to = below(length + 1);
                    char copy[32];
                    memcpy(copy, buffer + at, span);
                    memmove(buffer + to + span, buffer + to, length - to);
                    memcpy(buffer + to, copy, span);
                    length += span;
                }
                break;
            default: { /* insert a token */
                const char *t = tokens[below(sizeof tokens / sizeof *tokens)];
                size_t n = strlen(t);
                if (length + n <= base_length * 4) {
                    memmove(buffer + at + n, buffer + at, length - at);
                    memcpy(buffer + at, t, n);
                    length += n;
                }
            }
            }
        }
        reader_survives(buffer, length, kind);
    }
    free(buffer);
    free(base);
}

Test(profile_fuzz, mutated_bytes) {
    mutate_bytes(sample_final, PROFILE_FINAL, 3000);
    mutate_bytes(sample_part, PROFILE_PART, 1500);
    mutate_bytes(sample_import, PROFILE_FINAL, 1500);
}

/* every value of the sample replaced by each of a set of awkward values, and
 * every key deleted */
static void collect_paths(json_t *node, const char *path, char ***paths, size_t *count) {
    if (json_is_object(node)) {
        const char *key;
        json_t *value;
        json_object_foreach(node, key, value) {
            char child[256];
            snprintf(child, sizeof child, "%s%s%s", path, *path ? "/" : "", key);
            collect_paths(value, child, paths, count);
        }
    } else if (json_is_array(node)) {
        for (size_t i = 0; i < json_array_size(node); i++) {
            char child[256];
            snprintf(child, sizeof child, "%s%s%zu", path, *path ? "/" : "", i);
            collect_paths(json_array_get(node, i), child, paths, count);
        }
    }
    if (*path) PUSH(*paths, *count, strdup(path));
}

static void mutate_values(Profile *(*sample)(void), ProfileKind kind) {
    static const char *const values[] = {"null", "-1", "0", "1", "2", "1.5", "\"\"", "\"x\"", "[]", "{}", "true",
                                         "4294967295", "4294967296", "2147483648", "9223372036854775807",
                                         "[1,1,1]", "\"/abs\"", "\"final\"", "\"part\""};
    json_t *root = sample_tree(sample, kind);
    char **paths = NULL;
    size_t count = 0;
    collect_paths(root, "", &paths, &count);
    json_decref(root);
    for (size_t i = 0; i < count; i++) {
        for (size_t v = 0; v <= sizeof values / sizeof *values; v++) {
            json_t *tree = sample_tree(sample, kind);
            set_at(tree, paths[i], v < sizeof values / sizeof *values ? json_loads(values[v], JSON_DECODE_ANY, NULL)
                                                                      : NULL);
            char *text = dump(tree);
            reader_survives(text, strlen(text), kind);
            free(text);
            json_decref(tree);
        }
        free(paths[i]);
    }
    free(paths);
}

Test(profile_fuzz, every_value_replaced) {
    mutate_values(sample_final, PROFILE_FINAL);
    mutate_values(sample_part, PROFILE_PART);
}

/* ---- the committed fixtures ------------------------------------------------------------------------ */
/* tests/fixtures/profiles/valid/ holds what the writer produces for the
 * samples above, and invalid/ what it produces with one rule broken; both are
 * regenerated with ADVISE_UPDATE_FIXTURES=1 and checked here to be up to date.
 * tests/profile_schema_check.mjs checks the schema accepts the first and
 * rejects the second. */

#define FIXTURES ADVISE_SOURCE_DIR "/tests/fixtures/profiles"

static bool updating_fixtures(void) {
    const char *update = getenv("ADVISE_UPDATE_FIXTURES");
    return update && strcmp(update, "1") == 0;
}

static void fixture_is(const char *path, const char *text) {
    if (updating_fixtures()) {
        write_all(path, text, strlen(text));
        return;
    }
    char *committed = read_all(path, NULL);
    cr_assert_not_null(committed, "%s is missing; create it with ADVISE_UPDATE_FIXTURES=1 build/test_profile_format",
                       path);
    cr_expect_str_eq(committed, text,
                     "%s is not what the writer produces now; if the change is meant, regenerate it with "
                     "ADVISE_UPDATE_FIXTURES=1 build/test_profile_format",
                     path);
    free(committed);
}

/* Caps are checked while the text is read, before jansson builds a tree of
 * it (profile_prescan.c): an array past its cap, or nesting deeper than a
 * profile has, is refused with the reader's own words (reader_enforces_caps
 * checks every cap). */
Test(profile_format, caps_are_checked_before_the_tree_is_built) {
    Profile *p = sample_minimal();
    char *text = to_json(p, PROFILE_FINAL);
    profile_free(p);
    /* 4,097 gaps where 4,096 are allowed */
    const char *gaps = strstr(text, "\"gaps\":[]");
    cr_assert_not_null(gaps, "%s", text);
    size_t head = (size_t)(gaps - text) + strlen("\"gaps\":[");
    const char *entry = "{\"process\":0,\"device\":0,\"start_ns\":0,\"duration_ns\":1,\"before_site\":null,"
                        "\"after_site\":null}";
    size_t n = PROFILE_MAX_GAPS + 1, entry_len = strlen(entry);
    char *big = malloc(strlen(text) + n * (entry_len + 1) + 1);
    cr_assert_not_null(big);
    memcpy(big, text, head);
    size_t at = head;
    for (size_t i = 0; i < n; i++) {
        if (i) big[at++] = ',';
        memcpy(big + at, entry, entry_len);
        at += entry_len;
    }
    strcpy(big + at, text + head);
    char *error = NULL;
    cr_expect_null(profile_from_json(big, strlen(big), PROFILE_FINAL, &error));
    cr_expect(error && strstr(error, "gaps: 65537 entries, more than the 65536 allowed"), "%s",
              error ? error : "(none)");
    free(error);
    free(big);

    /* deep nesting */
    char deep[200];
    size_t k = 0;
    deep[k++] = '{';
    memcpy(deep + k, "\"x\":", 4);
    k += 4;
    for (int i = 0; i < 40; i++) deep[k++] = '[';
    for (int i = 0; i < 40; i++) deep[k++] = ']';
    deep[k++] = '}';
    deep[k] = '\0';
    error = NULL;
    cr_expect_null(profile_from_json(deep, k, PROFILE_FINAL, &error));
    cr_expect(error && strstr(error, "line 1, column 37: nested more than 32 levels deep"), "%s",
              error ? error : "(none)");
    free(error);

    /* malformed text: the scan stops at its end and jansson says what is wrong */
    const char *broken[] = {"{\"ops\":[\"unterminated", "{\"ops\":[\"\\", "]]]]", "{\"a\":\"\\\"", ""};
    for (size_t i = 0; i < sizeof broken / sizeof *broken; i++) {
        error = NULL;
        cr_expect_null(profile_from_json(broken[i], strlen(broken[i]), PROFILE_FINAL, &error));
        cr_expect_not_null(error, "%s", broken[i]);
        free(error);
    }
    free(text);
}

/* what no JSON Schema can say, the checker does */
Test(profile_format, a_calibration_with_more_traced_launches_than_launches_is_refused) {
    Profile *p = sample_final();
    p->processes[0].calibration.traced_launches = p->processes[0].calibration.launches + 1;
    char *error = NULL;
    cr_expect_not(profile_check(p, PROFILE_FINAL, &error));
    cr_expect(error && strstr(error, "processes[0].calibration: more traced or untraced launches than launches"),
              "%s", error ? error : "(no error)");
    free(error);
    profile_free(p);
}

Test(profile_fixtures, valid_profiles_are_the_writers_output) {
    static const struct {
        const char *name;
        Profile *(*sample)(void);
    } valid[] = {
        {"final-full.json", sample_final},
        {"final-minimal.json", sample_minimal},
        {"final-import.json", sample_import},
    };
    for (size_t i = 0; i < sizeof valid / sizeof *valid; i++) {
        char *path = join(FIXTURES "/valid", valid[i].name);
        Profile *p = valid[i].sample();
        char *text = to_json(p, PROFILE_FINAL);
        fixture_is(path, text);
        char *error = NULL;
        Profile *read = profile_read_file(path, PROFILE_FINAL, &error);
        cr_expect_not_null(read, "%s", error ? error : "");
        free(error);
        profile_free(read);
        profile_free(p);
        free(text);
        free(path);
    }
}

typedef struct {
    const char *name;
    Profile *(*sample)(void);
    Mutation change;
} BrokenFixture;

static const BrokenFixture BROKEN[] = {
    {"version-2.json", sample_minimal, {"version", "2", "upgrade advise"}},
    {"kind-part.json", sample_minimal, {"kind", "\"part\"", "kind: a \"part\" profile"}},
    {"format-other.json", sample_minimal, {"format", "\"chrome-trace\"", "format: not an advise profile"}},
    {"missing-dropped.json", sample_minimal, {"dropped", NULL, "dropped: missing"}},
    {"negative-pid.json", sample_minimal, {"processes/0/pid", "-1", "processes[0].pid: must be a non-negative"}},
    {"fractional-integer.json", sample_minimal, {"processes/0/wall_ns", "1.5", "processes[0].wall_ns: must be"}},
    {"rank-string.json", sample_minimal, {"processes/0/rank", "\"0\"", "processes[0].rank: must be"}},
    {"created-not-utc.json", sample_minimal, {"created", "\"2026-11-30T16:01:02+01:00\"", "created:"}},
    {"source-unknown.json", sample_minimal, {"source", "\"nsys\"", "source: \"nsys\" is not one of"}},
    {"grid-zero.json", sample_import, {"kernels/0/grid/1", "0", "kernels[0].grid[1]: must be a positive integer"}},
    {"grid-two-numbers.json", sample_import, {"kernels/0/grid", "[64,8]", "kernels[0].grid: must be an array of 3"}},
    {"registers-too-big.json", sample_import, {"kernels/0/registers", "4294967296", "kernels[0].registers: 4294967296"}},
    {"path-parent.json", sample_import, {"files/0/path", "\"../model.py\"", "files[0].path: \"../model.py\" is not"}},
    {"path-absolute.json", sample_import, {"files/0/path", "\"/src/pkg/model.py\"", "files[0].path:"}},
    {"path-dot.json", sample_import, {"files/0/path", "\"src/./model.py\"", "files[0].path:"}},
    {"path-backslash.json", sample_import, {"files/0/path", "\"src\\\\model.py\"", "files[0].path:"}},
    {"sha256-uppercase.json", sample_import,
     {"files/0/sha256", "\"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855\"", "files[0].sha256:"}},
    {"site-line-zero.json", sample_import, {"sites/1/line", "0", "sites[1].line: must be 1 or more"}},
    {"site-unresolved.json", sample_import, {"sites/0/file", "null", "sites[0]: not resolved to a source line"}},
    {"site-with-frames.json", sample_import,
     {"sites/0/frames", "[{\"module\":\"/usr/bin/python3\",\"address\":4096}]", "sites[0].frames: a final profile"}},
    {"sync-kind-unknown.json", sample_import, {"ops/1/sync", "\"barrier\"", "ops[1].sync: must be one of"}},
    {"launch-without-kernel.json", sample_import, {"ops/0/kernel", NULL, "ops[0].kernel: missing"}},
    {"stats-count-zero.json", sample_import,
     {"ops/1/stats", "{\"count\":0,\"total_ns\":5,\"min_ns\":0,\"median_ns\":0,\"max_ns\":0}", "ops[1].stats: count is 0"}},
    {"stats-missing-median.json", sample_import, {"kernels/0/stats/median_ns", NULL, "kernels[0].stats.median_ns: missing"}},
    {"timeline-without-device.json", sample_import, {"timelines/0/device", "null", "timelines[0].device: must be"}},
    {"line-metrics-line-zero.json", sample_final, {"line_metrics/0/line", "0", "line_metrics[0].line: must be 1"}},
    {"line-metrics-without-ideal.json", sample_final,
     {"line_metrics/1/global_sectors_ideal", NULL, "line_metrics[1].global_sectors_ideal: missing"}},
    {"calibration-every-zero.json", sample_final,
     {"processes/0/calibration/trace_every", "0", "processes[0].calibration.trace_every: must be a positive"}},
    {"gap-weight-zero.json", sample_final, {"gaps/0/weight", "0", "gaps[0].weight: must be a positive"}},
    {"line-metrics-not-an-array.json", sample_minimal, {"line_metrics", "{}", "line_metrics: must be an array"}},
    {"memory-sample-two-numbers.json", sample_final,
     {"memory/0/samples/1", "[1000,5]", "memory[0].samples[1]: must be [time_ns, allocated, reserved]"}},
    {"memory-window-not-boolean.json", sample_final, {"memory/0/window_complete", "\"yes\"", "memory[0].window_complete"}},
    {"memory-line-kind-unknown.json", sample_final, {"memory_lines/0/kind", "\"cache\"", "memory_lines[0].kind: must be"}},
    {"memory-line-bytes-negative.json", sample_final, {"memory_lines/0/bytes", "-1", "memory_lines[0].bytes: must be"}},
    {"steps-count-zero.json", sample_final, {"processes/0/steps/count", "0", "processes[0].steps.count: must be a positive"}},
    {"steps-activities-null.json", sample_final, {"processes/0/steps/activities", "null", "processes[0].steps.activities: must be an object"}},
    {"gap-phase-unknown.json", sample_final, {"gaps/0/phase", "\"eval\"", "gaps[0].phase: must be one of"}},
    {"steady-count-negative.json", sample_final, {"ops/0/steady_count", "-1", "ops[0].steady_count: must be"}},
    {"memory-line-freed-bytes-zero.json", sample_final,
     {"memory_lines/0/freed/bytes", "0", "memory_lines[0].freed.bytes: must be a positive"}},
    {"memory-line-freed-site-null.json", sample_final,
     {"memory_lines/0/freed/site", "null", "memory_lines[0].freed.site: must be an index"}},
    {"memory-oom-not-an-object.json", sample_final, {"memory/0/oom", "5", "memory[0].oom: must be an object or null"}},
    {"memory-source-unknown.json", sample_final, {"memory/0/source", "\"nvml\"", "memory[0].source: must be one of"}},
};

Test(profile_fixtures, invalid_profiles_are_refused) {
    for (size_t i = 0; i < sizeof BROKEN / sizeof *BROKEN; i++) {
        json_t *root = sample_tree(BROKEN[i].sample, PROFILE_FINAL);
        const Mutation *m = &BROKEN[i].change;
        set_at(root, m->path, m->value ? json_loads(m->value, JSON_DECODE_ANY, NULL) : NULL);
        char *text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        size_t n = strlen(text);
        text = realloc(text, n + 2);
        strcpy(text + n, "\n");
        char *path = join(FIXTURES "/invalid", BROKEN[i].name);
        fixture_is(path, text);
        read_refused(path, m->needle);
        free(path);
        free(text);
        json_decref(root);
    }
}

/* nothing else lies in the fixture folders, so that the schema check sees exactly these */
Test(profile_fixtures, no_stray_fixtures) {
    if (updating_fixtures()) return;
    const char *folders[] = {FIXTURES "/valid", FIXTURES "/invalid"};
    for (int f = 0; f < 2; f++) {
        DIR *d = opendir(folders[f]);
        cr_assert_not_null(d, "%s", folders[f]);
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.') continue;
            bool known = false;
            if (f == 0)
                known = strcmp(e->d_name, "final-full.json") == 0 || strcmp(e->d_name, "final-minimal.json") == 0 ||
                        strcmp(e->d_name, "final-import.json") == 0;
            for (size_t i = 0; f == 1 && i < sizeof BROKEN / sizeof *BROKEN; i++)
                known = known || strcmp(e->d_name, BROKEN[i].name) == 0;
            cr_expect(known, "%s/%s is made by no test", folders[f], e->d_name);
        }
        closedir(d);
    }
}
