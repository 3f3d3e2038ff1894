/*
 * blocked_worker_monitor.c — the thread that notices workers blocked in a task's body.
 *
 * A pool has one worker per CPU. A body that blocks on something the core does not see (a
 * mutex, a condition variable, I/O, sleep) keeps its worker asleep in the kernel; when every
 * worker of a class is blocked that way, nothing else of the class runs — not even an
 * operation cancelled meanwhile, which only needs to be retired. Waits the core does see
 * (op_task_wait, op_queue_wait) already get a spare thread (spares.c). For the others we do
 * what libdispatch's workqueue monitor does on Linux: look at the kernel's view of the threads.
 *
 * This file is only the clock. The monitor thread sleeps on a futex at no CPU cost while no
 * work waits. A pool that hands out a token, and a worker that keeps a task in its local run
 * queue without calling another drainer for it, call op_monitor_poke(), which is one relaxed
 * load while the monitor is awake and one exchange plus a wake-up the first time after it slept.
 * Awake, it calls the tick function that the worker pool gave op_monitor_start() every
 * OP_MONITOR_TICK_NS; the tick says whether work is still waiting, and after
 * OP_MONITOR_QUIET_TICKS ticks without, the monitor goes back to sleep. Calls go one way: the
 * pool calls down into this file; the only call up is the tick, through the pointer set at
 * creation. What a tick does (which worker is blocked, starting spares) is in monitor_view.c.
 *
 * op_thread_is_asleep() reads /proc/self/task/TID/stat, the kernel's state letter of a thread;
 * the tick asks it only for a worker that has run one task for a whole tick while work waits.
 *
 * Without /proc (not mounted, masked or unreadable in a container, or OPERATIONS_FAULT_PROC=
 * unreadable) the state letters are gone. We notice it when a stat file cannot be opened and the
 * monitor's own cannot be either (a single missing file is a thread that just exited), say so
 * once on stderr, and from then on judge by each thread's CPU clock (clock_gettime on the
 * thread's CPU-time clock, which needs no /proc): a thread that used less than a quarter of the
 * wall time between consecutive looks on the same task, three times in a row, slept (30 to 40 ms
 * after it blocked). A body that computes is not
 * counted, so a CPU-bound default-width queue is not oversubscribed. Only if the CPU clock cannot
 * be read either, a worker is counted blocked once the tick has asked about it on
 * OP_MONITOR_FALLBACK_TICKS consecutive ticks (50 ms on one task while work waits): a computing
 * body then also gets a spare, which costs a thread, and no work waits behind an invisible block
 * for ever.
 *
 * The monitor thread is the only caller of op_thread_is_asleep (the tick runs on it), so the
 * state of that fallback is the monitor thread's own and needs no atomics.
 */
#include "pool.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define OP_MONITOR_TICK_NS (10 * INT64_C(1000000)) /* between looks while work waits */
#define OP_MONITOR_QUIET_TICKS 10                   /* ticks without waiting work before sleeping */
#define OP_MONITOR_FALLBACK_TICKS 5 /* without /proc: ticks on one task before "blocked" */
#define OP_MONITOR_STREAKS 256       /* threads the fallback follows at once (by tid, hashed) */

enum { OP_MONITOR_AWAKE = 0, OP_MONITOR_ASLEEP = 1 };

/* The futex word: OP_MONITOR_ASLEEP while the monitor sleeps without a deadline. Read by every
 * token push (relaxed, a line that changes at most every OP_MONITOR_QUIET_TICKS ticks). */
static alignas(OP_CACHE_LINE) _Atomic uint32_t op_monitor_state = OP_MONITOR_AWAKE;
/* Set by the first op_monitor_start, before the thread starts (which orders it for the
 * thread); relaxed: later calls store the same function. */
static _Atomic(op_monitor_tick_fn) op_monitor_tick;
static pthread_once_t op_monitor_once = PTHREAD_ONCE_INIT;

/* The monitor thread's own (see the top of the file): ticks run so far, whether /proc was found
 * unreadable, and for the fallback the tick of the last question about each thread, how many
 * consecutive ticks asked about it, and its CPU time then. */
static uint64_t op_monitor_ticks;
static bool op_proc_unreadable;
static struct op_streak {
    int tid;
    uint32_t streak;
    uint64_t tick;
    int64_t cpu_ns;  /* the thread's CPU time at that question (-1: its clock unreadable) */
    uint32_t idle;   /* consecutive questions at which it had used under a quarter of a CPU */
    int64_t wall_ns; /* op_now_ns() then */
} op_streaks[OP_MONITOR_STREAKS];

/* The monitor is started by whichever thread creates the first pool, perhaps a worker pinned
 * to one CPU: it spreads itself over every usable CPU, so the spares it starts (which inherit
 * its affinity) are not all bound to that one. */
static void op_monitor_unpin(void) {
    const op_topology_data *topology = op_topology_get();
    cpu_set_t *set = op_cpuset_of(topology->cpus, topology->cpu_count); /* any CPU count */
    if (!set) return;
    pthread_setaffinity_np(pthread_self(), topology->cpuset_size, set); /* best effort */
    CPU_FREE(set);
}

static bool op_monitor_run_tick(op_monitor_tick_fn tick) {
    op_monitor_ticks++;
    return tick();
}

static void *op_monitor_main(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "op-monitor");
    op_monitor_unpin();
    op_time_slice_reset_current_thread(); /* a short-slice worker may have started it */
    int quiet = 0;
    for (;;) {
        op_monitor_tick_fn tick = atomic_load_explicit(&op_monitor_tick, memory_order_relaxed);
        if (op_monitor_run_tick(tick)) {
            quiet = 0;
        } else if (++quiet >= OP_MONITOR_QUIET_TICKS) {
            /* seq_cst: Dekker with op_monitor_poke — we publish ASLEEP, then look for work
             * once more; a pusher publishes its token (seq_cst fence in op_pool_push_token),
             * then reads the state. One of the two sees the other. */
            atomic_store_explicit(&op_monitor_state, OP_MONITOR_ASLEEP, memory_order_seq_cst);
            /* seq_cst fence: the tick's loads are relaxed or acquire; the fence makes the store
             * and them a Dekker pair with the pusher's fence and load, by the standard and not
             * only on x86. */
            atomic_thread_fence(memory_order_seq_cst);
            if (op_monitor_run_tick(tick)) {
                atomic_store_explicit(&op_monitor_state, OP_MONITOR_AWAKE, memory_order_relaxed);
                quiet = 0;
            } else {
                while (atomic_load_explicit(&op_monitor_state, memory_order_acquire) ==
                       OP_MONITOR_ASLEEP) {
                    op_futex_wait(&op_monitor_state, OP_MONITOR_ASLEEP, OP_WAIT_FOREVER);
                }
                quiet = 0;
            }
        }
        /* The futex word is AWAKE here: this sleep is a plain timed wait. */
        op_futex_wait(&op_monitor_state, OP_MONITOR_AWAKE, OP_MONITOR_TICK_NS);
    }
    return NULL;
}

static void op_monitor_create(void) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_t thread;
    int rc = op_thread_create(&thread, &attr, op_monitor_main, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        /* Without it blocked bodies are not stood in for; everything else works. */
        fprintf(stderr,
                "operations: cannot start the blocked-worker monitor thread: %s; bodies that block "
                "in the kernel (locks, I/O) get no spare thread in this process. Raise the "
                "container's pids.max or RLIMIT_NPROC (ulimit -u), or restrict the CPU set so "
                "fewer workers are started.\n",
                strerror(rc));
    }
}

void op_monitor_start(op_monitor_tick_fn tick) {
    op_monitor_tick_fn expected = NULL;
    atomic_compare_exchange_strong_explicit(&op_monitor_tick, &expected, tick, memory_order_relaxed,
                                            memory_order_relaxed);
    pthread_once(&op_monitor_once, op_monitor_create);
}

bool op_monitor_is_asleep(void) {
    /* relaxed: a snapshot for a diagnostic report. */
    return atomic_load_explicit(&op_monitor_state, memory_order_relaxed) == OP_MONITOR_ASLEEP;
}

void op_monitor_poke(void) {
    /* relaxed: the caller's seq_cst fence after its push orders this read (see the Dekker
     * note in op_monitor_main). */
    if (OP_LIKELY(atomic_load_explicit(&op_monitor_state, memory_order_relaxed) ==
                  OP_MONITOR_AWAKE)) {
        return;
    }
    /* acq_rel: one poker wins the wake-up. */
    if (atomic_exchange_explicit(&op_monitor_state, OP_MONITOR_AWAKE, memory_order_acq_rel) ==
        OP_MONITOR_ASLEEP) {
        op_futex_wake(&op_monitor_state, 1);
    }
}

void op_monitor_forget_after_fork(void) {
    /* The child's one thread: no monitor runs, so plain stores; the next op_monitor_start makes
     * one, and pthread_create orders these stores for it. */
    op_monitor_once = (pthread_once_t)PTHREAD_ONCE_INIT;
    atomic_store_explicit(&op_monitor_state, OP_MONITOR_AWAKE, memory_order_relaxed);
    op_monitor_ticks = 0;
    op_proc_unreadable = false;
    memset(op_streaks, 0, sizeof op_streaks);
}

static int op_open_stat(int tid) {
    if (op_fault_proc_unreadable()) {
        errno = ENOENT;
        return -1;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* Without /proc: true once the tick has asked about `tid` on OP_MONITOR_FALLBACK_TICKS
 * consecutive ticks (the tick asks only while the thread runs the same task as at its last
 * look, so that many ticks on one task). A tid sharing a slot with another restarts the count. */
static bool op_thread_ran_long(int tid) {
    struct op_streak *slot = &op_streaks[(unsigned)tid % OP_MONITOR_STREAKS];
    /* The thread's CPU-time clock: Linux encodes a thread's clock id from its tid as glibc's
     * pthread_getcpuclockid does ((~tid << 3) | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED). */
    clockid_t clock = (clockid_t)((~(unsigned)tid << 3) | 6u);
    struct timespec cpu;
    int64_t cpu_ns = -1;
    if (clock_gettime(clock, &cpu) == 0) cpu_ns = (int64_t)cpu.tv_sec * 1000000000 + cpu.tv_nsec;
    int64_t now = op_now_ns();
    bool consecutive = slot->tid == tid && slot->tick + 1 == op_monitor_ticks;
    bool slept = false;
    if (slot->tid == tid && slot->tick == op_monitor_ticks) {
        return slot->streak >= OP_MONITOR_FALLBACK_TICKS; /* asked twice in one tick: no change */
    } else if (consecutive) {
        slot->streak++;
        if (cpu_ns >= 0 && slot->cpu_ns >= 0) {
            /* Less than a quarter of the wall time on a CPU since the last look, three times in a
             * row: asleep. Three, because a computing thread that others keep from its CPU also
             * shows little CPU time for a tick now and then, and (seen on a 2-CPU VM, 2 runs in
             * 5 of FaultTests' computing bodies) for two. */
            slot->idle = (cpu_ns - slot->cpu_ns) * 4 < now - slot->wall_ns ? slot->idle + 1 : 0;
            slept = slot->idle >= 3;
        }
    } else {
        slot->tid = tid;
        slot->streak = 1;
        slot->idle = 0;
    }
    slot->tick = op_monitor_ticks;
    slot->cpu_ns = cpu_ns;
    slot->wall_ns = now;
    if (cpu_ns >= 0) return slept;
    return slot->streak >= OP_MONITOR_FALLBACK_TICKS; /* no CPU clock either: by time alone */
}

bool op_thread_is_asleep(int tid) {
    if (OP_UNLIKELY(op_proc_unreadable)) return op_thread_ran_long(tid);
    int fd = op_open_stat(tid);
    if (fd < 0) {
        int error = errno;
        /* A thread that just exited has no file; /proc is gone when ours has none either. */
        int own = op_open_stat(op_current_tid());
        if (own >= 0) {
            close(own);
            return false;
        }
        op_proc_unreadable = true;
        fprintf(stderr,
                "operations: cannot read /proc/self/task/%d/stat (%s): the blocked-worker monitor "
                "cannot read which workers sleep in a task body. It now judges by each thread's "
                "CPU time instead (a body that used under a quarter of a tick's time slept), or, "
                "where that clock cannot be read either, counts a worker blocked once it has run "
                "one task for %d ms while work waits. Mount /proc readable in this container "
                "(procfs, not masked) to restore exact detection.\n",
                tid, strerror(error),
                (int)(OP_MONITOR_FALLBACK_TICKS * OP_MONITOR_TICK_NS / 1000000));
        return op_thread_ran_long(tid);
    }
    char buffer[256];
    ssize_t length = read(fd, buffer, sizeof buffer - 1);
    close(fd);
    if (length <= 0) return false;
    buffer[length] = '\0';
    /* "tid (name) S …": the name may hold spaces and parentheses, the state follows the last
     * ')'. S: sleeping (a futex, a poll), D: uninterruptible (disk I/O). */
    const char *close_paren = strrchr(buffer, ')');
    if (!close_paren || close_paren[1] != ' ') return false;
    char state = close_paren[2];
    return state == 'S' || state == 'D';
}
