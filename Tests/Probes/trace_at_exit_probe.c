/*
 * trace_at_exit_probe.c — a child process for TraceTests: run with OPERATIONS_TRACE=<file> (and
 * maybe OPERATIONS_TRACE_FLIGHT_MB), it runs a chain of N tasks (argv[1], default 10) on a queue
 * labelled "traced chain", each depending on the one before, waits for them and returns from
 * main: the trace is written at the normal exit, with no call of the program's. Exits 0 when
 * every task ran; prints ran=<count>.
 */
#include <operations_core.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_int ran;

static void body(void *context) {
    (void)context;
    atomic_fetch_add(&ran, 1);
}

int main(int argc, char **argv) {
    int count = argc > 1 ? atoi(argv[1]) : 10;
    if (count < 1) count = 1;
    op_queue_t *queue = op_queue_create("traced chain", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    op_task_t **tasks = calloc((size_t)count, sizeof *tasks);
    if (!queue || !tasks) return 2;
    for (int i = 0; i < count; i++) {
        tasks[i] = op_task_create(body, NULL, NULL);
        if (!tasks[i]) return 2;
        if (i > 0 && i < 1000) op_task_add_dependency(tasks[i], tasks[i - 1]);
    }
    for (int i = count - 1; i >= 0; i--) op_queue_submit(queue, tasks[i]);
    if (op_queue_wait(queue, 60LL * 1000000000LL) != 0) return 1;
    for (int i = 0; i < count; i++) op_task_release(tasks[i]);
    op_queue_release(queue);
    printf("ran=%d\n", atomic_load(&ran));
    return atomic_load(&ran) == count ? 0 : 1;
}
