/*
 * spinning_submitter_probe.c — a child process for WorkerPoolTests: which worker a submitter
 * that goes on running wakes. argv[1] is a class (0 background … 4 userInteractive), argv[2]
 * the rounds (20), argv[3] "fifo" to spin under SCHED_FIFO (no worker can preempt it).
 *
 * The probe pins itself to the CPU of the class's worker 0, after the workers started (a pool
 * has a worker per CPU of the affinity it starts with), and for each round: waits until every
 * worker of the class sleeps (/proc/self/task/TID/stat), submits a task that notes the CPU it
 * runs on, and spins until the task started. A utility or background worker woken on the
 * probe's CPU would wait behind the spinning probe until the kernel preempts it, so for those
 * classes the wake-up goes to a worker on another CPU (pool/parking_and_wake.c, op_pool_wake_one); a
 * default or higher worker woken there that could not preempt the probe (under SCHED_FIFO,
 * never) is backed by a second wake-up on another CPU.
 *
 * Prints workers= (the class's workers; with fewer than 2 it stops there), fifo=0 (the policy
 * was refused: it stops there), then rounds=, submitter_cpu=, short_slice= (what the workers of
 * the default class and above got: without it their own-CPU wake-ups need the backstop), on_submitter_cpu=
 * (rounds whose task ran on the probe's CPU), slowest_start_us= and over_5ms= (rounds whose
 * task started more than 5 ms after its submit: the blocked-worker monitor's rescue, a 10 ms
 * tick, and not a second wake-up, tens of µs; for the reader, no test asserts a time), and
 * backed_wakes= (the class pool's count of own-CPU wake-ups backed by a second one on another
 * CPU, from op_runtime_describe; -1 when not found). Exit 0 when printed; 2 when a call failed;
 * 3 when the workers did not all sleep within 10 s; 4 when a task did not start within 10 s
 * (3 s under SCHED_FIFO); 5 when /proc shows no worker's state (nothing checked).
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
            char state = thread_state(info.tid);
            if (state == 0) return 5; /* no /proc (or hidden): nothing to wait for */
            if (state != 'S') awake++;
        }
        if (awake == 0) return 0;
        if (now_ns() > deadline) return 3;
        usleep(1000);
    }
}

/* The class pool's "N wake-ups backed on another CPU" from op_runtime_describe, or -1 when its
 * line or that phrase is not there. */
static long long backed_wakes(op_qos_t qos) {
    static char report[1 << 16];
    op_runtime_describe(report, sizeof report);
    char pool[64];
    snprintf(pool, sizeof pool, "pool of class %s:", op_qos_name(qos));
    char *line = strstr(report, pool);
    if (!line) return -1;
    char *end = strchr(line, '\n');
    if (end) *end = 0; /* the search stays on the pool's line */
    const char *phrase = strstr(line, " wake-ups backed on another CPU");
    if (!phrase) return -1;
    const char *digits = phrase;
    while (digits > line && digits[-1] >= '0' && digits[-1] <= '9') digits--;
    return digits < phrase ? atoll(digits) : -1;
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
    bool fifo = argc > 3 && strcmp(argv[3], "fifo") == 0;
    if (fifo) {
        /* Priority 1, the lowest; reset on fork, so the runtime's threads started after this
         * (the monitor, spares) do not inherit it. The kernel's real-time throttling leaves the
         * other threads of this CPU 5 % of it (where it is on). */
        struct sched_param param = {.sched_priority = 1};
        if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param) != 0) {
            printf("fifo=0\n");
            return 0;
        }
        printf("fifo=1\n");
    }
    op_queue_t *queue = op_queue_create("spinning-submitter", qos, OP_WIDTH_DEFAULT);
    if (!queue) return 2;
    int on_submitter_cpu = 0;
    long long slowest = 0; /* for the reader */
    int over_5ms = 0;
    for (int round = 0; round < rounds; round++) {
        int rc = wait_all_asleep(qos);
        if (rc != 0) return rc;
        atomic_store(&ran_on_cpu, -1);
        long long submitted = now_ns();
        if (op_queue_submit_f(queue, note_cpu, NULL) != 0) return 2;
        /* Under SCHED_FIFO this spin holds the CPU: 3 s (a task that waits for it would be
         * helped by real-time throttling within about 1 s), 10 s otherwise. */
        long long deadline = submitted + (fifo ? 3LL : 10LL) * 1000000000LL;
        while (atomic_load(&ran_on_cpu) < 0) { /* a submitter that goes on running */
            if (now_ns() > deadline) return 4;
        }
        long long waited = now_ns() - submitted;
        if (waited > slowest) slowest = waited;
        if (waited > 5000000LL) over_5ms++;
        if (atomic_load(&ran_on_cpu) == first.cpu) on_submitter_cpu++;
    }
    if (op_queue_wait(queue, 10LL * 1000000000LL) != 0) return 2;
    op_queue_release(queue);
    printf("rounds=%d\nsubmitter_cpu=%d\n", rounds, first.cpu);
    printf("short_slice=%lld\n", (long long)op_runtime_short_time_slice());
    printf("on_submitter_cpu=%d\nslowest_start_us=%lld\n", on_submitter_cpu, slowest / 1000);
    printf("over_5ms=%d\n", over_5ms);
    /* The pool's count of backed wake-ups, from the report ("N wake-ups backed on another CPU"
     * on the line of the class's pool). */
    printf("backed_wakes=%lld\n", backed_wakes(qos));
    return 0;
}
