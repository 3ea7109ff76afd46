/* LSP features built on the cached analysis results: diagnostics, code
 * actions (quick fixes, "ignore on this line", fix all), hover, commands
 * and settings. Code actions are rebuilt from a diagnostic's `data`, never
 * by analysing again. */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/base/growable.h"
#include "analysis/edits.h"
#include "rules/engine/engine.h"
#include "advise_version.h"
#include "server/workspace/check_file.h"
#include "server/workspace/file_walk.h"
#include "server/render/finding_json.h"
#include "server/lsp/jsonrpc.h"
#include "server/render/rule_links.h"
#include "server/lsp/lsp_server.h"
#include "server/render/rule_docs.h"
#include "server/workspace/source_file.h"
#include "analysis/base/text_format.h"

/* ---- positions ------------------------------------------------------------ */

json_t *lsp_range_json(const Document *doc, ByteRange r, PositionEncoding enc) {
    Position a = document_position_at(doc, r.start, enc), b = document_position_at(doc, r.end, enc);
    return json_pack("{s:{s:i,s:i},s:{s:i,s:i}}", "start", "line", (int)a.line, "character", (int)a.character, "end",
                     "line", (int)b.line, "character", (int)b.character);
}

static bool position_parse(json_t *p, const Document *doc, PositionEncoding enc, size_t *offset) {
    json_t *line = json_object_get(p, "line"), *ch = json_object_get(p, "character");
    if (!json_is_integer(line) || !json_is_integer(ch) || json_integer_value(line) < 0 ||
        json_integer_value(ch) < 0)
        return false;
    json_int_t l = json_integer_value(line), c = json_integer_value(ch);
    Position pos = {(uint32_t)(l > UINT32_MAX ? UINT32_MAX : l), (uint32_t)(c > UINT32_MAX ? UINT32_MAX : c)};
    *offset = document_offset_at(doc, pos, enc); /* clamps past-the-end positions */
    return true;
}

bool lsp_range_parse(json_t *range, const Document *doc, PositionEncoding enc, size_t *start, size_t *end) {
    if (!position_parse(json_object_get(range, "start"), doc, enc, start) ||
        !position_parse(json_object_get(range, "end"), doc, enc, end))
        return false;
    if (*end < *start) {
        size_t t = *start;
        *start = *end;
        *end = t;
    }
    return true;
}

/* ---- rule documentation links ------------------------------------------------ */

static pthread_mutex_t docs_lock = PTHREAD_MUTEX_INITIALIZER;
static char docs_dir[1024];
static bool docs_written;

/* Writes each rule's page (rule_docs.h: what `advise rule` prints and
 * docs/rules/<CODE>.md hold) once to a cache folder named after this
 * version, so that codeDescription.href can link to it without a network. */
static const char *rule_docs_dir(void) {
    pthread_mutex_lock(&docs_lock);
    if (!docs_written) {
        docs_written = true;
        const char *base = getenv("XDG_CACHE_HOME");
        const char *home = getenv("HOME");
        if (base && *base) snprintf(docs_dir, sizeof docs_dir, "%s/advise/rules-" ADVISE_VERSION, base);
        else
            snprintf(docs_dir, sizeof docs_dir, "%s/.cache/advise/rules-" ADVISE_VERSION,
                     home && *home ? home : "/tmp");
        char *error = NULL;
        if (!rule_docs_write_pages(docs_dir, false, &error)) docs_dir[0] = '\0';
        free(error);
    }
    pthread_mutex_unlock(&docs_lock);
    return docs_dir;
}

/* ---- diagnostics ------------------------------------------------------------------ */

static json_t *fix_json(const Fix *fix, const Document *doc, PositionEncoding enc) {
    json_t *edits = json_array();
    for (size_t k = 0; k < fix->edit_count; k++)
        json_array_append_new(edits, json_pack("{s:o,s:s}", "range", lsp_range_json(doc, fix->edits[k].range, enc),
                                               "newText", fix->edits[k].new_text));
    return json_pack("{s:s,s:b,s:o}", "title", fix->title, "safe", fix->safe, "edits", edits);
}

/* The finding's first measured item, else its first item of any kind. */
static const Evidence *headline_evidence(const Finding *f) {
    for (size_t k = 0; k < f->evidence_count; k++)
        if (f->evidence[k].kind == EVIDENCE_MEASURED) return &f->evidence[k];
    return f->evidence_count ? &f->evidence[0] : NULL;
}

char *lsp_diagnostic_message(const Finding *f) {
    char gain[UNITS_BUF] = "";
    if (f->gain.present) units_seconds(f->gain.seconds, gain, sizeof gain);
    const Evidence *line = headline_evidence(f);
    char *text = line ? evidence_render(line) : NULL;
    char *message =
        format_string("%s%s%s%s%s%s%s%s%s", f->message, text ? "\n" : "", text ? evidence_kind_name(line->kind) : "",
                      text ? ": " : "", text ? text : "", f->gain.present ? "\nest. gain " : "", gain,
                      f->gain.present ? " " : "",
                      f->gain.present ? (f->gain.scope && strcmp(f->gain.scope, "kernel") == 0 ? "(kernel)" : "(program)")
                                      : "");
    free(text);
    return message;
}

/* A rule's codeDescription ({"href": ...}) as a new reference, or NULL when
 * its page cannot be found. Each code is looked up once per call (links
 * keeps one reference of each): a file can have hundreds of findings of a
 * dozen rules, and finding a page asks the file system. */
typedef struct {
    const char *code;
    json_t *description;
} CodeLink;

static json_t *code_description(CodeLink *links, size_t *count, size_t cap, const char *code, const char **dir) {
    for (size_t i = 0; i < *count; i++)
        if (strcmp(links[i].code, code) == 0) return json_incref(links[i].description);
    char *href = rule_page_link(code);
    if (!href && !*dir) *dir = rule_docs_dir();
    if (!href && (*dir)[0]) {
        char *page = format_string("%s/%s.md", *dir, code);
        href = page ? file_uri_from_path(page) : NULL;
        free(page);
    }
    json_t *description = href ? json_pack("{s:s}", "href", href) : NULL;
    free(href);
    if (*count < cap) links[(*count)++] = (CodeLink){code, json_incref(description)};
    return description;
}

/* One finding's LSP Diagnostic. */
static json_t *diagnostic_json(const LspServer *s, const char *uri, const Finding *f, const Document *doc,
                               json_int_t version, CodeLink *links, size_t *link_count, size_t link_cap,
                               const char **dir) {
    json_t *fixes = json_array();
    for (size_t k = 0; k < f->fix_count; k++) json_array_append_new(fixes, fix_json(&f->fixes[k], doc, s->encoding));
    char *message = lsp_diagnostic_message(f);
    json_t *diag = json_pack("{s:o,s:i,s:s,s:s,s:s,s:{s:I,s:s,s:s,s:o,s:o,s:o}}", "range",
                             lsp_range_json(doc, f->range, s->encoding), "severity", (int)f->severity, "code",
                             f->code, "source", "advise", "message", message ? message : f->message, "data",
                             "version", (json_int_t)version, "code", f->code, "name", f->name, "fixes", fixes,
                             "evidence", finding_evidence_json(f), "gain", finding_gain_json(f));
    free(message);
    if (!diag) return NULL;
    json_t *description = code_description(links, link_count, link_cap, f->code, dir);
    if (description) json_object_set_new(diag, "codeDescription", description);
    if (f->related_count && s->related_information) {
        json_t *related = json_array();
        for (size_t k = 0; k < f->related_count; k++)
            json_array_append_new(related, json_pack("{s:{s:s,s:o},s:s}", "location", "uri", uri, "range",
                                                     lsp_range_json(doc, f->related[k].range, s->encoding),
                                                     "message", f->related[k].message));
        json_object_set_new(diag, "relatedInformation", related);
    }
    return diag;
}

json_t *lsp_findings_to_diagnostics(const LspServer *s, const LspDocument *d, const FindingList *findings,
                                    const Document *doc, int64_t version) {
    json_t *out = json_array();
    const char *dir = NULL; /* the cache copy of the pages: only when the repository's cannot be found */
    CodeLink links[128];
    size_t link_count = 0;
    for (size_t i = 0; i < findings->count; i++)
        json_array_append_new(out, diagnostic_json(s, d->uri, &findings->items[i], doc, (json_int_t)version, links,
                                                   &link_count, sizeof links / sizeof *links, &dir));
    for (size_t k = 0; k < link_count; k++) json_decref(links[k].description);
    return out;
}

/* ---- push diagnostics as text -------------------------------------------------- */

/* data.version's value while a diagnostic is serialized: the text is cut
 * around it, and each publish puts its own version there. A string cannot
 * hold `"version":` unescaped, so the cut is found at the key itself. */
#define VERSION_MARK "\"version\":-9007199254740991"

static void text_free(LspDiagnosticText *t) {
    free(t->head);
    free(t->tail);
    free(t->positions);
}

void lsp_diagnostic_texts_free(LspDiagnosticTexts *t) {
    for (size_t i = 0; i < t->count; i++) text_free(&t->items[i]);
    free(t->items);
    t->items = NULL;
    t->count = 0;
}

bool lsp_diagnostic_texts_equal(const LspDiagnosticTexts *a, const LspDiagnosticTexts *b) {
    if (a->count != b->count) return false;
    for (size_t i = 0; i < a->count; i++) {
        const LspDiagnosticText *x = &a->items[i], *y = &b->items[i];
        if (x->head_length != y->head_length || x->tail_length != y->tail_length ||
            memcmp(x->head, y->head, x->head_length) != 0 || memcmp(x->tail, y->tail, x->tail_length) != 0)
            return false;
    }
    return true;
}

/* The positions a finding's diagnostic names; NULL when memory runs out. */
static Position *finding_positions(const Finding *f, const Document *doc, PositionEncoding enc, size_t *count) {
    size_t n = 2 + 2 * f->related_count;
    for (size_t k = 0; k < f->fix_count; k++) n += 2 * f->fixes[k].edit_count;
    Position *p = malloc(n * sizeof *p);
    if (!p) return NULL;
    size_t at = 0;
    p[at++] = document_position_at(doc, f->range.start, enc);
    p[at++] = document_position_at(doc, f->range.end, enc);
    for (size_t k = 0; k < f->fix_count; k++)
        for (size_t e = 0; e < f->fixes[k].edit_count; e++) {
            p[at++] = document_position_at(doc, f->fixes[k].edits[e].range.start, enc);
            p[at++] = document_position_at(doc, f->fixes[k].edits[e].range.end, enc);
        }
    for (size_t k = 0; k < f->related_count; k++) {
        p[at++] = document_position_at(doc, f->related[k].range.start, enc);
        p[at++] = document_position_at(doc, f->related[k].range.end, enc);
    }
    *count = n;
    return p;
}

typedef struct {
    unsigned long id;
    size_t index;
} IdIndex;

static int by_id(const void *a, const void *b) {
    unsigned long x = ((const IdIndex *)a)->id, y = ((const IdIndex *)b)->id;
    return x < y ? -1 : x > y;
}

static char *copy_bytes(const char *p, size_t n) {
    char *out = malloc(n + 1);
    if (!out) return NULL;
    memcpy(out, p, n);
    out[n] = '\0';
    return out;
}

bool lsp_diagnostic_texts(const LspServer *s, LspDocument *d, FindingList *findings, const Document *doc,
                          LspDiagnosticTexts *out) {
    out->items = NULL;
    out->count = 0;
    if (findings->count && !(out->items = calloc(findings->count, sizeof *out->items))) return false;
    /* the last publish's texts by id */
    const LspDiagnosticTexts *old = &d->published;
    IdIndex *ids = old->count ? malloc(old->count * sizeof *ids) : NULL;
    size_t id_count = 0;
    for (size_t i = 0; ids && i < old->count; i++) ids[id_count++] = (IdIndex){old->items[i].id, i};
    if (ids) qsort(ids, id_count, sizeof *ids, by_id);
    const char *dir = NULL;
    CodeLink links[128];
    size_t link_count = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < findings->count; i++) {
        Finding *f = &findings->items[i];
        LspDiagnosticText *t = &out->items[out->count];
        t->positions = finding_positions(f, doc, s->encoding, &t->position_count);
        if (!t->positions) {
            ok = false;
            break;
        }
        out->count++;
        const LspDiagnosticText *was = NULL;
        if (f->published_id && ids) {
            IdIndex key = {f->published_id, 0};
            const IdIndex *hit = bsearch(&key, ids, id_count, sizeof *ids, by_id);
            if (hit) was = &old->items[hit->index];
        }
        if (was && was->position_count == t->position_count &&
            memcmp(was->positions, t->positions, t->position_count * sizeof *t->positions) == 0) {
            t->id = was->id;
            t->head = copy_bytes(was->head, was->head_length);
            t->tail = copy_bytes(was->tail, was->tail_length);
            t->head_length = was->head_length;
            t->tail_length = was->tail_length;
            ok = t->head && t->tail;
            continue;
        }
        json_t *diag = diagnostic_json(s, d->uri, f, doc, (json_int_t)-9007199254740991LL, links, &link_count,
                                       sizeof links / sizeof *links, &dir);
        if (!diag) { /* a string json_pack refused (not UTF-8): left out, as from the array */
            text_free(t);
            memset(t, 0, sizeof *t);
            out->count--;
            continue;
        }
        char *text = json_dumps(diag, JSON_COMPACT);
        json_decref(diag);
        char *mark = text ? strstr(text, VERSION_MARK) : NULL;
        if (!mark) {
            free(text);
            ok = false;
            break;
        }
        size_t head_length = (size_t)(mark - text) + strlen("\"version\":");
        const char *tail = mark + strlen(VERSION_MARK);
        t->id = f->published_id = ++d->next_published_id;
        t->head = copy_bytes(text, head_length);
        t->tail = copy_bytes(tail, strlen(tail));
        t->head_length = head_length;
        t->tail_length = strlen(tail);
        free(text);
        ok = t->head && t->tail;
    }
    for (size_t k = 0; k < link_count; k++) json_decref(links[k].description);
    free(ids);
    if (!ok) lsp_diagnostic_texts_free(out);
    return ok;
}

json_t *lsp_diagnostic_texts_json(const LspDiagnosticTexts *t, int64_t version) {
    char number[32];
    int number_length = snprintf(number, sizeof number, "%lld", (long long)version);
    size_t n = 2;
    for (size_t i = 0; i < t->count; i++) n += t->items[i].head_length + (size_t)number_length + t->items[i].tail_length + 1;
    char *text = malloc(n + 1);
    if (!text) return NULL;
    size_t at = 0;
    text[at++] = '[';
    for (size_t i = 0; i < t->count; i++) {
        if (i) text[at++] = ',';
        memcpy(text + at, t->items[i].head, t->items[i].head_length);
        at += t->items[i].head_length;
        memcpy(text + at, number, (size_t)number_length);
        at += (size_t)number_length;
        memcpy(text + at, t->items[i].tail, t->items[i].tail_length);
        at += t->items[i].tail_length;
    }
    text[at++] = ']';
    json_t *out = json_loadb(text, at, 0, NULL);
    free(text);
    return out;
}

bool lsp_publish_diagnostic_texts(const char *uri, int64_t version, const LspDiagnosticTexts *t) {
    json_t *u = json_string(uri);
    char *uri_text = u ? json_dumps(u, JSON_ENCODE_ANY) : NULL;
    json_decref(u);
    if (!uri_text) return false;
    char number[32];
    int number_length = snprintf(number, sizeof number, "%lld", (long long)version);
    static const char start[] = "{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/publishDiagnostics\",\"params\":{\"uri\":";
    static const char end[] = "]}}";
    size_t n = strlen(start) + strlen(uri_text) + strlen(",\"version\":") + (size_t)number_length +
               strlen(",\"diagnostics\":[") + strlen(end);
    for (size_t i = 0; i < t->count; i++)
        n += t->items[i].head_length + (size_t)number_length + t->items[i].tail_length + 1;
    char *text = malloc(n + 1);
    if (!text) {
        free(uri_text);
        return false;
    }
    size_t at = 0;
#define PUT(p, len) (memcpy(text + at, (p), (len)), at += (len))
    PUT(start, strlen(start));
    PUT(uri_text, strlen(uri_text));
    PUT(",\"version\":", strlen(",\"version\":"));
    PUT(number, (size_t)number_length);
    PUT(",\"diagnostics\":[", strlen(",\"diagnostics\":["));
    for (size_t i = 0; i < t->count; i++) {
        if (i) PUT(",", 1);
        PUT(t->items[i].head, t->items[i].head_length);
        PUT(number, (size_t)number_length);
        PUT(t->items[i].tail, t->items[i].tail_length);
    }
    PUT(end, strlen(end));
#undef PUT
    free(uri_text);
    bool ok = jsonrpc_send_text(text, at);
    free(text);
    return ok;
}

/* ---- workspace edits ------------------------------------------------------------- */

static json_t *workspace_edit(const LspServer *s, const char *uri, int64_t version, json_t *edits) {
    if (s->versioned_edits)
        return json_pack("{s:[{s:{s:s,s:I},s:o}]}", "documentChanges", "textDocument", "uri", uri, "version",
                         (json_int_t)version, "edits", edits);
    json_t *changes = json_object();
    json_object_set_new(changes, uri, edits);
    return json_pack("{s:o}", "changes", changes);
}

static json_t *lsp_edits_of(json_t *fix) {
    json_t *out = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(fix, "edits"), i, e) {
        json_t *range = json_object_get(e, "range"), *text = json_object_get(e, "newText");
        if (json_is_object(range) && json_is_string(text))
            json_array_append_new(out, json_pack("{s:O,s:O}", "range", range, "newText", text));
    }
    return out;
}

/* The suppression comment for `code` on the line of offset: appended to the
 * line, or merged into an advise comment already there. */
static json_t *ignore_edit(const LspServer *s, const Document *doc, size_t offset, const char *code) {
    size_t line = document_line_of(doc, offset);
    size_t a = doc->line_starts[line], b = document_line_end(doc, line);
    const char *text = doc->text;
    bool python = doc->language == LANGUAGE_PYTHON;
    const char *marker = python ? "# advise: ignore[" : "// advise: ignore[";
    size_t mlen = strlen(marker);
    for (size_t i = a; i + mlen <= b; i++) {
        if (memcmp(text + i, marker, mlen) != 0) continue;
        const char *close = memchr(text + i + mlen, ']', b - i - mlen);
        if (!close) break;
        size_t at = (size_t)(close - text);
        char insert[80];
        snprintf(insert, sizeof insert, ", %s", code);
        return json_pack("{s:o,s:s}", "range", lsp_range_json(doc, (ByteRange){at, at}, s->encoding), "newText", insert);
    }
    /* a line continued with a backslash cannot take a trailing comment: put it on its own line above */
    size_t end = b;
    while (end > a && (text[end - 1] == ' ' || text[end - 1] == '\t')) end--;
    char insert[160];
    if (end > a && text[end - 1] == '\\') {
        size_t ind = a;
        while (ind < b && (text[ind] == ' ' || text[ind] == '\t')) ind++;
        snprintf(insert, sizeof insert, "%.*s%s%s]\n", (int)(ind - a), text + a, marker, code);
        return json_pack("{s:o,s:s}", "range", lsp_range_json(doc, (ByteRange){a, a}, s->encoding), "newText", insert);
    }
    snprintf(insert, sizeof insert, "  %s%s]", marker, code);
    return json_pack("{s:o,s:s}", "range", lsp_range_json(doc, (ByteRange){end, end}, s->encoding), "newText", insert);
}

/* one edit replacing the text with all safe fixes applied (cached findings) */
static json_t *fix_all_edits(const LspServer *s, const LspDocument *d, size_t *applied) {
    size_t new_len = 0;
    *applied = 0;
    char *fixed = fixes_apply(d->analysed_doc->text, d->analysed_doc->length, &d->findings, false, &new_len, applied);
    if (!fixed || *applied == 0) {
        free(fixed);
        return NULL;
    }
    /* replace only the changed middle: common prefix and suffix stay */
    const char *old = d->analysed_doc->text;
    size_t old_len = d->analysed_doc->length, pre = 0, suf = 0;
    while (pre < old_len && pre < new_len && old[pre] == fixed[pre]) pre++;
    while (suf < old_len - pre && suf < new_len - pre && old[old_len - 1 - suf] == fixed[new_len - 1 - suf]) suf++;
    /* keep the edit on character boundaries */
    while (pre > 0 && ((unsigned char)old[pre] & 0xC0) == 0x80) pre--;
    while (suf > 0 && ((unsigned char)old[old_len - suf] & 0xC0) == 0x80) suf--;
    char *middle = strndup(fixed + pre, new_len - pre - suf);
    json_t *edits = json_pack("[{s:o,s:s}]", "range",
                              lsp_range_json(d->analysed_doc, (ByteRange){pre, old_len - suf}, s->encoding), "newText",
                              middle);
    free(middle);
    free(fixed);
    return edits;
}

/* ---- code actions ------------------------------------------------------------------ */

static bool kind_requested(json_t *only, const char *kind) {
    if (!json_is_array(only)) return true;
    size_t i;
    json_t *k;
    json_array_foreach(only, i, k) {
        if (!json_is_string(k)) continue;
        const char *want = json_string_value(k);
        size_t n = strlen(want);
        if (strncmp(kind, want, n) == 0 && (kind[n] == '\0' || kind[n] == '.')) return true;
    }
    return false;
}

void lsp_handle_code_action(LspServer *s, json_t *id, json_t *params) {
    const char *uri = json_string_value(json_object_get(json_object_get(params, "textDocument"), "uri"));
    json_t *context = json_object_get(params, "context");
    json_t *only = json_object_get(context, "only");
    if (!uri) {
        jsonrpc_send_error(id, JSONRPC_INVALID_PARAMS, "textDocument.uri is missing");
        return;
    }
    json_t *actions = json_array();
    pthread_mutex_lock(&s->lock);
    LspDocument *d = lsp_find_document(s, uri);
    if (!d) {
        pthread_mutex_unlock(&s->lock);
        jsonrpc_send_result(id, actions);
        return;
    }
    if (kind_requested(only, "quickfix")) {
        size_t i;
        json_t *diag;
        json_array_foreach(json_object_get(context, "diagnostics"), i, diag) {
            json_t *data = json_object_get(diag, "data");
            const char *source = json_string_value(json_object_get(diag, "source"));
            if (!source || strcmp(source, "advise") != 0 || !json_is_object(data)) continue;
            const char *code = json_string_value(json_object_get(data, "code"));
            json_t *version = json_object_get(data, "version");
            json_t *fixes = json_object_get(data, "fixes");
            if (!code || !json_is_integer(version)) continue;
            /* made for an older text: its ranges no longer hold (the client asks again with the new diagnostics) */
            if (json_integer_value(version) != d->version) continue;
            size_t safe_count = 0, k;
            json_t *fix;
            json_array_foreach(fixes, k, fix) safe_count += json_is_true(json_object_get(fix, "safe"));
            json_array_foreach(fixes, k, fix) {
                const char *title = json_string_value(json_object_get(fix, "title"));
                if (!title) continue;
                bool safe = json_is_true(json_object_get(fix, "safe"));
                char label[512];
                snprintf(label, sizeof label, "%s%s", title, safe ? "" : " (unsafe)");
                json_t *action = json_pack("{s:s,s:s,s:[O],s:b}", "title", label, "kind", "quickfix", "diagnostics",
                                           diag, "isPreferred", safe && safe_count == 1 && json_array_size(fixes) == 1);
                json_t *edit = workspace_edit(s, uri, json_integer_value(version), lsp_edits_of(fix));
                if (s->resolve_edits) {
                    json_object_set_new(action, "data", json_pack("{s:o}", "edit", edit));
                } else {
                    json_object_set_new(action, "edit", edit);
                }
                json_array_append_new(actions, action);
            }
            /* ignore CODE on this line */
            size_t start, end;
            if (lsp_range_parse(json_object_get(diag, "range"), d->doc, s->encoding, &start, &end)) {
                char title[128];
                snprintf(title, sizeof title, "Ignore %s on this line", code);
                json_t *edit = workspace_edit(s, uri, d->version,
                                              json_pack("[o]", ignore_edit(s, d->doc, start, code)));
                json_array_append_new(actions, json_pack("{s:s,s:s,s:[O],s:o}", "title", title, "kind", "quickfix",
                                                         "diagnostics", diag, "edit", edit));
            }
        }
    }
    if (json_is_array(only) && (kind_requested(only, "source.fixAll.advise"))) {
        if (d->analysed_version == d->version && d->analysed_doc) {
            size_t applied;
            json_t *edits = fix_all_edits(s, d, &applied);
            if (edits) {
                char title[96];
                snprintf(title, sizeof title, "advise: apply %zu safe fix%s", applied, applied == 1 ? "" : "es");
                json_array_append_new(actions, json_pack("{s:s,s:s,s:o}", "title", title, "kind",
                                                         "source.fixAll.advise", "edit",
                                                         workspace_edit(s, uri, d->version, edits)));
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
    jsonrpc_send_result(id, actions);
}

void lsp_handle_code_action_resolve(LspServer *s, json_t *id, json_t *params) {
    json_t *action = json_deep_copy(params);
    json_t *data = json_object_get(action, "data");
    json_t *edit = json_object_get(data, "edit");
    if (json_is_object(edit)) {
        json_object_set(action, "edit", edit);
        json_object_del(action, "data");
    }
    jsonrpc_send_result(id, action);
}

/* ---- hover ------------------------------------------------------------------------- */

/* A finding's evidence, each item after its kind ("- measured: ...",
 * "- note: ..."), and its estimated gain, as markdown ending in a blank
 * line; NULL when it has none. */
static char *finding_evidence_markdown(const Finding *f) {
    if (!f->evidence_count && !f->gain.present) return NULL;
    char *out = strdup("");
    for (size_t k = 0; out && k < f->evidence_count; k++) {
        char *text = evidence_render(&f->evidence[k]);
        char *grown = text ? format_string("%s- %s: %s\n", out, evidence_kind_name(f->evidence[k].kind), text) : NULL;
        free(text);
        free(out);
        out = grown;
    }
    if (out && f->gain.present) {
        char gain[UNITS_BUF];
        char *model = f->gain.model.text ? evidence_render(&f->gain.model) : NULL;
        char *grown = format_string("%s- est. gain %s (%s): %s\n", out, units_seconds(f->gain.seconds, gain, sizeof gain),
                                    f->gain.scope ? f->gain.scope : "program", model ? model : "");
        free(model);
        free(out);
        out = grown;
    }
    char *done = out ? format_string("%s\n", out) : NULL;
    free(out);
    return done;
}

void lsp_handle_hover(LspServer *s, json_t *id, json_t *params) {
    const char *uri = json_string_value(json_object_get(json_object_get(params, "textDocument"), "uri"));
    json_t *position = json_object_get(params, "position");
    if (!uri || !json_is_object(position)) {
        jsonrpc_send_error(id, JSONRPC_INVALID_PARAMS, "textDocument.uri and position are required");
        return;
    }
    pthread_mutex_lock(&s->lock);
    LspDocument *d = lsp_find_document(s, uri);
    size_t offset;
    if (!d || d->analysed_version != d->version || !d->analysed_doc ||
        !position_parse(position, d->analysed_doc, s->encoding, &offset)) {
        pthread_mutex_unlock(&s->lock);
        jsonrpc_send_result(id, json_null());
        return;
    }
    size_t cap = 4096, len = 0;
    char *md = malloc(cap);
    md[0] = '\0';
    ByteRange hit = {0, 0};
    bool any = false;
    /* what the profile measured at this line, first: it is short */
    char *figures = lsp_profile_hover(s, d, d->analysed_doc, offset);
    if (figures) {
        size_t n = strlen(figures);
        if (array_reserve_n(&md, 0, n + 1, &cap, 1, 4096)) {
            memcpy(md, figures, n + 1);
            len = n;
        }
        free(figures);
    }
    bool any_finding = false;
    for (size_t i = 0; i < d->findings.count; i++) {
        const Finding *f = &d->findings.items[i];
        if (offset < f->range.start || offset > f->range.end) continue;
        const Rule *rule = rule_find(f->code);
        char *measured = finding_evidence_markdown(f);
        char *part = format_string("%s**%s %s** (%s): %s\n\n%s%s", len ? "\n\n---\n\n" : "", f->code, f->name,
                                   severity_name(f->severity), f->message, measured ? measured : "",
                                   rule ? rule->documentation : "");
        free(measured);
        if (!part) continue;
        size_t n = strlen(part);
        if (!array_reserve_n(&md, len, n + 1, &cap, 1, 4096)) {
            free(part);
            continue;
        }
        memcpy(md + len, part, n + 1);
        len += n;
        free(part);
        if (!any_finding) hit = f->range;
        any_finding = true;
    }
    any = any_finding || len > 0;
    if (!any_finding && any) { /* the figures alone: the line */
        size_t line = document_line_of(d->analysed_doc, offset);
        hit = (ByteRange){d->analysed_doc->line_starts[line], document_line_end(d->analysed_doc, line)};
    }
    json_t *result = any ? json_pack("{s:{s:s,s:s},s:o}", "contents", "kind", "markdown", "value", md, "range",
                                     lsp_range_json(d->analysed_doc, hit, s->encoding))
                         : json_null();
    pthread_mutex_unlock(&s->lock);
    free(md);
    jsonrpc_send_result(id, result);
}

/* ---- commands ------------------------------------------------------------------------ */

static void on_apply_edit(LspServer *s, json_t *result, json_t *error, void *data) {
    if (error || (json_is_object(result) && json_is_false(json_object_get(result, "applied")))) {
        const char *reason = json_string_value(json_object_get(result, "failureReason"));
        lsp_log(2, "advise: the editor did not apply the fixes%s%s", reason ? ": " : "", reason ? reason : "");
    }
}

static const char *command_uri(json_t *args) {
    json_t *first = json_array_get(args, 0);
    if (json_is_string(first)) return json_string_value(first);
    return json_string_value(json_object_get(first, "uri"));
}

struct ScanThread {
    pthread_t thread;
    bool done;
    struct ScanThread *next;
};

typedef struct {
    LspServer *s;
    char *root;
    json_t *token;
    json_t *reply_id; /* a client-made token lives as long as its request: answered at the end */
    struct ScanThread *thread;
} WorkspaceScan;

static void progress(json_t *token, json_t *value) {
    jsonrpc_send_notification("$/progress", json_pack("{s:O,s:o}", "token", token, "value", value));
}

/* checks every Python file under the workspace root, with work-done progress,
 * publishing diagnostics for the files not open in the editor */
static void *scan_workspace(void *arg) {
    WorkspaceScan *w = arg;
    LspServer *s = w->s;
    Config cfg; /* the settings open documents are analysed with, severity overrides included */
    pthread_mutex_lock(&s->lock);
    lsp_config_snapshot(s, &cfg);
    lsp_profiles_wait_ready(s);
    LspProfiles *profiles = lsp_profiles_ref(s); /* merged as into open documents */
    pthread_mutex_unlock(&s->lock);
    if (profiles) cfg.profile_cold = profiles->cold;
    ProfileSource source = {profiles ? profiles->set : NULL, NULL};
    FileList files;
    const char *paths[1] = {w->root};
    file_walk(paths, 1, &cfg, w->root, &files);
    if (w->token) progress(w->token, json_pack("{s:s,s:s,s:b,s:s,s:i}", "kind", "begin", "title", "advise: checking the workspace",
                                               "cancellable", 0, "message", "", "percentage", 0));
    size_t total_findings = 0;
    for (size_t i = 0; i < files.count; i++) {
        if (w->token && (i % 16 == 0 || i + 1 == files.count))
            progress(w->token, json_pack("{s:s,s:s,s:i}", "kind", "report", "message", files.files[i], "percentage",
                                         (int)(100 * i / (files.count ? files.count : 1))));
        char *uri = file_uri_from_path(files.files[i]);
        pthread_mutex_lock(&s->lock);
        bool open = lsp_find_document(s, uri) != NULL, stopping = s->stopping;
        pthread_mutex_unlock(&s->lock);
        if (stopping) { /* the server is exiting */
            free(uri);
            break;
        }
        SourceFile src;
        char *error = NULL;
        if (open || !source_file_read(files.files[i], cfg.max_file_bytes, &src, &error)) {
            free(error);
            free(uri);
            continue;
        }
        CheckedFile checked; /* as `advise check` checks it, the profile merged */
        if (check_file_text(files.files[i], src.text, src.length, &cfg, &source, profiles ? profiles->root : NULL,
                            s->workspaces, &checked, &error)) {
            LspDocument fake = {.uri = uri};
            json_t *diags = lsp_findings_to_diagnostics(s, &fake, &checked.findings, checked.doc, 0);
            total_findings += checked.findings.count;
            jsonrpc_send_notification("textDocument/publishDiagnostics",
                                      json_pack("{s:s,s:o}", "uri", uri, "diagnostics", diags));
            checked_file_free(&checked);
        }
        free(error);
        source_file_free(&src);
        free(uri);
    }
    char done[128];
    snprintf(done, sizeof done, "%zu findings in %zu files", total_findings, files.count);
    if (w->token) progress(w->token, json_pack("{s:s,s:s}", "kind", "end", "message", done));
    if (w->reply_id) jsonrpc_send_result(w->reply_id, json_null());
    lsp_log(3, "advise: workspace checked: %s", done);
    file_list_free(&files);
    config_free(&cfg);
    pthread_mutex_lock(&s->lock);
    lsp_profiles_unref(profiles);
    pthread_mutex_unlock(&s->lock);
    json_decref(w->token);
    json_decref(w->reply_id);
    pthread_mutex_lock(&s->lock);
    w->thread->done = true; /* may be joined now */
    pthread_mutex_unlock(&s->lock);
    free(w->root);
    free(w);
    lsp_thread_end();
    return NULL;
}

/* joins the scans that have ended, or all of them when `all` */
static void scans_reap(LspServer *s, bool all) {
    pthread_mutex_lock(&s->lock);
    struct ScanThread *ended = NULL, **pp = &s->scans;
    while (*pp) {
        struct ScanThread *t = *pp;
        if (all || t->done) {
            *pp = t->next;
            t->next = ended;
            ended = t;
        } else {
            pp = &t->next;
        }
    }
    pthread_mutex_unlock(&s->lock);
    while (ended) {
        struct ScanThread *t = ended;
        ended = t->next;
        pthread_join(t->thread, NULL);
        free(t);
    }
}

void lsp_scans_join(LspServer *s) { scans_reap(s, true); }

static void scan_free(void *data) {
    WorkspaceScan *w = data;
    json_decref(w->token);
    json_decref(w->reply_id);
    free(w->root);
    free(w);
}

/* runs the scan on a thread of its own (joined at exit, or by a later
 * scan once it has ended); false (w freed) when it cannot start */
static bool scan_start(LspServer *s, WorkspaceScan *w) {
    scans_reap(s, false);
    struct ScanThread *t = calloc(1, sizeof *t);
    w->thread = t;
    if (!t || pthread_create(&t->thread, NULL, scan_workspace, w) != 0) {
        free(t);
        scan_free(w);
        return false;
    }
    pthread_mutex_lock(&s->lock);
    t->next = s->scans;
    s->scans = t;
    pthread_mutex_unlock(&s->lock);
    return true;
}

/* the client answered window/workDoneProgress/create: progress may be reported
 * with the token now (LSP 3.17), or not at all when the client refused it */
static void on_progress_created(LspServer *s, json_t *result, json_t *error, void *data) {
    (void)result;
    WorkspaceScan *w = data;
    if (error) {
        json_decref(w->token);
        w->token = NULL;
    }
    if (!scan_start(s, w)) lsp_log(1, "advise: cannot start the workspace scan");
}

void lsp_handle_execute_command(LspServer *s, json_t *id, json_t *params) {
    const char *command = json_string_value(json_object_get(params, "command"));
    json_t *args = json_object_get(params, "arguments");
    if (!command) {
        jsonrpc_send_error(id, JSONRPC_INVALID_PARAMS, "command is missing");
        return;
    }
    if (strcmp(command, "advise.applySafeFixes") == 0) {
        const char *uri = command_uri(args);
        if (!uri) {
            jsonrpc_send_error(id, JSONRPC_INVALID_PARAMS, "advise.applySafeFixes takes the document's uri");
            return;
        }
        pthread_mutex_lock(&s->lock);
        LspDocument *d = lsp_find_document(s, uri);
        if (!d) {
            pthread_mutex_unlock(&s->lock);
            jsonrpc_send_error(id, JSONRPC_INVALID_PARAMS, "the document is not open");
            return;
        }
        if (d->analysed_version != d->version || !d->analysed_doc) {
            pthread_mutex_unlock(&s->lock);
            jsonrpc_send_error(id, LSP_CONTENT_MODIFIED, "the document changed; the analysis is not current yet");
            return;
        }
        size_t applied;
        json_t *edits = fix_all_edits(s, d, &applied);
        json_t *edit = edits ? workspace_edit(s, uri, d->version, edits) : NULL;
        pthread_mutex_unlock(&s->lock);
        if (edit)
            lsp_send_request(s, "workspace/applyEdit", json_pack("{s:s,s:o}", "label", "advise: safe fixes", "edit", edit),
                             on_apply_edit, NULL, NULL);
        jsonrpc_send_result(id, json_pack("{s:I}", "applied", (json_int_t)applied));
        return;
    }
    if (strcmp(command, "advise.showProfile") == 0) {
        /* the command of the profile code lenses: the figures are in the lens and the hover */
        jsonrpc_send_result(id, json_null());
        return;
    }
    if (strcmp(command, "advise.checkWorkspace") == 0) {
        if (!s->root_path) {
            jsonrpc_send_error(id, LSP_REQUEST_FAILED, "the client gave no workspace folder");
            return;
        }
        WorkspaceScan *w = calloc(1, sizeof *w);
        w->s = s;
        w->root = strdup(s->root_path);
        json_t *client_token = json_object_get(params, "workDoneToken");
        if (json_is_string(client_token) || json_is_integer(client_token)) {
            /* the client made the progress for this request: it ends with the answer, sent after the scan */
            w->token = json_incref(client_token);
            w->reply_id = json_incref(id);
            if (!scan_start(s, w)) jsonrpc_send_error(id, LSP_REQUEST_FAILED, "cannot start the workspace scan");
            return;
        } else if (s->work_done_progress) {
            /* ask the client to make one; the scan starts when it answers */
            static unsigned created; /* main thread only */
            char token[64];
            snprintf(token, sizeof token, "advise-scan-%u", ++created);
            w->token = json_string(token);
            lsp_send_request(s, "window/workDoneProgress/create", json_pack("{s:s}", "token", token),
                             on_progress_created, w, scan_free);
            jsonrpc_send_result(id, json_null());
            return;
        }
        if (!scan_start(s, w)) jsonrpc_send_error(id, LSP_REQUEST_FAILED, "cannot start the workspace scan");
        else jsonrpc_send_result(id, json_null());
        return;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "unknown command: %.200s", command);
    jsonrpc_send_error(id, JSONRPC_INVALID_PARAMS, buf);
}

/* ---- settings ------------------------------------------------------------------------- */

/* select / ignore: a list of selectors or a comma-separated string; null
 * restores the default (every rule / none). Unknown selectors are reported
 * and left out; a value of another type is reported and changes nothing. */
static void set_list(StringList *list, json_t *value, const char *what) {
    if (!json_is_string(value) && !json_is_array(value) && !json_is_null(value)) {
        lsp_log(1, "advise: setting '%s' must be a list of rule selectors or a comma-separated string (ignored)", what);
        return;
    }
    StringList fresh = {0};
    if (json_is_string(value)) string_list_add_csv(&fresh, json_string_value(value));
    size_t i;
    json_t *v;
    json_array_foreach(value, i, v) {
        if (json_is_string(v)) string_list_add(&fresh, json_string_value(v));
        else lsp_log(1, "advise: setting '%s' holds something that is not a string (ignored)", what);
    }
    StringList ok = {0};
    for (size_t k = 0; k < fresh.count; k++) {
        if (config_selector_valid(fresh.items[k])) string_list_add(&ok, fresh.items[k]);
        else lsp_log(1, "advise: unknown rule selector '%s' in %s (ignored)", fresh.items[k], what);
    }
    string_list_free(&fresh);
    string_list_free(list);
    *list = ok;
}

void lsp_apply_settings(LspServer *s, json_t *settings) {
    json_t *v;
    if ((v = json_object_get(settings, "select"))) set_list(&s->config.select, v, "select");
    if ((v = json_object_get(settings, "ignore"))) set_list(&s->config.ignore, v, "ignore");
    if ((v = json_object_get(settings, "severity")) && !json_is_object(v) && !json_is_null(v))
        lsp_log(1, "advise: setting 'severity' must be an object such as {\"PY003\": \"error\"} (ignored)");
    else if (v) {
        for (size_t i = 0; i < s->config.severity_count; i++) free(s->config.severity[i].selector);
        free(s->config.severity);
        s->config.severity = NULL;
        s->config.severity_count = s->config.severity_cap = 0;
        const char *key;
        json_t *level;
        json_object_foreach(v, key, level) {
            if (!json_is_string(level) || !config_set_severity(&s->config, key, json_string_value(level)))
                lsp_log(1, "advise: severity override '%s' is not a known rule with error/warning/info/hint (ignored)",
                        key);
        }
    }
    if ((v = json_object_get(settings, "profileDir")) && !json_is_string(v) && !json_is_null(v)) {
        lsp_log(1, "advise: setting 'profileDir' must be a folder path (ignored)");
    } else if (v) {
        free(s->config.profile_dir);
        s->config.profile_dir = json_is_string(v) ? strdup(json_string_value(v)) : NULL;
    }
    if ((v = json_object_get(settings, "quickPass")) && json_is_boolean(v)) s->quick_pass = json_is_true(v);
    static const struct {
        const char *key;
        size_t offset;
    } cuda_settings[] = {{"cudaBuildDir", offsetof(Config, cuda_build_dir)},
                         {"gpuArch", offsetof(Config, cuda_gpu_arch)},
                         {"cudaPath", offsetof(Config, cuda_path)}};
    for (size_t i = 0; i < sizeof cuda_settings / sizeof *cuda_settings; i++)
        if ((v = json_object_get(settings, cuda_settings[i].key)) && json_is_string(v)) {
            char **slot = (char **)((char *)&s->config + cuda_settings[i].offset);
            free(*slot);
            *slot = strdup(json_string_value(v));
        }
    if ((v = json_object_get(settings, "fullPassDelayMs")) && json_is_number(v)) {
        double ms = json_number_value(v);
        s->full_pass_delay = ms < 0 ? 0 : ms > 60000 ? 60 : ms / 1000.0;
    }
    if ((v = json_object_get(settings, "debounceMs")) && !json_is_number(v) && !json_is_null(v)) {
        lsp_log(1, "advise: setting 'debounceMs' must be a number of milliseconds (ignored)");
    } else if (json_is_number(v)) {
        double ms = json_number_value(v);
        s->debounce_seconds = ms < 0 ? 0 : ms > 5000 ? 5 : ms / 1000.0;
    }
}
