/* A crash in one file's analysis must not take the other files (or the
 * editor's server) down with it. crash_guard_run runs a function and turns
 * a crash inside it (SIGSEGV, SIGBUS, SIGFPE, SIGILL) into a false return,
 * as LLVM's CrashRecoveryContext does for libclang: the signal handler jumps
 * back to the guard. Memory the function had allocated is leaked and what it
 * was building must be thrown away, never used; locks must not be held
 * inside it. A crash outside any guard ends the process as before.
 *
 * Sanitizer builds (ADVISE_SANITIZE) run the function unguarded, so that
 * AddressSanitizer reports the fault instead of the guard hiding it. */
#ifndef ADVISE_CRASH_GUARD_H
#define ADVISE_CRASH_GUARD_H

#include <stdbool.h>

/* Installs the signal handlers. Call once at start-up, before libclang
 * creates an index (LLVM then chains to ours for crashes outside its own
 * recovery); crash_guard_run calls it too. */
void crash_guard_install(void);

/* Runs fn(arg). True when it returned; false when it crashed, with the
 * signal's number in *signal_number. */
bool crash_guard_run(void (*fn)(void *arg), void *arg, int *signal_number);

/* Call on a thread that ran guarded work (or libclang) before it exits:
 * takes its alternate signal stack down and frees ours. A library may have
 * put its own there (LLVM does, on the first thread that registers its
 * handlers), and AddressSanitizer unmaps whatever stack a thread has at its
 * end: a stack it did not map makes it abort. */
void crash_guard_thread_end(void);

/* "segmentation fault" for SIGSEGV and so on. */
const char *crash_guard_signal_name(int signal_number);

/* Test hook: when the environment names a file (ADVISE_DEBUG_CRASH=name),
 * the analysis of a file whose path ends with that name crashes on
 * purpose, so that the tests can show that the guard holds. */
void crash_guard_debug_crash_point(const char *path);

#endif
