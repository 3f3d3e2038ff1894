/*
 * setpriority_fault_probe.c — a child process for FaultTests: every setpriority of the core is
 * refused (OPERATIONS_FAULT_SETPRIORITY=eperm, set by the probe before the runtime starts), as a
 * seccomp filter or a container's security profile may refuse it although CAP_SYS_NICE and
 * RLIMIT_NICE allow it. Tasks of every QoS class, and with thread priorities 0 and 1, must all
 * run (at whatever nice their threads have) and the refusal be reported once on stderr.
 * Prints key=value lines (ran, expected); exits 0 when every task ran within 20 s, 1 otherwise.
 */
#include <operations_core.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* relaxed: a counter read after op_queue_wait, which orders the finished bodies. */
static _Atomic int ran;

static void body(void *context) {
    (void)context;
    atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
}

int main(void) {
    setenv("OPERATIONS_FAULT_SETPRIORITY", "eperm", 1);
    int expected = 0;
    op_queue_t *queues[OP_QOS_COUNT];
    for (int qos = 0; qos < OP_QOS_COUNT; qos++) {
        queues[qos] = op_queue_create("setpriority-probe", (op_qos_t)qos, OP_WIDTH_DEFAULT);
        if (!queues[qos]) return 2;
        for (int i = 0; i < 3; i++) {
            op_task_attr_t attr;
            op_task_attr_init(&attr);
            attr.thread_priority = i == 0 ? 0.0 : i == 1 ? 1.0 : 0.5;
            op_task_t *task = op_task_create(body, NULL, &attr);
            if (!task || op_queue_submit(queues[qos], task) != 0) return 2;
            op_task_release(task);
            expected++;
        }
    }
    int status = 0;
    for (int qos = 0; qos < OP_QOS_COUNT; qos++) {
        if (op_queue_wait(queues[qos], 20LL * 1000000000LL) != 0) status = 1;
        op_queue_release(queues[qos]);
    }
    printf("ran=%d\nexpected=%d\n", atomic_load_explicit(&ran, memory_order_relaxed), expected);
    fflush(stdout);
    return status != 0 || atomic_load_explicit(&ran, memory_order_relaxed) != expected;
}
