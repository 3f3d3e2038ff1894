/*
 * blocked_worker_monitor.c — the thread that notices workers blocked in a task's body.
 *
 * A pool has one worker per CPU. A body that blocks on something the core does not see (a
 * mutex, a condition variable, I/O, sleep) keeps its worker asleep in the kernel; when every
 * worker of a class is blocked that way, nothing else of the class runs — not even an
 * operation cancelled meanwhile, which only needs to be retired. Waits the core does see
 * (op_task_wait, op_queue_wait) already get a spare thread (worker_pool.c). For the others we do
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
 * creation. What a tick does (which worker is blocked, starting spares) is in worker_pool.c.
 *
 * op_thread_is_asleep() reads /proc/self/task/TID/stat, the kernel's state letter of a thread;
 * the tick asks it only for a worker that has run one task for a whole tick while work waits.
 */
#include "internal.h"

#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#define OP_MONITOR_TICK_NS (10 * INT64_C(1000000)) /* between looks while work waits */
#define OP_MONITOR_QUIET_TICKS 10                   /* ticks without waiting work before sleeping */

enum { OP_MONITOR_AWAKE = 0, OP_MONITOR_ASLEEP = 1 };

/* The futex word: OP_MONITOR_ASLEEP while the monitor sleeps without a deadline. Read by every
 * token push (relaxed, a line that changes at most every OP_MONITOR_QUIET_TICKS ticks). */
static alignas(OP_CACHE_LINE) _Atomic uint32_t op_monitor_state = OP_MONITOR_AWAKE;
/* Set by the first op_monitor_start, before the thread starts (which orders it for the
 * thread); relaxed: later calls store the same function. */
static _Atomic(op_monitor_tick_fn) op_monitor_tick;
static pthread_once_t op_monitor_once = PTHREAD_ONCE_INIT;

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

static void *op_monitor_main(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "op-monitor");
    op_monitor_unpin();
    int quiet = 0;
    for (;;) {
        op_monitor_tick_fn tick = atomic_load_explicit(&op_monitor_tick, memory_order_relaxed);
        if (tick()) {
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
            if (tick()) {
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
    int rc = pthread_create(&thread, &attr, op_monitor_main, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        /* Without it blocked bodies are not stood in for; everything else works. */
        fprintf(stderr, "operations: cannot start the blocked-worker monitor: %s\n", strerror(rc));
    }
}

void op_monitor_start(op_monitor_tick_fn tick) {
    op_monitor_tick_fn expected = NULL;
    atomic_compare_exchange_strong_explicit(&op_monitor_tick, &expected, tick, memory_order_relaxed,
                                            memory_order_relaxed);
    pthread_once(&op_monitor_once, op_monitor_create);
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

bool op_thread_is_asleep(int tid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
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
