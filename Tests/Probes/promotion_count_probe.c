/*
 * promotion_count_probe.c — a child process for PromotionTests: a task counted on its serial
 * queue at its own class (a higher-QoS task submitted to a serial queue raises it, promotion.c)
 * starts while the queue is raised higher still (a waiter's raise). Its finish must take its own
 * count off, not the waiter's: found by review, the level was rewritten at the start, the
 * waiter's count came off instead, the queue stayed at userInitiated for ever and the waiter's
 * own end wrapped its count. Prints after_finish= and after_unpromote= (the queue's effective
 * class); exits 0 when they are userInteractive and default, 1 otherwise.
 */
#include <operations_core.h>

#include <stdio.h>

static void body(void *context) { (void)context; }

int main(void) {
    op_queue_t *queue = op_queue_create("serial", OP_QOS_DEFAULT, 1);
    if (!queue) return 3;
    if (op_queue_promote(queue, OP_QOS_USER_INTERACTIVE) != 0) return 3; /* a waiter's raise */
    op_task_attr_t attr;
    op_task_attr_init(&attr);
    attr.qos = OP_QOS_USER_INITIATED;
    op_task_t *task = op_task_create(body, NULL, &attr);
    if (!task) return 3;
    op_queue_submit(queue, task); /* counted on the queue at userInitiated */
    if (op_queue_wait(queue, 10LL * 1000000000LL) != 0) return 1;
    int after_finish = (int)op_queue_effective_qos(queue);
    op_queue_unpromote(queue, OP_QOS_USER_INTERACTIVE); /* the waiter's wait ends */
    int after_unpromote = (int)op_queue_effective_qos(queue);
    printf("after_finish=%d\nafter_unpromote=%d\n", after_finish, after_unpromote);
    op_task_release(task);
    op_queue_release(queue);
    return after_finish == OP_QOS_USER_INTERACTIVE && after_unpromote == OP_QOS_DEFAULT ? 0 : 1;
}
