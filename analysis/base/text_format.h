/* printf into a newly allocated string: the one formatter every layer uses
 * (findings, evidence, profiles, error messages). */
#ifndef ADVISE_TEXT_FORMAT_H
#define ADVISE_TEXT_FORMAT_H

#include <stdarg.h>

/* The formatted text (the caller frees it), or NULL when out of memory or
 * the format is invalid. format_string_v reads ap (the caller still calls
 * va_end on it). */
char *format_string(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *format_string_v(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
