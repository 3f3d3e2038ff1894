/*
 * release_block_probe.c — a child process for RegistryTests: a tracking queue's release_context
 * (a deinit, in Swift) blocks where the core cannot see — on a semaphore — until work of its own
 * class runs. The probe pins itself to one CPU before the runtime starts, so each class has one
 * worker: the work can only run if the blocked-worker monitor sees the releasing worker blocked
 * and starts a spare. The same wait in a task body is the control case.
 *
 * Prints in_body=ran|timed-out and in_release=ran|timed-out; exits 0 when both ran, 1 otherwise,
 * 2 when a call failed.
 */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include <operations_core.h>

#include <errno.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#define WAIT_NS (20LL * 1000000000LL)

static sem_t posted;
static op_queue_t *other;
static atomic_bool block_in_release;

static void poster(void *context) {
    (void)context;
    sem_post(&posted);
}

/* Submits work of the same class, then waits for it, invisibly (at most 5 s). */
static int block_on_same_class_work(void) {
    if (op_queue_submit_f(other, poster, NULL) != 0) return EINVAL;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    return sem_timedwait(&posted, &until) == 0 ? 0 : errno;
}

static int release_rc = -1;
static void release_context(void *context) {
    (void)context;
    if (atomic_exchange(&block_in_release, false)) release_rc = block_on_same_class_work();
}

static int body_rc = -1;
static void blocking_body(void *context) {
    (void)context;
    body_rc = block_on_same_class_work();
}

static void empty_body(void *context) { (void)context; }

int main(void) {
    cpu_set_t one;
    CPU_ZERO(&one);
    if (sched_getaffinity(0, sizeof one, &one) != 0) return 2;
    int first = -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &one)) {
            first = cpu;
            break;
        }
    }
    if (first < 0) return 2;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return 2;
    sem_init(&posted, 0, 0);
    other = op_queue_create("release-block-other", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    op_queue_t *control = op_queue_create("release-block-control", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    op_queue_t *tracked = op_queue_create("release-block-tracked", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    if (!other || !control || !tracked || op_queue_set_tracking(tracked, release_context) != 0) return 2;

    if (op_queue_submit_f(control, blocking_body, NULL) != 0) return 2;
    if (op_queue_wait(control, WAIT_NS) != 0 || op_queue_wait(other, WAIT_NS) != 0) return 2;

    atomic_store(&block_in_release, true);
    op_task_t *task = op_task_create(empty_body, NULL, NULL);
    if (!task || op_queue_submit(tracked, task) != 0) return 2;
    op_task_release(task);
    if (op_queue_wait(tracked, WAIT_NS) != 0 || op_queue_wait(other, WAIT_NS) != 0) return 2;

    printf("in_body=%s\nin_release=%s\n", body_rc == 0 ? "ran" : "timed-out",
           release_rc == 0 ? "ran" : "timed-out");
    return body_rc == 0 && release_rc == 0 ? 0 : 1;
}
