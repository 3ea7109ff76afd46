#include "server/render/check_output.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "advise_version.h" /* ADVISE_VERSION: project(VERSION) in CMakeLists.txt */
#include "server/render/check_pr_output.h"
#include "server/render/finding_json.h"

struct CheckOutput {
    OutputFormat format;
    FILE *out;
    bool show_source;
    json_t *findings; /* JSON mode */
    json_t *errors;
    json_t *parse_failures;
    PrOutput *pr; /* SARIF, GitHub, GitLab */
};

bool output_format_parse(const char *name, OutputFormat *out) {
    static const char *const names[] = {"text", "json", "sarif", "github", "gitlab"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (OutputFormat)i;
            return true;
        }
    return false;
}

void display_position(const Document *doc, size_t offset, size_t *line, size_t *column) {
    Position p = document_position_at(doc, offset, POSITION_UTF32);
    *line = (size_t)p.line + 1;
    *column = (size_t)p.character + 1;
}

CheckOutput *check_output_new(OutputFormat format, FILE *out, const CheckOutputOptions *options) {
    CheckOutput *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->format = format;
    o->out = out;
    o->show_source = options && options->show_source;
    if (format >= FORMAT_SARIF) {
        o->pr = pr_output_new(format == FORMAT_SARIF ? PR_SARIF : format == FORMAT_GITHUB ? PR_GITHUB : PR_GITLAB, out,
                              options ? options->root : NULL, options ? options->step_summary : NULL);
        if (!o->pr) {
            free(o);
            return NULL;
        }
    }
    if (format == FORMAT_JSON) {
        o->findings = json_array();
        o->errors = json_array();
        o->parse_failures = json_array();
    }
    return o;
}

/* prints a source line with control characters made harmless */
static void put_sanitized(FILE *out, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        fputc(c < 0x20 && c != '\t' ? '?' : c == 0x7F ? '?' : c, out);
    }
}

static void text_finding(CheckOutput *o, const char *path, const Document *doc, const Finding *f) {
    size_t line, col;
    display_position(doc, f->range.start, &line, &col);
    fprintf(o->out, "%s:%zu:%zu: %s [%s] ", path, line, col, f->code, f->name);
    put_sanitized(o->out, f->message, strlen(f->message));
    fputc('\n', o->out);
    if (o->show_source) {
        size_t l = line - 1;
        size_t a = doc->line_starts[l], b = document_line_end(doc, l);
        fputs("    ", o->out);
        put_sanitized(o->out, doc->text + a, b - a);
        fputs("\n    ", o->out);
        /* the caret line keeps tabs so that it lines up under the source */
        size_t i = a;
        while (i < f->range.start && i < b) {
            uint32_t cp;
            size_t k = utf8_decode(doc->text, doc->length, i, &cp);
            fputc(doc->text[i] == '\t' ? '\t' : ' ', o->out);
            i += k;
        }
        size_t end = f->range.end < b ? f->range.end : b;
        size_t carets = 0;
        while (i < end) {
            uint32_t cp;
            i += utf8_decode(doc->text, doc->length, i, &cp);
            carets++;
        }
        if (carets == 0) carets = 1;
        for (size_t k = 0; k < carets; k++) fputc('^', o->out);
        fputc('\n', o->out);
    }
    /* each item says what it is: "= measured:", "= note:", "= model:", "= caveat:" */
    for (size_t i = 0; i < f->evidence_count; i++) {
        char *text = evidence_render(&f->evidence[i]);
        fprintf(o->out, "    = %s: ", evidence_kind_name(f->evidence[i].kind));
        if (text) put_sanitized(o->out, text, strlen(text));
        fputc('\n', o->out);
        free(text);
    }
    if (f->gain.present) {
        char seconds[UNITS_BUF];
        fprintf(o->out, "    = est. gain %s (%s): ", units_seconds(f->gain.seconds, seconds, sizeof seconds),
                f->gain.scope ? f->gain.scope : "program");
        char *model = f->gain.model.text ? evidence_render(&f->gain.model) : NULL;
        if (model) put_sanitized(o->out, model, strlen(model));
        fputc('\n', o->out);
        free(model);
    }
    for (size_t i = 0; i < f->related_count; i++) {
        size_t rl, rc;
        display_position(doc, f->related[i].range.start, &rl, &rc);
        fprintf(o->out, "    = see %s:%zu:%zu: %s\n", path, rl, rc, f->related[i].message);
    }
    for (size_t i = 0; i < f->fix_count; i++)
        fprintf(o->out, "    = fix (%s): %s\n", f->fixes[i].safe ? "safe" : "unsafe", f->fixes[i].title);
}

static json_t *json_range(const Document *doc, ByteRange r) {
    size_t sl, sc, el, ec;
    display_position(doc, r.start, &sl, &sc);
    display_position(doc, r.end, &el, &ec);
    return json_pack("{s:{s:I,s:I,s:I},s:{s:I,s:I,s:I}}", "start", "line", (json_int_t)sl, "column", (json_int_t)sc,
                     "offset", (json_int_t)r.start, "end", "line", (json_int_t)el, "column", (json_int_t)ec,
                     "offset", (json_int_t)r.end);
}

static json_t *json_finding(const char *path, const Document *doc, const Finding *f) {
    json_t *evidence = finding_evidence_json(f), *fixes = json_array(), *related = json_array();
    for (size_t i = 0; i < f->related_count; i++)
        json_array_append_new(related, json_pack("{s:o,s:s}", "range", json_range(doc, f->related[i].range),
                                                 "message", f->related[i].message));
    for (size_t i = 0; i < f->fix_count; i++) {
        json_t *edits = json_array();
        for (size_t k = 0; k < f->fixes[i].edit_count; k++)
            json_array_append_new(edits, json_pack("{s:o,s:s}", "range", json_range(doc, f->fixes[i].edits[k].range),
                                                   "new_text", f->fixes[i].edits[k].new_text));
        json_array_append_new(fixes, json_pack("{s:s,s:b,s:o}", "title", f->fixes[i].title, "safe",
                                               f->fixes[i].safe, "edits", edits));
    }
    json_t *gain = finding_gain_json(f);
    json_t *out = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o}", "path", path, "code", f->code, "name",
                            f->name, "severity", severity_name(f->severity), "message", f->message, "range",
                            json_range(doc, f->range), "evidence", evidence, "gain", gain, "related", related,
                            "fixes", fixes);
    /* only where the rule says what to do: a finding without it keeps the same object */
    if (out && f->advice) json_object_set_new(out, "advice", json_string(f->advice));
    return out;
}

void check_output_file(CheckOutput *o, const char *path, const Document *doc, const FindingList *findings) {
    check_output_file_fingerprinted(o, path, doc, findings, NULL);
}

void check_output_file_fingerprinted(CheckOutput *o, const char *path, const Document *doc,
                                     const FindingList *findings, const char (*fingerprints)[SHA256_HEX_CHARS + 1]) {
    if (o->pr) {
        pr_output_file(o->pr, path, doc, findings, fingerprints);
        return;
    }
    for (size_t i = 0; i < findings->count; i++) {
        if (o->format == FORMAT_TEXT) text_finding(o, path, doc, &findings->items[i]);
        else json_array_append_new(o->findings, json_finding(path, doc, &findings->items[i]));
    }
}

void check_output_error(CheckOutput *o, const char *path, const char *message) {
    fprintf(stderr, "advise: %s: %s\n", path, message);
    if (o->pr) pr_output_error(o->pr, path, message);
    if (o->format == FORMAT_JSON) json_array_append_new(o->errors, json_pack("{s:s,s:s}", "path", path, "message", message));
}

void check_output_parse_failure(CheckOutput *o, const char *path, size_t line, size_t column, const char *message) {
    fprintf(stderr, "advise: %s:%zu:%zu: %s\n", path, line, column, message);
    if (o->pr) pr_output_parse_failure(o->pr, path, line, column, message);
    if (o->format == FORMAT_JSON)
        json_array_append_new(o->parse_failures, json_pack("{s:s,s:I,s:I,s:s}", "path", path, "line", (json_int_t)line,
                                                           "column", (json_int_t)column, "message", message));
}

static void plural(FILE *out, size_t n, const char *one, const char *many) { fprintf(out, "%zu %s", n, n == 1 ? one : many); }

void check_output_finish(CheckOutput *o, const CheckSummary *s) {
    if (o->pr) {
        pr_output_finish(o->pr, s);
        return;
    }
    if (o->format == FORMAT_JSON) {
        json_t *summary = json_pack(
            "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "files_checked", (json_int_t)s->files_checked,
            "findings", (json_int_t)s->findings, "error", (json_int_t)s->by_severity[SEVERITY_ERROR], "warning",
            (json_int_t)s->by_severity[SEVERITY_WARNING], "info", (json_int_t)s->by_severity[SEVERITY_INFO], "hint",
            (json_int_t)s->by_severity[SEVERITY_HINT], "fixable", (json_int_t)s->fixable_safe, "unsafe_fixable",
            (json_int_t)s->fixable_unsafe, "fixed", (json_int_t)s->fixed, "suppressed", (json_int_t)s->suppressed,
            "errors", (json_int_t)s->errors, "parse_failures", (json_int_t)s->parse_failures, "fixes_withheld",
            (json_int_t)s->fixes_withheld);
        /* format_version (and "version", its first name) change only when a field's meaning changes:
         * 2 made evidence typed items (docs/json-evidence.md) */
        json_t *doc = json_pack("{s:i,s:i,s:{s:s,s:s},s:o,s:o,s:o,s:o}", "version", CHECK_JSON_FORMAT_VERSION,
                                "format_version", CHECK_JSON_FORMAT_VERSION, "tool", "name", "advise", "version",
                                ADVISE_VERSION, "findings", o->findings, "errors", o->errors, "parse_failures",
                                o->parse_failures, "summary", summary);
        o->findings = o->errors = o->parse_failures = NULL;
        if (s->diff_base)
            json_object_set_new(summary, "diff_base",
                                json_pack("{s:s,s:s,s:I,s:I}", "ref", s->diff_base, "commit",
                                          s->diff_base_commit ? s->diff_base_commit : "", "outside_changes",
                                          (json_int_t)s->outside_changes, "files_unchanged",
                                          (json_int_t)s->files_unchanged));
        if (s->baseline)
            json_object_set_new(summary, "baseline",
                                json_pack("{s:I,s:I,s:I}", "new", (json_int_t)s->findings, "known",
                                          (json_int_t)s->baseline_known, "fixed", (json_int_t)s->baseline_fixed));
        if (s->cuda_skipped)
            json_object_set_new(summary, "cuda_skipped",
                                json_pack("{s:I,s:s}", "files", (json_int_t)s->cuda_skipped, "reason",
                                          s->cuda_skip_reason ? s->cuda_skip_reason : ""));
        if (s->baseline_written)
            json_object_set_new(summary, "baseline_written",
                                json_pack("{s:s,s:I}", "path", s->baseline_written, "findings",
                                          (json_int_t)s->baseline_recorded));
        json_dumpf(doc, o->out, JSON_INDENT(2));
        fputc('\n', o->out);
        json_decref(doc);
        return;
    }
    FILE *out = o->out;
    if (s->findings == 0) {
        fprintf(out, "No findings in ");
        plural(out, s->files_checked, "file", "files");
    } else {
        fprintf(out, "Found ");
        plural(out, s->findings, "finding", "findings");
        fprintf(out, " in ");
        plural(out, s->files_checked, "file", "files");
        const char *sep = " (";
        static const char *const names[][2] = {{"", ""}, {"error", "errors"}, {"warning", "warnings"},
                                               {"info", "info"}, {"hint", "hints"}};
        for (int sev = SEVERITY_ERROR; sev <= SEVERITY_HINT; sev++) {
            size_t n = s->by_severity[sev];
            if (!n) continue;
            fprintf(out, "%s%zu %s", sep, n, names[sev][n != 1]);
            sep = ", ";
        }
        fputs(")", out);
    }
    fputs(".", out);
    if (s->fix_mode && s->fixed) fprintf(out, " Fixed %zu in %zu %s.", s->fixed, s->files_fixed, s->files_fixed == 1 ? "file" : "files");
    if (!s->fix_mode && s->fixable_safe) fprintf(out, " %zu fixable with --fix.", s->fixable_safe);
    if (s->fixable_unsafe) fprintf(out, " %zu more with --fix --unsafe-fixes.", s->fixable_unsafe);
    if (s->suppressed) fprintf(out, " %zu suppressed by comments.", s->suppressed);
    if (s->parse_failures) {
        fprintf(out, " %zu %s did not parse cleanly: %s findings cover what parsed", s->parse_failures,
                s->parse_failures == 1 ? "file" : "files", s->parse_failures == 1 ? "its" : "their");
        if (s->fixes_withheld) fprintf(out, ", and %zu %s not applied by --fix", s->fixes_withheld,
                                       s->fixes_withheld == 1 ? "fix there is" : "fixes there are");
        fputs(".", out);
    }
    if (s->errors) fprintf(out, " %zu %s had problems (see the messages on stderr).", s->errors, s->errors == 1 ? "path" : "paths");
    if (s->cuda_skipped) {
        fputc(' ', out);
        plural(out, s->cuda_skipped, "CUDA file", "CUDA files");
        fputs(" not analysed: no CUDA toolkit (see stderr).", out);
    }
    if (s->diff_base) {
        fprintf(out, " Only lines changed since %s: ", s->diff_base);
        plural(out, s->outside_changes, "finding", "findings");
        fputs(" on other lines left out, ", out);
        plural(out, s->files_unchanged, "unchanged file", "unchanged files");
        fputs(" not checked.", out);
    }
    if (s->baseline) {
        fputs(" Baseline: ", out);
        plural(out, s->baseline_known, "known finding", "known findings");
        fprintf(out, " left out, %zu fixed.", s->baseline_fixed);
    }
    if (s->baseline_written) {
        fputs(" Recorded ", out);
        plural(out, s->baseline_recorded, "finding", "findings");
        fprintf(out, " in %s.", s->baseline_written);
    }
    fputc('\n', out);
}

void check_output_free(CheckOutput *o) {
    if (!o) return;
    json_decref(o->findings);
    json_decref(o->errors);
    json_decref(o->parse_failures);
    pr_output_free(o->pr);
    free(o);
}
