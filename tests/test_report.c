/* `advise report`: the text and HTML renderers on hand-made findings and
 * profiles (escaping, an empty profile, no findings, the timeline picture),
 * the HTML's tags balanced, and the figures' wording. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/aggregate.h"
#include "tests/cli_harness.h"
#include "profiler/profile_json.h"
#include "server/render/report_html.h"
#include "server/render/report_text.h"

/* ---- helpers ------------------------------------------------------------------------ */

typedef struct {
    char *text;
    size_t size;
} Captured;

static char *render(bool html, const ReportInput *in) {
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    cr_assert_not_null(f);
    cr_assert(html ? report_html_write(f, in) : report_text_write(f, in));
    fclose(f);
    return buf;
}

static size_t count_of(const char *haystack, const char *needle) {
    size_t n = 0;
    for (const char *p = strstr(haystack, needle); p; p = strstr(p + strlen(needle), needle)) n++;
    return n;
}

static RankedFinding *add_finding(RankedFindings *r, const char *path, unsigned line, const char *code,
                                  const char *name, Severity severity, const char *message, double cost) {
    r->items = realloc(r->items, (r->count + 1) * sizeof *r->items);
    RankedFinding *f = &r->items[r->count++];
    memset(f, 0, sizeof *f);
    f->path = strdup(path);
    f->line = line;
    f->column = 5;
    f->end_line = line;
    f->end_column = 9;
    f->finding.code = code;
    f->finding.name = name;
    f->finding.severity = severity;
    f->finding.message = strdup(message);
    f->cost_seconds = cost;
    return f;
}

static void free_findings(RankedFindings *r) {
    for (size_t i = 0; i < r->count; i++) {
        free(r->items[i].path);
        finding_free(&r->items[i].finding);
    }
    free(r->items);
    memset(r, 0, sizeof *r);
}

static void label(Profile *p, const char *name) {
    p->name = strdup(name);
    p->source = strdup("cupti");
    p->created = strdup("2026-11-30T15:19:33Z");
    p->tool = strdup("advise test");
}

/* A profile with one device, kernels, a copy, a sync and idle gaps between
 * work launched from train.py. */
static Profile *small_profile(const char *kernel_name, const char *path) {
    Aggregator *agg = agg_new();
    ProfDevice dev = {.id = 0, .name = "NVIDIA H200", .sm_count = 132, .cc_major = 9, .memory_bytes = 150109880320ull};
    agg_device(agg, &dev);
    int a = agg_site(agg, path, 10, "step"), b = agg_site(agg, path, 20, "step");
    uint64_t t = 0;
    for (int i = 0; i < 12; i++) {
        AggKernel k = {.name = kernel_name, .grid = {64, 1, 1}, .block = {256, 1, 1}, .start_ns = t,
                       .end_ns = t + 1000 + (uint64_t)i * 10, .site = i % 2 ? b : a};
        agg_kernel(agg, &k);
        t += 1000 + (uint64_t)i * 10 + 5000 * (uint64_t)(i + 1); /* growing idle gaps */
    }
    AggKernel other = {.name = "small_kernel", .grid = {1, 1, 1}, .block = {32, 1, 1}, .start_ns = t,
                       .end_ns = t + 300, .site = a};
    agg_kernel(agg, &other);
    agg_sync(agg, PROF_SYNC_STREAM, 7000, b);
    ProfProcess proc = {.pid = 77, .rank = -1, .local_rank = -1, .world_size = -1, .wall_ns = 2000000};
    Profile *p = agg_to_profile(agg, &proc);
    agg_free(agg);
    label(p, "small");
    return p;
}

/* ---- the HTML is well-formed enough ----------------------------------------------------
 * Every tag opened is closed, in order; void elements and self-closed SVG
 * elements stand alone; <style> content is skipped; attribute values are
 * quoted; no '<' appears in text. Returns NULL or what is wrong. */
static const char *const void_elements[] = {"meta", "br", "wbr", "img", "input", "link", "hr", "col", NULL};

static bool is_void(const char *name, size_t n) {
    for (size_t i = 0; void_elements[i]; i++)
        if (strlen(void_elements[i]) == n && strncmp(void_elements[i], name, n) == 0) return true;
    return false;
}

static char problem[512];

static const char *check_balanced(const char *html) {
    char stack[64][32];
    size_t depth = 0;
    const char *p = html;
    if (strncmp(p, "<!DOCTYPE html>", 15) != 0) return "no doctype";
    p += 15;
    while ((p = strchr(p, '<'))) {
        if (p[1] == '/') {
            const char *name = p + 2;
            size_t n = strcspn(name, ">");
            if (depth == 0) return "a closing tag with nothing open";
            depth--;
            if (strlen(stack[depth]) != n || strncmp(stack[depth], name, n) != 0) {
                snprintf(problem, sizeof problem, "</%.*s> closes <%.31s> at offset %zu", (int)(n > 40 ? 40 : n), name, stack[depth],
                         (size_t)(p - html));
                return problem;
            }
            p = name + n + 1;
            continue;
        }
        const char *name = p + 1;
        size_t n = strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
        if (n == 0) {
            snprintf(problem, sizeof problem, "a bare '<' in text at offset %zu: %.40s", (size_t)(p - html), p);
            return problem;
        }
        /* walk the attributes: quoted values may hold '>' */
        const char *q = name + n;
        bool self_closed = false;
        while (*q && *q != '>') {
            if (*q == '"') {
                const char *end = strchr(q + 1, '"');
                if (!end) return "an unterminated attribute value";
                q = end + 1;
                continue;
            }
            if (*q == '\'') return "single-quoted attribute (we emit double quotes)";
            if (*q == '/' && q[1] == '>') self_closed = true;
            if (*q == '=' && q[1] != '"') {
                snprintf(problem, sizeof problem, "an unquoted attribute at offset %zu", (size_t)(q - html));
                return problem;
            }
            q++;
        }
        if (!*q) return "an unterminated tag";
        if (!self_closed && !is_void(name, n)) {
            if (depth == 64 || n >= 32) return "too deep";
            memcpy(stack[depth], name, n);
            stack[depth][n] = '\0';
            depth++;
        }
        p = q + 1;
        if (n == 5 && strncmp(name, "style", 5) == 0) {
            p = strstr(p, "</style>");
            if (!p) return "unterminated style";
        }
    }
    if (depth) {
        snprintf(problem, sizeof problem, "<%s> left open", stack[depth - 1]);
        return problem;
    }
    return NULL;
}

Test(report_html, the_checker_catches_what_it_should) {
    cr_expect_null(check_balanced("<!DOCTYPE html>\n<html><body><p>a<br>b</p><svg><rect x=\"1\"/></svg></body></html>"));
    cr_expect_not_null(check_balanced("<!DOCTYPE html>\n<html><body><p>a</body></html>"));
    cr_expect_not_null(check_balanced("<!DOCTYPE html>\n<html><p>a <b> c</p></html>"));
    cr_expect_not_null(check_balanced("<!DOCTYPE html>\n<html><p>1 < 2</p></html>"));
    cr_expect_not_null(check_balanced("<!DOCTYPE html>\n<html><p class=x>a</p></html>"));
}

/* ---- figures --------------------------------------------------------------------------- */

Test(report_format, durations_and_bytes_read_well) {
    char b[UNITS_BUF];
    cr_expect_str_eq(units_ns(0, b, sizeof b), "0 ns");
    cr_expect_str_eq(units_ns(812, b, sizeof b), "812 ns");
    cr_expect_str_eq(units_ns(93633, b, sizeof b), "93.6 \xC2\xB5s");
    cr_expect_str_eq(units_ns(1561156, b, sizeof b), "1.56 ms");
    cr_expect_str_eq(units_ns(999999, b, sizeof b), "1.00 ms", "rounded up into the next unit");
    cr_expect_str_eq(units_ns(2410000000ull, b, sizeof b), "2.41 s");
    cr_expect_str_eq(units_format(q_seconds(-0.00137), b, sizeof b), "-1.37 ms");
    cr_expect_str_eq(units_seconds(0.000789, b, sizeof b), "789 \xC2\xB5s");
    cr_expect_str_eq(units_bytes(512, b, sizeof b), "512 bytes");
    cr_expect_str_eq(units_bytes(12582912, b, sizeof b), "12.6 MB");
}

Test(report_format, top_kernels_sum_configurations_by_name) {
    Profile *p = small_profile("gemm(float*)", "train.py");
    size_t n = 0;
    ReportKernel *k = report_top_kernels(p, &n);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(k[0].name, "gemm(float*)");
    cr_expect_eq(k[0].count, 12);
    cr_expect_str_eq(k[1].name, "small_kernel");
    cr_expect_eq(k[1].total_ns, 300);
    free(k);
    profile_free(p);
}

/* ---- text ------------------------------------------------------------------------------- */

Test(report_text, header_and_ranked_findings_with_evidence) {
    Profile *p = small_profile("gemm(float*)", "train.py");
    RankedFindings r = {.files_checked = 2};
    RankedFinding *a = add_finding(&r, "train.py", 20, "PY001", "host-sync-in-loop", SEVERITY_WARNING,
                                   "`loss.item()` waits for the GPU on every iteration", 0.0123);
    finding_measured(&a->finding, QV(q_count(12), q_ns(7000), q_ratio(0.004)), "{} syncs waited {} ({} of the run)");
    finding_caveat(&a->finding, "a static caveat");
    finding_set_gain(&a->finding, 0.0123, "program", NO_VALUES, "the waits go");
    finding_add_fix(&a->finding, "Accumulate on the GPU", false);
    RankedFinding *b = add_finding(&r, "train.py", 30, "PY009", "fp32-matmul-without-tf32", SEVERITY_HINT,
                                   "float32 matmuls", 0);
    b->stale = true;
    ReportProfile rp = {p, ".advise/profiles/small.json"};
    ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};
    char *out = render(false, &in);
    cr_expect(strstr(out, "profile  .advise/profiles/small.json (\"small\", recorded 2026-11-30T15:19:33Z)\n"), "%s",
              out);
    cr_expect(strstr(out, "GPU      NVIDIA H200 (132 SMs, compute capability 9.0, 150 GB)\n"), "%s", out);
    cr_expect(strstr(out, "run      2.00 ms; GPU busy "), "%s", out);
    cr_expect(strstr(out, "#1     12.3 ms  warning  train.py:20:5  PY001 host-sync-in-loop\n"
                          "     `loss.item()` waits for the GPU on every iteration\n"
                          "     - 12 syncs waited 7.00 \xC2\xB5s (0.4% of the run)\n"
                          "     - caveat: a static caveat\n"
                          "     gain: about 12.3 ms for the whole program; the waits go\n"
                          "     fix (unsafe): Accumulate on the GPU\n"),
              "%s", out);
    cr_expect(strstr(out, "#2           -  hint     train.py:30:5  PY009 fp32-matmul-without-tf32\n"), "%s", out);
    cr_expect(strstr(out, "     stale: the file changed since it was profiled"), "%s", out);
    cr_expect(strstr(out, "2 findings in 2 files checked (0 error, 1 warning, 0 info, 1 hint); 1 with a measured "
                          "cost.\n"),
              "%s", out);
    free(out);
    free_findings(&r);
    profile_free(p);
}

/* A profile with critical-path figures says how much of the GPU's work the
 * run waited for, and how long the host waited for the GPU; without them
 * (small_profile) nothing is said. */
Test(report_text, the_critical_path_in_the_header) {
    Profile *p = small_profile("gemm(float*)", "train.py");
    RankedFindings r = {.files_checked = 1};
    ReportProfile rp = {p, "small.json"};
    ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};
    char *out = render(false, &in);
    cr_expect_null(strstr(out, "critical path"), "%s", out);
    free(out);
    out = render(true, &in);
    cr_expect_null(strstr(out, "critical path"));
    free(out);
    uint64_t gpu = 0;
    for (size_t i = 0; i < p->kernel_count; i++) {
        p->kernels[i].critical = (CriticalTime){true, p->kernels[i].stats.total_ns / 4};
        gpu += p->kernels[i].stats.total_ns;
    }
    p->processes[0].host_wait_known = true;
    p->processes[0].host_wait_ns = 1500;
    char expected[256], critical[32], total[32];
    uint64_t quarter = 0;
    for (size_t i = 0; i < p->kernel_count; i++) quarter += p->kernels[i].critical.ns;
    units_ns(quarter, critical, sizeof critical);
    units_ns(gpu, total, sizeof total);
    snprintf(expected, sizeof expected,
             "         on the critical path %s of the GPU's %s (25%%): the rest was followed by the GPU waiting for "
             "the host; the host waited for the GPU 1.50 \xC2\xB5s\n",
             critical, total);
    out = render(false, &in);
    cr_expect(strstr(out, expected), "%s\nnot in\n%s", expected, out);
    free(out);
    out = render(true, &in);
    cr_expect(strstr(out, "GPU time on the critical path"), "%s", out);
    cr_expect(strstr(out, "host waiting for the GPU"));
    cr_expect_null(check_balanced(out));
    free(out);
    free_findings(&r);
    profile_free(p);
}

/* "What to do first" spreads a whole-program gain over the profiled run's
 * optimizer steps; a gain local to a kernel, or a run without steps, gets
 * no per-step figure. */
Test(report_text, what_to_do_first_per_step) {
    RankedFindings r = {.files_checked = 1};
    RankedFinding *a = add_finding(&r, "train.py", 20, "PY001", "host-sync-in-loop", SEVERITY_WARNING,
                                   "`loss.item()` waits", 0.6);
    finding_set_gain(&a->finding, 0.6, "program", NO_VALUES, "the waits go");
    a->profile_steps = 300;
    RankedFinding *b = add_finding(&r, "k.cu", 7, "PR010", "uncoalesced-global-access", SEVERITY_INFO, "sectors", 0.5);
    finding_set_gain(&b->finding, 0.5, "kernel", NO_VALUES, "fewer sectors");
    b->profile_steps = 300;
    RankedFinding *c = add_finding(&r, "eval.py", 9, "PY001", "host-sync-in-loop", SEVERITY_WARNING, "waits", 0.4);
    finding_set_gain(&c->finding, 0.4, "program", NO_VALUES, "the waits go");
    c->profile_steps = 1;
    /* a gain counted over the steady steps only is a share of a steady step */
    RankedFinding *d = add_finding(&r, "loader.py", 5, "PY014", "dataloader-without-workers", SEVERITY_WARNING,
                                   "waits for batches", 0.3);
    finding_set_gain(&d->finding, 0.3, "program", NO_VALUES, "the waits go");
    finding_gain_over_steady_steps(&d->finding);
    d->profile_steps = 300;
    d->profile_steady_steps = 250;
    a = &r.items[0]; /* add_finding reallocates the list */
    b = &r.items[1];
    c = &r.items[2];
    d = &r.items[3];
    cr_expect_float_eq(ranked_finding_gain_per_step(d), 0.0012, 1e-12);
    cr_expect_eq(ranked_finding_gain_steps(d), 250);
    cr_expect_float_eq(ranked_finding_gain_per_step(a), 0.002, 1e-12);
    cr_expect_eq(ranked_finding_gain_per_step(b), 0);
    cr_expect_eq(ranked_finding_gain_per_step(c), 0, "one step is not a rate");
    ReportInput in = {.findings = &r};
    char *out = render(false, &in);
    cr_expect(strstr(out, "  1. about 600 ms for the whole program (2.00 ms per step over 300 steps)  train.py:20  "
                          "PY001 host-sync-in-loop\n"),
              "%s", out);
    cr_expect(strstr(out, "  2. about 500 ms local to the kernel  k.cu:7  PR010"), "%s", out);
    cr_expect(strstr(out, "  3. about 400 ms for the whole program  eval.py:9  PY001"), "%s", out);
    cr_expect(strstr(out, "  4. about 300 ms for the whole program (1.20 ms per step over 250 steady steps)  "
                          "loader.py:5  PY014"),
              "%s", out);
    free(out);
    out = render(true, &in);
    cr_expect(strstr(out, "for the whole program (<span class=\"gain\">2.00 ms per step</span> over 300 steps)"), "%s",
              out);
    cr_expect(strstr(out, "(<span class=\"gain\">1.20 ms per step</span> over 250 steady steps)"), "%s", out);
    cr_expect_eq(count_of(out, "per step</span>"), 2, "%s", out);
    free(out);
    free_findings(&r);
}

Test(report_text, without_a_profile_and_without_findings) {
    RankedFindings r = {.files_checked = 1};
    ReportInput in = {.findings = &r};
    char *out = render(false, &in);
    cr_expect(strstr(out, "profile  none: findings are not ranked by measured cost"), "%s", out);
    cr_expect(strstr(out, "No findings in 1 file.\n"), "%s", out);
    free(out);
}

Test(report_text, an_empty_profile) {
    Profile *p = profile_new();
    label(p, "empty");
    RankedFindings r = {0};
    ReportProfile rp = {p, "empty.json"};
    ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};
    char *out = render(false, &in);
    cr_expect(strstr(out, "GPU      no GPU recorded\n"), "%s", out);
    cr_expect(strstr(out, "run      0 ns\n"), "%s", out);
    cr_expect(strstr(out, "No findings in 0 files.\n"), "%s", out);
    free(out);
    profile_free(p);
}

/* what a process left out (`advise profile --steps`, dropped records) is said in the header, once */
Test(report_text, what_processes_left_out_is_noted_once) {
    Profile *p = profile_new();
    label(p, "steps");
    const char *window = "--steps 300: recorded until the end of the process's optimizer step 300, then the profiler "
                         "detached and the rest of the run went without it";
    for (int i = 0; i < 3; i++) {
        ProfProcess proc = {.pid = 11 + i, .rank = i, .local_rank = i, .world_size = 3, .wall_ns = 4100000000u,
                            .error = (char *)(i < 2 ? window : "CUPTI dropped 12 activity records")};
        cr_assert_eq(profile_add_process(p, &proc), i);
    }
    RankedFindings r = {0};
    ReportProfile rp = {p, "steps.json"};
    ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};
    char *out = render(false, &in);
    char line[300];
    snprintf(line, sizeof line, "note     %s\n", window);
    cr_expect_eq(count_of(out, line), 1, "%s", out);
    cr_expect_eq(count_of(out, "note     CUPTI dropped 12 activity records\n"), 1, "%s", out);
    free(out);
    out = render(true, &in);
    cr_expect_eq(count_of(out, "<p class=\"note\">--steps 300: recorded until the end of the process&#39;s"), 1,
                 "%s", out);
    cr_expect_eq(count_of(out, "<p class=\"note\">CUPTI dropped 12 activity records</p>"), 1, "%s", out);
    free(out);
    profile_free(p);
}

/* ---- HTML ----------------------------------------------------------------------------- */

static const char *const NASTY = "<script>alert('x')</script> & \"quoted\"";

Test(report_html, every_string_is_escaped) {
    Profile *p = small_profile("void k<float, 4>(float const*, int) & \"co\" <script>", "src/<b>&\"x\".py");
    free(p->name);
    p->name = strdup(NASTY);
    RankedFindings r = {.files_checked = 1};
    RankedFinding *f = add_finding(&r, "src/<b>&\"x\".py", 10, "PY001", "host-sync-in-loop", SEVERITY_ERROR, NASTY, 1e-3);
    finding_measured(&f->finding, NO_VALUES, "%s", NASTY);
    finding_set_gain(&f->finding, 1e-3, "kernel", NO_VALUES, "%s", NASTY);
    finding_add_fix(&f->finding, NASTY, true);
    ReportProfile rp = {p, "<dir>/p&q.json"};
    ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};
    char *out = render(true, &in);
    cr_expect_null(strstr(out, "<script"), "nothing is injected");
    cr_expect_null(strstr(out, "src/<b>"));
    cr_expect_null(strstr(out, "<dir>"));
    cr_expect_null(strstr(out, "k<float"));
    cr_expect(strstr(out, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quoted&quot;"));
    cr_expect(strstr(out, "void k&lt;float, 4&gt;(float const*, int) &amp; &quot;co&quot; &lt;script&gt;"), "kernel");
    cr_expect(strstr(out, "src/&lt;b&gt;&amp;&quot;x&quot;.py"), "the finding's path and the gap sites");
    cr_expect(strstr(out, "&lt;dir&gt;/p&amp;q.json"));
    cr_expect_geq(count_of(out, "&lt;script&gt;alert"), 5, "title, message, evidence, gain model, fix");
    const char *why = check_balanced(out);
    cr_expect_null(why, "%s", why);
    free(out);
    free_findings(&r);
    profile_free(p);
}

Test(report_html, escape_handles_control_characters_and_null) {
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    report_html_escape(f, "a\x01" "b\tc\x7f");
    report_html_escape(f, NULL);
    fclose(f);
    cr_expect_str_eq(buf, "a&#xFFFD;b\tc&#xFFFD;");
    free(buf);
}

Test(report_html, a_self_contained_page_with_timeline_kernels_and_findings) {
    Profile *p = small_profile("gemm(float*)", "train.py");
    RankedFindings r = {.files_checked = 1};
    add_finding(&r, "train.py", 20, "PY001", "host-sync-in-loop", SEVERITY_WARNING, "waits", 0.002);
    ReportProfile rp = {p, "small.json"};
    ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};
    char *out = render(true, &in);
    const char *why = check_balanced(out);
    cr_expect_null(why, "%s", why);
    /* self-contained: no scripts, nothing fetched */
    cr_expect_null(strstr(out, "<script"));
    cr_expect_null(strstr(out, "src="));
    for (const char *h = strstr(out, "href="); h; h = strstr(h + 1, "href="))
        cr_expect_eq(h[6], '#', "links only within the page: %.40s", h);
    cr_expect(strstr(out, "<a href=\"#findings\">Findings (1)</a>"));
    cr_expect_null(strstr(out, "@import"));
    cr_expect_null(strstr(out, "url(http"));
    cr_expect(strstr(out, "<style>"));
    /* one SVG per timeline; every gap drawn, the largest 8 numbered */
    cr_assert_eq(p->timeline_count, 1);
    cr_expect_eq(count_of(out, "<svg "), 1);
    size_t gaps = p->gap_count;
    cr_assert_geq(gaps, 8, "the profile has %zu gaps", gaps);
    cr_expect_eq(count_of(out, "fill=\"#d84315\"><title>idle "), gaps);
    cr_expect_eq(count_of(out, "<circle "), 8);
    cr_expect(strstr(out, "<td><code>train.py:20</code></td><td><code>train.py:10</code></td>"), "gap sites");
    /* the largest gap (after the 11th launch, 60 µs) is numbered last: numbers go by time */
    cr_expect(strstr(out, "<tr><td class=\"num\">8</td><td class=\"num\">60.0 \xC2\xB5s</td>"), "%s", out);
    /* kernels: share of GPU time, count, median */
    cr_expect(strstr(out, "<td class=\"name mono\">gemm(float*)</td>"));
    cr_expect(strstr(out, "<td class=\"num\">12</td>"));
    cr_expect(strstr(out, "<td class=\"name mono\">small_kernel</td>"));
    /* the finding */
    cr_expect(strstr(out, "<span class=\"sev sev-warning\">warning</span>"));
    cr_expect(strstr(out, "<td class=\"num\">2.00 ms</td>"));
    cr_expect(strstr(out, "train.py<span class=\"nowrap\">:20:5</span>"));
    free(out);
    free_findings(&r);
    profile_free(p);
}

Test(report_html, an_empty_profile_and_no_findings) {
    Profile *p = profile_new();
    label(p, "empty");
    RankedFindings r = {0};
    ReportProfile rp = {p, "empty.json"};
    ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};
    char *out = render(true, &in);
    const char *why = check_balanced(out);
    cr_expect_null(why, "%s", why);
    cr_expect(strstr(out, "The profile holds no GPU timeline."));
    cr_expect(strstr(out, "No kernel ran."));
    cr_expect(strstr(out, "No findings in 0 files."));
    cr_expect_null(strstr(out, "<svg"));
    free(out);
    profile_free(p);
}

Test(report_html, without_a_profile) {
    RankedFindings r = {.files_checked = 3};
    add_finding(&r, "a.py", 1, "PY009", "fp32-matmul-without-tf32", SEVERITY_HINT, "float32", 0);
    ReportInput in = {.findings = &r};
    char *out = render(true, &in);
    const char *why = check_balanced(out);
    cr_expect_null(why, "%s", why);
    cr_expect(strstr(out, "No profile: findings are not ranked by measured cost."));
    cr_expect_null(strstr(out, "id=\"gpu-time\""));
    cr_expect(strstr(out, "<h2>Findings</h2>"));
    cr_expect(strstr(out, "<td class=\"num\">-</td>"), "no cost");
    free(out);
    free_findings(&r);
}

Test(report_html, the_h200_profiles_render_well_formed) {
    const char *names[] = {"transpose.json", "pipeline.json", "llama_generate.json", "resnet50_step.json",
                           "torch_sites.json", "transpose_nodebug.json"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[1024];
        snprintf(path, sizeof path, ADVISE_SOURCE_DIR "/tests/fixtures/profiles/h200/%s", names[i]);
        char *error = NULL;
        Profile *p = profile_read_file(path, PROFILE_FINAL, &error);
        cr_assert_not_null(p, "%s", error);
        RankedFindings r = {0};
        ReportProfile rp = {p, names[i]};
        ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};
        char *out = render(true, &in);
        const char *why = check_balanced(out);
        cr_expect_null(why, "%s: %s", names[i], why);
        cr_expect_eq(count_of(out, "<svg "), p->timeline_count, "%s", names[i]);
        free(out);
        profile_free(p);
    }
}

Test(report_html, gap_sites_of_the_h200_transpose) {
    char *error = NULL;
    Profile *p = profile_read_file(ADVISE_SOURCE_DIR "/tests/fixtures/profiles/h200/transpose.json", PROFILE_FINAL,
                                   &error);
    cr_assert_not_null(p, "%s", error);
    RankedFindings r = {0};
    ReportProfile rp = {p, NULL};
    ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};
    char *out = render(true, &in);
    /* the 20.9 ms gap after the copy back at :156, before the memset at :172 */
    cr_expect(strstr(out, "<td class=\"num\">20.9 ms</td><td class=\"num\">3.14 ms</td><td><code>samples/cuda/"
                          "transpose.cu:156</code></td><td><code>samples/cuda/transpose.cu:172</code></td>"),
              "%s", out);
    cr_expect(strstr(out, "busy 9.5% &#183; 6.69 ms"));
    cr_expect(strstr(out, "16 idle gaps recorded on this GPU"));
    free(out);
    profile_free(p);
}

Test(report_html, a_very_long_kernel_name_is_cut_and_whole_in_its_tooltip) {
    char name[400];
    memset(name, 'a', 300);
    strcpy(name + 300, "<float>(x)");
    Profile *p = small_profile(name, "train.py");
    RankedFindings r = {0};
    ReportProfile rp = {p, NULL};
    ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};
    char *out = render(true, &in);
    char expected[640];
    snprintf(expected, sizeof expected, "<td class=\"name mono\" title=\"%.300s&lt;float&gt;(x)\">%.240s&#8230;</td>",
             name, name);
    cr_expect(strstr(out, expected), "%s", out);
    const char *why = check_balanced(out);
    cr_expect_null(why, "%s", why);
    free(out);
    profile_free(p);
}

Test(report, several_profiles_each_shown) {
    Profile *a = small_profile("gemm(float*)", "train.py"), *b = small_profile("conv(float*)", "eval.py");
    free(b->name);
    b->name = strdup("eval");
    ReportProfile rp[] = {{a, "profiles/small.json"}, {b, "profiles/eval.json"}};
    RankedFindings r = {.files_checked = 2};
    add_finding(&r, "eval.py", 20, "PY001", "host-sync-in-loop", SEVERITY_WARNING, "waits", 0.002);
    ReportInput in = {.profiles = rp, .profile_count = 2, .findings = &r};

    char *text = render(false, &in);
    cr_expect(strstr(text, "2 profiles; each file takes its figures from the newest that mentions it:\n"
                           "  run    recorded              GPU          run length  GPU busy  profile\n"
                           "  small  2026-11-30T15:19:33Z  NVIDIA H200     2.00 ms      3.2%  profiles/small.json\n"
                           "  eval   2026-11-30T15:19:33Z  NVIDIA H200     2.00 ms      3.2%  profiles/eval.json\n"),
              "%s", text);
    free(text);

    char *html = render(true, &in);
    const char *why = check_balanced(html);
    cr_expect_null(why, "%s", why);
    cr_expect(strstr(html, "in 2 profiles; each file takes its figures from the newest profile that mentions it."));
    cr_expect(strstr(html, "<td>eval</td><td class=\"nowrap\"><code>profiles/eval.json</code></td>"), "%s", html);
    cr_expect_eq(count_of(html, "<svg "), 2);
    cr_expect(strstr(html, "id=\"advise-rest-0\"") && strstr(html, "id=\"advise-rest-1\""), "pattern ids differ");
    cr_expect(strstr(html, "<h3>small &#183; GPU 0: NVIDIA H200"));
    cr_expect(strstr(html, "<h3>eval &#183; GPU 0: NVIDIA H200"));
    cr_expect(strstr(html, "<h3>eval</h3>\n<table class=\"fixed\">"), "a kernel table per profile");
    cr_expect(strstr(html, "conv(float*)"));
    free(html);
    free_findings(&r);
    profile_free(a);
    profile_free(b);
}

/* ---- device memory (`advise profile --memory`) ------------------------------------------------
 * The H200 recordings of bench/memory/train.py: tests/fixtures/profiles/memory/. */

#define MEMORY_PROFILES ADVISE_SOURCE_DIR "/tests/fixtures/profiles/memory/"

static Profile *memory_profile(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, MEMORY_PROFILES "%s", name);
    char *error = NULL;
    Profile *p = profile_read_file(path, PROFILE_FINAL, &error);
    cr_assert_not_null(p, "%s", error);
    return p;
}

Test(report_memory, text_section_of_the_leak_run) {
    Profile *p = memory_profile("leak_h200.json");
    RankedFindings r = {0};
    ReportProfile rp = {p, "leak_h200.json"};
    ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};
    char *out = render(false, &in);
    /* after the profile's header, before the findings */
    const char *section = strstr(out, "\nDevice memory of GPU 0 (process 468), from PyTorch's allocator:\n"
                                      "  peak       3.44 GB allocated, 3.46 GB reserved then, 5.83 s into the recorded "
                                      "window\n"
                                      "  the run    most allocated 3.44 GB, most reserved 3.46 GB (PyTorch's own "
                                      "counters over the run)\n"
                                      "  window     the whole run (9,643 allocator events)\n"
                                      "  steps      29 optimizer steps (29 in the window); live memory +75.5 MB per "
                                      "step\n"
                                      "  allocated  ");
    cr_assert_not_null(section, "%s", out);
    cr_expect(strstr(out, "run      6.49 s") < section);
    cr_expect(strstr(out, "\xE2\x96\x82\xE2\x96\x84\xE2\x96\x85\xE2\x96\x87\xE2\x96\x88  0 to 5.87 s, full height "
                          "3.46 GB\n  reserved   "),
              "the allocated sparkline rises to the peak at its end: %s", out);
    char caret[128];
    snprintf(caret, sizeof caret, "\n  %-10s %*s^ the peak, 5.83 s\n", "", 59, "");
    cr_expect(strstr(out, caret), "the caret under the last column: %s", out);
    cr_expect(strstr(out, "  held at the peak, the lines holding the most:\n"
                          "      1.28 GB    37%  bench/memory/train.py:35\n"
                          "      1.24 GB    36%  bench/memory/train.py:36\n"
                          "       327 MB   9.5%  bench/memory/train.py:37\n"
                          "       269 MB   7.8%  bench/memory/train.py:109\n"
                          "       134 MB   3.9%  bench/memory/train.py:86\n"
                          "    ... and 9 more lines, 28.0 MB together\n"
                          "       168 MB   4.9%  no line of the project (allocated outside it, or before recording "
                          "began)\n"
                          "  growing step after step:\n"
                          "      33.6 MB per step  bench/memory/train.py:35 (over 29 steps)\n"
                          "      33.6 MB per step  bench/memory/train.py:36 (over 29 steps)\n"
                          "      8.39 MB per step  bench/memory/train.py:37 (over 29 steps)\n"
                          "      20.5 kB per step  bench/memory/train.py:112 (over 29 steps)\n\nNo findings"),
              "%s", out);
    free(out);
    profile_free(p);
}

Test(report_memory, html_section_of_the_activation_run) {
    Profile *p = memory_profile("act_h200.json");
    RankedFindings r = {0};
    ReportProfile rp = {p, "act_h200.json"};
    ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};
    char *out = render(true, &in);
    const char *why = check_balanced(out);
    cr_expect_null(why, "%s", why);
    cr_expect(strstr(out, "<a href=\"#memory\">Device memory</a> &#183; <a href=\"#findings\">"), "in the contents");
    const char *section = strstr(out, "<section id=\"memory\">\n<h2>Device memory</h2>\n");
    cr_assert_not_null(section);
    cr_expect(strstr(out, "<section id=\"kernels\">") < section && strstr(out, "<section id=\"findings\">") > section,
              "after the kernels, before the findings");
    cr_expect_eq(count_of(out, "<svg "), p->timeline_count + 1, "one picture of memory over time");
    cr_expect(strstr(section, "<h3>GPU 0 <span class=\"note\">(process 682)</span></h3>"));
    cr_expect(strstr(section, "<span>peak allocated</span><b>6.96 GB</b>"));
    cr_expect(strstr(section, "<span>reserved at the peak</span><b>9.02 GB</b>"));
    cr_expect(strstr(section, "<span>recorded window</span><b>the whole run</b>"));
    /* the two lines (512 samples each) and the filled area under allocated */
    cr_expect_eq(count_of(section, "<polyline fill=\"none\""), 2);
    cr_expect(strstr(section, "<polygon fill=\"#0969da\""));
    cr_expect(strstr(section, ">peak 6.96 GB at 5.87 s</text>"), "the peak's label");
    cr_expect(strstr(section, "<circle cx=\""), "the peak's dot");
    cr_expect(strstr(section, "<h4>Held at the peak</h4>"));
    cr_expect(strstr(section, "<tr><td class=\"num\">1</td><td class=\"where\"><code>bench/memory/train.py:35</code>"
                              "</td><td class=\"num\">1.65 GB</td>"),
              "%s", section);
    cr_expect(strstr(section, "<tr><td class=\"num\">2</td><td class=\"where\"><code>bench/memory/train.py:109</code>"
                              "</td><td class=\"num\">1.61 GB</td><td><div class=\"share\"><i style=\"width:27.8px;"
                              "background:#0969da\"></i>23%</div></td></tr>"),
              "%s", section);
    cr_expect_eq(count_of(section, "<tr><td class=\"num\">"), 5, "the top 5");
    cr_expect(strstr(section, "839 MB (12%) belongs to no line of the project"));
    cr_expect_null(strstr(section, "Growing step after step"), "the activation run does not grow");
    cr_expect_null(strstr(section, "Out of memory"));
    free(out);
    profile_free(p);
}

Test(report_memory, an_out_of_memory_error_an_incomplete_window_and_escaping) {
    Profile *p = memory_profile("leak_h200.json");
    ProfMemory *m = &p->memories[0];
    m->window_complete = false;
    m->max_allocated = 5000000000u;
    m->oom = true;
    m->oom_time_ns = 5000000000u;
    m->oom_bytes = 2000000000u;
    m->oom_device_free = 100000000u;
    m->oom_allocated = 4000000000u;
    m->oom_site = 18; /* line 35 */
    ProfMemLine *l = realloc(p->memory_lines, (p->memory_line_count + 1) * sizeof *l);
    cr_assert_not_null(l);
    p->memory_lines = l;
    l[p->memory_line_count++] = (ProfMemLine){.memory = 0, .kind = PROF_MEM_LINE_OOM, .site = 18, .bytes = 1500000000u};
    free(p->files[0].path);
    p->files[0].path = strdup("src/<b>&\"x\".py");
    RankedFindings r = {0};
    ReportProfile rp = {p, NULL};
    ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};

    char *out = render(true, &in);
    const char *why = check_balanced(out);
    cr_expect_null(why, "%s", why);
    cr_expect_null(strstr(out, "src/<b>"), "nothing is injected");
    cr_expect(strstr(out, "<span>recorded window</span><b>the last 9,643 events</b>"));
    cr_expect(strstr(out, "the recorded window began after the run did, so the picture, the peak and the lines "
                          "cover the window; the run's own peak was 5.00 GB allocated."),
              "%s", out);
    cr_expect(strstr(out, "<h4>Out of memory</h4>\n<p>An allocation of 2.00 GB failed 5.00 s into the recorded "
                          "window, with 100 MB free on the device and 4.00 GB allocated; it was asked for at "
                          "<code>src/&lt;b&gt;&amp;&quot;x&quot;.py:35</code>.</p>\n<h4>Live when it failed</h4>"),
              "%s", out);
    cr_expect(strstr(out, "style=\"fill:#cf222e;font-weight:600\">out of memory</text>"), "marked in the picture");
    free(out);

    out = render(false, &in);
    cr_expect(strstr(out, "  window     the last 9,643 allocator events: it began after the run did"), "%s", out);
    cr_expect(strstr(out, "  out of memory at 5.00 s: 2.00 GB asked for at src/<b>&\"x\".py:35, with 100 MB free on "
                          "the device and 4.00 GB allocated\n  live when it failed:\n"
                          "      1.50 GB    38%  src/<b>&\"x\".py:35\n"),
              "%s", out);
    free(out);
    profile_free(p);
}

/* The training steps and their phases, in the header of both forms. */
Test(report, training_steps_and_their_phases) {
    Profile *p = memory_profile("leak_h200.json");
    p->processes[0].steps = (ProfSteps){.count = 300, .median_ns = 1230000, .first_ns = 2100000000,
                                        .warmup_steps = 3, .warmup_ns = 45000000, .steady_steps = 293,
                                        .steady_ns = 360000000, .slow_steps = 3, .slow_ns = 210000000,
                                        .after_ns = 95000000};
    RankedFindings r = {0};
    ReportProfile rp = {p, NULL};
    ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};
    char *out = render(false, &in);
    cr_expect(strstr(out, "steps    300 optimizer steps, median 1.23 ms\n         start-up and the first step 2.10 s; "
                          "warm-up 3 steps, 45.0 ms; steady 293 steps, 360 ms; slow 3 steps, 210 ms (evaluation, "
                          "checkpoints or logging between steps); after the last step 95.0 ms\n"),
              "%s", out);
    free(out);
    out = render(true, &in);
    cr_expect(strstr(out, "training steps") && strstr(out, "300 optimizer steps, median 1.23 ms"), "%s", out);
    free(out);
    /* with the GPU's idle time by phase: the steady steps' share, and the rest */
    ProfSteps *s = &p->processes[0].steps;
    s->phase_idle_known = true;
    s->idle_ns[PROF_PHASE_FIRST] = 2000000000;
    s->idle_ns[PROF_PHASE_STEADY] = 36000000;
    s->idle_ns[PROF_PHASE_SLOW] = 150000000;
    out = render(false, &in);
    cr_expect(strstr(out, "after the last step 95.0 ms; GPU idle 36.0 ms in the steady steps (10% of their time), 2.15 s in "
                          "the other phases\n"),
              "%s", out);
    free(out);
    p->processes[0].steps = (ProfSteps){0};
    out = render(false, &in);
    cr_expect_null(strstr(out, "\nsteps    "), "no steps recorded: no line");
    free(out);
    profile_free(p);
}

/* The line that freed a peak holder's memory, the holder's keeper, is named beside it. */
Test(report_memory, where_the_peak_holders_were_freed) {
    Profile *p = memory_profile("leak_h200.json");
    for (size_t i = 0; i < p->memory_line_count; i++) {
        ProfMemLine *l = &p->memory_lines[i];
        if (l->kind == PROF_MEM_LINE_PEAK && l->site == 18) { /* line 35 */
            l->freed_site = 18;
            l->freed_bytes = l->bytes / 2;
        }
    }
    RankedFindings r = {0};
    ReportProfile rp = {p, NULL};
    ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};
    char *out = render(false, &in);
    cr_expect(strstr(out, "bench/memory/train.py:35, freed at bench/memory/train.py:35\n"), "%s", out);
    free(out);
    out = render(true, &in);
    cr_expect(strstr(out, "<code>bench/memory/train.py:35</code><br><span class=\"note\">freed at "
                          "<code>bench/memory/train.py:35</code></span>"),
              "%s", out);
    free(out);
    profile_free(p);
}

/* A profile without memory: no section, no link, nothing else changed. */
Test(report_memory, none_without_memory) {
    Profile *p = memory_profile("leak_h200.json");
    RankedFindings r = {0};
    ReportProfile rp = {p, NULL};
    ReportInput in = {.profiles = &rp, .profile_count = 1, .findings = &r};
    char *with_text = render(false, &in), *with_html = render(true, &in);
    /* the same profile with its memory taken away */
    size_t memory_count = p->memory_count, line_count = p->memory_line_count;
    p->memory_count = 0;
    p->memory_line_count = 0;
    char *text = render(false, &in), *html = render(true, &in);
    p->memory_count = memory_count;
    p->memory_line_count = line_count;
    cr_expect_null(strstr(text, "Device memory"));
    cr_expect_null(strstr(html, "id=\"memory\""));
    cr_expect_null(strstr(html, "#memory"));
    cr_expect_null(strstr(html, "Device memory"));
    cr_expect_eq(count_of(html, "<svg "), p->timeline_count);
    /* what is left is the page with its memory section and link cut out */
    const char *a = strstr(with_html, "<section id=\"memory\">"), *b = strstr(with_html, "<section id=\"findings\">");
    const char *link = "<a href=\"#memory\">Device memory</a> &#183; ";
    const char *at = strstr(with_html, link);
    cr_assert(a && b && at);
    char *cut = malloc(strlen(with_html) + 1);
    size_t n = 0;
    memcpy(cut + n, with_html, (size_t)(at - with_html));
    n += (size_t)(at - with_html);
    const char *after_link = at + strlen(link);
    memcpy(cut + n, after_link, (size_t)(a - after_link));
    n += (size_t)(a - after_link);
    strcpy(cut + n, b);
    cr_expect_str_eq(html, cut);
    const char *ta = strstr(with_text, "\nDevice memory of GPU 0"), *tb = strstr(with_text, "\nNo findings");
    cr_assert(ta && tb);
    char *text_cut = malloc(strlen(with_text) + 1);
    memcpy(text_cut, with_text, (size_t)(ta - with_text));
    strcpy(text_cut + (ta - with_text), tb);
    cr_expect_str_eq(text, text_cut);
    free(cut);
    free(text_cut);
    free(text);
    free(html);
    free(with_text);
    free(with_html);
    profile_free(p);
}

/* ---- the command ------------------------------------------------------------------------ */

#define H200_PROFILES "tests/fixtures/profiles/h200/"

Test(report_cli, text_on_the_training_sample, .timeout = 120) {
    RunResult r = run_advise_at(ADVISE_SOURCE_DIR, "report", "--no-config", "--profile",
                                H200_PROFILES "train_classifier.json", "samples/python/train_classifier.py");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "profile  " H200_PROFILES "train_classifier.json (\"train_classifier\", recorded "
                            "2026-11-30T15:19:59Z)\nGPU      NVIDIA H200 (132 SMs, compute capability 9.0, "),
              "%s", r.out);
    cr_expect(strstr(r.out, "\n#1 "), "%s", r.out);
    cr_expect(strstr(r.out, "samples/python/train_classifier.py:111:29  PY001 host-sync-in-loop\n"), "%s", r.out);
    cr_expect(strstr(r.out, "     gain: about "), "%s", r.out);
    cr_expect(strstr(r.out, " in 1 file checked ("), "%s", r.out);
    /* ranked: the first finding costs the most */
    const char *first = strstr(r.out, "\n#1 "), *second = strstr(r.out, "\n#2 ");
    cr_expect(first && second && first < second);
    run_result_free(&r);
}

/* per-line metrics reach the report as a finding's evidence (PR012 here), text and HTML */
/* a profile recorded with --memory: the memory section beside the memory findings */
Test(report_cli, device_memory_of_the_leak_run, .timeout = 120) {
    RunResult r = run_advise_at(ADVISE_SOURCE_DIR, "report", "--no-config", "--profile",
                                "tests/fixtures/profiles/memory/leak_h200.json", "bench/memory/train.py");
    cr_expect_eq(r.status, 0, "%s", r.err);
    const char *section = strstr(r.out, "\nDevice memory of GPU 0 (process 468), from PyTorch's allocator:\n");
    cr_expect_not_null(section, "%s", r.out);
    cr_expect(strstr(r.out, "      1.28 GB    37%  bench/memory/train.py:35\n"), "%s", r.out);
    cr_expect(section && strstr(r.out, "bench/memory/train.py:35:9  PR015 memory-peak-holder\n") > section, "%s",
              r.out);
    run_result_free(&r);
}

Test(report_cli, per_line_metrics_in_the_evidence, .timeout = 120) {
    RunResult r = run_advise_at(ADVISE_SOURCE_DIR, "report", "--no-config", "--profile",
                                "tests/fixtures/profile/kernels.json", "tests/fixtures/profile/kernels.cu");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "tests/fixtures/profile/kernels.cu:18:9  PR012 local-memory-traffic\n     this line moves "
                            "8,388,608 local-memory sectors (268 MB) in one launch of spill"),
              "%s", r.out);
    cr_expect(strstr(r.out, "     - the kernel: 200 ms of GPU time, 21% of all kernel time\n"), "%s", r.out);
    run_result_free(&r);
    r = run_advise_at(ADVISE_SOURCE_DIR, "report", "--no-config", "--profile", "tests/fixtures/profile/kernels.json",
                      "--format", "html", "-o", "-", "tests/fixtures/profile/kernels.cu");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "8,388,608 local-memory sectors (268 MB)"), "the finding's message");
    cr_expect(strstr(r.out, "<li>the kernel: 200 ms of GPU time, 21% of all kernel time</li>"), "its evidence");
    run_result_free(&r);
}

Test(report_cli, html_written_atomically_to_a_file, .timeout = 120) {
    char *dir = temp_dir(), *page = path_in(dir, "report.html");
    RunResult r = run_advise_at(ADVISE_SOURCE_DIR, "report", "--no-config", "--profile",
                                H200_PROFILES "transpose.json", "--format", "html", "-o", page,
                                "samples/cuda/transpose.cu");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "", "the page goes to the file only");
    cr_expect(strstr(r.err, "advise report: wrote "), "%s", r.err);
    char *html = harness_slurp(page);
    cr_expect(strncmp(html, "<!DOCTYPE html>", 15) == 0);
    const char *why = check_balanced(html);
    cr_expect_null(why, "%s", why);
    cr_expect(strstr(html, "samples/cuda/transpose.cu:156</code></td><td><code>samples/cuda/transpose.cu:172"),
              "the 20.9 ms gap between the copy back and the next memset");
    cr_expect(strstr(html, "transpose_naive(float*, float const*, int, int)"));
    cr_expect(strstr(html, "<span class=\"sev sev-"), "findings are there");
    free(html);
    /* nothing but the page is left in the folder (no temporary file) */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls -A %s", dir);
    RunResult ls = harness_run_shell(cmd);
    cr_expect_str_eq(ls.out, "report.html\n");
    run_result_free(&ls);
    run_result_free(&r);

    /* -o - writes the page to stdout */
    r = run_advise_at(ADVISE_SOURCE_DIR, "report", "--no-config", "--no-profile", "--format", "html", "-o", "-",
                      "samples/cuda/transpose.cu");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strncmp(r.out, "<!DOCTYPE html>", 15) == 0, "%s", r.out);
    cr_expect(strstr(r.out, "No profile: findings are not ranked by measured cost."));
    run_result_free(&r);
}

Test(report_cli, the_profile_folder_by_default) {
    char *dir = temp_dir();
    mkdir(path_in(dir, ".git"), 0755);
    write_text(path_in(dir, "train.py"), "import torch\n"
                                         "from torch.utils.data import DataLoader\n"
                                         "\n"
                                         "\n"
                                         "def train(model, data, opt, device):\n"
                                         "    loader = DataLoader(data, batch_size=64)\n"
                                         "    for x, y in loader:\n"
                                         "        x = x.to(device)\n"
                                         "        h = model(x)\n"
                                         "        h = h * torch.sigmoid(h)\n"
                                         "        loss = h.sum()\n"
                                         "        loss.backward()\n"
                                         "        opt.step()\n"
                                         "        print(loss.item())\n");
    mkdir(path_in(dir, ".advise"), 0755);
    mkdir(path_in(dir, ".advise/profiles"), 0755);
    Profile *p = small_profile("gemm(float*)", "train.py");
    char *error = NULL;
    cr_assert(profile_write_file(p, PROFILE_FINAL, path_in(dir, ".advise/profiles/small.json"), &error), "%s",
              error ? error : "");
    profile_free(p);
    RunResult r = run_advise_at(dir, "report");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "profile  .advise/profiles/small.json (\"small\""), "%s", r.out);
    /* the profile's launches at line 10 (x * sigmoid(x)) give that finding a measured cost: first */
    cr_expect(strstr(r.out, "#1  ") && strstr(strstr(r.out, "#1  "), "train.py:10:13  PY007 unfused-elementwise\n"),
              "%s", r.out);
    run_result_free(&r);

    r = run_advise_at(dir, "report", "--no-profile");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "profile  none: findings are not ranked by measured cost"), "%s", r.out);
    run_result_free(&r);
}

Test(report_cli, usage_and_io_errors_exit_2) {
    RunResult r = run_advise("report", "--format", "html");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "advise report: --format html needs -o FILE"), "%s", r.err);
    run_result_free(&r);

    r = run_advise("report", "--format", "pdf");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--format wants text or html, not 'pdf'"), "%s", r.err);
    run_result_free(&r);

    r = run_advise("report", "--profile", "x.json", "--no-profile");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--profile and --no-profile exclude each other"), "%s", r.err);
    run_result_free(&r);

    r = run_advise("report", "--bogus");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "unknown or incomplete option '--bogus'"), "%s", r.err);
    run_result_free(&r);

    r = run_advise_at(ADVISE_SOURCE_DIR, "report", "--no-config", "--profile", "/nonexistent/run.json",
                      "samples/python/train_classifier.py");
    cr_expect_eq(r.status, 2);
    cr_expect_str_eq(r.out, "");
    cr_expect(strstr(r.err, "advise report: --profile: "), "%s", r.err);
    cr_expect(strstr(r.err, "/nonexistent/run.json"), "%s", r.err);
    run_result_free(&r);

    r = run_advise_at(ADVISE_SOURCE_DIR, "report", "--no-config", "--profile",
                      "tests/fixtures/profiles/invalid/version-2.json", "samples/python/train_classifier.py");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "version: 2: this profile was written by a newer advise"), "%s", r.err);
    run_result_free(&r);

    char *dir = temp_dir();
    r = run_advise_at(ADVISE_SOURCE_DIR, "report", "--no-config", "--no-profile", "--format", "html", "-o",
                      path_in(dir, "missing/report.html"), "samples/python/train_classifier.py");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "advise report: cannot write "), "%s", r.err);
    run_result_free(&r);

    r = run_advise_at(dir, "report", "--no-profile", "does-not-exist.py");
    cr_expect_eq(r.status, 2, "%s%s", r.out, r.err);
    run_result_free(&r);

    r = run_advise("report", "--help");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "usage: advise report"));
    run_result_free(&r);
}

/* A recorded run with its optimizer steps: each whole-program gain of
 * "what to do first" is also given per step (H200 recording of
 * bench/steps/phases.py, 300 steps). */
Test(report_cli, what_to_do_first_per_step_of_a_recorded_run, .timeout = 120) {
    RunResult r = run_advise_at(ADVISE_SOURCE_DIR, "report", "--no-config", "--profile",
                                "tests/fixtures/profiles/phases_h200.json", "bench/steps/phases.py");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "  1. about 102 ms for the whole program (341 \xC2\xB5s per step over 300 steps)  "
                            "bench/steps/phases.py:51  PR002 launch-bound\n"),
              "%s", r.out);
    run_result_free(&r);
}

/* Before the ranked list: the findings about wrong results apart (errors
 * first), then the largest gains with their fixes, at most five. */
Test(report_cli, correctness_apart_and_what_to_do_first, .timeout = 120) {
    RunResult r = run_advise_at(ADVISE_SOURCE_DIR, "report", "--no-config", "--profile", "samples/profiles", "samples/");
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *correct = strstr(r.out, "\nCorrectness first: 12 findings can make results wrong");
    const char *todo = strstr(r.out, "\nWhat to do first (the largest estimated gains;");
    const char *ranked = strstr(r.out, "\nrank ");
    cr_assert(correct && todo && ranked, "%s", r.out);
    cr_expect(correct < todo && todo < ranked, "correctness, then what to do first, then the ranked list");
    /* errors before hints: CU007 and CU002 are listed before any CU011 */
    const char *cu007 = strstr(correct, "CU007 unsynchronized-host-read"), *cu002 = strstr(correct, "CU002 divergent");
    const char *cu011 = strstr(correct, "CU011 unchecked-cuda-error");
    cr_expect(cu007 && cu002 && cu011 && cu007 < cu011 && cu002 < cu011, "%.2000s", correct);
    cr_expect(strstr(correct, "  ... and 2 more in the list below\n"), "%.2000s", correct);
    /* the largest gain first, with its fix; no correctness finding among them */
    /* the two largest: PR003's idle gap while MLPBlock is built on the host (801 ms) and PY009 (781 ms) */
    cr_expect(strstr(todo, "  1. about 801 ms for the whole program  samples/python/benchmark_matmul.py:96  PR003 "
                           "gpu-idle-gap\n"),
              "%.1500s", todo);
    /* a finding without a fix says what to do under its first sentence */
    const char *do_line = strstr(todo, "\n     do: take the host work before this line off the GPU's path");
    cr_expect(do_line && do_line < strstr(todo, "\n  2. about "), "%.1500s", todo);
    cr_expect(strstr(todo, "  2. about 781 ms for the whole program  samples/python/benchmark_matmul.py:49  PY009 "
                           "fp32-matmul-without-tf32\n     fix: Enable TF32 matmuls"),
              "%.1500s", todo);
    cr_expect(strstr(todo, "\n  5. about ") && !strstr(todo, "\n  6. about "), "%.1500s", todo);
    const char *todo_end = ranked;
    for (const char *p = todo; p && p < todo_end; p = strstr(p + 1, "CU0"))
        cr_expect(strncmp(p, "CU011", 5) && strncmp(p, "CU007", 5), "a correctness finding ranked among gains");
    run_result_free(&r);

    r = run_advise_at(ADVISE_SOURCE_DIR, "report", "--no-config", "--profile", "samples/profiles", "--format", "html", "-o", "-", "samples/");
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *c_html = strstr(r.out, "<section id=\"correctness\">"), *f_html = strstr(r.out, "<section id=\"first\">");
    const char *findings_html = strstr(r.out, "<section id=\"findings\">");
    cr_expect(c_html && f_html && findings_html && c_html < f_html && f_html < findings_html);
    cr_expect(strstr(r.out, "<span class=\"fix\">fix: Enable TF32 matmuls"), "the fix in the first list");
    cr_expect(strstr(r.out, "<span class=\"fix\">do: capture them in a CUDA graph"), "the advice in the first list");
    run_result_free(&r);
}
