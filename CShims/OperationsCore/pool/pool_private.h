/*
 * pool/pool_private.h — the worker pool's structures, and the calls between the pool folder's
 * files, shared by the files of the pool folder only. Nothing outside pool/ includes it: the
 * rest of the core knows a pool only through pool.h. The pool folder's files, one moving part
 * each:
 *   worker_pool.c             the pools' lifetime: making a pool (op_pool_create, op_pool_for*),
 *                             starting its workers and retrying the missing ones, a placed pool's
 *                             idle workers leaving, accessors;
 *   worker.c                  the worker thread's loop (op_worker_main), what code running tasks
 *                             asks of its worker (nice, body begin/end), stealing;
 *   parking_and_wake.c        tokens in and out, parking a pinned worker, the wake choice;
 *   spares.c                  spare threads standing in for blocked workers;
 *   monitor_view.c            the blocked-worker monitor's look at the workers (its tick) and the
 *                             retries of threads that could not start;
 *   blocked_worker_monitor.c  the monitor thread, the clock of those ticks (pool.h only);
 *   running_body_promotion.c  renicing a running body for QoS promotion;
 *   worker_pool_report.c      introspection and the diagnostic report;
 *   placement_sets.c          the CPU sets queues are placed on, a pool per class each;
 *   pool_fork.c               fork() and the pools: the core's pthread_atfork handlers.
 * Each file is headed by its part's design: what it does, which atomics pair with which, who
 * owns what.
 */
#ifndef OPERATIONS_WORKER_POOL_PRIVATE_H
#define OPERATIONS_WORKER_POOL_PRIVATE_H

#include "pool.h"

#include <pthread.h>

#pragma GCC visibility push(hidden) /* internal: never exported from the shared library */

/* worker->run: the body's serial above the bits (one more at each body a worker begins: a task's,
 * one it carries away, a batch of context releases), and whether a body runs, in a wait the
 * core sees, counted blocked by the monitor (being counted, then counted), or raised by a
 * promoter (being raised, then raised): one word for what both watch. The worker writes it once
 * as a body starts, once (a compare-and-swap) as it ends, and around a visible wait (spares.c). */
#define OP_RUN_LENT UINT64_C(1)
#define OP_RUN_IN_TASK UINT64_C(2)
#define OP_RUN_VISIBLE_WAIT UINT64_C(4)
#define OP_RUN_LENDING UINT64_C(8)
/* A visible wait (VISIBLE_WAIT) whose own lending is settled (WAIT_SETTLED): its queue lent the
 * slot at the wait's start (WAIT_LENT), or could not (an explicit width), in which case the
 * monitor lends it if the width has become the default since (RELENT: the worker takes it back
 * at its task's end). */
#define OP_RUN_WAIT_SETTLED UINT64_C(16)
#define OP_RUN_WAIT_LENT UINT64_C(32)
#define OP_RUN_RELENT UINT64_C(64)
/* A promoter renices the thread for the running body (PROMOTING: the worker waits at the body's
 * end) and has raised it (PROMOTED: the worker puts its nice back at the end);
 * running_body_promotion.c. */
#define OP_RUN_PROMOTING UINT64_C(128)
#define OP_RUN_PROMOTED UINT64_C(256)
#define OP_RUN_PROMOTION_BITS (OP_RUN_PROMOTING | OP_RUN_PROMOTED)
#define OP_RUN_SERIAL_SHIFT 9

/* pool->balance: blocked workers (and blocked spares) in the low half, spares in the high. */
#define OP_BALANCE_SPARE (UINT64_C(1) << 32)
#define OP_BALANCE_BLOCKED(word) ((uint32_t)(word))
#define OP_BALANCE_SPARES(word) ((uint32_t)((word) >> 32))

/* pool->idle_spares: spare threads no longer needed that linger parked (idle) in the low half,
 * and activations asked of them (claims, at most as many) in the high. */
#define OP_IDLE_SPARE UINT64_C(1)
#define OP_IDLE_CLAIM (UINT64_C(1) << 32)
#define OP_IDLE_SPARES(word) ((uint32_t)(word))
#define OP_IDLE_CLAIMS(word) ((uint32_t)((word) >> 32))

/* A worker's counters (issue 35; op_runtime_worker_counters reads them). `steals`, `parks`,
 * `wakeups` and `carries` are the worker's own (op_count_own); `rescues` the monitor's alone
 * (op_count_own on the monitor thread); `promotions` any promoter's (op_count_shared). Tasks
 * run are `run`'s serial. */
typedef struct op_worker_counts {
    _Atomic uint64_t steals;     /* tasks taken from another worker's local run queue */
    _Atomic uint64_t parks;      /* times it slept for want of work */
    _Atomic uint64_t wakeups;    /* of those, ended by a waker (not a timeout) */
    _Atomic uint64_t carries;    /* bodies it carried to another pool's workers (carry.c) */
    _Atomic uint64_t rescues;    /* times the monitor counted it blocked in a body */
    _Atomic uint64_t promotions; /* bodies reniced while they ran on it (promotion) */
    _Atomic uint64_t tasks;      /* tasks it ran or retired (op_worker_body_end); not those it
                                  * carried away or context releases, which also begin a body */
    /* When its current body started (op_now_ns) and that body's serial: written at a body's
     * start only while the latency histograms are on (they read the clock there anyway), so
     * the report says how long a body has run then, and nothing costs a clock read otherwise. */
    _Atomic int64_t body_started_ns;
    _Atomic uint64_t body_started_serial;
} op_worker_counts;

struct op_worker;
struct op_pool;
/* worker_pool_report.c: a spare about to exit adds its counters to its pool's `retired`. */
void op_worker_counts_retire(struct op_pool *pool, const struct op_worker *worker);

typedef struct op_worker {
    alignas(OP_CACHE_LINE) op_pool *pool;
    int index;
    int cpu;
    int node;
    pthread_t thread;
    _Atomic int tid;
    _Atomic int class_nice;
    int current_nice;
    int base_nice;
    uint32_t nice_generation;
    bool spare;      /* started to stand in for a blocked thread; not in pool->workers */
    _Atomic bool lingering; /* a spare parked for reuse (op_spare_linger); for the report */
    uint64_t serial; /* tasks taken; the worker's own copy of `run`'s serial */
    op_token *token; /* the token of the running task; read by the monitor while it lends */
    /* QoS promotion (promotion.c): the task whose body runs here (or is about to) and its queue,
     * written before `run` says IN_TASK for it and compared by promoters, never dereferenced
     * (relaxed: a promoter's compare-and-swap on `run` checks that the same body still runs);
     * the nice the thread had at the body's start (the worker's own), which a promoter raised
     * it from. See op_pool_promote_running. */
    op_task_t *_Atomic body_task;
    op_queue_t *_Atomic body_queue;
    int body_nice;
    /* The tasks it took (op_runtime_worker_info reads them here) and what it runs (OP_RUN_*).
     * Written by the worker at each task's start and end, marked by the monitor and by
     * promoters; on the worker's own line, which the monitor reads every 10 ms at most. */
    alignas(OP_CACHE_LINE) _Atomic uint64_t run;
    uint64_t monitor_seen;     /* `run` at the monitor's last look; the monitor's own */
    uint64_t monitor_asleep;   /* `run` when the monitor last found the thread asleep in it (0:
                                * awake then); the monitor's own: counted blocked at the second
                                * such look in a row */
    op_token *monitor_lent;    /* the token whose slot the monitor lent, taken back at the end */
    struct op_worker *next_spare; /* the pool's list of spares, under spares_lock */
    /* Pinned workers only: ready tasks released on this worker (drain.c), stolen by others. */
    op_local_run_queue local;
    /* Pinned workers only: where it parks (a futex word bumped by whoever wakes it: the worker
     * sleeps while it holds the value it read before registering in pool->parked), and the
     * value of that word the worker saw when it last left a park, written by the worker as it
     * resumes: a waker that reads its own bump there knows the wake-up ran (op_pool_wake_one).
     * On a line of their own: wakers write the one and read the other, the worker the reverse,
     * nothing on the task path reads either. */
    alignas(OP_CACHE_LINE) _Atomic uint32_t wake_word;
    _Atomic uint32_t wake_seen;
    /* On a line of its own: written by the worker (and rarely the monitor or a promoter), read
     * only by snapshots. */
    alignas(OP_CACHE_LINE) op_worker_counts counts;
} op_worker;

struct op_pool {
    int qos;       /* its class; -1 for a pool made for a nice value (op_pool_for_nice) */
    int fixed_nice; /* that nice value; OP_NICE_UNCHANGED for a class's pool */
    const op_placement *placement; /* the CPUs it is made for; NULL: every usable CPU */
    struct op_pool *next_placed;   /* the list of placed pools (op_placed_pools), push-only */
    int size;
    int node_count;
    op_fifo *tokens; /* one per node */
    op_event_t event; /* where spares park (pinned workers park on their own word) */
    /* Pinned workers parked on their own word, one bit each (by worker index), and the index of
     * the worker pinned to each CPU id (-1: none of this pool's), for waking one on a chosen
     * CPU. Written at every park and wake-up, never on the task path. */
    _Atomic uint64_t *parked;
    int parked_words;
    int *worker_of_cpu;
    int max_cpu_id;
    /* Whether a submitter's wake-up (and a worker's hand-over into this class or above:
     * op_pool_hand_over_token) goes to the worker on its own CPU first (op_pool_wake_one_for):
     * a class's pool of the default class or above whose workers run under SCHED_OTHER (the
     * kernel never lets a SCHED_BATCH thread preempt on waking). Set by the workers as they
     * start; relaxed: a hint that only picks which worker a wake-up goes to. */
    _Atomic bool wakes_on_submitter_cpu;
    alignas(OP_CACHE_LINE) _Atomic int searching;
    /* How many own-CPU wake-ups had not run when the wake returned and were backed by a second
     * one on another CPU (op_runtime_describe reports it). relaxed: a count. On its own line:
     * the submitters that bump it are not the threads that read the fields above. */
    alignas(OP_CACHE_LINE) _Atomic uint64_t backed_wakes;
    alignas(OP_CACHE_LINE) _Atomic int started;
    op_worker *workers;
    alignas(OP_CACHE_LINE) _Atomic uint64_t balance; /* see OP_BALANCE_* */
    _Atomic int spares_peak;
    _Atomic int spare_serial;
    pthread_mutex_t spares_lock; /* guards spares: spares come and go, the monitor walks them */
    op_worker *spares;
    /* Spares that were no longer needed linger here for OP_SPARE_LINGER_NS before they exit, so
     * that the next blocking wait reuses a thread instead of creating one (see OP_IDLE_*; they
     * park on idle_event, which token pushes never notify). relaxed counts with the claims in
     * the same word: one compare-and-swap decides who takes a claim and who may leave. */
    alignas(OP_CACHE_LINE) _Atomic uint64_t idle_spares;
    op_event_t idle_event;
    /* Workers with a thread: slots [0, created). Every slot's fields are set before the first
     * thread starts (op_pool_create), so the count publishes nothing. relaxed everywhere:
     * written under grow_lock (which orders it for the next retry); elsewhere read as a hint
     * (the token push: is a retry due?; op_pool_wait_started, whose ordering comes from
     * `started`'s acquire load). */
    alignas(OP_CACHE_LINE) _Atomic int created;
    /* When the next retry of missing workers may run (op_now_ns). relaxed: a rate limit; the
     * retry itself runs under grow_lock, which orders everything it touches. */
    _Atomic int64_t retry_at;
    _Atomic bool spare_short; /* a spare could not start; relaxed: a hint for the monitor */
    /* Some worker could not start (cleared once all run): the monitor's ticks retry only then,
     * not the workers of a placed pool that left because it was idle (the next token push
     * starts those). relaxed: a hint; the retry decides under grow_lock. */
    _Atomic bool start_failed;
    /* Workers (and spares) the monitor counted blocked without lending their slot (their
     * queue's width was explicit): the monitor keeps looking at the pool while there are any,
     * since a body may change that width to the default at any time. relaxed: a count read by
     * the monitor's tick; written by the monitor and by the worker at its task's end. */
    _Atomic int32_t blocked_unlent;
    /* A placed pool's idle workers are leaving one after another (op_pool_worker_leaves_idle);
     * relaxed: a hint that makes a woken worker try to leave too. */
    _Atomic bool leaving;
    bool tokens_waited; /* the monitor's: tokens waited at its last tick (op_pool_monitor_look) */
    /* Counters (issue 35): spares started (by the monitor or a visible wait; op_count_shared),
     * and the counters of the spares that exited, added as each leaves (op_count_shared), so the
     * pool's sums never go down. On a line of their own: rare writes. */
    alignas(OP_CACHE_LINE) _Atomic uint64_t spares_started;
    op_worker_counts retired;
    int64_t retry_delay; /* under grow_lock */
    pthread_mutex_t grow_lock; /* starting workers (creation and retries) */
};

/* Replaces *word (a worker's `run`, written by its own thread) with (old & keep) | set once
 * `busy` is clear in it, and returns the word it replaced. Another thread holds `busy` for a few
 * instructions (the monitor lending: OP_RUN_LENDING) or one system call (a promoter renicing:
 * OP_RUN_PROMOTING): waited for. The first look is relaxed; the compare-and-swap orders, acquire:
 * what the holder wrote before the releasing store that cleared `busy` (the monitor's count and
 * `monitor_lent`, the promoter's renice) comes before what the caller does next (take a lent slot
 * back, undo a renice). */
static inline uint64_t op_worker_word_settle(_Atomic uint64_t *word, uint64_t busy, uint64_t keep,
                                             uint64_t set) {
    uint64_t old = atomic_load_explicit(word, memory_order_relaxed);
    for (;;) {
        if (OP_UNLIKELY(old & busy)) {
            op_cpu_relax();
            old = atomic_load_explicit(word, memory_order_relaxed);
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(word, &old, (old & keep) | set,
                                                  memory_order_acquire, memory_order_relaxed)) {
            return old;
        }
    }
}

/* The pool of the worker or spare running on this thread; NULL elsewhere. */
extern _Thread_local op_pool *op_tls_pool;
/* The worker or spare running on this thread; NULL elsewhere. */
extern _Thread_local op_worker *op_tls_worker;

/* The class pools, by class; published once each (acquire loads see a pool's workers array). */
extern op_pool *_Atomic op_pools[OP_QOS_COUNT];
/* Every pool made for a placement or a nice value, newest first; the list only grows. */
extern op_pool *_Atomic op_placed_pools;
/* Queues whose work waits behind their width (op_pool_count_queue_waiting_at_width); relaxed:
 * a count the monitor and the report read. */
extern _Atomic int32_t op_queues_waiting_at_width;

/* The pools made for a nice value, indexed by nice + 20 (also on op_placed_pools' list). */
extern op_pool *_Atomic op_nice_pools[40];
/* Taken to make a pool (held while its workers start) and across fork (pool_fork.c). */
extern pthread_mutex_t op_pools_lock;

/* ---- between the pool's moving parts (each defined in the file named) ----------------------- */

/* worker_pool.c: starts the pool's missing workers if the backoff allows; never blocks on another
 * retry (it only tries grow_lock). */
void op_pool_retry_workers(op_pool *pool);
/* worker_pool.c: how long a placed pool's (or a nice value's pool's) worker parks without work
 * before it leaves (OPERATIONS_PLACED_POOL_IDLE_MS), in nanoseconds. */
int64_t op_placed_pool_idle_ns(void);
/* worker_pool.c: a placed pool's idle worker leaves if it is the highest with a thread; true when
 * it may exit. */
bool op_pool_worker_leaves_idle(op_pool *pool, op_worker *worker);

/* worker.c: the thread of a worker or spare (`arg`: its op_worker). */
void *op_worker_main(void *arg);
/* worker.c: sets the worker's `run` to (run & keep) | set once the monitor is not lending for
 * it; returns the word it replaced (acquire: see op_worker_word_settle). */
uint64_t op_worker_settle_run(op_worker *worker, uint64_t keep, uint64_t set);

/* parking_and_wake.c: pops a token, from node `home`'s FIFO first; NULL when none. */
op_token *op_pool_take_token(op_pool *pool, int home);
/* parking_and_wake.c: wakes one parked worker (or spare) for a token just pushed (after the
 * caller's push and seq_cst fence). */
void op_pool_wake_one(op_pool *pool);
/* The same, for a worker that hands the token's work over (op_pool_hand_over_token): into a
 * class at least its own it wakes as a thread that is not a worker does, its own CPU's worker
 * first. */
void op_pool_wake_one_for(op_pool *pool, bool handing_over);
/* parking_and_wake.c: wakes every parked worker and spare (a placed pool's idle workers leaving
 * one after another). */
void op_pool_wake_all(op_pool *pool);
/* parking_and_wake.c: parks pinned `worker` until woken or `timeout_ns` passes (*rc ETIMEDOUT);
 * returns a token if one showed up while it registered. */
op_token *op_worker_park(op_pool *pool, op_worker *worker, int64_t timeout_ns, int *rc);

/* spares.c: an idle spare leaves if there are more spares than blocked threads; true if it may
 * exit (uncounted already). */
bool op_spare_retire(op_pool *pool);
/* spares.c: a surplus spare lingers for reuse; true when claimed (needed again), false when it
 * must leave. */
bool op_spare_linger(op_pool *pool, op_worker *worker);
/* spares.c: counts one more blocked thread; true when the caller must start a spare (counted
 * already). */
bool op_pool_count_blocked(op_pool *pool);
/* spares.c: counts one blocked thread less. */
void op_pool_uncount_blocked(op_pool *pool);
/* spares.c: starts a spare (counted already in `balance`), or reuses a lingering one. */
void op_pool_start_spare(op_pool *pool);
/* spares.c: the monitor's retry of a spare that could not start, if still short. */
void op_pool_retry_spare(op_pool *pool);

/* monitor_view.c: the tick op_pool_create hands to op_monitor_start: looks at the workers, then
 * retries threads that could not start; true while work waits. */
bool op_pool_monitor_tick_and_retry(void);

/* placement_sets.c, for pool_fork.c: op_placement_lock_for_fork / _unlock_after_fork hold the
 * placements' lock across fork() (prepare and parent handlers); op_placement_forget_pools_after_fork
 * (child) forgets every placement's pools (their threads are not in the child: they are made
 * again on first use) and releases the lock. */
void op_placement_lock_for_fork(void);
void op_placement_unlock_after_fork(void);
void op_placement_forget_pools_after_fork(void);
/* blocked_worker_monitor.c and spawner.c (base) have their own forget calls (pool.h, base.h). */

/* running_body_promotion.c: resets its lock in the child of a fork (a promoter of the parent
 * may have held it). */
void op_running_promotion_forget_after_fork(void);

#pragma GCC visibility pop

#endif
