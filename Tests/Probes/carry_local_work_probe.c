/*
 * carry_local_work_probe.c — a child process for StrandedWorkTests: a body carried to another
 * class's worker (carry.c) waits for work its drainer released into its own local run queue.
 *
 * On a default-width queue at the default class, every slot but one computes until the end; the
 * last drainer runs X, which submits T (normal band: into this drainer's local run queue) and Y
 * (high band, of the class given as argument: the drainer takes it next and carries it with its
 * slot to that class's worker). Y waits visibly for T. The drainer's local run queue must go to
 * the bands before it leaves (found by review when the drainer slept in a hop: the hop worker's
 * wait flushed its own, empty ring, and T waited for ever). Prints y_wait=<op_task_wait's result> and t_ran=<0|1};
 * exits 0 when T ran and Y's wait returned, 1 otherwise, 2 on bad usage.
 */
#include <operations_core.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define WAIT_NS (10LL * 1000000000LL)

static op_queue_t *queue;
static atomic_int computing, y_done, t_ran, y_wait = -1;
static int hop_qos;
static op_task_t *t_task;

static void t_body(void *context) {
    (void)context;
    atomic_store(&t_ran, 1);
}

static void compute_body(void *context) {
    (void)context;
    atomic_fetch_add(&computing, 1);
    while (!atomic_load(&y_done)) {
    }
}

static void y_body(void *context) {
    (void)context;
    atomic_store(&y_wait, op_task_wait(t_task, WAIT_NS)); /* a visible wait for T */
    atomic_store(&y_done, 1);
}

static void x_body(void *context) {
    (void)context;
    t_task = op_task_create(t_body, NULL, NULL);
    op_queue_submit(queue, t_task);
    op_task_attr_t attr;
    op_task_attr_init(&attr);
    attr.priority = OP_PRIORITY_HIGH;
    attr.qos = hop_qos;
    op_task_t *y = op_task_create(y_body, NULL, &attr);
    op_queue_submit(queue, y);
    op_task_release(y);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    hop_qos = atoi(argv[1]);
    op_runtime_start_workers(OP_QOS_DEFAULT);
    op_topology_t topology;
    op_runtime_topology(&topology);
    queue = op_queue_create("carry local work", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    if (!queue) return 3;
    for (int i = 0; i < topology.default_width - 1; i++) op_queue_submit_f(queue, compute_body, NULL);
    for (int i = 0; i < 10000 && atomic_load(&computing) < topology.default_width - 1; i++) usleep(1000);
    op_queue_submit_f(queue, x_body, NULL);
    int rc = op_queue_wait(queue, 2 * WAIT_NS);
    atomic_store(&y_done, 1); /* frees the computing bodies if Y never ran */
    printf("queue_wait=%d\ny_wait=%d\nt_ran=%d\n", rc, atomic_load(&y_wait), atomic_load(&t_ran));
    return rc == 0 && atomic_load(&y_wait) == 0 && atomic_load(&t_ran) == 1 ? 0 : 1;
}
