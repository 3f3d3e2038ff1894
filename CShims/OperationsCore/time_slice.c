/*
 * time_slice.c — the workers of the latency classes (userInteractive, userInitiated) ask the
 * scheduler for a short time slice, so that their wake-up preempts lower-class work at once.
 *
 * Linux's EEVDF scheduler (6.6 and later) lets a thread that was picked keep its CPU until it
 * used its slice (1.4 ms on the 2-CPU development VM: 0.7 ms scaled by the CPU count), and a
 * thread that wakes with lag owed waits until the others catch up: a nice −4 worker woken on a
 * CPU where a nice-10 background body runs waited up to 0.95 ms (W12 "wait" p99 1.4 ms against
 * 0.6 ms with no load). Since Linux 6.12 a SCHED_OTHER thread may ask for its own slice
 * (sched_setattr's sched_runtime, 0.1–100 ms, no privilege needed), and a waking thread with a
 * shorter slice than the running one preempts it (the kernel's PREEMPT_SHORT). A latency
 * class's worker asks for OP_SHORT_SLICE_NS when it starts (workers and spares), which is what
 * the interface is for; its nice value (its share of the CPU) is unchanged. The cost: such a
 * worker that competes for its CPU with threads of equal weight is switched more often.
 *
 * OPERATIONS_SHORT_SLICE=off leaves the kernel's default. A kernel that refuses it (older than
 * 6.12 ignores the field; a seccomp filter may refuse the call) is reported once on stderr
 * (OPERATIONS_NICE_WARNINGS=0 silences it, as the nice warnings) and changes nothing else.
 */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define OP_SHORT_SLICE_NS 100000 /* the shortest slice the kernel accepts */

/* struct sched_attr (linux/sched/types.h), as of Linux 5.3; glibc has no wrapper. */
typedef struct op_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
    uint32_t sched_util_min;
    uint32_t sched_util_max;
} op_sched_attr;

static pthread_once_t op_short_slice_once = PTHREAD_ONCE_INIT;
static bool op_short_slice_wanted;

static void op_short_slice_init(void) {
    op_short_slice_wanted = op_env_flag("OPERATIONS_SHORT_SLICE", true);
}

static void op_report_refused_slice(int error) {
    static _Atomic bool reported = false;
    /* relaxed: only decides which caller prints. */
    if (atomic_exchange_explicit(&reported, true, memory_order_relaxed)) return;
    if (!op_env_flag("OPERATIONS_NICE_WARNINGS", true)) return;
    fprintf(stderr,
            "operations: the short time slice for userInteractive and userInitiated workers was "
            "refused (sched_setattr: %s); they keep the kernel's default slice, so their "
            "wake-ups may wait up to that long behind lower-class work. It needs Linux 6.12 or "
            "later and sched_setattr allowed; OPERATIONS_SHORT_SLICE=off stops asking. Reported "
            "once.\n",
            strerror(error));
}

bool op_time_slice_shorten_current_thread(void) {
    pthread_once(&op_short_slice_once, op_short_slice_init);
    if (!op_short_slice_wanted) return false;
    op_sched_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.sched_policy = SCHED_OTHER;
    attr.sched_nice = op_current_thread_nice(); /* unchanged: only the slice */
    attr.sched_runtime = OP_SHORT_SLICE_NS;
    if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0) {
        op_report_refused_slice(errno);
        return false;
    }
    return true;
}
