/*
 * placed_pool_idle_probe.c — a child process for PlacedPoolRetirementTests: a placed pool's
 * workers leave once idle (OPERATIONS_PLACED_POOL_IDLE_MS=100, set by the probe before the
 * runtime starts) and come back for the next task. Threads are counted in /proc/self/status.
 * Prints key=value lines: baseline (threads with the default pool running), placed (with the
 * placed pool too), idle (after its idle period), again (after a second task), left_ms; exits
 * 0 when both tasks ran and the threads went back to the baseline within 10 s, 1 otherwise.
 */
#define _GNU_SOURCE
#include <operations_core.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int threads(void) {
    FILE *file = fopen("/proc/self/status", "r");
    if (!file) return -1;
    char line[256];
    int count = -1;
    while (fgets(line, sizeof line, file)) {
        if (strncmp(line, "Threads:", 8) == 0) count = atoi(line + 8);
    }
    fclose(file);
    return count;
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void body(void *context) { (void)context; }

static int run_one(op_queue_t *queue) {
    if (op_queue_submit_f(queue, body, NULL) != 0) return 1;
    return op_queue_wait(queue, 10LL * 1000000000LL) != 0;
}

int main(void) {
    setenv("OPERATIONS_PLACED_POOL_IDLE_MS", "100", 1);
    op_queue_t *plain = op_queue_create("plain", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    if (!plain || run_one(plain)) return 2;
    usleep(50000); /* the monitor and the default workers are up */
    int baseline = threads();
    op_topology_t topology;
    op_runtime_topology(&topology);
    int cpus[2];
    int count = topology.cpu_count < 2 ? topology.cpu_count : 2;
    for (int i = 0; i < count; i++) op_runtime_cpu(i, &cpus[i], NULL);
    op_queue_t *placed = op_queue_create("placed", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    if (!placed || op_queue_set_cpu_list(placed, cpus, (size_t)count, NULL) != 0) return 2;
    if (run_one(placed)) return 1;
    int with_placed = threads();
    long long start = now_ms();
    int idle = with_placed;
    while (now_ms() - start < 10000) {
        idle = threads();
        if (idle <= baseline) break;
        usleep(10000);
    }
    long long left_ms = now_ms() - start;
    if (run_one(placed)) return 1;
    int again = threads();
    printf("baseline=%d\nplaced=%d\nidle=%d\nagain=%d\nleft_ms=%lld\nworkers=%d\n", baseline,
           with_placed, idle, again, left_ms, count);
    fflush(stdout);
    op_queue_release(placed);
    op_queue_release(plain);
    return idle <= baseline ? 0 : 1;
}
