/*
 * release_help_probe.c — a child process for RegistryTests: a waiter of a tracking queue is not
 * held up by a saturated background class. Spinning bodies hold every background worker (the
 * class of the helper that releases batches of finished contexts, context_release.c). A serial
 * tracking queue runs SUBMITTED empty tasks, then one that lists the queue; its drainer hands
 * batches of their contexts to the helper, which cannot run. op_queue_wait on the tracking queue
 * must still return, with every finished context released, while the spinners still hold their
 * workers: the wait raises the helper to its own class, the queue's, or utility. Before (issue
 * 26), with the maintenance queue, the waiter spun until the background class came back: here,
 * until the spinners gave up after SPIN_SECONDS.
 *
 * The mode (argv[1]): "default" as above; "promotion-off" with QoS promotion switched off (the
 * raise is the runtime's own: a review found that it was made only with promotion on);
 * "background-queue": the queue is set to background class once its tasks ran, and the waiter
 * is an ordinary thread (background too, as the core counts it): the raise goes to utility at
 * least (review: it raised nothing there).
 *
 * Prints wait_rc=, released=, submitted=, spinners_running= (1: the wait returned while every
 * background worker was still held), wait_ms=; exit 0 once printed, 2 when a call failed or the
 * spinners did not all start.
 */
#include <operations_core.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define SUBMITTED 1500 /* under 2048: no drainer compacts itself (drain.c) */
#define SPIN_SECONDS 20

static atomic_int spinners_started;
static atomic_int spinners_ended;
static atomic_bool stop_spinning;
static atomic_int released;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void spinner(void *context) {
    (void)context;
    atomic_fetch_add(&spinners_started, 1);
    double start = now_s();
    while (!atomic_load_explicit(&stop_spinning, memory_order_relaxed) && now_s() - start < SPIN_SECONDS) {
    }
    atomic_fetch_add(&spinners_ended, 1);
}

static void empty_body(void *context) { (void)context; }

static void count_task(op_task_t *task, void *arg) {
    (void)task;
    ++*(int *)arg;
}

static op_queue_t *tracked;
static atomic_int listed = -1;

/* Lists its own queue: the listing compacts what finished before it. */
static void lister_body(void *context) {
    (void)context;
    int count = 0;
    op_queue_for_each(tracked, count_task, &count);
    atomic_store(&listed, count);
}

static void release_context(void *context) {
    (void)context;
    atomic_fetch_add_explicit(&released, 1, memory_order_relaxed);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "default";
    bool promotion_off = strcmp(mode, "promotion-off") == 0;
    bool background_queue = strcmp(mode, "background-queue") == 0;
    if (!promotion_off && !background_queue && strcmp(mode, "default") != 0) return 2;
    if (promotion_off) op_runtime_set_qos_promotion(false);
    op_runtime_start_workers(OP_QOS_BACKGROUND);
    int workers = op_runtime_worker_count(OP_QOS_BACKGROUND);
    op_queue_t *background = op_queue_create("spinners", OP_QOS_BACKGROUND, workers);
    if (!background || workers <= 0) return 2;
    for (int i = 0; i < workers; i++) {
        if (op_queue_submit_f(background, spinner, NULL) != 0) return 2;
    }
    double start = now_s();
    while (atomic_load(&spinners_started) < workers) {
        if (now_s() - start > 10) return 2;
    }
    op_queue_t *queue = tracked = op_queue_create("tracked", OP_QOS_DEFAULT, 1);
    if (!queue || op_queue_set_tracking(queue, release_context) != 0) return 2;
    static int contexts[SUBMITTED + 1];
    for (int i = 0; i < SUBMITTED; i++) {
        if (op_queue_submit_f(queue, empty_body, &contexts[i]) != 0) return 2;
    }
    if (op_queue_submit_f(queue, lister_body, &contexts[SUBMITTED]) != 0) return 2;
    if (background_queue) {
        /* Its tasks ran (their batches wait for the helper): the queue becomes background. */
        double ran = now_s();
        while (atomic_load(&listed) < 0) {
            if (now_s() - ran > 10) return 2;
        }
        if (op_queue_set_qos(queue, OP_QOS_BACKGROUND) != 0) return 2;
    }
    double wait_start = now_s();
    int rc = op_queue_wait(queue, 60LL * 1000000000LL);
    double waited = now_s() - wait_start;
    int running = atomic_load(&spinners_ended) == 0;
    printf("wait_rc=%d\nreleased=%d\nsubmitted=%d\nlisted=%d\nspinners_running=%d\nwait_ms=%.1f\n",
           rc, atomic_load(&released), SUBMITTED + 1, atomic_load(&listed), running, waited * 1e3);
    fflush(stdout);
    atomic_store(&stop_spinning, true);
    op_queue_wait(background, 30LL * 1000000000LL);
    op_queue_release(queue);
    op_queue_release(background);
    return 0;
}
