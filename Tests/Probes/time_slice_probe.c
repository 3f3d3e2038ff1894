/*
 * time_slice_probe.c — a child process for WorkerPoolTests: the short time slice of the default
 * and latency classes' workers (time_slice.c) stays theirs.
 *
 * `inherit`: a userInteractive body starts the background and utility workers itself (a thread
 * inherits its creator's slice: they would run with 100 µs); the probe reads every worker's
 * slice (sched_getattr) and prints latency_short= (default, userInitiated and userInteractive
 * workers with the 100 µs slice), other_short= (other workers with it: 0 expected) and
 * workers=.
 * `batch`: the process runs under SCHED_BATCH before any worker starts; the latency workers get
 * the short slice and keep the policy: prints batch_kept= (userInteractive and default workers
 * still SCHED_BATCH)
 * and latency_short=.
 * Both print granted= (op_runtime_short_time_slice) first and stop there (exit 0) when the kernel
 * refused or ignored the slice. Exit 0 when the output was printed, 2 when a call failed.
 */
#define _GNU_SOURCE
#include <operations_core.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* struct sched_attr (linux/sched/types.h), as of Linux 5.3; glibc has no wrapper. */
typedef struct probe_sched_attr {
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
    uint32_t sched_util_min, sched_util_max;
} probe_sched_attr;

/* The slice of thread `tid` in ns as sched_getattr reports it (Linux 6.12 and later; no
 * privilege needed, and /proc's se.slice may be hidden), or -1. */
static long long slice_of(int tid) {
    probe_sched_attr attr;
    memset(&attr, 0, sizeof attr);
    if (syscall(SYS_sched_getattr, tid, &attr, (unsigned)sizeof attr, 0) != 0) return -1;
    return (long long)attr.sched_runtime;
}

static int count_short(op_qos_t qos, int *workers) {
    int count = 0;
    for (int i = 0; i < op_runtime_worker_count(qos); i++) {
        op_worker_info_t info;
        if (op_runtime_worker_info(qos, i, &info) != 0) exit(2);
        (*workers)++;
        if (slice_of(info.tid) == 100000) count++;
    }
    return count;
}

static void start_other_classes(void *context) {
    (void)context;
    op_runtime_start_workers(OP_QOS_BACKGROUND);
    op_runtime_start_workers(OP_QOS_UTILITY);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "inherit";
    bool batch = strcmp(mode, "batch") == 0;
    if (batch) {
        struct sched_param param = {0};
        if (sched_setscheduler(0, SCHED_BATCH, &param) != 0) return 2;
    }
    op_runtime_start_workers(OP_QOS_USER_INTERACTIVE);
    op_runtime_start_workers(OP_QOS_USER_INITIATED);
    op_runtime_start_workers(OP_QOS_DEFAULT);
    long long granted = (long long)op_runtime_short_time_slice();
    printf("granted=%lld\n", granted);
    if (granted != 100000) return 0;
    int latency_workers = 0;
    int latency_short = count_short(OP_QOS_USER_INTERACTIVE, &latency_workers) +
                        count_short(OP_QOS_USER_INITIATED, &latency_workers) +
                        count_short(OP_QOS_DEFAULT, &latency_workers);
    printf("latency_workers=%d\nlatency_short=%d\n", latency_workers, latency_short);
    if (batch) {
        int kept = 0, workers = 0;
        const op_qos_t asked[] = {OP_QOS_USER_INTERACTIVE, OP_QOS_DEFAULT};
        for (size_t c = 0; c < sizeof asked / sizeof asked[0]; c++) {
            for (int i = 0; i < op_runtime_worker_count(asked[c]); i++, workers++) {
                op_worker_info_t info;
                if (op_runtime_worker_info(asked[c], i, &info) != 0) return 2;
                if (sched_getscheduler(info.tid) == SCHED_BATCH) kept++;
            }
        }
        printf("batch_kept=%d\nbatch_workers=%d\n", kept, workers);
        return 0;
    }
    /* The other classes' workers, started from a userInteractive worker's body. */
    op_queue_t *queue = op_queue_create("starter", OP_QOS_USER_INTERACTIVE, 1);
    op_task_t *task = op_task_create(start_other_classes, NULL, NULL);
    if (!queue || !task || op_queue_submit(queue, task) != 0) return 2;
    if (op_task_wait(task, 30LL * 1000000000LL) != 0) return 2;
    op_task_release(task);
    int other_workers = 0;
    int other_short = count_short(OP_QOS_BACKGROUND, &other_workers) + count_short(OP_QOS_UTILITY, &other_workers);
    printf("other_workers=%d\nother_short=%d\n", other_workers, other_short);
    op_queue_release(queue);
    return 0;
}
