/*
 * worker_pool.c — the pools' lifetime: per-CPU pinned worker threads, one pool per QoS class (or
 * per CPU set and class, or per nice value), created lazily; their workers started, retried
 * when threads run out and, in a placed pool, retired when idle.
 *
 * A pool has one worker per usable CPU (topology.c), each pinned to its CPU and running at its
 * class's nice value (nice.c). Queues hand the pool tokens (a queue with a claimed slot) through
 * one lock-free FIFO per NUMA node: a token goes to the submitting thread's node, and a worker
 * looks at its own node's FIFO before the others, so work tends to stay on the node that made
 * it.
 *
 * The pool's moving parts, one file each (pool_private.h holds the structures they share):
 *   worker_pool.c             this file: making a pool (op_pool_create, op_pool_for*,
 *                             op_pool_listed_in), starting its workers and retrying the missing
 *                             ones with backoff, a placed pool's idle workers leaving, accessors;
 *   worker.c                  the worker thread's loop, what code running tasks asks of its
 *                             worker, stealing from workers' local run queues;
 *   parking_and_wake.c        tokens in and out, parking a worker, the wake choice;
 *   spares.c                  spare threads standing in for blocked workers;
 *   monitor_view.c            the blocked-worker monitor's look at the workers (its tick), and
 *                             the retries of threads that could not start;
 *   blocked_worker_monitor.c  the monitor thread: the clock of those ticks;
 *   running_body_promotion.c  renicing a running body for QoS promotion;
 *   worker_pool_report.c      introspection, the diagnostic report;
 *   placement_sets.c          the CPU sets queues are placed on, a pool per class each;
 *   pool_fork.c               fork() and the pools: the core's pthread_atfork handlers.
 *
 * The default pools' workers live as long as the process. A placed pool's workers (one pool per
 * CPU set and class) leave after OPERATIONS_PLACED_POOL_IDLE_MS (10 s) parked without work,
 * highest slot first so that slots [0, created) keep their threads (op_pool_worker_leaves_idle),
 * and the next token push starts them again through the retry path below (no backoff: nothing
 * failed). Pool creation takes a mutex (once per class), and the
 * list of a pool's spares one (spares start and leave, the monitor walks them); nothing on the
 * task path locks.
 *
 * Out of threads (a container's pids.max, RLIMIT_NPROC: five classes of one worker per CPU,
 * their spares and placed pools are over a thousand threads on a large node): a pool whose
 * workers cannot all start runs with those that did. Workers are started in index order and
 * creation stops at the first failure, so the slots [0, created) have threads and the others
 * none (tid 0: the monitor, stealing and introspection skip them, their local run queues stay
 * empty). One warning goes to stderr (what failed, why, how many workers run, what to change),
 * and the missing workers are retried, with a backoff from 1 ms doubling to 1 s, by the next
 * token push and by the monitor's tick while they are missing. A pool where not even one worker
 * started holds its tokens until a retry succeeds: it warns that its class's work waits, and
 * every submit and monitor tick retries (bounded by the backoff); nothing aborts and nothing
 * waits silently. A spare that cannot start is retried at the monitor's ticks.
 *
 * Invariants (the comments at each atomic say the same where it is used):
 *   - The pool pointers (op_pools[qos], a placement's slot, op_nice_pools[], op_placed_pools'
 *     list) are written once each, under op_pools_lock, by a release store made after the pool
 *     is built and its started workers run (op_pool_wait_started); every reader loads them with
 *     acquire (op_pool_for*, the monitor's tick, the report), so it sees the pool and its
 *     workers array complete. Every slot's fields are set before the first thread starts.
 *   - `created` is written under grow_lock and read elsewhere as a relaxed hint, except when a
 *     placed pool's worker leaves: its seq_cst store, fence and look at the tokens pair with a
 *     token push's push, fence and read of `created` (Dekker; parking_and_wake.c's
 *     op_pool_note_pushed): either the pusher sees the pool short and starts a worker, or the
 *     leaver sees the token and stays. After its unlock the leaver fences and looks once more,
 *     since a pusher's retry only tries grow_lock.
 *   - `started`: each worker's releasing increment (worker.c) pairs with op_pool_wait_started's
 *     (and the report's) acquire load: the fields of a worker that counts as started are seen.
 *   - `retry_at`, `start_failed`, `leaving`: relaxed hints; what they trigger is decided under
 *     grow_lock. `retry_delay` is grow_lock's.
 *   - Locks: op_pools_lock (making a pool; held across fork, pool_fork.c) and each pool's
 *     grow_lock (starting workers: creation, retries, an idle worker leaving). A retry only
 *     tries grow_lock, so a submitter never blocks on another's retry.
 */
#include "pool_private.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

/* ---- the pools, and what they say of themselves --------------------------------------------- */

op_pool *_Atomic op_pools[OP_QOS_COUNT];
/* The pools made for a nice value (threadPriority without the privilege to renice and back),
 * indexed by nice + 20; also on op_placed_pools' list, which the monitor walks. */
op_pool *_Atomic op_nice_pools[40];
pthread_mutex_t op_pools_lock = PTHREAD_MUTEX_INITIALIZER;
/* Every pool made for a placement (placement.c), newest first; pools live as long as the
 * process, so the list only grows. The monitor walks it. */
op_pool *_Atomic op_placed_pools;

bool op_pool_has_tokens(op_pool *pool) {
    for (int i = 0; i < pool->node_count; i++) {
        if (op_fifo_maybe_nonempty(&pool->tokens[i])) return true;
    }
    return false;
}

int op_pool_qos(const op_pool *pool) { return pool->qos; }

const op_placement *op_pool_placement(const op_pool *pool) { return pool->placement; }

/* ---- starting workers, and retrying the missing ones ---------------------------------------- */

/* Starts the threads of the slots from `created` on, in order, stopping at the first failure.
 * Under grow_lock. Returns 0 or the failure's errno value. */
static int op_pool_start_workers(op_pool *pool) {
    int created = atomic_load_explicit(&pool->created, memory_order_relaxed);
    int rc = 0;
    while (created < pool->size) {
        op_worker *worker = &pool->workers[created];
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = op_thread_create_at(&worker->thread, &attr, op_worker_main, worker,
                                 op_pool_wanted_nice(pool));
        pthread_attr_destroy(&attr);
        if (rc != 0) break;
        /* relaxed: a hint (see `leaving`): workers are needed again, the idle cascade stops. */
        atomic_store_explicit(&pool->leaving, false, memory_order_relaxed);
        created++;
        /* relaxed: see the field's comment. */
        atomic_store_explicit(&pool->created, created, memory_order_relaxed);
    }
    return rc;
}

/* Says once on stderr that workers could not start. */
static void op_pool_report_short(op_pool *pool, int rc) {
    int created = atomic_load_explicit(&pool->created, memory_order_relaxed);
    /* relaxed: only one thread may print each message; nothing else is ordered by them. */
    static _Atomic bool reported = false, reported_none = false;
    if (!atomic_exchange_explicit(&reported, true, memory_order_relaxed)) {
        fprintf(stderr,
                "operations: cannot start a worker thread (class %s%s): %s; %d of %d workers run "
                "instead, and the missing ones are retried with backoff. Raise the container's "
                "pids.max or RLIMIT_NPROC (ulimit -u), or restrict the CPU set (taskset, cpuset) "
                "so fewer workers are needed.\n",
                op_qos_name(pool->qos), pool->placement ? ", a placed pool" : "", strerror(rc), created,
                pool->size);
    }
    if (created == 0 && !atomic_exchange_explicit(&reported_none, true, memory_order_relaxed)) {
        fprintf(stderr,
                "operations: no worker of class %s could start: its work waits until one can "
                "(retried on each submit and monitor tick, at most every second).\n",
                op_qos_name(pool->qos));
    }
}

#define OP_RETRY_FIRST_NS INT64_C(1000000)     /* 1 ms */
#define OP_RETRY_MAX_NS INT64_C(1000000000)    /* 1 s */

/* Waits (bounded) until every worker that has a thread runs. */
static void op_pool_wait_started(op_pool *pool) {
    int64_t deadline = op_now_ns() + 10 * INT64_C(1000000000);
    while (atomic_load_explicit(&pool->started, memory_order_acquire) <
               atomic_load_explicit(&pool->created, memory_order_relaxed) &&
           op_now_ns() < deadline) {
        usleep(20);
    }
}

/* Starts missing workers if the backoff allows; never blocks on another retry. */
void op_pool_retry_workers(op_pool *pool) {
    int64_t now = op_now_ns();
    if (now < atomic_load_explicit(&pool->retry_at, memory_order_relaxed)) return;
    if (pthread_mutex_trylock(&pool->grow_lock) != 0) return;
    if (atomic_load_explicit(&pool->created, memory_order_relaxed) < pool->size &&
        now >= atomic_load_explicit(&pool->retry_at, memory_order_relaxed)) {
        int rc = op_pool_start_workers(pool);
        if (rc != 0) {
            if (!atomic_exchange_explicit(&pool->start_failed, true, memory_order_relaxed)) {
                op_pool_report_short(pool, rc); /* workers that left when idle came back short */
            }
            pool->retry_delay = pool->retry_delay * 2 < OP_RETRY_MAX_NS ? pool->retry_delay * 2
                                                                        : OP_RETRY_MAX_NS;
            atomic_store_explicit(&pool->retry_at, op_now_ns() + pool->retry_delay,
                                  memory_order_relaxed);
        } else if (atomic_exchange_explicit(&pool->start_failed, false, memory_order_relaxed)) {
            fprintf(stderr, "operations: all %d workers of class %s%s run now.\n", pool->size,
                    op_qos_name(pool->qos), pool->placement ? " (a placed pool)" : "");
        }
        /* So that op_runtime_worker_count / _info see the new workers as a prefix. */
        op_pool_wait_started(pool);
    }
    pthread_mutex_unlock(&pool->grow_lock);
}

/* ---- making a pool -------------------------------------------------------------------------- */

/* Makes a pool of class `qos` with one pinned worker per CPU of `placement` (NULL: every usable
 * CPU, the class's default pool). Workers that cannot start are reported and retried later. */
static op_pool *op_pool_create(int qos, const op_placement *placement, int fixed_nice) {
    op_pool_fork_register(); /* before its first worker: a fork from now on finds pools */
    const op_topology_data *topology = op_topology_get();
    op_nice_init();
    op_pool *pool = NULL;
    if (posix_memalign((void **)&pool, OP_CACHE_LINE, sizeof *pool) != 0) {
        op_fatal("operations: out of memory creating workers");
    }
    memset(pool, 0, sizeof *pool);
    pool->qos = qos;
    pool->fixed_nice = fixed_nice;
    pool->placement = placement;
    pool->size = placement ? op_placement_size(placement) : topology->cpu_count;
    pool->node_count = topology->node_count;
    if (posix_memalign((void **)&pool->tokens, OP_CACHE_LINE,
                       sizeof(op_fifo) * (size_t)pool->node_count) != 0 ||
        posix_memalign((void **)&pool->workers, OP_CACHE_LINE,
                       sizeof(op_worker) * (size_t)pool->size) != 0) {
        op_fatal("operations: out of memory creating workers");
    }
    for (int i = 0; i < pool->node_count; i++) op_fifo_init(&pool->tokens[i], 64);
    op_event_init(&pool->event);
    op_event_init(&pool->idle_event);
    atomic_init(&pool->idle_spares, 0);
    pool->parked_words = (pool->size + 63) / 64;
    pool->max_cpu_id = topology->max_cpu_id;
    if (posix_memalign((void **)&pool->parked, OP_CACHE_LINE,
                       sizeof(uint64_t) * (size_t)pool->parked_words) != 0 ||
        !(pool->worker_of_cpu = malloc(sizeof(int) * (size_t)(pool->max_cpu_id + 1)))) {
        op_fatal("operations: out of memory creating workers");
    }
    for (int i = 0; i < pool->parked_words; i++) atomic_init(&pool->parked[i], 0);
    for (int cpu = 0; cpu <= pool->max_cpu_id; cpu++) pool->worker_of_cpu[cpu] = -1;
    atomic_init(&pool->searching, 0);
    atomic_init(&pool->wakes_on_submitter_cpu, false);
    atomic_init(&pool->backed_wakes, 0);
    atomic_init(&pool->started, 0);
    atomic_init(&pool->balance, 0);
    atomic_init(&pool->spares_peak, 0);
    atomic_init(&pool->spare_serial, 0);
    atomic_init(&pool->created, 0);
    atomic_init(&pool->start_failed, false);
    atomic_init(&pool->blocked_unlent, 0);
    atomic_init(&pool->leaving, false);
    atomic_init(&pool->retry_at, 0);
    atomic_init(&pool->spare_short, false);
    pool->retry_delay = OP_RETRY_FIRST_NS / 2; /* doubled before the first wait */
    pthread_mutex_init(&pool->spares_lock, NULL);
    pthread_mutex_init(&pool->grow_lock, NULL);
    pool->spares = NULL;
    memset(pool->workers, 0, sizeof(op_worker) * (size_t)pool->size);
    /* Every slot is complete before any thread starts: a slot without a thread (tid 0, an
     * empty local run queue) is skipped by whatever walks the array. */
    for (int i = 0; i < pool->size; i++) {
        op_worker *worker = &pool->workers[i];
        worker->pool = pool;
        worker->index = i;
        int usable = placement ? op_placement_usable_index(placement, i) : i;
        worker->cpu = topology->cpus[usable];
        worker->node = topology->cpu_node[usable];
        if (worker->cpu >= 0 && worker->cpu <= pool->max_cpu_id) pool->worker_of_cpu[worker->cpu] = i;
        atomic_init(&worker->wake_word, 0);
        atomic_init(&worker->wake_seen, 0);
        atomic_init(&worker->tid, 0);
        atomic_init(&worker->body_task, NULL);
        atomic_init(&worker->body_queue, NULL);
        atomic_init(&worker->class_nice, 0);
        atomic_init(&worker->run, 0);
        op_local_run_queue_init(&worker->local);
    }
    /* The monitor first: when threads are scarce it is what retries the missing workers. */
    op_monitor_start(op_pool_monitor_tick_and_retry);
    pthread_mutex_lock(&pool->grow_lock);
    int rc = op_pool_start_workers(pool);
    if (rc != 0) {
        atomic_store_explicit(&pool->start_failed, true, memory_order_relaxed);
        pool->retry_delay = OP_RETRY_FIRST_NS;
        atomic_store_explicit(&pool->retry_at, op_now_ns() + pool->retry_delay,
                              memory_order_relaxed);
        op_pool_report_short(pool, rc);
    }
    pthread_mutex_unlock(&pool->grow_lock);
    return pool;
}

op_pool *op_pool_for(op_qos_t qos) {
    if ((unsigned)qos >= OP_QOS_COUNT) qos = OP_QOS_DEFAULT;
    op_pool *pool = op_pool_for_nice_of_class(qos);
    op_class_requested((int)qos); /* after the pool: its workers noted what the kernel refused */
    return pool;
}

op_pool *op_pool_for_nice_of_class(op_qos_t qos) {
    if ((unsigned)qos >= OP_QOS_COUNT) qos = OP_QOS_DEFAULT;
    /* acquire: pairs with the release store below, so the pool is fully built. */
    op_pool *pool = atomic_load_explicit(&op_pools[qos], memory_order_acquire);
    if (OP_LIKELY(pool != NULL)) return pool;
    pthread_mutex_lock(&op_pools_lock);
    pool = atomic_load_explicit(&op_pools[qos], memory_order_relaxed);
    if (!pool) {
        pool = op_pool_create((int)qos, NULL, OP_NICE_UNCHANGED);
        /* Publish the pool only once every worker that started is running, so the
         * introspection calls see a complete, consistent set (workers start in any order).
         * Bounded: a thread that pthread_create accepted starts within microseconds; 10 s means
         * something is broken, and we go on rather than hang. */
        op_pool_wait_started(pool);
        atomic_store_explicit(&op_pools[qos], pool, memory_order_release);
    }
    pthread_mutex_unlock(&op_pools_lock);
    return pool;
}

/* The pool in `slot`, made on first use (class `qos`, `placement`, `fixed_nice`) and put on the
 * list of placed pools, which the monitor walks, before it goes into the slot. */
static op_pool *op_pool_listed_in(op_pool *_Atomic *slot, int qos, const op_placement *placement,
                                  int fixed_nice) {
    /* acquire: pairs with the release store below. */
    op_pool *pool = atomic_load_explicit(slot, memory_order_acquire);
    if (OP_LIKELY(pool != NULL)) return pool;
    pthread_mutex_lock(&op_pools_lock);
    pool = atomic_load_explicit(slot, memory_order_relaxed);
    if (!pool) {
        pool = op_pool_create(qos, placement, fixed_nice);
        op_pool_wait_started(pool);
        /* Onto the monitor's list (under the lock: one writer), then into the slot.
         * release: the monitor's acquiring load sees the pool built. */
        pool->next_placed = atomic_load_explicit(&op_placed_pools, memory_order_relaxed);
        atomic_store_explicit(&op_placed_pools, pool, memory_order_release);
        atomic_store_explicit(slot, pool, memory_order_release);
    }
    pthread_mutex_unlock(&op_pools_lock);
    return pool;
}

op_pool *op_pool_for_placement(const op_placement *placement, op_qos_t qos, op_pool *_Atomic *slot) {
    if ((unsigned)qos >= OP_QOS_COUNT) qos = OP_QOS_DEFAULT;
    op_pool *pool = op_pool_listed_in(slot, (int)qos, placement, OP_NICE_UNCHANGED);
    op_class_requested((int)qos); /* as op_pool_for */
    return pool;
}

op_pool *op_pool_for_nice(int nice) {
    if (nice < -20) nice = -20;
    if (nice > 19) nice = 19;
    /* Listed with the placed pools, which the monitor walks. */
    return op_pool_listed_in(&op_nice_pools[nice + 20], -1, NULL, nice);
}

/* ---- a placed pool's idle workers leave ----------------------------------------------------- */

/* How long a placed pool's worker stays parked without work before it leaves:
 * OPERATIONS_PLACED_POOL_IDLE_MS, read once (env.c's op_env_int: a malformed or out-of-range
 * value keeps the default, said once on stderr); default 10 s. At most INT64_MAX / 10^6 ms, so
 * that the nanoseconds fit. */
#define OP_PLACED_POOL_IDLE_MS_DEFAULT 10000
static pthread_once_t op_placed_pool_idle_once = PTHREAD_ONCE_INIT;
static int64_t op_placed_pool_idle_ms_value = OP_PLACED_POOL_IDLE_MS_DEFAULT;

static void op_placed_pool_idle_read_env(void) {
    op_placed_pool_idle_ms_value =
        op_env_int("OPERATIONS_PLACED_POOL_IDLE_MS", OP_PLACED_POOL_IDLE_MS_DEFAULT, 1,
                   INT64_MAX / 1000000, "milliseconds");
}

int64_t op_runtime_placed_pool_idle_ms(void) {
    /* pthread_once orders the value's store before every return through it. */
    pthread_once(&op_placed_pool_idle_once, op_placed_pool_idle_read_env);
    return op_placed_pool_idle_ms_value;
}

int64_t op_placed_pool_idle_ns(void) { return op_runtime_placed_pool_idle_ms() * 1000000; }

/* A placed pool's worker found nothing to do for a whole idle period (or another one left and
 * passed the word on): it leaves if it is the highest-numbered worker with a thread, so the
 * slots [0, created) keep theirs, and wakes the others, one of which is then the highest.
 * True when it may exit: its slot is then free for the next start, which the next token push
 * makes (op_pool_push_token sees the pool short). */
bool op_pool_worker_leaves_idle(op_pool *pool, op_worker *worker) {
    pthread_mutex_lock(&pool->grow_lock);
    int created = atomic_load_explicit(&pool->created, memory_order_relaxed);
    if (worker->index != created - 1 || !op_local_run_queue_is_empty(&worker->local)) {
        pthread_mutex_unlock(&pool->grow_lock);
        return false;
    }
    /* Our slot's fields are reset before the slot is given up: a start may reuse it at once. */
    atomic_store_explicit(&worker->tid, 0, memory_order_relaxed);
    atomic_fetch_sub_explicit(&pool->started, 1, memory_order_relaxed);
    /* seq_cst store, then a fence and a look at the tokens: Dekker with op_pool_push_token
     * (push, fence, read `created`). Either the pusher sees the pool short and starts a worker,
     * or we see its token and stay. */
    atomic_store_explicit(&pool->created, created - 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
    if (op_pool_has_tokens(pool)) {
        atomic_store_explicit(&pool->created, created, memory_order_relaxed);
        atomic_fetch_add_explicit(&pool->started, 1, memory_order_relaxed);
        atomic_store_explicit(&worker->tid, op_current_tid(), memory_order_relaxed);
        /* relaxed: a hint read by parked workers; cleared while work comes. */
        atomic_store_explicit(&pool->leaving, false, memory_order_relaxed);
        pthread_mutex_unlock(&pool->grow_lock);
        return false;
    }
    /* The next push restarts workers at once (no backoff: nothing failed). */
    atomic_store_explicit(&pool->retry_at, 0, memory_order_relaxed);
    bool more = created - 1 > 0;
    atomic_store_explicit(&pool->leaving, more, memory_order_relaxed);
    pthread_mutex_unlock(&pool->grow_lock);
    /* A pusher that saw the pool short while we held grow_lock could not start a worker (its
     * retry only tries the lock): look once more now that it is free. seq_cst fence: after our
     * unlock, before the look at the tokens, as in the Dekker pair above. */
    atomic_thread_fence(memory_order_seq_cst);
    if (op_pool_has_tokens(pool)) op_pool_retry_workers(pool);
    if (more) op_pool_wake_all(pool); /* the next highest leaves too */
    return true;
}
