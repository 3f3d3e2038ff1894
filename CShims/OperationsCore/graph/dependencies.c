/*
 * dependencies.c — the dependency graph: edges between tasks, readiness, holds, cancellation,
 * and what a task's finish releases (its dependents, its waiters). The graph calls down into the
 * queues (a task that becomes ready goes to its queue, queue.c); the queues call back into it
 * only through the table of hooks it defines (op_queue_graph, below).
 *
 * Readiness: `pending` counts unfinished dependencies plus OP_PENDING_HOLD until submission.
 * Whoever brings it to zero (submit, or the last dependency finishing, or removing the last
 * dependency) makes the task ready; cancellation after submission makes it ready early. The
 * QUEUED state bit, set with fetch_or, guarantees the task enters its ready queue once.
 *
 * Dependencies are edges. An edge is owned by the dependent task (freed with it) and linked
 * into two lists: the dependent's own list (to find it for removal) and the dependency's
 * `dependents` list, a push-only lock-free stack that the dependency closes when it finishes
 * (exchange with CLOSED), then walks. O(1) per edge, no global lock, no rescans. An edge moves
 * out of ACTIVE once, by compare-and-swap: FIRED (the dependency finished) or REMOVED (the
 * dependent dropped it), so a dependency is counted down exactly once. While linked into an
 * unfinished dependency's list, the edge holds a reference on its dependent, which keeps the
 * edge itself alive for the walk.
 *
 * Threads: any thread may call anything here. The state word doubles as the futex word of
 * op_task_wait.
 */
#include "graph.h"
#include "../base/observe.h"

#include <errno.h>

/* Puts a task that won QUEUED (`old` is the word before) into its queue's bands, or hands it to
 * the drainer on this thread. */
static void op_task_enqueue(op_task_t *task, uint32_t old, bool dispatch) {
    op_queue_t *queue = atomic_load_explicit(&task->queue, memory_order_acquire);
    /* A task of a class above its queue's, on a default-width queue: to its own class's
     * workers, outside its slots (carry.c). relaxed: settings made before it was submitted. */
    if (OP_UNLIKELY(atomic_load_explicit((_Atomic int8_t *)&task->qos, memory_order_relaxed) >
                    (int)op_queue_qos(queue)) &&
        op_carry_ready_outside_width(queue, task)) {
        return;
    }
    if (!dispatch) {
        /* submit: the caller holds a handle on the queue and dispatches itself. */
        op_queue_push_ready(queue, task);
        return;
    }
    /* Once pushed, the task may run and finish at once and the queue may be freed; a worker
     * that is draining this queue holds it alive, anyone else holds one busy unit meanwhile. */
    op_drain *drain = &op_tls_drain;
    bool pinned = drain->queue == queue;
    if (pinned) {
        if (drain->hand_off_allowed && !drain->handed_off &&
            op_queue_claim_for_drainer(queue, task, old | OP_STATE_QUEUED)) {
            drain->handed_off = task; /* counted in busy since its submit; the worker runs it next */
            return;
        }
        if (op_queue_push_local(queue, task, false)) return;
    }
    if (!pinned) op_queue_busy_add(queue, 1);
    op_queue_push_ready(queue, task);
    op_queue_dispatch_sub(queue, 1, pinned ? 0 : 1);
}

static void op_task_ready_now(op_task_t *task, bool dispatch) {
    /* acq_rel: exactly one caller wins the QUEUED bit; it must see the queue pointer stored
     * before SUBMITTED (acquire) and publish the task's state to the worker (release). */
    uint32_t old = atomic_fetch_or_explicit(&task->state, OP_STATE_QUEUED, memory_order_acq_rel);
    OP_RACE_WINDOW("ready: QUEUED won, before the push");
    /* Whoever wins QUEUED enqueues, also a task already FINISHED (completed by hand while it
     * waited, op_task_complete): its queue retires it there (drain.c), giving back its unit and
     * reference. Returning on FINISHED lost it when its last dependency finished, or a cancel
     * came, between the completion's FINISHED and its own try for QUEUED. */
    if (old & OP_STATE_QUEUED) return;
    op_latency_note_ready(task);
    op_task_enqueue(task, old, dispatch);
}

/* Drops the dependency count; the caller that brings it to zero makes the task ready. */
static void op_task_count_down(op_task_t *task, uint32_t amount, bool dispatch) {
    /* acq_rel: the finished dependency's writes (release) must be visible to the thread that
     * takes the task to zero and hands it on (acquire). */
    uint32_t before = atomic_fetch_sub_explicit(&task->pending, amount, memory_order_acq_rel);
    if (before == amount) op_task_ready_now(task, dispatch);
}

int op_task_set_priority(op_task_t *task, op_priority_t priority) {
    if (!task || (unsigned)priority >= OP_PRIORITY_COUNT) return EINVAL;
    /* relaxed: read by the thread that pushes the task, after the acq_rel that made it ready
     * (or after the re-band CAS below, on this thread). */
    uint8_t old_priority = atomic_exchange_explicit((_Atomic uint8_t *)&task->priority,
                                                    (uint8_t)priority, memory_order_relaxed);
    if (old_priority == (uint8_t)priority) return 0;
    /* Waiting in a ready queue: move it to the back of its new band. Bump the generation so
     * its old entry goes stale, then push a new entry that owns an extra reference. */
    uint32_t state = atomic_load_explicit(&task->state, memory_order_relaxed);
    for (;;) {
        if (!(state & OP_STATE_QUEUED) ||
            (state & (OP_STATE_TAKEN | OP_STATE_RUNNING | OP_STATE_FINISHED))) {
            return 0; /* not waiting in a band: the new band applies when it is pushed */
        }
        uint32_t next = (state & ~OP_STATE_GEN_MASK) |
                        ((state + (UINT32_C(1) << OP_STATE_GEN_SHIFT)) & OP_STATE_GEN_MASK);
        /* acq_rel: against the claiming CAS of a worker (one of the two wins), and we must see
         * the queue pointer stored before QUEUED. */
        if (atomic_compare_exchange_weak_explicit(&task->state, &state, next,
                                                  memory_order_acq_rel, memory_order_relaxed)) {
            break;
        }
    }
    op_queue_t *queue = atomic_load_explicit(&task->queue, memory_order_acquire);
    op_task_retain(task); /* owned by the new entry until a worker claims or skips it */
    /* The task counts in busy until it finished, which keeps the queue alive; one more busy
     * unit covers the push, and dispatching makes sure a worker comes for the new entry. */
    op_queue_busy_add(queue, 1);
    op_queue_push_ready(queue, task);
    op_queue_dispatch_sub(queue, 1, 1);
    return 0;
}

static int op_task_count_up(op_task_t *task);

int op_task_add_dependency(op_task_t *task, op_task_t *dependency) {
    if (!task || !dependency || task == dependency) return EINVAL;
    /* acquire: if the dependency finished, its effects are visible to our caller. */
    if (atomic_load_explicit(&dependency->state, memory_order_acquire) & OP_STATE_FINISHED) {
        return 0;
    }
    /* Count the dependency first, but only while the task is not ready (pending > 0). */
    int rc = op_task_count_up(task);
    if (rc != 0) return rc;
    _Static_assert(sizeof(op_edge) <= sizeof(op_task_t), "edges share the task cache's blocks");
    op_edge *edge = (op_edge *)op_task_cache_alloc();
    if (!edge) {
        op_task_count_down(task, 1, true);
        return ENOMEM;
    }
    edge->dependent = task;
    edge->dependency = dependency;
    atomic_init(&edge->state, OP_EDGE_ACTIVE);
    op_task_retain(task); /* the edge's reference, while it is linked into `dependency` */

    /* Into the owner's list. release: remove_dependency walks it after an acquire load. */
    op_edge *owned = atomic_load_explicit(&task->own_edges, memory_order_relaxed);
    do {
        edge->next_owned = owned;
    } while (!atomic_compare_exchange_weak_explicit(&task->own_edges, &owned, edge,
                                                    memory_order_release, memory_order_relaxed));

    /* Into the dependency's list, unless it closed meanwhile (it finished). */
    op_edge *head = atomic_load_explicit(&dependency->dependents, memory_order_acquire);
    for (;;) {
        if (head == OP_EDGES_CLOSED) {
            atomic_store_explicit(&edge->state, OP_EDGE_DEAD, memory_order_relaxed);
            op_task_count_down(task, 1, true);
            op_task_release(task);
            return 0;
        }
        edge->next_in_dependency = head;
        /* release: the finisher that exchanges the list out (acquire) sees the edge's fields. */
        if (atomic_compare_exchange_weak_explicit(&dependency->dependents, &head, edge,
                                                  memory_order_release, memory_order_acquire)) {
            return 0;
        }
    }
}

/* Adds one unit to the dependency count while the task is not ready. relaxed: the count
 * carries no data; readiness is decided by the acq_rel decrements. */
static int op_task_count_up(op_task_t *task) {
    uint32_t state = atomic_load_explicit(&task->state, memory_order_acquire);
    if (state & (OP_STATE_QUEUED | OP_STATE_RUNNING | OP_STATE_FINISHED)) return EALREADY;
    uint32_t pending = atomic_load_explicit(&task->pending, memory_order_relaxed);
    do {
        if (pending == 0) return EALREADY;
    } while (!atomic_compare_exchange_weak_explicit(&task->pending, &pending, pending + 1,
                                                    memory_order_relaxed, memory_order_relaxed));
    return 0;
}

int op_task_hold(op_task_t *task) {
    if (!task) return EINVAL;
    /* relaxed: `holds` only adjusts the dependency count reported to callers. */
    atomic_fetch_add_explicit(&task->holds, 1, memory_order_relaxed);
    int rc = op_task_count_up(task);
    if (rc != 0) atomic_fetch_sub_explicit(&task->holds, 1, memory_order_relaxed);
    return rc;
}

void op_task_unhold(op_task_t *task) {
    if (!task) return;
    atomic_fetch_sub_explicit(&task->holds, 1, memory_order_relaxed);
    op_task_count_down(task, 1, true);
}

int op_task_defer(op_task_t *task) {
    if (!task || task != op_tls_task) return EINVAL;
    /* Two units: the hold the caller will drop with op_task_unhold, and one the worker drops
     * once the task is back to waiting (so an early unhold cannot make it ready while its
     * body still runs). relaxed: the worker reads both on this same thread. */
    atomic_fetch_add_explicit(&task->holds, 2, memory_order_relaxed);
    atomic_fetch_add_explicit(&task->pending, 2, memory_order_relaxed);
    atomic_fetch_or_explicit(&task->state, OP_STATE_DEFER, memory_order_relaxed);
    return 0;
}

void op_task_settle_deferred(op_task_t *task) {
    /* Once ready again the task may run and finish on another worker at once (its own class's,
     * carry.c, with no slot of ours in between) and drop its last reference while we
     * still count it down: a reference of our own across it (found by review). */
    op_task_retain(task);
    /* Clearing TAKEN would make valid again an entry that still stands for the task in its
     * queue's bands with the current generation: one a re-band pushed before the task went out
     * to its own class's workers (carry.c takes it by its state word, not by that
     * entry), or a second entry a re-band pushed between QUEUED and the first push. A drainer
     * popping it would claim a task that is held and not QUEUED (found by review: it ran before
     * it was ready, and again once ready). So the generation moves on with the clearing, and
     * every entry pushed before goes stale; the next ready_now pushes one with the new one. */
    const uint32_t cleared = OP_STATE_DEFER | OP_STATE_RUNNING | OP_STATE_QUEUED | OP_STATE_TAKEN |
                             OP_STATE_BODY_DONE | OP_STATE_OUTSIDE_WIDTH;
    /* relaxed first look; the CAS orders. */
    uint32_t old = atomic_load_explicit(&task->state, memory_order_relaxed);
    for (;;) {
        uint32_t next = (old & ~(cleared | OP_STATE_GEN_MASK)) |
                        ((old + (UINT32_C(1) << OP_STATE_GEN_SHIFT)) & OP_STATE_GEN_MASK);
        /* acq_rel: clearing QUEUED lets exactly one later ready_now push the task again; against
         * a claimant's CAS on a stale entry (it sees TAKEN, or the new generation). */
        if (atomic_compare_exchange_weak_explicit(&task->state, &old, next, memory_order_acq_rel,
                                                  memory_order_relaxed)) {
            break;
        }
    }
    OP_RACE_WINDOW("settle deferred: TAKEN cleared, the generation moved on");
    if (old & OP_STATE_CANCELLED) op_task_ready_now(task, true); /* cancelled: ready at once */
    atomic_fetch_sub_explicit(&task->holds, 1, memory_order_relaxed);
    op_task_count_down(task, 1, true); /* the worker's unit */
    op_task_release(task);
}

int op_task_remove_dependency(op_task_t *task, op_task_t *dependency) {
    if (!task || !dependency) return ENOENT;
    /* acquire: pairs with the release push in add_dependency. Edges live as long as `task`,
     * which the caller holds, so walking them is safe. */
    for (op_edge *edge = atomic_load_explicit(&task->own_edges, memory_order_acquire); edge;
         edge = edge->next_owned) {
        if (edge->dependency != dependency) continue;
        uint32_t expected = OP_EDGE_ACTIVE;
        /* relaxed: the CAS only decides who counts the edge down; count_down orders. */
        if (atomic_compare_exchange_strong_explicit(&edge->state, &expected, OP_EDGE_REMOVED,
                                                    memory_order_relaxed,
                                                    memory_order_relaxed)) {
            op_task_count_down(task, 1, true);
            return 0;
        }
    }
    return ENOENT;
}

/* The finishes whose on_finish this thread runs (op_task_finish_claimed), innermost first: an
 * on_finish may finish another task on the same thread (op_task_complete), whose on_finish may
 * wait for any task of the stack. A wait for one of them returns at once (op_task_wait): it is
 * finished, and its release waits for the wait to return. Frames live on the finishers' stacks. */
typedef struct op_finishing_frame {
    op_task_t *task;
    struct op_finishing_frame *outer;
} op_finishing_frame;
static _Thread_local op_finishing_frame *op_tls_finishing = NULL;

static inline bool op_task_finishing_here(const op_task_t *task) {
    for (op_finishing_frame *frame = op_tls_finishing; frame; frame = frame->outer) {
        if (frame->task == task) return true;
    }
    return false;
}

static bool op_task_finish_claimed(op_task_t *task, uint32_t old) {
    /* The finish hand-off applies to this finish's dependents only: not to what its on_finish
     * callback or a release in the loop below may make ready (they run code of the caller's). */
    op_drain *drain = &op_tls_drain;
    bool hand_off = drain->hand_off_allowed;
    drain->hand_off_allowed = false;
    /* The queue is only named (an id), never touched: a completion on another thread holds
     * none of its units, and a drainer may retire the task and free the queue meanwhile. Its
     * counters count the finish where the task's unit is given back (op_queue_count_finished). */
    OP_OBSERVE_FINISH(task, atomic_load_explicit(&task->queue, memory_order_relaxed),
                      (old & OP_STATE_CANCELLED) != 0, 0);
    if (OP_UNLIKELY(old & (OP_STATE_PROMO_COUNTED | OP_STATE_PROMOTING))) {
        op_promotion_settle_finished(task); /* its queue's raise ends with it */
    }
    if (OP_UNLIKELY(task->flags & OP_TASK_HAS_EXT)) {
        op_task_ext *ext = task->context;
        /* A wait for this task from its on_finish returns at once (see op_task_wait). */
        op_finishing_frame frame = {.task = task, .outer = op_tls_finishing};
        op_tls_finishing = &frame;
        /* Its completions of other tasks keep their contexts until this finish is over: a release
         * there could wait for this task's queue, which the finish still holds. */
        op_release_hold_begin();
        ext->on_finish(ext->context);
        op_release_hold_end();
        op_tls_finishing = frame.outer;
    }
    OP_RACE_WINDOW("finish: before releasing the dependents");
    /* acq_rel: closing the list makes later add_dependency calls see CLOSED (release), and we
     * must see every edge pushed before (acquire). */
    op_edge *pushed = atomic_exchange_explicit(&task->dependents, OP_EDGES_CLOSED,
                                               memory_order_acq_rel);
    /* The list is a stack, newest first: reverse it, so dependents become ready in the order
     * they were added (a serial queue then starts what followed a barrier in the order it was
     * added, Q9). The list is ours alone now: plain writes. */
    op_edge *edge = NULL;
    while (pushed && pushed != OP_EDGES_CLOSED) {
        op_edge *next = pushed->next_in_dependency;
        pushed->next_in_dependency = edge;
        edge = pushed;
        pushed = next;
    }
    while (edge) {
        op_edge *next = edge->next_in_dependency;
        op_task_t *dependent = edge->dependent;
        uint32_t expected = OP_EDGE_ACTIVE;
        if (atomic_compare_exchange_strong_explicit(&edge->state, &expected, OP_EDGE_FIRED,
                                                    memory_order_relaxed,
                                                    memory_order_relaxed)) {
            /* Before the count-down may start it. relaxed: a report (the edge holds the
             * dependent: its state may be read). */
            OP_OBSERVE_EDGE(task, dependent,
                            !(atomic_load_explicit(&dependent->state, memory_order_relaxed) &
                              OP_STATE_FINISHED));
            drain->hand_off_allowed = hand_off;
            op_task_count_down(dependent, 1, true);
            drain->hand_off_allowed = false;
        }
        op_task_release(dependent); /* may free the edge: `next` was read first */
        edge = next;
    }
    OP_RACE_WINDOW("finish: dependents released, before RELEASED");
    /* acq_rel: a waiter that acquires RELEASED sees the count-downs above (release), and we see
     * the WAITERS bit of a waiter that went to sleep after FINISHED (acquire): one word, so
     * either its compare-and-swap came first and we wake it, or it sees RELEASED. */
    uint32_t before =
        atomic_fetch_or_explicit(&task->state, OP_STATE_RELEASED, memory_order_acq_rel);
    if (before & OP_STATE_WAITERS) op_futex_wake(&task->state, INT32_MAX);
    return true;
}

bool op_task_finish(op_task_t *task) {
    /* acq_rel: the body's writes are published to dependents and waiters (release); the
     * WAITERS bit set by a waiter is seen (acquire). */
    uint32_t old = atomic_fetch_or_explicit(&task->state, OP_STATE_FINISHED, memory_order_acq_rel);
    if (old & OP_STATE_FINISHED) return false;
    return op_task_finish_claimed(task, old | OP_STATE_FINISHED);
}

void op_task_cancel(op_task_t *task) {
    if (!task) return;
    /* acq_rel: ordered with submit's fetch_or of SUBMITTED; one of the two sees the other. */
    uint32_t old = atomic_fetch_or_explicit(&task->state, OP_STATE_CANCELLED, memory_order_acq_rel);
    if (old & OP_STATE_CANCELLED) return;
    OP_OBSERVE_CANCEL(task);
    OP_RACE_WINDOW("cancel: flagged, before making it ready");
    if ((old & OP_STATE_SUBMITTED) && !(old & (OP_STATE_QUEUED | OP_STATE_FINISHED))) {
        op_task_ready_now(task, true);
    }
}

int op_task_complete(op_task_t *task) {
    if (!task) return EINVAL;
    uint32_t state = atomic_load_explicit(&task->state, memory_order_acquire);
    for (;;) {
        if (state & OP_STATE_FINISHED) return EALREADY;
        if (state & OP_STATE_SUBMITTED) break;
        /* Never submitted: the caller ran it. The CAS keeps a concurrent submit out. */
        if (atomic_compare_exchange_weak_explicit(&task->state, &state, state | OP_STATE_FINISHED,
                                                  memory_order_acq_rel, memory_order_acquire)) {
            op_task_finish_claimed(task, state | OP_STATE_FINISHED);
            return 0;
        }
    }
    if (!(task->flags & OP_TASK_MANUAL_COMPLETION)) return EBUSY;
    OP_RACE_WINDOW("complete: before FINISHED");
    op_queue_t *queue = atomic_load_explicit(&task->queue, memory_order_acquire);
    /* acq_rel: FINISHED and the worker's RUNNING (drain.c) are read-modify-writes of one word,
     * so exactly one of the two comes first: a worker that takes the task after this retires it
     * without its body, and one that took it before runs the body and settles as usual. */
    uint32_t old = atomic_fetch_or_explicit(&task->state, OP_STATE_FINISHED, memory_order_acq_rel);
    if (old & OP_STATE_FINISHED) return EALREADY;
    OP_RACE_WINDOW("complete: finished, before settling the queue");
    op_task_finish_claimed(task, old | OP_STATE_FINISHED);
    if (!(old & OP_STATE_RUNNING)) {
        /* Finished before its queue started it (an asynchronous operation that finished itself
         * while queued, or while a dependency still held it). Its queue retires it when it
         * reaches it, as a cancelled task: that gives back its busy unit and the queue's
         * reference and starts what waits behind it. One still held (not QUEUED) is made ready
         * for that now: nothing else will, since a finished task never becomes ready. */
        uint32_t was = atomic_fetch_or_explicit(&task->state, OP_STATE_QUEUED, memory_order_acq_rel);
        if (!(was & OP_STATE_QUEUED)) op_task_enqueue(task, was, true);
        op_release_flush_if_safe();
        return 0;
    }
    /* Second of the two (body returned, completed) settles the queue: the worker handed the
     * slot to the task when its body returned first. */
    if (old & OP_STATE_BODY_DONE) {
        /* We give back the task's unit: its context is ours to release (context_release.c). */
        op_queue_count_finished(queue, task);
        op_release_task(queue, task);
        op_task_release(task); /* the queue's reference */
        if (old & OP_STATE_OUTSIDE_WIDTH) {
            op_queue_busy_sub(queue, 1); /* ran outside the slots (carry.c): no slot */
        } else if (!op_queue_release_slot(queue, false)) {
            op_queue_busy_sub(queue, 2); /* the task and its slot: our last touch of queue */
        } else {
            /* Re-claimed for waiting work: hand the slot to a worker, then give back the task's
             * unit (it keeps the queue alive across the push; the subtraction is our last touch
             * and may release contexts whose deinits wait for this queue). */
            op_pool_push_token(op_queue_pool(queue), &queue->token);
            op_queue_busy_sub(queue, 1); /* after the push: see op_queue_busy_sub */
        }
    }
    op_release_flush_if_safe(); /* its context, unless this thread runs a body or drains */
    return 0;
}

int op_task_wait(op_task_t *task, int64_t timeout_ns) {
    if (!task) return EINVAL;
    /* From its on_finish (or one that on_finish led to on this thread): it finished, and its
     * release waits for this very call. Before the EDEADLK check: a manual-completion body
     * that completes its own task runs its on_finish inside the body. */
    if (OP_UNLIKELY(op_task_finishing_here(task))) return 0;
    if (task == op_tls_task) return EDEADLK;
    int64_t deadline = timeout_ns >= 0 ? op_now_ns() + timeout_ns : -1;
    /* We wait for RELEASED, the end of the finish, not FINISHED, its start: a waiter that
     * returns finds on_finish done and the dependents counted down (a dependent run by hand
     * right after the wait is ready). acquire: once RELEASED is seen, the body's writes and
     * the count-downs are visible. */
    uint32_t state = atomic_load_explicit(&task->state, memory_order_acquire);
    int64_t start = op_now_ns(), now = start;
    while (!(state & OP_STATE_RELEASED) && now - start < OP_WAIT_SPIN_NS &&
           (deadline < 0 || now < deadline)) {
        op_spin_pause(now - start);
        state = atomic_load_explicit(&task->state, memory_order_acquire);
        now = op_now_ns();
    }
    bool promoted = false;
    for (;;) {
        if (state & OP_STATE_RELEASED) return 0;
        if (!promoted && (deadline < 0 || op_now_ns() < deadline)) {
            /* About to sleep: raise the task to our class (promotion.c; nothing when it runs
             * at or above it, or promotion is off). Once per wait; not for a poll that has no
             * time left. */
            promoted = true;
            op_task_promote(task, op_current_thread_qos());
            state = atomic_load_explicit(&task->state, memory_order_acquire);
            continue;
        }
        if (!(state & OP_STATE_WAITERS)) {
            if (!atomic_compare_exchange_weak_explicit(&task->state, &state,
                                                       state | OP_STATE_WAITERS,
                                                       memory_order_acq_rel,
                                                       memory_order_acquire)) {
                continue;
            }
            state |= OP_STATE_WAITERS;
        }
        int64_t left = -1;
        if (deadline >= 0) {
            left = deadline - op_now_ns();
            if (left <= 0) return ETIMEDOUT;
        }
        op_queue_will_block();
        op_futex_wait(&task->state, state, left);
        op_queue_did_unblock();
        state = atomic_load_explicit(&task->state, memory_order_acquire);
    }
}

/* The queue layer's way back up into the graph (drain.c runs and finishes tasks, registry.c
 * makes barriers depend on tasks and cancels them). Filled at compile time, so it is set before
 * any task can reach a queue, in a shared library and in a static archive alike (see queue/queue.h). */
static const op_graph_hooks op_graph_hooks_table = {
    .finish = op_task_finish,
    .settle_deferred = op_task_settle_deferred,
    .add_dependency = op_task_add_dependency,
    .cancel = op_task_cancel,
};

const op_graph_hooks *const op_queue_graph = &op_graph_hooks_table;
