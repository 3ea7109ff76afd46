#include "profiler/kernel_name.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ANONYMOUS "(anonymous namespace)"

/* The '(' that opens the parameter list: the first at template depth 0 that
 * is not "(anonymous namespace)"; NULL when there is none. */
static const char *parameters_start(const char *s) {
    int angle = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '<') angle++;
        else if (*p == '>' && angle > 0) angle--;
        else if (*p == '(' && angle == 0) {
            if (strncmp(p, ANONYMOUS, strlen(ANONYMOUS)) == 0) {
                p += strlen(ANONYMOUS) - 1;
                continue;
            }
            /* "operator()" and "operator<" style names are rare in kernels: take what precedes */
            return p;
        }
    }
    return NULL;
}

char *kernel_base_name(const char *demangled) {
    const char *end = parameters_start(demangled);
    if (!end) end = demangled + strlen(demangled);
    /* drop trailing template arguments: "foo<4, bar<int>>" -> "foo" */
    while (end > demangled && end[-1] == ' ') end--;
    if (end > demangled && end[-1] == '>') {
        int depth = 0;
        const char *p = end;
        while (p > demangled) {
            p--;
            if (*p == '>') depth++;
            else if (*p == '<' && --depth == 0) break;
        }
        if (depth == 0) end = p;
    }
    /* the last component: after the last "::" or space at template depth 0 */
    const char *start = demangled;
    int depth = 0;
    for (const char *p = demangled; p < end; p++) {
        if (*p == '<' || *p == '(') depth++;
        else if ((*p == '>' || *p == ')') && depth > 0) depth--;
        else if (depth == 0 && *p == ' ') start = p + 1;
        else if (depth == 0 && *p == ':' && p + 1 < end && p[1] == ':') start = p + 2;
    }
    if (start > end) start = end;
    size_t n = (size_t)(end - start);
    char *out = malloc(n + 1);
    if (!out) return NULL;
    memcpy(out, start, n);
    out[n] = '\0';
    return out;
}

static bool contains_ci(const char *s, const char *word) {
    size_t n = strlen(word);
    for (; *s; s++)
        if (strncasecmp(s, word, n) == 0) return true;
    return false;
}

bool kernel_is_fp32_gemv(const char *name) {
    if (!name || !contains_ci(name, "gemv")) return false;
    if (contains_ci(name, "half") || contains_ci(name, "bfloat16") || contains_ci(name, "__nv_bf") ||
        contains_ci(name, "f16"))
        return false;
    return strstr(name, "<float") || strstr(name, "<int, int, float");
}

bool kernel_is_fp32_simt_gemm(const char *name) {
    if (!name) return false;
    if (contains_ci(name, "tf32") || contains_ci(name, "tensor") || contains_ci(name, "bf16") ||
        contains_ci(name, "f16") || contains_ci(name, "hgemm") || contains_ci(name, "wgmma"))
        return false;
    if (contains_ci(name, "sgemm")) return true;
    return contains_ci(name, "gemm") && contains_ci(name, "f32f32_f32f32") && contains_ci(name, "ffma");
}

/* identifiers that end in _kernel but name the launcher, not the operator */
static const char *const kernel_wrappers[] = {"elementwise", "vectorized_elementwise", "unrolled_elementwise",
                                              "reduce", "index_elementwise", "launch_legacy", NULL};

bool kernel_elementwise_op(const char *name, char *op, size_t size) {
    if (!name || strncmp(name, "void at::native::", 17) != 0) return false;
    for (const char *k = strstr(name, "_kernel"); k; k = strstr(k + 1, "_kernel")) {
        const char *start = k;
        while (start > name && (isalnum((unsigned char)start[-1]) || start[-1] == '_')) start--;
        size_t len = (size_t)(k - start);
        if (len == 0 || len >= size) continue;
        bool wrapper = false;
        for (size_t i = 0; kernel_wrappers[i] && !wrapper; i++)
            wrapper = strlen(kernel_wrappers[i]) == len && strncmp(start, kernel_wrappers[i], len) == 0;
        if (wrapper) continue;
        memcpy(op, start, len);
        op[len] = '\0';
        /* a backward kernel is not a forward operator */
        return strstr(op, "backward") == NULL && !isupper((unsigned char)op[0]);
    }
    return false;
}

void kernel_short_name(const char *name, char *buf, size_t size) {
    size_t n = 0;
    int depth = 0;
    for (; name[n]; n++) {
        if (name[n] == '<') depth++;
        else if (name[n] == '>' && depth > 0) depth--;
        else if (name[n] == '(' && depth == 0) {
            static const char anonymous[] = "(anonymous namespace)";
            if (strncmp(name + n, anonymous, sizeof anonymous - 1) != 0) break;
            n += sizeof anonymous - 2; /* a namespace, not the parameters */
        }
    }
    size_t max = size - 4 < 80 ? size - 4 : 80;
    bool cut = n > max;
    if (cut) {
        n = max;
        while (n > 0 && ((unsigned char)name[n] & 0xC0) == 0x80) n--;
    }
    memcpy(buf, name, n);
    if (cut) memcpy(buf + n, "\xE2\x80\xA6", 3), n += 3;
    buf[n] = '\0';
}
