/*
 * cgroup_probe.c — a child process for CgroupAndEnvironmentTests: what the core made of the
 * cgroup CPU limit (OPERATIONS_CGROUP_ROOT) and of the on/off environment variables the parent
 * set. Prints key=value lines: cpus, quota, default_width, quota_error, numa, reason,
 * nice_warnings, placed_idle_ms (asked twice: a bad value is reported once), and with the argument "run" also ran (the most tasks that ran at once on a new
 * OP_WIDTH_DEFAULT queue, out of 4 × cpus tasks that each spin for 30 ms; waits at most 20 s).
 */
#define _GNU_SOURCE
#include <operations_core.h>

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* relaxed: plain counters, read after op_queue_wait (which orders the finished bodies). */
static _Atomic int running;
static _Atomic int most;

static void body(void *context) {
    (void)context;
    int now = atomic_fetch_add_explicit(&running, 1, memory_order_relaxed) + 1;
    int seen = atomic_load_explicit(&most, memory_order_relaxed);
    while (now > seen && !atomic_compare_exchange_weak_explicit(&most, &seen, now, memory_order_relaxed,
                                                                memory_order_relaxed)) {
    }
    /* Busy for 30 ms, not asleep: a body asleep for a whole monitor tick gets its slot lent
     * (a default-width queue's concurrency follows its blocked bodies), and this probe measures
     * the width itself. */
    struct timespec start, clock_now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        clock_gettime(CLOCK_MONOTONIC, &clock_now);
    } while ((clock_now.tv_sec - start.tv_sec) * 1000000000L + (clock_now.tv_nsec - start.tv_nsec) < 30000000L);
    atomic_fetch_sub_explicit(&running, 1, memory_order_relaxed);
}

int main(int argc, char **argv) {
    op_topology_t topology;
    op_runtime_topology(&topology);
    printf("cpus=%d\nquota=%.3f\ndefault_width=%d\nquota_error=%s\n", topology.cpu_count,
           topology.cpu_quota, topology.default_width,
           topology.cpu_quota_error ? topology.cpu_quota_error : "-");
    printf("numa=%d\nreason=%s\nnice_warnings=%d\n", topology.numa ? 1 : 0,
           topology.fallback_reason ? topology.fallback_reason : "-",
           op_runtime_clamp_warning() ? 1 : 0);
    long long idle_ms = (long long)op_runtime_placed_pool_idle_ms();
    if (op_runtime_placed_pool_idle_ms() != idle_ms) return 4; /* read once */
    printf("placed_idle_ms=%lld\n", idle_ms);
    if (argc > 1 && strcmp(argv[1], "run") == 0) {
        op_queue_t *queue = op_queue_create("cgroup-probe", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
        if (!queue) return 2;
        for (int i = 0; i < 4 * topology.cpu_count; i++) op_queue_submit_f(queue, body, NULL);
        if (op_queue_wait(queue, 20LL * 1000 * 1000 * 1000) != 0) return 3;
        printf("ran=%d\n", atomic_load_explicit(&most, memory_order_relaxed));
        op_queue_release(queue);
    }
    fflush(stdout);
    return 0;
}
