/*
 * idle_wait.c — waiting for a queue to hold no unfinished task: blocked (op_queue_wait) or
 * notified (op_queue_notify_idle, for bindings that must not block a thread, such as Swift's
 * async waitUntilAllOperationsAreFinished).
 *
 * Both register in `idle_waiters` and then re-read `busy`; the thread that takes `busy` to
 * zero (op_queue_busy_sub) reads `idle_waiters` after its subtraction. Both sides are seq_cst
 * (a Dekker pair), so either the waiter sees the queue idle or the last finisher sees the
 * waiter, never neither. The finisher then bumps the futex word `idle_epoch` and wakes every
 * blocked waiter, and runs the notices registered so far.
 *
 * Notices are a list under `idle_lock`, touched only by registrations and by the idle path of
 * a queue that has notices — never on the submit → run → finish path. Each notice is taken
 * from the list under the lock by exactly one thread (the last finisher, or the registrar that
 * saw the queue idle itself), which calls it once, outside the lock.
 */
#include "queue.h"

#include <errno.h>

struct op_idle_notice {
    op_task_fn fn;
    void *context;
    struct op_idle_notice *next;
};

/* Takes every notice registered so far and calls each once, oldest first. */
static void op_queue_run_idle_notices(op_queue_t *queue) {
    /* relaxed: a hint that spares the lock when nobody registered a notice; a notice pushed
     * after this load is run by its registrar, which re-reads `busy` after registering. */
    if (!atomic_load_explicit(&queue->idle_notices, memory_order_relaxed)) return;
    /* seq_cst, as every read of `busy` here: the thread that took the queue idle calls this after
     * its idle work (a registry compaction releasing many contexts may take milliseconds). Work
     * added meanwhile, and a notice registered after it, must not be told the queue is idle: the
     * finisher that next takes the queue idle runs the notices (an await of
     * waitUntilAllOperationsAreFinished returned with 355 of 10 000 operations not run yet). */
    if (atomic_load_explicit(&queue->busy, memory_order_seq_cst) != 0) return;
    pthread_mutex_lock(&queue->idle_lock);
    /* relaxed: the lock orders the list. */
    struct op_idle_notice *list = atomic_exchange_explicit(&queue->idle_notices, NULL,
                                                           memory_order_relaxed);
    pthread_mutex_unlock(&queue->idle_lock);
    /* The list is newest first: reverse it so notices run in registration order. */
    struct op_idle_notice *ordered = NULL;
    while (list) {
        struct op_idle_notice *next = list->next;
        list->next = ordered;
        ordered = list;
        list = next;
    }
    while (ordered) {
        struct op_idle_notice *notice = ordered;
        ordered = notice->next;
        /* relaxed: only a count; the Dekker pair is the add in op_queue_notify_idle. */
        atomic_fetch_sub_explicit(&queue->idle_waiters, 1, memory_order_relaxed);
        notice->fn(notice->context);
        free(notice);
    }
}

void op_queue_wake_idle_waiters(op_queue_t *queue) {
    /* release: a waiter that sees the new epoch sees everything before it. */
    atomic_fetch_add_explicit(&queue->idle_epoch, 1, memory_order_release);
    op_futex_wake(&queue->idle_epoch, INT32_MAX);
    op_queue_run_idle_notices(queue);
}

void op_queue_destroy_idle_notices(op_queue_t *queue) {
    struct op_idle_notice *list = atomic_load_explicit(&queue->idle_notices, memory_order_relaxed);
    while (list) {
        struct op_idle_notice *next = list->next;
        free(list);
        list = next;
    }
    pthread_mutex_destroy(&queue->idle_lock);
}

int op_queue_notify_idle(op_queue_t *queue, op_task_fn fn, void *context) {
    if (!queue || !fn) return EINVAL;
    /* seq_cst: an idle queue needs no registration (and no allocation). */
    if (atomic_load_explicit(&queue->busy, memory_order_seq_cst) == 0) {
        fn(context);
        return 0;
    }
    struct op_idle_notice *notice = malloc(sizeof *notice);
    if (!notice) return ENOMEM;
    /* Our own reference: once the notice is in the list, the last finisher may run it (and fn
     * may drop the caller's handle) before we are done with the queue below. */
    op_queue_retain(queue);
    notice->fn = fn;
    notice->context = context;
    pthread_mutex_lock(&queue->idle_lock);
    /* relaxed: the lock orders the list. */
    notice->next = atomic_load_explicit(&queue->idle_notices, memory_order_relaxed);
    atomic_store_explicit(&queue->idle_notices, notice, memory_order_relaxed);
    pthread_mutex_unlock(&queue->idle_lock);
    /* seq_cst: register, then re-read busy (Dekker with op_queue_busy_sub). If the queue went
     * idle before the finisher could see us, we run the notices ourselves; the lock hands each
     * notice to one caller only. */
    atomic_fetch_add_explicit(&queue->idle_waiters, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&queue->busy, memory_order_seq_cst) == 0) {
        op_queue_run_idle_notices(queue);
    }
    op_queue_release(queue);
    return 0;
}

static int op_queue_wait_promoted(op_queue_t *queue, int64_t timeout_ns, int *promoted);

int op_queue_wait(op_queue_t *queue, int64_t timeout_ns) {
    if (!queue) return EINVAL;
    if (op_tls_queue == queue) return EDEADLK;
    int promoted = -1;
    int rc = op_queue_wait_promoted(queue, timeout_ns, &promoted);
    /* The raise of the queue for this wait ends with it (promotion.c). */
    if (promoted >= 0) op_queue_unpromote(queue, (op_qos_t)promoted);
    return rc;
}

/* The queue is idle: unlink what finished from its registry and wait for the contexts of its
 * finished tasks that threads still hold for release (context_release.c), within the deadline. */
static int op_queue_wait_released(op_queue_t *queue, int64_t deadline) {
    op_registry_compact_now(queue);
    return op_release_wait(queue, deadline);
}

/* The wait; before it first sleeps it raises the queue to the calling thread's class, if that
 * is higher than the queue's (*promoted: the class, for the caller to undo). */
static int op_queue_wait_promoted(op_queue_t *queue, int64_t timeout_ns, int *promoted) {
    bool looked = false;
    int64_t deadline = timeout_ns >= 0 ? op_now_ns() + timeout_ns : -1;
    int64_t start = op_now_ns(), now = start;
    while (atomic_load_explicit(&queue->busy, memory_order_seq_cst) != 0 &&
           now - start < OP_WAIT_SPIN_NS && (deadline < 0 || now < deadline)) {
        op_spin_pause(now - start);
        now = op_now_ns();
    }
    for (;;) {
        if (atomic_load_explicit(&queue->busy, memory_order_seq_cst) == 0) {
            /* Finished tasks' contexts are released before the wait returns. */
            return op_queue_wait_released(queue, deadline);
        }
        uint32_t epoch = atomic_load_explicit(&queue->idle_epoch, memory_order_acquire);
        /* seq_cst: register, then re-read busy (Dekker with op_queue_busy_sub). */
        atomic_fetch_add_explicit(&queue->idle_waiters, 1, memory_order_seq_cst);
        if (atomic_load_explicit(&queue->busy, memory_order_seq_cst) == 0) {
            atomic_fetch_sub_explicit(&queue->idle_waiters, 1, memory_order_relaxed);
            return op_queue_wait_released(queue, deadline);
        }
        int64_t left = -1;
        if (deadline >= 0) {
            left = deadline - op_now_ns();
            if (left <= 0) {
                atomic_fetch_sub_explicit(&queue->idle_waiters, 1, memory_order_relaxed);
                return ETIMEDOUT;
            }
        }
        if (!looked) {
            looked = true;
            if (op_promotion_enabled()) {
                op_qos_t qos = op_current_thread_qos();
                if (qos > op_queue_effective_qos(queue) && op_queue_promote(queue, qos) == 0) {
                    *promoted = (int)qos;
                }
            }
        }
        op_queue_will_block();
        op_futex_wait(&queue->idle_epoch, epoch, left);
        op_queue_did_unblock();
        atomic_fetch_sub_explicit(&queue->idle_waiters, 1, memory_order_relaxed);
    }
}
