/* `advise rules` and `advise rule CODE|NAME` */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "rule.h"

static const char *languages_text(unsigned languages) {
    if ((languages & LANGUAGE_PYTHON) && (languages & LANGUAGE_CUDA)) return "python,cuda";
    if (languages & LANGUAGE_PYTHON) return "python";
    if (languages & LANGUAGE_CUDA) return "cuda";
    return "-";
}

int cli_rules(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            puts("usage: advise rules\n\nLists every rule: code, name, default severity, languages, summary.");
            return EXIT_CLEAN;
        }
        fprintf(stderr, "advise rules: unexpected argument '%s'\n", argv[i]);
        return EXIT_TROUBLE;
    }
    size_t count;
    const Rule *const *all = rules_all(&count);
    for (size_t i = 0; i < count; i++)
        printf("%-6s %-32s %-8s %-7s %s\n", all[i]->code, all[i]->name, severity_name(all[i]->severity),
               languages_text(all[i]->languages), all[i]->summary);
    return EXIT_CLEAN;
}

int cli_rule(int argc, char **argv) {
    if (argc != 2 || strcmp(argv[1], "--help") == 0) {
        fputs("usage: advise rule CODE|NAME\n", argc == 2 ? stdout : stderr);
        return argc == 2 ? EXIT_CLEAN : EXIT_TROUBLE;
    }
    const Rule *rule = rule_find(argv[1]);
    if (!rule) {
        fprintf(stderr, "advise rule: no rule is called '%s' (see `advise rules`)\n", argv[1]);
        return EXIT_TROUBLE;
    }
    printf("# %s %s\n\n", rule->code, rule->name);
    printf("%s. Default severity: %s. Languages: %s.\n\n", rule->summary, severity_name(rule->severity),
           languages_text(rule->languages));
    fputs(rule->documentation, stdout);
    return EXIT_CLEAN;
}
