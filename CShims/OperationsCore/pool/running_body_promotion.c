/*
 * running_body_promotion.c — QoS promotion of bodies already running on a worker (the part of
 * promotion.c that needs the workers): a promoter finds the worker whose body runs the raised
 * task (or a task of the raised queue) and renices its thread; the thread puts itself back when
 * the body returned.
 *
 * Each worker says in its `run` word (pool_private.h: one word for the monitor and for
 * promoters) that a body runs (OP_RUN_IN_TASK, with a serial per body), and publishes the
 * body's task and queue before it (op_worker_body_begin/end, worker.c, from drain.c). A promoter
 * (rare: a wait that would block, an add of higher-QoS work) walks every pool's workers and
 * spares under one lock, marks a matching body PROMOTING with a compare-and-swap on `run` (which
 * fails if the body ended: a new serial), renices the thread (setpriority on its thread id)
 * only to a lower nice value than it has, and marks it PROMOTED; the worker waits out a
 * PROMOTING promoter at the body's end and undoes a PROMOTED renice itself. Only where the
 * process may lower nice values: a thread may not lower another's without CAP_SYS_NICE
 * (promotion.c decides).
 */
#include "pool_private.h"

#include <errno.h>
#include <sys/resource.h>

/* Serialises promoters (rare: a wait that blocks on lower-QoS work), so that two raising one
 * thread to different classes cannot leave it at the lower of the two. Never taken by workers. */
static pthread_mutex_t op_promote_lock = PTHREAD_MUTEX_INITIALIZER;

/* Raises `worker`'s running body of `task` (or of `queue`) to `nice`; true when it did. Under
 * op_promote_lock (so no other promoter holds PROMOTING, and PROMOTED changes only under it or
 * at the body's end, which waits for PROMOTING). */
static bool op_promote_worker(op_worker *worker, op_task_t *task, op_queue_t *queue, int nice) {
    /* seq_cst: the other half of the Dekker pairs in op_worker_body_begin. */
    uint64_t run = atomic_load_explicit(&worker->run, memory_order_seq_cst);
    for (;;) {
        if (!(run & OP_RUN_IN_TASK)) return false;
        /* relaxed: written before `run` said IN_TASK for this body (and if they are a later
         * body's already, the compare-and-swap below fails on its new serial). */
        if (task ? atomic_load_explicit(&worker->body_task, memory_order_relaxed) != task
                 : (!queue ||
                    atomic_load_explicit(&worker->body_queue, memory_order_relaxed) != queue)) {
            return false;
        }
        /* PROMOTING keeps the body from ending (its thread waits for us in op_worker_body_end)
         * until we are done. acquire, also on failure (a new value of `run`: the monitor's bits,
         * or a later body): the body_task and body_queue we read next are at least as new as the
         * value that failed us, so a later body is matched on its own task. */
        if (atomic_compare_exchange_strong_explicit(&worker->run, &run, run | OP_RUN_PROMOTING,
                                                    memory_order_acquire, memory_order_acquire)) {
            break;
        }
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
    /* release: the renice before the worker, which acquires the word, undoes it. One
     * read-modify-write that clears PROMOTING and sets PROMOTED (if not set already by an
     * earlier raise of this body), keeping the monitor's bits. */
    uint64_t flip = OP_RUN_PROMOTING | (raised && !(run & OP_RUN_PROMOTED) ? OP_RUN_PROMOTED : 0);
    atomic_fetch_xor_explicit(&worker->run, flip, memory_order_release);
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
