/* Numbers in words for measured evidence: two or three significant digits,
 * the unit a person would pick. */
#include <stdio.h>

#include "measure.h"

/* v printed with 2-3 significant digits */
static void significant(double v, const char *unit, char *buf, size_t size) {
    if (v < 10) snprintf(buf, size, "%.2f %s", v, unit);
    else if (v < 100) snprintf(buf, size, "%.1f %s", v, unit);
    else snprintf(buf, size, "%.0f %s", v, unit);
}

void measure_seconds(double s, char *buf, size_t size) {
    if (s < 0) s = 0;
    if (s >= 1) significant(s, "s", buf, size);
    else if (s >= 1e-3) significant(s * 1e3, "ms", buf, size);
    else if (s >= 1e-6) significant(s * 1e6, "\xC2\xB5s", buf, size);
    else snprintf(buf, size, "%.0f ns", s * 1e9);
}

void measure_duration(uint64_t ns, char *buf, size_t size) { measure_seconds((double)ns / 1e9, buf, size); }

void measure_bytes(uint64_t bytes, char *buf, size_t size) {
    double b = (double)bytes;
    if (b >= 1e9) significant(b / 1e9, "GB", buf, size);
    else if (b >= 1e6) significant(b / 1e6, "MB", buf, size);
    else if (b >= 1e3) significant(b / 1e3, "kB", buf, size);
    else snprintf(buf, size, "%llu bytes", (unsigned long long)bytes);
}

void measure_share(uint64_t part, uint64_t whole, char *buf, size_t size) {
    if (!whole) {
        snprintf(buf, size, "?%%");
        return;
    }
    double pct = 100.0 * (double)part / (double)whole;
    if (pct >= 10) snprintf(buf, size, "%.0f%%", pct);
    else if (pct >= 0.1) snprintf(buf, size, "%.1f%%", pct);
    else if (part) snprintf(buf, size, "<0.1%%");
    else snprintf(buf, size, "0%%");
}
