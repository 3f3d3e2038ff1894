/*
 * queue/queue.h — the queues: submit, width and slots, draining, suspension, waits, the
 * registry of a tracking queue, finished tasks' contexts given back, QoS promotion, a body run
 * at another nice value (carried with its slot or outside the slots), placement choice, fork.
 *
 * Offers upward (to the graph): submit and the ready push, busy accounting, waits.
 * Calls below: the pools (pool/pool.h) and base. It reaches the graph above only through the
 * table op_queue_graph (op_graph_hooks), which the graph fills at compile time.
 * Owns: the queues (reference counted: handles, plus one while busy), their ready queues, the
 * registry's list, the release buffers of finished contexts.
 */
#ifndef OPERATIONS_CORE_QUEUE_H
#define OPERATIONS_CORE_QUEUE_H

#include "../pool/pool.h"

#pragma GCC visibility push(hidden) /* internal: never exported from the shared library */

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
    /* The current label (op_queue_set_label publishes a new one with a release store; readers
     * load with acquire). Labels replaced are kept on `labels_retired` (a push-only stack of
     * op_label, under no lock: a compare-and-swap) and freed with the queue, so a string
     * op_queue_label returned stays valid until the queue is destroyed. */
    const char *_Atomic label;
    struct op_label *_Atomic labels_retired;
    /* latency.c: the queue's latency histograms, made at its first task recorded while they are
     * on (NULL before); freed with the queue. */
    struct op_latency_pair *_Atomic latency;
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
    /* Counters (issue 35; op_queue_counters): bodies started, tasks finished (counted where
     * their unit of `busy` is given back, while it still keeps the queue alive) and of those
     * cancelled, on a line of their own; submitted is finished + unfinished, from `busy`, so a
     * submit costs nothing more. A thread that drains the queue counts in its op_drain and adds
     * its counts when it leaves (op_drain_detach) or every OP_FINISH_BATCH finishes; other
     * threads add at once. relaxed fetch-adds: counts, ordering nothing. */
    alignas(OP_CACHE_LINE) _Atomic uint64_t started;
    _Atomic uint64_t finished;
    _Atomic uint64_t cancelled;
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
/* Fork (pool/pool_fork.c's handlers, through queue_fork.c): the prepare handler holds the lock that makes the helper
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
/* The queue's own QoS (op_queue_qos), without its promotion. relaxed: a setting, read between
 * tasks; a change moves the queue's tokens (op_queue_left_pool). */
static inline int op_queue_own_qos(const op_queue_t *queue) {
    return (int)atomic_load_explicit(&((op_queue_t *)queue)->qos, memory_order_relaxed);
}
/* Number of slots the queue may hold at once, with the default resolved against its pool.
 * Inline: a drainer reads it between tasks. relaxed: a setting; changes are acted on by the
 * drainers' compare-and-swaps on `slots` (op_queue_shrink_slot, op_queue_claim_slot). */
static inline int op_queue_effective_width(op_queue_t *queue) {
    int width = atomic_load_explicit(&queue->width, memory_order_relaxed);
    return width < 0 ? queue->default_width : width;
}
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
    /* `queue`'s counters not yet added to it (op_drain_flush_counts): the drainer's own. */
    uint64_t started, finished, cancelled;
} op_drain;
extern _Thread_local op_drain op_tls_drain;

/* latency.c: the histograms' switch, and the three places they record. Each is one relaxed
 * load and a branch while they are off. */
extern _Atomic bool op_latency_on;
static inline bool op_latency_recording(void) {
    return OP_UNLIKELY(atomic_load_explicit(&op_latency_on, memory_order_relaxed));
}
void op_latency_note_ready_slow(op_task_t *task);
int64_t op_latency_started_slow(op_task_t *task, op_queue_t *queue, int qos);
void op_latency_ended_slow(op_queue_t *queue, int qos, int64_t started);
void op_latency_free(op_queue_t *queue);
/* A task became ready (its ready time, for its queue wait). */
static inline void op_latency_note_ready(op_task_t *task) {
    if (op_latency_recording()) op_latency_note_ready_slow(task);
}
/* Its body starts: records the queue wait; returns the start time (0 while off). */
static inline int64_t op_latency_started(op_task_t *task, op_queue_t *queue, int qos) {
    return op_latency_recording() ? op_latency_started_slow(task, queue, qos) : 0;
}
/* Its body returned: records the run time (nothing when `started` is 0). */
static inline void op_latency_ended(op_queue_t *queue, int qos, int64_t started) {
    if (OP_UNLIKELY(started != 0)) op_latency_ended_slow(queue, qos, started);
}

/* Counting (issue 35): a body of `queue` starts; a finished task of `queue` is settled (its
 * unit about to be given back: the drainer that ran or retired it, a carrier, the completion
 * that came second). Into the calling drainer's counts when it drains `queue`, else added to
 * the queue at once. The caller holds the task's unit, which keeps `queue` alive. */
void op_queue_count_started(op_queue_t *queue);
void op_queue_count_finished(op_queue_t *queue, op_task_t *task);
/* Adds the calling drainer's counts to its queue (while it still holds its slot). */
void op_drain_flush_counts(void);

/* The worker pool's call for a token (op_token_class.drain): drains the token's queue while the
 * slot allows. */
void op_drain_token(op_token *token);
/* The calling drainer's local run queue goes back to its queue's bands (before it sleeps in a
 * wait, so that nothing it released waits for it); true when it held anything. The caller
 * dispatches if no drainer may be coming for it. */
bool op_drain_flush_local(void);
/* Takes one busy unit for a task submitted to `queue`: from the calling drainer's credit when it
 * drains `queue` (returns true), else from the queue's counter (false). */
bool op_drain_busy_add_one(op_queue_t *queue);
/* Gives back a unit op_drain_busy_add_one took (`from_credit`: what it returned). */
void op_drain_busy_return_one(op_queue_t *queue, bool from_credit);

/* The pool that runs `queue`'s tasks now: its placement's, or its class's default pool. */
op_pool *op_queue_pool(op_queue_t *queue);
/* Whether `pool` is (still) the pool that runs `queue`'s tasks: the queue's class and placement
 * are the pool's. relaxed loads: a drainer's check between tasks; a stale answer is corrected
 * at its next look, and op_queue_pool reads the placement with acquire. */
bool op_pool_serves(const op_pool *pool, op_queue_t *queue);

/* The queue's pool may have changed from `before` (its QoS, placement or promoted class did):
 * its tokens waiting there move to the pool that serves it now (queue.c). */
void op_queue_left_pool(op_queue_t *queue, op_pool *before);

/* The queue this thread drains now (seen by op_queue_current); set by the drainer. */
extern _Thread_local op_queue_t *op_tls_queue;

/* ---- promotion.c ------------------------------------------------------------------------- */

/* The class the queue's tasks run at now: its QoS, or the highest class it is promoted to (the
 * highest bit of `promo`, the summary of the queue's promotion counts). relaxed loads: a
 * drainer's look between tasks (op_pool_serves) and the pool a token goes to; the promoters
 * rehome tokens after a change, and the Dekker pair with running bodies is in promotion.c. */
static inline int op_queue_run_qos(op_queue_t *queue) {
    int qos = op_queue_own_qos(queue);
    uint32_t promo = atomic_load_explicit(&queue->promo, memory_order_relaxed);
    if (OP_LIKELY(promo == 0)) return qos;
    int top = 31 - __builtin_clz(promo);
    return top > qos ? top : qos;
}
/* op_pool_serves for a pool of class `pool_qos` made for `pool_placement` (a pool's class and
 * placement are set when it is made and never change, so a drainer reads them once per turn). */
static inline bool op_pool_class_serves(int pool_qos, const op_placement *pool_placement,
                                        op_queue_t *queue) {
    return op_queue_run_qos(queue) == pool_qos &&
           atomic_load_explicit(&queue->placement, memory_order_relaxed) == pool_placement;
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
/* Fork (pool/pool_fork.c's pthread_atfork handlers, through queue_fork.c): the prepare handler holds every promotion
 * lock, so the child never inherits one held by a thread it does not have (nor counts changed
 * without their summary); the parent and the child handlers release them. */
void op_promotion_lock_for_fork(void);
void op_promotion_unlock_after_fork(void);

/* ---- carry.c ---------------------------------------------------------------------------------- */

/* A task carried to the pool whose workers run it at its nice value (carry.c), with one of its
 * queue's slots or outside them. A record from the task cache, owned by whoever holds the token. */
typedef struct op_carry op_carry;
/* The pool whose workers run the body of `task` at class `qos` (its thread priority included)
 * without another carry: the class's pool (on `placement`'s CPUs when placed), or the pool made
 * for the task's nice value where a thread priority cannot be applied there and back. *renice:
 * the nice its worker applies around the body there, or OP_NICE_UNCHANGED. */
op_pool *op_carry_pool_for(const op_placement *placement, op_task_t *task, int qos, int *renice);
/* For a claimed task about to run on a worker of `pool` (at `class_nice`) at class `qos`: the
 * pool to carry it to (its carrier applies *carried_renice around the body), or NULL when it
 * runs here (this worker applies *renice around it, or OP_NICE_UNCHANGED). */
op_pool *op_carry_target(op_pool *pool, op_task_t *task, int qos, int class_nice, int *renice,
                         int *carried_renice);
/* The record for carrying a started task: `carry` itself (a carrier carrying it on), or a new
 * one holding the drainer's slot; NULL when out of memory (the caller runs it itself). */
op_carry *op_carry_prepare(op_carry *carry, op_queue_t *queue, op_task_t *task, int renice);
/* Pushes the record into `target`: the carrier owns it from then on. `handing_over`: the caller
 * leaves the work (a drainer that gives up the queue with the carry) and wakes `target`'s worker
 * on its own CPU first (op_pool_hand_over_token); false where it goes on running (a body or a
 * drainer that made the task ready or took it outside the slots). */
void op_carry_push(op_carry *carry, op_pool *target, bool handing_over);
void op_carry_free(op_carry *carry);
op_task_t *op_carry_task(const op_carry *carry);
op_queue_t *op_carry_queue(const op_carry *carry);
bool op_carry_started(const op_carry *carry);
bool op_carry_holds_slot(const op_carry *carry);
int op_carry_renice(const op_carry *carry);
op_token *op_carry_token(op_carry *carry);
/* A carrier gives back the slot it carried with `units` busy units (the slot's, and the
 * task's when it finished): handed on as the queue's token when work waits. Its last touch of
 * the queue. */
void op_carry_give_back_slot(op_queue_t *queue, uint64_t units);
/* `task` (its own QoS above its queue's) just won QUEUED on `queue`: on a default-width queue
 * that is not suspended, it is carried to the workers of its own class (its nice value's),
 * outside the queue's slots, and true is returned (the push is the last touch of the queue;
 * the task's busy unit keeps the queue alive until it finished). False: the caller pushes it
 * into the queue as usual. */
bool op_carry_ready_outside_width(op_queue_t *queue, op_task_t *task);
/* The same for a task a drainer of `queue` claimed from the queue (it was put there while the
 * queue was suspended or of explicit width): true when carried out (the drainer goes on with its
 * slot), false when the drainer runs it. */
bool op_carry_taken_outside_width(op_queue_t *queue, op_task_t *task);
/* drain.c: a carrier runs the task its record carries, as a drainer would, and settles it (or
 * carries it on). */
void op_drain_run_carried(op_carry *carry);
/* queue_fork.c: gives the pools' fork handlers the queue layer's part (at load; op_queue_create
 * calls it too, which keeps queue_fork.o in a static link). */
void op_queue_install_fork_hooks(void);

#pragma GCC visibility pop

#endif /* OPERATIONS_CORE_QUEUE_H */
