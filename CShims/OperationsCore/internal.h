/*
 * internal.h — structures and functions shared between the core's files; not installed.
 *
 * The data's path: op_queue_submit (queue.c) → a task whose dependencies are done goes into its
 * queue's op_ready_queue (ready_queue.c) → the queue claims a slot of its width and pushes a
 * token (the queue pointer) into the worker pool of its QoS class (worker_pool.c), waking a
 * parked worker (parking.c) → the worker drains the queue (drain.c), running tasks at their nice
 * value (nice.c) → finishing a task releases its dependents (dependencies.c). Work released on a worker
 * that drains the queue (a body's submits to its own queue, dependents made ready by a finish)
 * stays on that worker: the finish hand-off, then its local run queue (local_run_queue.c), from
 * which the queue's other drainers steal.
 */
#ifndef OPERATIONS_CORE_INTERNAL_H
#define OPERATIONS_CORE_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "operations_core.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* Producer and consumer ends of shared structures are kept this far apart: x86-64 prefetches
 * cache lines in pairs, so 64 bytes is not enough to stop false sharing. */
#define OP_CACHE_LINE 128

#define OP_LIKELY(x) __builtin_expect(!!(x), 1)
#define OP_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Aborts with a message: for states the core cannot continue from (out of memory while growing
 * a ready queue, a broken invariant). Never used for bad input from callers. */
_Noreturn void op_fatal(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* The race-window build (race_window.c): a seeded random short delay at a publication point,
 * compiled in only with OPERATIONS_RACE_WINDOWS. `point` names the window for readers. */
#ifdef OPERATIONS_RACE_WINDOWS
void op_race_window(const char *point);
#define OP_RACE_WINDOW(point) op_race_window(point)
#else
#define OP_RACE_WINDOW(point) ((void)0)
#endif

static inline void op_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* ---- ready_queue.c ------------------------------------------------------------------------ */

/* One band: an unbounded MPMC FIFO made of a chain of bounded rings. */
typedef struct op_ring op_ring;
typedef struct op_fifo {
    alignas(OP_CACHE_LINE) op_ring *_Atomic head; /* consumers' ring */
    alignas(OP_CACHE_LINE) op_ring *_Atomic tail; /* producers' ring */
    alignas(OP_CACHE_LINE) op_ring *first;        /* every ring ever used, chained by next */
} op_fifo;

void op_fifo_init(op_fifo *fifo, uint32_t initial_capacity);
void op_fifo_destroy(op_fifo *fifo);
void op_fifo_push(op_fifo *fifo, void *item);
void *op_fifo_pop(op_fifo *fifo);
bool op_fifo_maybe_nonempty(const op_fifo *fifo);
/* About how many items the fifo holds, at most `limit` (reserved cells count; a snapshot that
 * reads the producers' line: for sizing a burst of claims, not for the hot path). */
uint64_t op_fifo_count_hint(const op_fifo *fifo, uint64_t limit);

struct op_ready_queue {
    op_fifo bands[OP_PRIORITY_COUNT];
};
void op_ready_queue_init(op_ready_queue_t *queue, uint32_t initial_capacity);
void op_ready_queue_deinit(op_ready_queue_t *queue);
/* True when a band from `band` up may hold an item; a hint, like op_fifo_maybe_nonempty. */
bool op_ready_queue_maybe_nonempty_from(const op_ready_queue_t *queue, op_priority_t band);
/* About how many entries the bands hold, at most `limit` (stale re-band entries count too). */
uint64_t op_ready_queue_count_hint(const op_ready_queue_t *queue, uint64_t limit);

/* ---- parking.c ------------------------------------------------------------------------------ */

struct op_event {
    /* Low 32 bits: threads between prepare_wait and the end of wait. High 32 bits: the epoch,
     * bumped by every notify that finds a waiter; the futex sleeps on this half. */
    alignas(OP_CACHE_LINE) _Atomic uint64_t state;
};
void op_event_init(op_event_t *event);
/* Futex helpers shared with dependencies.c and queue.c. */
int op_futex_wait(_Atomic uint32_t *word, uint32_t expected, int64_t timeout_ns);
void op_futex_wake(_Atomic uint32_t *word, int count);
int64_t op_now_ns(void);
/* Before a waiter sleeps it re-checks its condition this long, pausing and then yielding the
 * CPU between looks: a futex wake-up costs tens to hundreds of microseconds on a VM, more than
 * short waits take. */
#define OP_WAIT_SPIN_NS 20000
/* One pause of such a spin loop: CPU pauses for the first microsecond, then sched_yield. */
void op_spin_pause(int64_t spun_ns);

/* ---- local_run_queue.c ------------------------------------------------------------------ */

#define OP_LOCAL_RUN_QUEUE_SIZE 256 /* a power of two */

/* A pinned worker's own run queue (see local_run_queue.c and the public header): owner pushes
 * and pops, other drainers of the same queue steal half. Entries are ready-queue entries
 * (tagged task pointers); the tag a ring serves is the op_queue_t whose tasks it holds. */
struct op_local_run_queue {
    alignas(OP_CACHE_LINE) _Atomic uint64_t head; /* consumers: position | generation << 32 */
    alignas(OP_CACHE_LINE) _Atomic uint32_t tail; /* written by the owner only */
    const void *_Atomic queue;                    /* the op_queue_t it serves; the owner's */
    void *_Atomic slots[OP_LOCAL_RUN_QUEUE_SIZE];
};
typedef op_local_run_queue_t op_local_run_queue;

void op_local_run_queue_init(op_local_run_queue *ring);
/* Any thread: false when it may hold an entry (a hint). */
bool op_local_run_queue_is_empty(const op_local_run_queue *ring);
/* The owner: how many entries its ring holds (thieves may have taken some meanwhile: a hint). */
uint32_t op_local_run_queue_length(const op_local_run_queue *ring);
/* A thread draining `queue` that has no ring of its own (a spare): takes one entry of
 * `victim`'s, if they are `queue`'s, or NULL. */
void *op_local_run_queue_steal_one(op_local_run_queue *victim, const void *queue);

/* ---- task.c (the task object) and dependencies.c (the graph) --------------------------------- */

enum {
    OP_STATE_SUBMITTED = 1u << 0, /* handed to a queue */
    OP_STATE_QUEUED = 1u << 1,    /* pushed into its queue's ready queue (exactly once) */
    OP_STATE_RUNNING = 1u << 2,   /* a worker took it */
    OP_STATE_FINISHED = 1u << 3,
    OP_STATE_CANCELLED = 1u << 4,
    OP_STATE_WAITERS = 1u << 5, /* someone sleeps on the state word */
    OP_STATE_BODY_DONE = 1u << 6, /* the body returned (manual-completion tasks) */
    /* handed to its own class's workers, outside its queue's slots (own_class_run.c): its
     * manual completion gives back its busy unit only, no slot; a promotion is not counted on
     * its queue */
    OP_STATE_OUTSIDE_WIDTH = 1u << 7,
    OP_STATE_DEFER = 1u << 8,     /* the body asked to go back to waiting (op_task_defer) */
    OP_STATE_TAKEN = 1u << 9,     /* a worker claimed its ready-queue entry (op_queue_take_ready) */
    /* The finish is over: on_finish ran and the dependents were counted down (set last, after
     * FINISHED). op_task_wait returns on it, so a waiter finds the dependents ready. */
    OP_STATE_RELEASED = 1u << 10,
    /* QoS promotion (promotion.c): the class it was raised to + 1 in bits 16-18 (0: none),
     * COUNTED when that raise is also counted on its queue (queue->promo_counts), PROMOTING while a
     * promoter changes either (the finisher waits for it before it settles the count). */
    OP_STATE_PROMO_COUNTED = 1u << 19,
    OP_STATE_PROMOTING = 1u << 20,
};
#define OP_STATE_PROMO_SHIFT 16
#define OP_STATE_PROMO_MASK (UINT32_C(7) << OP_STATE_PROMO_SHIFT)
/* The class a state word says the task was promoted to, or -1. */
static inline int op_state_promoted_qos(uint32_t state) {
    return (int)((state & OP_STATE_PROMO_MASK) >> OP_STATE_PROMO_SHIFT) - 1;
}

/* Re-banding (op_task_set_priority on a queued task) pushes a second entry into the new band.
 * Each entry carries, in its pointer's low bits (tasks are 16-byte aligned), the generation the
 * task had when it was pushed; the generation lives in these bits of the state word and the
 * re-band bumps it. A worker claims a task by setting TAKEN only if the entry's generation is
 * the task's current one, so exactly one entry runs the task and the others are skipped. After
 * 16 re-bands of one waiting task an old entry may match again: the task still runs exactly
 * once, only its position is then that of the older entry. Settling a deferral (the task goes
 * back to waiting) bumps it too, and an entry found while the task is not QUEUED is stale
 * whatever its generation (op_queue_claim_entry). */
#define OP_STATE_GEN_SHIFT 12
#define OP_STATE_GEN_MASK (UINT32_C(0xF) << OP_STATE_GEN_SHIFT)
#define OP_ENTRY_TAG_MASK ((uintptr_t)0xF)

/* The dependency count holds this extra unit until the task is submitted, so a task can only
 * become ready through submission (or cancellation after submission). Dependencies and holds
 * stay below it (2^31 of them would exhaust memory long before). */
#define OP_PENDING_HOLD (UINT32_C(1) << 31)

/* Internal bits of op_task.flags, above the public OP_TASK_* ones. */
enum {
    OP_TASK_IS_JOB = 1u << 5,     /* submitted with op_queue_submit_job */
    OP_TASK_IS_BARRIER = 1u << 6, /* submitted with op_queue_submit_barrier */
    OP_TASK_HAS_EXT = 1u << 7,    /* `context` points to an op_task_ext */
};

/* What few tasks have, kept out of line so a task fits in 72 bytes: created with the task when
 * it has an on_finish callback. Owned by the task, freed with it. */
typedef struct op_task_ext {
    void *context; /* the caller's context */
    op_task_fn on_finish;
} op_task_ext;

/* A dependency edge (dependencies.c): owned by the dependent task (freed with it) and linked
 * into two lists: the dependent's own list (to find it for removal) and the dependency's
 * `dependents` list, a push-only stack that the dependency closes (OP_EDGES_CLOSED) when it
 * finishes. It moves out of OP_EDGE_ACTIVE once, by compare-and-swap. */
typedef struct op_edge op_edge;
enum { OP_EDGE_ACTIVE = 0, OP_EDGE_FIRED = 1, OP_EDGE_REMOVED = 2, OP_EDGE_DEAD = 3 };
struct op_edge {
    op_task_t *dependent;   /* owner */
    op_task_t *dependency;  /* compared by remove_dependency, never dereferenced through here */
    _Atomic uint32_t state; /* OP_EDGE_* */
    op_edge *next_in_dependency;
    op_edge *next_owned;
};
#define OP_EDGES_CLOSED ((op_edge *)(uintptr_t)1)

/* 72 bytes (an 80-byte malloc chunk): a queued BlockOperation is this plus a 40-byte Swift
 * object (a 48-byte chunk). */
struct op_task {
    _Atomic uint32_t state;          /* OP_STATE_* bits; futex word for op_task_wait */
    _Atomic uint32_t refs;
    _Atomic uint32_t pending;        /* unfinished dependencies + holds + OP_PENDING_HOLD */
    _Atomic uint32_t holds;          /* units of `pending` that are holds, not dependencies */
    op_task_fn fn;
    void *context;                   /* the caller's, or an op_task_ext (OP_TASK_HAS_EXT) */
    op_queue_t *_Atomic queue;       /* set once by submit */
    op_edge *_Atomic dependents;     /* edges of tasks waiting for this one; CLOSED when done */
    op_edge *_Atomic own_edges;      /* edges this task owns (one per dependency it was given) */
    op_task_t *registry_next;        /* registry.c: the tracking queue's stack */
    uint32_t barrier_seq;            /* registry.c: number of the barrier it waits for (0: none),
                                      * or a barrier's own number */
    uint8_t priority;
    int8_t qos;                      /* op_qos_t or OP_QOS_INHERIT */
    int8_t nice_delta;               /* from thread_priority */
    uint8_t flags;                   /* OP_TASK_* */
};

/* The context the caller gave (what the body and on_finish receive). */
static inline void *op_task_user_context(const op_task_t *task) {
    return OP_UNLIKELY(task->flags & OP_TASK_HAS_EXT) ? ((op_task_ext *)task->context)->context
                                                      : task->context;
}

/* task_cache.c: task memory recycled between threads. */
op_task_t *op_task_cache_alloc(void);
void op_task_cache_free(op_task_t *task);
/* Fills a freshly allocated task; attr must be valid. */
void op_task_init(op_task_t *task, op_task_fn fn, void *context, const op_task_attr_t *attr);

/* dependencies.c (the queues reach these through op_queue_graph): marks the task finished, runs
 * on_finish, releases dependents, wakes waiters; false when it was already finished. Queue
 * accounting is the caller's. */
bool op_task_finish(op_task_t *task);
/* After a body that called op_task_defer returned: back to waiting (worker side). */
void op_task_settle_deferred(op_task_t *task);

/* ---- queue.c -------------------------------------------------------------------------------- */

typedef struct op_pool op_pool;
typedef struct op_placement op_placement;

/* What the worker pool hands to its workers: a token stands for one claimed slot of a queue. The
 * pool sees only this; the queue sets its class when it is created (queue.c), which is how the
 * pool calls back up (worker_pool.c names nothing of queue.c, drain.c or the tasks). */
typedef struct op_token op_token;
typedef struct op_token_class {
    /* A worker holds the slot: run the queue's tasks while the slot allows (drain.c). */
    void (*drain)(op_token *token);
    /* The task a worker runs for this token sleeps in its body (the monitor saw it): move what
     * the sleeper holds in its local run queue `ring` (NULL for a spare) to the queue's bands,
     * where any of the queue's drainers finds it (also those of another pool, after a QoS or
     * placement change), and lend its slot to the queue's other work if the queue's width
     * allows; true when lent. */
    bool (*lend_slot)(op_token *token, op_local_run_queue_t *ring);
    /* The task's body returned: take back the slot lent_slot lent. */
    void (*take_back_slot)(op_token *token);
    /* The pool that serves the token's queue now (its QoS or placement may have changed since
     * the token was pushed): where op_pool_rehome_tokens moves a token that waits elsewhere.
     * NULL: the token stays where it was pushed. */
    op_pool *(*home)(op_token *token);
} op_token_class;
struct op_token {
    const op_token_class *cls;
};

struct op_queue {
    /* Written by producers. */
    alignas(OP_CACHE_LINE) _Atomic uint64_t busy; /* unfinished tasks + claimed slots */
    /* Written when slots are claimed or released, and by drainers that run dry (rare while
     * the queue has work). Low half: claimed slots (tasks running or about to); high half:
     * drainers that ran dry and look for more before giving their slot back (OP_SLOTS_*). */
    alignas(OP_CACHE_LINE) _Atomic uint64_t slots;
    _Atomic int32_t width;                           /* as set; OP_WIDTH_DEFAULT allowed */
    /* Counted as a queue whose work waits behind its width (a default-width queue whose running
     * tasks may all be blocked where the core cannot see); see op_queue_note_waiting_at_width.
     * On the `slots` line, which a dispatch reads anyway. */
    _Atomic bool waits_at_width;
    _Atomic uint32_t bands_used; /* bit per band that ever held a task in `ready`; set once */
    _Atomic bool suspended;
    _Atomic int32_t qos;
    /* QoS promotion (promotion.c): bit c set while a promotion to class c is in force
     * (promoted unfinished tasks, a serial queue's higher-class tasks, waiters of op_queue_wait,
     * op_queue_promote): the summary of `promo_counts` that the hot path reads, rewritten
     * (seq_cst) under the queue's promotion lock at every change of them. The queue runs at the
     * highest such class when above `qos`. */
    _Atomic uint32_t promo;
    const op_placement *_Atomic placement; /* op_queue_set_cpus; NULL: every usable CPU */
    _Atomic uint32_t refs;       /* handles + 1 while busy > 0 */
    _Atomic uint32_t idle_epoch; /* futex word for op_queue_wait */
    _Atomic uint32_t idle_waiters; /* blocked waits + pending idle notices (idle_wait.c) */
    struct op_idle_notice *_Atomic idle_notices; /* op_queue_notify_idle; under idle_lock */
    pthread_mutex_t idle_lock;
    int32_t default_width;       /* what OP_WIDTH_DEFAULT means: CPUs, or the cgroup's limit */
    void *context;               /* op_queue_set_context */
    op_task_fn context_retain;
    op_task_fn context_release;
    char *label;
    op_token token; /* what the pool hands out for this queue (class set at creation) */
    op_ready_queue_t ready;
    /* Tasks a worker popped just as the queue was suspended: they were at the head, so they run
     * first on resume. `stashed` lets the hot path skip the stash with one load. */
    op_fifo stash;
    _Atomic uint32_t stashed;
    /* QoS promotion (promotion.c): how many promotions to each class are in force, plain 64-bit
     * counts (each is a live promotion: an unfinished task or a waiter, so they cannot
     * overflow), read and written only under the queue's promotion lock (op_promo_lock_of);
     * `promo` above summarises them for the hot path. */
    uint64_t promo_counts[OP_QOS_COUNT];
    /* registry.c, for tracking queues only. */
    bool tracking;
    op_task_fn release_context;
    alignas(OP_CACHE_LINE) op_task_t *_Atomic registry_head; /* newest first */
    _Atomic uint32_t submitting;           /* registrations in flight (barrier handshake) */
    uint32_t barriers_submitted; /* numbers barriers (op_task.barrier_seq); under registry_lock */
    op_task_t *_Atomic barrier;            /* the latest barrier (a reference), or NULL */
    _Atomic bool compact_requested;        /* an idle queue asked for a compaction */
    /* Finished tasks' contexts in threads' release buffers, not yet released
     * (context_release.c); op_queue_wait waits for it to reach 0. */
    _Atomic uint64_t releasing;
    alignas(OP_CACHE_LINE) pthread_mutex_t registry_lock; /* compaction, listing, barriers */
    /* The amortised-compaction threshold: tasks kept by the last compaction (written under
     * the lock), and finishes counted by finishing threads (in steps of
     * OP_REGISTRY_CHECK_EVERY) in total and as of the last compaction. */
    _Atomic uint64_t registry_kept;
    alignas(OP_CACHE_LINE) _Atomic uint64_t registry_finishes;
    _Atomic uint64_t registry_finishes_at_compaction;
};

/* queue->slots: claimed slots in the low half, idle drainers in the high half. */
#define OP_SLOTS_IDLE_ONE (UINT64_C(1) << 32)
static inline int32_t op_slots_running(uint64_t word) { return (int32_t)(uint32_t)word; }
static inline uint32_t op_slots_idle(uint64_t word) { return (uint32_t)(word >> 32); }

/* context_release.c: finished tasks' contexts given back by the thread that settled them, once
 * it holds nothing of their queue. */
/* The thread that gives back a finished task's unit of its queue (a worker retiring or having
 * run it, op_task_complete settling it), before it does: takes the task's context for release
 * if the queue tracks (nothing for jobs, or without release_context). */
void op_release_task(op_queue_t *queue, op_task_t *task);
/* Around user code that runs while the thread holds something a release may wait for (a
 * listing's callback under the registry lock, an on_finish inside a finish): no flush meanwhile;
 * the caller flushes after op_release_hold_end (op_release_flush_if_safe). */
void op_release_hold_begin(void);
void op_release_hold_end(void);
/* op_release_flush on a worker between tasks, shown to the blocked-worker monitor as a body. */
void op_release_flush_on_worker(void);
/* A drainer leaving `queue` (before its units go): counts the contexts it buffered for it. */
void op_release_adopt(op_queue_t *queue);
/* Whether this thread buffers a batch: a drainer then hands it to a helper, or leaves its
 * queue to release it. */
bool op_release_batch_full(void);
/* A drainer of `queue` with a full batch: hands it to the helper and goes on; false when its
 * last batch is still out (or out of memory): it must leave to release. */
bool op_release_hand_off(op_queue_t *queue);
/* Releases this thread's buffered contexts; the caller holds no unit of their queues (and has
 * adopted its drain's). Re-entrant calls (from a release) return at once. */
void op_release_flush(void);
/* op_release_flush, unless this thread runs a body, drains a queue or holds (op_release_hold_begin):
 * then only what belongs to other queues, or nothing. */
void op_release_flush_if_safe(void);
/* Whether this thread is releasing contexts now (a deinit running in op_release_flush). */
bool op_release_in_progress_here(void);
/* Waits until no context of `queue` waits for release (not from inside a release: returns 0);
 * ETIMEDOUT at `deadline` (op_now_ns; negative: none). */
int op_release_wait(op_queue_t *queue, int64_t deadline);
/* Fork (worker_pool.c's handlers): the prepare handler holds the lock that makes the helper
 * (taken first: a thread holding it may be making a queue), the parent and child release it. */
void op_release_lock_for_fork(void);
void op_release_unlock_after_fork(void);

/* registry.c */
void op_registry_add(op_queue_t *queue, op_task_t *task);
/* Compacts when the registry lock is free (else leaves the holder a request). No user code. */
void op_registry_compact_if_idle(op_queue_t *queue);
/* Counts `finished` tasks of this thread; true when an amortised compaction of `queue` is due
 * (the caller then runs op_registry_compact_if_idle, holding the queue alive). */
bool op_registry_compaction_due(op_queue_t *queue, uint64_t finished);
/* Compacts now (waits for the registry lock). No user code. */
void op_registry_compact_now(op_queue_t *queue);
void op_registry_destroy(op_queue_t *queue);

/* True when the queue may have a task to start (ready bands or stash); a hint. */
bool op_queue_has_ready(op_queue_t *queue);
/* Takes the next task to start: the stash first, then the highest non-empty band. */
op_task_t *op_queue_take_ready(op_queue_t *queue);
/* Claims the task a ready-queue entry stands for: true for its one current entry (the task is
 * then TAKEN), false for an entry a re-band made stale (its reference is dropped). */
bool op_queue_claim_entry(void *entry, op_task_t **out);
/* Pushes a task that just became ready (the caller won its QUEUED bit, or re-bands it) into its
 * band, tagged with its current generation. */
void op_queue_push_ready(op_queue_t *queue, op_task_t *task);
/* Pushes an entry taken from a local run queue back into its task's band. */
void op_queue_push_entry(op_queue_t *queue, void *entry);
/* Puts back a task popped while the queue was being suspended. */
void op_queue_stash(op_queue_t *queue, op_task_t *task);
/* The finish hand-off: claims `task`, which just became ready (the caller won its QUEUED bit;
 * `state` is the word it left), for the worker draining `queue` on this thread, when a pop would
 * return it anyway (no stashed task, no entry in its band or above). True: it is claimed (as
 * op_queue_take_ready claims) and the caller must not push it. */
bool op_queue_claim_for_drainer(op_queue_t *queue, op_task_t *task, uint32_t state);
/* Work released on the worker that drains `queue` (the caller won the task's QUEUED bit): into
 * that worker's local run queue, when the queue is wide, the task's band is normal and there is
 * room; then one more drainer is claimed if the local run queue was empty, none idles and the
 * width allows, or, if a drainer idles, the local run queue is handed to the bands for it.
 * False when the caller must push it into the bands and dispatch as usual. */
bool op_queue_push_local(op_queue_t *queue, op_task_t *task, bool job);

/* Marks a default-width queue that is at its width with ready work waiting, for the blocked-
 * worker monitor (see queue.c); does nothing otherwise. One relaxed load when already marked. */
void op_queue_note_waiting_at_width(op_queue_t *queue);
/* Number of slots the queue may hold at once, with the default resolved against its pool. */
int op_queue_effective_width(op_queue_t *queue);
/* Claims up to max_tokens slots for ready tasks and hands them to the pool as tokens, then
 * subtracts `sub` busy units the caller held. It claims nothing while a drainer idles (that one
 * takes the work). Its last touch of the queue is a token push or the subtraction, so the queue
 * may be freed the moment it returns. */
void op_queue_dispatch_sub(op_queue_t *queue, int max_tokens, uint64_t sub);
/* A drainer found work waiting behind the task it took: claims one more slot and hands it to
 * the pool, unless a drainer idles, the width is reached or (without `work_waits`, which says
 * the caller knows of some) the bands are empty. True when it claimed one. */
bool op_queue_ramp_up(op_queue_t *queue, bool work_waits);
/* Claims the task, registers it (tracking queues) and, when nothing holds it, puts it in the
 * bands, or, with `allow_local`, in the calling drainer's local run queue, without waking a
 * worker for the bands: the caller dispatches when *pushed_shared. Returns 0 or EBUSY. */
int op_queue_submit_one(op_queue_t *queue, op_task_t *task, bool allow_local, bool *pushed_shared);
void op_queue_busy_add(op_queue_t *queue, uint64_t count);
/* Drops `count` references at once (op_queue_release `count` times). */
void op_queue_release_many(op_queue_t *queue, uint32_t count);
/* Subtracts from busy; at zero wakes waiters and drops the busy reference (may free). On a
 * tracking queue it may compact the registry (no user code). */
void op_queue_busy_sub(op_queue_t *queue, uint64_t count);
/* Subtracts units while the caller still holds others (its slot): never reaches zero, never
 * compacts. */
void op_queue_busy_sub_held(op_queue_t *queue, uint64_t count);
/* idle_wait.c: the queue just went idle (busy reached 0) and idle_waiters was non-zero: wake
 * the blocked waits and run the idle notices. */
void op_queue_wake_idle_waiters(op_queue_t *queue);
/* idle_wait.c: frees notices left at destruction (none can be: the queue was idle). */
void op_queue_destroy_idle_notices(op_queue_t *queue);
/* The queue gives up a slot (and an idle mark, with `idle`); returns true when the caller
 * re-claimed it to go on draining because work showed up (in the bands or a local run queue). */
bool op_queue_release_slot(op_queue_t *queue, bool idle);
/* A blocked task's slot, lent to its default-width queue while it sleeps (a visible wait, or
 * the monitor saw it asleep): returns the queue when its slot was lent (the caller takes it
 * back), else NULL. */
op_queue_t *op_queue_lend_slot(op_queue_t *queue);
/* Takes a lent slot back (NULL: nothing was lent). */
void op_queue_take_back_slot(op_queue_t *queue);

/* The queue whose token this is. */
static inline op_queue_t *op_queue_of_token(op_token *token) {
    return (op_queue_t *)((char *)token - offsetof(op_queue_t, token));
}
/* Around a wait's sleep (op_task_wait, op_queue_wait): on a worker or spare, what it released
 * goes to the queue's bands, a spare stands in, and a default-width queue gets the sleeper's
 * slot lent; elsewhere they do nothing. */
void op_queue_will_block(void);
void op_queue_did_unblock(void);

/* The queue layer's calls back up into the dependency graph: a table defined and filled by
 * dependencies.c at compile time (no constructor: a static archive drops an object file whose
 * only way in is a constructor, and a program linked against liboperations_core.a then crashed on
 * its first task). drain.c and registry.c read `op_queue_graph`, so linking them pulls in
 * dependencies.o. */
typedef struct op_graph_hooks {
    /* Marks the task finished, runs on_finish, releases dependents, wakes waiters; false when
     * it was already finished (see op_task_finish). */
    bool (*finish)(op_task_t *task);
    /* After a body that called op_task_defer returned: back to waiting. */
    void (*settle_deferred)(op_task_t *task);
    int (*add_dependency)(op_task_t *task, op_task_t *dependency); /* barriers */
    void (*cancel)(op_task_t *task);                                 /* cancel-all */
} op_graph_hooks;
/* The hooks (read by drain.c and registry.c). */
extern const op_graph_hooks *const op_queue_graph;

/* ---- drain.c -------------------------------------------------------------------------------- */

/* What the thread that drains a queue keeps for itself (a worker or spare holding a slot). */
typedef struct op_drain {
    op_queue_t *queue;         /* the queue whose slot this thread holds (keeps it alive) */
    op_local_run_queue *local; /* this worker's local run queue while it serves `queue`, else NULL */
    /* The finish hand-off: the worker sets `hand_off_allowed` around the finish of a task it
     * ran; the first dependent of the same queue that this finish makes ready, and that a pop
     * would return next anyway, is claimed into `handed_off` instead of being pushed, and the
     * worker runs it next: no ready-queue push and pop, no token, and the task stays on the CPU
     * whose cache holds what its dependency wrote (a chain runs on one worker). The worker takes
     * it before anything else runs on its thread, or stashes it when it leaves the queue. */
    op_task_t *handed_off;
    bool hand_off_allowed;
    uint64_t credit;  /* busy units taken ahead for tasks that bodies submit to `queue` */
} op_drain;
extern _Thread_local op_drain op_tls_drain;

/* The worker pool's call for a token (op_token_class.drain): drains the token's queue while the
 * slot allows. */
void op_drain_token(op_token *token);
/* Runs `task` (claimed: TAKEN) of `queue` on the calling worker outside the queue's slots, as a
 * drainer would run it, and settles it: finished, its reference and busy unit go back (the last
 * touch of the queue); deferred or handed off, nothing more. `token` is what the body shows the
 * monitor (a class that lends no slot). own_class_run.c. */
void op_drain_run_outside_width(op_queue_t *queue, op_task_t *task, op_token *token);
/* The calling drainer's local run queue goes back to its queue's bands (before it sleeps in a
 * wait, so that nothing it released waits for it); true when it held anything. The caller
 * dispatches if no drainer may be coming for it. */
bool op_drain_flush_local(void);
/* Takes one busy unit for a task submitted to `queue`: from the calling drainer's credit when it
 * drains `queue` (returns true), else from the queue's counter (false). */
bool op_drain_busy_add_one(op_queue_t *queue);
/* Gives back a unit op_drain_busy_add_one took (`from_credit`: what it returned). */
void op_drain_busy_return_one(op_queue_t *queue, bool from_credit);

/* ---- placement.c ---------------------------------------------------------------------------- */

/* A set of usable CPUs that queues may be placed on, interned (one object per set, never
 * freed), with a pool per class made on first use. */
int op_placement_size(const op_placement *placement);
/* The topology index (0 … cpu_count-1) of the placement's `i`-th CPU. */
int op_placement_usable_index(const op_placement *placement, int i);
/* The pool of class `qos` on the placement. */
op_pool *op_placement_pool(const op_placement *placement, op_qos_t qos);
/* Fork: op_placement_lock_for_fork / _unlock_after_fork hold the placements' lock across
 * fork() (prepare and parent handlers); op_placement_forget_pools_after_fork (child) forgets
 * every placement's pools (their threads are not in the child: they are made again on first use)
 * and releases the lock. */
void op_placement_lock_for_fork(void);
void op_placement_unlock_after_fork(void);
void op_placement_forget_pools_after_fork(void);
/* Binds the calling thread to the placement's CPUs (a spare of a placed pool). */
void op_placement_bind_current_thread(const op_placement *placement);
/* The pool that runs `queue`'s tasks now: its placement's, or its class's default pool. */
op_pool *op_queue_pool(op_queue_t *queue);
/* Whether `pool` is (still) the pool that runs `queue`'s tasks: the queue's class and placement
 * are the pool's. relaxed loads: a drainer's check between tasks; a stale answer is corrected
 * at its next look, and op_queue_pool reads the placement with acquire. */
bool op_pool_serves(const op_pool *pool, op_queue_t *queue);

/* ---- worker_pool.c -------------------------------------------------------------------------- */

/* The default pool of class `qos`, made on first use, for work of that class: it counts as the
 * class asked for (op_class_requested). */
op_pool *op_pool_for(op_qos_t qos);
/* The same pool borrowed for its nice value (hop.c's op_pool_at_nice: a thread priority whose
 * nice a class happens to have): no class was asked for. */
op_pool *op_pool_for_nice_of_class(op_qos_t qos);
/* The pool of class `qos` for a placement, made on first use and stored in `slot` (the
 * placement's slot for that class); counts as the class asked for, as op_pool_for. */
op_pool *op_pool_for_placement(const op_placement *placement, op_qos_t qos, op_pool *_Atomic *slot);
/* The placement a pool serves, or NULL for a class's default pool. */
const op_placement *op_pool_placement(const op_pool *pool);
/* Hands a token (a queue's claimed slot) to the pool and wakes a worker if none searches. */
void op_pool_push_token(op_pool *pool, op_token *token);
/* Moves the tokens waiting in `pool` whose queue another pool serves now (a QoS or placement
 * change) to that pool; the others go back. Called when a queue leaves `pool` and by the
 * monitor for a pool whose tokens wait for two ticks: a token pushed before the change would
 * otherwise wait until one of `pool`'s workers is free, which a pool busy with long bodies may
 * not be for a long time, while the queue's own pool idles. */
void op_pool_rehome_tokens(op_pool *pool);
/* The queue's pool may have changed from `before` (its QoS, placement or promoted class did):
 * its tokens waiting there move to the pool that serves it now (queue.c). */
void op_queue_left_pool(op_queue_t *queue, op_pool *before);
/* True when a token may wait in the pool (a hint). */
bool op_pool_has_tokens(op_pool *pool);
/* The pool of the worker or spare on this thread, or NULL. */
op_pool *op_pool_current(void);
/* The class a pool serves (op_qos_t). */
int op_pool_qos(const op_pool *pool);
/* The local run queue of the pinned worker on this thread; NULL on spares and other threads. */
op_local_run_queue *op_worker_local_run_queue(void);
/* For a drainer of the queue `tag` stands for that found nothing: takes an entry of that queue
 * from another worker's local run queue (with `thief`, half of that worker's entries move into
 * it and one is returned), or NULL. */
void *op_pool_steal(op_pool *pool, op_local_run_queue *thief, const void *tag);
/* True when some worker's local run queue may hold a task of the queue `tag` stands for. */
bool op_pool_local_work(op_pool *pool, const void *tag);
/* A queue has work waiting behind its width (+1), or no longer (-1): while any has, the
 * blocked-worker monitor looks at every pool's workers as it does at a pool whose tokens wait (a
 * task asleep in its body may hold the slot that work needs, on whichever pool it started: the
 * queue's QoS or placement may have changed since). +1 wakes the monitor. */
void op_pool_count_queue_waiting_at_width(int delta);

/* What a worker or spare (the calling thread) offers the code that runs tasks on it: */
/* Before a task runs: the class's current nice value is applied; returns the nice it runs at. */
int op_worker_refresh_nice(void);
/* A task body for `token` starts: the monitor may count the worker blocked in it from now on. */
void op_worker_body_begin(op_token *token);
/* The body returned: takes back what the monitor lent for it (op_token_class.take_back_slot). */
void op_worker_body_end(void);
/* A task was retired without running a body (counted for op_runtime_worker_info). */
void op_worker_count_task(void);
/* Around a visible wait's sleep (op_queue_will_block): counts the thread blocked and makes
 * sure a spare stands in; returns false when the monitor already lent the task's slot. No-ops
 * (returning false) on threads that are not the pool's. */
bool op_worker_will_block(void);
/* After op_worker_will_block: whether the wait's queue lent its slot (see op_queue_will_block). */
void op_worker_wait_settled(bool lent);
void op_worker_did_unblock(void);

/* Sets the thread-locals seen by op_task_current / op_queue_current. */
extern _Thread_local op_task_t *op_tls_task;
extern _Thread_local op_queue_t *op_tls_queue;

/* ---- blocked_worker_monitor.c --------------------------------------------------------------- */

/* The monitor's tick (the worker pool's): looks at the workers, true while work waits. */
typedef bool (*op_monitor_tick_fn)(void);
/* Starts the monitor thread once; it calls `tick` while work waits. */
void op_monitor_start(op_monitor_tick_fn tick);
/* A token was handed out, or a task kept in a local run queue (after the pusher's seq_cst
 * fence): wakes the monitor if it sleeps. */
void op_monitor_poke(void);
/* Whether the monitor sleeps until poked (for op_runtime_describe). */
bool op_monitor_is_asleep(void);
/* Whether the kernel reports thread `tid` of this process asleep (state S or D). */
bool op_thread_is_asleep(int tid);

/* Fork (worker_pool.c registers the pthread_atfork handlers): the child handler makes the
 * monitor start again on first use (its pthread_once, state word and tick counter) and forgets
 * what it learned about /proc. Called in the child only, where the caller is the one thread. */
void op_monitor_forget_after_fork(void);

/* ---- faults.c ------------------------------------------------------------------------------- */

/* pthread_create for every thread the core starts; returns 0 or an errno value (EAGAIN when a
 * test injects the failure with OPERATIONS_FAULT_THREAD_CREATE). */
int op_thread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                     void *arg);
/* OPERATIONS_FAULT_PROC=unreadable: the monitor treats /proc as missing. */
/* faults.c: true when OPERATIONS_FAULT_SETPRIORITY=eperm makes every setpriority fail. */
bool op_fault_setpriority_refused(void);
bool op_fault_proc_unreadable(void);

/* ---- topology.c ----------------------------------------------------------------------------- */

typedef struct op_topology_data {
    int cpu_count;
    int node_count;
    bool numa;
    const char *fallback_reason;
    int *cpus;        /* cpu id of each usable CPU */
    int *cpu_node;    /* node index of each usable CPU */
    int max_cpu_id;   /* for the reverse table */
    int *node_of_cpu_id; /* indexed by cpu id; -1 when not usable */
    size_t cpuset_size;  /* CPU_ALLOC_SIZE for a set that can hold every usable cpu id */
    double cpu_quota;    /* the cgroup's CPU limit in CPUs (quota / period); 0 = none */
    int default_width;   /* min(cpu_count, ceil(cpu_quota)), at least 1: OP_WIDTH_DEFAULT */
    const char *quota_error; /* why a cgroup limit file was ignored, or NULL */
} op_topology_data;

const op_topology_data *op_topology_get(void);
/* Pins the calling thread to `cpu` (libnuma when in use, else pthread affinity) and prefers
 * memory of `node`. A failure is recorded (the fallback reason) but never fatal. */
void op_topology_pin_current_thread(int cpu, int node);
/* Node index of the CPU the caller runs on (0 when unknown). */
int op_topology_current_node(void);
/* The affinity mask of thread `tid` (0: the caller) whatever the kernel's CPU count: the set
 * grows from CPU_SETSIZE until sched_getaffinity takes it. A CPU_ALLOC'd set (CPU_FREE it) and
 * its size in bytes, or NULL. */
cpu_set_t *op_affinity_of(int tid, size_t *size);
/* A CPU_ALLOC'd set of topology->cpuset_size bytes with the given cpu ids (CPU_FREE it), or
 * NULL when out of memory. */
cpu_set_t *op_cpuset_of(const int *cpu_ids, int count);

/* ---- cgroup.c ------------------------------------------------------------------------------- */

typedef struct op_cgroup_cpu_limit {
    double quota;     /* CPUs of time allowed (quota / period, tightest level); 0 = no limit */
    int cpus;         /* ceil(quota / period) of the tightest level; 0 = no limit */
    bool overridden;  /* read from OPERATIONS_CGROUP_ROOT */
    char error[512];  /* a limit file that could not be read or parsed (then no limit), or "" */
} op_cgroup_cpu_limit;

/* Reads the process's cgroup CPU limit (v2 cpu.max or v1 cfs quota), or the files in
 * OPERATIONS_CGROUP_ROOT. Called once, at topology start-up. */
void op_cgroup_read_cpu_limit(op_cgroup_cpu_limit *out);

/* ---- env.c ---------------------------------------------------------------------------------- */

/* 1 for on / 1 / true / yes / enable(d), 0 for off / 0 / false / no / disable(d) (any case,
 * blanks around forgiven), -1 for anything else or NULL. */
int op_env_parse_flag(const char *value);
/* The on/off variable `name`: `default_value` when unset, empty or unrecognised (then with
 * one line on stderr naming the variable, the value and the accepted spellings). */
bool op_env_flag(const char *name, bool default_value);
/* A whole number of decimal digits (blanks around forgiven) within [min, max] (min >= 0):
 * 0 with *out set, EINVAL when `value` is NULL or not such a number (a sign, a unit, other
 * text), ERANGE when it is outside [min, max] or beyond int64_t. */
int op_env_parse_int(const char *value, int64_t min, int64_t max, int64_t *out);
/* The whole-number variable `name` (`unit` names what it counts, for the message):
 * `default_value` when unset or empty, or when op_env_parse_int refuses it (then with one line
 * on stderr naming the variable, the value, the accepted range and the default). Read it once
 * (under a pthread_once), so the line is printed at most once. */
int64_t op_env_int(const char *name, int64_t default_value, int64_t min, int64_t max,
                   const char *unit);

/* ---- nice.c --------------------------------------------------------------------------------- */

void op_nice_init(void);
/* Generation of the nice table: bumped by op_runtime_set_nice_table. */
uint32_t op_nice_generation(void);
/* Wanted nice of a class, straight from the table. */
int op_nice_of_class(int qos);
/* The nice a worker should hold between tasks for a wanted value, after clamping for the
 * process's privilege, given the nice the thread started with. Reports a clamp once. */
int op_nice_clamp_class(int wanted, int thread_base);
/* The nice to apply for a task body on a worker sitting at class_nice; reports clamps once. */
int op_nice_clamp_task(int wanted, int class_nice);
/* True when the process may set `nice` on a thread at any time (it is at or above the lowest
 * settable value: CAP_SYS_NICE, RLIMIT_NICE). */
bool op_nice_can_hold(int nice);
/* setpriority on the calling thread; returns 0 or errno. */
int op_nice_set_current_thread(int nice);

/* Reports that only a user of a class should see, made when that class is first asked for:
 * bit OP_CLASS_REPORT_SHIFT(c) while the shifted table's report is due to a user of class c
 * (nice.c: c's own value lies below the floor), OP_CLASS_REPORT_SLICE(c) while a refused short
 * time slice's is (time_slice.c: the latency classes). Zero in a process with nothing to say. */
extern _Atomic uint32_t op_class_reports_pending;
#define OP_CLASS_REPORT_SHIFT(qos) (UINT32_C(1) << (qos))
#define OP_CLASS_REPORT_SHIFT_ALL ((UINT32_C(1) << OP_QOS_COUNT) - 1)
#define OP_CLASS_REPORT_SLICE(qos) (UINT32_C(1) << (8 + (qos)))
#define OP_CLASS_REPORT_SLICE_ALL (OP_CLASS_REPORT_SHIFT_ALL << 8)
/* nice.c: makes the reports due to a user of class `qos` (each once per process). */
void op_class_report(int qos);
/* Class `qos` is asked for: by a queue or task of that class, a promotion to it, or
 * op_runtime_start_workers (worker_pool.c's op_pool_for and op_pool_for_placement; not a pool
 * borrowed for its nice value). One relaxed load when nothing is due: a hint, op_class_report's
 * read-modify-write decides. */
static inline void op_class_requested(int qos) {
    if (OP_UNLIKELY(atomic_load_explicit(&op_class_reports_pending, memory_order_relaxed) &
                    (OP_CLASS_REPORT_SHIFT(qos) | OP_CLASS_REPORT_SLICE(qos)))) {
        op_class_report(qos);
    }
}

/* time_slice.c: asks the kernel for the short slice of a worker of the default class or above
 * (the calling thread); false when off, refused or ignored. With `report` (the latency
 * classes) a refusal is noted, and said once on stderr when a latency class is asked for
 * (op_time_slice_report_refusal). */
bool op_time_slice_shorten_current_thread(bool report);
/* time_slice.c: class `qos` was asked for: says a noted refusal once, if it is a latency class
 * and warnings are on (op_runtime_clamp_warning). */
void op_time_slice_report_refusal(int qos);
/* time_slice.c: a worker of another class (or the monitor, the spawner) gives up the short
 * slice it inherited from the thread that created it (a short-slice worker, or a body on one). */
void op_time_slice_reset_current_thread(void);
int op_current_tid(void);

/* ---- spawner.c ------------------------------------------------------------------------------ */

/* Starts the spawner thread (nice.c, at start-up, when the process may not lower nice values
 * freely). */
void op_spawner_start(void);
/* op_thread_create for a thread that must be able to run at `nice`: created by the spawner when
 * the caller sits above it and may not lower to it. */
int op_thread_create_at(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                        void *arg, int nice);
/* Fork, in the child: the spawner is gone. */
void op_spawner_forget_after_fork(void);

/* ---- promotion.c ------------------------------------------------------------------------- */

/* The class the queue's tasks run at now: its QoS, or the highest class it is promoted to (the
 * highest bit of `promo`, the summary of the queue's promotion counts). relaxed loads: a
 * drainer's look between tasks (op_pool_serves) and the pool a token goes to; the promoters
 * rehome tokens after a change, and the Dekker pair with running bodies is in promotion.c. */
static inline int op_queue_run_qos(op_queue_t *queue) {
    int qos = (int)atomic_load_explicit(&queue->qos, memory_order_relaxed);
    uint32_t promo = atomic_load_explicit(&queue->promo, memory_order_relaxed);
    if (OP_LIKELY(promo == 0)) return qos;
    int top = 31 - __builtin_clz(promo);
    return top > qos ? top : qos;
}
/* The class a claimed task of `queue` runs at, given the state word its worker read when it
 * took it: its own QoS or its queue's run class, raised to its promotion. */
int op_task_run_qos(op_task_t *task, op_queue_t *queue, uint32_t state);
/* The finisher of a task whose state had COUNTED or PROMOTING (`old`): waits out a promoter and
 * takes the task's promotion off its queue. */
void op_promotion_settle_finished(op_task_t *task);
/* A drainer starts `task` at `qos` because its queue was promoted: the task reports it (a
 * compare-and-swap of its promotion level, not counted on the queue). */
void op_promotion_note_queue_raise(op_task_t *task, int qos);
/* A task was just submitted to `queue`: one of a higher class than a serial queue's raises the
 * queue (what is ahead of it) until it finished. */
void op_promotion_submitted(op_task_t *task, op_queue_t *queue);
/* op_queue_promote without the switch: a raise the runtime makes for its own liveness (a wait
 * for releases raises the release helper, context_release.c), undone by op_queue_unpromote.
 * `queue` and `qos` are valid. */
void op_queue_raise(op_queue_t *queue, op_qos_t qos);
/* Whether QoS promotion is on (OPERATIONS_QOS_PROMOTION, read once; then
 * op_runtime_set_qos_promotion). Gates only the raising calls a user asks for. */
bool op_promotion_enabled(void);
/* Fork (worker_pool.c's pthread_atfork handlers): the prepare handler holds every promotion
 * lock, so the child never inherits one held by a thread it does not have (nor counts changed
 * without their summary); the parent and the child handlers release them. */
void op_promotion_lock_for_fork(void);
void op_promotion_unlock_after_fork(void);

/* running_body_promotion.c: a body is about to run on this worker or spare for `task` of
 * `queue`, the thread at `nice`: promoters find it here (op_pool_promote_running). Before the
 * task's RUNNING read-modify-write (drain.c) or before reading its state (hop.c). */
void op_worker_promotable_begin(op_task_t *task, op_queue_t *queue, int nice);
/* The drainer reniced for a thread priority before the body: the nice to restore to. */
void op_worker_promotable_nice(int nice);
/* The body returned: waits out a promoter in flight and puts the thread back at the nice it
 * had at the body's start if a promoter raised it. */
void op_worker_promotable_end(void);
/* Raises the threads running bodies of `task` (or, with task NULL, of `queue`) to `nice`
 * where the process may (privilege); returns how many it raised. */
int op_pool_promote_running(op_task_t *task, op_queue_t *queue, int nice);
/* setpriority on thread `tid` (not the caller's); 0 or errno (the fault injection applies). */
int op_nice_set_thread(int tid, int nice);

/* ---- own_class_run.c ------------------------------------------------------------------------ */

/* `task` (its own QoS above its queue's) just won QUEUED on `queue`: on a default-width queue
 * that is not suspended, it goes to the workers of its own class, outside the queue's slots, and
 * true is returned (the token push is the last touch of the queue; the task's busy unit keeps
 * the queue alive until it finished). False: the caller pushes it into the queue as usual. */
bool op_queue_run_in_own_class(op_queue_t *queue, op_task_t *task);
/* The same for a task a drainer of `queue` claimed from the queue (it was put there while the
 * queue was suspended or of explicit width): true when handed to its class's workers (the
 * drainer goes on with its slot), false when the drainer runs it. */
bool op_queue_hand_to_own_class(op_queue_t *queue, op_task_t *task);

/* ---- hop.c ---------------------------------------------------------------------------------- */

/* Runs the body of `task` (claimed, RUNNING, of `queue`, at class `qos`: op_task_run_qos) on a thread already at the nice value
 * it asks for, when that is not the drainer's own class or privilege cannot renice there and
 * back: a worker of the task's own class (its queue's placement kept), or of a pool made for
 * that nice value. The drainer waits, keeping the queue's slot. True when the body ran there;
 * false when the caller runs it itself (same class, or a renice it may undo: *renice says to
 * what, OP_NICE_UNCHANGED for none). */
bool op_hop_run_body(op_pool *pool, op_queue_t *queue, op_task_t *task, int qos, int class_nice,
                     int *renice);
/* The pool whose workers run the body of `task` at class `qos` (its thread priority included)
 * without a hop: the class's pool (on `placement`'s CPUs when placed), or the pool made for the
 * task's nice value where a thread priority cannot be applied there and back. *renice: the nice
 * its worker applies around the body there, or OP_NICE_UNCHANGED. One choice for a hop and for a
 * task handed to its own class's workers (own_class_run.c). */
op_pool *op_hop_pool_for(const op_placement *placement, op_task_t *task, int qos, int *renice);
/* The pool whose workers run at `nice` (-20 … 19), made on first use (worker_pool.c). */
op_pool *op_pool_for_nice(int nice);

#endif /* OPERATIONS_CORE_INTERNAL_H */
