/* What the fields of a C++ record depend on once its constructor has run,
 * read from the record's definition through libclang's own cursors (the
 * record may sit in a header, which the CuNode snapshot does not hold).
 *
 * The question it answers for the CUDA index analysis: in
 *
 *     BlockInfo binfo(params, bidb, tidx);       // bidb from blockIdx, tidx from threadIdx
 *     if (binfo.stop_early()) return;            // reads only fields set from params and bidb
 *
 * which of the construction's arguments can reach `binfo.actual_len`, or the
 * result of the const method `stop_early()`. A field's summary is the set of
 * constructor parameters its value is computed from (through other fields
 * too, and through the `if` conditions its assignments sit under) and whether
 * the constructor reads threadIdx or blockIdx itself.
 *
 * Only what can be followed whole is taken, the rest is unknown and the
 * caller falls back to every field depending on every argument: scalar fields
 * (numbers, enums, pointers) of a plain record (no base class, no union);
 * constructors whose initializers and body only set such fields, in blocks
 * and `if`/`else`, from expressions that only read (no declaration, loop,
 * address taken, `this` handed out, or call other than an arithmetic
 * operator or a free function handed no member of the object); const
 * methods that are one `return` of such an expression. */
#ifndef ADVISE_CUDA_RECORD_H
#define ADVISE_CUDA_RECORD_H

#include <clang-c/Index.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct {
    bool known;           /* false: the summary could not follow something; use the whole object */
    uint64_t params;      /* bit i: the constructor's parameter i reaches the value */
    bool thread_index;    /* the constructor or method reads threadIdx itself */
    bool block_index;     /* ... blockIdx */
} CuRecordDep;

enum { CU_RECORD_MAX_CTORS = 8 };

/* The constructors of record (its definition) that a construction with
 * nargs arguments can call: those with at least nargs parameters whose
 * parameters past nargs all have default values; at most max in out.
 * Constructor templates count. Returns how many. */
int cu_record_constructors(CXCursor record, unsigned nargs, CXCursor *out, int max);

/* field (a FieldDecl of the record the constructor ctor belongs to) after ctor */
CuRecordDep cu_record_field_dep(CXCursor ctor, CXCursor field);

/* the result of method (a const method of that record), called on an object
 * built by ctor: what the fields it reads depend on, and its own reads of
 * threadIdx or blockIdx; its arguments are the caller's to add */
CuRecordDep cu_record_method_dep(CXCursor ctor, CXCursor method);

/* The members of record (its definition; for a class template, the
 * template itself) spelled name: one field (*field set), or the methods of
 * that name (every overload). At most max in out; returns how many, 0 when
 * there are none or more than max. */
int cu_record_members_named(CXCursor record, const char *name, CXCursor *out, int max, bool *field);

/* The record whose definition describes a variable's type: its struct or
 * class, or for a specialization of a class template (dependent or not), the
 * template. var: the variable's cursor; template_ref: the cursor of a
 * TemplateRef among its children, or a null cursor. A null cursor when none. */
CXCursor cu_record_of_variable(CXCursor var, CXCursor template_ref);

/* record (its definition) declares a `mutable` field: a const object of it can still change */
bool cu_record_has_mutable_field(CXCursor record);

/* call is an overloaded operator's call (`a - b`, and on a dependent
 * operand, where libclang shows a call with an unnamed callee); *writes is
 * false only for an operator that reads its operands on numbers (arithmetic,
 * comparisons, logic), true for any that may change an operand or hand out a
 * reference to it */
bool cu_record_operator_call(CXCursor call, bool *writes);

/* a field that one assignment sets whole: a number, an enum or a pointer */
bool cu_record_scalar_field(CXCursor field);

/* method (or every overload) is a const method whose body is one `return`
 * of an expression that only reads: calling it cannot change the object */
bool cu_record_method_reads_only(CXCursor method);

#endif
