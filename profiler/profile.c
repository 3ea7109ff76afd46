/* The profile model: allocation, the appending helpers (which deduplicate
 * files and sites through hash indexes kept beside the Profile), the names of
 * the enums, the path rule, merging parts and hashing the source files. */
#include "profiler/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/base/growable.h"
#include "analysis/base/hash_index.h"
#include "profiler/profile_internal.h"
#include "profiler/sha256.h"
#include "analysis/base/text_format.h"

/* ---- the box around a Profile -------------------------------------------------
 * profile_new hands out the Profile at the start of a larger allocation that
 * also holds what makes the adding helpers fast: spare room at the end of the
 * arrays they grow, and indexes of the files and sites already there. Both are
 * checked against the Profile before use (an array that someone else replaced
 * has no spare room, and an index of an array that moved or shrank is built
 * again), so code that fills the arrays directly stays safe. */

typedef struct {
    void *array;    /* the allocation we made, or NULL */
    size_t capacity;
} Room;

typedef struct {
    HashIndex index;
    const void *array;  /* the array the index describes */
    size_t count;       /* its first count entries are indexed */
} ArrayIndex;

typedef struct {
    Profile profile;    /* first, so that a Profile * is the box's address */
    Room process_room, file_room, site_room;
    ArrayIndex file_index, site_index;
} ProfileBox;

static ProfileBox *box_of(Profile *p) { return (ProfileBox *)p; }

Profile *profile_new(void) {
    ProfileBox *box = calloc(1, sizeof *box);
    return box ? &box->profile : NULL;
}

static void free_stringv(char **v, size_t count) {
    for (size_t i = 0; i < count; i++) free(v[i]);
    free(v);
}

static void free_site(ProfSite *s) {
    free(s->function);
    for (size_t f = 0; f < s->frame_count; f++) free(s->frames[f].module);
    free(s->frames);
}

void profile_free(Profile *p) {
    if (!p) return;
    free(p->name);
    free(p->source);
    free(p->created);
    free(p->tool);
    free_stringv(p->command, p->command_count);
    for (size_t i = 0; i < p->process_count; i++) free(p->processes[i].error);
    free(p->processes);
    for (size_t i = 0; i < p->device_count; i++) free(p->devices[i].name);
    free(p->devices);
    for (size_t i = 0; i < p->file_count; i++) {
        free(p->files[i].path);
        free(p->files[i].sha256);
    }
    free(p->files);
    for (size_t i = 0; i < p->site_count; i++) free_site(&p->sites[i]);
    free(p->sites);
    for (size_t i = 0; i < p->kernel_count; i++) free(p->kernels[i].name);
    free(p->kernels);
    free(p->ops);
    for (size_t i = 0; i < p->api_count; i++) free(p->apis[i].name);
    free(p->apis);
    for (size_t i = 0; i < p->overhead_count; i++) free(p->overheads[i].kind);
    free(p->overheads);
    free(p->timelines);
    free(p->gaps);
    for (size_t i = 0; i < p->line_metric_count; i++) free(p->line_metrics[i].kernel);
    free(p->line_metrics);
    for (size_t i = 0; i < p->memory_count; i++) free(p->memories[i].samples);
    free(p->memories);
    free(p->memory_lines);
    ProfileBox *box = box_of(p);
    hash_index_free(&box->file_index.index);
    hash_index_free(&box->site_index.index);
    free(box);
}

/* Makes room for extra more entries after count in *array; room remembers the
 * capacity of arrays we allocated, which double (from 8); without a room the
 * array gets exactly what it needs (arrays that a merge fills once). False
 * when out of memory. */
static bool reserve(void **array, size_t count, size_t extra, size_t size, Room *room) {
    size_t capacity = room && *array && *array == room->array ? room->capacity : count;
    if (capacity < count) capacity = count; /* grown in place by other code: no room we know of */
    if (extra <= capacity - count) return true;
    if (extra > (size_t)INT_MAX - count) return false; /* positions are ints */
    if (room) {
        if (!array_reserve_n(array, count, extra, &capacity, size, 8)) return false;
        *room = (Room){*array, capacity};
        return true;
    }
    void *bigger = realloc(*array, (count + extra) * size);
    if (!bigger) return false;
    *array = bigger;
    return true;
}

#define RESERVE(array, count, extra, room) reserve((void **)&(array), (count), (extra), sizeof *(array), (room))

static char *copy_string(const char *s, bool *ok) {
    if (!s) return NULL;
    char *copy = strdup(s);
    if (!copy) *ok = false;
    return copy;
}

/* ---- identity of files and sites --------------------------------------------- */

uint64_t prof_file_key_hash(const char *path) { return hash_string(hash_start(), path); }

uint64_t prof_site_key_hash(const ProfSite *s) {
    uint64_t h = hash_u64(hash_start(), (uint64_t)(int64_t)s->file);
    if (s->file >= 0) {
        h = hash_u64(h, s->line);
        h = hash_u64(h, s->function_level);
        return hash_string(h, s->function);
    }
    h = hash_u64(h, s->frame_count);
    for (size_t f = 0; f < s->frame_count; f++) {
        h = hash_string(h, s->frames[f].module);
        h = hash_u64(h, s->frames[f].address);
    }
    return h;
}

static bool same_string(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

bool prof_site_same_key(const ProfSite *a, const ProfSite *b) {
    if (a->file != b->file) return false;
    if (a->file >= 0)
        return a->line == b->line && a->function_level == b->function_level && same_string(a->function, b->function);
    if (a->frame_count != b->frame_count) return false;
    for (size_t f = 0; f < a->frame_count; f++)
        if (a->frames[f].address != b->frames[f].address || !same_string(a->frames[f].module, b->frames[f].module))
            return false;
    return true;
}

bool prof_fail(char **error, const char *format, ...) {
    if (!error || *error) return false;
    va_list ap;
    va_start(ap, format);
    *error = format_string_v(format, ap);
    va_end(ap);
    return false;
}

/* ---- the adding helpers ----------------------------------------------------------- */

/* Brings the file index up to date with p->files. False when out of memory. */
static bool sync_file_index(Profile *p) {
    ArrayIndex *ix = &box_of(p)->file_index;
    if (ix->array != p->files || ix->count > p->file_count) {
        hash_index_free(&ix->index);
        ix->array = p->files;
        ix->count = 0;
    }
    for (; ix->count < p->file_count; ix->count++)
        if (!hash_index_add(&ix->index, prof_file_key_hash(p->files[ix->count].path), (int)ix->count)) return false;
    return true;
}

static bool sync_site_index(Profile *p) {
    ArrayIndex *ix = &box_of(p)->site_index;
    if (ix->array != p->sites || ix->count > p->site_count) {
        hash_index_free(&ix->index);
        ix->array = p->sites;
        ix->count = 0;
    }
    for (; ix->count < p->site_count; ix->count++)
        if (!hash_index_add(&ix->index, prof_site_key_hash(&p->sites[ix->count]), (int)ix->count)) return false;
    return true;
}

int profile_add_file(Profile *p, const char *path) {
    if (!p || !path || !sync_file_index(p)) return -1;
    ArrayIndex *ix = &box_of(p)->file_index;
    uint64_t hash = prof_file_key_hash(path);
    size_t cursor = 0;
    for (int i; (i = hash_index_next(&ix->index, hash, &cursor)) >= 0;)
        if (same_string(p->files[i].path, path)) return i;

    char *copy = strdup(path);
    if (!copy || !RESERVE(p->files, p->file_count, 1, &box_of(p)->file_room)) {
        free(copy);
        return -1;
    }
    ix->array = p->files; /* the entries indexed so far moved with the array */
    int position = (int)p->file_count;
    if (!hash_index_add(&ix->index, hash, position)) {
        free(copy);
        return -1;
    }
    p->files[p->file_count++] = (ProfFile){copy, NULL};
    ix->count = p->file_count;
    return position;
}

/* Deep copy of a site's strings and frames into *out. */
static bool copy_site(ProfSite *out, const ProfSite *key) {
    bool ok = true;
    *out = (ProfSite){key->file, key->line, copy_string(key->function, &ok), key->function_level, NULL, 0};
    if (ok && key->frame_count > 0) {
        out->frames = calloc(key->frame_count, sizeof *out->frames);
        if (!out->frames) ok = false;
        for (size_t f = 0; ok && f < key->frame_count; f++) {
            out->frames[f] = (ProfFrame){copy_string(key->frames[f].module, &ok), key->frames[f].address};
            out->frame_count = f + 1;
        }
    }
    if (!ok) free_site(out);
    return ok;
}

/* The index of the site with key's identity, added (copied) when new. */
static int add_site(Profile *p, const ProfSite *key) {
    if (!p || (key->frame_count > 0 && !key->frames) || !sync_site_index(p)) return -1;
    ArrayIndex *ix = &box_of(p)->site_index;
    uint64_t hash = prof_site_key_hash(key);
    size_t cursor = 0;
    for (int i; (i = hash_index_next(&ix->index, hash, &cursor)) >= 0;)
        if (prof_site_same_key(&p->sites[i], key)) return i;

    ProfSite copy;
    if (!copy_site(&copy, key)) return -1;
    if (!RESERVE(p->sites, p->site_count, 1, &box_of(p)->site_room)) {
        free_site(&copy);
        return -1;
    }
    ix->array = p->sites;
    int position = (int)p->site_count;
    if (!hash_index_add(&ix->index, hash, position)) {
        free_site(&copy);
        return -1;
    }
    p->sites[p->site_count++] = copy;
    ix->count = p->site_count;
    return position;
}

int profile_add_site(Profile *p, int file, uint32_t line, const char *function) {
    return add_site(p, &(ProfSite){file, line, (char *)function, false, NULL, 0});
}

int profile_add_function_site(Profile *p, int file, uint32_t line, const char *function) {
    return add_site(p, &(ProfSite){file, line, (char *)function, true, NULL, 0});
}

int profile_add_native_site(Profile *p, const ProfFrame *frames, size_t count) {
    if (count == 0 || !frames) return -1;
    return add_site(p, &(ProfSite){-1, 0, NULL, false, (ProfFrame *)frames, count});
}

int profile_add_process(Profile *p, const ProfProcess *proc) {
    if (!p || !proc || !RESERVE(p->processes, p->process_count, 1, &box_of(p)->process_room)) return -1;
    bool ok = true;
    ProfProcess copy = *proc;
    copy.error = copy_string(proc->error, &ok);
    if (!ok) return -1;
    p->processes[p->process_count] = copy;
    return (int)p->process_count++;
}

const char *profile_process_error_first(const Profile *p, size_t i) {
    const char *err = p->processes[i].error;
    for (size_t j = 0; err && j < i; j++)
        if (p->processes[j].error && strcmp(p->processes[j].error, err) == 0) return NULL;
    return err;
}

/* ---- names ---------------------------------------------------------------------- */

static const char *const OP_KIND_NAMES[PROF_OP_KIND_COUNT] = {"launch", "memcpy", "memset", "sync", "alloc"};
static const char *const COPY_KIND_NAMES[PROF_COPY_KIND_COUNT] = {"unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
static const char *const MEM_KIND_NAMES[PROF_MEM_KIND_COUNT] = {"unknown", "pageable", "pinned", "device", "managed"};
static const char *const SYNC_KIND_NAMES[PROF_SYNC_KIND_COUNT] = {"unknown", "event", "stream_wait_event", "stream",
                                                                  "context"};

static const char *name_of(const char *const *names, int count, int k) { return k >= 0 && k < count ? names[k] : NULL; }

static int index_of(const char *const *names, int count, const char *s) {
    if (!s) return -1;
    for (int k = 0; k < count; k++)
        if (strcmp(names[k], s) == 0) return k;
    return -1;
}

const char *prof_op_kind_name(ProfOpKind k) { return name_of(OP_KIND_NAMES, PROF_OP_KIND_COUNT, (int)k); }

bool prof_op_has_critical(ProfOpKind k) {
    return k == PROF_OP_LAUNCH || k == PROF_OP_MEMCPY || k == PROF_OP_MEMSET;
}
const char *prof_copy_kind_name(ProfCopyKind k) { return name_of(COPY_KIND_NAMES, PROF_COPY_KIND_COUNT, (int)k); }
const char *prof_mem_kind_name(ProfMemKind k) { return name_of(MEM_KIND_NAMES, PROF_MEM_KIND_COUNT, (int)k); }
const char *prof_sync_kind_name(ProfSyncKind k) { return name_of(SYNC_KIND_NAMES, PROF_SYNC_KIND_COUNT, (int)k); }
static const char *const PHASE_NAMES[PROF_PHASE_COUNT] = {NULL, "first", "warmup", "steady", "slow", "after"};
const char *prof_phase_name(ProfPhase phase) {
    return (unsigned)phase < PROF_PHASE_COUNT ? PHASE_NAMES[phase] : NULL;
}
int prof_phase_from_name(const char *s) {
    for (int i = 1; s && i < PROF_PHASE_COUNT; i++)
        if (strcmp(PHASE_NAMES[i], s) == 0) return i;
    return -1;
}

static const char *const MEM_LINE_KIND_NAMES[PROF_MEM_LINE_KIND_COUNT] = {"peak", "growth", "allocs", "oom", "kept"};
const char *prof_mem_line_kind_name(ProfMemLineKind k) {
    return name_of(MEM_LINE_KIND_NAMES, PROF_MEM_LINE_KIND_COUNT, (int)k);
}
int prof_mem_line_kind_from_name(const char *s) { return index_of(MEM_LINE_KIND_NAMES, PROF_MEM_LINE_KIND_COUNT, s); }
static const char *const MEM_SOURCE_NAMES[PROF_MEM_SOURCE_COUNT] = {"torch", "cupti"};
const char *prof_mem_source_name(ProfMemSource s) { return name_of(MEM_SOURCE_NAMES, PROF_MEM_SOURCE_COUNT, (int)s); }
int prof_mem_source_from_name(const char *s) { return index_of(MEM_SOURCE_NAMES, PROF_MEM_SOURCE_COUNT, s); }
int prof_op_kind_from_name(const char *s) { return index_of(OP_KIND_NAMES, PROF_OP_KIND_COUNT, s); }
int prof_copy_kind_from_name(const char *s) { return index_of(COPY_KIND_NAMES, PROF_COPY_KIND_COUNT, s); }
int prof_mem_kind_from_name(const char *s) { return index_of(MEM_KIND_NAMES, PROF_MEM_KIND_COUNT, s); }
int prof_sync_kind_from_name(const char *s) { return index_of(SYNC_KIND_NAMES, PROF_SYNC_KIND_COUNT, s); }

/* ---- paths ---------------------------------------------------------------------------- */

bool profile_path_ok(const char *path) {
    if (!path || !*path || path[0] == '/') return false;
    size_t length = 0;
    const char *component = path;
    for (const char *c = path;; c++) {
        if (*c == '/' || *c == '\0') {
            size_t n = (size_t)(c - component);
            if (n == 0 || (n == 1 && component[0] == '.') || (n == 2 && component[0] == '.' && component[1] == '.'))
                return false;
            if (*c == '\0') break;
            component = c + 1;
        } else if (*c == '\\' || (unsigned char)*c < 0x20 || *c == 0x7f) {
            return false;
        }
        if (++length > PROFILE_MAX_STRING) return false;
    }
    return true;
}

/* ---- merging parts ----------------------------------------------------------------------- */

/* An index of src mapped into dst: a valid one through map (or by adding
 * base), -1 stays -1, and anything else stays out of range so that the
 * writer still refuses it. */
static int remap(int i, size_t count, const int *map, size_t base) {
    if (i == -1) return -1;
    if (i < 0 || (size_t)i >= count) return INT_MAX;
    return map ? map[i] : (int)(base + (size_t)i);
}

/* dropped counts stop at the largest integer a profile may hold */
static uint64_t add_saturating(uint64_t a, uint64_t b) {
    const uint64_t max = (uint64_t)INT64_MAX;
    return a >= max || b >= max || a + b > max ? max : a + b;
}

static bool copy_header(Profile *dst, const Profile *src) {
    bool ok = true;
    if (!dst->name) dst->name = copy_string(src->name, &ok);
    if (!dst->source) dst->source = copy_string(src->source, &ok);
    if (!dst->created) dst->created = copy_string(src->created, &ok);
    if (!dst->tool) dst->tool = copy_string(src->tool, &ok);
    if (ok && dst->command_count == 0 && src->command_count > 0) {
        size_t n = src->command_count;
        char **command = calloc(n, sizeof *command);
        if (!command) return false;
        for (size_t i = 0; ok && i < n; i++) command[i] = copy_string(src->command[i], &ok);
        if (!ok) {
            free_stringv(command, n);
            return false;
        }
        free(dst->command);
        dst->command = command;
        dst->command_count = n;
    }
    dst->dropped_kernels = add_saturating(dst->dropped_kernels, src->dropped_kernels);
    dst->dropped_ops = add_saturating(dst->dropped_ops, src->dropped_ops);
    dst->dropped_sites = add_saturating(dst->dropped_sites, src->dropped_sites);
    return ok;
}

/* Files and sites of src, deduplicated into dst; file_map and site_map get
 * where each went. */
static bool merge_files_and_sites(Profile *dst, const Profile *src, int *file_map, int *site_map) {
    size_t nfiles = src->file_count, nsites = src->site_count;
    for (size_t i = 0; i < nfiles; i++) {
        size_t before = dst->file_count;
        int at = profile_add_file(dst, src->files[i].path);
        if (at < 0) return false;
        file_map[i] = at;
        ProfFile *f = &dst->files[at];
        if (src->files[i].sha256 && ((size_t)at >= before || !f->sha256)) {
            char *sha = strdup(src->files[i].sha256);
            if (!sha) return false;
            free(f->sha256);
            f->sha256 = sha;
        }
    }
    for (size_t i = 0; i < nsites; i++) {
        ProfSite key = src->sites[i];
        if (key.file >= 0) key.frame_count = 0; /* a resolved site is known by its line */
        key.file = remap(key.file, nfiles, file_map, 0);
        if ((site_map[i] = add_site(dst, &key)) < 0) return false;
    }
    return true;
}

bool profile_append(Profile *dst, const Profile *src) {
    if (!dst || !src) return false;
    /* counts first: when src is dst, its arrays grow while we copy */
    size_t nproc = src->process_count, ndev = src->device_count, nfiles = src->file_count;
    size_t nsites = src->site_count, nkern = src->kernel_count, nops = src->op_count;
    size_t napis = src->api_count, nover = src->overhead_count, ntl = src->timeline_count, ngaps = src->gap_count;
    size_t nlines = src->line_metric_count, nmem = src->memory_count, nmemlines = src->memory_line_count;
    size_t mbase = dst->memory_count;
    size_t pbase = dst->process_count, dbase = dst->device_count, kbase = dst->kernel_count;

    if (!copy_header(dst, src)) return false;

    if (!RESERVE(dst->processes, dst->process_count, nproc, &box_of(dst)->process_room)) return false;
    for (size_t i = 0; i < nproc; i++) {
        bool ok = true;
        ProfProcess proc = src->processes[i];
        proc.error = copy_string(proc.error, &ok);
        if (!ok) return false;
        dst->processes[dst->process_count++] = proc;
    }

    if (!RESERVE(dst->devices, dst->device_count, ndev, NULL)) return false;
    for (size_t i = 0; i < ndev; i++) {
        bool ok = true;
        ProfDevice dev = src->devices[i];
        dev.process = remap(dev.process, nproc, NULL, pbase);
        dev.name = copy_string(dev.name, &ok);
        if (!ok) return false;
        dst->devices[dst->device_count++] = dev;
    }

    int *file_map = malloc((nfiles ? nfiles : 1) * sizeof *file_map);
    int *site_map = malloc((nsites ? nsites : 1) * sizeof *site_map);
    bool merged = file_map && site_map && merge_files_and_sites(dst, src, file_map, site_map);
    for (size_t i = 0; merged && i < nlines; i++) {
        ProfLineMetrics m = src->line_metrics[i];
        m.file = remap(m.file, nfiles, file_map, 0);
        merged = profile_add_line_metrics(dst, &m) >= 0;
    }
    free(file_map);
    if (!merged) {
        free(site_map);
        return false;
    }

    bool ok = RESERVE(dst->kernels, dst->kernel_count, nkern, NULL);
    for (size_t i = 0; ok && i < nkern; i++) {
        ProfKernel k = src->kernels[i];
        k.process = remap(k.process, nproc, NULL, pbase);
        k.device = remap(k.device, ndev, NULL, dbase);
        k.name = copy_string(k.name, &ok);
        if (ok) dst->kernels[dst->kernel_count++] = k;
    }

    ok = ok && RESERVE(dst->ops, dst->op_count, nops, NULL);
    for (size_t i = 0; ok && i < nops; i++) {
        ProfOp op = src->ops[i];
        op.process = remap(op.process, nproc, NULL, pbase);
        op.site = remap(op.site, nsites, site_map, 0);
        op.kernel = op.kind == PROF_OP_LAUNCH ? remap(op.kernel, nkern, NULL, kbase) : -1;
        dst->ops[dst->op_count++] = op;
    }

    ok = ok && RESERVE(dst->apis, dst->api_count, napis, NULL);
    for (size_t i = 0; ok && i < napis; i++) {
        ProfApi a = src->apis[i];
        a.process = remap(a.process, nproc, NULL, pbase);
        a.name = copy_string(a.name, &ok);
        if (ok) dst->apis[dst->api_count++] = a;
    }

    ok = ok && RESERVE(dst->overheads, dst->overhead_count, nover, NULL);
    for (size_t i = 0; ok && i < nover; i++) {
        ProfOverhead o = src->overheads[i];
        o.process = remap(o.process, nproc, NULL, pbase);
        o.kind = copy_string(o.kind, &ok);
        if (ok) dst->overheads[dst->overhead_count++] = o;
    }

    ok = ok && RESERVE(dst->timelines, dst->timeline_count, ntl, NULL);
    for (size_t i = 0; ok && i < ntl; i++) {
        ProfTimeline t = src->timelines[i];
        t.process = remap(t.process, nproc, NULL, pbase);
        t.device = remap(t.device, ndev, NULL, dbase);
        dst->timelines[dst->timeline_count++] = t;
    }

    ok = ok && RESERVE(dst->gaps, dst->gap_count, ngaps, NULL);
    for (size_t i = 0; ok && i < ngaps; i++) {
        ProfGap g = src->gaps[i];
        g.process = remap(g.process, nproc, NULL, pbase);
        g.device = remap(g.device, ndev, NULL, dbase);
        g.before_site = remap(g.before_site, nsites, site_map, 0);
        g.after_site = remap(g.after_site, nsites, site_map, 0);
        dst->gaps[dst->gap_count++] = g;
    }

    ok = ok && RESERVE(dst->memories, dst->memory_count, nmem, NULL);
    for (size_t i = 0; ok && i < nmem; i++) {
        ProfMemory m = src->memories[i];
        m.process = remap(m.process, nproc, NULL, pbase);
        m.oom_site = remap(m.oom_site, nsites, site_map, 0);
        m.samples = NULL;
        if (m.sample_count) {
            m.samples = malloc(m.sample_count * sizeof *m.samples);
            ok = m.samples != NULL;
            if (ok) memcpy(m.samples, src->memories[i].samples, m.sample_count * sizeof *m.samples);
        }
        if (ok) dst->memories[dst->memory_count++] = m;
    }
    ok = ok && RESERVE(dst->memory_lines, dst->memory_line_count, nmemlines, NULL);
    for (size_t i = 0; ok && i < nmemlines; i++) {
        ProfMemLine l = src->memory_lines[i];
        l.memory = remap(l.memory, nmem, NULL, mbase);
        l.site = remap(l.site, nsites, site_map, 0);
        if (l.freed_bytes) l.freed_site = remap(l.freed_site, nsites, site_map, 0);
        dst->memory_lines[dst->memory_line_count++] = l;
    }
    free(site_map);
    return ok;
}

int profile_add_line_metrics(Profile *p, const ProfLineMetrics *m) {
    /* few entries per profile (lines of a handful of kernels): a linear search is enough */
    for (size_t i = 0; i < p->line_metric_count; i++) {
        ProfLineMetrics *e = &p->line_metrics[i];
        if (e->file != m->file || e->line != m->line || !same_string(e->kernel, m->kernel)) continue;
        e->launches = add_saturating(e->launches, m->launches);
        e->instructions = add_saturating(e->instructions, m->instructions);
        e->global_sectors = add_saturating(e->global_sectors, m->global_sectors);
        e->global_sectors_ideal = add_saturating(e->global_sectors_ideal, m->global_sectors_ideal);
        e->shared_wavefronts = add_saturating(e->shared_wavefronts, m->shared_wavefronts);
        e->shared_wavefronts_ideal = add_saturating(e->shared_wavefronts_ideal, m->shared_wavefronts_ideal);
        e->local_sectors = add_saturating(e->local_sectors, m->local_sectors);
        e->inlined_instructions = add_saturating(e->inlined_instructions, m->inlined_instructions);
        return (int)i;
    }
    if (!RESERVE(p->line_metrics, p->line_metric_count, 1, NULL)) return -1;
    bool ok = true;
    ProfLineMetrics copy = *m;
    copy.kernel = copy_string(m->kernel, &ok);
    if (!ok) return -1;
    p->line_metrics[p->line_metric_count] = copy;
    return (int)p->line_metric_count++;
}

/* ---- hashing the source files ----------------------------------------------------------- */

/* The sha256 hex of a regular file's content, or NULL. */
static char *hash_file(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return NULL; /* never open a FIFO or a device */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return NULL;
    }
    Sha256 sha;
    sha256_init(&sha);
    unsigned char buffer[65536];
    for (;;) {
        ssize_t n = read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            close(fd);
            return NULL;
        }
        if (n == 0) break;
        sha256_update(&sha, buffer, (size_t)n);
    }
    close(fd);
    uint8_t digest[SHA256_DIGEST_BYTES];
    sha256_final(&sha, digest);
    char *hex = malloc(SHA256_HEX_CHARS + 1);
    if (hex) sha256_hex(digest, hex);
    return hex;
}

void profile_hash_files(Profile *p, const char *root) {
    if (!p) return;
    if (!root || !*root) root = ".";
    for (size_t i = 0; i < p->file_count; i++) {
        ProfFile *f = &p->files[i];
        free(f->sha256);
        f->sha256 = NULL;
        if (!profile_path_ok(f->path)) continue; /* never read outside root */
        size_t length = strlen(root) + 1 + strlen(f->path) + 1;
        char *full = malloc(length);
        if (!full) continue;
        snprintf(full, length, "%s/%s", root, f->path);
        f->sha256 = hash_file(full);
        free(full);
    }
}

bool profile_set_labels(Profile *p, const char *name, const char *source, const char *tool) {
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    free(p->name);
    free(p->source);
    free(p->created);
    free(p->tool);
    p->name = strdup(name);
    p->source = strdup(source);
    p->created = strdup(stamp);
    p->tool = strdup(tool);
    return p->name && p->source && p->created && p->tool;
}

/* ---- kernels by name ------------------------------------------------------- */

typedef struct {
    const char *name;
    size_t index; /* into kernels */
} NamedKernel;

static int compare_named(const void *a, const void *b) {
    const NamedKernel *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

ProfKernelTotal *profile_kernels_by_name(const Profile *p, size_t *count) {
    *count = 0;
    if (p->kernel_count == 0) return NULL;
    NamedKernel *sorted = malloc(p->kernel_count * sizeof *sorted);
    ProfKernelTotal *out = malloc(p->kernel_count * sizeof *out);
    if (!sorted || !out) {
        free(sorted);
        free(out);
        return NULL;
    }
    for (size_t i = 0; i < p->kernel_count; i++) sorted[i] = (NamedKernel){p->kernels[i].name, i};
    qsort(sorted, p->kernel_count, sizeof *sorted, compare_named);
    size_t n = 0;
    uint64_t most_launched = 0;
    for (size_t i = 0; i < p->kernel_count; i++) {
        const ProfStats *st = &p->kernels[sorted[i].index].stats;
        if (n == 0 || strcmp(out[n - 1].name, sorted[i].name) != 0) {
            out[n++] = (ProfKernelTotal){.name = sorted[i].name};
            most_launched = 0;
        }
        ProfKernelTotal *k = &out[n - 1];
        k->count += st->count;
        k->total_ns = prof_add_u64(k->total_ns, st->total_ns);
        if (st->count > most_launched) {
            most_launched = st->count;
            k->median_ns = st->median_ns;
        }
    }
    free(sorted);
    *count = n;
    return out;
}
