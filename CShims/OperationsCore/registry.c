/*
 * registry.c — what a tracking queue holds: its unfinished tasks in submission order, so they
 * can be listed (OperationQueue.operations), cancelled all at once, and fenced by barriers.
 *
 * Submitting to a tracking queue pushes the task onto an intrusive lock-free stack (one
 * compare-and-swap; push-only, so no ABA) and takes a registry reference on it. Finishing costs
 * nothing extra: the FINISHED bit is the mark. Finished tasks are unlinked by compaction, which
 * runs under `registry_lock` — never on the add → run → finish path: listings, barrier
 * submissions, and a try-lock when the queue goes idle or every so many finishes take it (a
 * try-lock that fails leaves a request that the holder honours before unlocking), and
 * op_queue_wait on a tracking queue compacts before returning. The amortised compaction runs on
 * the threads that finish tasks (a drainer that never leaves its queue hands it to the runtime's
 * maintenance queue, op_registry_compact_elsewhere, since its releases may run user code that
 * waits for that queue), not on the submitter: a single producer is the bottleneck of
 * a stream of small operations, and the finished contexts are still in the finisher's cache.
 * Compaction exchanges the whole stack for NULL, keeps the unfinished tasks and splices them
 * back below whatever was pushed meanwhile, so stack order (newest first) stays submission
 * order. A task's context is released (release_context) only by compaction, under the lock,
 * and the releases themselves run after the lock is dropped (they may run user code, such as a
 * deinit that lists the queue), so a listing never meets a context that is being freed. A
 * removed list waits in the queue's release list (release_jobs) while it is released, 128 tasks
 * at a time: by the thread that removed it, by the maintenance queue when that thread may not
 * (it drains the queue or runs one of its bodies), and by a waiter of the queue
 * (op_registry_compact_now), which releases what waits instead of waiting for the thread that
 * holds it (the maintenance queue runs at background class, behind whatever keeps that class
 * busy).
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
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h> /* sched_yield */

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
    uint64_t kept = 0, removed_count = 0;
    while (list) {
        op_task_t *next = list->registry_next;
        if (atomic_load_explicit(&list->state, memory_order_acquire) & OP_STATE_FINISHED) {
            list->registry_next = removed;
            removed = list;
            removed_count++;
        } else {
            list->registry_next = NULL;
            if (keep_tail) keep_tail->registry_next = list; else keep_head = list;
            keep_tail = list;
            kept++;
        }
        list = next;
    }
    /* relaxed: counted under the lock (once for the batch, not once per task), read by
     * op_registry_compact_now after it. */
    if (removed_count) atomic_fetch_add_explicit(&queue->releasing, removed_count, memory_order_relaxed);
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

/* The batches of releases running on this thread (op_registry_release_removed), innermost
 * first. A release may run user code (a context's deinit) that waits for a queue; such a wait
 * must not wait for releases in flight (op_registry_compact_now): not for its own, which cannot
 * end before it returns, nor for another thread's, whose deinit may be waiting the same way (two
 * deinits on two threads, each waiting for the other's release, spun for ever). */
typedef struct op_release_batch {
    struct op_release_batch *outer;
} op_release_batch;
static _Thread_local op_release_batch *op_tls_release_batches;

/* Releases taken at once, a slice: a waiter of the queue and the maintenance worker take the
 * lists waiting to be released a slice at a time, so several threads share one long list. A
 * maintenance worker gives its CPU away between two slices: a compaction on a busy queue releases
 * 1024 and more finished contexts (Swift operations and what their closures hold, some 100 ns
 * each): in one go that kept a CPU for a few hundred microseconds, and the kernel let the
 * background-class worker finish its time slice before a woken latency-sensitive worker of the
 * same CPU ran (W7 stream p99 of the Swift layer on 2 CPUs: 0.5–0.9 ms instead of 30 µs). */
#define OP_RELEASE_SLICE 128

/* A removed list waiting in its queue's release_jobs (under release_lock) to be released, a
 * slice at a time, by whoever takes it: the thread that removed it, the maintenance queue, or a
 * waiter of the queue (op_registry_compact_now). */
typedef struct op_release_job {
    struct op_release_job *next;
    op_task_t *removed; /* chained by registry_next */
    uint64_t number;    /* from the queue's release_jobs_made, never 0 */
} op_release_job;

/* Releases `slice`: each context (release_context), then the registry's reference on the task.
 * Called without the registry lock. */
static void op_registry_release_slice(op_queue_t *queue, op_task_t *slice) {
    op_release_batch batch = {.outer = op_tls_release_batches};
    op_tls_release_batches = &batch;
    op_task_fn release = queue->release_context;
    uint64_t count = 0;
    while (slice) {
        op_task_t *next = slice->registry_next;
        OP_RACE_WINDOW("registry: before releasing a finished context");
        if (release) release(op_task_user_context(slice));
        op_task_release(slice);
        slice = next;
        count++;
    }
    /* release: a waiter that sees the count drop sees the contexts released. Once per slice,
     * not once per task: a waiter waits for the whole of it anyway. */
    atomic_fetch_sub_explicit(&queue->releasing, count, memory_order_release);
    op_tls_release_batches = batch.outer;
}

/* Takes up to OP_RELEASE_SLICE tasks of the queue's waiting lists, chained by registry_next, or
 * NULL when none wait: of list number `only` while it waits, or of any list when `only` is 0.
 * The caller releases them (op_registry_release_slice). */
static op_task_t *op_registry_take_release_slice(op_queue_t *queue, uint64_t only) {
    pthread_mutex_lock(&queue->release_lock);
    op_release_job **link = &queue->release_jobs;
    if (only) {
        while (*link && (*link)->number != only) link = &(*link)->next;
    }
    op_release_job *job = *link;
    if (!job) {
        pthread_mutex_unlock(&queue->release_lock);
        return NULL;
    }
    op_task_t *slice = job->removed, *last = slice;
    for (unsigned n = 1; n < OP_RELEASE_SLICE && last->registry_next; n++) last = last->registry_next;
    job->removed = last->registry_next;
    last->registry_next = NULL;
    op_release_job *done = NULL;
    if (!job->removed) {
        *link = job->next;
        done = job;
    }
    pthread_mutex_unlock(&queue->release_lock);
    free(done);
    return slice;
}

/* Releases the queue's waiting lists here, a slice at a time, until none is left. Whether it
 * released anything. */
static bool op_registry_release_waiting(op_queue_t *queue) {
    bool maintenance = op_maintenance_is_current(), released = false;
    for (op_task_t *slice; (slice = op_registry_take_release_slice(queue, 0));) {
        op_registry_release_slice(queue, slice);
        released = true;
        /* Tidying at background class: whoever waits for this CPU runs first. */
        if (maintenance) sched_yield();
    }
    return released;
}

/* Puts `removed` in the queue's waiting lists; its number (for op_registry_take_release_slice's
 * `only`), or 0 when out of memory. */
static uint64_t op_registry_add_release_job(op_queue_t *queue, op_task_t *removed) {
    op_release_job *job = malloc(sizeof *job);
    if (!job) return 0;
    job->removed = removed;
    pthread_mutex_lock(&queue->release_lock);
    /* Read under the lock: once it is dropped another thread may take the job whole and free
     * it. */
    uint64_t number = job->number = ++queue->release_jobs_made;
    job->next = queue->release_jobs;
    queue->release_jobs = job;
    pthread_mutex_unlock(&queue->release_lock);
    return number;
}

/* Releases what compaction removed, here: the list waits with the others, so that a waiter of
 * the queue can take slices of it meanwhile (while one thread released a long list, at
 * background class on the maintenance queue, a waiter spun until it was done), and this thread
 * releases slices of it until none is left. Only of its own list: the thread that takes a queue
 * idle wakes its waiters after this, and they share what else waits. */
static void op_registry_release_removed(op_queue_t *queue, op_task_t *removed) {
    if (!removed) return;
    uint64_t job = op_registry_add_release_job(queue, removed);
    if (!job) {
        op_registry_release_slice(queue, removed); /* out of memory: the list in one go */
        return;
    }
    for (op_task_t *slice; (slice = op_registry_take_release_slice(queue, job));) {
        op_registry_release_slice(queue, slice);
    }
}

static bool op_registry_release_elsewhere(op_queue_t *queue, op_task_t *removed);

/* Releases what was removed, here, unless this thread runs a body of the queue or drains it: the
 * releases run user code (a context's deinit) that may wait for this very queue, which would then
 * wait for the body or slot this thread holds (a body that reads operationCount lists the queue,
 * and a listing compacts). Then a worker of the maintenance queue releases them. */
static void op_registry_release_removed_safely(op_queue_t *queue, op_task_t *removed) {
    if (!removed) return;
    if (OP_UNLIKELY(op_tls_queue == queue || op_tls_drain.queue == queue) &&
        op_registry_release_elsewhere(queue, removed)) {
        return;
    }
    op_registry_release_removed(queue, removed);
}

/* Drops the registry lock, first honouring compaction requests that arrived while it was
 * held (a queue that went idle meanwhile could not take it), then releasing what was removed. */
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
        op_registry_release_removed_safely(queue, removed);
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
    /* Another thread may still be releasing what it removed before we took the lock. Not from
     * inside a release (see op_release_batch): there only what we removed ourselves is released
     * on return. Otherwise every finished context is released on return: what waits (sent to
     * the maintenance queue, or removed by another thread, which puts its list in the waiting
     * ones only after it dropped the registry lock: so we look again while we wait) we release
     * here, and we wait only for the slices other threads are releasing now. */
    if (op_tls_release_batches) return;
    int64_t start = op_now_ns();
    while (atomic_load_explicit(&queue->releasing, memory_order_acquire) != 0) {
        if (op_registry_release_waiting(queue)) {
            start = op_now_ns();
        } else {
            op_spin_pause(op_now_ns() - start);
        }
    }
}

static void op_registry_compact_task(void *context) {
    op_queue_t *queue = context;
    op_registry_compact_if_idle(queue);
    /* Pending until done (releases included): a drainer that finds twice the threshold
     * finished meanwhile compacts itself (drain.c), which bounds what a starved maintenance
     * worker leaves unreleased. release: a compaction due after this schedules again. */
    atomic_store_explicit(&queue->compact_scheduled, false, memory_order_release);
    op_queue_release(queue); /* the reference op_registry_compact_elsewhere took */
}

/* The maintenance queue's part: releases the queue's waiting lists (a waiter may take slices
 * meanwhile; this task may find nothing left). */
static void op_registry_release_task(void *context) {
    op_queue_t *queue = context;
    op_registry_release_waiting(queue);
    op_queue_release(queue); /* the reference op_registry_release_elsewhere took */
}

static bool op_registry_release_elsewhere(op_queue_t *queue, op_task_t *removed) {
    /* Waiting before the task is submitted, so the task finds it (the lock orders the two). */
    if (!op_registry_add_release_job(queue, removed)) return false; /* released here after all */
    /* The queue lives until the task ran: `releasing` counts the list until it is released. */
    op_queue_retain(queue);
    if (!op_maintenance_submit(op_registry_release_task, queue)) {
        /* Out of memory: the list stays waiting, for the queue's next waiter (op_queue_wait and
         * the Swift layer's waits), the next maintenance release task, or its destruction. */
        op_queue_release(queue);
    }
    return true;
}

void op_registry_compact_elsewhere(op_queue_t *queue) {
    /* relaxed: one scheduled compaction at a time is enough (it takes everything finished by
     * then); a request meanwhile is covered by it or by the next batch. */
    if (atomic_exchange_explicit(&queue->compact_scheduled, true, memory_order_relaxed)) return;
    op_queue_retain(queue);
    if (!op_maintenance_submit(op_registry_compact_task, queue)) {
        /* Out of memory: the queue compacts when it next goes idle instead. */
        atomic_store_explicit(&queue->compact_scheduled, false, memory_order_relaxed);
        op_queue_release(queue);
    }
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

int op_registry_compaction_urgency(op_queue_t *queue, uint64_t finished) {
    op_tls_finishes += (uint32_t)finished;
    if (op_tls_finishes < OP_REGISTRY_CHECK_EVERY) return 0;
    op_tls_finishes = 0;
    /* relaxed: heuristic counts; no data is published through these. A compaction walks the
     * kept tasks and the finished ones: waiting for as many finishes as tasks were kept keeps it
     * O(1) per task (two visits at most) and holds at most about as many finished tasks (and
     * what their contexts keep alive) as the queue holds unfinished ones, plus 1024 (at least 1024
     * between compactions: each one a drainer finds overdue costs it a token round trip, and at
     * 256 those showed in a stream's p99.9 latency). */
    uint64_t finishes = atomic_fetch_add_explicit(&queue->registry_finishes,
                                                  OP_REGISTRY_CHECK_EVERY, memory_order_relaxed) +
                        OP_REGISTRY_CHECK_EVERY;
    uint64_t threshold = atomic_load_explicit(&queue->registry_kept, memory_order_relaxed);
    if (threshold < OP_REGISTRY_MIN_COMPACT) threshold = OP_REGISTRY_MIN_COMPACT;
    uint64_t since = finishes - atomic_load_explicit(&queue->registry_finishes_at_compaction,
                                                     memory_order_relaxed);
    return since >= 2 * threshold ? 2 : since >= threshold ? 1 : 0;
}

bool op_registry_compaction_due(op_queue_t *queue, uint64_t finished) {
    return op_registry_compaction_urgency(queue, finished) != 0;
}

bool op_registry_compaction_pending(op_queue_t *queue) {
    /* relaxed: a hint; at worst the drainer compacts once more itself. */
    return atomic_load_explicit(&queue->compact_scheduled, memory_order_relaxed);
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
    for (size_t i = 0; i < count; i++) {
        uint32_t state = atomic_load_explicit(&tasks[i]->state, memory_order_acquire);
        if (!(state & OP_STATE_FINISHED) && !(tasks[i]->flags & OP_TASK_IS_BARRIER)) fn(tasks[i], arg);
    }
    free(tasks);
    op_registry_unlock(queue, removed);
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
    if (queue->tracking) op_registry_release_removed(queue, op_registry_compact_locked(queue));
    /* A list waits here only if its maintenance task could not be submitted (out of memory: each
     * task holds a queue reference until it ran). */
    op_registry_release_waiting(queue);
    pthread_mutex_destroy(&queue->release_lock);
    if (queue->tracking) {
        op_task_t *barrier = atomic_exchange_explicit(&queue->barrier, NULL, memory_order_acquire);
        if (barrier) op_task_release(barrier);
    }
    pthread_mutex_destroy(&queue->registry_lock);
}
