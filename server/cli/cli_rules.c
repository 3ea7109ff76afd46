/* `advise rules` and `advise rule CODE|NAME` */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/cli/cli.h"
#include "rules/rule.h"
#include "server/render/rule_docs.h"
#include "analysis/base/text_format.h"

static void rules_usage(FILE *out) {
    fputs("usage: advise rules [--format text|markdown] [--output-dir DIR]\n"
          "\n"
          "Lists every rule: code, name, default severity, languages, summary.\n"
          "\n"
          "options:\n"
          "  --format text|markdown  text (default): one line a rule; markdown: the table of\n"
          "                          docs/rules.md, each code linking to rules/<CODE>.md\n"
          "  --output-dir DIR        with --format markdown: write DIR/rules.md and one page a\n"
          "                          rule, DIR/rules/<CODE>.md (what `advise rule CODE` prints),\n"
          "                          removing pages of rules that no longer exist. The\n"
          "                          repository's docs are regenerated with\n"
          "                          `advise rules --format markdown --output-dir docs`\n",
          out);
}

int cli_rules(int argc, char **argv) {
    bool markdown = false;
    const char *output_dir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            rules_usage(stdout);
            return EXIT_CLEAN;
        }
        bool format = strncmp(arg, "--format", 8) == 0 && (arg[8] == '\0' || arg[8] == '=');
        bool dir = strncmp(arg, "--output-dir", 12) == 0 && (arg[12] == '\0' || arg[12] == '=');
        if (!format && !dir) return cli_usage_error("rules", "unexpected argument '%s'", arg);
        const char *eq = strchr(arg, '=');
        if (eq) value = eq + 1;
        else if (i + 1 < argc) value = argv[++i];
        else return cli_usage_error("rules", "%s needs a value", arg);
        if (format) {
            if (strcmp(value, "markdown") == 0) markdown = true;
            else if (strcmp(value, "text") == 0) markdown = false;
            else return cli_usage_error("rules", "--format must be text or markdown, not '%s'", value);
        } else {
            if (!*value) return cli_usage_error("rules", "--output-dir needs a folder");
            output_dir = value;
        }
    }
    if (output_dir && !markdown) return cli_usage_error("rules", "--output-dir writes markdown: add --format markdown");

    size_t count;
    const Rule *const *all = rules_all(&count);
    if (output_dir) {
        char *pages = format_string("%s/rules", output_dir), *index = format_string("%s/rules.md", output_dir);
        char *error = NULL;
        bool ok = pages && index && rule_docs_write_pages(pages, true, &error) &&
                  rule_docs_write_index_file(index, "rules", &error);
        if (ok) fprintf(stderr, "advise rules: wrote %s and %zu pages in %s/\n", index, count, pages);
        else fprintf(stderr, "advise rules: %s\n", error ? error : "out of memory");
        free(error);
        free(pages);
        free(index);
        return ok ? EXIT_CLEAN : EXIT_TROUBLE;
    }
    if (markdown) return rule_docs_write_index(stdout, "rules") ? EXIT_CLEAN : EXIT_TROUBLE;
    for (size_t i = 0; i < count; i++)
        printf("%-6s %-32s %-8s %-7s %s\n", all[i]->code, all[i]->name, severity_name(all[i]->severity),
               rule_languages_text(all[i]->languages), all[i]->summary);
    return EXIT_CLEAN;
}

int cli_rule(int argc, char **argv) {
    if (argc != 2 || strcmp(argv[1], "--help") == 0) {
        fputs("usage: advise rule CODE|NAME\n\nPrints a rule's documentation (markdown): the page docs/rules/<CODE>.md holds.\n",
              argc == 2 ? stdout : stderr);
        return argc == 2 ? EXIT_CLEAN : EXIT_TROUBLE;
    }
    const Rule *rule = rule_find(argv[1]);
    if (!rule) {
        fprintf(stderr, "advise rule: no rule is called '%s' (see `advise rules`)\n", argv[1]);
        return EXIT_TROUBLE;
    }
    return rule_docs_write_page(stdout, rule) ? EXIT_CLEAN : EXIT_TROUBLE;
}
