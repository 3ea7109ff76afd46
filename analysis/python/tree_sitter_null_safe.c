/* Null-safe tree-sitter node functions.
 *
 * In tree-sitter 0.20 almost every ts_node_* function dereferences the node
 * it is given, so asking a null node (what ts_node_child_by_field_name
 * returns for `class X:`, which has no "superclasses") for its type, parent
 * or children crashes the whole process. A rule that forgets one
 * ts_node_is_null check then takes the editor's server down with it.
 *
 * The build links every program with `--wrap=ts_node_<name>` for the
 * functions below (see TREE_SITTER_NULL_SAFE in CMakeLists.txt), so every
 * call from advise's own code lands here first: a null node answers as an
 * empty leaf (type "", no children, no parent, byte range 0..0) and the
 * library is never handed one. Calls inside the tree-sitter library itself
 * are not redirected; it never passes a null node to itself. Cursors are
 * not covered: callers of ts_tree_cursor_new check for a null node first. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <tree_sitter/api.h>

#define NULL_NODE ((TSNode){{0, 0, 0, 0}, NULL, NULL})

/* The real functions, as the linker's --wrap names them. */
const char *__real_ts_node_type(TSNode);
TSSymbol __real_ts_node_symbol(TSNode);
uint32_t __real_ts_node_end_byte(TSNode);
TSPoint __real_ts_node_end_point(TSNode);
TSPoint __real_ts_node_start_point(TSNode);
char *__real_ts_node_string(TSNode);
bool __real_ts_node_is_named(TSNode);
bool __real_ts_node_is_missing(TSNode);
bool __real_ts_node_has_error(TSNode);
bool __real_ts_node_has_changes(TSNode);
TSNode __real_ts_node_parent(TSNode);
TSNode __real_ts_node_child(TSNode, uint32_t);
uint32_t __real_ts_node_child_count(TSNode);
TSNode __real_ts_node_named_child(TSNode, uint32_t);
uint32_t __real_ts_node_named_child_count(TSNode);
TSNode __real_ts_node_child_by_field_name(TSNode, const char *, uint32_t);
const char *__real_ts_node_field_name_for_child(TSNode, uint32_t);
TSNode __real_ts_node_next_sibling(TSNode);
TSNode __real_ts_node_prev_sibling(TSNode);
TSNode __real_ts_node_next_named_sibling(TSNode);
TSNode __real_ts_node_prev_named_sibling(TSNode);
TSNode __real_ts_node_descendant_for_byte_range(TSNode, uint32_t, uint32_t);
TSNode __real_ts_node_named_descendant_for_byte_range(TSNode, uint32_t, uint32_t);

/* Prototypes keep -Wmissing-prototypes quiet; nothing calls these by name. */
const char *__wrap_ts_node_type(TSNode node);
TSSymbol __wrap_ts_node_symbol(TSNode node);
uint32_t __wrap_ts_node_end_byte(TSNode node);
TSPoint __wrap_ts_node_end_point(TSNode node);
TSPoint __wrap_ts_node_start_point(TSNode node);
char *__wrap_ts_node_string(TSNode node);
bool __wrap_ts_node_is_named(TSNode node);
bool __wrap_ts_node_is_missing(TSNode node);
bool __wrap_ts_node_has_error(TSNode node);
bool __wrap_ts_node_has_changes(TSNode node);
TSNode __wrap_ts_node_parent(TSNode node);
TSNode __wrap_ts_node_child(TSNode node, uint32_t index);
uint32_t __wrap_ts_node_child_count(TSNode node);
TSNode __wrap_ts_node_named_child(TSNode node, uint32_t index);
uint32_t __wrap_ts_node_named_child_count(TSNode node);
TSNode __wrap_ts_node_child_by_field_name(TSNode node, const char *name, uint32_t length);
const char *__wrap_ts_node_field_name_for_child(TSNode node, uint32_t index);
TSNode __wrap_ts_node_next_sibling(TSNode node);
TSNode __wrap_ts_node_prev_sibling(TSNode node);
TSNode __wrap_ts_node_next_named_sibling(TSNode node);
TSNode __wrap_ts_node_prev_named_sibling(TSNode node);
TSNode __wrap_ts_node_descendant_for_byte_range(TSNode node, uint32_t start, uint32_t end);
TSNode __wrap_ts_node_named_descendant_for_byte_range(TSNode node, uint32_t start, uint32_t end);

#define IS_NULL(node) ((node).id == NULL)

const char *__wrap_ts_node_type(TSNode node) { return IS_NULL(node) ? "" : __real_ts_node_type(node); }
TSSymbol __wrap_ts_node_symbol(TSNode node) { return IS_NULL(node) ? 0 : __real_ts_node_symbol(node); }
uint32_t __wrap_ts_node_end_byte(TSNode node) { return IS_NULL(node) ? 0 : __real_ts_node_end_byte(node); }
TSPoint __wrap_ts_node_end_point(TSNode node) {
    return IS_NULL(node) ? (TSPoint){0, 0} : __real_ts_node_end_point(node);
}
TSPoint __wrap_ts_node_start_point(TSNode node) {
    return IS_NULL(node) ? (TSPoint){0, 0} : __real_ts_node_start_point(node);
}
char *__wrap_ts_node_string(TSNode node) {
    return IS_NULL(node) ? NULL : __real_ts_node_string(node);
}
bool __wrap_ts_node_is_named(TSNode node) { return !IS_NULL(node) && __real_ts_node_is_named(node); }
bool __wrap_ts_node_is_missing(TSNode node) { return !IS_NULL(node) && __real_ts_node_is_missing(node); }
bool __wrap_ts_node_has_error(TSNode node) { return !IS_NULL(node) && __real_ts_node_has_error(node); }
bool __wrap_ts_node_has_changes(TSNode node) { return !IS_NULL(node) && __real_ts_node_has_changes(node); }
TSNode __wrap_ts_node_parent(TSNode node) { return IS_NULL(node) ? NULL_NODE : __real_ts_node_parent(node); }
TSNode __wrap_ts_node_child(TSNode node, uint32_t index) {
    return IS_NULL(node) ? NULL_NODE : __real_ts_node_child(node, index);
}
uint32_t __wrap_ts_node_child_count(TSNode node) { return IS_NULL(node) ? 0 : __real_ts_node_child_count(node); }
TSNode __wrap_ts_node_named_child(TSNode node, uint32_t index) {
    return IS_NULL(node) ? NULL_NODE : __real_ts_node_named_child(node, index);
}
uint32_t __wrap_ts_node_named_child_count(TSNode node) {
    return IS_NULL(node) ? 0 : __real_ts_node_named_child_count(node);
}
/* ts_node_child_by_field_name finds the name's field id with a strncmp
 * against each of the grammar's field names, on every call, and the rules
 * ask for fields by name all the time (a tenth of the Python fuzz target's
 * time under libFuzzer, which hooks every strncmp). A small cache per thread
 * keeps the ids of the names asked for: a slot is chosen by the name's
 * address and length and answers only when its language, length and bytes
 * are the name's, so a name at a reused address is looked up again. Names
 * the grammar does not have (id 0) and long ones go to the library as
 * before. */
typedef struct {
    const TSLanguage *language;
    uint32_t length;
    TSFieldId id;
    char text[32];
} FieldSlot;
#define FIELD_SLOTS 64
static _Thread_local FieldSlot field_slots[FIELD_SLOTS];

TSNode __wrap_ts_node_child_by_field_name(TSNode node, const char *name, uint32_t length) {
    if (IS_NULL(node)) return NULL_NODE;
    if (!name || length >= sizeof field_slots[0].text) return __real_ts_node_child_by_field_name(node, name, length);
    const TSLanguage *language = ts_tree_language(node.tree);
    FieldSlot *slot = &field_slots[((uintptr_t)name / 8 + length) % FIELD_SLOTS];
    if (slot->language != language || slot->length != length || memcmp(slot->text, name, length) != 0) {
        slot->language = language;
        slot->length = length;
        memcpy(slot->text, name, length);
        slot->id = ts_language_field_id_for_name(language, name, length);
    }
    if (!slot->id) return __real_ts_node_child_by_field_name(node, name, length);
    return ts_node_child_by_field_id(node, slot->id);
}
const char *__wrap_ts_node_field_name_for_child(TSNode node, uint32_t index) {
    return IS_NULL(node) ? NULL : __real_ts_node_field_name_for_child(node, index);
}
TSNode __wrap_ts_node_next_sibling(TSNode node) {
    return IS_NULL(node) ? NULL_NODE : __real_ts_node_next_sibling(node);
}
TSNode __wrap_ts_node_prev_sibling(TSNode node) {
    return IS_NULL(node) ? NULL_NODE : __real_ts_node_prev_sibling(node);
}
TSNode __wrap_ts_node_next_named_sibling(TSNode node) {
    return IS_NULL(node) ? NULL_NODE : __real_ts_node_next_named_sibling(node);
}
TSNode __wrap_ts_node_prev_named_sibling(TSNode node) {
    return IS_NULL(node) ? NULL_NODE : __real_ts_node_prev_named_sibling(node);
}
TSNode __wrap_ts_node_descendant_for_byte_range(TSNode node, uint32_t start, uint32_t end) {
    return IS_NULL(node) ? NULL_NODE : __real_ts_node_descendant_for_byte_range(node, start, end);
}
TSNode __wrap_ts_node_named_descendant_for_byte_range(TSNode node, uint32_t start, uint32_t end) {
    return IS_NULL(node) ? NULL_NODE : __real_ts_node_named_descendant_for_byte_range(node, start, end);
}
