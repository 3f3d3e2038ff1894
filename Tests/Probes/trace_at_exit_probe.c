/*
 * trace_at_exit_probe.c — a child process for TraceTests: run with OPERATIONS_TRACE=<file> (and
 * maybe OPERATIONS_TRACE_FLIGHT_MB), it runs a chain of N tasks (argv[1], default 10) on a queue
 * labelled "traced chain", each of the first 5 000 depending on the one before (submitted last
 * to first, or first to last with argv[2] "forward"), waits for them and returns from
 * main: the trace is written at the normal exit, with no call of the program's. Exits 0 when
 * every task ran; prints ran=<count>.
 */
#include <operations_core.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        if (i > 0 && i < 5000) op_task_add_dependency(tasks[i], tasks[i - 1]);
    }
    /* argv[2] "forward": first to last, so a task often finishes before its dependent is
     * submitted (the trace then meets the dependent first at the edge); else last to first. */
    bool forward = argc > 2 && strcmp(argv[2], "forward") == 0;
    for (int n = 0; n < count; n++) op_queue_submit(queue, tasks[forward ? n : count - 1 - n]);
    if (op_queue_wait(queue, 60LL * 1000000000LL) != 0) return 1;
    for (int i = 0; i < count; i++) op_task_release(tasks[i]);
    op_queue_release(queue);
    printf("ran=%d\n", atomic_load(&ran));
    return atomic_load(&ran) == count ? 0 : 1;
}
