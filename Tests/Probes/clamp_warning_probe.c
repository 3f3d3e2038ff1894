/*
 * clamp_warning_probe.c — a child process for ClampWarningTests
 * (Tests/OperationsCoreTests/ClampTests.swift): when an unprivileged process is told, on stderr,
 * that what it asked for was changed for lack of privilege.
 *
 * Before the core starts it gives up the privilege to lower nice values, as the usual container
 * or unprivileged user runs: RLIMIT_NICE {0, 0}, then as root it becomes `nobody` (setgroups,
 * setgid, setuid 65534), otherwise it drops CAP_SYS_NICE. Then (argv[1]):
 *   default   runs only default-QoS work: tasks on a default-width and a serial default queue,
 *             waited for from this thread, a job, a submit_f. Nothing it asks is changed.
 *   clamped   runs a userInteractive task (nice -4, below what the process may set: the table
 *             is shifted) and a default task at threadPriority 1.0 (nice -1 above the shift:
 *             clamped).
 *   silenced  op_runtime_set_clamp_warning(false) first, then the same as clamped.
 * Output: "key=value" lines on stdout (uid, kind, clamped, warnings, ran); nothing of its own on
 * stderr. Exit 0 when every task ran, 2 when one did not, 3 when dropping privilege failed.
 */
#define _GNU_SOURCE
#include <operations_core.h>

#include <errno.h>
#include <grp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "probe_privileges.h"

#define WAIT_NS (20LL * 1000000000LL)

/* relaxed: a count read after the waits, which order the bodies before them. */
static _Atomic int ran;

static void body(void *context) {
    (void)context;
    atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
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

/* Submits one task of class `qos` (OP_QOS_INHERIT: the queue's) at `thread_priority` and waits
 * for it; 1 when it ran. */
static int run_task(op_queue_t *queue, int qos, double thread_priority) {
    op_task_attr_t attr;
    op_task_attr_init(&attr);
    attr.qos = qos;
    attr.thread_priority = thread_priority;
    op_task_t *task = op_task_create(body, NULL, &attr);
    if (!task) return 0;
    int before = atomic_load_explicit(&ran, memory_order_relaxed);
    int ok = op_queue_submit(queue, task) == 0 && op_task_wait(task, WAIT_NS) == 0;
    op_task_release(task);
    return ok && atomic_load_explicit(&ran, memory_order_relaxed) == before + 1;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "default";
    int rc = drop_privilege();
    if (rc != 0) {
        printf("error=dropping privilege: %s\n", strerror(rc));
        return 3;
    }
    if (strcmp(mode, "silenced") == 0) op_runtime_set_clamp_warning(false);
    printf("uid=%d\n", (int)geteuid());

    int ok = 1;
    op_queue_t *queue = op_queue_create("clamp-warning", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    op_queue_t *serial = op_queue_create("clamp-warning-serial", OP_QOS_DEFAULT, 1);
    if (!queue || !serial) return 2;
    if (strcmp(mode, "default") == 0) {
        for (int i = 0; i < 4; i++) ok &= run_task(queue, OP_QOS_INHERIT, 0.5);
        ok &= run_task(serial, OP_QOS_INHERIT, 0.5);
        ok &= run_task(queue, OP_QOS_DEFAULT, 0.5);
        ok &= op_queue_submit_job(serial, body, NULL, OP_QOS_INHERIT) == 0;
        ok &= op_queue_submit_f(queue, body, NULL) == 0;
        ok &= op_queue_wait(serial, WAIT_NS) == 0 && op_queue_wait(queue, WAIT_NS) == 0;
        ok &= atomic_load_explicit(&ran, memory_order_relaxed) == 8;
    } else {
        ok &= run_task(queue, OP_QOS_USER_INTERACTIVE, 0.5);
        ok &= run_task(queue, OP_QOS_INHERIT, 1.0);
        ok &= run_task(queue, OP_QOS_USER_INTERACTIVE, 1.0);
    }
    printf("kind=%d\nclamped=%d\nwarnings=%d\nran=%d\n", (int)op_runtime_nice_table_kind(),
           op_runtime_nice_clamped() ? 1 : 0, op_runtime_clamp_warning() ? 1 : 0,
           atomic_load_explicit(&ran, memory_order_relaxed));
    fflush(stdout);
    op_queue_release(queue);
    op_queue_release(serial);
    return ok ? 0 : 2;
}
