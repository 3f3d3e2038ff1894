/*
 * proc_fault_probe.c — a child process for FaultTests: the blocked-worker monitor without
 * /proc. With argument "unreadable" it sets OPERATIONS_FAULT_PROC=unreadable before the runtime
 * starts (opening /proc/self/task/TID/stat then fails as if /proc were not mounted); with
 * "normal" it leaves /proc alone (the same scenario as a control).
 *
 * The scenario: a default-width queue of the default class gets one task per CPU, each blocked
 * in read() on a pipe (asleep in the kernel, invisible to the core), then one more task that
 * writes the bytes they wait for. Only the monitor can get the last task run: it must count the
 * readers blocked (without /proc: after they ran one task for 50 ms while work waits) and lend
 * their slots (the writer waits in the bands of a queue at its width, which is what makes the
 * monitor look). Prints key=value lines (cpus, wait, ms); exits 0 when every task ran within
 * 20 s, 1 otherwise (after unblocking the readers itself), 2 on bad usage. Mode "busy": see
 * busy_mode below.
 */
#include <operations_core.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int pipe_fds[2];
static int cpus;

static void reader(void *context) {
    (void)context;
    char byte;
    while (read(pipe_fds[0], &byte, 1) != 1) {
    }
}

static void writer(void *context) {
    (void)context;
    for (int i = 0; i < cpus; i++) {
        if (write(pipe_fds[1], "x", 1) != 1) abort();
    }
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Mode "busy": CPU-bound bodies (each spins 60 ms) fill a default-width queue with a backlog,
 * without /proc: they must not be taken for blocked (the fallback reads each thread's CPU
 * clock), so no more run at once than the width and no spare starts. */
static _Atomic int running_now;
static _Atomic int running_most;

static void spinner(void *context) {
    (void)context;
    int now = atomic_fetch_add_explicit(&running_now, 1, memory_order_relaxed) + 1;
    int seen = atomic_load_explicit(&running_most, memory_order_relaxed);
    while (now > seen && !atomic_compare_exchange_weak_explicit(&running_most, &seen, now,
                                                                memory_order_relaxed,
                                                                memory_order_relaxed)) {
    }
    long long end = now_ns() + 60000000LL;
    while (now_ns() < end) {
    }
    atomic_fetch_sub_explicit(&running_now, 1, memory_order_relaxed);
}

/* The share of its wall time a thread that computes for 30 ms gets, in thousandths, before the
 * runtime starts: on a machine loaded by other processes the test's computing bodies get little
 * CPU too, and the monitor then rightly takes them for asleep (the test does not judge then). */
static int machine_share(void) {
    struct timespec cpu0, cpu1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
    long long start = now_ns();
    while (now_ns() - start < 30000000LL) {
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    long long cpu = (cpu1.tv_sec - cpu0.tv_sec) * 1000000000LL + (cpu1.tv_nsec - cpu0.tv_nsec);
    return (int)(cpu * 1000 / (now_ns() - start + 1));
}

static int busy_mode(void) {
    int share = machine_share();
    setenv("OPERATIONS_FAULT_PROC", "unreadable", 1);
    op_topology_t topology;
    op_runtime_topology(&topology);
    op_queue_t *queue = op_queue_create("proc-probe-busy", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    if (!queue) return 3;
    for (int i = 0; i < 4 * topology.default_width; i++) op_queue_submit_f(queue, spinner, NULL);
    if (op_queue_wait(queue, 20LL * 1000000000LL) != 0) return 1;
    int peak = 0;
    op_runtime_spare_workers(OP_QOS_DEFAULT, &peak);
    printf("width=%d\nmost=%d\nspares_peak=%d\nmachine_share=%d\n", topology.default_width,
           atomic_load_explicit(&running_most, memory_order_relaxed), peak, share);
    op_queue_release(queue);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "busy") == 0) return busy_mode();
    if (argc != 2 || (strcmp(argv[1], "unreadable") != 0 && strcmp(argv[1], "normal") != 0)) {
        fprintf(stderr, "usage: %s unreadable|normal|busy\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "unreadable") == 0) setenv("OPERATIONS_FAULT_PROC", "unreadable", 1);
    op_topology_t topology;
    op_runtime_topology(&topology);
    cpus = topology.cpu_count;
    printf("cpus=%d\n", cpus);
    if (pipe(pipe_fds) != 0) return 3;
    op_queue_t *queue = op_queue_create("proc-probe", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    if (!queue) return 3;
    long long start = now_ns();
    for (int i = 0; i < cpus; i++) {
        if (op_queue_submit_f(queue, reader, NULL) != 0) return 3;
    }
    usleep(20000); /* let the readers take every worker */
    if (op_queue_submit_f(queue, writer, NULL) != 0) return 3;
    int waited = op_queue_wait(queue, 20LL * 1000000000LL);
    printf("wait=%d\nms=%lld\n", waited, (now_ns() - start) / 1000000);
    if (waited != 0) {
        writer(NULL); /* unblock the readers, so that the process can end */
        return 1;
    }
    op_queue_release(queue);
    return 0;
}
