/*
 * monitor_view.c — the blocked-worker monitor's look at the workers: the tick that the monitor
 * thread (blocked_worker_monitor.c, only the clock) calls, which finds workers blocked where the
 * core cannot see, counts them blocked and lends their slot; and the retries of threads that
 * could not start, which ride on the same tick.
 *
 * Bodies that block where the core cannot see (a mutex, a condition variable, I/O): the
 * blocked-worker monitor (blocked_worker_monitor.c) calls op_pool_monitor_tick every 10 ms while
 * tokens wait, tasks wait in workers' local run queues, a default-width queue's work waits
 * behind its width (then it looks at every pool), or a worker counted blocked could not have
 * its slot lent (its queue's width may become the default). A worker (or spare) that has run one task
 * for a whole tick and that the kernel reports asleep at two looks in a row (once may be a
 * computing body's moment on a page fault or a lock) is counted blocked as if it waited in
 * op_task_wait: a spare stands in for it (started by the monitor, on any usable CPU), and the
 * token's class lends its slot if the queue's width allows (a default-width queue). Each worker
 * says what it runs in one word of its own (`run`: a task serial and the OP_RUN_* bits); the
 * monitor marks the word with a compare-and-swap, so it can only mark the task it looked at,
 * and the worker, at the task's end, takes back what was lent. While the monitor lends
 * (OP_RUN_LENDING, a few instructions) the worker waits at its task's end, so the queue behind
 * the token stays alive.
 *
 * Invariants (the comments at each atomic say the same):
 *   - `run` (each worker's): the monitor's first look is relaxed, and `monitor_seen`, its own
 *     copy from the last look (the monitor's alone), tells "the same task for a whole tick"
 *     (promoters' bits aside: op_run_same). It acts only through a compare-and-swap that adds
 *     OP_RUN_LENDING, acquire: it sees the worker's `token` for that task (op_worker_body_begin's
 *     seq_cst store). Promoters mark the same word (running_body_promotion.c); each side
 *     changes only its own bits, with read-modify-writes. Holding LENDING it writes
 *     `monitor_lent` and the counts, then clears LENDING (flipping to LENT, or RELENT for a
 *     visible wait) with a release, which the worker's acquiring settle at its task's or its
 *     wait's end pairs with.
 *   - `blocked_unlent`: workers counted blocked without a lent slot (their queue's width was
 *     explicit); relaxed: a count, which keeps the monitor looking at the pool, since a body may
 *     set the width to the default at any time.
 *   - op_queues_waiting_at_width: relaxed: a count read at the next tick; its first increment
 *     fences (seq_cst) and pokes the monitor: Dekker with the monitor going to sleep (it
 *     publishes ASLEEP, fences, then ticks once more), as a token push does.
 *   - `tokens_waited`: the monitor's alone (tokens that waited through a whole tick are
 *     rehomed, parking_and_wake.c).
 *   - The pools are read with acquire loads of op_pools[] and op_placed_pools (pairing with
 *     their publication, worker_pool.c); the spares are walked under spares_lock.
 */
#include "pool_private.h"
#include "../base/observe.h"

#include <pthread.h>

/* ---- the monitor's look at the workers ------------------------------------------------------ */

/* Two looks at a worker's `run` found the same state of the same task: the promoters' bits
 * (a raise of the body) do not count. */
static inline bool op_run_same(uint64_t run, uint64_t seen) {
    return ((run ^ seen) & ~OP_RUN_PROMOTION_BITS) == 0;
}

/* Counts `worker` blocked if it ran one task since the monitor's last look and the kernel
 * reports it asleep: a spare stands in, and a default-width queue gets its slot lent. */
static void op_pool_look_at(op_pool *pool, op_worker *worker) {
    /* relaxed: a first look; the compare-and-swap below decides. */
    uint64_t run = atomic_load_explicit(&worker->run, memory_order_relaxed);
    uint64_t seen = worker->monitor_seen;
    worker->monitor_seen = run;
    /* Whether the last look found it asleep in this very task; any look that does not ask
     * again (below) ends the streak. */
    uint64_t asleep_before = worker->monitor_asleep;
    worker->monitor_asleep = 0;
    if ((run & (OP_RUN_IN_TASK | OP_RUN_LENT | OP_RUN_VISIBLE_WAIT | OP_RUN_LENDING |
                OP_RUN_WAIT_SETTLED | OP_RUN_WAIT_LENT | OP_RUN_RELENT)) ==
            (OP_RUN_IN_TASK | OP_RUN_VISIBLE_WAIT | OP_RUN_WAIT_SETTLED) &&
        op_run_same(run, seen)) {
        /* In a visible wait for a whole tick, whose queue could not lend its slot when the wait
         * began (an explicit width): the width may be the default now (a body set it), and the
         * work the wait waits for may sit behind it. Lend as for a worker counted blocked; the
         * wait counted itself blocked already. acquire, and LENDING holds the worker at its
         * task's end, as below. What it released went to the bands when the wait began. */
        if (atomic_compare_exchange_strong_explicit(&worker->run, &run, run | OP_RUN_LENDING,
                                                    memory_order_acquire, memory_order_relaxed)) {
            bool lent = worker->token->cls->lend_slot(worker->token, NULL);
            if (lent) worker->monitor_lent = worker->token;
            /* release: `monitor_lent` before the worker's acquiring end sees RELENT. */
            atomic_fetch_xor_explicit(&worker->run, OP_RUN_LENDING | (lent ? OP_RUN_RELENT : 0),
                                      memory_order_release);
        }
        return;
    }
    if ((run & (OP_RUN_IN_TASK | OP_RUN_LENT | OP_RUN_VISIBLE_WAIT | OP_RUN_LENDING)) ==
            (OP_RUN_IN_TASK | OP_RUN_LENT) &&
        op_run_same(run, seen)) {
        /* Counted blocked, still in that task. If its queue could not lend its slot then (an
         * explicit width), the width may have become the default since (a body set it): ask
         * again. acquire, and the worker waits at its task's end while LENDING is set, as below;
         * `monitor_lent` is read only after it: the worker clears it at a task's end, before
         * the releasing start of its next task. */
        if (atomic_compare_exchange_strong_explicit(&worker->run, &run, run | OP_RUN_LENDING,
                                                    memory_order_acquire, memory_order_relaxed)) {
            if (!worker->monitor_lent &&
                worker->token->cls->lend_slot(worker->token, worker->spare ? NULL : &worker->local)) {
                worker->monitor_lent = worker->token;
                atomic_fetch_sub_explicit(&pool->blocked_unlent, 1, memory_order_relaxed);
            }
            /* release: `monitor_lent` before the worker's acquiring end sees LENDING clear. */
            atomic_fetch_and_explicit(&worker->run, ~OP_RUN_LENDING, memory_order_release);
        }
        return;
    }
    if ((run & (OP_RUN_IN_TASK | OP_RUN_LENT | OP_RUN_VISIBLE_WAIT | OP_RUN_LENDING)) !=
            OP_RUN_IN_TASK ||
        !op_run_same(run, seen)) {
        return; /* idle, counted already, or a new task since the last look */
    }
    /* Asleep at two looks in a row on the same task: a thread seen asleep once may be computing
     * and only have waited a moment (a page fault, a contended allocator lock, a sanitizer's
     * own lock); lending its slot then would run one body too many beside it. */
    int tid = atomic_load_explicit(&worker->tid, memory_order_relaxed);
    worker->monitor_asleep = (tid != 0 && op_thread_is_asleep(tid)) ? run : 0;
    if (worker->monitor_asleep == 0 || !op_run_same(asleep_before, run)) return;
    /* acquire: see the worker's `queue` for this task. The worker waits at its task's end while
     * LENDING is set, so the queue stays alive until we flip to LENT. */
    if (!atomic_compare_exchange_strong_explicit(&worker->run, &run, run | OP_RUN_LENDING,
                                                 memory_order_acquire, memory_order_relaxed)) {
        return; /* the task ended, or a visible wait began */
    }
    bool start = op_pool_count_blocked(pool);
    op_count_own(&worker->counts.rescues, 1); /* the monitor is its only writer */
    OP_OBSERVE_RESCUE(tid);
    /* May push a token: a spare takes it. */
    worker->monitor_lent =
        worker->token->cls->lend_slot(worker->token, worker->spare ? NULL : &worker->local)
            ? worker->token : NULL;
    /* relaxed: a count (see blocked_unlent); the worker's end reads monitor_lent after LENT. */
    if (!worker->monitor_lent) atomic_fetch_add_explicit(&pool->blocked_unlent, 1, memory_order_relaxed);
    /* release: the count and `monitor_lent` before LENT (the worker's acquiring end). The
     * exchange keeps a VISIBLE_WAIT bit set meanwhile. */
    atomic_fetch_xor_explicit(&worker->run, OP_RUN_LENDING | OP_RUN_LENT, memory_order_release);
    if (start) op_pool_start_spare(pool);
}

/* Whether some worker's local run queue holds a task: work that waits like a token does (its
 * worker may be blocked in the body that released it). */
static bool op_pool_holds_local_work(op_pool *pool) {
    for (int i = 0; i < pool->size; i++) {
        if (!op_local_run_queue_is_empty(&pool->workers[i].local)) return true;
    }
    return false;
}

/* Queues whose work waits behind their width (op_pool_count_queue_waiting_at_width). One word for
 * the process: written when a queue is marked or cleared (not per task), read by the monitor's
 * tick. */
alignas(OP_CACHE_LINE) _Atomic int32_t op_queues_waiting_at_width;

void op_pool_count_queue_waiting_at_width(int delta) {
    /* relaxed: a count the monitor reads at its next tick; the wake-up below orders the first. */
    int32_t before = atomic_fetch_add_explicit(&op_queues_waiting_at_width, delta,
                                               memory_order_relaxed);
    if (delta > 0 && before == 0) {
        /* seq_cst fence: Dekker with the monitor going to sleep (it publishes ASLEEP, fences,
         * then ticks once more), as a token push does. */
        atomic_thread_fence(memory_order_seq_cst);
        op_monitor_poke();
    }
}

/* Looks at the pool's workers when its tokens or local run queues wait, or (`every`) always. */
static bool op_pool_monitor_look(op_pool *pool, bool every) {
    if (!pool) return false;
    /* relaxed: counts and hints; a change after this look wakes the monitor again or is seen
     * at its next tick. */
    bool tokens = op_pool_has_tokens(pool);
    /* Tokens that waited through a whole tick may belong to another pool now (a queue's QoS or
     * placement change racing a push, a carried task promoted while it waited): they go there. Only
     * the monitor reads and writes `tokens_waited`. */
    if (tokens && pool->tokens_waited) op_pool_rehome_tokens(pool);
    pool->tokens_waited = tokens;
    if (!every && !tokens && !op_pool_holds_local_work(pool) &&
        atomic_load_explicit(&pool->blocked_unlent, memory_order_relaxed) <= 0) {
        return false;
    }
    for (int i = 0; i < pool->size; i++) op_pool_look_at(pool, &pool->workers[i]);
    pthread_mutex_lock(&pool->spares_lock);
    for (op_worker *spare = pool->spares; spare; spare = spare->next_spare) {
        op_pool_look_at(pool, spare);
    }
    pthread_mutex_unlock(&pool->spares_lock);
    return true;
}

/* ---- the tick, and the retries that ride on it ---------------------------------------------- */

/* The monitor's tick: for each pool whose tokens (or local run queues' tasks) wait, look at its
 * workers and spares. */
static bool op_pool_monitor_tick(void) {
    /* relaxed: a count; a queue marked after this look wakes the monitor again. */
    bool every = atomic_load_explicit(&op_queues_waiting_at_width, memory_order_relaxed) > 0;
    bool waiting = every;
    for (int qos = 0; qos < OP_QOS_COUNT; qos++) {
        /* acquire: pairs with the publishing store in op_pool_for. */
        if (op_pool_monitor_look(atomic_load_explicit(&op_pools[qos], memory_order_acquire), every)) {
            waiting = true;
        }
    }
    /* acquire: pairs with the publishing exchange in op_pool_for_placement. */
    for (op_pool *pool = atomic_load_explicit(&op_placed_pools, memory_order_acquire); pool;
         pool = pool->next_placed) {
        if (op_pool_monitor_look(pool, every)) waiting = true;
    }
    return waiting;
}

/* A pool's retries at the monitor's tick: its missing workers only while some could not start
 * (start_failed; a placed pool's workers that left when idle are started by the next push), and
 * a spare that could not start. */
static void op_pool_retry(op_pool *pool) {
    if (!pool) return;
    if (atomic_load_explicit(&pool->start_failed, memory_order_relaxed) &&
        atomic_load_explicit(&pool->created, memory_order_relaxed) < pool->size) {
        op_pool_retry_workers(pool);
    }
    op_pool_retry_spare(pool);
}

/* The monitor's tick (op_pool_monitor_tick), then the retries of threads that could not start. */
bool op_pool_monitor_tick_and_retry(void) {
    bool waiting = op_pool_monitor_tick();
    for (int qos = 0; qos < OP_QOS_COUNT; qos++) {
        /* acquire: as in op_pool_monitor_tick. */
        op_pool_retry(atomic_load_explicit(&op_pools[qos], memory_order_acquire));
    }
    for (op_pool *pool = atomic_load_explicit(&op_placed_pools, memory_order_acquire); pool;
         pool = pool->next_placed) {
        op_pool_retry(pool);
    }
    return waiting;
}
