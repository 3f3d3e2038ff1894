/*
 * spinning_submitter_probe.c — a child process for WorkerPoolTests: which worker a submitter
 * that goes on running wakes. argv[1] is a class (0 background … 4 userInteractive).
 *
 * The probe pins itself to the CPU of the class's worker 0, after the workers started (a pool
 * has a worker per CPU of the affinity it starts with), and for each of argv[2] rounds (20):
 * waits until every worker of the class sleeps (/proc/self/task/TID/stat), submits a task that
 * notes the CPU it runs on, and spins until the task started. A utility or background worker
 * woken on the probe's CPU would wait behind the spinning probe until its time slice ends
 * (worker_pool.c, op_pool_wake_one), so for those classes the wake-up goes to a worker on
 * another CPU.
 *
 * Prints workers= (the class's workers; with fewer than 2 it stops there), then rounds=,
 * submitter_cpu= and on_submitter_cpu= (rounds whose task ran on the probe's CPU). Exit 0 when
 * printed; 2 when a call failed; 3 when the workers did not all sleep within 10 s; 4 when a task
 * did not start within 10 s.
 */
#define _GNU_SOURCE
#include <operations_core.h>

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic int ran_on_cpu = -1;

static void note_cpu(void *context) {
    (void)context;
    atomic_store(&ran_on_cpu, sched_getcpu());
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The scheduler state letter of thread `tid` ('R', 'S', …), or 0. */
static char thread_state(int tid) {
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    FILE *file = fopen(path, "r");
    if (!file) return 0;
    size_t length = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[length] = 0;
    const char *close = strrchr(text, ')'); /* the name may hold spaces */
    return close && close[1] == ' ' ? close[2] : 0;
}

/* Waits until every worker of `qos` sleeps (parked), at most 10 s. */
static int wait_all_asleep(op_qos_t qos) {
    long long deadline = now_ns() + 10LL * 1000000000LL;
    for (;;) {
        int awake = 0;
        for (int i = 0; i < op_runtime_worker_count(qos); i++) {
            op_worker_info_t info;
            if (op_runtime_worker_info(qos, i, &info) != 0) return 2;
            if (thread_state(info.tid) != 'S') awake++;
        }
        if (awake == 0) return 0;
        if (now_ns() > deadline) return 3;
        usleep(1000);
    }
}

int main(int argc, char **argv) {
    op_qos_t qos = (op_qos_t)(argc > 1 ? atoi(argv[1]) : OP_QOS_UTILITY);
    int rounds = argc > 2 ? atoi(argv[2]) : 20;
    op_runtime_start_workers(qos);
    int workers = op_runtime_worker_count(qos);
    printf("workers=%d\n", workers);
    if (workers < 2) return 0;
    op_worker_info_t first;
    if (op_runtime_worker_info(qos, 0, &first) != 0) return 2;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(first.cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) return 2;
    op_queue_t *queue = op_queue_create("spinning-submitter", qos, OP_WIDTH_DEFAULT);
    if (!queue) return 2;
    int on_submitter_cpu = 0;
    for (int round = 0; round < rounds; round++) {
        int rc = wait_all_asleep(qos);
        if (rc != 0) return rc;
        atomic_store(&ran_on_cpu, -1);
        if (op_queue_submit_f(queue, note_cpu, NULL) != 0) return 2;
        long long deadline = now_ns() + 10LL * 1000000000LL;
        while (atomic_load(&ran_on_cpu) < 0) { /* a submitter that goes on running */
            if (now_ns() > deadline) return 4;
        }
        if (atomic_load(&ran_on_cpu) == first.cpu) on_submitter_cpu++;
    }
    if (op_queue_wait(queue, 10LL * 1000000000LL) != 0) return 2;
    op_queue_release(queue);
    printf("rounds=%d\nsubmitter_cpu=%d\non_submitter_cpu=%d\n", rounds, first.cpu, on_submitter_cpu);
    return 0;
}
