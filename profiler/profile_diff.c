/* Two profiles side by side (see profile_diff.h). Each side's kernels and
 * call sites are gathered into a list sorted by key and summed where the key
 * repeats; the two lists are then walked together like a merge. */
#include "profiler/profile_diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Sums the critical time of kernels, copies and memsets, and the host's
 * waits; known only when every entry and every process that ran has it. */
static void critical_totals(const Profile *p, ProfileTotals *t) {
    t->critical_known = p->kernel_count > 0;
    for (size_t i = 0; i < p->kernel_count; i++) {
        t->critical_known &= p->kernels[i].critical.known;
        t->critical_ns += p->kernels[i].critical.ns;
    }
    for (size_t i = 0; i < p->op_count; i++) {
        const ProfOp *op = &p->ops[i];
        if (op->kind != PROF_OP_MEMCPY && op->kind != PROF_OP_MEMSET) continue;
        t->critical_known &= op->critical.known;
        t->critical_ns += op->critical.ns;
    }
    bool any = false, all = true;
    for (size_t i = 0; i < p->process_count; i++) {
        const ProfProcess *proc = &p->processes[i];
        if (!proc->host_wait_known) {
            if (!proc->error) all = false; /* a process with an error may have recorded nothing */
            continue;
        }
        any = true;
        t->host_wait_ns += proc->host_wait_ns;
    }
    t->host_wait_known = any && all;
}

void profile_totals(const Profile *p, ProfileTotals *t) {
    memset(t, 0, sizeof *t);
    critical_totals(p, t);
    for (size_t i = 0; i < p->kernel_count; i++) {
        t->kernel_ns += p->kernels[i].stats.total_ns;
        t->launches += p->kernels[i].stats.count;
    }
    for (size_t i = 0; i < p->op_count; i++) {
        const ProfOp *op = &p->ops[i];
        switch (op->kind) {
        case PROF_OP_MEMCPY:
            t->copy_ns += op->stats.total_ns;
            t->copies += op->stats.count;
            t->copy_bytes += op->bytes;
            break;
        case PROF_OP_MEMSET:
            t->memset_ns += op->stats.total_ns;
            t->memsets += op->stats.count;
            break;
        case PROF_OP_SYNC:
            t->sync_ns += op->stats.total_ns;
            t->syncs += op->stats.count;
            break;
        case PROF_OP_ALLOC:
            t->alloc_ns += op->stats.total_ns;
            t->allocs += op->stats.count;
            break;
        default: break; /* launches: counted from the kernels, which include launches without a site */
        }
    }
    for (size_t i = 0; i < p->process_count; i++)
        if (p->processes[i].wall_ns > t->wall_ns) t->wall_ns = p->processes[i].wall_ns;
    for (size_t i = 0; i < p->timeline_count; i++) {
        t->span_ns += p->timelines[i].span_ns;
        t->busy_ns += p->timelines[i].busy_ns;
    }
}

double profile_totals_busy_share(const ProfileTotals *t) {
    return t->span_ns ? (double)t->busy_ns / (double)t->span_ns : -1.0;
}

int64_t diff_saved_ns(DiffFigures before, DiffFigures after) {
    /* times are at most 2^63-1 each (the format's limit), so the difference fits
     * unless sums over many entries overflowed; clamp rather than wrap */
    if (before.total_ns >= after.total_ns) {
        uint64_t d = before.total_ns - after.total_ns;
        return d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
    }
    uint64_t d = after.total_ns - before.total_ns;
    return d > (uint64_t)INT64_MAX ? -INT64_MAX : -(int64_t)d;
}

double diff_speedup(DiffFigures before, DiffFigures after) {
    if (before.total_ns == 0 || after.total_ns == 0) return -1.0;
    return (double)before.total_ns / (double)after.total_ns;
}

/* ---- one side's entries, keyed and summed ------------------------------------ */

typedef struct {
    const char *path;     /* sites: NULL for "no user frame"; kernels: the name */
    uint32_t line;
    int kind;             /* sites: ProfOpKind; kernels: 0 */
    const char *function;
    DiffFigures figures;
} Entry;

static int compare_text(const char *a, const char *b) {
    if (!a || !b) return (a != NULL) - (b != NULL); /* NULL first */
    return strcmp(a, b);
}

static int compare_entry(const Entry *a, const Entry *b) {
    int c = compare_text(a->path, b->path);
    if (c) return c;
    if (a->line != b->line) return a->line < b->line ? -1 : 1;
    return (a->kind > b->kind) - (a->kind < b->kind);
}

static int compare_entry_qsort(const void *a, const void *b) { return compare_entry(a, b); }

static void add_figures(DiffFigures *to, DiffFigures from) {
    to->count += from.count;
    to->total_ns = prof_add_u64(to->total_ns, from.total_ns);
}

/* Sorts and sums entries with equal keys; returns the new count. */
static size_t coalesce(Entry *e, size_t n) {
    if (n == 0) return 0;
    qsort(e, n, sizeof *e, compare_entry_qsort);
    size_t out = 0;
    for (size_t i = 1; i < n; i++) {
        if (compare_entry(&e[out], &e[i]) == 0) {
            add_figures(&e[out].figures, e[i].figures);
            if (!e[out].function) e[out].function = e[i].function;
        } else {
            e[++out] = e[i];
        }
    }
    return out + 1;
}

static Entry *kernel_entries(const Profile *p, size_t *count) {
    Entry *e = malloc((p->kernel_count ? p->kernel_count : 1) * sizeof *e);
    if (!e) return NULL;
    for (size_t i = 0; i < p->kernel_count; i++)
        e[i] = (Entry){.path = p->kernels[i].name,
                       .figures = {p->kernels[i].stats.count, p->kernels[i].stats.total_ns}};
    *count = coalesce(e, p->kernel_count);
    return e;
}

static Entry *site_entries(const Profile *p, size_t *count) {
    Entry *e = malloc((p->op_count ? p->op_count : 1) * sizeof *e);
    if (!e) return NULL;
    for (size_t i = 0; i < p->op_count; i++) {
        const ProfOp *op = &p->ops[i];
        Entry x = {.kind = (int)op->kind, .figures = {op->stats.count, op->stats.total_ns}};
        if (op->site >= 0 && (size_t)op->site < p->site_count) {
            const ProfSite *s = &p->sites[op->site];
            if (s->file >= 0 && (size_t)s->file < p->file_count) {
                x.path = p->files[s->file].path;
                x.line = s->line;
            }
            x.function = s->function;
        }
        e[i] = x;
    }
    *count = coalesce(e, p->op_count);
    return e;
}

/* ---- ordering of the result ---------------------------------------------------- */

static int compare_group(DiffSide side_a, DiffFigures ba, DiffFigures aa, DiffSide side_b, DiffFigures bb,
                         DiffFigures ab) {
    if (side_a != side_b) return side_a < side_b ? -1 : 1;
    uint64_t ka, kb;
    if (side_a == DIFF_BOTH) {
        int64_t sa = diff_saved_ns(ba, aa), sb = diff_saved_ns(bb, ab);
        return (sa < sb) - (sa > sb);
    }
    ka = side_a == DIFF_BEFORE_ONLY ? ba.total_ns : aa.total_ns;
    kb = side_a == DIFF_BEFORE_ONLY ? bb.total_ns : ab.total_ns;
    return (ka < kb) - (ka > kb);
}

static int compare_kernel(const void *pa, const void *pb) {
    const DiffKernel *a = pa, *b = pb;
    int c = compare_group(a->side, a->before, a->after, b->side, b->before, b->after);
    return c ? c : strcmp(a->name, b->name);
}

static int compare_site(const void *pa, const void *pb) {
    const DiffSite *a = pa, *b = pb;
    int c = compare_group(a->side, a->before, a->after, b->side, b->before, b->after);
    if (c) return c;
    c = compare_text(a->path, b->path);
    if (c) return c;
    if (a->line != b->line) return a->line < b->line ? -1 : 1;
    return (a->kind > b->kind) - (a->kind < b->kind);
}

static char *dup_or_null(const char *s, bool *ok) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *ok = false;
    return d;
}

/* Walks both sorted lists together; each key becomes one entry, on the side(s) it is on. */
static bool join_kernels(const Entry *b, size_t nb, const Entry *a, size_t na, ProfileDiff *d) {
    d->kernels = calloc(nb + na ? nb + na : 1, sizeof *d->kernels);
    if (!d->kernels) return false;
    size_t i = 0, j = 0;
    bool ok = true;
    while (ok && (i < nb || j < na)) {
        int c = i == nb ? 1 : j == na ? -1 : compare_entry(&b[i], &a[j]);
        DiffKernel *k = &d->kernels[d->kernel_count++];
        if (c <= 0) {
            k->name = dup_or_null(b[i].path, &ok);
            k->before = b[i++].figures;
        }
        if (c >= 0) {
            if (!k->name) k->name = dup_or_null(a[j].path, &ok);
            k->after = a[j++].figures;
        }
        k->side = c == 0 ? DIFF_BOTH : c < 0 ? DIFF_BEFORE_ONLY : DIFF_AFTER_ONLY;
    }
    return ok;
}

static bool join_sites(const Entry *b, size_t nb, const Entry *a, size_t na, ProfileDiff *d) {
    d->sites = calloc(nb + na ? nb + na : 1, sizeof *d->sites);
    if (!d->sites) return false;
    size_t i = 0, j = 0;
    bool ok = true;
    while (ok && (i < nb || j < na)) {
        int c = i == nb ? 1 : j == na ? -1 : compare_entry(&b[i], &a[j]);
        const Entry *key = c <= 0 ? &b[i] : &a[j];
        DiffSite *s = &d->sites[d->site_count++];
        s->path = dup_or_null(key->path, &ok);
        s->line = key->line;
        s->kind = (ProfOpKind)key->kind;
        const char *function = c > 0 ? a[j].function : b[i].function;
        if (!function && c == 0) function = a[j].function;
        s->function = dup_or_null(function, &ok);
        if (c <= 0) s->before = b[i++].figures;
        if (c >= 0) s->after = a[j++].figures;
        s->side = c == 0 ? DIFF_BOTH : c < 0 ? DIFF_BEFORE_ONLY : DIFF_AFTER_ONLY;
    }
    return ok;
}

/* ---- what the two runs were ---------------------------------------------------- */

/* The devices that did work: those with a timeline or a kernel. Every
 * process lists every GPU it can see (each rank of a two-GPU run sees both),
 * so the list itself overstates what ran; when no device is marked (an
 * imported trace without timelines), all count. */
static bool *devices_used(const Profile *p) {
    bool *used = calloc(p->device_count, sizeof *used);
    if (!used) return NULL;
    bool any = false;
    for (size_t i = 0; i < p->timeline_count; i++) {
        int d = p->timelines[i].device;
        if (d >= 0 && (size_t)d < p->device_count) used[d] = any = true;
    }
    for (size_t i = 0; i < p->kernel_count; i++) {
        int d = p->kernels[i].device;
        if (d >= 0 && (size_t)d < p->device_count) used[d] = any = true;
    }
    if (!any)
        for (size_t i = 0; i < p->device_count; i++) used[i] = true;
    return used;
}

char *profile_gpu_description(const Profile *p) {
    if (p->device_count == 0) return strdup("no GPU recorded");
    bool *used = devices_used(p);
    if (!used) return NULL;
    /* distinct names in order of first appearance, each with its count */
    size_t size = 1;
    for (size_t i = 0; i < p->device_count; i++) size += strlen(p->devices[i].name ? p->devices[i].name : "") + 32;
    char *out = malloc(size);
    if (!out) {
        free(used);
        return NULL;
    }
    size_t used_chars = 0;
    out[0] = '\0';
    for (size_t i = 0; i < p->device_count; i++) {
        if (!used[i]) continue;
        const char *name = p->devices[i].name ? p->devices[i].name : "";
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = used[k] && strcmp(p->devices[k].name ? p->devices[k].name : "", name) == 0;
        if (seen) continue;
        size_t n = 0;
        for (size_t k = i; k < p->device_count; k++)
            n += used[k] && strcmp(p->devices[k].name ? p->devices[k].name : "", name) == 0;
        int w = n > 1 ? snprintf(out + used_chars, size - used_chars, "%s%zu x %s", used_chars ? ", " : "", n, name)
                      : snprintf(out + used_chars, size - used_chars, "%s%s", used_chars ? ", " : "", name);
        if (w > 0) used_chars += (size_t)w;
    }
    free(used);
    return out;
}

/* Seconds since the epoch of a "YYYY-MM-DDTHH:MM:SSZ" time; false when it is not one. */
static bool parse_created(const char *s, int64_t *out) {
    struct tm tm = {0};
    char z = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                     &tm.tm_sec, &z) != 7 || z != 'Z')
        return false;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *out = (int64_t)timegm(&tm);
    return true;
}

static bool same_command(const Profile *a, const Profile *b) {
    if (a->command_count != b->command_count) return false;
    for (size_t i = 0; i < a->command_count; i++)
        if (strcmp(a->command[i], b->command[i]) != 0) return false;
    return true;
}

bool profile_diff(const Profile *before, const Profile *after, ProfileDiff *d) {
    memset(d, 0, sizeof *d);
    profile_totals(before, &d->before);
    profile_totals(after, &d->after);

    int64_t tb, ta;
    if (parse_created(before->created, &tb) && parse_created(after->created, &ta)) {
        d->older = tb < ta ? -1 : tb > ta ? 1 : 0;
        d->created_gap_s = tb < ta ? ta - tb : tb - ta;
    } else {
        int c = compare_text(before->created, after->created);
        d->older = c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    d->before_gpu = profile_gpu_description(before);
    d->after_gpu = profile_gpu_description(after);
    if (!d->before_gpu || !d->after_gpu) goto fail;
    d->different_gpu = strcmp(d->before_gpu, d->after_gpu) != 0;
    d->different_command = !same_command(before, after);
    d->different_source = compare_text(before->source, after->source) != 0;

    size_t nb = 0, na = 0;
    Entry *b = kernel_entries(before, &nb), *a = kernel_entries(after, &na);
    bool ok = b && a && join_kernels(b, nb, a, na, d);
    free(b);
    free(a);
    if (!ok) goto fail;
    b = site_entries(before, &nb);
    a = site_entries(after, &na);
    ok = b && a && join_sites(b, nb, a, na, d);
    free(b);
    free(a);
    if (!ok) goto fail;
    qsort(d->kernels, d->kernel_count, sizeof *d->kernels, compare_kernel);
    qsort(d->sites, d->site_count, sizeof *d->sites, compare_site);
    return true;
fail:
    profile_diff_free(d);
    return false;
}

void profile_diff_free(ProfileDiff *d) {
    for (size_t i = 0; i < d->kernel_count; i++) free(d->kernels[i].name);
    free(d->kernels);
    for (size_t i = 0; i < d->site_count; i++) {
        free(d->sites[i].path);
        free(d->sites[i].function);
    }
    free(d->sites);
    free(d->before_gpu);
    free(d->after_gpu);
    memset(d, 0, sizeof *d);
}
