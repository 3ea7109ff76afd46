#define _GNU_SOURCE
#include "analysis/crash_guard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define ADVISE_NO_CRASH_GUARD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ADVISE_NO_CRASH_GUARD 1
#endif
#endif

#ifndef ADVISE_NO_CRASH_GUARD
static const int guarded_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
#define SIGNAL_COUNT (sizeof guarded_signals / sizeof *guarded_signals)

/* the guard this thread is inside, if any */
static _Thread_local sigjmp_buf *active_guard;
/* each guarded thread's own signal stack, so that a stack overflow can be caught */
static _Thread_local void *alternate_stack;

static struct sigaction previous[SIGNAL_COUNT];
static pthread_once_t installed = PTHREAD_ONCE_INIT;

static void on_crash(int sig, siginfo_t *info, void *context) {
    sigjmp_buf *guard = active_guard;
    if (guard) {
        active_guard = NULL;
        siglongjmp(*guard, sig);
    }
    /* not ours: hand it to whoever had it before, else die as usual */
    for (size_t i = 0; i < SIGNAL_COUNT; i++) {
        if (guarded_signals[i] != sig) continue;
        struct sigaction *p = &previous[i];
        if ((p->sa_flags & SA_SIGINFO) && p->sa_sigaction) {
            p->sa_sigaction(sig, info, context);
            return;
        }
        if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN && p->sa_handler) {
            p->sa_handler(sig);
            return;
        }
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_once(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < SIGNAL_COUNT; i++) sigaction(guarded_signals[i], &sa, &previous[i]);
}

#endif

void crash_guard_install(void) {
#ifndef ADVISE_NO_CRASH_GUARD
    pthread_once(&installed, install_once);
#endif
}

#ifndef ADVISE_NO_CRASH_GUARD
/* Gives this thread a signal stack of its own (kept until the process ends:
 * the threads that analyse are few and long-lived). */
static void ensure_alternate_stack(void) {
    if (alternate_stack) return;
    size_t size = 256 * 1024;
    void *mem = malloc(size);
    if (!mem) return;
    stack_t ss = {.ss_sp = mem, .ss_size = size, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) == 0) alternate_stack = mem;
    else free(mem);
}

#endif

bool crash_guard_run(void (*fn)(void *arg), void *arg, int *signal_number) {
    *signal_number = 0;
#ifdef ADVISE_NO_CRASH_GUARD
    fn(arg);
    return true;
#else
    crash_guard_install();
    ensure_alternate_stack();
    sigjmp_buf guard;
    sigjmp_buf *outer = active_guard;
    int sig = sigsetjmp(guard, 1);
    if (sig) {
        active_guard = outer;
        *signal_number = sig;
        return false;
    }
    active_guard = &guard;
    fn(arg);
    active_guard = outer;
    return true;
#endif
}

void crash_guard_thread_end(void) {
    stack_t off, old;
    memset(&off, 0, sizeof off);
    off.ss_flags = SS_DISABLE;
    if (sigaltstack(&off, &old) != 0) return; /* on it: leave it */
#ifndef ADVISE_NO_CRASH_GUARD
    free(alternate_stack); /* the kernel no longer points at it (another library's, if it took over, is its own) */
    alternate_stack = NULL;
#endif
}

const char *crash_guard_signal_name(int signal_number) {
    switch (signal_number) {
    case SIGSEGV: return "segmentation fault";
    case SIGBUS: return "bus error";
    case SIGFPE: return "arithmetic exception";
    case SIGILL: return "illegal instruction";
    default: return "signal";
    }
}

void crash_guard_debug_crash_point(const char *path) {
    const char *name = getenv("ADVISE_DEBUG_CRASH");
    if (!name || !*name || !path) return;
    size_t a = strlen(path), b = strlen(name);
    if (a < b || strcmp(path + a - b, name) != 0) return;
    raise(SIGSEGV);
}
