/* Every rule is complete: a unique stable code, a kebab-case name, a
 * summary, and documentation with each section users rely on. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "rules/rule.h"

Test(registry, codes_and_names_are_unique_and_well_formed) {
    size_t count;
    const Rule *const *all = rules_all(&count);
    cr_assert(count >= 10, "expected the Python rules to be registered, found %zu", count);
    for (size_t i = 0; i < count; i++) {
        const Rule *r = all[i];
        cr_expect(strlen(r->code) >= 4 && isupper((unsigned char)r->code[0]), "bad code '%s'", r->code);
        for (const char *p = r->name; *p; p++)
            cr_expect(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-',
                      "%s: name '%s' is not kebab-case", r->code, r->name);
        cr_expect(r->summary && r->summary[0], "%s: no summary", r->code);
        /* a profile rule (rules/profile/) has check_profile instead */
        cr_expect((r->check != NULL) != (r->check_profile != NULL), "%s: needs a check or a check_profile, not both",
                  r->code);
        cr_expect(r->severity >= SEVERITY_ERROR && r->severity <= SEVERITY_HINT, "%s: bad severity", r->code);
        for (size_t k = i + 1; k < count; k++) {
            cr_expect(strcmp(r->code, all[k]->code) != 0, "duplicate code %s", r->code);
            cr_expect(strcmp(r->name, all[k]->name) != 0, "duplicate name %s", r->name);
        }
        if (i > 0) cr_expect(strcmp(all[i - 1]->code, r->code) < 0, "registry not sorted by code");
    }
}

Test(registry, documentation_has_every_section) {
    /* the second section asks why it matters: speed, or for memory rules, memory */
    static const char *sections[][2] = {{"## What it does", NULL},
                                        {"## Why is this slow?", "## Why does this matter?"},
                                        {"## Example", NULL},
                                        {"## Use instead", NULL},
                                        {"## Fix safety", NULL}};
    size_t count;
    const Rule *const *all = rules_all(&count);
    for (size_t i = 0; i < count; i++)
        for (size_t s = 0; s < sizeof sections / sizeof *sections; s++)
            cr_expect(strstr(all[i]->documentation, sections[s][0]) != NULL ||
                          (sections[s][1] && strstr(all[i]->documentation, sections[s][1]) != NULL),
                      "%s: documentation lacks '%s'", all[i]->code, sections[s][0]);
}

Test(registry, find_by_code_or_name) {
    size_t count;
    const Rule *const *all = rules_all(&count);
    for (size_t i = 0; i < count; i++) {
        cr_expect(rule_find(all[i]->code) == all[i]);
        cr_expect(rule_find(all[i]->name) == all[i]);
        char code[32], name[128]; /* equal strings at other addresses: found by their text */
        snprintf(code, sizeof code, "%s", all[i]->code);
        snprintf(name, sizeof name, "%s", all[i]->name);
        cr_expect(rule_find(code) == all[i], "%s", code);
        cr_expect(rule_find(name) == all[i], "%s", name);
    }
    cr_expect(rule_find("NOPE999") == NULL);
}
