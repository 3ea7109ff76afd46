/* What the editor shows from profiles besides diagnostics: code lenses over
 * hot lines and profiled kernels, measured figures in the hover, and the
 * ranked findings of the workspace (`advise/findings`, for sidebars).
 * Lenses and hovers are answered on the main thread from the loaded
 * profile (index lookups); advise/findings runs on a thread of its own. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/base/growable.h"
#include "rules/measure/line_metrics.h"
#include "server/workspace/file_walk.h"
#include "server/render/finding_json.h"
#include "profiler/kernel_name.h"
#include "server/lsp/jsonrpc.h"
#include "server/lsp/lsp_memory_views.h"
#include "server/lsp/lsp_server.h"
#include "server/render/line_memory.h"
#include "server/render/ranked_findings.h"
#include "server/workspace/source_file.h"
#include "analysis/base/text_format.h"

/* ---- __global__ functions of a document (a lexical scan, no parse) ------------------ */

typedef struct {
    size_t start, end; /* the name's bytes */
    char name[128];
} KernelName;

static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* The name of the __global__ function whose declaration starts at p (just
 * after the keyword), before its parameter list; false when none follows. */
static bool kernel_after(const char *text, size_t length, size_t p, KernelName *out) {
    size_t last_a = 0, last_b = 0, limit = p + 400 < length ? p + 400 : length;
    while (p < limit) {
        char c = text[p];
        if (isspace((unsigned char)c) || c == '*' || c == '&' || c == ':') {
            p++;
        } else if (ident_char(c)) {
            size_t a = p;
            while (p < limit && ident_char(text[p])) p++;
            if (p - a == 17 && memcmp(text + a, "__launch_bounds__", 17) == 0) {
                while (p < limit && text[p] != '(') p++;
                int depth = 0;
                for (; p < limit; p++) {
                    if (text[p] == '(') depth++;
                    else if (text[p] == ')' && --depth == 0) break;
                }
                p++;
                continue;
            }
            last_a = a;
            last_b = p;
        } else if (c == '<' && last_b) { /* template arguments of a specialisation */
            int depth = 0;
            for (; p < limit; p++) {
                if (text[p] == '<') depth++;
                else if (text[p] == '>' && --depth == 0) break;
            }
            p++;
        } else if (c == '(' && last_b) {
            size_t n = last_b - last_a < sizeof out->name - 1 ? last_b - last_a : sizeof out->name - 1;
            memcpy(out->name, text + last_a, n);
            out->name[n] = '\0';
            out->start = last_a;
            out->end = last_b;
            return true;
        } else {
            return false;
        }
    }
    return false;
}

/* The __global__ functions declared in doc; *count of them, heap array. */
static KernelName *kernels_of(const Document *doc, size_t *count) {
    *count = 0;
    if (doc->language != LANGUAGE_CUDA) return NULL;
    KernelName *out = NULL;
    size_t cap = 0;
    const char *text = doc->text;
    for (const char *hit = strstr(text, "__global__"); hit; hit = strstr(hit + 10, "__global__")) {
        size_t at = (size_t)(hit - text);
        if ((at > 0 && ident_char(text[at - 1])) || ident_char(text[at + 10])) continue;
        KernelName k;
        if (!kernel_after(text, doc->length, at + 10, &k)) continue;
        if (!array_reserve(&out, *count, &cap, sizeof *out, 8)) break;
        out[(*count)++] = k;
    }
    return out;
}

/* The view with figures for kernel: the document's own, else the newest
 * profile of the set that ran it (kernels launched from another file). */
static const ProfileView *kernel_view(const LspProfiles *p, const ProfileView *own, const char *kernel, ProfStats *sum) {
    if (own && profile_view_kernel(own, kernel, sum, NULL)) return own;
    for (size_t i = 0; p && p->set && i < profile_set_count(p->set); i++) {
        const ProfileView *v = profile_set_at(p->set, i);
        if (v != own && profile_view_kernel(v, kernel, sum, NULL)) return v;
    }
    return NULL;
}

/* ---- code lenses ----------------------------------------------------------------------- */

static const char *plural(uint64_t n, const char *one, const char *many) { return n == 1 ? one : many; }

/* "31% of GPU time · 1.20 ms avg · 500 calls" for a line worth a lens (GPU
 * time of at least 1% of all, or host waits of at least 1% of the run);
 * false otherwise. The share is the line's one (profile_view_line_share). */
static bool line_title(const ProfileView *v, const ProfileLineCost *c, char *buf, size_t size) {
    uint64_t run = profile_view_run_ns(v);
    uint64_t gpu = profile_line_gpu_ns(c), calls = c->launches + c->copies;
    double line_share = profile_view_line_share(v, c);
    bool hot = gpu && calls && line_share >= 0.01;
    bool waits = c->sync_ns && c->syncs && run && c->sync_ns * 100 >= run;
    if (!hot && !waits) return false;
    char share[16], avg[32];
    size_t n = 0;
    buf[0] = '\0';
    if (hot) {
        units_ratio(line_share, share, sizeof share);
        units_ns(gpu / calls, avg, sizeof avg);
        n += (size_t)snprintf(buf + n, size - n, "%s " PROFILE_LINE_SHARE_OF " \xC2\xB7 %s avg \xC2\xB7 %llu %s", share,
                              avg, (unsigned long long)calls, plural(calls, "call", "calls"));
    }
    if (waits && n < size) {
        units_share(c->sync_ns, run, share, sizeof share);
        units_ns(c->sync_ns / c->syncs, avg, sizeof avg);
        snprintf(buf + n, size - n, "%s%s of the run waiting \xC2\xB7 %s avg \xC2\xB7 %llu %s", n ? " \xC2\xB7 " : "",
                 share, avg, (unsigned long long)c->syncs, plural(c->syncs, "sync", "syncs"));
    }
    return true;
}

static void kernel_title(const ProfileView *v, const ProfStats *sum, char *buf, size_t size) {
    char share[16], avg[32];
    units_share(sum->total_ns, profile_view_gpu_ns(v), share, sizeof share);
    units_ns(sum->count ? sum->total_ns / sum->count : 0, avg, sizeof avg);
    snprintf(buf, size, "%s " PROFILE_LINE_SHARE_OF " \xC2\xB7 %s avg \xC2\xB7 %llu %s", share, avg,
             (unsigned long long)sum->count, plural(sum->count, "launch", "launches"));
}

static json_t *lens(const LspServer *s, const Document *doc, const char *uri, ByteRange r, const char *title,
                    bool stale) {
    char full[320];
    snprintf(full, sizeof full, "%s%s", title, stale ? " (profile older than this file)" : "");
    Position at = document_position_at(doc, r.start, s->encoding);
    return json_pack("{s:o,s:{s:s,s:s,s:[s,i]}}", "range", lsp_range_json(doc, r, s->encoding), "command", "title",
                     full, "command", "advise.showProfile", "arguments", uri, (int)at.line);
}

/* The line's text without its indentation. */
static ByteRange line_range(const Document *doc, size_t line) {
    size_t a = doc->line_starts[line], b = document_line_end(doc, line);
    while (a < b && (doc->text[a] == ' ' || doc->text[a] == '\t')) a++;
    return (ByteRange){a, b};
}

static int lens_line(json_t *l) {
    return (int)json_integer_value(json_object_get(json_object_get(json_object_get(l, "range"), "start"), "line"));
}

static int by_line(const void *a, const void *b) {
    int x = lens_line(*(json_t *const *)a), y = lens_line(*(json_t *const *)b);
    return (x > y) - (x < y);
}

/* the lenses in document order (line lenses and kernel lenses interleave) */
static json_t *sort_by_line(json_t *lenses) {
    size_t n = json_array_size(lenses);
    json_t **items = n ? malloc(n * sizeof *items) : NULL;
    if (!items) return lenses;
    for (size_t i = 0; i < n; i++) items[i] = json_incref(json_array_get(lenses, i));
    qsort(items, n, sizeof *items, by_line);
    json_array_clear(lenses);
    for (size_t i = 0; i < n; i++) json_array_append_new(lenses, items[i]);
    free(items);
    return lenses;
}

void lsp_handle_code_lens(LspServer *s, json_t *id, json_t *params) {
    const char *uri = json_string_value(json_object_get(json_object_get(params, "textDocument"), "uri"));
    if (!uri) {
        jsonrpc_send_error(id, JSONRPC_INVALID_PARAMS, "textDocument.uri is missing");
        return;
    }
    json_t *lenses = json_array();
    pthread_mutex_lock(&s->lock);
    LspDocument *d = lsp_find_document(s, uri);
    LspProfiles *p = s->profiles;
    if (d && p && p->set) {
        const Document *doc = d->doc; /* the text as it is now (the main thread owns it) */
        int file;
        ProfileView *moved; /* the profile moved onto the edited text's lines */
        const ProfileView *v = lsp_profiles_view_through(p, d->path, doc, &d->line_map, &file, &moved);
        bool stale = v && profile_view_freshness(v, file, doc->text, doc->length) == PROFILE_STALE;
        char title[256];
        if (v) {
            const ProfileLineCost *lines;
            size_t n = profile_view_lines(v, file, &lines);
            size_t memory_count;
            LineMemory *memory = line_memory_of_file(profile_view_profile(v), file, &memory_count);
            /* both lists are sorted by line: a line with time and memory gets one lens */
            for (size_t i = 0, m = 0; i < n || m < memory_count;) {
                uint32_t at = i < n && (m == memory_count || lines[i].line <= memory[m].line) ? lines[i].line
                                                                                                : memory[m].line;
                bool timed = i < n && lines[i].line == at && line_title(v, &lines[i], title, sizeof title);
                if (!timed) title[0] = '\0';
                if (i < n && lines[i].line == at) i++;
                char held[96];
                if (m < memory_count && memory[m].line == at && lsp_memory_lens_title(&memory[m], held, sizeof held)) {
                    size_t used = strlen(title); /* < sizeof title */
                    snprintf(title + used, sizeof title - used, "%s%s", used ? " \xC2\xB7 " : "", held);
                }
                if (m < memory_count && memory[m].line == at) m++;
                if (title[0] && at >= 1 && at <= doc->line_count)
                    json_array_append_new(lenses, lens(s, doc, uri, line_range(doc, at - 1), title, stale));
            }
            free(memory);
        }
        size_t kernel_count;
        KernelName *kernels = kernels_of(doc, &kernel_count);
        for (size_t i = 0; i < kernel_count; i++) {
            ProfStats sum;
            const ProfileView *kv = kernel_view(p, v, kernels[i].name, &sum);
            if (!kv) continue;
            kernel_title(kv, &sum, title, sizeof title);
            json_array_append_new(lenses,
                                  lens(s, doc, uri, (ByteRange){kernels[i].start, kernels[i].end}, title, stale));
        }
        free(kernels);
        profile_view_free(moved);
    }
    pthread_mutex_unlock(&s->lock);
    jsonrpc_send_result(id, sort_by_line(lenses));
}

/* ---- hover figures ------------------------------------------------------------------ */

static const char *copy_name(ProfCopyKind k) {
    static const char *const names[] = {"copy", "host-to-device copy", "device-to-host copy", "device-to-device copy",
                                        "host-to-host copy", "peer-to-peer copy"};
    return k < PROF_COPY_KIND_COUNT ? names[k] : "copy";
}

static const char *memory_name(ProfMemKind k) {
    static const char *const names[] = {"unknown", "pageable", "pinned", "device", "managed"};
    return k < PROF_MEM_KIND_COUNT ? names[k] : "unknown";
}

static const char *sync_name(ProfSyncKind k) {
    static const char *const names[] = {"synchronization", "event synchronize", "stream wait on an event",
                                        "stream synchronize", "device synchronize"};
    return k < PROF_SYNC_KIND_COUNT ? names[k] : "synchronization";
}

/* appends printf output to a growing string */
static void appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char piece[1024];
    int n = vsnprintf(piece, sizeof piece, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t k = (size_t)n < sizeof piece ? (size_t)n : sizeof piece - 1;
    if (!array_reserve_n(buf, *len, k + 1, cap, 1, 512)) return;
    memcpy(*buf + *len, piece, k + 1);
    *len += k;
}

static void op_line(char **md, size_t *len, size_t *cap, const ProfileView *v, const ProfOp *op) {
    const Profile *p = profile_view_profile(v);
    uint64_t run = profile_view_run_ns(v);
    char median[32], total[32], share[16], bytes[32], rate[32];
    units_ns(op->stats.median_ns, median, sizeof median);
    units_ns(op->stats.total_ns, total, sizeof total);
    unsigned long long count = (unsigned long long)op->stats.count;
    switch (op->kind) {
    case PROF_OP_LAUNCH: {
        char name[160] = "kernel";
        if (op->kernel >= 0 && (size_t)op->kernel < p->kernel_count && p->kernels[op->kernel].name)
            kernel_short_name(p->kernels[op->kernel].name, name, sizeof name);
        appendf(md, len, cap, "- kernel `%s`: %llu %s, %s median, %s in all\n", name, count,
                count == 1 ? "launch" : "launches", median, total);
        break;
    }
    case PROF_OP_MEMCPY:
        units_bytes(op->bytes, bytes, sizeof bytes);
        if (op->stats.total_ns) units_rate((double)op->bytes * 1e9 / (double)op->stats.total_ns, rate, sizeof rate);
        else snprintf(rate, sizeof rate, "?");
        appendf(md, len, cap, "- %s, %s to %s memory: %llu %s, %s at %s, %s median, %s in all\n",
                copy_name(op->copy), memory_name(op->src), memory_name(op->dst), count, count == 1 ? "copy" : "copies",
                bytes, rate, median, total);
        break;
    case PROF_OP_MEMSET:
        units_bytes(op->bytes, bytes, sizeof bytes);
        appendf(md, len, cap, "- memset of %s memory: %llu %s, %s, %s in all\n", memory_name(op->dst), count,
                count == 1 ? "memset" : "memsets", bytes, total);
        break;
    case PROF_OP_SYNC:
        units_share(op->stats.total_ns, run, share, sizeof share);
        appendf(md, len, cap, "- %s: %llu %s, %s median, %s of host time waiting in all (%s of the run)\n",
                sync_name(op->sync), count, count == 1 ? "wait" : "waits", median, total, share);
        break;
    case PROF_OP_ALLOC:
        units_share(op->stats.total_ns, run, share, sizeof share);
        units_bytes(op->bytes, bytes, sizeof bytes);
        appendf(md, len, cap, "- allocation of %s memory: %llu %s, %s, %s median, %s of host time in all (%s of the run)\n",
                memory_name(op->dst), count, count == 1 ? "allocation" : "allocations", bytes, median, total, share);
        break;
    default:
        break;
    }
}

static void describe(const ProfileView *v, char *buf, size_t size) {
    const Profile *p = profile_view_profile(v);
    const ProfDevice *dev = profile_view_device(v);
    const char *c = p->created ? p->created : "";
    snprintf(buf, size, "`%s`, recorded %.10s %.5s UTC%s%s", p->name ? p->name : "profile", c,
             strlen(c) >= 16 ? c + 11 : "", dev ? " on " : "", dev && dev->name ? dev->name : "");
}

/* what the per-line metrics (advise profile --source-metrics) measured at line, one kernel an item */
static void line_metrics_hover(char **md, size_t *len, size_t *cap, const ProfileView *v, int file, uint32_t line) {
    const Profile *p = profile_view_profile(v);
    size_t shown = 0;
    for (size_t i = 0; i < p->line_metric_count; i++) {
        const ProfLineMetrics *e = &p->line_metrics[i];
        if (e->file != file || e->line != line) continue;
        if (shown++ == 8) {
            appendf(md, len, cap, "- and more kernels\n");
            break;
        }
        if (shown == 1) {
            char about[256];
            describe(v, about, sizeof about);
            appendf(md, len, cap, "%s**Memory accesses at this line** (per-line metrics, profile %s)\n\n", *len ? "\n" : "",
                    about);
        }
        char words[512];
        appendf(md, len, cap, "- %s\n", lm_entry_words(e, words, sizeof words));
    }
}

/* what `advise profile --memory` recorded at line: after the time figures, under the same heading */
static void memory_hover(char **md, size_t *len, size_t *cap, const ProfileView *v, int file, uint32_t line) {
    LineMemory figures;
    if (!line_memory_at(profile_view_profile(v), file, line, &figures)) return;
    char *words = lsp_memory_hover(profile_view_profile(v), &figures);
    if (!words) return;
    if (*len) {
        appendf(md, len, cap, "\n"); /* a paragraph apart: not a continuation of a list above */
    } else {
        char about[256];
        describe(v, about, sizeof about);
        appendf(md, len, cap, "**Measured at this line** (profile %s)\n\n", about);
    }
    size_t n = strlen(words);
    if (array_reserve_n(md, *len, n + 1, cap, 1, 512)) {
        memcpy(*md + *len, words, n + 1);
        *len += n;
    }
    free(words);
}

#define HOVER_MAX_OPS 32

/* by time, most first: GPU time for launches and copies, host time for waits and allocations */
static int hottest_first(const void *a, const void *b) {
    const ProfOp *x = *(const ProfOp *const *)a, *y = *(const ProfOp *const *)b;
    return (x->stats.total_ns < y->stats.total_ns) - (x->stats.total_ns > y->stats.total_ns);
}

/* What v measured at one line (1-based) of file: its operations, per-line
 * metrics and device memory, appended to md. */
static void line_figures(char **md, size_t *len, size_t *cap, const ProfileView *v, int file, uint32_t line) {
    char about[256];
    /* every operation of the line, hottest first; the first 32 are listed */
    size_t n = profile_view_ops_in(v, file, line, line, NULL, 0);
    const ProfOp **ops = n ? malloc(n * sizeof *ops) : NULL;
    if (ops) {
        profile_view_ops_in(v, file, line, line, ops, n);
        qsort(ops, n, sizeof *ops, hottest_first);
        describe(v, about, sizeof about);
        appendf(md, len, cap, "**Measured at this line** (profile %s)\n\n", about);
        const ProfileLineCost *cost = profile_view_line(v, file, line);
        if (cost && profile_line_gpu_ns(cost)) {
            char share[16], gpu[32];
            units_ratio(profile_view_line_share(v, cost), share, sizeof share);
            units_ns(profile_line_gpu_ns(cost), gpu, sizeof gpu);
            appendf(md, len, cap, "The line: **%s " PROFILE_LINE_SHARE_OF "** (%s of kernels, copies and memsets)\n\n",
                    share, gpu);
        }
        for (size_t i = 0; i < n && i < HOVER_MAX_OPS; i++) op_line(md, len, cap, v, ops[i]);
        if (n > HOVER_MAX_OPS) appendf(md, len, cap, "- and %zu more\n", n - HOVER_MAX_OPS);
        free(ops);
    }
    line_metrics_hover(md, len, cap, v, file, line);
    memory_hover(md, len, cap, v, file, line);
}

char *lsp_profile_line_hover(const ProfileView *v, int file, uint32_t line) {
    char *md = NULL;
    size_t len = 0, cap = 0;
    if (v && line) line_figures(&md, &len, &cap, v, file, line);
    return md;
}

char *lsp_profile_hover(LspServer *s, const LspDocument *d, const Document *doc, size_t offset) {
    LspProfiles *p = s->profiles;
    if (!p || !p->set) return NULL;
    int file;
    ProfileView *moved; /* the profile moved onto the edited text's lines */
    const ProfileView *v = lsp_profiles_view_through(p, d->path, doc, &d->line_map, &file, &moved);
    size_t line = document_line_of(doc, offset);
    char *md = NULL;
    size_t len = 0, cap = 0;
    char about[256];
    if (v) line_figures(&md, &len, &cap, v, file, (uint32_t)line + 1);
    /* a __global__ function declared on this line: what its launches cost */
    size_t kernel_count;
    KernelName *kernels = kernels_of(doc, &kernel_count);
    for (size_t i = 0; i < kernel_count; i++) {
        if (document_line_of(doc, kernels[i].start) != line) continue;
        ProfStats sum;
        const ProfileView *kv = kernel_view(p, v, kernels[i].name, &sum);
        if (!kv) continue;
        char median[32], total[32], share[16];
        units_ns(sum.median_ns, median, sizeof median);
        units_ns(sum.total_ns, total, sizeof total);
        units_share(sum.total_ns, profile_view_gpu_ns(kv), share, sizeof share);
        describe(kv, about, sizeof about);
        appendf(&md, &len, &cap,
                "%s**Kernel `%s`** (profile %s): %llu %s, %s median, %s in all (%s of GPU time)\n", len ? "\n" : "",
                kernels[i].name, about, (unsigned long long)sum.count, sum.count == 1 ? "launch" : "launches", median,
                total, share);
    }
    free(kernels);
    if (md && v && profile_view_freshness(v, file, doc->text, doc->length) == PROFILE_STALE)
        appendf(&md, &len, &cap, "\n_The file changed since it was profiled: lines may have moved._\n");
    profile_view_free(moved);
    return md;
}

/* ---- advise/findings ------------------------------------------------------------------ */

struct FindingsJob {
    LspServer *s;
    pthread_t thread;
    json_t *id;
    json_t *token;        /* the client's workDoneToken, or NULL */
    StringList paths;     /* absolute */
    Config cfg;
    LspProfiles *profiles; /* a reference, or NULL */
    char *workspace;
    char *root;           /* the project root */
    bool cancelled;       /* under s->lock */
    bool done;            /* may be joined */
    struct FindingsJob *next;
};

/* sends value (taken) on token, or drops it when the client gave none */
static void progress(json_t *token, json_t *value) {
    if (token) jsonrpc_send_notification("$/progress", json_pack("{s:O,s:o}", "token", token, "value", value));
    else json_decref(value);
}

/* The documents the findings' ranges are converted in, read once each. */
typedef struct {
    char *path;
    Document *doc;
} ReadDoc;

static const Document *doc_for(ReadDoc **docs, size_t *count, size_t *cap, const char *path, size_t max_bytes) {
    for (size_t i = 0; i < *count; i++)
        if (strcmp((*docs)[i].path, path) == 0) return (*docs)[i].doc;
    if (!array_reserve(docs, *count, cap, sizeof **docs, 8)) return NULL;
    SourceFile src;
    char *error = NULL;
    Document *doc = NULL;
    if (source_file_read(path, max_bytes, &src, &error)) {
        doc = document_new(path, language_for_path(path), src.text, src.length);
        source_file_free(&src);
    }
    free(error);
    (*docs)[*count] = (ReadDoc){strdup(path), doc};
    (*count)++;
    return doc;
}

static json_t *findings_json(const LspServer *s, const char *root, const RankedFindings *r, size_t max_bytes) {
    json_t *out = json_array();
    ReadDoc *docs = NULL;
    size_t doc_count = 0, doc_cap = 0;
    for (size_t i = 0; i < r->count; i++) {
        const RankedFinding *item = &r->items[i];
        const Finding *f = &item->finding;
        char *abs = item->path[0] == '/' ? strdup(item->path) : format_string("%s/%s", strcmp(root, "/") ? root : "", item->path);
        if (!abs) continue;
        const Document *doc = doc_for(&docs, &doc_count, &doc_cap, abs, max_bytes);
        json_t *range;
        if (doc) {
            /* RankedFinding columns count code points: the file as read gives the client's encoding */
            size_t a = document_offset_at(doc, (Position){item->line - 1, item->column - 1}, POSITION_UTF32);
            size_t b = document_offset_at(doc, (Position){item->end_line - 1, item->end_column - 1}, POSITION_UTF32);
            range = lsp_range_json(doc, (ByteRange){a, b < a ? a : b}, s->encoding);
        } else {
            range = json_pack("{s:{s:i,s:i},s:{s:i,s:i}}", "start", "line", (int)item->line - 1, "character",
                              (int)item->column - 1, "end", "line", (int)item->end_line - 1, "character",
                              (int)item->end_column - 1);
        }
        json_t *evidence = finding_evidence_json(f), *gain = finding_gain_json(f);
        char *uri = file_uri_from_path(abs);
        double per_step = ranked_finding_gain_per_step(item);
        json_t *gain_per_step = per_step > 0 ? json_real(per_step) : json_null();
        json_t *entry = json_pack("{s:s,s:o,s:s,s:s,s:i,s:s,s:o,s:o,s:o,s:f,s:b}", "uri", uri, "range", range, "code",
                                  f->code, "name", f->name, "severity", (int)f->severity, "message", f->message,
                                  "evidence", evidence, "gain", gain, "gain_per_step_seconds", gain_per_step,
                                  "cost_seconds", item->cost_seconds, "stale", item->stale);
        if (entry && f->advice) json_object_set_new(entry, "advice", json_string(f->advice));
        json_array_append_new(out, entry);
        free(uri);
        free(abs);
    }
    for (size_t i = 0; i < doc_count; i++) {
        free(docs[i].path);
        document_free(docs[i].doc);
    }
    free(docs);
    return out;
}

static bool job_stopped(struct FindingsJob *job) {
    pthread_mutex_lock(&job->s->lock);
    bool stop = job->cancelled || job->s->stopping;
    pthread_mutex_unlock(&job->s->lock);
    return stop;
}

/* Checks the files one by one (so that a cancellation is seen between
 * files), each as ranked_findings checks it, then ranks them all. */
static void *findings_main(void *arg) {
    struct FindingsJob *job = arg;
    LspServer *s = job->s;
    pthread_mutex_lock(&s->lock);
    lsp_profiles_wait_ready(s); /* the profile folder as configured */
    job->profiles = lsp_profiles_ref(s);
    pthread_mutex_unlock(&s->lock);
    if (job->profiles) job->cfg.profile_cold = job->profiles->cold;
    /* findings are ranked with paths relative to the project root, where profiles name files */
    job->root = strdup(job->profiles ? job->profiles->root : job->workspace);
    FileList files;
    file_walk((const char *const *)job->paths.items, job->paths.count, &job->cfg, job->root, &files);
    progress(job->token, json_pack("{s:s,s:s,s:b,s:i}", "kind", "begin", "title", "advise: ranking findings",
                                   "cancellable", 1, "percentage", 0));
    RankedFindings all = {0};
    size_t capacity = 0;
    bool stopped = false, oom = false;
    for (size_t i = 0; i < files.count && !oom; i++) {
        if (job_stopped(job)) {
            stopped = true;
            break;
        }
        if (job->token && (i % 8 == 0 || i + 1 == files.count))
            progress(job->token, json_pack("{s:s,s:s,s:i}", "kind", "report", "message", files.files[i], "percentage",
                                           (int)(100 * i / (files.count ? files.count : 1))));
        const char *one[1] = {files.files[i]};
        RankedFindings part;
        char *error = NULL;
        bool ok = job->profiles && job->profiles->set
                      ? ranked_findings_collect_set(one, 1, job->root, &job->cfg, job->profiles->set,
                                                    job->s->workspaces, NULL, &part, &error)
                      : ranked_findings_collect(one, 1, job->root, &job->cfg, NULL, job->s->workspaces, &part, &error);
        free(error); /* the file could not be read: said on stderr, skipped */
        if (!ok) continue;
        all.files_checked += part.files_checked;
        for (size_t k = 0; k < part.count && !oom; k++) {
            if (!array_reserve(&all.items, all.count, &capacity, sizeof *all.items, 32)) {
                oom = true;
                break;
            }
            all.items[all.count++] = part.items[k];
            part.items[k] = (RankedFinding){0}; /* moved */
        }
        ranked_findings_free(&part);
    }
    pthread_mutex_lock(&s->lock);
    bool exiting = s->stopping;
    pthread_mutex_unlock(&s->lock);
    if (stopped) {
        progress(job->token, json_pack("{s:s,s:s}", "kind", "end", "message", "cancelled"));
        if (!exiting) jsonrpc_send_error(job->id, LSP_REQUEST_CANCELLED, "cancelled");
    } else if (oom) {
        progress(job->token, json_pack("{s:s}", "kind", "end"));
        jsonrpc_send_error(job->id, LSP_REQUEST_FAILED, "out of memory");
    } else {
        ranked_findings_sort(&all);
        json_t *result = findings_json(s, job->root, &all, job->cfg.max_file_bytes);
        char done[96];
        snprintf(done, sizeof done, "%zu findings in %zu files", all.count, all.files_checked);
        progress(job->token, json_pack("{s:s,s:s}", "kind", "end", "message", done));
        jsonrpc_send_result(job->id, result);
    }
    ranked_findings_free(&all);
    file_list_free(&files);
    pthread_mutex_lock(&s->lock);
    job->done = true;
    pthread_mutex_unlock(&s->lock);
    lsp_thread_end();
    return NULL;
}

static void job_free(struct FindingsJob *job) {
    json_decref(job->id);
    json_decref(job->token);
    string_list_free(&job->paths);
    config_free(&job->cfg);
    free(job->root);
    free(job->workspace);
    free(job);
}

void lsp_findings_reap(LspServer *s, bool all) {
    pthread_mutex_lock(&s->lock);
    struct FindingsJob *ended = NULL, **pp = &s->findings_jobs;
    while (*pp) {
        struct FindingsJob *j = *pp;
        if (all || j->done) {
            *pp = j->next;
            j->next = ended;
            ended = j;
        } else {
            pp = &j->next;
        }
    }
    pthread_mutex_unlock(&s->lock);
    while (ended) {
        struct FindingsJob *j = ended;
        ended = j->next;
        pthread_join(j->thread, NULL);
        pthread_mutex_lock(&s->lock);
        lsp_profiles_unref(j->profiles);
        pthread_mutex_unlock(&s->lock);
        job_free(j);
    }
}

/* a path of params.paths: a file:// URI, an absolute path, or one relative to the workspace */
static char *param_path(const char *workspace, const char *given) {
    if (strncmp(given, "file://", 7) == 0) return file_uri_to_path(given);
    if (given[0] == '/') return strdup(given);
    return format_string("%s/%s", strcmp(workspace, "/") ? workspace : "", given);
}

void lsp_handle_findings(LspServer *s, json_t *id, json_t *params) {
    json_t *paths = json_object_get(params, "paths");
    if (paths && !json_is_array(paths) && !json_is_null(paths)) {
        jsonrpc_send_error(id, JSONRPC_INVALID_PARAMS, "paths must be a list of paths or file URIs");
        return;
    }
    size_t i;
    json_t *p;
    json_array_foreach(paths, i, p) if (!json_is_string(p)) {
        jsonrpc_send_error(id, JSONRPC_INVALID_PARAMS, "paths must be a list of paths or file URIs");
        return;
    }
    if (!s->root_path && json_array_size(paths) == 0) {
        jsonrpc_send_error(id, LSP_REQUEST_FAILED, "the client gave no workspace folder and no paths");
        return;
    }
    lsp_findings_reap(s, false);
    struct FindingsJob *job = calloc(1, sizeof *job);
    if (!job) {
        jsonrpc_send_error(id, LSP_REQUEST_FAILED, "out of memory");
        return;
    }
    job->s = s;
    job->id = json_incref(id);
    json_t *token = json_object_get(params, "workDoneToken");
    if (json_is_string(token) || json_is_integer(token)) job->token = json_incref(token);
    const char *workspace = s->root_path ? s->root_path : "/";
    if (json_array_size(paths) == 0) string_list_add(&job->paths, workspace);
    json_array_foreach(paths, i, p) {
        char *path = param_path(workspace, json_string_value(p));
        if (path) string_list_add(&job->paths, path);
        free(path);
    }
    job->workspace = strdup(workspace);
    pthread_mutex_lock(&s->lock);
    lsp_config_snapshot(s, &job->cfg);
    pthread_mutex_unlock(&s->lock);
    if (!job->workspace || pthread_create(&job->thread, NULL, findings_main, job) != 0) {
        job_free(job);
        jsonrpc_send_error(id, LSP_REQUEST_FAILED, "cannot start the findings thread");
        return;
    }
    pthread_mutex_lock(&s->lock);
    job->next = s->findings_jobs;
    s->findings_jobs = job;
    pthread_mutex_unlock(&s->lock);
}

bool lsp_findings_cancel(LspServer *s, json_t *id) {
    bool found = false;
    pthread_mutex_lock(&s->lock);
    for (struct FindingsJob *j = s->findings_jobs; j; j = j->next)
        if (!j->done && json_equal(j->id, id)) {
            j->cancelled = true;
            found = true;
        }
    pthread_mutex_unlock(&s->lock);
    return found;
}

void lsp_handle_progress_cancel(LspServer *s, json_t *params) {
    json_t *token = json_object_get(params, "token");
    if (!token) return;
    pthread_mutex_lock(&s->lock);
    for (struct FindingsJob *j = s->findings_jobs; j; j = j->next)
        if (!j->done && j->token && json_equal(j->token, token)) j->cancelled = true;
    pthread_mutex_unlock(&s->lock);
}
