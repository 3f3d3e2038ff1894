/*
 * worker_startup_probe.c — a child process for WorkerPoolTests (WorkerStartupTests): while a
 * class's workers are starting, is every worker counted by op_runtime_worker_count() reachable
 * through op_runtime_worker_info(qos, i) for i < count?
 *
 * Each class's pool is created once per process, so the window is looked at right after each
 * of the five pools is created by a first submission: the probe reads the count and the infos
 * in a tight loop until all workers are up. Prints one line per inconsistent snapshot and
 * "inconsistent=N"; exits 1 when N > 0, 0 otherwise.
 */
#include <operations_core.h>

#include <stdio.h>

static void body(void *context) { (void)context; }

int main(void) {
    op_topology_t topology;
    op_runtime_topology(&topology);
    int inconsistent = 0;
    for (int q = 0; q < OP_QOS_COUNT; q++) {
        op_qos_t qos = (op_qos_t)q;
        op_queue_t *queue = op_queue_create("startup-probe", qos, OP_WIDTH_DEFAULT);
        if (!queue || op_queue_submit_f(queue, body, NULL) != 0) return 3; /* creates the pool */
        for (long spin = 0; spin < 10000000; spin++) {
            int count = op_runtime_worker_count(qos);
            int reachable = 0;
            for (int i = 0; i < count; i++) {
                op_worker_info_t info;
                if (op_runtime_worker_info(qos, i, &info) == 0) reachable++;
            }
            if (reachable < count) {
                inconsistent++;
                printf("class %d: op_runtime_worker_count() = %d but only %d of worker_info(0..%d) "
                       "succeed\n", q, count, reachable, count - 1);
                break;
            }
            if (count == topology.cpu_count) break;
        }
        op_queue_wait(queue, 10LL * 1000000000LL);
        op_queue_release(queue);
    }
    printf("inconsistent=%d\n", inconsistent);
    return inconsistent ? 1 : 0;
}
