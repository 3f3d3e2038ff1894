/*
 * queue_fork.c — the queue layer's part of fork(): what pool/pool_fork.c's handlers call through
 * the table this file gives them (op_pool_fork_hooks) when the library is loaded (a
 * constructor, kept in a static link because op_queue_create calls op_queue_install_fork_hooks).
 *
 * Outer lock: the one that makes the release helper (context_release.c), taken before the pools'
 * lock because its holder makes a queue, which may make a pool. Inner locks: every queue's
 * promotion lock (promotion.c), leaves held for a few instructions, taken after every other
 * lock. In the child the forking thread, even a worker in a task body, becomes an ordinary
 * thread: it drains nothing and runs no queue's task; the queues' promotion counts stay as they
 * were at the fork.
 */
#include "queue.h"

#include <string.h>

static void op_queue_reset_in_forked_child(void) {
    memset(&op_tls_drain, 0, sizeof op_tls_drain);
    op_tls_queue = NULL;
    op_promotion_unlock_after_fork();
    op_release_unlock_after_fork();
}

static const op_pool_fork_hooks op_queue_fork_hooks = {
    .lock_outer = op_release_lock_for_fork,
    .lock_inner = op_promotion_lock_for_fork,
    .unlock_inner = op_promotion_unlock_after_fork,
    .unlock_outer = op_release_unlock_after_fork,
    .reset_in_child = op_queue_reset_in_forked_child,
};

void op_queue_install_fork_hooks(void) { op_pool_set_fork_hooks(&op_queue_fork_hooks); }

/* Priority 101, as pool_fork.c's: before the application's constructors in a static link too. */
__attribute__((constructor(101))) static void op_queue_install_fork_hooks_at_load(void) {
    op_queue_install_fork_hooks();
}
