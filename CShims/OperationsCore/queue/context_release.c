/*
 * context_release.c — a tracking queue's finished tasks give their contexts back (release_context:
 * the Swift layer drops the queue's reference to the operation, and with it what the operation's
 * closures hold) soon after their finish, on the thread that settled them, at a point where that
 * thread holds no unit of the queue: as Foundation drops an operation right after its finish.
 *
 * Why not at the finish itself: the release runs user code (a deinit) that may wait for the very
 * queue — for it to go idle, or for its next task — which would then wait for the slot the
 * finishing drainer holds, or for the body the finishing thread runs. And why not only later,
 * elsewhere: the old compaction on a background-class maintenance queue was all that let
 * finished operations go, and a loaded machine starved it (a queue kept busy held 9 600–53 000
 * alive; Foundation: 5 003; issue 33, item 7). The helper below is background class too, but
 * it does not bound what is kept: the drainers' backpressure does (a drainer whose last batch
 * is still out releases the next itself).
 *
 * Who takes a context: the thread that gives back the finished task's unit of its queue (its
 * busy unit: drain.c once the task is retired or finished on a worker, op_task_complete when it
 * settles a task whose body had returned). That thread holds the queue until then, so reading
 * it is safe; a thread that only finishes the task (op_task_complete of a task still queued or
 * still running its body) touches no queue: the worker that retires it or whose body returns
 * takes the context. (Taken at the finish instead, a completion racing the worker's retirement
 * read a queue the worker had freed: found by review.)
 *
 * Each thread keeps the contexts it took in a buffer of its own (no shared word per task) and
 * releases them when it holds nothing of their queues:
 *   - a worker, when its turn on a queue ends (drain.c: the queue ran dry, was suspended, its
 *     budget ran out, a body handed the slot to an asynchronous task);
 *   - a drainer whose buffer holds a batch (op_release_batch_full) hands it to the helper (a
 *     core queue of default width at background class, holding nothing of the queue, so its
 *     releases take no CPU from the work; a wait for the releases raises it, see
 *     op_release_wait) and goes on; when its previous batch is still with the helper (a loaded
 *     machine), it leaves its queue to release the new one itself (its slot goes on as a token
 *     when work waits). So a
 *     queue that never runs dry holds at most two batches per drainer beyond its unfinished tasks,
 *     and the releases run beside the queue's work where a CPU is free (what this costs the
 *     Swift layer's graphs is in Perf/README.md, "Issue 33");
 *   - any other thread, at the end of the op_task_complete that settled them, unless it runs a
 *     body (op_queue_current), drains a queue, runs a listing's callback or an on_finish
 *     (op_release_hold_begin): then when that ends. A body releases at once what belongs to other
 *     queues, which it holds nothing of (a body that completed a task of another queue and then
 *     waited for that queue waited for itself: found by the fuzzer).
 * A release that completes other tasks (a deinit that finishes an operation) releases what that
 * took right after it, depth first, before the rest of its round.
 *
 * Before a queue's contexts are released, its registry lock is taken and dropped: a listing
 * (op_queue_for_each) holds that lock while it hands out unfinished tasks' contexts, so one that
 * started before sees the context alive, and one that starts after sees the task FINISHED (set
 * before the context was taken) and skips it.
 *
 * Waiting for a queue (op_queue_wait) waits for its contexts too: `queue->releasing` counts those
 * in buffers and with helpers, added before the units that keep the queue busy are given back (a
 * drainer's when its turn ends or it hands a batch off, anyone else's as it takes one), so a
 * waiter that sees the queue idle then waits for `releasing` to reach 0 — bounded by its timeout,
 * not for the contexts the waiting thread keeps itself, and not from inside a release (a deinit
 * that waits for its own queue must not wait for its own release, nor for another thread's
 * release whose deinit waits the same way). Each counted context holds a reference on its queue.
 *
 * Threads: a buffer is its thread's alone; a thread that ends releases what it kept and frees it
 * (a key destructor). `releasing` and the queue's references are atomics of the queue; a drainer
 * adds its batch to them once, not once per task. Fork: a child makes a new helper (the
 * parent's may hold slots of threads that do not exist there); the lock that makes it is held
 * across the fork (op_release_lock_for_fork), so the child never inherits it held.
 */
#include "queue.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Contexts a drainer buffers before it hands them to a helper (or, when its last batch is still
 * out, leaves its queue to release them itself): bounds what finished operations hold on a queue
 * that never runs dry (two batches per drainer at most: 256 / CPUs, at least 32, so 2 × 2 × 128
 * on 2 CPUs and 1 024 on 16), while keeping the hand-off (an allocation and a submit) and
 * the leave (a token round trip, its local run queue back to the bands) rare. OP_RELEASE_BATCH is
 * the initial buffer's size. */
#define OP_RELEASE_BATCH 256
#define OP_RELEASE_BATCH_MIN 32
#define OP_RELEASE_BATCH_TOTAL 256

typedef struct op_release_entry {
    op_queue_t *queue;
    void *context;
    /* Counted in queue->releasing and holding a reference on the queue. A drainer's own queue's
     * entries are not, while its slot keeps the queue busy and alive: op_release_adopt counts
     * them all at once when its turn ends or it hands them off. */
    bool counted;
} op_release_entry;

/* A batch handed to a helper. The helper releases it and marks it DONE; the drainer that handed
 * it frees it when it next hands one, or the thread's key destructor does, or the helper when the
 * drainer's thread ended meanwhile (ABANDONED). */
enum { OP_BATCH_OUT = 0, OP_BATCH_DONE = 1, OP_BATCH_ABANDONED = 2 };
typedef struct op_release_handed {
    _Atomic uint32_t state;
    uint32_t count;
    op_release_entry entries[];
} op_release_handed;

typedef struct op_release_buffer {
    op_release_entry *entries; /* malloc'd, grows (a body may settle many tasks of other queues) */
    uint32_t count;
    uint32_t capacity;
    uint32_t uncounted; /* entries of op_tls_drain.queue not yet counted */
    /* Counted entries added since op_release_flush_if_safe last looked: only then is there
     * anything it may release in a body (O(1) for the queue's own completions, the fast path). */
    uint32_t unlooked;
    uint32_t batch;     /* op_release_batch_full's size, read from the topology on first use */
    uint32_t holds;     /* op_release_hold_begin depth: no flush meanwhile */
    bool flushing;      /* releases run on this thread (user code) */
    bool registered;    /* the thread's key is set: its destructor runs at the thread's end */
    op_release_handed *handed; /* this thread's batch with a helper, or NULL */
    pid_t handed_pid;          /* the process it was handed in (a forked child forgets it) */
} op_release_buffer;

static _Thread_local op_release_buffer op_tls_releases;

static pthread_once_t op_release_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t op_release_key;
static bool op_release_key_made;

static void op_release_thread_ended(void *value);

static void op_release_key_make(void) {
    op_release_key_made = pthread_key_create(&op_release_key, op_release_thread_ended) == 0;
}

/* Makes sure the thread's destructor runs at its end; false when no key could be made. */
static bool op_release_register(op_release_buffer *buffer) {
    if (buffer->registered) return true;
    pthread_once(&op_release_key_once, op_release_key_make);
    if (!op_release_key_made || pthread_setspecific(op_release_key, buffer) != 0) return false;
    buffer->registered = true;
    return true;
}

/* Grows the buffer for one more entry; false when out of memory. */
static bool op_release_reserve(op_release_buffer *buffer) {
    if (buffer->count < buffer->capacity) return true;
    uint32_t capacity = buffer->capacity ? buffer->capacity * 2 : OP_RELEASE_BATCH;
    op_release_entry *grown = realloc(buffer->entries, (size_t)capacity * sizeof *grown);
    if (!grown) return false;
    buffer->entries = grown;
    buffer->capacity = capacity;
    (void)op_release_register(buffer); /* best effort: without a key the buffer is not freed */
    return true;
}

void op_release_task(op_queue_t *queue, op_task_t *task) {
    if (!queue->tracking || !queue->release_context || (task->flags & OP_TASK_IS_JOB)) return;
    op_release_buffer *buffer = &op_tls_releases;
    if (OP_UNLIKELY(!op_release_reserve(buffer))) {
        /* The core never drops work (see ERRORS in the header), nor a release. */
        op_fatal("operations: out of memory keeping a finished task's context for release");
    }
    bool held = op_tls_drain.queue == queue;
    if (!held) {
        /* relaxed: the caller holds the task's unit of the queue, given back after this. */
        op_queue_retain(queue);
        /* seq_cst: before that unit is given back (seq_cst), so a waiter that sees the queue idle
         * sees this count. */
        atomic_fetch_add_explicit(&queue->releasing, 1, memory_order_seq_cst);
    }
    buffer->entries[buffer->count++] =
        (op_release_entry){queue, op_task_user_context(task), !held};
    if (held) buffer->uncounted++; else buffer->unlooked++;
}

void op_release_adopt(op_queue_t *queue) {
    op_release_buffer *buffer = &op_tls_releases;
    uint32_t uncounted = buffer->uncounted;
    if (uncounted == 0) return;
    buffer->uncounted = 0;
    for (uint32_t i = 0; i < buffer->count; i++) {
        if (!buffer->entries[i].counted && buffer->entries[i].queue == queue) {
            buffer->entries[i].counted = true;
        }
    }
    /* relaxed: the caller still holds the queue (its slot's unit). */
    atomic_fetch_add_explicit(&queue->refs, uncounted, memory_order_relaxed);
    /* seq_cst: before the drainer's units are given back (see op_release_task). */
    atomic_fetch_add_explicit(&queue->releasing, uncounted, memory_order_seq_cst);
}

bool op_release_batch_full(void) {
    op_release_buffer *buffer = &op_tls_releases;
    uint32_t batch = buffer->batch;
    if (OP_UNLIKELY(batch == 0)) {
        int cpus = op_topology_get()->cpu_count;
        batch = (uint32_t)(cpus > 0 ? OP_RELEASE_BATCH_TOTAL / cpus : OP_RELEASE_BATCH_TOTAL);
        if (batch < OP_RELEASE_BATCH_MIN) batch = OP_RELEASE_BATCH_MIN;
        buffer->batch = batch;
    }
    return buffer->count >= batch;
}

bool op_release_in_progress_here(void) { return op_tls_releases.flushing; }

void op_release_hold_begin(void) { op_tls_releases.holds++; }

void op_release_hold_end(void) { op_tls_releases.holds--; }

/* ---- releasing --------------------------------------------------------------------------- */

/* The fence with listings for `queue` (see the file comment). */
static void op_release_fence(op_queue_t *queue) {
    OP_RACE_WINDOW("release: before the fence with listings");
    pthread_mutex_lock(&queue->registry_lock);
    pthread_mutex_unlock(&queue->registry_lock);
}

/* Releases what the releases of this round just took (their completions), at once and depth
 * first, one at a time, without recursion: the thread holds no unit of any queue here (a full
 * flush, or a helper). */
static void op_release_taken_meanwhile(void) {
    op_release_buffer *buffer = &op_tls_releases;
    while (buffer->count != 0) {
        op_release_entry entry = buffer->entries[--buffer->count];
        if (buffer->unlooked) buffer->unlooked--;
        op_release_fence(entry.queue);
        entry.queue->release_context(entry.context);
        /* release: a waiter that sees the count drop sees the context released. */
        atomic_fetch_sub_explicit(&entry.queue->releasing, 1, memory_order_release);
        op_queue_release(entry.queue); /* may free the queue */
    }
}

/* Releases `count` counted entries (the fence, the releases, the settling); the caller set
 * `flushing`. With `at_once`, what each release takes is released right after it (a full flush
 * or a helper); otherwise it stays in the buffer for the caller. */
static void op_release_entries(const op_release_entry *entries, uint32_t count, bool at_once) {
    /* The fence, once per queue of the batch (entries of one queue are mostly adjacent). */
    op_queue_t *fenced = NULL;
    for (uint32_t i = 0; i < count; i++) {
        if (entries[i].queue == fenced) continue;
        fenced = entries[i].queue;
        op_release_fence(fenced);
    }
    for (uint32_t i = 0; i < count; i++) {
        OP_RACE_WINDOW("release: before releasing a finished context");
        entries[i].queue->release_context(entries[i].context);
        if (at_once && OP_UNLIKELY(op_tls_releases.count != 0)) op_release_taken_meanwhile();
    }
    /* Settle per run of one queue: one subtraction and one reference drop each. */
    for (uint32_t i = 0; i < count;) {
        op_queue_t *queue = entries[i].queue;
        uint32_t run = 0;
        while (i < count && entries[i].queue == queue) {
            run++;
            i++;
        }
        /* release: a waiter that sees the count drop sees the contexts released. */
        atomic_fetch_sub_explicit(&queue->releasing, run, memory_order_release);
        op_queue_release_many(queue, run); /* may free the queue */
    }
}

void op_release_flush(void) {
    op_release_buffer *buffer = &op_tls_releases;
    /* Every entry must be counted (op_release_adopt): the caller holds no unit of their queues. */
    if (buffer->flushing || buffer->count == 0 || buffer->uncounted != 0) return;
    buffer->flushing = true;
    op_release_entry *entries = buffer->entries;
    uint32_t count = buffer->count, capacity = buffer->capacity;
    /* Take the batch: what its releases take goes into a fresh buffer, released at once. */
    buffer->entries = NULL;
    buffer->count = 0;
    buffer->capacity = 0;
    buffer->unlooked = 0;
    op_release_entries(entries, count, true);
    if (buffer->entries == NULL) {
        buffer->entries = entries; /* keep the allocation for the next batch */
        buffer->capacity = capacity;
    } else {
        free(entries);
    }
    buffer->flushing = false;
}

/* What a worker shows the blocked-worker monitor while it releases contexts (user code that may
 * block where the core cannot see, as a body may): it holds no slot, so it lends none, but it
 * is counted blocked, so a spare stands in for it while work waits. */
static bool op_release_token_lend_slot(op_token *token, op_local_run_queue_t *ring) {
    (void)token;
    (void)ring;
    return false;
}
static void op_release_token_take_back_slot(op_token *token) { (void)token; }
static const op_token_class op_release_token_class = {
    .drain = NULL, /* never pushed into a pool */
    .lend_slot = op_release_token_lend_slot,
    .take_back_slot = op_release_token_take_back_slot,
};
static op_token op_release_token = {.cls = &op_release_token_class};

void op_release_flush_on_worker(void) {
    if (op_tls_releases.count == 0) return;
    /* No task and no queue: the monitor watches the releases (a deinit may block), no promoter
     * raises them, so the nice is never restored to. */
    op_worker_body_begin(&op_release_token, NULL, NULL, OP_NICE_UNCHANGED);
    op_release_flush();
    op_worker_body_end(false);
}

void op_release_flush_if_safe(void) {
    op_release_buffer *buffer = &op_tls_releases;
    if (buffer->holds != 0 || buffer->flushing) return;
    op_queue_t *running = op_tls_queue, *draining = op_tls_drain.queue;
    if (running == NULL && draining == NULL) {
        op_release_flush();
        return;
    }
    /* In a body or a drain: release now what belongs to other queues (this thread holds no unit
     * of them: as safe as Foundation's release at the finish, and a context kept here while the
     * body goes on to wait for its queue would make that wait wait for itself), and keep this
     * queue's for the end of the body or drain. */
    if (buffer->unlooked == 0) return;
    buffer->flushing = true;
    for (;;) {
        /* What is kept now is this body's or drain's queue's: the end of it releases that. */
        buffer->unlooked = 0;
        uint32_t kept = 0, taken = 0;
        op_release_entry *now = NULL;
        for (uint32_t i = 0; i < buffer->count; i++) {
            op_release_entry entry = buffer->entries[i];
            bool mine = entry.queue == running || entry.queue == draining || !entry.counted;
            if (!mine && !now) now = malloc((size_t)buffer->count * sizeof *now);
            if (mine || !now) { /* (out of memory: left for the end of the body) */
                buffer->entries[kept++] = entry;
                continue;
            }
            now[taken++] = entry;
        }
        buffer->count = kept;
        if (taken == 0) {
            free(now);
            break;
        }
        op_release_entries(now, taken, false); /* what they take: the loop looks again */
        free(now);
    }
    buffer->flushing = false;
}

/* ---- the helper: a drainer's batch released elsewhere while it goes on --------------------- */

/* The helper: a queue of default width at background class, not tracking, made on first use in
 * this process (a forked child makes its own), never freed; NULL when it could not be made. */
static pthread_mutex_t op_release_helper_lock = PTHREAD_MUTEX_INITIALIZER;
static op_queue_t *_Atomic op_release_helper_queue;
static _Atomic pid_t op_release_helper_pid;

static op_queue_t *op_release_helper(void) {
    pid_t pid = getpid();
    /* acquire: the helper made by the thread that stored the pid. */
    if (OP_UNLIKELY(atomic_load_explicit(&op_release_helper_pid, memory_order_acquire) != pid)) {
        pthread_mutex_lock(&op_release_helper_lock);
        if (atomic_load_explicit(&op_release_helper_pid, memory_order_relaxed) != pid) {
            /* First use, or a child of a fork: the parent's helper (and its slots) stays
             * behind, leaked as the header's FORK section says of queues. */
            op_queue_t *helper =
                op_queue_create("operations releases", OP_QOS_BACKGROUND, OP_WIDTH_DEFAULT);
            atomic_store_explicit(&op_release_helper_queue, helper, memory_order_relaxed);
            /* release: the helper before the pid that says it is made (when it could not be,
             * NULL: the drainers release their batches themselves, and a later call tries
             * again). */
            if (helper) atomic_store_explicit(&op_release_helper_pid, pid, memory_order_release);
        }
        pthread_mutex_unlock(&op_release_helper_lock);
    }
    return atomic_load_explicit(&op_release_helper_queue, memory_order_relaxed);
}

void op_release_lock_for_fork(void) { pthread_mutex_lock(&op_release_helper_lock); }

void op_release_unlock_after_fork(void) { pthread_mutex_unlock(&op_release_helper_lock); }

/* The helper's task: releases the batch, then says so. */
static void op_release_helper_run(void *context) {
    op_release_handed *handed = context;
    op_release_buffer *buffer = &op_tls_releases;
    bool was = buffer->flushing;
    buffer->flushing = true; /* a wait from a release does not wait for releases */
    op_release_entries(handed->entries, handed->count, true);
    buffer->flushing = was;
    uint32_t expected = OP_BATCH_OUT;
    /* acq_rel: our writes before DONE are seen by the drainer that frees the batch (release);
     * its ABANDONED, and what it wrote before, are seen before we free it (acquire). */
    if (!atomic_compare_exchange_strong_explicit(&handed->state, &expected, OP_BATCH_DONE,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        free(handed); /* ABANDONED: its drainer's thread ended */
    }
}

/* Whether this thread's batch with a helper is released (freeing it), or there is none. */
static bool op_release_handed_done(op_release_buffer *buffer) {
    op_release_handed *handed = buffer->handed;
    if (!handed) return true;
    /* acquire: the helper's releases before we free the batch. */
    if (atomic_load_explicit(&handed->state, memory_order_acquire) != OP_BATCH_DONE) return false;
    free(handed);
    buffer->handed = NULL;
    return true;
}

bool op_release_hand_off(op_queue_t *queue) {
    op_release_buffer *buffer = &op_tls_releases;
    pid_t pid = getpid();
    /* A child of a fork forgets the parent's batch: its helper does not run here (leaked, as the
     * header's FORK section says of the parent's queued work). */
    if (OP_UNLIKELY(buffer->handed && buffer->handed_pid != pid)) buffer->handed = NULL;
    if (!op_release_handed_done(buffer)) return false; /* the last batch is still out: leave */
    if (buffer->flushing || buffer->count == 0 || !op_release_register(buffer)) return false;
    op_queue_t *helper = op_release_helper();
    if (!helper) return false;
    uint32_t count = buffer->count;
    op_release_handed *handed = malloc(sizeof *handed + (size_t)count * sizeof(op_release_entry));
    if (!handed) return false;
    /* Counted before they leave the drain: a waiter of the queue waits for the helper. */
    op_release_adopt(queue);
    atomic_init(&handed->state, OP_BATCH_OUT);
    handed->count = count;
    memcpy(handed->entries, buffer->entries, (size_t)count * sizeof(op_release_entry));
    if (op_queue_submit_f(helper, op_release_helper_run, handed) != 0) {
        free(handed); /* out of memory: they stay in the buffer (counted), released as we leave */
        return false;
    }
    buffer->count = 0;
    buffer->unlooked = 0;
    buffer->handed = handed;
    buffer->handed_pid = pid;
    return true;
}

/* The thread ends: what it kept is released (it holds nothing now), its buffer freed; a batch
 * still with a helper is left to the helper to free. */
static void op_release_thread_ended(void *value) {
    op_release_buffer *buffer = value;
    op_release_flush();
    free(buffer->entries);
    buffer->entries = NULL;
    buffer->count = buffer->capacity = 0;
    op_release_handed *handed = buffer->handed;
    buffer->handed = NULL;
    buffer->registered = false;
    if (!handed) return;
    uint32_t expected = OP_BATCH_OUT;
    /* acq_rel: see op_release_helper_run. */
    if (!atomic_compare_exchange_strong_explicit(&handed->state, &expected, OP_BATCH_ABANDONED,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        free(handed); /* DONE */
    }
}

int op_release_wait(op_queue_t *queue, int64_t deadline) {
    op_release_buffer *buffer = &op_tls_releases;
    /* Not from inside a release: see the file comment. */
    if (buffer->flushing) return 0;
    /* Nor for the contexts this thread keeps itself (kept for the end of its body or hold): only
     * it can release them, and it is the one waiting. */
    uint64_t mine = 0;
    for (uint32_t i = 0; i < buffer->count; i++) {
        if (buffer->entries[i].queue == queue && buffer->entries[i].counted) mine++;
    }
    int64_t start = op_now_ns();
    long pause_ns = 1000;
    /* The helper runs at background class, so as not to take the CPU from the work whose
     * releases it takes; a wait for them raises it until the wait ends, to the waiter's class,
     * the queue's, or utility, whichever is highest: saturated background work must not hold up
     * a waiter (release_help_probe.c), not even one of an ordinary thread (which counts as
     * background) on a background queue. The raise is the runtime's own, made with promotion
     * off too (op_queue_raise). Batches queued to the helper then run on the raised class's
     * workers; one a background worker runs already stays at its nice where the process may
     * not lower it (unprivileged): the waiter waits for background's share of a CPU then. */
    op_queue_t *raised = NULL;
    op_qos_t raised_to = OP_QOS_BACKGROUND;
    int rc = 0;
    /* acquire: the releases are visible once the count dropped. */
    while (atomic_load_explicit(&queue->releasing, memory_order_acquire) > mine) {
        int64_t now = op_now_ns();
        if (deadline >= 0 && now >= deadline) {
            rc = ETIMEDOUT;
            break;
        }
        if (now - start < OP_WAIT_SPIN_NS) {
            op_spin_pause(now - start);
            continue;
        }
        if (!raised) {
            op_qos_t waiter = op_current_thread_qos(), own = op_queue_qos(queue);
            raised_to = waiter > own ? waiter : own;
            if (raised_to < OP_QOS_UTILITY) raised_to = OP_QOS_UTILITY;
            raised = op_release_helper();
            if (raised) op_queue_raise(raised, raised_to);
        }
        /* Releases run user code and may take long: sleep, doubling up to 1 ms, rather than
         * keep a CPU (a child forked while contexts were in another thread's buffer waits here
         * until its timeout: they are never released there). */
        if (deadline >= 0 && now + pause_ns > deadline) pause_ns = (long)(deadline - now);
        struct timespec pause = {.tv_sec = 0, .tv_nsec = pause_ns};
        nanosleep(&pause, NULL);
        if (pause_ns < 1000000) pause_ns *= 2;
    }
    if (raised) op_queue_unpromote(raised, raised_to);
    return rc;
}
