/*
 * hand_over_wake_probe.c — a child process for WorkerPoolTests: a worker that carries a task to
 * another pool hands it over (op_pool_hand_over_token) and wakes that pool's worker on its own
 * CPU first, not the next one after it (parking_and_wake.c, op_pool_wake_one_for).
 *
 * Each trial, with every userInteractive worker parked (their parks outnumber their wake-ups:
 * the pool parks them for ever, so no park ends by a timeout): a default-QoS queue of explicit width 2 (not 1: a serial queue raises the work ahead of a higher-QoS task)
 * gets task A (default QoS: notes the CPU its drainer runs on) and task B (userInteractive,
 * depending on A: A's finish makes it ready on the drainer, which carries it to the
 * userInteractive pool). The trial counts whether
 * the userInteractive worker pinned to A's CPU was woken. Which worker a hand-over wakes first
 * does not depend on timing; a backed wake-up may add the other's, never remove this one's.
 * PROBE_VERBOSE=1 prints each trial's drainer CPU and the wake-ups per CPU on stderr.
 * Prints "trials=N", "own_cpu_woken=K", "skipped=S" (trials whose workers did not park within
 * 1 s, or whose drainer CPU had no userInteractive worker). Exits 0; 3 with fewer than two
 * userInteractive workers (one CPU: no other worker to choose).
 */
#define _GNU_SOURCE
#include <operations_core.h>

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_WORKERS 1024

static _Atomic int drainer_cpu = -1;

static void note_cpu(void *context) {
    (void)context;
    atomic_store(&drainer_cpu, sched_getcpu());
}

static void nothing(void *context) { (void)context; }

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static op_worker_counters_t counters[MAX_WORKERS];

/* The userInteractive pool's pinned workers' wake-ups, indexed by CPU (-1: none there). Returns
 * whether every one of them is parked now (a worker counts its wake-up when it resumes). */
static int ui_wakeups(long long *by_cpu, int cpus) {
    size_t count = op_runtime_worker_counters(counters, MAX_WORKERS);
    if (count > MAX_WORKERS) count = MAX_WORKERS;
    for (int cpu = 0; cpu < cpus; cpu++) by_cpu[cpu] = -1;
    int all_parked = 1;
    for (size_t i = 0; i < count; i++) {
        op_worker_counters_t *w = &counters[i];
        if (w->qos != OP_QOS_USER_INTERACTIVE || w->spare || w->placed || w->cpu < 0 || w->cpu >= cpus) continue;
        by_cpu[w->cpu] = (long long)w->wakeups;
        if (w->parks <= w->wakeups) all_parked = 0;
    }
    return all_parked;
}

int main(int argc, char **argv) {
    int trials = argc > 1 ? atoi(argv[1]) : 40;
    op_runtime_start_workers(OP_QOS_DEFAULT);
    op_runtime_start_workers(OP_QOS_USER_INTERACTIVE);
    int cpus = 0, ui_workers = 0; /* cpus: above the highest CPU id of a worker */
    {
        size_t count = op_runtime_worker_counters(counters, MAX_WORKERS);
        for (size_t i = 0; i < count && i < MAX_WORKERS; i++) {
            if (counters[i].cpu + 1 > cpus) cpus = counters[i].cpu + 1;
            if (counters[i].qos == OP_QOS_USER_INTERACTIVE && !counters[i].spare && counters[i].cpu >= 0) ui_workers++;
        }
    }
    if (ui_workers < 2) {
        printf("ui_workers=%d\n", ui_workers);
        return 3;
    }
    long long *before = calloc((size_t)cpus, sizeof *before);
    long long *after = calloc((size_t)cpus, sizeof *after);
    op_queue_t *queue = op_queue_create("hand-over-probe", OP_QOS_DEFAULT, 2);
    int own = 0, skipped = 0;
    for (int trial = 0; trial < trials; trial++) {
        long long deadline = now_ns() + 1000000000LL;
        int parked = 0;
        while (!(parked = ui_wakeups(before, cpus)) && now_ns() < deadline) sched_yield();
        if (!parked) {
            skipped++;
            continue;
        }
        atomic_store(&drainer_cpu, -1);
        op_task_attr_t attr;
        op_task_attr_init(&attr);
        op_task_t *a = op_task_create(note_cpu, NULL, &attr);
        attr.qos = OP_QOS_USER_INTERACTIVE;
        op_task_t *b = op_task_create(nothing, NULL, &attr);
        /* B becomes ready on A's drainer, in A's finish, which then carries it (not on this
         * thread, which wakes as a thread that is not a worker): B is submitted first, so no
         * hold of its submit is left when A finishes. */
        if (op_task_add_dependency(b, a) != 0) return 2;
        op_queue_submit(queue, b);
        op_queue_submit(queue, a);
        if (op_task_wait(b, 10LL * 1000000000LL) != 0) return 2;
        op_task_release(a);
        op_task_release(b);
        /* Every woken worker has resumed (and counted its wake-up) once all are parked again. */
        deadline = now_ns() + 2000000000LL;
        while (!ui_wakeups(after, cpus) && now_ns() < deadline) sched_yield();
        int cpu = atomic_load(&drainer_cpu);
        if (cpu < 0 || cpu >= cpus || before[cpu] < 0) {
            skipped++;
            continue;
        }
        if (after[cpu] > before[cpu]) own++;
        if (getenv("PROBE_VERBOSE")) {
            fprintf(stderr, "drainer %d:", cpu);
            for (int c = 0; c < cpus; c++) fprintf(stderr, " %lld", after[c] - before[c]);
            fprintf(stderr, "\n");
        }
    }
    op_queue_release(queue);
    printf("trials=%d\nown_cpu_woken=%d\nskipped=%d\n", trials, own, skipped);
    return 0;
}
