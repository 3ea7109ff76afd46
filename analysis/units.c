/* The words for each unit (units.h): one formatter per unit. */
#include "analysis/units.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

Quantity q_share(uint64_t part, uint64_t whole) {
    return q_ratio(whole ? (double)part / (double)whole : NAN);
}

const char *unit_json_name(Unit unit) {
    switch (unit) {
    case UNIT_SECONDS: return "s";
    case UNIT_BYTES:
    case UNIT_CAPACITY: return "bytes";
    case UNIT_BYTES_PER_SECOND: return "bytes/s";
    case UNIT_COUNT: return "count";
    case UNIT_RATIO: return "ratio";
    case UNIT_FACTOR: return "factor";
    case UNIT_NUMBER: return "number";
    }
    return "number";
}

/* Figures this large in their largest unit are written with an exponent. */
#define HUGE_FIGURE 1e15

typedef struct {
    double scale;     /* of the base unit */
    const char *name; /* after a space */
} Step;

/* The decimals that give v two or three significant digits once rounded;
 * -1 when it rounds to 1000 or more (the next unit up, if any). */
static int decimals_for(double v) {
    if (v < 9.995) return 2;
    if (v < 99.95) return 1;
    if (v < 999.5) return 0;
    return -1;
}

/* a (finite, >= 0) in the largest step it reaches, the first step written
 * as a whole number ("812 ns", "512 bytes") */
static void scaled(const char *sign, double a, const Step *steps, size_t n, char *buf, size_t size) {
    size_t i = 0;
    while (i + 1 < n && a >= steps[i + 1].scale) i++;
    for (;;) {
        double v = a / steps[i].scale;
        int d = i == 0 ? (v < 999.5 ? 0 : -1) : decimals_for(v);
        if (d < 0 && i + 1 < n) {
            i++;
            continue;
        }
        if (d < 0 && v >= HUGE_FIGURE) snprintf(buf, size, "%s%.3g %s", sign, v, steps[i].name);
        else snprintf(buf, size, "%s%.*f %s", sign, d < 0 ? 0 : d, v, steps[i].name);
        return;
    }
}

static const Step seconds_steps[] = {{1e-9, "ns"}, {1e-6, "\xC2\xB5s"}, {1e-3, "ms"}, {1, "s"}};
static const Step bytes_steps[] = {{1, "bytes"}, {1e3, "kB"}, {1e6, "MB"}, {1e9, "GB"}, {1e12, "TB"}};
static const Step rate_steps[] = {{1, "bytes/s"}, {1e3, "kB/s"}, {1e6, "MB/s"}, {1e9, "GB/s"}, {1e12, "TB/s"}};

/* a whole number with thousands separators: 1234567 -> "1,234,567" */
static void with_commas(const char *sign, double a, char *buf, size_t size) {
    char digits[400];
    if (a < 9.2e18) snprintf(digits, sizeof digits, "%llu", (unsigned long long)llround(a));
    else snprintf(digits, sizeof digits, "%.0f", a);
    size_t len = strlen(digits), o = 0;
    for (const char *s = sign; *s && o + 1 < size; s++) buf[o++] = *s;
    for (size_t i = 0; i < len && o + 1 < size; i++) {
        if (i > 0 && (len - i) % 3 == 0) {
            if (o + 2 >= size) break;
            buf[o++] = ',';
        }
        buf[o++] = digits[i];
    }
    if (size) buf[o < size ? o : size - 1] = '\0';
}

static void capacity(const char *sign, double a, char *buf, size_t size) {
    static const char *const names[] = {"KiB", "MiB", "GiB", "TiB"};
    double whole = round(a);
    int step = -1;
    for (int k = 0; k < 4 && whole >= 1024.0 * pow(1024.0, k); k++)
        if (fmod(whole, 1024.0 * pow(1024.0, k)) == 0) step = k;
    if (step < 0) snprintf(buf, size, "%s%.0f bytes", sign, whole);
    else snprintf(buf, size, "%s%.0f %s", sign, whole / (1024.0 * pow(1024.0, step)), names[step]);
}

static void percent(const char *sign, double share, char *buf, size_t size) {
    double pct = share * 100;
    if (pct == 0) snprintf(buf, size, "0%%");
    else if (pct < 0.1) snprintf(buf, size, "%s<0.1%%", sign);
    else if (pct < 9.95) snprintf(buf, size, "%s%.1f%%", sign, pct);
    else if (pct < HUGE_FIGURE) snprintf(buf, size, "%s%.0f%%", sign, pct);
    else snprintf(buf, size, "%s%.3g%%", sign, pct);
}

static void number(const char *sign, double a, const char *suffix, int fixed, char *buf, size_t size) {
    if (a >= HUGE_FIGURE) snprintf(buf, size, "%s%.3g%s", sign, a, suffix);
    else if (fixed >= 0) snprintf(buf, size, "%s%.*f%s", sign, fixed, a, suffix);
    else {
        int d = decimals_for(a);
        snprintf(buf, size, "%s%.*f%s", sign, d < 0 ? 0 : d, a, suffix);
    }
}

const char *units_format(Quantity q, char *buf, size_t size) {
    if (!buf || size == 0) return buf;
    double v = q.value;
    if (!isfinite(v)) {
        static const char *const unknown[] = {
            [UNIT_SECONDS] = "? s", [UNIT_BYTES] = "? bytes", [UNIT_CAPACITY] = "? bytes",
            [UNIT_BYTES_PER_SECOND] = "? GB/s", [UNIT_COUNT] = "?", [UNIT_RATIO] = "?%",
            [UNIT_FACTOR] = "?x", [UNIT_NUMBER] = "?",
        };
        snprintf(buf, size, "%s", (unsigned)q.unit <= UNIT_NUMBER ? unknown[q.unit] : "?");
        return buf;
    }
    const char *sign = v < 0 ? "-" : "";
    double a = fabs(v);
    switch (q.unit) {
    case UNIT_SECONDS: scaled(sign, a, seconds_steps, 4, buf, size); break;
    case UNIT_BYTES: scaled(sign, a, bytes_steps, 5, buf, size); break;
    case UNIT_BYTES_PER_SECOND: scaled(sign, a, rate_steps, 5, buf, size); break;
    case UNIT_CAPACITY: capacity(sign, a, buf, size); break;
    case UNIT_COUNT: with_commas(sign, a, buf, size); break;
    case UNIT_RATIO: percent(sign, a, buf, size); break;
    case UNIT_FACTOR: number(sign, a, "x", 1, buf, size); break;
    case UNIT_NUMBER:
    default: number(sign, a, "", -1, buf, size); break;
    }
    return buf;
}

const char *units_seconds(double seconds, char *buf, size_t size) { return units_format(q_seconds(seconds), buf, size); }
const char *units_ns(uint64_t ns, char *buf, size_t size) { return units_format(q_ns(ns), buf, size); }
const char *units_bytes(uint64_t bytes, char *buf, size_t size) { return units_format(q_bytes(bytes), buf, size); }
const char *units_capacity(uint64_t bytes, char *buf, size_t size) { return units_format(q_capacity(bytes), buf, size); }
const char *units_rate(double bytes_per_s, char *buf, size_t size) { return units_format(q_rate(bytes_per_s), buf, size); }
const char *units_count(uint64_t n, char *buf, size_t size) { return units_format(q_count(n), buf, size); }
const char *units_ratio(double share, char *buf, size_t size) { return units_format(q_ratio(share), buf, size); }
const char *units_share(uint64_t part, uint64_t whole, char *buf, size_t size) {
    return units_format(q_share(part, whole), buf, size);
}
const char *units_factor(double x, char *buf, size_t size) { return units_format(q_factor(x), buf, size); }
