/*
 * registry.c — what a tracking queue holds: its unfinished tasks in submission order, so they
 * can be listed (OperationQueue.operations), cancelled all at once, and fenced by barriers.
 *
 * Submitting to a tracking queue pushes the task onto an intrusive lock-free stack (one
 * compare-and-swap; push-only, so no ABA) and takes a registry reference on it. Finishing costs
 * nothing here: the FINISHED bit is the mark. Finished tasks are unlinked by compaction, which
 * runs under `registry_lock` — never on the add → run → finish path: listings, barrier
 * submissions, a try-lock when the queue goes idle or every so many finishes (a try-lock that
 * fails leaves a request that the holder honours before unlocking), and op_queue_wait on a
 * tracking queue take it. Compaction runs no user code (it drops the registry's references on
 * finished tasks; their contexts are given back apart, soon after each finish, by the thread
 * that finished it: context_release.c), so any thread may compact, a drainer included, on the
 * threads that finish tasks rather than on the submitter (a single producer is the bottleneck
 * of a stream of small operations). Compaction exchanges the whole stack for NULL, keeps the
 * unfinished tasks and splices them back below whatever was pushed meanwhile, so stack order
 * (newest first) stays submission order. A listing hands out the contexts of unfinished tasks
 * only, under the lock; a finished task's context is released only after its releasing thread
 * took and dropped the lock (context_release.c), so a listing never meets a context that is
 * being freed.
 *
 * Barriers: submit_one reads queue->barrier (seq_cst) and, if an unfinished barrier is set,
 * makes the new task depend on it and marks it `behind_barrier`, all while counted in
 * `submitting`. A barrier is published first, then waits for `submitting` to drain, then makes
 * itself depend on every unfinished tracked task that is not behind it. A task either saw the
 * barrier (it waits for it) or finished registering before the barrier looked (the barrier
 * waits for it), never both and never neither. The barrier registers itself before it drops
 * `registry_lock`, and looks up no other barrier: the next barrier (which takes the lock after)
 * always finds it in the registry and waits for it, and a published barrier's number is never
 * written again, so registrations that read it race with nothing and no task can be put
 * between two barriers that wait for each other.
 */
#include "queue.h"

#include <errno.h>
#include <pthread.h>

#define OP_REGISTRY_MIN_COMPACT 1024
#define OP_REGISTRY_CHECK_EVERY 64

int op_queue_set_tracking(op_queue_t *queue, op_task_fn release_context) {
    if (!queue) return EINVAL;
    if (atomic_load_explicit(&queue->busy, memory_order_acquire) != 0) return EBUSY;
    queue->release_context = release_context;
    queue->tracking = true;
    return 0;
}

/* Unlinks finished tasks and returns them, chained by registry_next, for
 * op_registry_release_removed after the lock is dropped. Caller holds the registry lock. */
static op_task_t *op_registry_compact_locked(op_queue_t *queue) {
    /* acquire: we see every pushed task's fields (pairs with the release push). */
    op_task_t *list = atomic_exchange_explicit(&queue->registry_head, NULL, memory_order_acquire);
    op_task_t *keep_head = NULL, *keep_tail = NULL, *removed = NULL;
    uint64_t kept = 0;
    while (list) {
        op_task_t *next = list->registry_next;
        if (atomic_load_explicit(&list->state, memory_order_acquire) & OP_STATE_FINISHED) {
            list->registry_next = removed;
            removed = list;
        } else {
            /* A kept task that already follows the last kept one keeps its link unwritten: most
             * kept tasks come in runs (the newest, not yet run), and a write would take the
             * line from the worker that is about to run it (issue 36). The last one kept gets
             * its NULL below. */
            if (!keep_tail) keep_head = list;
            else if (keep_tail->registry_next != list) keep_tail->registry_next = list;
            keep_tail = list;
            kept++;
        }
        list = next;
    }
    if (keep_tail && keep_tail->registry_next) keep_tail->registry_next = NULL;
    /* relaxed: a heuristic threshold; no data is published through these. */
    atomic_store_explicit(&queue->registry_kept, kept, memory_order_relaxed);
    atomic_store_explicit(&queue->registry_finishes_at_compaction,
                          atomic_load_explicit(&queue->registry_finishes, memory_order_relaxed),
                          memory_order_relaxed);
    if (!keep_head) return removed;
    /* Splice the survivors (older) below whatever was pushed meanwhile (newer). Pushers only
     * ever replace the head, so the chain below a head we loaded is stable. */
    op_task_t *head = atomic_load_explicit(&queue->registry_head, memory_order_acquire);
    while (!head) {
        if (atomic_compare_exchange_weak_explicit(&queue->registry_head, &head, keep_head,
                                                  memory_order_release, memory_order_acquire)) {
            return removed;
        }
    }
    op_task_t *oldest = head;
    while (oldest->registry_next) oldest = oldest->registry_next;
    oldest->registry_next = keep_head;
    return removed;
}

/* Drops the registry's references on what compaction removed (chained by registry_next), after
 * the lock is dropped. No user code: a finished task's context went its own way. */
static void op_registry_release_removed(op_task_t *removed) {
    while (removed) {
        op_task_t *next = removed->registry_next;
        op_task_release(removed);
        removed = next;
    }
}

/* Drops the registry lock, first honouring compaction requests that arrived while it was
 * held (a queue that went idle meanwhile could not take it), then dropping what was removed. */
static void op_registry_unlock(op_queue_t *queue, op_task_t *removed) {
    for (;;) {
        /* acq_rel: pairs with the requester's seq_cst store; the tasks it saw finish are ours. */
        if (atomic_exchange_explicit(&queue->compact_requested, false, memory_order_acq_rel)) {
            op_task_t *more = op_registry_compact_locked(queue);
            while (more) {
                op_task_t *next = more->registry_next;
                more->registry_next = removed;
                removed = more;
                more = next;
            }
        }
        pthread_mutex_unlock(&queue->registry_lock);
        op_registry_release_removed(removed);
        removed = NULL;
        if (!atomic_load_explicit(&queue->compact_requested, memory_order_seq_cst)) return;
        if (pthread_mutex_trylock(&queue->registry_lock) != 0) return; /* the holder will do it */
    }
}

void op_registry_compact_if_idle(op_queue_t *queue) {
    if (!queue->tracking) return;
    /* seq_cst: either the holder sees the request before unlocking, or our try-lock succeeds. */
    atomic_store_explicit(&queue->compact_requested, true, memory_order_seq_cst);
    if (pthread_mutex_trylock(&queue->registry_lock) != 0) return;
    op_registry_unlock(queue, NULL);
}

void op_registry_compact_now(op_queue_t *queue) {
    if (!queue->tracking) return;
    pthread_mutex_lock(&queue->registry_lock);
    op_registry_unlock(queue, op_registry_compact_locked(queue));
}

void op_registry_add(op_queue_t *queue, op_task_t *task) {
    /* In `submitting` while we read the barrier and push (see the file comment). seq_cst: the
     * Dekker pair with the barrier's publish-then-wait. */
    atomic_fetch_add_explicit(&queue->submitting, 1, memory_order_seq_cst);
    op_task_t *barrier = atomic_load_explicit(&queue->barrier, memory_order_seq_cst);
    /* A barrier registering itself (under registry_lock, see op_queue_submit_barrier) waits on
     * no other barrier: its snapshot already made it wait for everything before it. */
    if (barrier && !(task->flags & OP_TASK_IS_BARRIER) &&
        !(atomic_load_explicit(&barrier->state, memory_order_acquire) & OP_STATE_FINISHED)) {
        /* The barrier's number was written before it was published (seq_cst exchange) and is
         * never written again. Ours was 0 since op_task_init. */
        task->barrier_seq = barrier->barrier_seq;
        op_queue_graph->add_dependency(task, barrier); /* before the submission hold is dropped */
    }
    /* The registry's reference was taken by op_queue_submit_one with the queue's. */
    op_task_t *head = atomic_load_explicit(&queue->registry_head, memory_order_relaxed);
    do {
        task->registry_next = head;
        /* release: compaction and listings (acquire) see the task's fields. */
    } while (!atomic_compare_exchange_weak_explicit(&queue->registry_head, &head, task,
                                                    memory_order_release, memory_order_relaxed));
    /* release: the barrier that waits for `submitting` to drain sees our push. */
    atomic_fetch_sub_explicit(&queue->submitting, 1, memory_order_release);
}

/* Finishes counted by this thread since it last looked whether compaction is due (any queue:
 * a heuristic that only sets how often the look is taken). */
static _Thread_local uint32_t op_tls_finishes;

bool op_registry_compaction_due(op_queue_t *queue, uint64_t finished) {
    op_tls_finishes += (uint32_t)finished;
    if (op_tls_finishes < OP_REGISTRY_CHECK_EVERY) return false;
    op_tls_finishes = 0;
    /* relaxed: heuristic counts; no data is published through these. A compaction walks the
     * kept tasks and the finished ones: waiting for as many finishes as tasks were kept keeps it
     * O(1) per task (two visits at most) and holds at most about as many finished tasks (72
     * bytes each: their contexts are released apart) as the queue holds unfinished ones, plus
     * 1024. */
    uint64_t finishes = atomic_fetch_add_explicit(&queue->registry_finishes,
                                                  OP_REGISTRY_CHECK_EVERY, memory_order_relaxed) +
                        OP_REGISTRY_CHECK_EVERY;
    uint64_t threshold = atomic_load_explicit(&queue->registry_kept, memory_order_relaxed);
    if (threshold < OP_REGISTRY_MIN_COMPACT) threshold = OP_REGISTRY_MIN_COMPACT;
    uint64_t since = finishes - atomic_load_explicit(&queue->registry_finishes_at_compaction,
                                                     memory_order_relaxed);
    return since >= threshold;
}

/* Unfinished tracked tasks, oldest first, into a malloc'd array; caller holds the lock and
 * releases *removed after dropping it. */
static op_task_t **op_registry_snapshot_locked(op_queue_t *queue, size_t *count,
                                               op_task_t **removed) {
    *removed = op_registry_compact_locked(queue);
    /* One head for both walks. Submitters keep pushing meanwhile, and only ever replace the
     * head, so the chain below this one is stable while we hold the lock; what they push after
     * it is newer than the snapshot (for a barrier: registered after it was published, so
     * behind it). Walking from a fresh head the second time would count the newest n tasks
     * and leave out the oldest ones pushed before the first walk. */
    op_task_t *top = atomic_load_explicit(&queue->registry_head, memory_order_acquire);
    size_t n = 0;
    for (op_task_t *t = top; t; t = t->registry_next) n++;
    op_task_t **tasks = n ? malloc(n * sizeof *tasks) : NULL;
    if (n && !tasks) op_fatal("operations: out of memory listing a queue");
    size_t i = n;
    for (op_task_t *t = top; t && i > 0; t = t->registry_next) {
        tasks[--i] = t; /* the stack is newest first */
    }
    *count = n;
    return tasks;
}

void op_queue_for_each(op_queue_t *queue, void (*fn)(op_task_t *task, void *arg), void *arg) {
    if (!queue || !fn || !queue->tracking) return;
    pthread_mutex_lock(&queue->registry_lock);
    size_t count = 0;
    op_task_t *removed = NULL;
    op_task_t **tasks = op_registry_snapshot_locked(queue, &count, &removed);
    /* A callback that completes a task keeps its context until the lock is dropped: its release
     * takes this lock (the fence, context_release.c). */
    op_release_hold_begin();
    for (size_t i = 0; i < count; i++) {
        uint32_t state = atomic_load_explicit(&tasks[i]->state, memory_order_acquire);
        if (!(state & OP_STATE_FINISHED) && !(tasks[i]->flags & OP_TASK_IS_BARRIER)) fn(tasks[i], arg);
    }
    op_release_hold_end();
    free(tasks);
    op_registry_unlock(queue, removed);
    op_release_flush_if_safe();
}

int op_queue_cancel_all(op_queue_t *queue) {
    if (!queue || !queue->tracking) return EINVAL; /* no list to cancel: said, not ignored */
    pthread_mutex_lock(&queue->registry_lock);
    size_t count = 0;
    op_task_t *removed = NULL;
    op_task_t **tasks = op_registry_snapshot_locked(queue, &count, &removed);
    for (size_t i = 0; i < count; i++) op_task_retain(tasks[i]);
    op_registry_unlock(queue, removed);
    /* Outside the lock: cancelling can finish tasks, whose callbacks may list the queue. */
    for (size_t i = 0; i < count; i++) {
        op_queue_graph->cancel(tasks[i]);
        op_task_release(tasks[i]);
    }
    free(tasks);
    return 0;
}

int op_queue_submit_barrier(op_queue_t *queue, op_task_t *task) {
    if (!queue || !task || !queue->tracking) return EINVAL;
    if (atomic_load_explicit(&task->queue, memory_order_relaxed) ||
        (atomic_load_explicit(&task->state, memory_order_relaxed) & OP_STATE_FINISHED)) {
        return EBUSY;
    }
    task->flags |= OP_TASK_IS_BARRIER;
    pthread_mutex_lock(&queue->registry_lock);
    /* Numbered so tasks can say which barrier they wait for; 0 means none. After 2^32
     * barriers the numbers wrap: a task would then have to wait unfinished behind one barrier
     * while four billion more are submitted for a number to be reused. */
    if (++queue->barriers_submitted == 0) queue->barriers_submitted = 1;
    uint32_t seq = queue->barriers_submitted;
    task->barrier_seq = seq;
    /* Publish first, then wait for registrations in flight: each of them either saw this
     * barrier (and waits for it) or is in the registry before we look. */
    op_task_retain(task);
    op_task_t *previous = atomic_exchange_explicit(&queue->barrier, task, memory_order_seq_cst);
    while (atomic_load_explicit(&queue->submitting, memory_order_seq_cst) != 0) op_cpu_relax();
    size_t count = 0;
    op_task_t *removed = NULL;
    op_task_t **tasks = op_registry_snapshot_locked(queue, &count, &removed);
    for (size_t i = 0; i < count; i++) {
        if (tasks[i]->barrier_seq != seq) op_queue_graph->add_dependency(task, tasks[i]);
    }
    free(tasks);
    /* Registered (and put in the bands if nothing is left before it) while we still hold the
     * lock, so the next barrier's snapshot finds it; dispatched after the lock is dropped. */
    bool pushed_shared = false;
    int rc = op_queue_submit_one(queue, task, false, &pushed_shared);
    op_registry_unlock(queue, removed);
    if (previous) op_task_release(previous);
    if (pushed_shared) op_queue_dispatch_sub(queue, 1, 0);
    return rc;
}

void op_registry_destroy(op_queue_t *queue) {
    /* Every task finished (the queue is idle), and nobody else can reach the queue. */
    if (queue->tracking) op_registry_release_removed(op_registry_compact_locked(queue));
    if (queue->tracking) {
        op_task_t *barrier = atomic_exchange_explicit(&queue->barrier, NULL, memory_order_acquire);
        if (barrier) op_task_release(barrier);
    }
    pthread_mutex_destroy(&queue->registry_lock);
}
