/*
 * drain.c — a worker holding one of a queue's slots runs the queue's tasks, one after another,
 * until the queue runs dry, is suspended or narrowed, moves to another QoS class, or other
 * queues of the class wait longer than its budget.
 *
 * Where the next task comes from, in order:
 *   1. the finish hand-off (op_drain.handed_off): the dependent that the last finish made ready
 *      and that a pop would return next anyway;
 *   2. the queue's stash (tasks put back when a drainer left at a suspension or narrowing: they
 *      were at the head, so they go first);
 *   3. the worker's local run queue (local_run_queue.c), which holds normal-band tasks released
 *      on this worker (its bodies' submits to the queue, dependents made ready by its finishes)
 *      — unless a higher band of the queue's shared bands holds a task (one load of
 *      `bands_used` says whether any ever did);
 *   4. the queue's shared bands, highest first; a drainer that takes a task there and sees more
 *      waiting draws one more drainer (op_queue_ramp_up);
 *   5. stealing: half of another worker's local run queue that holds this queue's tasks.
 *
 * A drainer that finds nothing marks itself idle in the queue's `slots` (one drainer of a queue
 * at a time; the others give their slot back at once), looks once more (bands and local run
 * queues), then lingers a few microseconds watching the bands: a submit that sees
 * it idle claims no new slot, and a drainer that pushes into its local run queue while another
 * idles hands that queue to the bands. Then it gives the slot back (op_queue_release_slot
 * re-checks, Dekker with the submitters).
 *
 * Busy accounting stays on the worker while it drains: finished tasks are subtracted from the
 * queue's `busy` in batches of OP_FINISH_BATCH and when it leaves, and submits from its bodies to the same queue take units
 * from a credit it takes ahead in chunks (op_drain_busy_add_one) instead of adding one each.
 * Everything the worker held (the hand-off, its local run queue) goes back to the queue before
 * its slot does, so no task waits for a worker that left.
 *
 * Threads: only the draining worker or spare touches its op_drain; thieves touch the local run
 * queues only through local_run_queue.c.
 */
#include "queue.h"
#include "../base/observe.h"

#define OP_LINGER_NS 3000   /* a drainer whose queue ran dry looks this long for more work
                               before giving its slot back (saves a slot + token round trip) */
#define OP_DRAIN_BUDGET 256 /* tasks run per token before other queues get a turn */
#define OP_CREDIT_CHUNK 16  /* busy units a drainer takes at once for its bodies' submits */
#define OP_FINISH_BATCH 32  /* finishes a drainer counts before it publishes them to `busy`: a
                               queue that never runs dry still unlinks what finished from its
                               registry, and its op_queue_unfinished lags by at most this per
                               drainer */

_Thread_local op_drain op_tls_drain;

void op_queue_count_started(op_queue_t *queue) {
    op_drain *drain = &op_tls_drain;
    if (OP_LIKELY(drain->queue == queue)) {
        drain->started++;
    } else {
        op_count_shared(&queue->started, 1);
    }
}

void op_queue_count_finished(op_queue_t *queue, op_task_t *task) {
    /* relaxed: the caller's own settling of the task ordered its state. */
    bool cancelled = (atomic_load_explicit(&task->state, memory_order_relaxed) & OP_STATE_CANCELLED) != 0;
    op_drain *drain = &op_tls_drain;
    if (OP_LIKELY(drain->queue == queue)) {
        drain->finished++;
        drain->cancelled += cancelled;
    } else {
        op_count_shared(&queue->finished, 1);
        if (cancelled) op_count_shared(&queue->cancelled, 1);
    }
}

void op_drain_flush_counts(void) {
    op_drain *drain = &op_tls_drain;
    op_queue_t *queue = drain->queue;
    if (!queue) return;
    if (drain->started) op_count_shared(&queue->started, drain->started);
    if (drain->finished) op_count_shared(&queue->finished, drain->finished);
    if (drain->cancelled) op_count_shared(&queue->cancelled, drain->cancelled);
    drain->started = drain->finished = drain->cancelled = 0;
}

bool op_drain_busy_add_one(op_queue_t *queue) {
    op_drain *drain = &op_tls_drain;
    if (drain->queue != queue) {
        op_queue_busy_add(queue, 1);
        return false;
    }
    if (drain->credit == 0) {
        /* The drainer's slot keeps busy above zero, so this add never takes the queue from idle
         * to busy; the chunk is given back when the drainer leaves. */
        op_queue_busy_add(queue, OP_CREDIT_CHUNK);
        drain->credit = OP_CREDIT_CHUNK;
    }
    drain->credit--;
    return true;
}

void op_drain_busy_return_one(op_queue_t *queue, bool from_credit) {
    if (from_credit && op_tls_drain.queue == queue) {
        op_tls_drain.credit++;
    } else {
        op_queue_busy_sub(queue, 1);
    }
}

bool op_drain_flush_local(void) {
    op_drain *drain = &op_tls_drain;
    if (!drain->local) return false;
    bool moved = false;
    for (void *entry; (entry = op_local_run_queue_pop(drain->local));) {
        op_queue_push_entry(drain->queue, entry);
        moved = true;
    }
    return moved;
}

/* Before the drainer may give up its slot: the task handed to it goes to the stash (the next
 * drainer takes it first), its local run queue to the bands. */
static void op_drain_put_back(op_queue_t *queue) {
    op_drain *drain = &op_tls_drain;
    if (drain->handed_off) {
        op_queue_stash(queue, drain->handed_off);
        drain->handed_off = NULL;
    }
    op_drain_flush_local();
}

/* Leaving the queue for good (the caller then settles busy, its last touch of the queue). The
 * contexts of the tasks we finished are counted as waiting for release before our units go
 * (context_release.c): released once we hold nothing of the queue. */
static void op_drain_detach(void) {
    op_drain *drain = &op_tls_drain;
    op_drain_flush_counts();
    if (drain->queue) op_release_adopt(drain->queue);
    if (drain->local) op_local_run_queue_retire(drain->local);
    drain->local = NULL;
    drain->queue = NULL;
    drain->credit = 0;
}

/* Leaves the queue but keeps its slot, handed to `pool` as a token: what we held goes back, the
 * count is settled while the slot keeps the queue alive, and the push is our last touch. */
static void op_drain_leave_with_token(op_queue_t *queue, op_pool *pool, uint64_t finished) {
    op_drain_put_back(queue);
    uint64_t sub = finished + op_tls_drain.credit;
    op_drain_detach();
    /* The token first, then our units: they keep the queue alive across the push; the
     * subtraction is our last touch. */
    op_pool_push_token(pool, &queue->token);
    op_queue_busy_sub(queue, sub);
}

/* Leaves the queue to release the contexts of the tasks we finished (context_release.c: they run
 * user code that may wait for this very queue, so we must hold none of its units): what we held
 * goes back, our slot goes to the pool as a token if work waits (we may have just put some back)
 * or back to the queue, and our caller releases them. Used when a batch of them waits
 * (op_release_batch_full): a queue that never runs dry still lets go of what finished. */
static void op_drain_leave_to_release(op_queue_t *queue, uint64_t finished) {
    op_drain_put_back(queue);
    uint64_t sub = finished + op_tls_drain.credit + 1; /* our count, credit and our slot's unit */
    op_drain_detach();
    op_queue_retain(queue); /* across the look below: our units may be the last */
    if (op_queue_has_ready(queue) || op_queue_release_slot(queue, false)) {
        /* Work waits (put back by us, or pushed meanwhile): the slot goes on with its unit. */
        op_pool_push_token(op_queue_pool(queue), &queue->token);
        sub--;
    }
    op_queue_busy_sub(queue, sub);
    op_queue_release(queue);
}

/* Serves `queue` with this worker's local run queue while the queue is wide. */
static void op_drain_attach_local(op_queue_t *queue, op_local_run_queue *ring) {
    op_drain *drain = &op_tls_drain;
    bool wide = op_queue_effective_width(queue) > 1;
    if (drain->local && !wide) {
        op_drain_flush_local(); /* narrowed to serial: keep the bands' order exact */
        op_local_run_queue_retire(drain->local);
        drain->local = NULL;
    } else if (!drain->local && ring && wide) {
        drain->local = ring;
        op_local_run_queue_serve(ring, queue);
    }
}

/* Gives back a slot when the queue was narrowed below its running count; true if we did. */
static bool op_queue_shrink_slot(op_queue_t *queue) {
    uint64_t word = atomic_load_explicit(&queue->slots, memory_order_relaxed);
    while (op_slots_running(word) > op_queue_effective_width(queue)) {
        /* seq_cst: as every change of `slots`. */
        if (atomic_compare_exchange_weak_explicit(&queue->slots, &word, word - 1,
                                                  memory_order_seq_cst, memory_order_relaxed)) {
            return true;
        }
    }
    return false;
}

/* A band above normal of the queue's shared bands may hold a task (so the local run queue,
 * which holds normal-band tasks only, must wait). */
static bool op_drain_higher_band_waits(op_queue_t *queue) {
    /* relaxed: a hint, see op_queue_note_band. */
    uint32_t used = atomic_load_explicit(&queue->bands_used, memory_order_relaxed);
    if (!(used & ~((UINT32_C(1) << (OP_PRIORITY_NORMAL + 1)) - 1))) return false;
    return op_ready_queue_maybe_nonempty_from(&queue->ready, OP_PRIORITY_HIGH);
}

/* Takes the next task of the queue (2. to 5. in the file comment), or NULL. */
static op_task_t *op_drain_take(op_queue_t *queue, op_pool *pool) {
    op_drain *drain = &op_tls_drain;
    op_task_t *task;
    if (drain->local && !op_drain_higher_band_waits(queue) &&
        atomic_load_explicit(&queue->stashed, memory_order_relaxed) == 0) {
        for (void *entry; (entry = op_local_run_queue_pop(drain->local));) {
            if (op_queue_claim_entry(entry, &task)) return task;
        }
    }
    task = op_queue_take_ready(queue);
    if (task) {
        op_queue_ramp_up(queue, false); /* more behind it, and no drainer idles: one more */
        return task;
    }
    if (drain->local) {
        for (void *entry; (entry = op_local_run_queue_pop(drain->local));) {
            if (op_queue_claim_entry(entry, &task)) return task;
        }
    }
    /* Steal only into an empty local run queue: what a steal brought beyond an entry that turns
     * out stale (a re-band's leftover) is taken first. */
    for (void *entry; (entry = op_pool_steal(pool, drain->local, queue));) {
        bool claimed = op_queue_claim_entry(entry, &task);
        while (!claimed && drain->local && (entry = op_local_run_queue_pop(drain->local))) {
            claimed = op_queue_claim_entry(entry, &task);
        }
        if (!claimed) continue;
        /* What we stole beyond this one is in our local run queue: another drainer may take
         * part of it. */
        if (drain->local && !op_local_run_queue_is_empty(drain->local)) {
            op_queue_ramp_up(queue, true);
        }
        return task;
    }
    return NULL;
}

/* The queue ran dry: marked idle, look again, then watch the bands a little while before the
 * slot goes back, unless another queue's token shows up meanwhile. One drainer of a queue idles
 * at a time (like the searching workers of tokio and Go, bounded so that pollers do not fight
 * over the lines every submit writes): when another one already does, we return at once.
 * Returns a task, or NULL; *marked says whether our idle mark is still set. */
static op_task_t *op_drain_linger(op_queue_t *queue, op_pool *pool, bool *marked) {
    *marked = false;
    /* relaxed first look; the compare-and-swap decides. */
    uint64_t word = atomic_load_explicit(&queue->slots, memory_order_relaxed);
    do {
        if (op_slots_idle(word) != 0) return NULL;
        /* seq_cst: the mark is ordered before our look at the bands and the local run queues
         * (Dekker with submitters and local pushers, who push, fence, then read `slots`). */
    } while (!atomic_compare_exchange_weak_explicit(&queue->slots, &word,
                                                    word + OP_SLOTS_IDLE_ONE,
                                                    memory_order_seq_cst, memory_order_relaxed));
    atomic_thread_fence(memory_order_seq_cst);
    op_task_t *task = op_drain_take(queue, pool);
    int64_t start = op_now_ns();
    int64_t now = start;
    while (!task && now - start < OP_LINGER_NS) {
        /* Pauses only, never sched_yield: while we are marked idle no submit claims a drainer,
         * so we must not give our CPU away (a submitter spinning on the same CPU would keep it
         * a whole time slice while its tasks wait for us; W7's paced stream waited 1 ms). */
        for (int i = 0; i < 16; i++) op_cpu_relax();
        if (op_pool_has_tokens(pool)) break;
        if (op_queue_has_ready(queue)) task = op_queue_take_ready(queue);
        now = op_now_ns();
    }
    if (!task) {
        *marked = true;
        return NULL;
    }
    /* seq_cst, then a fence before ramp-up's look at the bands: a submitter that saw us idle
     * claimed nothing, and the task we found may not be its; it pushed, fenced and read
     * `slots`, so after our un-marking and fence we see its push (Dekker) and draw a drainer. */
    atomic_fetch_sub_explicit(&queue->slots, OP_SLOTS_IDLE_ONE, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
    op_queue_ramp_up(queue, false);
    return task;
}

typedef enum { OP_RAN_FINISHED, OP_RAN_HANDED_OFF, OP_RAN_DEFERRED, OP_RAN_CARRIED } op_run_result;

/* Where a task that asks for another nice value goes (OP_RAN_CARRIED): the record, and the pool
 * to push it into. The caller pushes it once it holds nothing more of the queue to touch. */
typedef struct op_carry_out {
    op_carry *carry;
    op_pool *target;
} op_carry_out;

/* Runs one claimed task of `queue` on this worker or spare, at its nice value: a cancelled task
 * that does not ask to run is retired without its body; a deferred one goes back to waiting; a
 * manual-completion task keeps its slot until completed; a task whose nice value is another
 * pool's is carried there (carry.c: OP_RAN_CARRIED, *out says where). `carry` (NULL for a
 * drainer): the task came carried (carry.c), started already or not, with its slot or outside
 * the queue's slots; its token is what the body shows the monitor, and the finish hands nothing
 * off to a drainer. `pool_qos`: op_pool_qos(pool), read once by the caller. */
static op_run_result op_drain_execute(op_pool *pool, int pool_qos, op_queue_t *queue,
                                      op_task_t *task, op_carry *carry, op_carry_out *out) {
    int class_nice = op_worker_refresh_nice();
    bool started = carry && op_carry_started(carry);
    bool outside = carry && !op_carry_holds_slot(carry);
    bool changed = false;
    int nice = class_nice;
    if (started && op_carry_renice(carry) != OP_NICE_UNCHANGED) {
        /* Carried here with a thread priority this worker renices for (and back). */
        int target = op_nice_clamp_task(op_carry_renice(carry), class_nice);
        changed = target != class_nice && op_nice_set_current_thread(target) == 0;
        if (changed) nice = target;
    }
    /* The monitor and promoters find the body here from now on (promotion.c): published before
     * RUNNING, so a promoter that sees RUNNING (its compare-and-swap on the same word comes after
     * ours) sees it, and one that comes before is seen in `old`. */
    op_worker_body_begin(carry ? op_carry_token(carry) : &queue->token, task, queue, nice);
    uint32_t old;
    if (started) {
        /* seq_cst: after publishing the body (a seq_cst store), the Dekker pair with a promoter
         * that raised the task after it was carried (it sets the level, then looks for the
         * body): either it sees us, or we see its level and carry the task on to the raised
         * class below. */
        old = atomic_load_explicit(&task->state, memory_order_seq_cst);
    } else {
        /* acquire: pairs with the releases that made the task ready (dependencies' finish). */
        OP_RACE_WINDOW("run: claimed, before RUNNING");
        uint32_t running = OP_STATE_RUNNING | (outside ? OP_STATE_OUTSIDE_WIDTH : 0);
        old = atomic_fetch_or_explicit(&task->state, running, memory_order_acq_rel);
        if (OP_UNLIKELY(old & OP_STATE_FINISHED)) {
            /* Completed before we took it (op_task_complete on a queued manual-completion
             * task): already finished, only retired here. */
            op_worker_body_end(true);
            return OP_RAN_FINISHED;
        }
        if ((old & OP_STATE_CANCELLED) && !(task->flags & OP_TASK_RUN_WHEN_CANCELLED)) {
            op_worker_body_end(true);
            op_tls_drain.hand_off_allowed = !carry; /* cleared by the finish */
            op_queue_graph->finish(task);
            return OP_RAN_FINISHED;
        }
    }
    /* Fast path: a task of the pool's own class at thread priority 0.5 needs no syscall.
     * Otherwise the body is carried to where its nice value already is (carry.c), or, where that
     * is a renice this thread may undo, runs here after one. Its class is its own, its queue's,
     * or what it or its queue was promoted to (read from `old` and the queue: promotion.c). */
    int run_qos = op_task_run_qos(task, queue, old);
    if (OP_UNLIKELY(!started && run_qos > op_state_promoted_qos(old) &&
                    run_qos > (int)atomic_load_explicit((_Atomic int8_t *)&task->qos,
                                                        memory_order_relaxed) &&
                    run_qos > op_queue_own_qos(queue))) {
        op_promotion_note_queue_raise(task, run_qos); /* raised with its queue: reported */
    }
    if (op_task_nice_delta(task) != 0 || run_qos != pool_qos) {
        int renice, carried_renice;
        op_pool *target = op_carry_target(pool, task, run_qos, class_nice, &renice, &carried_renice);
        op_carry *next = target ? op_carry_prepare(carry, queue, task, carried_renice) : NULL;
        if (next) {
            op_worker_body_end(false); /* counted where it runs */
            if (changed) op_nice_set_current_thread(class_nice);
            out->carry = next;
            out->target = target;
            return OP_RAN_CARRIED;
        }
        /* Here: at a nice this thread may go to and back, or (no memory for the record) at our
         * own. */
        if (!target && renice != OP_NICE_UNCHANGED && !changed) {
            int to = op_nice_clamp_task(renice, class_nice);
            changed = to != class_nice && op_nice_set_current_thread(to) == 0;
            if (changed) {
                op_worker_body_nice(to);
                nice = to;
            }
        }
    }

    op_tls_task = task;
    op_tls_queue = queue;
    op_queue_count_started(queue);
    /* relaxed: the band, which op_task_set_priority may change at any time (a report). */
    OP_OBSERVE_START(task, queue, op_queue_label(queue), run_qos, nice,
                     atomic_load_explicit((_Atomic uint8_t *)&task->priority, memory_order_relaxed),
                     op_task_nice_delta(task));
    int64_t body_start = op_latency_started(task, queue, run_qos);
    if (body_start) op_worker_note_body_start(body_start);
    task->fn(op_task_user_context(task));
    /* Takes back what the monitor lent, and puts the thread back at the nice the body started
     * at if a promoter raised it. */
    op_worker_body_end(true);
    op_latency_ended(queue, run_qos, body_start);
    OP_OBSERVE_END(task);
    op_tls_task = NULL;
    op_tls_queue = NULL;

    if (changed) op_nice_set_current_thread(class_nice);

    if (OP_UNLIKELY(atomic_load_explicit(&task->state, memory_order_relaxed) & OP_STATE_DEFER)) {
        op_queue_graph->settle_deferred(task);
        return OP_RAN_DEFERRED;
    }
    if (task->flags & OP_TASK_MANUAL_COMPLETION) {
        /* Once BODY_DONE is set, op_task_complete on another thread may give back the task's
         * unit and its slot at once, and if the queue's last handle is gone, free the queue
         * while we still put back what we hold and settle (the hand-off below). So a drainer
         * holds a busy unit of its own across it, as credit (given back when it leaves). Not
         * needed when the body completed it already (the common case: a plain BlockOperation):
         * then the completion did not touch the queue. relaxed: our own RUNNING RMW ordered it.
         * A carrier touches nothing of the task or the queue after the handshake. */
        op_drain *drain = &op_tls_drain;
        if (!carry &&
            !(atomic_load_explicit(&task->state, memory_order_relaxed) & OP_STATE_FINISHED) &&
            drain->credit == 0) {
            op_queue_busy_add(queue, OP_CREDIT_CHUNK);
            drain->credit = OP_CREDIT_CHUNK;
        }
        /* acq_rel: the handshake with op_task_complete; the second of the two settles the
         * queue slot. If completion came first, we settle it like any finished task. */
        uint32_t after = atomic_fetch_or_explicit(&task->state, OP_STATE_BODY_DONE,
                                                  memory_order_acq_rel);
        OP_RACE_WINDOW("hand-off: body done, before settling");
        return (after & OP_STATE_FINISHED) ? OP_RAN_FINISHED : OP_RAN_HANDED_OFF;
    }
    op_tls_drain.hand_off_allowed = !carry; /* cleared by the finish */
    op_queue_graph->finish(task);
    return OP_RAN_FINISHED;
}

void op_drain_run_carried(op_carry *carry) {
    op_queue_t *queue = op_carry_queue(carry);
    op_task_t *task = op_carry_task(carry);
    bool holds_slot = op_carry_holds_slot(carry);
    op_carry_out out = {NULL, NULL};
    op_pool *pool = op_pool_current();
    op_run_result result = op_drain_execute(pool, op_pool_qos(pool), queue, task, carry, &out);
    if (result == OP_RAN_CARRIED) {
        /* Raised after it was carried here, before its body started: on to the raised class's
         * pool, with whatever it holds (the same record). */
        op_carry_push(out.carry, out.target, true); /* we leave: hand it over */
        return;
    }
    op_carry_free(carry);
    if (result == OP_RAN_FINISHED) {
        op_queue_count_finished(queue, task); /* before its unit goes */
        op_release_task(queue, task); /* its context: we give back its unit */
        op_task_release(task);        /* the queue's reference */
        /* The task's unit, and the slot with its unit when it carried one: our last touch of
         * the queue, may free it. */
        if (holds_slot) {
            op_carry_give_back_slot(queue, 2);
        } else {
            op_queue_busy_sub(queue, 1);
        }
    } else if (result == OP_RAN_DEFERRED && holds_slot) {
        op_carry_give_back_slot(queue, 1); /* the task is still counted (it comes back when ready) */
    }
    /* Handed off (manual completion, not complete yet): the completion settles it, slot
     * included unless OP_STATE_OUTSIDE_WIDTH (op_task_complete). */
    op_release_flush_on_worker(); /* what the body or the finish released: we hold nothing of it */
}

static void op_drain_token_run(op_token *token);

void op_drain_token(op_token *token) {
    op_drain_token_run(token);
    /* We hold nothing of the queue now: release the contexts of what we finished. */
    op_release_flush_on_worker();
}

static void op_drain_token_run(op_token *token) {
    op_queue_t *queue = op_queue_of_token(token);
    op_pool *pool = op_pool_current();
    op_local_run_queue *ring = op_worker_local_run_queue();
    /* The pool's class and placement never change: read once for the per-task checks. */
    int pool_qos = op_pool_qos(pool);
    const op_placement *pool_placement = op_pool_placement(pool);
    op_drain *drain = &op_tls_drain;
    drain->queue = queue;
    drain->local = NULL;
    drain->handed_off = NULL;
    drain->hand_off_allowed = false;
    drain->credit = 0;
    uint64_t finished = 0; /* finished tasks not yet subtracted from queue->busy */
    int budget = OP_DRAIN_BUDGET;
    for (;;) {
        if (atomic_load_explicit(&queue->suspended, memory_order_relaxed)) {
            op_drain_put_back(queue); /* before the slot goes: release_slot sees it */
            if (op_queue_release_slot(queue, false)) continue; /* resumed meanwhile */
            break;
        }
        /* relaxed: a first look; op_queue_shrink_slot decides with a compare-and-swap. */
        if (OP_UNLIKELY(op_slots_running(atomic_load_explicit(&queue->slots,
                                                              memory_order_relaxed)) >
                        op_queue_effective_width(queue))) {
            op_drain_put_back(queue); /* while we still hold the slot */
            if (op_queue_shrink_slot(queue)) {
                /* The queue is at its (new) width now: if work waits behind it while the other
                 * drainers' bodies block, the monitor must know (a body narrowed it, or made a
                 * default width of fewer slots than were running). */
                op_queue_note_waiting_at_width(queue);
                break;
            }
        }
        if (OP_UNLIKELY(!op_pool_class_serves(pool_qos, pool_placement, queue))) {
            /* The queue moved to another class or was placed elsewhere: hand our slot to the
             * workers that run it now. */
            op_drain_leave_with_token(queue, op_queue_pool(queue), finished);
            return;
        }
        op_drain_attach_local(queue, ring);
        op_task_t *task = drain->handed_off;
        if (task) {
            drain->handed_off = NULL; /* a pop would have returned it: op_queue_claim_for_drainer */
        } else {
            task = op_drain_take(queue, pool);
        }
        if (!task) {
            bool idle = false;
            if (!op_pool_has_tokens(pool)) task = op_drain_linger(queue, pool, &idle);
            if (!task) {
                op_drain_put_back(queue);
                if (op_queue_release_slot(queue, idle)) continue;
                break;
            }
        }
        /* acquire: if the task was submitted after the queue was suspended, taking it (acquire
         * on its cell) made the suspension visible, so this check cannot miss it. A task taken
         * in that window goes back to the front and the loop gives up the slot. */
        if (OP_UNLIKELY(atomic_load_explicit(&queue->suspended, memory_order_acquire))) {
            op_queue_stash(queue, task);
            continue;
        }
        /* The queue may have become narrower since the loop's top (its width lowered, or a
         * slot lent by a task asleep in a wait taken back): then the task goes back to the
         * front and the top of the loop gives our slot up. seq_cst: ordered after the pop, so
         * a change made before it is seen. */
        if (OP_UNLIKELY(op_slots_running(atomic_load_explicit(&queue->slots,
                                                              memory_order_seq_cst)) >
                        op_queue_effective_width(queue))) {
            op_queue_stash(queue, task);
            continue;
        }
        /* A task of a class above the queue's that reached the bands while the queue could not
         * send it out (suspended, or of explicit width, when it became ready): its own class's
         * workers run it now, and our slot goes on to the next task. */
        if (OP_UNLIKELY(atomic_load_explicit((_Atomic int8_t *)&task->qos, memory_order_relaxed) >
                        op_queue_own_qos(queue)) &&
            op_carry_taken_outside_width(queue, task)) {
            continue;
        }
        op_carry_out out;
        op_run_result result = op_drain_execute(pool, pool_qos, queue, task, NULL, &out);
        if (result == OP_RAN_DEFERRED) continue; /* still unfinished, still counted in busy */
        if (result == OP_RAN_CARRIED) {
            /* The task and our slot go to the pool at its nice value (carry.c); we leave the
             * queue, drawing one more drainer if the width allows. The carried slot's unit keeps
             * the queue alive across our subtraction; the push touches only the record. */
            op_drain_put_back(queue);
            uint64_t sub = finished + drain->credit;
            op_drain_detach();
            op_queue_dispatch_sub(queue, 1, sub);
            op_carry_push(out.carry, out.target, true); /* we leave the queue: hand it over */
            return;
        }
        if (result == OP_RAN_HANDED_OFF) {
            /* The slot now belongs to the running asynchronous task. Claim another for the
             * rest of the queue (a worker picks it up) and settle our count; the pushes or the
             * subtraction are our last touch of the queue. */
            OP_RACE_WINDOW("hand-off: the slot belongs to the task, before leaving");
            op_drain_put_back(queue);
            uint64_t sub = finished + drain->credit;
            op_drain_detach();
            op_queue_dispatch_sub(queue, 1, sub);
            return;
        }
        finished++;
        op_queue_count_finished(queue, task);
        /* Its context is ours to release (context_release.c): we give back its unit. */
        if (OP_UNLIKELY(queue->tracking)) op_release_task(queue, task);
        op_task_release(task); /* the queue's reference */
        if (OP_UNLIKELY(finished >= OP_FINISH_BATCH)) {
            bool compact = queue->tracking && op_registry_compaction_due(queue, finished);
            op_drain_flush_counts();
            /* Our slot's unit keeps busy above zero: this never takes the queue idle. */
            op_queue_busy_sub_held(queue, finished);
            finished = 0;
            /* Unlinks finished tasks from the registry (no user code: contexts are released
             * apart, context_release.c); a try-lock, left to the holder when it is busy. */
            if (compact) op_registry_compact_if_idle(queue);
        }
        /* A batch of contexts to release: to the helper (background class: it takes no CPU from
         * the work; a waiter raises it, context_release.c), or, when our last one is still there,
         * we leave to release it ourselves. */
        if (OP_UNLIKELY(op_release_batch_full()) && !op_release_hand_off(queue)) {
            op_drain_leave_to_release(queue, finished);
            return;
        }
        if (--budget == 0) {
            budget = OP_DRAIN_BUDGET;
            if (op_pool_has_tokens(pool)) {
                /* Let other queues run: our slot goes back to the pool as a token. */
                op_drain_leave_with_token(queue, pool, finished);
                return;
            }
            /* (The queue's QoS is re-checked at the top of the loop.) */
        }
    }
    uint64_t sub = finished + drain->credit + 1; /* + the slot */
    op_drain_detach();
    op_queue_busy_sub(queue, sub); /* last touch, may free the queue */
}
