/*
 * relent_probe.c — a child process for StrandedWorkTests: the slot the blocked-worker monitor
 * lends for a visible wait (pool/monitor_view.c, RELENT) is taken back exactly once, also when the body
 * then blocks where the core cannot see, or waits visibly a second time.
 *
 * Task A, on a queue of explicit width 1, waits visibly (op_task_wait) for a manual-completion
 * gate; the queue's width becomes the default; a default-width queue of the utility class kept
 * at its width with work waiting keeps the monitor looking at every pool, so it lends A's slot.
 * The gate completes; A sleeps (an invisible block: the monitor counts it blocked), then waits
 * visibly for a second gate while the test checks that a task submitted to A's queue runs.
 * Found by review: the slot was lent twice and taken back once, the slot count went below zero
 * and the queue never ran a task again. Then the queue must run at most its width of bodies at
 * once and drain. Prints key=value lines; exits 0 when every check holds, 1 otherwise.
 * (The sleeps give the monitor its ticks: what is checked is the end state, not the timing.)
 */
#include <operations_core.h>

#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define WAIT_NS (10LL * 1000000000LL)

static op_task_t *gate, *second_gate;
static atomic_int a_started, a_second_wait, a_done, stop, running, most, extra_ran;

static void spin_body(void *context) {
    (void)context;
    while (!atomic_load(&stop)) {
    }
}

static void a_body(void *context) {
    (void)context;
    atomic_store(&a_started, 1);
    op_task_wait(gate, WAIT_NS);        /* visible, begun at width 1: nothing lent */
    usleep(300000);                     /* invisible: the monitor counts it blocked */
    atomic_store(&a_second_wait, 1);
    op_task_wait(second_gate, WAIT_NS); /* visible again */
    atomic_store(&a_done, 1);
}

static void extra_body(void *context) {
    (void)context;
    atomic_store(&extra_ran, 1);
}

static void concurrent_body(void *context) {
    (void)context;
    int now = atomic_fetch_add(&running, 1) + 1;
    int seen = atomic_load(&most);
    while (now > seen && !atomic_compare_exchange_weak(&most, &seen, now)) {
    }
    struct timespec begin, clock; /* computes 50 ms (a body asleep would rightly get its slot lent) */
    clock_gettime(CLOCK_MONOTONIC, &begin);
    do {
        clock_gettime(CLOCK_MONOTONIC, &clock);
    } while ((clock.tv_sec - begin.tv_sec) * 1000000000LL + (clock.tv_nsec - begin.tv_nsec) < 50000000LL);
    atomic_fetch_sub(&running, 1);
}

int main(void) {
    op_runtime_start_workers(OP_QOS_DEFAULT);
    op_topology_t topology;
    op_runtime_topology(&topology);
    op_task_attr_t attr;
    op_task_attr_init(&attr);
    attr.flags = OP_TASK_MANUAL_COMPLETION;
    gate = op_task_create(spin_body, NULL, &attr);
    second_gate = op_task_create(spin_body, NULL, &attr);
    op_queue_t *queue = op_queue_create("relent", OP_QOS_DEFAULT, 1);
    op_queue_t *busy = op_queue_create("keeps the monitor looking", OP_QOS_UTILITY, OP_WIDTH_DEFAULT);
    if (!gate || !second_gate || !queue || !busy) return 3;
    op_queue_submit_f(queue, a_body, NULL);
    for (int i = 0; i < 10000 && !atomic_load(&a_started); i++) usleep(1000);
    for (int i = 0; i < topology.default_width + 1; i++) op_queue_submit_f(busy, spin_body, NULL);
    usleep(50000);
    op_queue_set_width(queue, OP_WIDTH_DEFAULT);
    usleep(100000); /* the monitor lends the visible wait's slot */
    op_task_complete(gate);
    for (int i = 0; i < 10000 && !atomic_load(&a_second_wait); i++) usleep(1000);
    usleep(50000);
    op_queue_submit_f(queue, extra_body, NULL);
    for (int i = 0; i < 5000 && !atomic_load(&extra_ran); i++) usleep(1000);
    int extra = atomic_load(&extra_ran);
    op_task_complete(second_gate);
    atomic_store(&stop, 1);
    int busy_rc = op_queue_wait(busy, WAIT_NS);
    int first_rc = op_queue_wait(queue, WAIT_NS);
    for (int i = 0; i < topology.default_width + 2; i++) op_queue_submit_f(queue, concurrent_body, NULL);
    int rc = op_queue_wait(queue, WAIT_NS);
    char text[1024];
    op_queue_describe(queue, text, sizeof text);
    printf("extra_ran=%d\nbusy_wait=%d\nfirst_wait=%d\nwait=%d\nmost=%d\nwidth=%d\nqueue=%s\n", extra,
           busy_rc, first_rc, rc, atomic_load(&most), topology.default_width, text);
    return extra && busy_rc == 0 && first_rc == 0 && rc == 0 && atomic_load(&most) <= topology.default_width ? 0 : 1;
}
