/*
 * nice_clamp_probe.c — a child process for ClampTests (Tests/OperationsCoreTests/ClampTests.swift).
 *
 * It lives outside the Swift test target's directory because SwiftPM does not allow C files in
 * a Swift target. The test compiles it together with the core's sources:
 *   cc -std=gnu11 -O1 -I<pkg>/CShims/OperationsCore/include <pkg>/CShims/OperationsCore/(every .c) \
 *      nice_clamp_probe.c -lnuma -lpthread -lm -o probe
 *
 * Modes (argv[1]):
 *   clamp  Gives up the privilege to lower nice values FOR REAL before the core starts:
 *          RLIMIT_NICE {0, 0}, and CAP_SYS_NICE dropped from the effective, permitted and
 *          inheritable sets with the raw capget/capset system calls (no libcap). Then runs tasks
 *          on an OP_QOS_USER_INTERACTIVE queue (nice -4 wanted) and reports what they ran at.
 *   env    Keeps its privileges; reports the nice table after OPERATIONS_QOS_NICE, the start-up
 *          error if any, and the nice value of the userInteractive and background workers.
 *
 * Output: "key=value" lines on stdout. Exit 0 when every task ran, 2 when one did not, 3 when
 * the set-up (dropping privilege) failed.
 */
#define _GNU_SOURCE
#include <operations_core.h>

#include <errno.h>
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

struct record {
    _Atomic int nice;
    _Atomic int ran;
};

static void record_nice(void *context) {
    struct record *record = context;
    atomic_store(&record->nice, op_current_thread_nice());
    atomic_fetch_add(&record->ran, 1);
}

static int thread_nice(int tid) {
    errno = 0;
    return getpriority(PRIO_PROCESS, (id_t)tid);
}

/* Runs one task per thread priority on `queue`; prints body_nice_<label>=…; returns tasks run. */
static int run_tasks(op_queue_t *queue) {
    static const double priorities[] = {0.5, 1.0, 0.0};
    static const char *const labels[] = {"", "_high", "_low"};
    struct record records[3];
    op_task_t *tasks[3];
    int ran = 0;
    for (int i = 0; i < 3; i++) {
        atomic_init(&records[i].nice, -100);
        atomic_init(&records[i].ran, 0);
        op_task_attr_t attr;
        op_task_attr_init(&attr);
        attr.thread_priority = priorities[i];
        tasks[i] = op_task_create(record_nice, &records[i], &attr);
        if (!tasks[i] || op_queue_submit(queue, tasks[i]) != 0) {
            printf("error=cannot create or submit task %d\n", i);
            return ran;
        }
    }
    for (int i = 0; i < 3; i++) {
        int rc = op_task_wait(tasks[i], WAIT_NS);
        if (rc != 0) {
            printf("error=task %d did not finish: %d\n", i, rc);
            /* Leaked on purpose: the task may still run and write its record. */
            _exit(2);
        }
        ran += atomic_load(&records[i].ran);
        printf("body_nice%s=%d\n", labels[i], atomic_load(&records[i].nice));
        op_task_release(tasks[i]);
    }
    return ran;
}

static void print_workers(const char *name, op_qos_t qos) {
    op_runtime_start_workers(qos);
    int count = op_runtime_worker_count(qos);
    printf("%s_workers=%d\n", name, count);
    printf("%s_worker_nice=", name);
    for (int i = 0; i < count; i++) {
        op_worker_info_t info;
        if (op_runtime_worker_info(qos, i, &info) != 0) {
            printf("%s?", i ? "," : "");
            continue;
        }
        printf("%s%d", i ? "," : "", thread_nice(info.tid));
    }
    printf("\n%s_class_nice=", name);
    for (int i = 0; i < count; i++) {
        op_worker_info_t info;
        if (op_runtime_worker_info(qos, i, &info) == 0) printf("%s%d", i ? "," : "", info.class_nice);
    }
    printf("\n");
}

static int clamp_mode(void) {
    struct rlimit zero = {0, 0};
    if (setrlimit(RLIMIT_NICE, &zero) != 0) {
        printf("error=setrlimit(RLIMIT_NICE): %s\n", strerror(errno));
        return 3;
    }
    int rc = probe_drop_cap_sys_nice();
    if (rc != 0) {
        printf("error=dropping CAP_SYS_NICE: %s\n", strerror(rc));
        return 3;
    }
    int start = thread_nice(0);
    printf("start_nice=%d\n", start);
    /* Proof that the privilege is gone: lowering the nice value now fails. */
    int can_lower = setpriority(PRIO_PROCESS, 0, start - 1) == 0;
    printf("can_lower=%d\n", can_lower);
    if (can_lower) return 3;

    op_queue_t *queue = op_queue_create("clamp-probe", OP_QOS_USER_INTERACTIVE, OP_WIDTH_DEFAULT);
    if (!queue) {
        printf("error=op_queue_create: %s\n", strerror(errno));
        return 3;
    }
    int ran = run_tasks(queue);
    printf("ran=%d\n", ran);
    int table[OP_QOS_COUNT];
    op_runtime_nice_table(table);
    printf("wanted=%d\n", table[OP_QOS_USER_INTERACTIVE]);
    printf("clamped=%d\n", op_runtime_nice_clamped() ? 1 : 0);
    printf("negative_allowed=%d\n", op_runtime_negative_nice_allowed() ? 1 : 0);
    printf("lowest=%d\n", op_runtime_lowest_nice());
    print_workers("ui", OP_QOS_USER_INTERACTIVE);
    op_queue_release(queue);
    fflush(stdout);
    return ran == 3 ? 0 : 2;
}

static int env_mode(void) {
    int table[OP_QOS_COUNT];
    op_runtime_nice_table(table);
    printf("table=%d,%d,%d,%d,%d\n", table[0], table[1], table[2], table[3], table[4]);
    const char *error = op_runtime_nice_env_error();
    printf("env_error=%s\n", error ? error : "(null)");
    printf("negative_allowed=%d\n", op_runtime_negative_nice_allowed() ? 1 : 0);
    print_workers("ui", OP_QOS_USER_INTERACTIVE);
    print_workers("background", OP_QOS_BACKGROUND);
    op_queue_t *queue = op_queue_create("env-probe", OP_QOS_USER_INTERACTIVE, OP_WIDTH_DEFAULT);
    if (!queue) return 3;
    int ran = run_tasks(queue);
    printf("ran=%d\n", ran);
    op_queue_release(queue);
    fflush(stdout);
    return ran == 3 ? 0 : 2;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "clamp") == 0) return clamp_mode();
    if (strcmp(mode, "env") == 0) return env_mode();
    fprintf(stderr, "usage: %s clamp|env\n", argv[0]);
    return 64;
}
