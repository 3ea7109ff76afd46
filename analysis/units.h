/* Measured figures as numbers with a unit (Quantity), and the one place
 * that writes each unit in words: "812 ns", "93.6 µs", "1.37 ms", "16.8 MB",
 * "48 KiB", "48.5 GB/s", "1,234", "31%", "4.5x". Everything that shows a
 * figure to a person (findings' evidence, the CLI, the LSP, the reports)
 * formats it here, so that a figure reads the same wherever it appears.
 *
 * The style: two or three significant digits ("9.87", "98.7", "987") and
 * the unit a person would pick, chosen after rounding (999.6 µs is
 * "1.00 ms", never "1000 µs"). Defensive: NaN reads "?", a negative figure
 * gets a minus sign before its magnitude. Pure C, no allocation. */
#ifndef ADVISE_UNITS_H
#define ADVISE_UNITS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    UNIT_SECONDS,          /* a duration, in seconds: "812 ns", "1.37 ms", "2.41 s" */
    UNIT_BYTES,            /* data moved, decimal multiples: "512 bytes", "16.8 MB" */
    UNIT_CAPACITY,         /* an on-chip capacity in bytes, binary multiples as CUDA's
                              documentation gives them: "48 KiB"; "1000 bytes" when not whole KiB */
    UNIT_BYTES_PER_SECOND, /* a bandwidth: "48.5 GB/s", "4.80 TB/s" */
    UNIT_COUNT,            /* a whole number of things: "12", "1,234,567" */
    UNIT_RATIO,            /* a share, 0 to 1, as a percentage: "31%", "4.2%", "<0.1%" */
    UNIT_FACTOR,           /* how many times another figure: "4.5x" */
    UNIT_NUMBER,           /* a plain number with two or three significant digits: "0.75" */
} Unit;

typedef struct {
    Unit unit;
    double value; /* in the unit's base (seconds, bytes, ...); counts are exact up to 2^53 */
} Quantity;

static inline Quantity q_seconds(double s) { return (Quantity){UNIT_SECONDS, s}; }
static inline Quantity q_ns(uint64_t ns) { return (Quantity){UNIT_SECONDS, (double)ns / 1e9}; }
static inline Quantity q_bytes(uint64_t bytes) { return (Quantity){UNIT_BYTES, (double)bytes}; }
static inline Quantity q_capacity(uint64_t bytes) { return (Quantity){UNIT_CAPACITY, (double)bytes}; }
static inline Quantity q_rate(double bytes_per_s) { return (Quantity){UNIT_BYTES_PER_SECOND, bytes_per_s}; }
static inline Quantity q_count(uint64_t n) { return (Quantity){UNIT_COUNT, (double)n}; }
static inline Quantity q_ratio(double share) { return (Quantity){UNIT_RATIO, share}; }
/* part / whole; unknown (NaN, "?%") when whole is 0 */
Quantity q_share(uint64_t part, uint64_t whole);
static inline Quantity q_factor(double x) { return (Quantity){UNIT_FACTOR, x}; }
static inline Quantity q_number(double x) { return (Quantity){UNIT_NUMBER, x}; }

/* The unit's name in JSON: "s", "bytes", "bytes/s", "count", "ratio",
 * "factor", "number" (a capacity is "bytes" too). */
const char *unit_json_name(Unit unit);

/* A buffer that holds any formatted figure. */
#define UNITS_BUF 48

/* Writes q in words into buf (truncated to size) and returns buf. */
const char *units_format(Quantity q, char *buf, size_t size);

/* Shorthands for units_format(q_...(x), buf, size), for prose that is not
 * evidence (a finding's message, a report's header, a hover). */
const char *units_seconds(double seconds, char *buf, size_t size);
const char *units_ns(uint64_t ns, char *buf, size_t size);
const char *units_bytes(uint64_t bytes, char *buf, size_t size);
const char *units_capacity(uint64_t bytes, char *buf, size_t size);
const char *units_rate(double bytes_per_s, char *buf, size_t size);
const char *units_count(uint64_t n, char *buf, size_t size);
const char *units_ratio(double share, char *buf, size_t size);
const char *units_share(uint64_t part, uint64_t whole, char *buf, size_t size);
const char *units_factor(double x, char *buf, size_t size);

#endif
