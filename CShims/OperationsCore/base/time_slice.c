/*
 * time_slice.c — the workers of the default class and of the latency classes (userInitiated,
 * userInteractive) ask the scheduler for a short time slice, so that their wake-up preempts
 * what runs on their CPU at once: lower-class work, and the thread that woke them.
 *
 * Linux's EEVDF scheduler (6.6 and later) lets a thread that was picked keep its CPU until it
 * used its slice (1.4 ms seen on the 2-CPU development VM: the base slice scaled by the CPU
 * count), and a thread that wakes with lag owed waits until the others catch up: a nice −4
 * worker woken on a CPU where a nice-10 background body runs waited up to 0.95 ms (W12 "wait"
 * p99 1.4 ms against 0.6 ms with no load). Since Linux 6.12 a SCHED_OTHER thread may ask for
 * its own slice (sched_setattr's sched_runtime, 0.1–100 ms, no privilege needed), and a waking
 * thread with a shorter slice than the running one preempts it (the kernel's PREEMPT_SHORT).
 *
 * The default class asks too: a submitter that is not a worker wakes the parked worker pinned to
 * its own CPU (pool/parking_and_wake.c, op_pool_wake_one), which is meant to preempt it as the wake's system
 * call returns. With the kernel's slice, a submitter that went on running (it spins, or computes)
 * kept its CPU until the kernel's next preemption point (its protected slice, then the next tick,
 * 4 ms at HZ=250: RUN_TO_PARITY) while the pinned worker could not move to the idle CPU beside it:
 * W7 busy's slowest start was 3 ms or more in 6 of 7 runs on the 2-CPU VM (up to 4.5 ms; a
 * scheduler trace: the submitter ran 3.96 ms after the wake, the other CPU idle), 225–486 µs with
 * the short slice. Where the kernel does not grant it, op_pool_wake_one's backstop (a second
 * wake-up on another CPU when the first did not run) covers the default class, so only the
 * latency classes report the refusal. Utility and background workers keep the default slice: they yield to
 * the submitter by design, and their wake-ups go to another CPU first.
 *
 * Such a worker asks for OP_SHORT_SLICE_NS when it starts (workers and spares), which is what
 * the interface is for; its nice value (its share of the CPU) is unchanged. The cost: such a
 * worker that competes for its CPU with threads of equal weight is switched more often.
 *
 * OPERATIONS_SHORT_SLICE=off leaves the kernel's default. The slice is read back with
 * sched_getattr (6.12 and later report a fair thread's slice in sched_runtime): a kernel that
 * refuses the call (a seccomp filter) or ignores the field (older than 6.12: the call succeeds
 * and the slice stays the default) is noted by a latency worker, and said once on stderr when a
 * latency class is asked for (op_class_requested: a queue, task or waiter of that class; not a
 * latency pool borrowed for its nice value), under the same switch as the nice warnings
 * (OPERATIONS_NICE_WARNINGS=0, op_runtime_set_clamp_warning(false)); it changes nothing else.
 * op_runtime_short_time_slice says what the workers got. The thread keeps its policy
 * (SCHED_FLAG_KEEP_POLICY): one under a real-time or the idle policy (a process started under
 * chrt) is not asked at all.
 *
 * A thread inherits its creator's slice: the workers of the other classes give up the short
 * one if they got it that way (a short-slice worker may start them). A thread that a body on
 * such a worker creates itself keeps it, as it keeps that worker's nice value: a thread made
 * from a default-class operation (a Foundation Thread, a thread libdispatch adds to its pool
 * while such a body enqueues, a child process) runs with the 100 µs slice, and is switched
 * more often when it competes for its CPU.
 */
#include "base.h"

#include <errno.h>
#include <stdio.h>
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

/* What the short-slice workers (default class and above) got: OP_SLICE_UNKNOWN until one
 * asked, then the slice in ns, or 0 when they keep the kernel's default (off, refused, ignored). Every worker gets the same
 * answer from one kernel, so the last writer wins harmlessly. relaxed: a report, ordering
 * nothing else. */
#define OP_SLICE_UNKNOWN (-1)
static _Atomic int64_t op_short_slice_granted = OP_SLICE_UNKNOWN;

static void op_short_slice_init(void) {
    op_short_slice_wanted = op_env_flag("OPERATIONS_SHORT_SLICE", true);
}

/* What the kernel did to the first latency worker it refused: "refused (sched_setattr: …)" or
 * "ignored (…)". Written once, by the worker that wins op_slice_refusal_noted, before it sets the
 * OP_CLASS_REPORT_SLICE bits (release), which the reporter clears (acquire) before reading it. */
static char op_slice_refusal[96];
static _Atomic bool op_slice_refusal_noted = false;

static void op_note_refused_slice(const char *why) {
    /* relaxed: only decides which worker writes the text. */
    if (atomic_exchange_explicit(&op_slice_refusal_noted, true, memory_order_relaxed)) return;
    snprintf(op_slice_refusal, sizeof op_slice_refusal, "%s", why);
    /* release: the text above before the bits that make a reporter read it. */
    atomic_fetch_or_explicit(&op_class_reports_pending,
                             OP_CLASS_REPORT_SLICE(OP_QOS_USER_INITIATED) |
                                 OP_CLASS_REPORT_SLICE(OP_QOS_USER_INTERACTIVE),
                             memory_order_release);
}

void op_time_slice_report_refusal(int qos) {
    if ((unsigned)qos >= OP_QOS_COUNT) return;
    /* relaxed: a hint; the read-modify-write below decides. */
    if (!(atomic_load_explicit(&op_class_reports_pending, memory_order_relaxed) &
          OP_CLASS_REPORT_SLICE(qos))) {
        return;
    }
    /* acquire: the refusal's text (released with the bits); one caller sees its bit set. */
    uint32_t before = atomic_fetch_and_explicit(&op_class_reports_pending,
                                                ~(uint32_t)OP_CLASS_REPORT_SLICE_ALL,
                                                memory_order_acquire);
    if (!(before & OP_CLASS_REPORT_SLICE(qos)) || !op_runtime_clamp_warning()) return;
    fprintf(stderr,
            "operations: the kernel %s the 100 us time slice asked for the userInteractive and "
            "userInitiated workers (and the default class's); they keep the kernel's default "
            "slice, so their wake-ups may wait up to that long (about 1-4 ms) behind "
            "lower-class work on their CPU. It needs Linux 6.12 or later and sched_setattr "
            "allowed (seccomp); OPERATIONS_SHORT_SLICE=off stops asking, "
            "OPERATIONS_NICE_WARNINGS=0 or op_runtime_set_clamp_warning(false) silences this. "
            "Reported once.\n",
            op_slice_refusal);
}

int64_t op_runtime_short_time_slice(void) {
    return atomic_load_explicit(&op_short_slice_granted, memory_order_relaxed);
}

/* The policies whose threads have a slice of their own (EEVDF's fair class). */
static bool op_policy_has_slice(int policy) { return policy == SCHED_OTHER || policy == SCHED_BATCH; }

#ifndef SCHED_FLAG_KEEP_POLICY
#define SCHED_FLAG_KEEP_POLICY 0x08 /* Linux 5.3: the thread keeps its policy and reset-on-fork */
#endif

/* sched_setattr on the calling thread: its nice value kept, the slice `runtime` (0: the kernel's
 * default), its policy kept (SCHED_BATCH stays, and so does reset-on-fork). 0 or errno. */
static int op_set_slice(uint64_t runtime) {
    op_sched_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.sched_flags = SCHED_FLAG_KEEP_POLICY;
    attr.sched_nice = op_current_thread_nice(); /* unchanged: only the slice */
    attr.sched_runtime = runtime;
    return syscall(SYS_sched_setattr, 0, &attr, 0) == 0 ? 0 : errno;
}

/* The calling thread's slice as sched_getattr reports it (0 before Linux 6.12), or 0. */
static uint64_t op_current_slice(void) {
    op_sched_attr got;
    memset(&got, 0, sizeof got);
    if (syscall(SYS_sched_getattr, 0, &got, (unsigned)sizeof got, 0) != 0) return 0;
    return got.sched_runtime;
}

bool op_time_slice_shorten_current_thread(bool report) {
    pthread_once(&op_short_slice_once, op_short_slice_init);
    /* A thread under a real-time or the idle policy (the process was started with chrt, say)
     * keeps it: the call would move it to SCHED_OTHER, or be refused. */
    if (!op_short_slice_wanted || !op_policy_has_slice(sched_getscheduler(0))) {
        atomic_store_explicit(&op_short_slice_granted, 0, memory_order_relaxed);
        return false;
    }
    int error = op_set_slice(OP_SHORT_SLICE_NS);
    if (error != 0) {
        char why[96];
        snprintf(why, sizeof why, "refused (sched_setattr: %s)", strerror(error));
        if (report) op_note_refused_slice(why);
        atomic_store_explicit(&op_short_slice_granted, 0, memory_order_relaxed);
        return false;
    }
    /* Read it back: a kernel older than 6.12 accepts the call and ignores the field (its
     * sched_getattr reports 0 there, 6.12 and later the thread's slice). */
    if (op_current_slice() != OP_SHORT_SLICE_NS) {
        if (report) op_note_refused_slice("ignored (Linux older than 6.12)");
        atomic_store_explicit(&op_short_slice_granted, 0, memory_order_relaxed);
        return false;
    }
    atomic_store_explicit(&op_short_slice_granted, OP_SHORT_SLICE_NS, memory_order_relaxed);
    return true;
}

void op_time_slice_reset_current_thread(void) {
    /* A thread inherits its creator's slice: a worker of another class that a short-slice
     * worker (or a body on one) created would run with the short slice. Only that one is
     * undone: a slice the user set for the thread that created ours is theirs. */
    if (op_policy_has_slice(sched_getscheduler(0)) && op_current_slice() == OP_SHORT_SLICE_NS) {
        (void)op_set_slice(0);
    }
}
