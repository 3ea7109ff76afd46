#include "profiler/comm_kernels.h"

#include <ctype.h>
#include <string.h>

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* needle in s[0, n), case-sensitive or not */
static bool contains(const char *s, size_t n, const char *needle, bool ignore_case) {
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++) {
        size_t j = 0;
        while (j < m && (ignore_case ? tolower((unsigned char)s[i + j]) == needle[j] : s[i + j] == needle[j])) j++;
        if (j == m) return true;
    }
    return false;
}

bool comm_kernel_name(const char *demangled) {
    if (!demangled) return false;
    const char *s = demangled;
    if (starts_with(s, "void ")) s += 5;
    if (starts_with(s, "ncclKernel") || starts_with(s, "ncclDevKernel")) return true;
    const char *paren = strchr(s, '(');
    size_t n = paren ? (size_t)(paren - s) : strlen(s);
    if (!contains(s, n, "nccl", true)) return false;
    static const char *const operations[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                             "Reduce",    "SendRecv",  "Send",          "Recv"};
    for (size_t i = 0; i < sizeof operations / sizeof *operations; i++)
        if (contains(s, n, operations[i], false)) return true;
    return false;
}

const char *comm_kernel_collective(const char *demangled) {
    if (!comm_kernel_name(demangled)) return NULL;
    const char *s = demangled;
    const char *paren = strchr(s, '(');
    size_t n = paren ? (size_t)(paren - s) : strlen(s);
    /* longer names first: "AllReduce" and "ReduceScatter" contain "Reduce" */
    static const struct {
        const char *name, *words;
    } collectives[] = {{"AllReduce", "all-reduce"}, {"ReduceScatter", "reduce-scatter"}, {"AllGather", "all-gather"},
                       {"Broadcast", "broadcast"},  {"SendRecv", "send/receive"},      {"Reduce", "reduce"},
                       {"Send", "send/receive"},    {"Recv", "send/receive"}};
    for (size_t i = 0; i < sizeof collectives / sizeof *collectives; i++)
        if (contains(s, n, collectives[i].name, false)) return collectives[i].words;
    return NULL;
}
