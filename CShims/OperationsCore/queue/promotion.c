/*
 * promotion.c — QoS promotion: work that higher-QoS work waits for runs at the waiter's class
 * until it finished (no priority inversion). See "QoS promotion" in operations_core.h.
 *
 * A task's promotion is in its state word (OP_STATE_PROMO_*: the class + 1, and whether it is
 * counted on its queue). A task promoted before it started is also counted on its queue
 * (queue->promo_counts, a count per class): the queue then runs at that class (op_queue_run_qos), so
 * its waiting tokens move to that class's pool (op_pool_rehome_tokens), its drainers follow at
 * their next look (op_pool_serves), and the task and those ahead of it start there — the task
 * keeps its place in its queue and runs once, as any task. The count is taken off when the task
 * finished. Its drainer reads the promotion in the word its RUNNING read-modify-write returns
 * (drain.c), so a promotion either comes before that and is seen there, or comes after and
 * finds the task running.
 *
 * A running body is raised by renicing the thread that runs it (op_pool_promote_running:
 * setpriority on its thread id), only where the process may lower nice values; the thread
 * puts itself back when the body returned (op_worker_body_end). Unprivileged a thread
 * cannot lower another's nice value, so a running body keeps its class's.
 *
 * Concurrency with the finish: a promoter takes the PROMOTING bit (only while the task is not
 * finished) before it reads the queue or changes its count, and drops it with the new level;
 * the finisher (op_task_finish_claimed) waits for PROMOTING to go before it takes the count off.
 * The finisher holds the queue alive (a drainer's slot, or op_task_complete's unit), so the
 * promoter's queue is alive while it holds PROMOTING. Promotions are rare (a wait that would
 * block, an add of higher-QoS work): none of this is on the submit or dequeue path; the drainer
 * pays one seq_cst load of queue->promo per task (op_task_run_qos; a plain load on x86-64), the
 * worker one store and one compare-and-swap around each body (running_body_promotion.c).
 *
 * The counts. Each class's count is a plain 64-bit integer (queue->promo_counts), changed only
 * under the queue's promotion lock (one of OP_PROMO_LOCKS striped mutexes, picked by the
 * queue's address: promotions are rare, and a queue's lock is held for a few instructions, never
 * across a call). Every change rewrites the summary word queue->promo (bit c: class c's count is
 * not zero) with a seq_cst store, under the same lock. Why this is right:
 *   - No overflow: a count is the number of promotions in force (unfinished counted tasks,
 *     waiters, op_queue_promote calls not yet undone), each holding memory or a thread, far
 *     below 2^64. (The packed word this replaces had 12 bits per class: 4 096 promotions to one
 *     class carried into the next and left the queue raised for good.)
 *   - The summary is exact whenever no lock holder is in its critical section: every count
 *     change and the store that follows it happen under the lock, so stores to `promo` come in
 *     lock order, and the last one was computed from the counts as they are. A reader (the hot
 *     path, lock-free) sees some store of that order: a summary that was exact at that moment.
 *   - The Dekker pair with a body's start (drain.c publishes the body with a seq_cst store of
 *     the worker's `run`, op_worker_body_begin, then loads `promo` seq_cst;
 *     running_body_promotion.c): a raising promoter stores `promo` seq_cst (always, even when
 *     the bit was already set), then op_pool_promote_running loads the workers' `run` seq_cst.
 *     In the single order of seq_cst operations either the drainer's load comes after our store
 *     (it sees our bit, or a later store, made under the lock from counts that still hold our
 *     promotion unless it was undone meanwhile), or our load of `run` comes after its store (we
 *     see the body and renice it).
 *   - fork(): the prepare handler takes every promotion lock (after the pool and placement
 *     locks; a promotion lock is a leaf, nothing is taken under it), so the child never finds
 *     one held by a thread it lacks, nor a count changed without its summary.
 */
#include "queue.h"
#include "../base/observe.h"

#include <errno.h>

static pthread_once_t op_promotion_once = PTHREAD_ONCE_INIT;
/* Whether new promotions are made: the environment's choice, then op_runtime_set_qos_promotion.
 * It gates only the raising calls; every undo (a finish taking its count off, an unpromote)
 * runs regardless, so switching it while promotions stand leaves no count behind. */
static _Atomic bool op_promotion_on = true;

static void op_promotion_read_env(void) {
    /* relaxed: pthread_once orders this store before every reader that went through the once. */
    atomic_store_explicit(&op_promotion_on, op_env_flag("OPERATIONS_QOS_PROMOTION", true),
                          memory_order_relaxed);
}

bool op_promotion_enabled(void) {
    pthread_once(&op_promotion_once, op_promotion_read_env);
    /* relaxed: a switch, not a publication; a raise that races a switch either happens (and is
     * undone as any) or does not. */
    return atomic_load_explicit(&op_promotion_on, memory_order_relaxed);
}

bool op_runtime_qos_promotion(void) { return op_promotion_enabled(); }

void op_runtime_set_qos_promotion(bool on) {
    pthread_once(&op_promotion_once, op_promotion_read_env); /* the environment is read first */
    /* relaxed: see op_promotion_enabled. */
    atomic_store_explicit(&op_promotion_on, on, memory_order_relaxed);
}

/* The queues' promotion locks, striped: a queue's is picked by its address (see the file
 * comment). Never held across a call; taken by fork's prepare handler. */
#define OP_PROMO_LOCKS 16
static pthread_mutex_t op_promo_locks[OP_PROMO_LOCKS] = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER,
};

static pthread_mutex_t *op_promo_lock_of(const op_queue_t *queue) {
    /* Fibonacci hashing of the address: queues are 128-byte aligned, so the low bits say
     * nothing; the top bits of the product mix all of them. */
    uint64_t hash = (uint64_t)(uintptr_t)queue * UINT64_C(0x9E3779B97F4A7C15);
    return &op_promo_locks[hash >> 60]; /* 16 = 2^4 stripes */
}

void op_promotion_lock_for_fork(void) {
    for (int i = 0; i < OP_PROMO_LOCKS; i++) pthread_mutex_lock(&op_promo_locks[i]);
}

void op_promotion_unlock_after_fork(void) {
    /* In the child too: the forking thread, which took them in the prepare handler, is the one
     * thread there, and still owns them. */
    for (int i = OP_PROMO_LOCKS - 1; i >= 0; i--) pthread_mutex_unlock(&op_promo_locks[i]);
}

/* Adds `delta` (+1 or -1) promotions to class `qos` on the queue, and moves its waiting tokens
 * when that changes the pool that serves it. */
static void op_queue_promo_change(op_queue_t *queue, int qos, int delta) {
    op_pool *before = op_queue_pool(queue);
    pthread_mutex_t *lock = op_promo_lock_of(queue);
    pthread_mutex_lock(lock);
    uint64_t *count = &queue->promo_counts[qos];
    if (delta < 0 && *count == 0) {
        /* Never below zero: an unpromote whose promote raised nothing (promotion off, a caller
         * that did not check its result) changes nothing. */
        pthread_mutex_unlock(lock);
        return;
    }
    *count = delta > 0 ? *count + 1 : *count - 1;
    /* relaxed: every store to `promo` is made under this lock, so the last one is ours to see
     * (the lock orders it before us). */
    uint32_t summary = atomic_load_explicit(&queue->promo, memory_order_relaxed);
    summary = *count != 0 ? summary | (UINT32_C(1) << qos) : summary & ~(UINT32_C(1) << qos);
    /* seq_cst, also when the summary did not change: the Dekker pair with a body's start
     * (drain.c publishes the body, then loads `promo` seq_cst): either that drainer sees this
     * raise, or op_pool_promote_running, which the raising promoter calls after this, sees its
     * body (see the file comment). */
    atomic_store_explicit(&queue->promo, summary, memory_order_seq_cst);
    pthread_mutex_unlock(lock);
    op_queue_left_pool(queue, before); /* its waiting tokens follow the run class */
}

int op_task_run_qos(op_task_t *task, op_queue_t *queue, uint32_t state) {
    /* relaxed: set before the task ran (op_task_set_qos). */
    int own = atomic_load_explicit((_Atomic int8_t *)&task->qos, memory_order_relaxed);
    int set = (int)atomic_load_explicit(&queue->qos, memory_order_relaxed);
    int qos = own >= 0 ? own : set;
    int promoted = op_state_promoted_qos(state);
    if (promoted > qos) qos = promoted;
    /* seq_cst: see op_queue_promo_change (the Dekker pair with a queue's promoter). */
    if (OP_UNLIKELY(atomic_load_explicit(&queue->promo, memory_order_seq_cst) != 0)) {
        int run = op_queue_run_qos(queue);
        if (run > qos) qos = run;
    }
    return qos;
}

/* The nice a body of `task` asks for at class `qos`. */
static int op_promotion_nice(op_task_t *task, int qos) {
    int nice = op_nice_of_class(qos) + (task ? op_task_nice_delta(task) : 0);
    return nice < -20 ? -20 : nice > 19 ? 19 : nice;
}

/* `behind`: the task's own class raises its queue (a serial queue's task of a higher class
 * than the queue's: what is ahead of it runs at its class), even though the task itself needs
 * no raise. */
static int op_task_promote_to(op_task_t *task, int qos, bool behind) {
    int own = atomic_load_explicit((_Atomic int8_t *)&task->qos, memory_order_relaxed);
    if (behind) own = -1;
    /* acquire: SUBMITTED orders the queue pointer (op_queue_submit stores it first). */
    uint32_t state = atomic_load_explicit(&task->state, memory_order_acquire);
    int64_t start = 0;
    for (;;) {
        if (state & OP_STATE_FINISHED) return 0;
        if (own >= qos || op_state_promoted_qos(state) >= qos) return 0;
        if (state & OP_STATE_PROMOTING) {
            /* Another promoter: a few instructions and a token move. */
            if (start == 0) start = op_now_ns();
            op_spin_pause(op_now_ns() - start);
            state = atomic_load_explicit(&task->state, memory_order_acquire);
            continue;
        }
        /* acquire: as the load above; the bit keeps the finisher from settling the count (and
         * so the queue alive) until we drop it. */
        if (atomic_compare_exchange_weak_explicit(&task->state, &state,
                                                  state | OP_STATE_PROMOTING,
                                                  memory_order_acquire, memory_order_acquire)) {
            state |= OP_STATE_PROMOTING;
            break;
        }
    }
    op_queue_t *queue = (state & OP_STATE_SUBMITTED)
                            ? atomic_load_explicit(&task->queue, memory_order_acquire)
                            : NULL;
    bool raise = !(own < 0 && queue && (int)op_queue_qos(queue) >= qos);
    int old_level = op_state_promoted_qos(state);
    bool counted = state & OP_STATE_PROMO_COUNTED;
    /* Counted on the queue when it has not started (so its queue runs it, and what is ahead of
     * it, at the raised class), or when it was counted already (the level moves). Not for a
     * task carried to its own class's workers outside the slots (carry.c): nothing of its queue
     * is ahead of it; it is carried on to the raised class's workers. */
    bool count = raise && queue &&
                 (!(state & (OP_STATE_RUNNING | OP_STATE_OUTSIDE_WIDTH)) || counted);
    if (count) {
        op_queue_promo_change(queue, qos, +1);
        if (counted) op_queue_promo_change(queue, old_level, -1);
    }
    uint32_t next;
    uint32_t current = state;
    do {
        next = current & ~OP_STATE_PROMOTING;
        if (raise) next = (next & ~OP_STATE_PROMO_MASK) | ((uint32_t)(qos + 1) << OP_STATE_PROMO_SHIFT);
        if (count) next |= OP_STATE_PROMO_COUNTED;
        /* seq_cst: release publishes the count to the finisher that sees PROMOTING gone;
         * acquire: we see whether the task started meanwhile (its RUNNING); and the Dekker pair
         * with a carried task that starts on a worker (it stores `run` seq_cst, then loads this
         * word seq_cst, drain.c; we store the level here, then op_pool_promote_running loads
         * `run` seq_cst): acq_rel alone does not order our store before that load in C11. */
    } while (!atomic_compare_exchange_weak_explicit(&task->state, &current, next,
                                                    memory_order_seq_cst, memory_order_relaxed));
    if (!raise) return 0;
    OP_OBSERVE_PROMOTE(task, queue, qos);
    int nice = op_promotion_nice(task, qos);
    if (op_nice_can_hold(nice)) {
        /* A running body of the task; when counted, those of its queue (ahead of it). */
        if ((current & OP_STATE_RUNNING) && !(current & OP_STATE_FINISHED)) {
            op_pool_promote_running(task, NULL, nice);
        }
        if (count && !(current & OP_STATE_FINISHED)) {
            op_pool_promote_running(NULL, queue, op_promotion_nice(NULL, qos));
        }
    }
    return 0;
}

int op_task_promote(op_task_t *task, op_qos_t qos) {
    if (!task || (unsigned)qos >= OP_QOS_COUNT) return EINVAL;
    if (!op_promotion_enabled()) return 0;
    return op_task_promote_to(task, (int)qos, false);
}

void op_promotion_submitted(op_task_t *task, op_queue_t *queue) {
    /* relaxed: set before submission. */
    int own = atomic_load_explicit((_Atomic int8_t *)&task->qos, memory_order_relaxed);
    if (own <= (int)op_queue_qos(queue) || !op_promotion_enabled()) return;
    op_task_promote_to(task, own, true);
}

void op_promotion_settle_finished(op_task_t *task) {
    /* acquire: the promoter's count change (released with PROMOTING's clearing). */
    uint32_t state = atomic_load_explicit(&task->state, memory_order_acquire);
    int64_t start = 0;
    while (state & OP_STATE_PROMOTING) {
        if (start == 0) start = op_now_ns();
        op_spin_pause(op_now_ns() - start);
        state = atomic_load_explicit(&task->state, memory_order_acquire);
    }
    if (state & OP_STATE_PROMO_COUNTED) {
        op_queue_t *queue = atomic_load_explicit(&task->queue, memory_order_acquire);
        op_queue_promo_change(queue, op_state_promoted_qos(state), -1);
    }
}

int op_task_promoted_qos(const op_task_t *task) {
    if (!task) return -1;
    /* relaxed: a report. */
    int level = op_state_promoted_qos(
        atomic_load_explicit(&((op_task_t *)task)->state, memory_order_relaxed));
    int own = atomic_load_explicit((_Atomic int8_t *)&task->qos, memory_order_relaxed);
    return level > own ? level : -1; /* a serial queue's raise for its own class is no promotion */
}

int op_queue_promote(op_queue_t *queue, op_qos_t qos) {
    if (!queue || (unsigned)qos >= OP_QOS_COUNT) return EINVAL;
    if (!op_promotion_enabled()) return ENOTSUP;
    op_queue_raise(queue, qos);
    return 0;
}

void op_queue_raise(op_queue_t *queue, op_qos_t qos) {
    OP_OBSERVE_PROMOTE(NULL, queue, qos);
    op_queue_promo_change(queue, qos, +1);
    int nice = op_promotion_nice(NULL, qos);
    if (qos > (int)op_queue_qos(queue) && op_nice_can_hold(nice)) {
        op_pool_promote_running(NULL, queue, nice);
    }
}

void op_queue_unpromote(op_queue_t *queue, op_qos_t qos) {
    /* Not gated by the switch: it undoes a raise made while promotion was on. */
    if (!queue || (unsigned)qos >= OP_QOS_COUNT) return;
    op_queue_promo_change(queue, qos, -1);
}

op_qos_t op_queue_effective_qos(const op_queue_t *queue) {
    return (op_qos_t)op_queue_run_qos((op_queue_t *)queue);
}

op_qos_t op_current_thread_qos(void) {
    op_task_t *task = op_tls_task;
    op_queue_t *queue = op_tls_queue;
    if (task && queue) {
        /* relaxed: our own task's word; a promotion racing with this read is seen next time. */
        return (op_qos_t)op_task_run_qos(task, queue,
                                         atomic_load_explicit(&task->state, memory_order_relaxed));
    }
    op_pool *pool = op_pool_current();
    if (pool && op_pool_qos(pool) >= 0) return (op_qos_t)op_pool_qos(pool);
    /* A thread of the caller's has no QoS unless it was given a higher priority than an
     * ordinary thread's: a nice value below 0, read in libdispatch's table (not the runtime's,
     * which an unprivileged process shifts so that nice 0 is userInteractive's). An ordinary
     * thread (nice 0 or above) counts as background: its waits raise nothing, as a thread of
     * unspecified QoS. */
    int nice = op_current_thread_nice();
    if (nice <= -4) return OP_QOS_USER_INTERACTIVE;
    if (nice < 0) return OP_QOS_USER_INITIATED;
    return OP_QOS_BACKGROUND;
}

void op_promotion_note_queue_raise(op_task_t *task, int qos) {
    uint32_t state = atomic_load_explicit(&task->state, memory_order_relaxed);
    /* relaxed: only the level bits change, for reports; a promoter holding PROMOTING writes
     * the level itself, so we leave the word alone then, and a task counted on its queue keeps
     * the level it was counted at (its finish takes the count off at that level: rewritten, the
     * wrong class's count came off and the queue stayed raised for ever; found by review). */
    while (!(state & (OP_STATE_PROMOTING | OP_STATE_PROMO_COUNTED)) &&
           op_state_promoted_qos(state) < qos) {
        uint32_t next = (state & ~OP_STATE_PROMO_MASK) | ((uint32_t)(qos + 1) << OP_STATE_PROMO_SHIFT);
        if (atomic_compare_exchange_weak_explicit(&task->state, &state, next,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            break;
        }
    }
}
