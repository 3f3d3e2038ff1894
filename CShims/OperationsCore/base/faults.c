/*
 * faults.c — the core's one way to start a thread, and test-only fault injection.
 *
 * Every thread the core starts (pinned workers, spares, the blocked-worker monitor) goes through
 * op_thread_create, so tests can make thread creation fail the way a container's pids.max or
 * RLIMIT_NPROC makes it fail (EAGAIN), without a privileged setup. The blocked-worker monitor
 * asks op_fault_proc_unreadable() before it opens /proc, so tests can take /proc away, and
 * nice.c asks op_fault_setpriority_refused() before each setpriority, so tests can refuse it
 * the way a seccomp filter or a container's security profile refuses it (EPERM) even where
 * the capabilities and RLIMIT_NICE say it is allowed.
 *
 * Both are read from the environment once, on the first call of either (before the first thread
 * the core starts); a value set later is ignored:
 *   OPERATIONS_FAULT_THREAD_CREATE=N    the Nth and every later thread creation fails (EAGAIN)
 *   OPERATIONS_FAULT_THREAD_CREATE=N-M  creations N to M fail, later ones succeed again
 *   OPERATIONS_FAULT_PROC=unreadable    opening /proc/self/task/TID/stat fails (ENOENT), as if
 *                                       /proc were not mounted
 *   OPERATIONS_FAULT_SETPRIORITY=eperm  every setpriority of the core fails with EPERM
 * Calls are counted from 1 across the whole process. Unset, empty or malformed: no fault.
 */
#include "base.h"

#include <errno.h>
#include <string.h>

static long op_fault_create_first; /* 0: no fault */
static long op_fault_create_last;  /* inclusive; LONG_MAX: no end */
static bool op_fault_proc;
static bool op_fault_setpriority;
static pthread_once_t op_faults_once = PTHREAD_ONCE_INIT;
/* Thread creations so far. relaxed: a counter; each call needs only its own number. */
static _Atomic long op_fault_create_calls;

static void op_faults_read(void) {
    const char *spec = getenv("OPERATIONS_FAULT_THREAD_CREATE");
    if (spec && *spec) {
        char *end = NULL;
        long first = strtol(spec, &end, 10);
        long last = __LONG_MAX__;
        bool ok = end != spec && first > 0;
        if (ok && *end == '-') {
            const char *rest = end + 1;
            last = strtol(rest, &end, 10);
            ok = end != rest && last >= first;
        }
        if (ok && *end == '\0') {
            op_fault_create_first = first;
            op_fault_create_last = last;
        }
    }
    const char *proc = getenv("OPERATIONS_FAULT_PROC");
    op_fault_proc = proc && strcmp(proc, "unreadable") == 0;
    const char *renice = getenv("OPERATIONS_FAULT_SETPRIORITY");
    op_fault_setpriority = renice && strcmp(renice, "eperm") == 0;
}

int op_thread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                     void *arg) {
    pthread_once(&op_faults_once, op_faults_read);
    if (OP_UNLIKELY(op_fault_create_first != 0)) {
        long call = atomic_fetch_add_explicit(&op_fault_create_calls, 1, memory_order_relaxed) + 1;
        if (call >= op_fault_create_first && call <= op_fault_create_last) return EAGAIN;
    }
    return pthread_create(thread, attr, start, arg);
}

bool op_fault_proc_unreadable(void) {
    pthread_once(&op_faults_once, op_faults_read);
    return op_fault_proc;
}

bool op_fault_setpriority_refused(void) {
    pthread_once(&op_faults_once, op_faults_read);
    return op_fault_setpriority;
}
