/* Where a rule's documentation page is linked from (the LSP's
 * codeDescription.href, reports): the repository's own docs/rules/<CODE>.md,
 * never a copy in a cache when the repository's pages can be found. */
#ifndef ADVISE_RULE_LINKS_H
#define ADVISE_RULE_LINKS_H

/* The link to rule code's page, first found of:
 *   1. ADVISE_DOCS_URL/<CODE>.md, when the build named a published copy of
 *      docs/rules (cmake -DADVISE_DOCS_URL=https://.../docs/rules);
 *   2. <prefix>/share/doc/advise/rules/<CODE>.md of an installed advise
 *      (found from the running binary, <prefix>/bin/advise);
 *   3. docs/rules/<CODE>.md of the source tree the binary was built from.
 * A file: URI or the URL (heap), or NULL when none of them has the page. */
char *rule_page_link(const char *code);

#endif
