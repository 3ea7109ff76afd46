/* An edit recorded by didChange for the worker's incremental reparse. */
#ifndef ADVISE_LSP_EDITS_H
#define ADVISE_LSP_EDITS_H

#include <stddef.h>
#include <tree_sitter/api.h>

struct PendingEdit {
    size_t start, old_end, new_end;
    TSPoint start_point, old_end_point, new_end_point;
};

#endif
