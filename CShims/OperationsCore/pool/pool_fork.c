/*
 * pool_fork.c — fork() and the pools: the pthread_atfork handlers of the whole core.
 *
 * A child of fork() has one thread, the one that forked. Every lock another thread of the
 * parent held at the fork would stay held in the child for good, so the prepare handler takes
 * them all (each is only held briefly: a pool creation waits at most for its workers to start,
 * a promotion lock is held for a few instructions), the parent handler gives them back, and the
 * child handler forgets what the child does not have: the pools and their workers (leaked:
 * queues and stacks may still point into them; first use makes new ones, with a new monitor),
 * the spawner, the placements' pools (the sets stay), and the thread's own worker identity (the
 * forking thread, even a worker in a task body, is an ordinary thread there).
 *
 * What the child keeps of the parent's work: tasks that were queued or running at the fork stay
 * unfinished in the child (their queues keep the slots and busy counts they had); queues that
 * were idle work normally. A body that forks must exec or _exit in the child, not return: the
 * worker loop it would return to belongs to the parent.
 *
 * The queue layer has locks and thread-locals of its own that must cross the fork the same way
 * (the release helper's lock, the queues' promotion locks, the drainer's thread-locals). The
 * pool names nothing above it: the queue layer gives its part as a table (op_pool_fork_hooks,
 * op_pool_set_fork_hooks), installed when the library is loaded (queue_fork.c's constructor).
 *
 * Lock order (the prepare handler's; a deadlock in the prepare handler would hang fork()):
 * the queue layer's outer lock (the release helper's: its holder makes a queue, which may take
 * the pools' lock), the pools' lock, the placements' lock, the queue layer's inner locks (the
 * promotion locks: leaves, taken last).
 *
 * The handlers are registered when the library is loaded (a constructor of priority 101, so in
 * a static link too before the application's own constructors), before any thread of the core
 * exists and before the application's own handlers: prepare handlers run in reverse order of
 * registration, so an application's prepare handler that uses the core runs before ours takes
 * the locks (registered at a pool's first creation instead, a fork while
 * that pool was being made left the child with the pools' lock held, and an application's
 * earlier handler ran after ours and deadlocked: found by review). The constructor stays in a
 * static link: worker_pool.c's op_pool_create calls op_pool_fork_register (a no-op by then), and
 * the queue layer calls op_pool_set_fork_hooks, both defined here.
 */
#include "pool_private.h"

#include <string.h>

/* The queue layer's part, installed at load; NULL only before that (a fork from another thread
 * while the library is being loaded). acquire/release: the handler sees the table's functions
 * once it sees the pointer. */
static const op_pool_fork_hooks *_Atomic op_fork_hooks;
/* The table the prepare handler acted on, for the parent and child handlers of the same fork:
 * one that was installed in between must not unlock what prepare did not lock (found by
 * review). Thread-local: a fork's handlers all run on the forking thread, and since glibc 2.36
 * two threads' forks run their handlers at the same time (it releases its atfork lock around
 * each handler). */
static _Thread_local const op_pool_fork_hooks *op_fork_hooks_held;

static void op_pool_after_fork_in_child(void);
static void op_pool_before_fork(void);
static void op_pool_after_fork_in_parent(void);

static void op_pool_install_fork_handlers(void) {
    pthread_atfork(op_pool_before_fork, op_pool_after_fork_in_parent, op_pool_after_fork_in_child);
}

void op_pool_fork_register(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, op_pool_install_fork_handlers);
}

/* Priority 101, the first an application may use: in a static link an application's own
 * constructors come first in link order, and one that registers a fork handler would otherwise
 * register it before ours (found by review). */
__attribute__((constructor(101))) static void op_pool_fork_register_at_load(void) {
    op_pool_fork_register();
}

void op_pool_set_fork_hooks(const op_pool_fork_hooks *hooks) {
    op_pool_fork_register();
    /* relaxed first look: every queue creation calls this (after the constructor's store, a
     * load); only the first stores. */
    if (atomic_load_explicit(&op_fork_hooks, memory_order_relaxed) == hooks) return;
    atomic_store_explicit(&op_fork_hooks, hooks, memory_order_release);
}

static void op_pool_before_fork(void) {
    const op_pool_fork_hooks *hooks = atomic_load_explicit(&op_fork_hooks, memory_order_acquire);
    op_fork_hooks_held = hooks;
    if (hooks) hooks->lock_outer();
    pthread_mutex_lock(&op_pools_lock);
    op_placement_lock_for_fork();
    if (hooks) hooks->lock_inner(); /* leaves, held a few instructions: taken last */
}

static void op_pool_after_fork_in_parent(void) {
    const op_pool_fork_hooks *hooks = op_fork_hooks_held; /* what the prepare handler locked */
    if (hooks) hooks->unlock_inner();
    op_placement_unlock_after_fork();
    pthread_mutex_unlock(&op_pools_lock);
    if (hooks) hooks->unlock_outer();
}

static void op_pool_after_fork_in_child(void) {
    for (int qos = 0; qos < OP_QOS_COUNT; qos++) {
        /* relaxed: no other thread exists; a thread started later is ordered by its creation. */
        atomic_store_explicit(&op_pools[qos], NULL, memory_order_relaxed);
    }
    atomic_store_explicit(&op_placed_pools, NULL, memory_order_relaxed); /* relaxed: as above */
    for (int i = 0; i < 40; i++) {
        atomic_store_explicit(&op_nice_pools[i], NULL, memory_order_relaxed); /* as above */
    }
    op_spawner_forget_after_fork();
    op_placement_forget_pools_after_fork(); /* and releases the placements' lock */
    op_monitor_forget_after_fork();
    op_tls_pool = NULL;
    op_tls_worker = NULL;
    op_tls_task = NULL;
    op_running_promotion_forget_after_fork();
    pthread_mutex_unlock(&op_pools_lock);
    const op_pool_fork_hooks *hooks = op_fork_hooks_held; /* what the prepare handler locked */
    if (hooks) hooks->reset_in_child(); /* its thread-locals; releases its inner and outer locks */
}
