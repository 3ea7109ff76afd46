/* The fix that pins a std::vector's storage in place: a local guard declared
 * right after it registers the storage with cudaHostRegister and unregisters
 * it in its destructor, just before the vector goes. Offered by PR008
 * (measured pageable copies that pinning would speed up). */
#ifndef ADVISE_PIN_IN_PLACE_FIX_H
#define ADVISE_PIN_IN_PLACE_FIX_H

#include "rules/rule.h"

/* Adds the fix to f when vector_decl's storage provably stays put
 * (cu_vector_storage_fixed), no asynchronous call uses it, the function pins
 * no memory itself and the edit can be placed; nothing otherwise.
 * False only when memory runs out. */
bool pin_in_place_fix(RuleContext *ctx, Finding *f, const CuNode *vector_decl);

#endif
