/*
 * hop.c — a task whose nice value is not its drainer's runs on a thread that is already there.
 *
 * A queue's tasks are drained by the workers of the queue's class (drain.c). A task of another
 * QoS (its own qualityOfService), or with a threadPriority other than 0.5, asks for another nice
 * value. Renicing the drainer for the body and back works only with privilege: without
 * CAP_SYS_NICE a thread may raise its nice value but never lower it again, so a worker that
 * took a background task could never return to userInteractive. So the body hops instead:
 *   - a task of another class runs on a worker of its own class (as a queue of that class would
 *     run it; the queue's placement is kept: the placed pool of that class);
 *   - a thread priority runs on a worker already at the nice value it asks for: a class's pool
 *     whose table value it is, else a pool made for that nice value on first use
 *     (op_pool_for_nice, one worker per CPU, like a class's, leaving when idle as a placed
 *     pool's). With privilege, a thread priority renices the worker of the task's class there
 *     and back instead (two system calls, no pool per nice value); so does one on a placed
 *     queue (no pools per nice value and placement). A
 *     task whose body applies its thread priority itself (OP_TASK_BODY_APPLIES_THREAD_PRIORITY,
 *     Operation's start() around main()) is left to do so wherever it may renice and back.
 * The drainer hands the hop a token of its own (a record on its stack, pushed into the target
 * pool like a queue's token) and sleeps until the body returned; then it settles the task as
 * if the body had run on it (finish, deferral, manual completion, hand-off). It keeps the
 * queue's slot throughout, so width, order, suspension and barriers hold exactly as before.
 *
 * The body sees op_task_current() and op_queue_current() as on a drainer. A body that waits
 * visibly on the hop worker lends the queue's slot as a drainer's would (queue.c: the slot is
 * the queue's, whoever holds it); one the monitor finds asleep lends it through the hop token's
 * class, which forwards to the queue's token. The sleeping drainer shows the monitor a body of
 * its own (the `wait` token, which lends nothing): the CPU it leaves is what the hop worker
 * uses, but if tokens wait in its pool while it sleeps a whole tick, a spare stands in for it.
 * That breaks the cycle of two classes' workers all asleep in hops to each other.
 */
#include "queue.h"

typedef struct op_hop {
    op_token token; /* first: the pool hands this out */
    op_token wait;  /* what the sleeping drainer shows the monitor */
    op_task_t *task;
    op_queue_t *queue;
    int renice;                 /* a nice to apply around the body there, or OP_NICE_UNCHANGED */
    _Atomic uint32_t done;      /* OP_HOP_*: futex word */
} op_hop;

enum { OP_HOP_RUNNING = 0, OP_HOP_DONE = 1, OP_HOP_SLEEPING = 2 };

static void op_hop_drain(op_token *token) {
    op_hop *hop = (op_hop *)token;
    op_task_t *task = hop->task;
    op_queue_t *queue = hop->queue;
    int class_nice = op_worker_refresh_nice();
    bool changed = false;
    int nice = class_nice;
    if (hop->renice != OP_NICE_UNCHANGED) {
        int target = op_nice_clamp_task(hop->renice, class_nice);
        changed = target != class_nice && op_nice_set_current_thread(target) == 0;
        if (changed) nice = target;
    }
    op_worker_promotable_begin(task, queue, nice);
    /* seq_cst: after publishing the body (a seq_cst store), the Dekker pair with a promoter
     * that raised the task after its drainer chose us (it sets the level, then looks for the
     * body): either it sees us, or we see its level and raise ourselves where we may. */
    uint32_t state = atomic_load_explicit(&task->state, memory_order_seq_cst);
    int run_qos = op_task_run_qos(task, queue, state);
    /* Only a class above the one we were chosen for (a body that applies its own thread
     * priority keeps it to itself: no delta then, as the drainer chose). */
    int want = op_nice_of_class(run_qos) +
               (hop->renice != OP_NICE_UNCHANGED ? op_task_nice_delta(task) : 0);
    want = want < -20 ? -20 : want;
    if (OP_UNLIKELY(run_qos > op_pool_qos(op_pool_current()) && want < nice &&
                    op_nice_can_hold(want))) {
        op_pool_promote_running(task, NULL, want); /* ourselves, through the record */
    }
    op_tls_task = task;
    op_tls_queue = queue;
    op_worker_body_begin(token);
    task->fn(op_task_user_context(task));
    op_worker_body_end();
    op_tls_task = NULL;
    op_tls_queue = NULL;
    op_worker_promotable_end();
    if (changed) op_nice_set_current_thread(class_nice);
    /* release: the body's effects (and its state-word changes) before the drainer, which
     * acquires `done`, settles the task. After this store the record may be gone (the drainer
     * returns): the wake only hashes the address, and every futex wait re-checks its word. */
    if (atomic_exchange_explicit(&hop->done, OP_HOP_DONE, memory_order_release) == OP_HOP_SLEEPING) {
        op_futex_wake(&hop->done, 1);
    }
    /* Contexts the body's completions finished (context_release.c): only now, the hopper's
     * slot given back to its drainer, may their releases wait for the queue. */
    op_release_flush_on_worker();
}

/* The monitor saw the hopped body asleep: the queue's slot (held by the sleeping drainer) is
 * what may be lent, as for a body asleep on the drainer itself. The hop worker's own local run
 * queue holds nothing of the queue. */
static bool op_hop_lend_slot(op_token *token, op_local_run_queue_t *ring) {
    (void)ring;
    op_hop *hop = (op_hop *)token;
    /* A hopper running outside its queue's slots (own_class_run.c) holds none. relaxed: set
     * by the hopper's RUNNING read-modify-write before it pushed this token. */
    if (atomic_load_explicit(&hop->task->state, memory_order_relaxed) & OP_STATE_OUTSIDE_WIDTH) {
        return false;
    }
    return hop->queue->token.cls->lend_slot(&hop->queue->token, NULL);
}

static void op_hop_take_back_slot(op_token *token) {
    /* Called only after a lend that returned true. */
    op_queue_t *queue = ((op_hop *)token)->queue;
    queue->token.cls->take_back_slot(&queue->token);
}

static const op_token_class op_hop_token_class = {
    .drain = op_hop_drain,
    .lend_slot = op_hop_lend_slot,
    .take_back_slot = op_hop_take_back_slot,
};

/* The drainer asleep in a hop holds the queue's slot for the hopped body, which lends it if
 * it blocks: nothing more to lend here (counted blocked all the same: a spare stands in). */
static bool op_hop_wait_lend_slot(op_token *token, op_local_run_queue_t *ring) {
    (void)token;
    (void)ring;
    return false;
}

static void op_hop_wait_take_back_slot(op_token *token) { (void)token; }

static const op_token_class op_hop_wait_token_class = {
    .drain = NULL, /* never pushed into a pool */
    .lend_slot = op_hop_wait_lend_slot,
    .take_back_slot = op_hop_wait_take_back_slot,
};

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
static int op_hop_wanted_nice(op_task_t *task, int qos, int *delta) {
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

op_pool *op_hop_pool_for(const op_placement *placement, op_task_t *task, int qos, int *renice) {
    *renice = OP_NICE_UNCHANGED;
    int delta;
    int wanted = op_hop_wanted_nice(task, qos, &delta);
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

bool op_hop_run_body(op_pool *pool, op_queue_t *queue, op_task_t *task, int qos, int class_nice,
                     int *renice) {
    *renice = OP_NICE_UNCHANGED;
    int delta;
    int wanted = op_hop_wanted_nice(task, qos, &delta);
    const op_placement *placement = op_pool_placement(pool);
    op_pool *target;
    int hop_renice = OP_NICE_UNCHANGED;
    if (qos != op_pool_qos(pool)) {
        /* Where the task's nice value is (the same choice as for a task handed to its own
         * class's workers outside its queue's slots, own_class_run.c). */
        target = op_hop_pool_for(placement, task, qos, &hop_renice);
    } else {
        /* On its class's workers already, at its nice (or a body that renices around its main
         * part itself: delta 0 with a thread priority). */
        if (delta == 0) return false;
        if (placement || op_renice_undoable(wanted, class_nice)) {
            *renice = wanted; /* the drainer renices and back (clamped on a placed queue) */
            return false;
        }
        target = op_pool_at_nice(wanted);
    }
    if (target == pool) {
        *renice = hop_renice;
        return false;
    }
    op_hop hop = {.token = {.cls = &op_hop_token_class}, .wait = {.cls = &op_hop_wait_token_class},
                  .task = task, .queue = queue, .renice = hop_renice};
    atomic_init(&hop.done, OP_HOP_RUNNING);
    /* What this drainer holds in its local run queue goes to the bands first: the hopped body
     * may wait for exactly that, and nothing flushes a sleeping hopper's ring (the hop worker's
     * op_queue_will_block flushes its own; the wait token lends nothing). Found by review. */
    if (op_drain_flush_local()) op_queue_dispatch_sub(queue, 1, 0);
    op_worker_body_begin(&hop.wait);
    op_pool_push_token(target, &hop.token);
    /* A short look first (a body of a few microseconds), pauses only: the hop worker may share
     * our CPU, and it, not we, has work to do. Then sleep. acquire: pairs with the release in
     * op_hop_drain (the body's effects). */
    bool done = false;
    for (int i = 0; i < 64 && !done; i++) {
        done = atomic_load_explicit(&hop.done, memory_order_acquire) == OP_HOP_DONE;
        if (!done) op_cpu_relax();
    }
    uint32_t expected = OP_HOP_RUNNING;
    /* acquire both ways: on failure the body finished meanwhile (its effects); on success the
     * loop below acquires the DONE it waits for. */
    if (!done && atomic_compare_exchange_strong_explicit(&hop.done, &expected, OP_HOP_SLEEPING,
                                                         memory_order_acquire,
                                                         memory_order_acquire)) {
        while (atomic_load_explicit(&hop.done, memory_order_acquire) != OP_HOP_DONE) {
            op_futex_wait(&hop.done, OP_HOP_SLEEPING, OP_WAIT_FOREVER);
        }
    }
    op_worker_body_end(); /* waits out a monitor that is lending for us */
    return true;
}
