/*
 * graph/graph.h — the dependency graph: edges, readiness, holds, cancel, finish, complete, wait.
 *
 * Offers: the public task calls (op_task_add_dependency, op_task_complete, op_task_wait, ...)
 * and, to the queues below, the hooks table op_queue_graph (finish, settle a deferral, a
 * barrier's dependency, cancel).
 * Calls below: the queues (queue/queue.h), the pools and base.
 * Owns: the meaning of the edges (op_edge, in base/base.h: a task frees the ones it owns).
 */
#ifndef OPERATIONS_CORE_GRAPH_H
#define OPERATIONS_CORE_GRAPH_H

#include "../queue/queue.h"

#pragma GCC visibility push(hidden) /* internal: never exported from the shared library */


/* dependencies.c (the queues reach these through op_queue_graph): marks the task finished, runs
 * on_finish, releases dependents, wakes waiters; false when it was already finished. Queue
 * accounting is the caller's. */
bool op_task_finish(op_task_t *task);
/* After a body that called op_task_defer returned: back to waiting (worker side). */
void op_task_settle_deferred(op_task_t *task);

#pragma GCC visibility pop

#endif /* OPERATIONS_CORE_GRAPH_H */
