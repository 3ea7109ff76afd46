#include "server/render/check_pr_output.h"

#include <ctype.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "advise_version.h" /* ADVISE_VERSION */
#include "analysis/base/text_format.h"
#include "analysis/units.h"
#include "rules/rule.h"
#include "server/render/check_output.h"
#include "server/render/finding_json.h"
#include "server/render/rule_docs.h"
#include "server/render/rule_links.h"
#include "server/workspace/check_file.h"
#include "server/workspace/file_uri.h"

#define SRCROOT "%SRCROOT%"
#define FINGERPRINT_KEY "adviseFinding/v1"
#define SUMMARY_TOP 20

typedef struct {
    Severity severity;
    bool has_gain;
    double gain;
    char *path; /* relative when it can be */
    size_t line, col, end_line, end_col;
    const char *code, *name;
    char *message; /* with the evidence and the estimated gain, one item a line */
} GhItem;

struct PrOutput {
    PrFormat format;
    FILE *out;
    char *root;
    char *step_summary;
    json_t *results;       /* SARIF results, GitLab issues */
    json_t *notifications; /* SARIF toolExecutionNotifications */
    bool failed;           /* a path could not be checked */
    GhItem *items;
    size_t count, cap;
};

PrOutput *pr_output_new(PrFormat format, FILE *out, const char *root, const char *step_summary) {
    PrOutput *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->format = format;
    o->out = out;
    o->root = root ? strdup(root) : NULL;
    o->step_summary = step_summary && *step_summary ? strdup(step_summary) : NULL;
    o->results = json_array();
    o->notifications = json_array();
    return o;
}

/* ---- shared pieces ------------------------------------------------------------ */

/* path relative to the project root, '/'-separated (heap), or NULL when it
 * lies outside it */
static char *relative_path(const PrOutput *o, const char *path) {
    char *rel = o->root ? project_relative_path(o->root, path) : NULL;
    if (rel) return rel;
    if (path[0] == '/') return NULL;
    while (path[0] == '.' && path[1] == '/') path += 2;
    if (strncmp(path, "../", 3) == 0) return NULL;
    return strdup(path); /* a name that does not exist (stdin's), taken as relative */
}

/* the path GitHub and GitLab show: relative when it can be, else as given */
static char *shown_path(const PrOutput *o, const char *path) {
    char *rel = relative_path(o, path);
    return rel ? rel : strdup(path);
}

static char *uri_encode(const char *s) {
    char *out = malloc(strlen(s) * 3 + 1), *w = out;
    if (!out) return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isalnum(*p) || strchr("/-_.~", *p)) *w++ = (char)*p;
        else w += sprintf(w, "%%%02X", *p);
    }
    *w = '\0';
    return out;
}

static void utf16_position(const Document *doc, size_t offset, size_t *line, size_t *column) {
    Position p = document_position_at(doc, offset, POSITION_UTF16);
    *line = (size_t)p.line + 1;
    *column = (size_t)p.character + 1;
}

static int severity_rank(Severity s) { return (int)s; }

void finding_fingerprints(const Document *doc, const FindingList *findings, char (*hex)[SHA256_HEX_CHARS + 1]) {
    size_t n = findings->count;
    char **keys = calloc(n ? n : 1, sizeof *keys);
    size_t *lens = calloc(n ? n : 1, sizeof *lens);
    for (size_t i = 0; keys && lens && i < n; i++) {
        const Finding *f = &findings->items[i];
        Position a = document_position_at(doc, f->range.start, POSITION_UTF8);
        Position b = document_position_at(doc, f->range.end, POSITION_UTF8);
        if (b.line > a.line && b.character == 0) b.line--; /* a range that ends at a line's start */
        size_t first = doc->line_starts[a.line], last = document_line_end(doc, b.line);
        size_t cap = strlen(f->code) + 2 + (last - first) + (b.line - a.line) + 1;
        char *k = malloc(cap);
        if (!k) continue;
        size_t len = (size_t)sprintf(k, "%s", f->code) + 1; /* the NUL separates the code from the text */
        for (uint32_t l = a.line; l <= b.line; l++) {
            size_t s = doc->line_starts[l], e = document_line_end(doc, l);
            while (s < e && isspace((unsigned char)doc->text[s])) s++;
            while (e > s && isspace((unsigned char)doc->text[e - 1])) e--;
            if (l > a.line) k[len++] = '\n';
            memcpy(k + len, doc->text + s, e - s);
            len += e - s;
        }
        keys[i] = k;
        lens[i] = len;
    }
    for (size_t i = 0; i < n; i++) {
        size_t occurrence = 0;
        for (size_t j = 0; keys && keys[i] && j < i; j++)
            if (keys[j] && lens[j] == lens[i] && memcmp(keys[j], keys[i], lens[i]) == 0) occurrence++;
        Sha256 s;
        sha256_init(&s);
        if (keys && keys[i]) sha256_update(&s, keys[i], lens[i]);
        else sha256_update(&s, findings->items[i].code, strlen(findings->items[i].code));
        char index[32];
        int m = snprintf(index, sizeof index, "%c%zu", '\0', occurrence);
        sha256_update(&s, index, (size_t)m);
        uint8_t digest[SHA256_DIGEST_BYTES];
        sha256_final(&s, digest);
        sha256_hex(digest, hex[i]);
    }
    for (size_t i = 0; keys && i < n; i++) free(keys[i]);
    free(keys);
    free(lens);
}

/* ---- SARIF ---------------------------------------------------------------------- */

static const char *sarif_level(Severity s) {
    return s == SEVERITY_ERROR ? "error" : s == SEVERITY_WARNING ? "warning" : "note";
}

static json_t *sarif_artifact(const PrOutput *o, const char *path) {
    char *rel = relative_path(o, path);
    json_t *j;
    if (rel) {
        char *uri = uri_encode(rel);
        j = json_pack("{s:s,s:s}", "uri", uri ? uri : "", "uriBaseId", SRCROOT);
        free(uri);
    } else {
        char *abs = realpath(path, NULL);
        char *uri = file_uri_from_path(abs ? abs : path);
        j = json_pack("{s:s}", "uri", uri ? uri : "");
        free(uri);
        free(abs);
    }
    free(rel);
    return j;
}

static json_t *sarif_region(const Document *doc, ByteRange r) {
    size_t sl, sc, el, ec;
    utf16_position(doc, r.start, &sl, &sc);
    utf16_position(doc, r.end, &el, &ec);
    return json_pack("{s:I,s:I,s:I,s:I}", "startLine", (json_int_t)sl, "startColumn", (json_int_t)sc, "endLine",
                     (json_int_t)el, "endColumn", (json_int_t)ec);
}

static json_t *sarif_location(const PrOutput *o, const char *path, const Document *doc, ByteRange r) {
    return json_pack("{s:{s:o,s:o}}", "physicalLocation", "artifactLocation", sarif_artifact(o, path), "region",
                     sarif_region(doc, r));
}

static long rule_index(const char *code) {
    size_t count;
    const Rule *const *rules = rules_all(&count);
    for (size_t i = 0; i < count; i++)
        if (strcmp(rules[i]->code, code) == 0) return (long)i;
    return -1;
}

static json_t *sarif_result(const PrOutput *o, const char *path, const Document *doc, const Finding *f,
                            const char *fingerprint) {
    json_t *r = json_pack("{s:s,s:s,s:{s:s},s:[o],s:{s:s}}", "ruleId", f->code, "level", sarif_level(f->severity),
                          "message", "text", f->message, "locations", sarif_location(o, path, doc, f->range),
                          "partialFingerprints", FINGERPRINT_KEY, fingerprint);
    long index = rule_index(f->code);
    if (index >= 0) json_object_set_new(r, "ruleIndex", json_integer(index));
    if (f->related_count) {
        json_t *related = json_array();
        for (size_t i = 0; i < f->related_count; i++) {
            json_t *loc = sarif_location(o, path, doc, f->related[i].range);
            json_object_set_new(loc, "id", json_integer((json_int_t)i));
            json_object_set_new(loc, "message", json_pack("{s:s}", "text", f->related[i].message));
            json_array_append_new(related, loc);
        }
        json_object_set_new(r, "relatedLocations", related);
    }
    if (f->fix_count) {
        json_t *fixes = json_array();
        for (size_t i = 0; i < f->fix_count; i++) {
            json_t *replacements = json_array();
            for (size_t k = 0; k < f->fixes[i].edit_count; k++)
                json_array_append_new(replacements,
                                      json_pack("{s:o,s:{s:s}}", "deletedRegion",
                                                sarif_region(doc, f->fixes[i].edits[k].range), "insertedContent",
                                                "text", f->fixes[i].edits[k].new_text));
            json_array_append_new(
                fixes, json_pack("{s:{s:s},s:[{s:o,s:o}]}", "description", "text", f->fixes[i].title,
                                 "artifactChanges", "artifactLocation", sarif_artifact(o, path), "replacements",
                                 replacements));
        }
        json_object_set_new(r, "fixes", fixes);
    }
    json_t *props = json_pack("{s:s,s:o}", "severity", severity_name(f->severity), "evidence",
                              finding_evidence_json(f));
    if (f->fix_count) json_object_set_new(props, "fixSafe", json_boolean(f->fixes[0].safe));
    if (f->advice) json_object_set_new(props, "advice", json_string(f->advice));
    if (f->gain.present) {
        json_object_set_new(props, "gainSeconds", json_real(f->gain.seconds));
        json_object_set_new(props, "gainScope", json_string(f->gain.scope ? f->gain.scope : "program"));
        json_object_set_new(props, "gain", finding_gain_json(f));
    }
    json_object_set_new(r, "properties", props);
    return r;
}

/* the first paragraph of the rule's documentation, headings skipped */
static char *first_paragraph(const char *doc, const char *fallback) {
    if (!doc) return strdup(fallback);
    const char *p = doc;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        if (n == 0 || p[0] == '#') {
            p += n + (eol ? 1 : 0);
            continue;
        }
        const char *end = strstr(p, "\n\n");
        const char *h = strstr(p, "\n#");
        if (!end || (h && h < end)) end = h;
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char *out = strndup(p, len);
        for (char *c = out; c && *c; c++)
            if (*c == '\n') *c = ' ';
        return out;
    }
    return strdup(fallback);
}

static char *rule_page_text(const Rule *rule) {
    char *buf = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&buf, &size);
    if (!m) return NULL;
    rule_docs_write_page(m, rule);
    fclose(m);
    return buf;
}

static json_t *sarif_rules(char **information_uri) {
    size_t count;
    const Rule *const *rules = rules_all(&count);
    json_t *out = json_array();
    for (size_t i = 0; i < count; i++) {
        const Rule *r = rules[i];
        char *full = first_paragraph(r->documentation, r->summary);
        char *page = rule_page_text(r);
        json_t *tags = json_pack("[s]", r->correctness ? "correctness" : "performance");
        char langs[64];
        snprintf(langs, sizeof langs, "%s", rule_languages_text(r->languages));
        for (char *t = strtok(langs, ","); t; t = strtok(NULL, ","))
            if (strcmp(t, "-") != 0) json_array_append_new(tags, json_string(t));
        if (rule_needs_profile(r)) json_array_append_new(tags, json_string("profile"));
        json_t *rule = json_pack("{s:s,s:s,s:{s:s},s:{s:s},s:{s:s,s:s},s:{s:s},s:{s:o}}", "id", r->code, "name",
                                 r->name, "shortDescription", "text", r->summary, "fullDescription", "text",
                                 full ? full : r->summary, "help", "text", r->summary, "markdown",
                                 page ? page : r->summary, "defaultConfiguration", "level",
                                 sarif_level(r->severity), "properties", "tags", tags);
        char *link = rule_page_link(r->code);
        if (link) {
            json_object_set_new(rule, "helpUri", json_string(link));
            /* the index beside the pages: .../rules/CODE.md -> .../rules.md */
            char *slash = strrchr(link, '/');
            if (!*information_uri && slash && slash > link) {
                *slash = '\0';
                *information_uri = format_string("%s.md", link);
            }
        }
        free(link);
        free(full);
        free(page);
        json_array_append_new(out, rule);
    }
    return out;
}

/* SARIF's baselineState on every result (all reported ones are new; the
 * known ones are left out like the other formats leave them out), and the
 * counts in the run's property bag: the fixed ones are no results ("absent"
 * results would be shown as alerts by readers that ignore baselineState). */
static void sarif_filter_properties(json_t *run, json_t *results, const CheckSummary *s) {
    if (!s->diff_base && !s->baseline) return;
    json_t *props = json_object();
    if (s->diff_base)
        json_object_set_new(props, "diffBase",
                            json_pack("{s:s,s:s,s:I,s:I}", "ref", s->diff_base, "commit",
                                      s->diff_base_commit ? s->diff_base_commit : "", "outsideChanges",
                                      (json_int_t)s->outside_changes, "filesUnchanged",
                                      (json_int_t)s->files_unchanged));
    if (s->baseline) {
        json_object_set_new(props, "baseline",
                            json_pack("{s:I,s:I,s:I}", "new", (json_int_t)s->findings, "unchanged",
                                      (json_int_t)s->baseline_known, "absent", (json_int_t)s->baseline_fixed));
        for (size_t i = 0; i < json_array_size(results); i++)
            json_object_set_new(json_array_get(results, i), "baselineState", json_string("new"));
    }
    json_object_set_new(run, "properties", props);
}

/* One notification for every CUDA file left out for want of the toolkit. */
static void sarif_cuda_skipped(PrOutput *o, const CheckSummary *s) {
    if (!s->cuda_skipped) return;
    char *msg = format_string("%zu CUDA file%s not analysed: %s", s->cuda_skipped, s->cuda_skipped == 1 ? "" : "s",
                              s->cuda_skip_reason ? s->cuda_skip_reason : "no CUDA toolkit");
    json_array_append_new(o->notifications, json_pack("{s:s,s:{s:s},s:{s:s}}", "level", "warning", "message", "text",
                                                      msg, "descriptor", "id", "cuda-toolkit-missing"));
    free(msg);
}

static void sarif_finish(PrOutput *o, const CheckSummary *s) {
    sarif_cuda_skipped(o, s);
    char *information_uri = NULL;
    json_t *driver = json_pack("{s:s,s:s,s:s,s:o}", "name", "advise", "version", ADVISE_VERSION, "semanticVersion",
                               ADVISE_VERSION, "rules", sarif_rules(&information_uri));
    if (information_uri) json_object_set_new(driver, "informationUri", json_string(information_uri));
    free(information_uri);
    json_t *invocation = json_pack("{s:b,s:o}", "executionSuccessful", !o->failed, "toolExecutionNotifications",
                                   o->notifications);
    json_t *run = json_pack("{s:{s:o},s:[o],s:s,s:o}", "tool", "driver", driver, "invocations", invocation,
                            "columnKind", "utf16CodeUnits", "results", o->results);
    sarif_filter_properties(run, o->results, s);
    o->results = o->notifications = NULL;
    if (o->root) {
        char *uri = file_uri_from_path(o->root);
        char *dir = uri ? format_string("%s%s", uri, uri[strlen(uri) - 1] == '/' ? "" : "/") : NULL;
        if (dir) json_object_set_new(run, "originalUriBaseIds", json_pack("{s:{s:s}}", SRCROOT, "uri", dir));
        free(uri);
        free(dir);
    }
    json_t *doc = json_pack("{s:s,s:s,s:[o]}", "$schema", "https://json.schemastore.org/sarif-2.1.0.json",
                            "version", "2.1.0", "runs", run);
    json_dumpf(doc, o->out, JSON_INDENT(2));
    fputc('\n', o->out);
    json_decref(doc);
}

/* ---- GitLab Code Quality ----------------------------------------------------------- */

static const char *gitlab_severity(Severity s) {
    return s == SEVERITY_ERROR ? "critical" : s == SEVERITY_WARNING ? "major" : s == SEVERITY_INFO ? "minor" : "info";
}

static json_t *gitlab_issue(const PrOutput *o, const char *path, const Document *doc, const Finding *f,
                            const char *fingerprint) {
    size_t sl, sc, el, ec;
    display_position(doc, f->range.start, &sl, &sc);
    display_position(doc, f->range.end, &el, &ec);
    char *shown = shown_path(o, path);
    char *description = format_string("%s [%s] %s", f->code, f->name, f->message);
    json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:[s],s:{s:s,s:{s:I,s:I}}}", "description",
                          description ? description : f->message, "check_name", f->code, "fingerprint", fingerprint,
                          "severity", gitlab_severity(f->severity), "categories", "Performance", "location", "path",
                          shown ? shown : path, "lines", "begin", (json_int_t)sl, "end", (json_int_t)el);
    free(shown);
    free(description);
    return j;
}

/* ---- GitHub workflow commands ----------------------------------------------------- */

char *github_escape(const char *s, bool property) {
    char *out = malloc(strlen(s) * 3 + 1), *w = out;
    if (!out) return NULL;
    for (const char *p = s; *p; p++) {
        switch (*p) {
        case '%': w += sprintf(w, "%%25"); break;
        case '\r': w += sprintf(w, "%%0D"); break;
        case '\n': w += sprintf(w, "%%0A"); break;
        case ':':
            if (property) w += sprintf(w, "%%3A");
            else *w++ = *p;
            break;
        case ',':
            if (property) w += sprintf(w, "%%2C");
            else *w++ = *p;
            break;
        default: *w++ = *p;
        }
    }
    *w = '\0';
    return out;
}

static char *github_message(const Finding *f) {
    char *buf = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&buf, &size);
    if (!m) return NULL;
    fputs(f->message, m);
    for (size_t i = 0; i < f->evidence_count; i++) {
        char *text = evidence_render(&f->evidence[i]);
        fprintf(m, "\n%s: %s", evidence_kind_name(f->evidence[i].kind), text ? text : "");
        free(text);
    }
    if (f->gain.present) {
        char seconds[UNITS_BUF];
        fprintf(m, "\nest. gain %s (%s)", units_seconds(f->gain.seconds, seconds, sizeof seconds),
                f->gain.scope ? f->gain.scope : "program");
    }
    if (f->advice && !f->fix_count) fprintf(m, "\nwhat to do: %s", f->advice);
    fclose(m);
    return buf;
}

static void github_collect(PrOutput *o, const char *path, const Document *doc, const Finding *f) {
    if (o->count == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 16;
        GhItem *items = realloc(o->items, cap * sizeof *items);
        if (!items) return;
        o->items = items;
        o->cap = cap;
    }
    GhItem *g = &o->items[o->count++];
    *g = (GhItem){.severity = f->severity, .has_gain = f->gain.present, .gain = f->gain.seconds,
                  .path = shown_path(o, path), .code = f->code, .name = f->name, .message = github_message(f)};
    display_position(doc, f->range.start, &g->line, &g->col);
    display_position(doc, f->range.end, &g->end_line, &g->end_col);
}

/* most costly first: estimated gain, then severity, then place */
static int gh_compare(const void *pa, const void *pb) {
    const GhItem *a = pa, *b = pb;
    if (a->has_gain != b->has_gain) return a->has_gain ? -1 : 1;
    if (a->has_gain && a->gain != b->gain) return a->gain > b->gain ? -1 : 1;
    if (a->severity != b->severity) return severity_rank(a->severity) - severity_rank(b->severity);
    int c = strcmp(a->path ? a->path : "", b->path ? b->path : "");
    if (c) return c;
    return a->line < b->line ? -1 : a->line > b->line;
}

static int gh_type(Severity s) { return s == SEVERITY_ERROR ? 0 : s == SEVERITY_WARNING ? 1 : 2; }
static const char *const GH_COMMAND[] = {"error", "warning", "notice"};

static void markdown_cell(FILE *out, const char *s) {
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", out);
        else if (*s == '\n' || *s == '\r') fputs("<br>", out);
        else fputc(*s, out);
    }
}

static void github_summary(const PrOutput *o, size_t files_checked, size_t left_out, const char *note) {
    FILE *s = fopen(o->step_summary, "a");
    if (!s) {
        fprintf(stderr, "advise: cannot append to $GITHUB_STEP_SUMMARY (%s)\n", o->step_summary);
        return;
    }
    size_t by_type[3] = {0};
    for (size_t i = 0; i < o->count; i++) by_type[gh_type(o->items[i].severity)]++;
    fprintf(s, "## advise check\n\n%zu finding%s in %zu file%s: %zu error%s, %zu warning%s, %zu notice%s.\n",
            o->count, o->count == 1 ? "" : "s", files_checked, files_checked == 1 ? "" : "s", by_type[0],
            by_type[0] == 1 ? "" : "s", by_type[1], by_type[1] == 1 ? "" : "s", by_type[2],
            by_type[2] == 1 ? "" : "s");
    if (note) fprintf(s, "\nFiltered: %s.\n", note);
    if (o->count) {
        size_t top = o->count < SUMMARY_TOP ? o->count : SUMMARY_TOP;
        fprintf(s, "\nTop %zu, ranked by estimated gain (measured by a profile), then severity:\n\n", top);
        fputs("| # | Rule | Where | Severity | Est. gain | Message |\n|---|---|---|---|---|---|\n", s);
        for (size_t i = 0; i < top; i++) {
            const GhItem *g = &o->items[i];
            char seconds[UNITS_BUF];
            fprintf(s, "| %zu | `%s` %s | `", i + 1, g->code, g->name);
            markdown_cell(s, g->path ? g->path : "");
            fprintf(s, ":%zu` | %s | %s | ", g->line, severity_name(g->severity),
                    g->has_gain ? units_seconds(g->gain, seconds, sizeof seconds) : "-");
            markdown_cell(s, g->message ? g->message : "");
            fputs(" |\n", s);
        }
    }
    if (left_out)
        fprintf(s, "\n%zu finding%s %s not annotated: GitHub shows at most %d annotations of each type per step.\n",
                left_out, left_out == 1 ? "" : "s", left_out == 1 ? "was" : "were", GITHUB_ANNOTATION_CAP);
    fputc('\n', s);
    fclose(s);
}

static void github_finish(PrOutput *o, const CheckSummary *s, const char *note) {
    size_t files_checked = s->files_checked;
    if (o->count) qsort(o->items, o->count, sizeof *o->items, gh_compare);
    size_t by_type[3] = {0};
    for (size_t i = 0; i < o->count; i++) by_type[gh_type(o->items[i].severity)]++;
    size_t caps[3] = {GITHUB_ANNOTATION_CAP, GITHUB_ANNOTATION_CAP, GITHUB_ANNOTATION_CAP};
    if (s->cuda_skipped) { /* said once, first, in a warning's place */
        char *msg = format_string("%zu CUDA file%s not analysed: %s", s->cuda_skipped, s->cuda_skipped == 1 ? "" : "s",
                                  s->cuda_skip_reason ? s->cuda_skip_reason : "no CUDA toolkit");
        char *escaped = msg ? github_escape(msg, false) : NULL;
        fprintf(o->out, "::warning title=advise: CUDA files not analysed::%s\n", escaped ? escaped : "");
        free(escaped);
        free(msg);
        caps[1]--;
    }
    size_t left_out = 0;
    for (int t = 0; t < 3; t++) left_out += by_type[t] > caps[t] ? by_type[t] - caps[t] : 0;
    if (left_out && by_type[2] >= caps[2]) { /* the closing notice takes a notice's place */
        caps[2]--;
        left_out++;
    }
    size_t shown[3] = {0};
    for (size_t i = 0; i < o->count; i++) {
        const GhItem *g = &o->items[i];
        int t = gh_type(g->severity);
        if (shown[t] >= caps[t]) continue;
        shown[t]++;
        char *title = format_string("%s %s", g->code, g->name);
        char *file = github_escape(g->path ? g->path : "", true), *tt = github_escape(title ? title : g->code, true);
        char *msg = github_escape(g->message ? g->message : "", false);
        fprintf(o->out, "::%s file=%s,line=%zu,col=%zu,endLine=%zu,endColumn=%zu,title=%s::%s\n", GH_COMMAND[t],
                file ? file : "", g->line, g->col, g->end_line, g->end_col, tt ? tt : "", msg ? msg : "");
        free(title);
        free(file);
        free(tt);
        free(msg);
    }
    if (left_out)
        fprintf(o->out,
                "::notice title=advise::%zu more finding%s not annotated (GitHub shows at most %d errors, %d "
                "warnings and %d notices per step); run advise check for all %zu\n",
                left_out, left_out == 1 ? "" : "s", GITHUB_ANNOTATION_CAP, GITHUB_ANNOTATION_CAP,
                GITHUB_ANNOTATION_CAP, o->count);
    if (o->step_summary) github_summary(o, files_checked, left_out, note);
}

/* ---- the interface ------------------------------------------------------------------ */

void pr_output_file(PrOutput *o, const char *path, const Document *doc, const FindingList *findings,
                    const char (*fingerprints)[SHA256_HEX_CHARS + 1]) {
    if (!findings->count) return;
    char (*hex)[SHA256_HEX_CHARS + 1] = NULL;
    if (!fingerprints && o->format != PR_GITHUB) {
        hex = calloc(findings->count, sizeof *hex);
        if (!hex) return;
        finding_fingerprints(doc, findings, hex);
        fingerprints = (const char (*)[SHA256_HEX_CHARS + 1])hex;
    }
    for (size_t i = 0; i < findings->count; i++) {
        const Finding *f = &findings->items[i];
        if (o->format == PR_SARIF) json_array_append_new(o->results, sarif_result(o, path, doc, f, fingerprints[i]));
        else if (o->format == PR_GITLAB)
            json_array_append_new(o->results, gitlab_issue(o, path, doc, f, fingerprints[i]));
        else github_collect(o, path, doc, f);
    }
    free(hex);
}

void pr_output_error(PrOutput *o, const char *path, const char *message) {
    o->failed = true;
    if (o->format == PR_SARIF)
        json_array_append_new(o->notifications,
                              json_pack("{s:s,s:{s:s},s:[{s:{s:o}}]}", "level", "error", "message", "text", message,
                                        "locations", "physicalLocation", "artifactLocation",
                                        sarif_artifact(o, path)));
    else if (o->format == PR_GITHUB) {
        char *file = github_escape(path, true), *msg = github_escape(message, false);
        fprintf(o->out, "::error file=%s,title=advise::%s\n", file ? file : "", msg ? msg : "");
        free(file);
        free(msg);
    }
}

void pr_output_parse_failure(PrOutput *o, const char *path, size_t line, size_t column, const char *message) {
    if (o->format == PR_SARIF)
        json_array_append_new(
            o->notifications,
            json_pack("{s:s,s:{s:s},s:[{s:{s:o,s:{s:I,s:I}}}]}", "level", "warning", "message", "text", message,
                      "locations", "physicalLocation", "artifactLocation", sarif_artifact(o, path), "region",
                      "startLine", (json_int_t)line, "startColumn", (json_int_t)column));
    else if (o->format == PR_GITHUB) {
        char *shown = shown_path(o, path);
        char *file = github_escape(shown ? shown : path, true), *msg = github_escape(message, false);
        fprintf(o->out, "::warning file=%s,line=%zu,col=%zu,title=advise%%3A file checked in part::%s\n",
                file ? file : "", line, column, msg ? msg : "");
        free(shown);
        free(file);
        free(msg);
    }
}

/* "only lines changed since main: 3 findings on other lines left out; baseline: ..." for GitHub's step
 * summary and stderr; NULL when neither filter was on */
static char *filter_note(const CheckSummary *s) {
    if (!s->diff_base && !s->baseline) return NULL;
    char *diff = s->diff_base ? format_string("only lines changed since %s: %zu finding%s on other lines left out, "
                                              "%zu unchanged file%s not checked",
                                              s->diff_base, s->outside_changes, s->outside_changes == 1 ? "" : "s",
                                              s->files_unchanged, s->files_unchanged == 1 ? "" : "s")
                              : NULL;
    char *base = s->baseline ? format_string("baseline: %zu new, %zu known (left out), %zu fixed", s->findings,
                                             s->baseline_known, s->baseline_fixed)
                             : NULL;
    char *note = format_string("%s%s%s", diff ? diff : "", diff && base ? "; " : "", base ? base : "");
    free(diff);
    free(base);
    return note;
}

void pr_output_finish(PrOutput *o, const CheckSummary *s) {
    char *note = filter_note(s);
    if (o->format == PR_SARIF) sarif_finish(o, s);
    else if (o->format == PR_GITHUB) github_finish(o, s, note);
    else {
        json_dumpf(o->results, o->out, JSON_INDENT(2));
        fputc('\n', o->out);
    }
    if (note && o->format != PR_SARIF) fprintf(stderr, "advise: %s\n", note); /* GitLab's report has no place for it */
    free(note);
}

void pr_output_free(PrOutput *o) {
    if (!o) return;
    json_decref(o->results);
    json_decref(o->notifications);
    for (size_t i = 0; i < o->count; i++) {
        free(o->items[i].path);
        free(o->items[i].message);
    }
    free(o->items);
    free(o->root);
    free(o->step_summary);
    free(o);
}
