/*
 * running_body_promotion.c — QoS promotion of bodies already running on a worker (the part of
 * promotion.c that needs the workers): a promoter finds the worker whose body runs the raised
 * task (or a task of the raised queue) and renices its thread; the thread puts itself back when
 * the body returned.
 *
 * Each worker publishes the body it runs in one word (`body`: the task, with OP_BODY_* flags in
 * its low bits) and the body's queue, around each body (op_worker_promotable_begin/end, from
 * drain.c and carry.c). A promoter (rare: a wait that would block, an add of higher-QoS work)
 * walks every pool's workers and spares under one lock, marks a matching body BUSY with a
 * compare-and-swap, renices the thread (setpriority on its thread id) only to a lower nice
 * value than it has, and marks it APPLIED; the worker waits out a BUSY promoter at the body's
 * end and undoes an APPLIED renice itself. Only where the process may lower nice values: a
 * thread may not lower another's without CAP_SYS_NICE (promotion.c decides).
 */
#include "pool_private.h"

#include <errno.h>
#include <sys/resource.h>

enum { OP_BODY_BUSY = 1, OP_BODY_APPLIED = 2 }; /* tasks are 16-byte aligned */

/* Serialises promoters (rare: a wait that blocks on lower-QoS work), so that two raising one
 * thread to different classes cannot leave it at the lower of the two. Never taken by workers. */
static pthread_mutex_t op_promote_lock = PTHREAD_MUTEX_INITIALIZER;

void op_worker_promotable_begin(op_task_t *task, op_queue_t *queue, int nice) {
    op_worker *worker = op_tls_worker;
    if (!worker) return;
    /* relaxed: read by promoters after their seq_cst load of `body` below (which they then
     * compare-and-swap): a stale queue only makes a promoter look at a body once too often. */
    atomic_store_explicit(&worker->body_queue, queue, memory_order_relaxed);
    worker->body_nice = nice;
    /* seq_cst: the Dekker pairs of promotion.c (a promoter changes the task's word or its
     * queue's `promo`, then loads `body`; we store, then read those). */
    atomic_store_explicit(&worker->body, (uint64_t)(uintptr_t)task, memory_order_seq_cst);
}

void op_worker_promotable_nice(int nice) {
    op_worker *worker = op_tls_worker;
    if (worker) worker->body_nice = nice;
}

void op_worker_promotable_end(void) {
    op_worker *worker = op_tls_worker;
    if (!worker) return;
    /* A promoter renicing us (BUSY: one system call) is waited for; acquire: its release (with
     * APPLIED) before we undo what it did. */
    uint64_t body = op_worker_word_settle(&worker->body, OP_BODY_BUSY, 0, 0);
    if (OP_UNLIKELY(body & OP_BODY_APPLIED)) op_nice_set_current_thread(worker->body_nice);
}

/* Raises `worker`'s running body of `task` (or of `queue`) to `nice`; true when it did. Under
 * op_promote_lock. */
static bool op_promote_worker(op_worker *worker, op_task_t *task, op_queue_t *queue, int nice) {
    /* seq_cst: the other half of the Dekker pairs in op_worker_promotable_begin. */
    uint64_t body = atomic_load_explicit(&worker->body, memory_order_seq_cst);
    uint64_t running = body & ~(uint64_t)(OP_BODY_BUSY | OP_BODY_APPLIED);
    if (running == 0) return false;
    if (task ? running != (uint64_t)(uintptr_t)task
             : atomic_load_explicit(&worker->body_queue, memory_order_relaxed) != queue) {
        return false;
    }
    /* acquire: the worker's body_nice and tid. The BUSY bit keeps the body from ending (its
     * thread waits for us in op_worker_promotable_end) until we are done. */
    if (!atomic_compare_exchange_strong_explicit(&worker->body, &body, body | OP_BODY_BUSY,
                                                 memory_order_acquire, memory_order_relaxed)) {
        return false; /* the body ended or changed meanwhile */
    }
    int tid = atomic_load_explicit(&worker->tid, memory_order_relaxed);
    bool raised = false;
    if (tid != 0) {
        errno = 0;
        int current = getpriority(PRIO_PROCESS, (id_t)tid);
        if (!(current == -1 && errno != 0) && nice < current) {
            raised = op_nice_set_thread(tid, nice) == 0;
        }
    }
    if (raised) op_count_shared(&worker->counts.promotions, 1);
    /* release: the renice before the worker, which acquires the word, undoes it. */
    atomic_store_explicit(&worker->body, body | (raised ? OP_BODY_APPLIED : 0),
                          memory_order_release);
    return raised;
}

static int op_promote_pool(op_pool *pool, op_task_t *task, op_queue_t *queue, int nice) {
    if (!pool) return 0;
    int raised = 0;
    for (int i = 0; i < pool->size; i++) {
        raised += op_promote_worker(&pool->workers[i], task, queue, nice);
    }
    pthread_mutex_lock(&pool->spares_lock);
    for (op_worker *spare = pool->spares; spare; spare = spare->next_spare) {
        raised += op_promote_worker(spare, task, queue, nice);
    }
    pthread_mutex_unlock(&pool->spares_lock);
    return raised;
}

int op_pool_promote_running(op_task_t *task, op_queue_t *queue, int nice) {
    int raised = 0;
    pthread_mutex_lock(&op_promote_lock);
    for (int qos = 0; qos < OP_QOS_COUNT; qos++) {
        /* acquire: a published pool's workers array. */
        raised += op_promote_pool(atomic_load_explicit(&op_pools[qos], memory_order_acquire),
                                  task, queue, nice);
    }
    for (op_pool *pool = atomic_load_explicit(&op_placed_pools, memory_order_acquire); pool;
         pool = pool->next_placed) {
        raised += op_promote_pool(pool, task, queue, nice);
    }
    pthread_mutex_unlock(&op_promote_lock);
    return raised;
}

void op_running_promotion_forget_after_fork(void) {
    pthread_mutex_init(&op_promote_lock, NULL);
}
