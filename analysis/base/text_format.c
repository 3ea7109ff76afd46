/* printf into a newly allocated string (text_format.h). */
#include "analysis/base/text_format.h"

#include <stdio.h>
#include <stdlib.h>

char *format_string_v(const char *fmt, va_list ap) {
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *format_string(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = format_string_v(fmt, ap);
    va_end(ap);
    return s;
}
