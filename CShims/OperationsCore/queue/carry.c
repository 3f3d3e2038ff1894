/*
 * carry.c — a body runs at its own nice value: the task is carried to a pool whose workers are
 * already there, with its queue slot when it holds one.
 *
 * One request, one path. A body asks for a nice value: its class's (its own QoS, its queue's,
 * or the class either was promoted to: op_task_run_qos) plus its thread priority's offset.
 * Renicing a worker for a body and back works only with privilege (without CAP_SYS_NICE a
 * thread may raise its nice value but never lower it again), so a body whose nice value is not
 * its worker's is carried to a pool that sits there (op_carry_pool_for): its class's workers
 * (on the queue's CPUs when placed), or, for a thread priority the process cannot apply there
 * and back, the pool made for that nice value (op_pool_for_nice: one worker per CPU, leaving
 * when idle). Where the worker may renice there and back (privilege, or a placed queue: no
 * pools per nice value and placement) it renices instead of carrying; a task whose body applies
 * its thread priority itself (OP_TASK_BODY_APPLIES_THREAD_PRIORITY, Operation's start() around
 * main()) is left to do so wherever it may renice and back.
 *
 * The carry is a token (op_carry: task, queue, whether it holds a slot), pushed into the
 * target pool like a queue's token; the worker that takes it (the carrier) runs the body as a
 * drainer would (drain.c, op_drain_run_carried: cancellation, promotion, deferral, manual
 * completion, finish) and settles it. Two ways in, one token:
 *   - with the slot (op_carry_prepare from a drainer that took a task of another nice value):
 *     the queue's width slot travels with the task — the drainer gives it up and leaves the
 *     queue (drawing another drainer if the width allows, drain.c), so no thread sleeps holding
 *     a slot; the carrier gives the slot back when the task is settled (or hands it on as the
 *     queue's token when work waits), and a manual-completion task keeps it until completed
 *     (op_task_complete gives it back). Width, order, suspension and barriers hold exactly as
 *     for a body run by its drainer: the slot is held until the task is settled.
 *   - outside the slots (op_carry_ready_outside_width, op_carry_taken_outside_width): a default-
 *     width queue counts its width per class, as Apple's runtime bounds a default-width queue
 *     per QoS class. A task whose class is above its queue's goes straight to its class's pool
 *     (its nice value's: thread priority included) when it becomes ready while the queue is not
 *     suspended, or when a drainer takes it from the bands (it reached them while the queue was
 *     suspended or of explicit width): it counts against its class's workers, not the queue's
 *     width. A userInteractive probe on a queue whose slots all run 1 ms background bodies
 *     starts in microseconds instead of waiting for a slot (W9). OP_STATE_OUTSIDE_WIDTH marks
 *     it: a manual completion gives back its busy unit only, a visible wait lends no slot, a
 *     promotion is not counted on its queue (nothing of the queue is ahead of it). Such tasks
 *     start in the order their class's pool hands out tokens, not by queuePriority among the
 *     queue's other ready tasks. A carrier that finds the queue suspended or of explicit width
 *     by the time it came gives the task back to the slots (the stash, first in line).
 *     Left in the queue: tasks of the queue's class or below, tasks of a queue of explicit
 *     width, executor jobs (a job's chain stays on the worker that runs it).
 * A carried task whose class was raised after it was carried (a promotion before its body
 * started) is carried on to the raised class's pool the same way; a body already running is
 * reniced in place (pool/running_body_promotion.c).
 *
 * The body sees op_task_current() and op_queue_current() as on a drainer. A body that waits
 * visibly on its carrier lends the queue's slot as a drainer's would (queue.c: the slot is the
 * queue's, whoever holds it); one the monitor finds asleep lends it through the carry token's
 * class, which forwards to the queue's token — when the carry holds a slot.
 *
 * Records come from the task cache (task_cache.c: made on one thread, freed on another). Out of
 * memory, the drainer runs the body itself at its own nice value; a task that would have gone
 * out of the slots stays in them.
 */
#include "queue.h"
#include "../base/observe.h"

struct op_carry {
    op_token token;  /* first: the pool hands this out; also what the body shows the monitor */
    op_task_t *task;
    op_queue_t *queue;
    int renice;      /* a nice value to apply around the body on the carrier, or OP_NICE_UNCHANGED */
    bool started;    /* RUNNING is set (by the drainer that carried it, or a carrier before) */
    bool holds_slot; /* carries one of the queue's slots and its busy unit */
};
_Static_assert(sizeof(op_carry) <= sizeof(op_task_t), "a carry record is a task cache block");

static void op_carry_drain(op_token *token);

/* The monitor saw the carried body asleep: the slot it carries is what may be lent, as for a
 * body asleep on a drainer (the carrier's own local run queue holds nothing of the queue). */
static bool op_carry_lend_slot(op_token *token, op_local_run_queue_t *ring) {
    (void)ring;
    op_carry *carry = (op_carry *)token;
    if (!carry->holds_slot) return false; /* outside the slots: nothing to lend */
    return carry->queue->token.cls->lend_slot(&carry->queue->token, NULL);
}

static void op_carry_take_back_slot(op_token *token) {
    /* Called only after a lend that returned true. */
    op_queue_t *queue = ((op_carry *)token)->queue;
    queue->token.cls->take_back_slot(&queue->token);
}

/* Where the carried task's nice value is now: a promotion that raised it while its record waited
 * in a busy pool moves it there (op_pool_rehome_tokens, on the monitor's tick for a pool whose
 * tokens wait, or when its queue leaves a pool), instead of waiting for a worker of the class it
 * was carried for (found by review: 146 ms behind busy background workers). Called with the
 * record taken out of the pool: nothing else touches it, so the renice its new carrier applies is
 * set here too. acquire: a promoter's level on the state word, and the queue's placement. */
static op_pool *op_carry_home(op_token *token) {
    op_carry *carry = (op_carry *)token;
    uint32_t state = atomic_load_explicit(&carry->task->state, memory_order_acquire);
    int qos = op_task_run_qos(carry->task, carry->queue, state);
    const op_placement *placement =
        atomic_load_explicit(&carry->queue->placement, memory_order_acquire);
    int renice;
    op_pool *home = op_carry_pool_for(placement, carry->task, qos, &renice);
    carry->renice = renice;
    return home;
}

static const op_token_class op_carry_token_class = {
    .drain = op_carry_drain,
    .lend_slot = op_carry_lend_slot,
    .take_back_slot = op_carry_take_back_slot,
    .home = op_carry_home,
};

static op_carry *op_carry_make(op_queue_t *queue, op_task_t *task, bool started, bool holds_slot) {
    op_carry *carry = (op_carry *)op_task_cache_alloc();
    if (!carry) return NULL;
    carry->token.cls = &op_carry_token_class;
    carry->task = task;
    carry->queue = queue;
    carry->renice = OP_NICE_UNCHANGED;
    carry->started = started;
    carry->holds_slot = holds_slot;
    return carry;
}

void op_carry_free(op_carry *carry) { op_task_cache_free((op_task_t *)carry); }

op_task_t *op_carry_task(const op_carry *carry) { return carry->task; }
op_queue_t *op_carry_queue(const op_carry *carry) { return carry->queue; }
bool op_carry_started(const op_carry *carry) { return carry->started; }
bool op_carry_holds_slot(const op_carry *carry) { return carry->holds_slot; }
int op_carry_renice(const op_carry *carry) { return carry->renice; }
op_token *op_carry_token(op_carry *carry) { return &carry->token; }

/* ---- where a body's nice value is ------------------------------------------------------------ */

/* Whether the calling worker may go to `wanted` for a body and come back to `class_nice`. */
static bool op_renice_undoable(int wanted, int class_nice) {
    return op_nice_can_hold(wanted) && op_nice_can_hold(class_nice);
}

/* A pool whose workers sit at `wanted`: a class's pool when the table gives that class exactly
 * this value, else the pool made for the value. Below the floor no thread can be: clamped (and
 * reported) to the floor. */
static op_pool *op_pool_at_nice(int wanted) {
    int floor = op_runtime_nice_floor();
    if (wanted < floor) wanted = op_nice_clamp_class(wanted, floor);
    for (int qos = OP_QOS_COUNT - 1; qos >= 0; qos--) {
        if (op_nice_of_class(qos) == wanted) return op_pool_for_nice_of_class((op_qos_t)qos);
    }
    return op_pool_for_nice(wanted);
}

/* The nice value a body of `task` at class `qos` asks for (-20 … 19) and its offset from the
 * class's (*delta): 0 for a body that renices around its main part itself where it may
 * (OP_TASK_BODY_APPLIES_THREAD_PRIORITY), which then runs at its class's value. */
static int op_carry_wanted_nice(op_task_t *task, int qos, int *delta) {
    *delta = op_task_nice_delta(task);
    int wanted = op_nice_of_class(qos) + *delta;
    wanted = wanted < -20 ? -20 : wanted > 19 ? 19 : wanted;
    if ((task->flags & OP_TASK_BODY_APPLIES_THREAD_PRIORITY) &&
        op_renice_undoable(wanted, op_nice_of_class(qos))) {
        *delta = 0;
        wanted = op_nice_of_class(qos);
    }
    return wanted;
}

op_pool *op_carry_pool_for(const op_placement *placement, op_task_t *task, int qos, int *renice) {
    *renice = OP_NICE_UNCHANGED;
    int delta;
    int wanted = op_carry_wanted_nice(task, qos, &delta);
    if (placement) {
        /* Its own class's workers on the queue's CPUs; a thread priority renices there. */
        if (delta != 0) *renice = wanted;
        return op_placement_pool(placement, (op_qos_t)qos);
    }
    if (delta != 0 && !op_renice_undoable(wanted, op_nice_of_class(qos))) {
        return op_pool_at_nice(wanted); /* workers already at that nice value */
    }
    /* Its class's workers; with privilege a thread priority renices there and back (no pools
     * per nice value where they are not needed). */
    if (delta != 0) *renice = wanted;
    return op_pool_for((op_qos_t)qos);
}

op_pool *op_carry_target(op_pool *pool, op_task_t *task, int qos, int class_nice, int *renice,
                         int *carried_renice) {
    *renice = OP_NICE_UNCHANGED;
    *carried_renice = OP_NICE_UNCHANGED;
    int delta;
    int wanted = op_carry_wanted_nice(task, qos, &delta);
    op_pool *target;
    if (qos != op_pool_qos(pool)) {
        target = op_carry_pool_for(op_pool_placement(pool), task, qos, carried_renice);
    } else {
        /* On its class's workers already, at its nice (or a body that renices around its main
         * part itself: delta 0 with a thread priority). */
        if (delta == 0) return NULL;
        if (op_pool_placement(pool) || op_renice_undoable(wanted, class_nice)) {
            *renice = wanted; /* this worker renices and back (clamped on a placed queue) */
            return NULL;
        }
        target = op_pool_at_nice(wanted);
    }
    if (target == pool) {
        *renice = *carried_renice;
        *carried_renice = OP_NICE_UNCHANGED;
        return NULL;
    }
    return target;
}

/* ---- carrying ---------------------------------------------------------------------------------- */

op_carry *op_carry_prepare(op_carry *carry, op_queue_t *queue, op_task_t *task, int renice) {
    if (!carry) carry = op_carry_make(queue, task, true, true);
    if (!carry) return NULL;
    carry->started = true;
    carry->renice = renice;
    return carry;
}

void op_carry_push(op_carry *carry, op_pool *target, bool handing_over) {
    op_worker_count_carry();
    OP_OBSERVE_CARRY(carry->task, carry->queue, op_pool_qos(target), op_pool_wanted_nice(target));
    OP_RACE_WINDOW("carry: before the push into the target pool");
    if (handing_over) {
        op_pool_hand_over_token(target, &carry->token); /* we leave: our CPU's worker may run it */
    } else {
        op_pool_push_token(target, &carry->token);
    }
}

/* The carrier came for a task that was to run outside the slots and has not started: a queue
 * suspended or given an explicit width meanwhile gets it back under its slots, first in line. */
static bool op_carry_back_to_slots(op_carry *carry) {
    op_queue_t *queue = carry->queue;
    op_task_t *task = carry->task;
    OP_RACE_WINDOW("carry: the carrier came, before looking at the queue's state");
    /* seq_cst: a suspension (stored seq_cst) or a width set before the carrier came and ordered
     * before it by the caller is seen; one racing with this load has no order against the
     * start, as for a drainer that took a task a moment before. Given back, the task is found
     * by the dispatch below or by the setter's own dispatch (its fence pairs with the stash, as
     * in op_queue_release_slot). */
    if (OP_LIKELY(!atomic_load_explicit(&queue->suspended, memory_order_seq_cst) &&
                  atomic_load_explicit(&queue->width, memory_order_seq_cst) < 0)) {
        return false;
    }
    op_carry_free(carry);
    /* A unit of our own keeps the queue alive across the stash, after which a drainer may run
     * and finish the task; the dispatch's subtraction is our last touch. relaxed: the stash's
     * release publishes the cleared bit to the drainer that takes the task. */
    atomic_fetch_and_explicit(&task->state, ~(uint32_t)OP_STATE_OUTSIDE_WIDTH, memory_order_relaxed);
    op_queue_busy_add(queue, 1);
    op_queue_stash(queue, task);
    op_queue_dispatch_sub(queue, 1, 1);
    return true;
}

static void op_carry_drain(op_token *token) {
    op_carry *carry = (op_carry *)token;
    if (!carry->started && !carry->holds_slot && op_carry_back_to_slots(carry)) return;
    op_drain_run_carried(carry);
}

void op_carry_give_back_slot(op_queue_t *queue, uint64_t units) {
    if (op_queue_release_slot(queue, false)) {
        /* Re-claimed for waiting work: the slot goes on as the queue's token with its unit; the
         * other units keep the queue alive across the push. */
        op_pool_hand_over_token(op_queue_pool(queue), &queue->token); /* we are done with it */
        units--;
    }
    if (units) op_queue_busy_sub(queue, units); /* our last touch: may free the queue */
}

/* ---- outside the slots ------------------------------------------------------------------------- */

/* The pool `task` goes to outside the slots, or NULL when it stays under them. */
static op_pool *op_carry_outside_target(op_queue_t *queue, op_task_t *task) {
    /* relaxed: the caller's own settings, or a race with a setter that op_carry_back_to_slots
     * resolves. */
    if (atomic_load_explicit(&queue->width, memory_order_relaxed) >= 0 ||
        atomic_load_explicit(&queue->suspended, memory_order_relaxed)) {
        return NULL;
    }
    /* An executor's job stays where its chain runs (a drainer's local run queue, jobs pushed
     * by a running job): flags are written before the submit. */
    int qos = atomic_load_explicit((_Atomic int8_t *)&task->qos, memory_order_relaxed);
    if ((task->flags & OP_TASK_IS_JOB) ||
        qos <= (int)atomic_load_explicit(&queue->qos, memory_order_relaxed)) {
        return NULL;
    }
    /* acquire: pairs with the release store in op_queue_place (the placement is built). */
    const op_placement *placement = atomic_load_explicit(&queue->placement, memory_order_acquire);
    int renice;
    return op_carry_pool_for(placement, task, qos, &renice);
}

bool op_carry_ready_outside_width(op_queue_t *queue, op_task_t *task) {
    op_pool *target = op_carry_outside_target(queue, task);
    if (!target) return false;
    op_carry *carry = op_carry_make(queue, task, false, false);
    if (!carry) return false;
    OP_RACE_WINDOW("carry: before taking the task out of the slots");
    /* acq_rel: against a re-band's CAS and a drainer's claim on the same word. A re-band that
     * came first pushed an entry into the bands; if a drainer claimed that entry (TAKEN) before
     * us, the task is the drainer's and we are done (it runs there, under a slot: found by
     * review, a task ran twice). Otherwise our TAKEN makes that entry stale, and a re-band after
     * us sees TAKEN and pushes nothing. */
    uint32_t state = atomic_load_explicit(&task->state, memory_order_relaxed);
    do {
        if (state & OP_STATE_TAKEN) {
            op_carry_free(carry);
            return true; /* handled: a drainer took it */
        }
    } while (!atomic_compare_exchange_weak_explicit(&task->state, &state,
                                                    state | OP_STATE_TAKEN | OP_STATE_OUTSIDE_WIDTH,
                                                    memory_order_acq_rel, memory_order_relaxed));
    op_carry_push(carry, target, false); /* the last touch of the queue: the task's unit keeps it */
    return true;
}

bool op_carry_taken_outside_width(op_queue_t *queue, op_task_t *task) {
    op_pool *target = op_carry_outside_target(queue, task);
    if (!target) return false;
    op_carry *carry = op_carry_make(queue, task, false, false);
    if (!carry) return false;
    /* relaxed: the task is ours (claimed); the token push publishes the bit with the task. */
    atomic_fetch_or_explicit(&task->state, OP_STATE_OUTSIDE_WIDTH, memory_order_relaxed);
    op_carry_push(carry, target, false); /* the caller goes on running (a body, a drainer) */
    return true;
}
