/*
 * idle_cpu_probe.c — a child process for WorkerPoolTests: do workers that ran out of work cost
 * no CPU? Starts every class's workers, runs 100 000 empty tasks (argv[1] overrides), lets the
 * workers go idle for 50 ms, then measures the process's CPU time over 300 ms of idleness.
 * Nothing else runs in this process, so every nanosecond counted is the runtime's.
 * Prints the lines "tasks=N", "cpu_ns=N", "wall_ns=N"; exits 0, or 2 when the tasks did not finish.
 */
#include <operations_core.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void body(void *context) { (void)context; }

static long long clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ns(long long ns) {
    struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
    while (nanosleep(&ts, &ts) != 0) {}
}

int main(int argc, char **argv) {
    long count = argc > 1 ? atol(argv[1]) : 100000;
    for (int q = 0; q < OP_QOS_COUNT; q++) op_runtime_start_workers((op_qos_t)q);
    op_queue_t *queue = op_queue_create("idle-probe", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    for (long i = 0; i < count; i++) op_queue_submit_f(queue, body, NULL);
    if (op_queue_wait(queue, 30LL * 1000000000LL) != 0) return 2;
    op_queue_release(queue);
    sleep_ns(50000000LL);
    long long cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID), wall = clock_ns(CLOCK_MONOTONIC);
    sleep_ns(300000000LL);
    cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu;
    wall = clock_ns(CLOCK_MONOTONIC) - wall;
    printf("tasks=%ld\ncpu_ns=%lld\nwall_ns=%lld\n", count, cpu, wall);
    return 0;
}
