/* The rules' documentation as markdown, written one way for every reader:
 * `advise rule CODE` (stdout), the pages the language server links each
 * diagnostic to when the repository's are not found (codeDescription.href,
 * in a cache folder; rule_links.h), and the
 * repository's docs/rules.md with docs/rules/<CODE>.md, which
 * `advise rules --format markdown --output-dir docs` regenerates from the
 * registry (tests/check_rule_docs.sh fails when the committed ones differ). */
#ifndef ADVISE_RULE_DOCS_H
#define ADVISE_RULE_DOCS_H

#include <stdbool.h>
#include <stdio.h>

#include "rules/rule.h"

/* "python", "cuda" or "python,cuda" ("-" for none) */
const char *rule_languages_text(unsigned languages);

/* What the rule's fixes are, read from the "## Fix safety" section of its
 * documentation: "none" (the section starts "No automatic fix" or "No
 * fix"), "safe" or "unsafe" (it says "is safe", "unsafe fix", ...), "safe
 * or unsafe" when it says both (the case decides; the section says how),
 * and "see page" when it says neither or there is no such section.
 * tests/test_rule_docs.c holds this to the fixes the rules make on their
 * fixtures. */
const char *rule_fix_safety(const Rule *rule);

/* True for rules that only a merged profile can trigger (rules/profile/). */
bool rule_needs_profile(const Rule *rule);

/* One rule's page: its title, summary, severity, languages and fix safety,
 * then the descriptor's documentation. False on a write error. */
bool rule_docs_write_page(FILE *out, const Rule *rule);

/* The index of every rule (docs/rules.md): tables by kind, each code a link
 * to `<pages>/<CODE>.md`. False on a write error. */
bool rule_docs_write_index(FILE *out, const char *pages);

/* Writes <dir>/<CODE>.md for every rule, each atomically (a temporary file
 * beside it, renamed over it), creating dir and its parents. With
 * remove_stale, files of dir named like a rule page (two capitals, three
 * digits, .md) that belong to no rule are removed. False with *error set
 * (heap). */
bool rule_docs_write_pages(const char *dir, bool remove_stale, char **error);

/* Writes <path> atomically with rule_docs_write_index(out, pages). */
bool rule_docs_write_index_file(const char *path, const char *pages, char **error);

#endif
