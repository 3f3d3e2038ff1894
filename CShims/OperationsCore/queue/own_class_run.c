/*
 * own_class_run.c — a default-width queue counts its width per class: a task whose own QoS is
 * above its queue's runs on its own class's workers, outside the queue's slots.
 *
 * A queue's slots are held by workers of the queue's class (drain.c), and a task of another
 * class hops to that class's workers while its drainer sleeps holding the slot (hop.c). On a
 * default-width queue whose slots all run long lower-class work, a userInteractive task would
 * wait for one of them to finish (W9 "one queue": a 1 ms background operation, against the
 * 100 µs a userInteractive task may wait). Apple's runtime bounds a default-width queue per
 * QoS class instead (GCD's pool limits concurrency per class), and so do we: a task of a class
 * above its queue's that becomes ready while the queue is not suspended is pushed straight into
 * the pool of its own class (the queue's placement kept), as a token of its own (a record of
 * task and queue, allocated here), and runs there as a drainer would run it
 * (op_drain_run_outside_width: cancellation, promotion, deferral, manual completion, finish).
 * Its class's workers (one per CPU) are the width it counts against.
 *
 * A task that reached the queue's bands while it could not go out (the queue suspended, or of
 * explicit width, when it became ready) goes out when a drainer takes it, if the queue is of the
 * default width by then (op_queue_hand_to_own_class): the drainer keeps its slot for the next
 * task instead of sleeping in a hop.
 *
 * What holds as for any task of the queue: it counts in the queue's `busy` from its submit
 * until it finished (waits for the queue's idle see it, the queue lives until then); it is in
 * the registry (cancelAll, barriers: a barrier is a dependency, so it starts only once it is
 * ready); a queue suspended, or given an explicit width, before the worker starts it gets it
 * back (into the stash, which drainers take first) and runs it under its slots. A promotion of
 * such a task is not counted on its queue (nothing of the queue is ahead of it): it runs at the
 * raised class through a hop from its class's worker. What differs:
 * such tasks start in the order their class's pool hands out tokens (FIFO), not by
 * queuePriority among the queue's other ready tasks — they start at once where the pool has a
 * free worker, which is the point.
 *
 * A task with a thread priority goes out the same way: its class decides whether it counts
 * against its class rather than its queue's width, and its nice value (class and thread priority,
 * one request) where it runs: the pool whose workers run its body without a hop
 * (op_hop_pool_for: its class's, renicing there and back where the process may, or the pool made
 * for its nice value). A userInteractive probe with threadPriority 1.0 on a default-width queue
 * busy with 1 ms background bodies waited for a slot (p50 483 µs, p99 1.09 ms) while the same
 * probe without a thread priority started in 9.6 µs (issue 33, item 6).
 *
 * Left in the queue (the slots run it as before): tasks of the queue's class or below, tasks of a
 * queue of explicit width (its width is a limit the caller chose), a task whose record cannot be
 * allocated, executor jobs (op_queue_submit_job: a job's chain stays on the worker that runs it).
 *
 * The task's OP_STATE_TAKEN is set here with OP_STATE_OUTSIDE_WIDTH (a re-band then pushes
 * nothing, and an entry a re-band pushed before is skipped as stale; one a drainer claimed first
 * is the drainer's). OUTSIDE_WIDTH tells a manual completion, a body that blocks visibly
 * (op_queue_will_block), a hop and a promoter that the task holds no slot; it is cleared when
 * the task is given back to the slots.
 */
#include "queue.h"

#include <stdlib.h>

typedef struct op_own_class_token {
    op_token token; /* first: the pool hands this out; also what the body shows the monitor */
    op_task_t *task;
    op_queue_t *queue;
} op_own_class_token;

/* A body running outside the slots holds none: the monitor lends nothing for it (it still
 * counts the worker blocked, so a spare stands in for its pool). */
static bool op_own_class_lend_slot(op_token *token, op_local_run_queue_t *ring) {
    (void)token;
    (void)ring;
    return false;
}

static void op_own_class_take_back_slot(op_token *token) { (void)token; }

static void op_own_class_drain(op_token *token) {
    op_own_class_token *record = (op_own_class_token *)token;
    op_queue_t *queue = record->queue;
    op_task_t *task = record->task;
    OP_RACE_WINDOW("own class: the worker came, before looking at the queue's state");
    /* seq_cst: a suspension (stored seq_cst) or a width set before the worker came for the task
     * and ordered before it by the caller is seen; one racing with this load has no order
     * against the start, as for a drainer that took a task a moment before. Given back, the
     * task is found by the dispatch below or by the setter's own dispatch (its fence pairs with
     * the stash, as in op_queue_release_slot). */
    if (OP_UNLIKELY(atomic_load_explicit(&queue->suspended, memory_order_seq_cst) ||
                    atomic_load_explicit(&queue->width, memory_order_seq_cst) >= 0)) {
        free(record);
        /* Back under the queue's slots, first in line (the stash holds claimed tasks). A unit
         * of our own keeps the queue alive across the stash, after which a drainer may run and
         * finish the task; the dispatch's subtraction is our last touch. relaxed: the stash's
         * release publishes the cleared bit to the drainer that takes the task. */
        atomic_fetch_and_explicit(&task->state, ~(uint32_t)OP_STATE_OUTSIDE_WIDTH,
                                  memory_order_relaxed);
        op_queue_busy_add(queue, 1);
        op_queue_stash(queue, task);
        op_queue_dispatch_sub(queue, 1, 1);
        return;
    }
    op_drain_run_outside_width(queue, task, token);
    free(record);
}

static const op_token_class op_own_class_token_class = {
    .drain = op_own_class_drain,
    .lend_slot = op_own_class_lend_slot,
    .take_back_slot = op_own_class_take_back_slot,
    .home = NULL, /* stays in its class's pool: the task's class, not the queue's, chose it */
};

/* The pool `task` goes to, or NULL when it stays under the queue's slots. */
static op_pool *op_own_class_target(op_queue_t *queue, op_task_t *task) {
    /* relaxed: the caller's own settings, or a race with a setter that op_own_class_drain's
     * second look resolves. */
    if (atomic_load_explicit(&queue->width, memory_order_relaxed) >= 0 ||
        atomic_load_explicit(&queue->suspended, memory_order_relaxed)) {
        return NULL;
    }
    /* An executor's job stays where its chain runs (a drainer's local run queue, jobs pushed
     * by a running job), with no record to allocate: flags are written before the submit. */
    int qos = atomic_load_explicit((_Atomic int8_t *)&task->qos, memory_order_relaxed);
    if ((task->flags & OP_TASK_IS_JOB) ||
        qos <= (int)atomic_load_explicit(&queue->qos, memory_order_relaxed)) {
        return NULL;
    }
    /* acquire: pairs with the release store in op_queue_place (the placement is built). */
    const op_placement *placement = atomic_load_explicit(&queue->placement, memory_order_acquire);
    /* Where its nice value is, thread priority included (the same choice as a hop's): its
     * class's workers, or those of the pool made for its nice value. */
    int renice;
    return op_hop_pool_for(placement, task, qos, &renice);
}

/* Hands the taken task to its class's pool; the push is the last touch of the queue. */
static void op_own_class_push(op_queue_t *queue, op_task_t *task, op_pool *target,
                              op_own_class_token *record) {
    OP_RACE_WINDOW("own class: taken, before the push into its class's pool");
    record->token.cls = &op_own_class_token_class;
    record->task = task;
    record->queue = queue;
    op_pool_push_token(target, &record->token);
}

bool op_queue_run_in_own_class(op_queue_t *queue, op_task_t *task) {
    op_pool *target = op_own_class_target(queue, task);
    if (!target) return false;
    op_own_class_token *record = malloc(sizeof *record);
    if (!record) return false;
    OP_RACE_WINDOW("own class: before taking the task");
    /* acq_rel: against a re-band's CAS and a drainer's claim on the same word. A re-band that
     * came first pushed an entry into the bands; if a drainer claimed that entry (TAKEN) before
     * us, the task is the drainer's and we are done (it runs there, under a slot: found by
     * review, a task ran twice). Otherwise our TAKEN makes that entry stale, and a re-band after
     * us sees TAKEN and pushes nothing. */
    uint32_t state = atomic_load_explicit(&task->state, memory_order_relaxed);
    do {
        if (state & OP_STATE_TAKEN) {
            free(record);
            return true; /* handled: a drainer took it */
        }
    } while (!atomic_compare_exchange_weak_explicit(&task->state, &state,
                                                    state | OP_STATE_TAKEN | OP_STATE_OUTSIDE_WIDTH,
                                                    memory_order_acq_rel, memory_order_relaxed));
    op_own_class_push(queue, task, target, record);
    return true;
}

bool op_queue_hand_to_own_class(op_queue_t *queue, op_task_t *task) {
    op_pool *target = op_own_class_target(queue, task);
    if (!target) return false;
    op_own_class_token *record = malloc(sizeof *record);
    if (!record) return false;
    /* relaxed: the task is ours (claimed); the token push publishes the bit with the task. */
    atomic_fetch_or_explicit(&task->state, OP_STATE_OUTSIDE_WIDTH, memory_order_relaxed);
    op_own_class_push(queue, task, target, record);
    return true;
}
