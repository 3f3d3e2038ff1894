/*
 * unprivileged_nice_probe.c — a child process for UnprivilegedNiceTests
 * (Tests/OperationsCoreTests/UnprivilegedNiceTests.swift), compiled with the core's sources.
 *
 * Before the core starts it gives up the privilege to lower nice values for real, as the usual
 * container or unprivileged user runs: RLIMIT_NICE {0, 0}, then, when it runs as root (CI does),
 * it becomes `nobody` (setgroups, setgid and setuid to 65534, which drops every capability);
 * otherwise it drops CAP_SYS_NICE. Then it runs tasks and reports, for each, the nice value and
 * thread id its body saw:
 *   queue_<q>      a task inheriting the QoS of a queue of class q (every class);
 *   op_<q>         a task of class q on a default-QoS queue (every class);
 *   serial_<q>     the same on a serial default-QoS queue (order kept: serial_order);
 *   tp_<c>_<t>     a task of the queue's class c at threadPriority t/100.
 *   promo_*        QoS promotion: a held body on a background serial queue (promo_held_*: the
 *                  lowest nice it saw while a task behind it was promoted to userInteractive,
 *                  and its thread's nice afterwards) and the promoted task (promo_queued_*:
 *                  its nice, the class it reports).
 * and the nice table, its kind and the floor. Output: "key=value" lines. Exit 0 when every task
 * ran, 2 when one did not, 3 when dropping privilege failed.
 */
#define _GNU_SOURCE
#include <operations_core.h>

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe_privileges.h"

#define WAIT_NS (20LL * 1000000000LL)

static const char *const names[OP_QOS_COUNT] = {"background", "utility", "default",
                                                 "userInitiated", "userInteractive"};

struct record {
    _Atomic int nice;
    _Atomic int tid;
    _Atomic int ran;
    _Atomic int order;
};

static _Atomic int serial_counter;

static void record_body(void *context) {
    struct record *record = context;
    atomic_store(&record->nice, op_current_thread_nice());
    atomic_store(&record->tid, op_current_thread_id());
    atomic_store(&record->order, atomic_fetch_add(&serial_counter, 1));
    atomic_fetch_add(&record->ran, 1);
}

/* A body that runs until released (20 s at most), noting the lowest nice it saw. */
struct held {
    _Atomic int started, release, first, lowest, tid;
};

static void held_body(void *context) {
    struct held *held = context;
    atomic_store(&held->first, op_current_thread_nice());
    atomic_store(&held->tid, op_current_thread_id());
    atomic_store(&held->started, 1);
    for (int i = 0; i < 20000 && !atomic_load(&held->release); i++) {
        int nice = op_current_thread_nice();
        if (nice < atomic_load(&held->lowest)) atomic_store(&held->lowest, nice);
        usleep(1000);
    }
}

static int drop_privilege(void) {
    struct rlimit zero = {0, 0};
    if (setrlimit(RLIMIT_NICE, &zero) != 0) return errno;
    if (geteuid() == 0) {
        if (setgroups(0, NULL) != 0) return errno;
        if (setgid(65534) != 0) return errno;
        if (setuid(65534) != 0) return errno;
        return 0;
    }
    return probe_drop_cap_sys_nice();
}

/* Submits one task and waits for it; prints <key>_nice, <key>_tid. Returns 1 when it ran. */
static int run_one(op_queue_t *queue, const char *key, int qos, double thread_priority,
                   struct record *record, op_task_t **keep) {
    atomic_init(&record->nice, -100);
    atomic_init(&record->tid, 0);
    atomic_init(&record->ran, 0);
    atomic_init(&record->order, -1);
    op_task_attr_t attr;
    op_task_attr_init(&attr);
    attr.qos = qos;
    attr.thread_priority = thread_priority;
    op_task_t *task = op_task_create(record_body, record, &attr);
    if (!task || op_queue_submit(queue, task) != 0) {
        printf("error=cannot submit %s\n", key);
        return 0;
    }
    if (keep) {
        *keep = task; /* the caller waits */
        return 1;
    }
    /* Polled, not op_task_wait: a wait that sleeps raises the task to this thread's class
     * (QoS promotion), and this measures the nice each class runs at on its own. */
    for (int i = 0; i < 100000 && !op_task_is_finished(task); i++) usleep(200);
    if (!op_task_is_finished(task)) {
        printf("error=%s did not finish\n", key);
        fflush(stdout);
        _exit(2);
    }
    printf("%s_nice=%d\n%s_tid=%d\n", key, atomic_load(&record->nice), key,
           atomic_load(&record->tid));
    op_task_release(task);
    return atomic_load(&record->ran);
}

int main(void) {
    int rc = drop_privilege();
    if (rc != 0) {
        printf("error=dropping privilege: %s\n", strerror(rc));
        return 3;
    }
    int start = getpriority(PRIO_PROCESS, 0);
    printf("uid=%d\nstart_nice=%d\n", (int)geteuid(), start);
    int can_lower = setpriority(PRIO_PROCESS, 0, start - 1) == 0;
    printf("can_lower=%d\n", can_lower);
    if (can_lower) return 3;

    int table[OP_QOS_COUNT];
    op_runtime_nice_table(table);
    printf("table=%d,%d,%d,%d,%d\n", table[0], table[1], table[2], table[3], table[4]);
    printf("kind=%d\nfloor=%d\n", (int)op_runtime_nice_table_kind(), op_runtime_nice_floor());

    int expected = 0, ran = 0;
    struct record record;
    char key[64];
    for (int q = 0; q < OP_QOS_COUNT; q++) {
        op_queue_t *queue = op_queue_create("per-queue", (op_qos_t)q, OP_WIDTH_DEFAULT);
        snprintf(key, sizeof key, "queue_%s", names[q]);
        expected++;
        ran += run_one(queue, key, OP_QOS_INHERIT, 0.5, &record, NULL);
        op_queue_release(queue);
    }
    op_queue_t *plain = op_queue_create("per-op", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    for (int q = 0; q < OP_QOS_COUNT; q++) {
        snprintf(key, sizeof key, "op_%s", names[q]);
        expected++;
        ran += run_one(plain, key, q, 0.5, &record, NULL);
    }
    static const int percents[] = {0, 25, 75, 100};
    static const int classes[] = {OP_QOS_DEFAULT, OP_QOS_UTILITY, OP_QOS_USER_INTERACTIVE};
    for (size_t c = 0; c < sizeof classes / sizeof classes[0]; c++) {
        op_queue_t *queue = op_queue_create("thread-priority", (op_qos_t)classes[c], OP_WIDTH_DEFAULT);
        for (size_t i = 0; i < sizeof percents / sizeof percents[0]; i++) {
            snprintf(key, sizeof key, "tp_%s_%d", names[classes[c]], percents[i]);
            expected++;
            ran += run_one(queue, key, OP_QOS_INHERIT, percents[i] / 100.0, &record, NULL);
        }
        op_queue_release(queue);
    }
    /* Per-operation thread priority on a queue of another class. */
    snprintf(key, sizeof key, "op_utility_tp_100");
    expected++;
    ran += run_one(plain, key, OP_QOS_UTILITY, 1.0, &record, NULL);

    /* A serial queue: every class in turn, submitted at once; they run one at a time, in order. */
    op_queue_t *serial = op_queue_create("serial", OP_QOS_DEFAULT, 1);
    op_queue_set_suspended(serial, true);
    struct record records[OP_QOS_COUNT];
    op_task_t *tasks[OP_QOS_COUNT];
    for (int q = 0; q < OP_QOS_COUNT; q++) {
        snprintf(key, sizeof key, "serial_%s", names[q]);
        expected++;
        run_one(serial, key, q, 0.5, &records[q], &tasks[q]);
    }
    atomic_store(&serial_counter, 0);
    op_queue_set_suspended(serial, false);
    printf("serial_order=");
    for (int q = 0; q < OP_QOS_COUNT; q++) {
        if (op_task_wait(tasks[q], WAIT_NS) != 0) {
            printf("\nerror=serial task %d did not finish\n", q);
            fflush(stdout);
            _exit(2);
        }
        printf("%s%d", q ? "," : "", atomic_load(&records[q].order));
    }
    printf("\n");
    for (int q = 0; q < OP_QOS_COUNT; q++) {
        printf("serial_%s_nice=%d\n", names[q], atomic_load(&records[q].nice));
        ran += atomic_load(&records[q].ran);
        op_task_release(tasks[q]);
    }
    op_queue_release(serial);
    op_queue_release(plain);

    /* Every class's workers sit at their class's value, none below the floor. */
    for (int q = 0; q < OP_QOS_COUNT; q++) {
        op_runtime_start_workers((op_qos_t)q);
        int count = op_runtime_worker_count((op_qos_t)q);
        printf("workers_%s=", names[q]);
        for (int i = 0; i < count; i++) {
            op_worker_info_t info;
            if (op_runtime_worker_info((op_qos_t)q, i, &info) != 0) continue;
            errno = 0;
            printf("%s%d", i ? "," : "", getpriority(PRIO_PROCESS, (id_t)info.tid));
        }
        printf("\n");
    }
    /* QoS promotion without privilege: the queued task moves to userInteractive's workers; the
     * running body ahead of it cannot be reniced and stays at background's value. */
    {
        op_queue_t *queue = op_queue_create("promo", OP_QOS_BACKGROUND, 1);
        struct held held = {.lowest = 100};
        op_task_t *gate = op_task_create(held_body, &held, NULL);
        struct record promoted;
        op_task_t *task = NULL;
        op_queue_submit(queue, gate);
        for (int i = 0; i < 20000 && !atomic_load(&held.started); i++) usleep(1000);
        ran += run_one(queue, "promo_queued", OP_QOS_INHERIT, 0.5, &promoted, &task);
        expected++;
        op_task_promote(task, OP_QOS_USER_INTERACTIVE);
        usleep(20000); /* a renice would have happened by now */
        atomic_store(&held.release, 1);
        if (op_task_wait(task, WAIT_NS) != 0 || op_task_wait(gate, WAIT_NS) != 0) {
            printf("error=promotion tasks did not finish\n");
            fflush(stdout);
            _exit(2);
        }
        errno = 0;
        printf("promo_queued_nice=%d\npromo_queued_class=%d\npromo_held_first=%d\n"
               "promo_held_lowest=%d\npromo_held_after=%d\npromo_effective_after=%d\n",
               atomic_load(&promoted.nice), op_task_promoted_qos(task), atomic_load(&held.first),
               atomic_load(&held.lowest), getpriority(PRIO_PROCESS, (id_t)atomic_load(&held.tid)),
               (int)op_queue_effective_qos(queue));
        op_task_release(task);
        op_task_release(gate);
        op_queue_release(queue);
    }
    printf("clamped=%d\nran=%d\nexpected=%d\n", op_runtime_nice_clamped() ? 1 : 0, ran, expected);
    fflush(stdout);
    return ran == expected ? 0 : 2;
}
