/*
 * topology_probe.c — a child process for WorkerPoolTests: what op_runtime_topology() reports
 * (NUMA in use or not, and why), and whether every worker of every class is pinned to exactly
 * its CPU, under whatever OPERATIONS_NUMA the parent set. Prints key=value lines:
 * numa, reason, cpus, pinned (workers whose affinity is exactly their CPU), workers.
 */
#define _GNU_SOURCE
#include <operations_core.h>

#include <sched.h>
#include <stdio.h>

int main(void) {
    op_topology_t topology;
    op_runtime_topology(&topology);
    int workers = 0, pinned = 0;
    for (int q = 0; q < OP_QOS_COUNT; q++) {
        op_runtime_start_workers((op_qos_t)q);
        for (int i = 0; i < op_runtime_worker_count((op_qos_t)q); i++) {
            op_worker_info_t info;
            if (op_runtime_worker_info((op_qos_t)q, i, &info) != 0) continue;
            workers++;
            cpu_set_t set;
            CPU_ZERO(&set);
            if (sched_getaffinity(info.tid, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1 &&
                CPU_ISSET(info.cpu, &set)) {
                pinned++;
            }
        }
    }
    op_runtime_topology(&topology); /* again: pinning may have recorded a late fallback */
    printf("numa=%d\nreason=%s\ncpus=%d\nworkers=%d\npinned=%d\n", topology.numa ? 1 : 0,
           topology.fallback_reason ? topology.fallback_reason : "-", topology.cpu_count, workers,
           pinned);
    return 0;
}
