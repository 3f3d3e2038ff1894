/*
 * pool/pool.h — the worker pools: per-CPU workers per QoS class (or per nice value, or per CPU
 * set), the tokens they run, parking and the wake choice, spares for blocked workers, the
 * blocked-worker monitor, a running body's promotion, fork.
 *
 * Offers upward: a pool takes tokens (op_pool_push_token) and calls each token's class (a table
 * the queue fills when it makes the queue: op_token_class) to drain it; what runs a body on a
 * worker tells the pool around it (op_worker_body_begin/end, op_worker_will_block, ...).
 * Calls below: base only. It names nothing of the queues, the graph or a task's fields
 * beyond base's: every call back up goes through a token's class.
 * Owns: the pools (never freed; forgotten in a fork child), their workers and spares, the CPU
 * sets of placed queues (interned, never freed).
 */
#ifndef OPERATIONS_CORE_POOL_H
#define OPERATIONS_CORE_POOL_H

#include "../base/base.h"

#pragma GCC visibility push(hidden) /* internal: never exported from the shared library */

typedef struct op_pool op_pool;
typedef struct op_placement op_placement;

/* What the worker pool hands to its workers: a token stands for one claimed slot of a queue. The
 * pool sees only this; the queue sets its class when it is created (queue.c), which is how the
 * pool calls back up (the pool names nothing of queue.c, drain.c or the tasks). */
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
    /* The pool that serves the token now (a queue's QoS, promotion or placement, or a carried
     * task's class, may have changed since it was pushed): where op_pool_rehome_tokens moves a
     * token that waits elsewhere; called with the token taken out of the pool. NULL: the token
     * stays where it was pushed. */
    op_pool *(*home)(op_token *token);
} op_token_class;
struct op_token {
    const op_token_class *cls;
};

/* ---- placement_sets.c ----------------------------------------------------------------------- */

/* A set of usable CPUs that queues may be placed on, interned (one object per set, never
 * freed), with a pool per class made on first use. */
int op_placement_size(const op_placement *placement);
/* The topology index (0 … cpu_count-1) of the placement's `i`-th CPU. */
int op_placement_usable_index(const op_placement *placement, int i);
/* The pool of class `qos` on the placement. */
op_pool *op_placement_pool(const op_placement *placement, op_qos_t qos);
/* The interned placement for the usable CPUs flagged in `chosen` (indexed by topology index,
 * at least one flagged), or NULL when out of memory. */
const op_placement *op_placement_intern(const bool *chosen);
/* Binds the calling thread to the placement's CPUs (a spare of a placed pool). */
void op_placement_bind_current_thread(const op_placement *placement);

/* ---- worker_pool.c: the pools' lifetime ----------------------------------------------------- */

/* The default pool of class `qos`, made on first use, for work of that class: it counts as the
 * class asked for (op_class_requested). */
op_pool *op_pool_for(op_qos_t qos);
/* The same pool borrowed for its nice value (carry.c's op_pool_at_nice: a thread priority whose
 * nice a class happens to have): no class was asked for. */
op_pool *op_pool_for_nice_of_class(op_qos_t qos);
/* The pool of class `qos` for a placement, made on first use and stored in `slot` (the
 * placement's slot for that class); counts as the class asked for, as op_pool_for. */
op_pool *op_pool_for_placement(const op_placement *placement, op_qos_t qos, op_pool *_Atomic *slot);
/* The placement a pool serves, or NULL for a class's default pool. */
const op_placement *op_pool_placement(const op_pool *pool);
/* The pool whose workers run at `nice` (-20 … 19), made on first use. */
op_pool *op_pool_for_nice(int nice);
/* True when a token may wait in the pool (a hint). */
bool op_pool_has_tokens(op_pool *pool);
/* The class a pool serves (op_qos_t). */
int op_pool_qos(const op_pool *pool);
/* The nice value a pool's workers are meant to run at (its own for a pool made for one, else its
 * class's, before any clamping for privilege). */
int op_pool_wanted_nice(const op_pool *pool);

/* ---- parking_and_wake.c: tokens in and out, parking, the wake choice ------------------------ */

/* Hands a token (a queue's claimed slot) to the pool and wakes a worker if none searches. */
void op_pool_push_token(op_pool *pool, op_token *token);
/* The same from a worker that hands the token's work over and does not run it itself (a task
 * it carries to another pool as it leaves the queue, a slot it gives back): in a pool of a class
 * at least its own, the worker on its own CPU is woken first, as for a submitter that is not a
 * worker (parking_and_wake.c says why). */
void op_pool_hand_over_token(op_pool *pool, op_token *token);
/* Moves the tokens waiting in `pool` that another pool serves now (their class's `home`: a
 * queue's after a QoS, promotion or placement change, a carried task's after its promotion) to
 * that pool; the others go back. Called when a queue leaves `pool` and by the
 * monitor for a pool whose tokens wait for two ticks: a token pushed before the change would
 * otherwise wait until one of `pool`'s workers is free, which a pool busy with long bodies may
 * not be for a long time, while the queue's own pool idles. */
void op_pool_rehome_tokens(op_pool *pool);

/* ---- worker.c: the worker thread, and what running tasks asks of it ------------------------- */

/* The pool of the worker or spare on this thread, or NULL. */
op_pool *op_pool_current(void);
/* The local run queue of the pinned worker on this thread; NULL on spares and other threads. */
op_local_run_queue *op_worker_local_run_queue(void);
/* For a drainer of the queue `tag` stands for that found nothing: takes an entry of that queue
 * from another worker's local run queue (with `thief`, half of that worker's entries move into
 * it and one is returned), or NULL. */
void *op_pool_steal(op_pool *pool, op_local_run_queue *thief, const void *tag);
/* True when some worker's local run queue may hold a task of the queue `tag` stands for. */
bool op_pool_local_work(op_pool *pool, const void *tag);
/* What a worker or spare (the calling thread) offers the code that runs tasks on it: */
/* Before a task runs: the class's current nice value is applied; returns the nice it runs at. */
int op_worker_refresh_nice(void);
/* A task's body is about to run for `token`: from now on the monitor may count the worker blocked
 * in it, and promoters find it (`task` of `queue`, the thread at `nice`: op_pool_promote_running,
 * running_body_promotion.c). Called before the task's RUNNING read-modify-write, or before
 * reading the state of a task carried here (drain.c: the Dekker pairs of promotion.c). task and
 * queue NULL: work that is no task (releasing contexts), which no promoter raises. */
void op_worker_body_begin(op_token *token, op_task_t *task, op_queue_t *queue, int nice);
/* The runner reniced the thread for the body's thread priority: the nice a promoter's raise is
 * undone to. */
void op_worker_body_nice(int nice);
/* The body returned, or the task was retired or carried on without one: waits out the monitor
 * lending and a promoter renicing, takes back what the monitor lent (take_back_slot), and puts the
 * thread back at the body's nice if a promoter raised it. `counted`: the task ran here or was
 * retired here (counted in the worker's `tasks`); false for a task carried away and for work
 * that is no task. */
void op_worker_body_end(bool counted);
/* The body that op_worker_body_begin began started at `ns` (op_now_ns): for the report (the
 * latency histograms read the clock there; nothing else does). Nothing on a non-worker thread. */
void op_worker_note_body_start(int64_t ns);
/* This thread carried a task's body to another pool's workers (carry.c): counted on its worker
 * (op_runtime_worker_counters); nothing on a thread that is not a worker. */
void op_worker_count_carry(void);

/* ---- spares.c: spares for blocked workers --------------------------------------------------- */

/* Around a visible wait's sleep (op_queue_will_block): counts the thread blocked and makes
 * sure a spare stands in; returns false when the monitor already lent the task's slot. No-ops
 * (returning false) on threads that are not the pool's. */
bool op_worker_will_block(void);
/* After op_worker_will_block: whether the wait's queue lent its slot (see op_queue_will_block). */
void op_worker_wait_settled(bool lent);
void op_worker_did_unblock(void);

/* ---- monitor_view.c: the monitor's look at the workers -------------------------------------- */

/* A queue has work waiting behind its width (+1), or no longer (-1): while any has, the
 * blocked-worker monitor looks at every pool's workers as it does at a pool whose tokens wait (a
 * task asleep in its body may hold the slot that work needs, on whichever pool it started: the
 * queue's QoS or placement may have changed since). +1 wakes the monitor. */
void op_pool_count_queue_waiting_at_width(int delta);

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

/* Fork (pool_fork.c registers the pthread_atfork handlers): the child handler makes the
 * monitor start again on first use (its pthread_once, state word and tick counter) and forgets
 * what it learned about /proc. Called in the child only, where the caller is the one thread. */
void op_monitor_forget_after_fork(void);

/* running_body_promotion.c: raises the threads running bodies of `task` (or, with task NULL, of
 * `queue`) to `nice` where the process may (privilege); returns how many it raised. */
int op_pool_promote_running(op_task_t *task, op_queue_t *queue, int nice);

/* ---- pool_fork.c ---------------------------------------------------------------------------- */

/* What the queue layer adds to the core's fork handlers (pool_fork.c has the lock order): its
 * outer lock (taken before the pools' lock), its inner locks (taken after every other), their
 * release in the parent, and in the child its thread-locals reset and both released. */
typedef struct op_pool_fork_hooks {
    void (*lock_outer)(void);
    void (*lock_inner)(void);
    void (*unlock_inner)(void);
    void (*unlock_outer)(void);
    void (*reset_in_child)(void);
} op_pool_fork_hooks;
/* The queue layer, at load (and at each queue's creation, a load then): installs its table (a
 * table that lives as long as the process) and registers the handlers if nothing did yet. */
void op_pool_set_fork_hooks(const op_pool_fork_hooks *hooks);
/* Registers the core's pthread_atfork handlers once (at load; called again by a pool's creation,
 * which keeps pool_fork.o in a static link). */
void op_pool_fork_register(void);

#pragma GCC visibility pop

#endif /* OPERATIONS_CORE_POOL_H */
