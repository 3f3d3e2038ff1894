/*
 * maintenance_queue.c — the runtime's own queue for tidying that must not run where it was found
 * due: registry compactions and releases of finished contexts (registry.c) found by a thread
 * that drains the queue concerned or runs one of its bodies. The releases run user code (a
 * context's deinit) that may wait for that very queue, which would then wait for the slot or body
 * the finder holds; a worker of this queue holds no unit of the queues it tidies.
 *
 * A queue of default width, made on first use, never freed, not tracking (so it compacts nothing
 * of its own). Background class (nice 10): the releases (what finished operations' closures held)
 * are tidying, and at a higher class they took the CPU from latency-sensitive work on small
 * machines (W7 busy p99.9 on 2 CPUs: 15 µs at the default and utility classes, 3 µs here); its
 * releases also give the CPU away every so many (registry.c). A loaded machine may starve it: then
 * a drainer that finds twice the threshold finished while a compaction is pending compacts itself
 * (drain.c), which keeps what finished operations hold bounded.
 */
#include "internal.h"

#include <pthread.h>

static op_queue_t *op_maintenance_queue;
static pthread_once_t op_maintenance_once = PTHREAD_ONCE_INIT;

static void op_maintenance_create(void) {
    op_maintenance_queue = op_queue_create("operations maintenance", OP_QOS_BACKGROUND,
                                           OP_WIDTH_DEFAULT);
}

bool op_maintenance_submit(op_task_fn fn, void *context) {
    pthread_once(&op_maintenance_once, op_maintenance_create);
    return op_maintenance_queue && op_queue_submit_f(op_maintenance_queue, fn, context) == 0;
}

bool op_maintenance_is_current(void) {
    /* op_tls_queue is set while a body of a queue runs on this thread (drain.c); the maintenance
     * queue is written once, before any of its bodies can run. */
    return op_tls_queue != NULL && op_tls_queue == op_maintenance_queue;
}
