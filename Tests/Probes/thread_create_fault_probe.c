/*
 * thread_create_fault_probe.c — a child process for FaultTests: thread creation fails
 * (OPERATIONS_FAULT_THREAD_CREATE, set here before the runtime starts, so the probe can size the
 * fault to the CPU count). The first thread the core starts is the blocked-worker monitor, then
 * the default class's workers in index order.
 *
 *   permanent: k = cpu_count / 2 workers start, every later creation fails. All the work must
 *              run on those k, op_runtime_worker_count() must say k. Needs 2 CPUs or more
 *              (prints skipped=1 otherwise).
 *   window:    k = cpu_count / 2 workers start (0 on one CPU: a pool with no worker), the next
 *              three creations fail, later ones succeed: the work runs, and the retries (on
 *              submits and monitor ticks) bring the pool to cpu_count workers.
 *
 * Prints key=value lines (cpus, allowed, workers_initial, ran, workers_final); exits 0 when the
 * mode's expectations hold, 1 otherwise, 2 on bad usage. The warnings go to stderr (the test
 * counts them).
 */
#include <operations_core.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TASKS 200
static atomic_int ran;

static void body(void *context) {
    (void)context;
    atomic_fetch_add(&ran, 1);
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 2 || (strcmp(argv[1], "permanent") != 0 && strcmp(argv[1], "window") != 0)) {
        fprintf(stderr, "usage: %s permanent|window\n", argv[0]);
        return 2;
    }
    bool permanent = strcmp(argv[1], "permanent") == 0;
    op_topology_t topology;
    op_runtime_topology(&topology); /* starts no thread */
    int cpus = topology.cpu_count;
    int allowed = cpus / 2;
    printf("cpus=%d\nallowed=%d\n", cpus, allowed);
    if (permanent && allowed == 0) {
        printf("skipped=1\n");
        return 0;
    }
    /* Creation 1 is the monitor, 2 … allowed+1 the workers that start. */
    char spec[64];
    if (permanent) {
        snprintf(spec, sizeof spec, "%d", allowed + 2);
    } else {
        snprintf(spec, sizeof spec, "%d-%d", allowed + 2, allowed + 4);
    }
    setenv("OPERATIONS_FAULT_THREAD_CREATE", spec, 1);
    printf("fault=%s\n", spec);
    fflush(stdout);

    op_queue_t *queue = op_queue_create("fault-probe", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    if (!queue) return 3;
    for (int i = 0; i < TASKS; i++) {
        if (op_queue_submit_f(queue, body, NULL) != 0) return 3; /* the first creates the pool */
    }
    int initial = op_runtime_worker_count(OP_QOS_DEFAULT);
    printf("workers_initial=%d\n", initial);
    int waited = op_queue_wait(queue, 20LL * 1000000000LL);
    printf("ran=%d\nwait=%d\n", atomic_load(&ran), waited);
    bool ok = waited == 0 && atomic_load(&ran) == TASKS;
    if (permanent) {
        ok = ok && initial == allowed;
        /* More work, more submits (each retries, all fail): still only the k workers. */
        for (int i = 0; i < TASKS; i++) op_queue_submit_f(queue, body, NULL);
        ok = ok && op_queue_wait(queue, 20LL * 1000000000LL) == 0 && atomic_load(&ran) == 2 * TASKS;
        int final = op_runtime_worker_count(OP_QOS_DEFAULT);
        printf("workers_final=%d\n", final);
        ok = ok && final == allowed;
    } else {
        /* Keep submitting (each push may retry) until every worker runs, at most 10 s. */
        long long deadline = now_ns() + 10LL * 1000000000LL;
        int final = op_runtime_worker_count(OP_QOS_DEFAULT);
        while (final < cpus && now_ns() < deadline) {
            op_queue_submit_f(queue, body, NULL);
            op_queue_wait(queue, 1000000000LL);
            usleep(2000);
            final = op_runtime_worker_count(OP_QOS_DEFAULT);
        }
        printf("workers_final=%d\n", final);
        ok = ok && final == cpus && op_queue_wait(queue, 20LL * 1000000000LL) == 0;
    }
    op_queue_release(queue);
    printf("ok=%d\n", ok ? 1 : 0);
    return ok ? 0 : 1;
}
