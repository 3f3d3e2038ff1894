/*
 * promotion_switch_probe.c — a child process for PromotionTests (the switch is process-wide, so
 * it is flipped here and not beside the other tests): op_runtime_set_qos_promotion turns new
 * promotions off and on, and every promotion made while it was on is undone as usual after it
 * went off (a queue's raise by its unpromote, a task's by its finish); an unpromote with no raise
 * in force changes nothing. Prints each check and exits 0 when all held, 1 otherwise.
 */
#include <operations_core.h>

#include <errno.h>
#include <stdio.h>

static int failures;

static void check(const char *what, long got, long want) {
    printf("%s=%ld%s\n", what, got, got == want ? "" : " (wrong)");
    if (got != want) failures++;
}

static void body(void *context) { (void)context; }

int main(void) {
    op_queue_t *waited = op_queue_create("waited", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    op_queue_t *held = op_queue_create("held", OP_QOS_DEFAULT, 0); /* starts nothing yet */
    if (!waited || !held) return 3;
    check("promotion_at_start", op_runtime_qos_promotion(), 1);

    /* Made while on: a queue's raise, and a task's (counted on its queue before it started). */
    check("queue_promote_on", op_queue_promote(waited, OP_QOS_USER_INTERACTIVE), 0);
    op_task_t *task = op_task_create(body, NULL, NULL);
    if (!task) return 3;
    op_queue_submit(held, task);
    check("task_promote_on", op_task_promote(task, OP_QOS_USER_INITIATED), 0);
    check("held_raised", op_queue_effective_qos(held), OP_QOS_USER_INITIATED);

    op_runtime_set_qos_promotion(false);
    check("promotion_after_off", op_runtime_qos_promotion(), 0);
    check("queue_promote_off", op_queue_promote(waited, OP_QOS_USER_INTERACTIVE), ENOTSUP);
    /* An unpromote without a raise in force (a caller that did not check the ENOTSUP above)
     * changes nothing; it must not borrow from the classes above. */
    op_queue_unpromote(waited, OP_QOS_USER_INITIATED);
    check("unmatched_unpromote", op_queue_effective_qos(waited), OP_QOS_USER_INTERACTIVE);
    op_task_t *later = op_task_create(body, NULL, NULL);
    if (!later) return 3;
    op_queue_submit(held, later);
    check("task_promote_off", op_task_promote(later, OP_QOS_USER_INTERACTIVE), 0);
    check("later_not_promoted", op_task_promoted_qos(later), -1);

    /* The raises made while on are undone while off. */
    op_queue_unpromote(waited, OP_QOS_USER_INTERACTIVE);
    check("waited_after_unpromote", op_queue_effective_qos(waited), OP_QOS_DEFAULT);
    op_queue_set_width(held, 1);
    check("held_wait", op_queue_wait(held, 10LL * 1000000000LL), 0);
    check("held_after_finish", op_queue_effective_qos(held), OP_QOS_DEFAULT);

    /* And on again. */
    op_runtime_set_qos_promotion(true);
    check("queue_promote_on_again", op_queue_promote(waited, OP_QOS_USER_INTERACTIVE), 0);
    check("waited_raised_again", op_queue_effective_qos(waited), OP_QOS_USER_INTERACTIVE);
    op_queue_unpromote(waited, OP_QOS_USER_INTERACTIVE);
    check("waited_at_end", op_queue_effective_qos(waited), OP_QOS_DEFAULT);

    op_task_release(task);
    op_task_release(later);
    op_queue_release(held);
    op_queue_release(waited);
    return failures == 0 ? 0 : 1;
}
