/* Growable arrays: the doubling every list in advise does, in one place. */
#ifndef ADVISE_GROWABLE_H
#define ADVISE_GROWABLE_H

#include <stdbool.h>
#include <stddef.h>

/* Makes room for one more element in an array of count elements of `size`
 * bytes, *items_ptr (a T **) holding *cap of them: when it is full, doubles
 * its storage, or allocates `first` elements for an empty one. False when
 * memory runs out; the array is then as it was (still the caller's). */
bool array_reserve(void *items_ptr, size_t count, size_t *cap, size_t size, size_t first);

/* The same for `more` elements after the first count (a run of bytes that a
 * string builder appends): the capacity, `first` for an empty array, doubles
 * until count + more fit. False, the array as it was, when memory runs out or
 * count + more elements would not fit in a size_t of bytes. */
bool array_reserve_n(void *items_ptr, size_t count, size_t more, size_t *cap, size_t size, size_t first);

#endif
