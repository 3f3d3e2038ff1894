/*
 * spares.c — spare threads that stand in for blocked workers, so that waits nested in task
 * bodies cannot take every worker of a class out of its pool.
 *
 * Blocking waits: a task that blocks in op_task_wait / op_queue_wait (waitUntilFinished and
 * friends) would take its worker out of the pool, and with one worker per CPU a few nested
 * waits deadlock the class. So a worker about to sleep in a wait tells the pool
 * (op_worker_will_block, from queue.c, which also lends the task's slot), which makes sure at
 * least as many spare threads serve it as workers are blocked: a spare is started when none is
 * left over (bounded by OP_SPARES_MAX per class). Spares run the same loop as workers, on the
 * CPUs the blocked worker's affinity allows (they inherit it), and exit as soon as they are
 * between tasks (or wake from a park of at most OP_SPARE_IDLE_NS, worker.c) while there are
 * more spares than blocked threads, so spares never take work from the pinned workers. Blocked
 * threads and spares are counted in one word, so "start one" and "retire one" can never both
 * miss each other.
 *
 * A spare that is no longer needed lingers for OP_SPARE_LINGER_NS before it exits, so that the
 * next blocking wait reuses a thread instead of creating one (op_spare_linger,
 * op_pool_reuse_idle_spare). A spare that cannot start (out of threads) is undone, reported
 * once and retried at the monitor's ticks (op_pool_retry_spare). The monitor counts blocked,
 * the same way, a worker asleep in its body where the core cannot see (monitor_view.c).
 *
 * Invariants (the comments at each atomic say the same):
 *   - `balance`: blocked threads (and blocked spares) in the low half, spares in the high
 *     (OP_BALANCE_*). Starting a spare (op_pool_count_blocked, op_pool_retry_spare) and retiring
 *     one (op_spare_retire) are each decided by a compare-and-swap on that one word, so they
 *     decide in one order; relaxed: counts, nothing is published through them.
 *   - `idle_spares`: lingering spares in the low half, claims on them in the high (OP_IDLE_*).
 *     Taking a claim and leaving are compare-and-swaps on that one word (relaxed), so a claim is
 *     never left without a thread; the claimed spare learns of it through idle_event
 *     (op_event_prepare_wait's seq_cst registration against op_event_notify's seq_cst fence),
 *     not through the word's order. Between retiring and lingering a spare is counted in
 *     neither word: a wait that blocks then starts a new thread (a thread too many for 0.5 s,
 *     never a claim without a thread).
 *   - A worker's `run` around a visible wait: OP_RUN_VISIBLE_WAIT, then WAIT_SETTLED and
 *     WAIT_LENT, set by relaxed read-modify-writes (the monitor's compare-and-swap on the same
 *     word sees them or not, and acts on a wait only once it is settled, so it never lends what
 *     the wait's start lent). The wait's end settles the word as a body's end does (worker.c)
 *     and takes back, once, a slot the monitor lent during the wait (RELENT).
 *   - spares_lock guards the pool's list of spares (`spares`, `next_spare`): spares add and
 *     remove themselves (worker.c), the monitor walks the list.
 */
#include "pool_private.h"
#include "../base/observe.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#define OP_SPARES_MAX 512   /* spare threads per class at most (nested waits that deep) */
#define OP_SPARE_LINGER_NS (500 * INT64_C(1000000)) /* a surplus spare waits this long for reuse */

/* ---- spares for blocked workers: the counts, and the visible waits -------------------------- */

/* An idle spare leaves if there are more spares than blocked threads; true if it may exit. */
bool op_spare_retire(op_pool *pool) {
    uint64_t word = atomic_load_explicit(&pool->balance, memory_order_relaxed);
    while (OP_BALANCE_SPARES(word) > OP_BALANCE_BLOCKED(word)) {
        /* relaxed: a count; the thread that needs a spare re-decides on this same word. */
        if (atomic_compare_exchange_weak_explicit(&pool->balance, &word, word - OP_BALANCE_SPARE,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            return true;
        }
    }
    return false;
}

/* Counts one more blocked thread; true when the caller must start a spare (already counted). */
bool op_pool_count_blocked(op_pool *pool) {
    uint64_t word = atomic_load_explicit(&pool->balance, memory_order_relaxed);
    for (;;) {
        uint32_t blocked = OP_BALANCE_BLOCKED(word) + 1;
        uint32_t spares = OP_BALANCE_SPARES(word);
        bool start = spares < blocked && spares < OP_SPARES_MAX;
        uint64_t next = word + 1 + (start ? OP_BALANCE_SPARE : 0);
        /* relaxed: counts only; one word, so this and op_spare_retire decide in one order. */
        if (atomic_compare_exchange_weak_explicit(&pool->balance, &word, next,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            return start;
        }
    }
}

void op_pool_uncount_blocked(op_pool *pool) {
    /* relaxed: a count. A surplus spare notices when it next idles. */
    atomic_fetch_sub_explicit(&pool->balance, 1, memory_order_relaxed);
}

bool op_worker_will_block(void) {
    op_pool *pool = op_tls_pool;
    if (!pool) return false; /* not a worker: nothing to stand in for */
    bool lent_by_monitor = false;
    op_worker *worker = op_tls_worker;
    if (worker) {
        /* relaxed: the monitor's compare-and-swap on the same word sees the bit or not. */
        uint64_t old = atomic_fetch_or_explicit(&worker->run, OP_RUN_VISIBLE_WAIT,
                                                memory_order_relaxed);
        lent_by_monitor = (old & (OP_RUN_LENT | OP_RUN_LENDING)) != 0;
    }
    if (op_pool_count_blocked(pool)) op_pool_start_spare(pool);
    return !lent_by_monitor;
}

void op_worker_wait_settled(bool lent) {
    if (!op_tls_worker) return;
    /* relaxed: as VISIBLE_WAIT; the monitor's compare-and-swap sees the bits or not, and acts on
     * a wait only once it is settled, so never lends what the wait's start lent. */
    atomic_fetch_or_explicit(&op_tls_worker->run,
                             OP_RUN_WAIT_SETTLED | (lent ? OP_RUN_WAIT_LENT : 0),
                             memory_order_relaxed);
}

void op_worker_did_unblock(void) {
    op_pool *pool = op_tls_pool;
    if (!pool) return;
    op_worker *worker = op_tls_worker;
    if (worker) {
        /* The wait's bits go, and with them a slot the monitor lent during the wait (RELENT):
         * it is taken back here, once, so a later wait or block of the same task starts from
         * nothing lent and the queue runs no longer over its width. While the monitor lends
         * (LENDING, a few instructions) we wait for it, as at a task's end. */
        uint64_t old = op_worker_settle_run(
            worker, ~(OP_RUN_VISIBLE_WAIT | OP_RUN_WAIT_SETTLED | OP_RUN_WAIT_LENT | OP_RUN_RELENT),
            0);
        if (old & OP_RUN_RELENT) {
            worker->monitor_lent->cls->take_back_slot(worker->monitor_lent);
            worker->monitor_lent = NULL;
        }
    }
    op_pool_uncount_blocked(pool);
}

/* ---- starting, reusing and lingering spares ------------------------------------------------- */

/* Raises spares_peak to the spares counted now (a started or a reused spare). */
static void op_pool_note_spares_peak(op_pool *pool) {
    /* relaxed: counts for op_runtime_spare_workers' report. */
    int total = (int)OP_BALANCE_SPARES(atomic_load_explicit(&pool->balance, memory_order_relaxed));
    int peak = atomic_load_explicit(&pool->spares_peak, memory_order_relaxed);
    while (total > peak && !atomic_compare_exchange_weak_explicit(
                               &pool->spares_peak, &peak, total, memory_order_relaxed,
                               memory_order_relaxed)) {
    }
}

/* A spare is needed (already counted in `balance`): wake a lingering one if there is one not
 * yet claimed; true when one was claimed. Between a spare's retiring (op_spare_retire) and its
 * lingering it is counted in neither word: a wait that blocks then starts a new thread, and the
 * old one lingers and leaves (a thread too many for 0.5 s, never a claim without a thread). */
static bool op_pool_reuse_idle_spare(op_pool *pool) {
    uint64_t word = atomic_load_explicit(&pool->idle_spares, memory_order_relaxed);
    while (OP_IDLE_SPARES(word) > OP_IDLE_CLAIMS(word)) {
        /* relaxed: the claim is a count; the event's notify (a seq_cst fence) orders it before
         * the look at its waiters, and the spare re-reads the word after registering. */
        if (atomic_compare_exchange_weak_explicit(&pool->idle_spares, &word, word + OP_IDLE_CLAIM,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            op_event_notify(&pool->idle_event, 1);
            op_pool_note_spares_peak(pool);
            return true;
        }
    }
    return false;
}

/* A spare that is no longer needed lingers: parked on idle_event until a claim (it becomes a
 * needed spare again: true) or OP_SPARE_LINGER_NS without one (it leaves: false). The claim
 * and the leaving are decided on one word, so a claim is never left without a thread. */
bool op_spare_linger(op_pool *pool, op_worker *worker) {
    /* relaxed: a flag for the diagnostic report only. */
    atomic_store_explicit(&worker->lingering, true, memory_order_relaxed);
    /* relaxed, here and in the compare-and-swap below: every decision (take a claim, leave) is
     * made by a compare-and-swap on this one word, so a stale read only fails it; the claim's
     * visibility comes from the event (prepare_wait's seq_cst registration against notify's
     * seq_cst fence), not from this word's order. */
    atomic_fetch_add_explicit(&pool->idle_spares, OP_IDLE_SPARE, memory_order_relaxed);
    int64_t deadline = op_now_ns() + OP_SPARE_LINGER_NS;
    for (;;) {
        uint32_t key = op_event_prepare_wait(&pool->idle_event);
        /* after registering (prepare_wait is seq_cst): a claim made before the notify's fence is
         * seen here, or the notify sees us registered and wakes us. */
        uint64_t word = atomic_load_explicit(&pool->idle_spares, memory_order_relaxed);
        /* One clock read for both the test and the wait: a negative time left would make
         * op_event_wait sleep without a limit. */
        int64_t left = deadline - op_now_ns();
        bool expired = left <= 0;
        while (OP_IDLE_CLAIMS(word) > 0 || expired) {
            uint64_t next = OP_IDLE_CLAIMS(word) > 0 ? word - OP_IDLE_CLAIM - OP_IDLE_SPARE
                                                      : word - OP_IDLE_SPARE;
            if (atomic_compare_exchange_weak_explicit(&pool->idle_spares, &word, next,
                                                      memory_order_relaxed, memory_order_relaxed)) {
                op_event_cancel_wait(&pool->idle_event);
                atomic_store_explicit(&worker->lingering, false, memory_order_relaxed);
                return OP_IDLE_CLAIMS(word) > 0;
            }
        }
        op_event_wait(&pool->idle_event, key, left);
    }
}

void op_pool_start_spare(op_pool *pool) {
    if (op_pool_reuse_idle_spare(pool)) return;
    op_worker *spare = NULL;
    if (posix_memalign((void **)&spare, OP_CACHE_LINE, sizeof *spare) != 0) spare = NULL;
    int rc = ENOMEM;
    if (spare) {
        memset(spare, 0, sizeof *spare);
        spare->pool = pool;
        spare->spare = true;
        spare->index = atomic_fetch_add_explicit(&pool->spare_serial, 1, memory_order_relaxed);
        spare->cpu = -1;
        spare->node = 0;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = op_thread_create_at(&spare->thread, &attr, op_worker_main, spare,
                                 op_pool_wanted_nice(pool));
        pthread_attr_destroy(&attr);
    }
    if (rc != 0) {
        /* Out of threads: undo the count and go on blocking; the wait still ends when its
         * work runs on the remaining threads, and the monitor's ticks retry the spare
         * (op_pool_retry_spare). Reported once. */
        free(spare);
        atomic_fetch_sub_explicit(&pool->balance, OP_BALANCE_SPARE, memory_order_relaxed);
        /* relaxed: a hint read by the monitor's retry, which re-decides on `balance`. */
        atomic_store_explicit(&pool->spare_short, true, memory_order_relaxed);
        /* relaxed: only one thread may print; nothing else is ordered by it. */
        static _Atomic bool reported = false;
        if (!atomic_exchange_explicit(&reported, true, memory_order_relaxed)) {
            fprintf(stderr,
                    "operations: cannot start a spare worker for a blocked one (class %s): %s; "
                    "the blocked task's queue waits for the other workers, and the spare is "
                    "retried. Raise the container's pids.max or RLIMIT_NPROC (ulimit -u), or "
                    "restrict the CPU set so fewer workers are started.\n",
                    op_qos_name(pool->qos), strerror(rc));
        }
        return;
    }
    op_count_shared(&pool->spares_started, 1);
    OP_OBSERVE_SPARE(pool->qos);
    op_pool_note_spares_peak(pool);
}

int op_runtime_spare_workers(op_qos_t qos, int *peak) {
    if ((unsigned)qos >= OP_QOS_COUNT) return 0;
    op_pool *pool = atomic_load_explicit(&op_pools[qos], memory_order_acquire);
    if (!pool) {
        if (peak) *peak = 0;
        return 0;
    }
    if (peak) *peak = atomic_load_explicit(&pool->spares_peak, memory_order_relaxed);
    return (int)OP_BALANCE_SPARES(atomic_load_explicit(&pool->balance, memory_order_relaxed));
}

/* A spare that could not start (op_pool_start_spare) is started now if still short. The
 * monitor's, every tick while flagged. */
void op_pool_retry_spare(op_pool *pool) {
    if (!atomic_load_explicit(&pool->spare_short, memory_order_relaxed)) return;
    atomic_store_explicit(&pool->spare_short, false, memory_order_relaxed);
    uint64_t word = atomic_load_explicit(&pool->balance, memory_order_relaxed);
    while (OP_BALANCE_SPARES(word) < OP_BALANCE_BLOCKED(word) &&
           OP_BALANCE_SPARES(word) < OP_SPARES_MAX) {
        /* relaxed: counts, decided on the one word as op_pool_count_blocked does. */
        if (atomic_compare_exchange_weak_explicit(&pool->balance, &word, word + OP_BALANCE_SPARE,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            op_pool_start_spare(pool); /* flags spare_short again if it fails */
            return;
        }
    }
}
