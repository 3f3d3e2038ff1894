/*
 * task.c — the task object: creation, attributes, references and what its state says. It calls
 * nothing above it (the dependency graph in dependencies.c, the queues in queue.c): whoever
 * holds a task may ask it anything here from any thread.
 *
 * A task's last reference frees it, and with it the dependency edges it owns (op_edge, one per
 * dependency it was given, see dependencies.c); a task released while others still wait for it
 * returns their edges' references, so their memory is freed too (they stay blocked, as with
 * Foundation). Memory comes from, and goes back to, the task cache (task_cache.c).
 */
#include "base.h"

#include <errno.h>
#include <math.h>

_Thread_local op_task_t *op_tls_task = NULL;

void op_task_attr_init(op_task_attr_t *attr) {
    if (!attr) return;
    attr->priority = OP_PRIORITY_NORMAL;
    attr->qos = OP_QOS_INHERIT;
    attr->thread_priority = 0.5;
    attr->flags = 0;
    attr->on_finish = NULL;
}

op_task_t *op_task_create(op_task_fn fn, void *context, const op_task_attr_t *attr) {
    op_task_attr_t defaults;
    if (!attr) {
        op_task_attr_init(&defaults);
        attr = &defaults;
    }
    if (!fn || (unsigned)attr->priority >= OP_PRIORITY_COUNT || attr->qos < OP_QOS_INHERIT ||
        attr->qos >= OP_QOS_COUNT || !(attr->thread_priority >= 0.0) ||
        attr->thread_priority > 1.0 ||
        (attr->flags & ~(uint32_t)(OP_TASK_RUN_WHEN_CANCELLED | OP_TASK_MANUAL_COMPLETION |
                                    OP_TASK_BODY_APPLIES_THREAD_PRIORITY))) {
        errno = EINVAL;
        return NULL;
    }
    op_task_t *task = op_task_cache_alloc();
    if (!task) {
        errno = ENOMEM;
        return NULL;
    }
    op_task_init(task, fn, context, attr);
    return task;
}

void op_task_init(op_task_t *task, op_task_fn fn, void *context, const op_task_attr_t *attr) {
    atomic_init(&task->state, 0);
    atomic_init(&task->refs, 1);
    atomic_init(&task->pending, OP_PENDING_HOLD);
    task->fn = fn;
    task->context = context;
    atomic_init(&task->queue, NULL);
    atomic_init(&task->dependents, NULL);
    atomic_init(&task->own_edges, NULL);
    atomic_init(&task->holds, 0);
    task->registry_next = NULL;
    task->barrier_seq = 0;
    task->priority = (uint8_t)attr->priority;
    task->qos = (int8_t)attr->qos;
    /* The default (0.5) without a call to lround. */
    task->nice_delta = attr->thread_priority == 0.5 ? 0
                       : (int8_t)lround((0.5 - attr->thread_priority) * 10.0);
    task->flags = (uint8_t)attr->flags;
    if (attr->on_finish) {
        op_task_ext *ext = malloc(sizeof *ext);
        if (!ext) op_fatal("operations: out of memory creating a task");
        ext->context = context;
        ext->on_finish = attr->on_finish;
        task->context = ext;
        task->flags |= OP_TASK_HAS_EXT;
    }
}

void op_task_retain(op_task_t *task) {
    /* relaxed: taking a reference needs no ordering, the caller already holds one. */
    atomic_fetch_add_explicit(&task->refs, 1, memory_order_relaxed);
}

static void op_task_destroy(op_task_t *task) {
    /* A dependency released without ever finishing: its dependents stay blocked (as with
     * Foundation, they wait for it forever), but the edges' references are returned. A load,
     * not an exchange: only a holder of a reference pushes onto the list (add_dependency's
     * caller holds the dependency), so nothing does once the last one is gone; acquire (with
     * the acq_rel decrement before it) sees the edges pushed. */
    op_edge *list = atomic_load_explicit(&task->dependents, memory_order_acquire);
    while (list && list != OP_EDGES_CLOSED) {
        op_edge *next = list->next_in_dependency;
        op_task_release(list->dependent);
        list = next;
    }
    op_edge *owned = atomic_load_explicit(&task->own_edges, memory_order_acquire);
    while (owned) {
        op_edge *next = owned->next_owned;
        op_task_cache_free((op_task_t *)owned);
        owned = next;
    }
    if (task->flags & OP_TASK_HAS_EXT) free(task->context);
    op_task_cache_free(task);
}

/* Tasks whose last reference this thread dropped while it was destroying another one: freed
 * by the outermost destroy's loop, so freeing a long unfinished chain (each task holds its
 * dependents) takes constant stack. Chained through registry_next, unused by a dead task. */
static _Thread_local op_task_t *op_tls_dead_tasks;
static _Thread_local bool op_tls_destroying;

void op_task_release(op_task_t *task) {
    if (!task) return;
    /* acq_rel: the last release must see every other owner's writes before freeing (acquire),
     * and our own writes must be visible to whoever frees (release). */
    if (atomic_fetch_sub_explicit(&task->refs, 1, memory_order_acq_rel) != 1) return;
    task->registry_next = op_tls_dead_tasks;
    op_tls_dead_tasks = task;
    if (op_tls_destroying) return;
    op_tls_destroying = true;
    while (op_tls_dead_tasks) {
        op_task_t *dead = op_tls_dead_tasks;
        op_tls_dead_tasks = dead->registry_next;
        op_task_destroy(dead);
    }
    op_tls_destroying = false;
}

op_priority_t op_task_priority(const op_task_t *task) {
    /* relaxed: a plain value, no other memory hangs on it. */
    return (op_priority_t)atomic_load_explicit((_Atomic uint8_t *)&((op_task_t *)task)->priority,
                                               memory_order_relaxed);
}

int op_task_qos(const op_task_t *task) {
    /* relaxed: as op_task_priority. */
    return atomic_load_explicit((_Atomic int8_t *)&((op_task_t *)task)->qos, memory_order_relaxed);
}

bool op_task_is_on_queue(const op_task_t *task, const op_queue_t *queue) {
    if (!task || !queue) return false;
    /* acquire: SUBMITTED orders the queue pointer (op_queue_submit stores it first, and a
     * submission that fails resets it before SUBMITTED is ever set). The pointer is compared,
     * never dereferenced. */
    if (!(atomic_load_explicit(&((op_task_t *)task)->state, memory_order_acquire) &
          OP_STATE_SUBMITTED)) {
        return false;
    }
    return atomic_load_explicit(&((op_task_t *)task)->queue, memory_order_relaxed) == queue;
}

int op_task_set_qos(op_task_t *task, int qos) {
    if (!task || qos < OP_QOS_INHERIT || qos >= OP_QOS_COUNT) return EINVAL;
    atomic_store_explicit((_Atomic int8_t *)&task->qos, (int8_t)qos, memory_order_relaxed);
    return 0;
}

int op_task_set_thread_priority(op_task_t *task, double thread_priority) {
    if (!task || thread_priority != thread_priority) return EINVAL;
    if (thread_priority < 0.0) thread_priority = 0.0;
    if (thread_priority > 1.0) thread_priority = 1.0;
    /* relaxed: read by the worker that runs the task next, after the acquire that claimed it;
     * a change racing with a start applies from the next run, as op_task_set_qos. */
    atomic_store_explicit((_Atomic int8_t *)&task->nice_delta,
                          (int8_t)lround((0.5 - thread_priority) * 10.0), memory_order_relaxed);
    return 0;
}

int op_task_nice_delta(const op_task_t *task) {
    /* relaxed: see op_task_set_thread_priority. */
    return atomic_load_explicit((_Atomic int8_t *)&((op_task_t *)task)->nice_delta,
                                memory_order_relaxed);
}

uint32_t op_task_unfinished_dependencies(const op_task_t *task) {
    op_task_t *t = (op_task_t *)task;
    uint32_t pending = atomic_load_explicit(&t->pending, memory_order_acquire);
    uint32_t holds = atomic_load_explicit(&t->holds, memory_order_relaxed);
    uint32_t count = pending & (OP_PENDING_HOLD - 1);
    return count > holds ? count - holds : 0; /* a snapshot: the two reads are not atomic */
}

bool op_task_is_cancelled(const op_task_t *task) {
    return atomic_load_explicit(&((op_task_t *)task)->state, memory_order_acquire) &
           OP_STATE_CANCELLED;
}

bool op_task_is_executing(const op_task_t *task) {
    uint32_t state = atomic_load_explicit(&((op_task_t *)task)->state, memory_order_acquire);
    return (state & OP_STATE_RUNNING) && !(state & OP_STATE_FINISHED);
}

bool op_task_runs_outside_width(const op_task_t *task) {
    /* relaxed: a report (set when handed out, cleared when given back). */
    return atomic_load_explicit(&((op_task_t *)task)->state, memory_order_relaxed) &
           OP_STATE_OUTSIDE_WIDTH;
}

bool op_task_is_finished(const op_task_t *task) {
    return atomic_load_explicit(&((op_task_t *)task)->state, memory_order_acquire) &
           OP_STATE_FINISHED;
}

bool op_task_finish_is_over(const op_task_t *task) {
    /* acquire: pairs with the finisher's acq_rel fetch_or of RELEASED (dependencies.c), so the
     * count-downs and on_finish's writes are visible once it reads true. */
    return atomic_load_explicit(&((op_task_t *)task)->state, memory_order_acquire) &
           OP_STATE_RELEASED;
}

bool op_task_is_ready(const op_task_t *task) {
    if (op_task_is_cancelled(task)) return true;
    return op_task_unfinished_dependencies(task) == 0;
}

void *op_task_context(const op_task_t *task) { return op_task_user_context(task); }

void op_task_set_context(op_task_t *task, void *context) {
    if (!task) return;
    /* Before submission: published by submit's release. */
    if (task->flags & OP_TASK_HAS_EXT) ((op_task_ext *)task->context)->context = context;
    else task->context = context;
}

op_task_t *op_task_current(void) { return op_tls_task; }

op_task_t *op_task_swap_current(op_task_t *task) {
    op_task_t *previous = op_tls_task;
    op_tls_task = task;
    return previous;
}

_Static_assert(sizeof(op_task_t) == 72, "a task is 72 bytes (an 80-byte malloc chunk); see op_task");

