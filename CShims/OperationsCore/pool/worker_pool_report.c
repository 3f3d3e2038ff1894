/*
 * worker_pool_report.c — what the worker pools say about themselves: the workers of a class
 * (op_runtime_worker_count / op_runtime_worker_info: thread ids, CPUs, nice values, tasks run)
 * and the diagnostic report (op_runtime_describe: every pool, its tokens, searching, blocked
 * and spare counts, and what each worker and spare is doing). Snapshots: every read is relaxed
 * or an acquire of a published pool, and nothing here changes the pools.
 */
#include "pool_private.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

void op_runtime_start_workers(op_qos_t qos) {
    (void)op_pool_for(qos); /* returns once the pool's workers are running */
}

int op_runtime_worker_count(op_qos_t qos) {
    if ((unsigned)qos >= OP_QOS_COUNT) return 0;
    op_pool *pool = atomic_load_explicit(&op_pools[qos], memory_order_acquire);
    return pool ? atomic_load_explicit(&pool->started, memory_order_acquire) : 0;
}

int op_runtime_worker_info(op_qos_t qos, int index, op_worker_info_t *out) {
    if ((unsigned)qos >= OP_QOS_COUNT || !out) return EINVAL;
    op_pool *pool = atomic_load_explicit(&op_pools[qos], memory_order_acquire);
    if (!pool || index < 0 || index >= atomic_load_explicit(&pool->started, memory_order_acquire)) {
        return EINVAL;
    }
    op_worker *worker = &pool->workers[index];
    if (atomic_load_explicit(&worker->tid, memory_order_relaxed) == 0) return EINVAL;
    out->tid = atomic_load_explicit(&worker->tid, memory_order_relaxed);
    out->cpu = worker->cpu;
    out->node = worker->node;
    out->class_nice = atomic_load_explicit(&worker->class_nice, memory_order_relaxed);
    /* relaxed: a count. */
    out->tasks = atomic_load_explicit(&worker->run, memory_order_relaxed) >> OP_RUN_SERIAL_SHIFT;
    return 0;
}

/* ---- diagnostics ------------------------------------------------------------------------------ */

/* Appends to a bounded buffer, counting what would have been written (as snprintf). */
typedef struct op_report {
    char *buffer;
    size_t size;
    size_t length;
} op_report;

__attribute__((format(printf, 2, 3))) static void op_report_add(op_report *report,
                                                                 const char *format, ...) {
    va_list args;
    va_start(args, format);
    size_t room = report->length < report->size ? report->size - report->length : 0;
    int n = vsnprintf(room ? report->buffer + report->length : NULL, room, format, args);
    va_end(args);
    if (n > 0) report->length += (size_t)n;
}

static void op_report_worker(op_report *report, const char *kind, op_worker *worker) {
    /* relaxed: a snapshot. */
    uint64_t run = atomic_load_explicit(&worker->run, memory_order_relaxed);
    int tid = atomic_load_explicit(&worker->tid, memory_order_relaxed);
    if (tid == 0) {
        op_report_add(report, "    %s %d: no thread\n", kind, worker->index);
        return;
    }
    op_report_add(report, "    %s %d: tid %d, %llu tasks, %s%s%s%s%s\n", kind, worker->index, tid,
                  (unsigned long long)(run >> OP_RUN_SERIAL_SHIFT),
                  (run & OP_RUN_IN_TASK) ? "in a task" : "between tasks",
                  (run & OP_RUN_VISIBLE_WAIT)
                      ? ((run & OP_RUN_RELENT) ? ", in a visible wait (slot lent by the monitor)"
                                               : ", in a visible wait")
                      : "",
                  (run & OP_RUN_LENT) ? ", counted blocked by the monitor" : "",
                  (run & OP_RUN_LENT) ? (worker->monitor_lent ? " (slot lent)" : " (slot not lent)") : "",
                  (run & OP_RUN_LENDING) ? ", being counted" : "");
}

static void op_report_pool(op_report *report, op_pool *pool) {
    if (!pool) return;
    /* relaxed: a snapshot. */
    uint64_t balance = atomic_load_explicit(&pool->balance, memory_order_relaxed);
    uint64_t idle = atomic_load_explicit(&pool->idle_spares, memory_order_relaxed);
    char kind[48];
    if (pool->fixed_nice != OP_NICE_UNCHANGED) {
        snprintf(kind, sizeof kind, "at nice %d", pool->fixed_nice);
    } else {
        snprintf(kind, sizeof kind, "of class %s", op_qos_name(pool->qos));
    }
    op_report_add(report,
                  "  pool %s%s: %d workers (%d with a thread), tokens %s, searching %d,"
                  " %u blocked, %u spares, %u lingering (%u of them claimed),"
                  " %llu wake-ups backed on another CPU\n",
                  kind, pool->placement ? " (placed)" : "", pool->size,
                  atomic_load_explicit(&pool->created, memory_order_relaxed),
                  op_pool_has_tokens(pool) ? "waiting" : "none",
                  atomic_load_explicit(&pool->searching, memory_order_relaxed),
                  OP_BALANCE_BLOCKED(balance), OP_BALANCE_SPARES(balance),
                  OP_IDLE_SPARES(idle), OP_IDLE_CLAIMS(idle),
                  (unsigned long long)atomic_load_explicit(&pool->backed_wakes, memory_order_relaxed));
    for (int i = 0; i < pool->size; i++) op_report_worker(report, "worker", &pool->workers[i]);
    pthread_mutex_lock(&pool->spares_lock);
    for (op_worker *spare = pool->spares; spare; spare = spare->next_spare) {
        /* relaxed: a snapshot. */
        op_report_worker(report,
                         atomic_load_explicit(&spare->lingering, memory_order_relaxed)
                             ? "spare (lingering)" : "spare",
                         spare);
    }
    pthread_mutex_unlock(&pool->spares_lock);
}

size_t op_runtime_describe(char *buffer, size_t size) {
    op_report report = {.buffer = buffer, .size = size, .length = 0};
    if (size) buffer[0] = '\0';
    op_report_add(&report, "monitor %s; %d queue(s) waiting behind their width\n",
                  op_monitor_is_asleep() ? "asleep" : "awake",
                  atomic_load_explicit(&op_queues_waiting_at_width, memory_order_relaxed));
    for (int qos = 0; qos < OP_QOS_COUNT; qos++) {
        op_report_pool(&report, atomic_load_explicit(&op_pools[qos], memory_order_acquire));
    }
    for (op_pool *pool = atomic_load_explicit(&op_placed_pools, memory_order_acquire); pool;
         pool = pool->next_placed) {
        op_report_pool(&report, pool);
    }
    return report.length;
}
