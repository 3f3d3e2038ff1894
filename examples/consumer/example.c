#include <operations_core.h>
#include <stdatomic.h>
#include <stdio.h>

static _Atomic int steps;

static void fetch(void *name) { printf("fetch %s\n", (const char *)name); atomic_fetch_add(&steps, 1); }
static void merge(void *unused) { printf("merge after %d fetches\n", atomic_load(&steps)); }

int main(void) {
    op_queue_t *queue = op_queue_create("example", OP_QOS_USER_INITIATED, OP_WIDTH_DEFAULT);
    op_task_t *a = op_task_create(fetch, "a", NULL);
    op_task_t *b = op_task_create(fetch, "b", NULL);

    op_task_attr_t attr;
    op_task_attr_init(&attr);
    attr.priority = OP_PRIORITY_HIGH;   /* before other ready tasks of this queue */
    attr.thread_priority = 0.75;        /* body runs ~2 nice steps above its class */
    op_task_t *sink = op_task_create(merge, NULL, &attr);
    op_task_add_dependency(sink, a);    /* runs after a and b, on any queue */
    op_task_add_dependency(sink, b);

    op_queue_submit(queue, sink);       /* the queue holds its own references */
    op_queue_submit(queue, a);
    op_queue_submit(queue, b);

    int rc = op_task_wait(sink, 5 * 1000000000LL);   /* 0, or ETIMEDOUT after 5 s */
    op_task_release(a);
    op_task_release(b);
    op_task_release(sink);
    op_queue_release(queue);            /* a busy queue lives until its last task finished */
    if (rc != 0 || atomic_load(&steps) != 2) return 1;
    puts("ok");
    return 0;
}
