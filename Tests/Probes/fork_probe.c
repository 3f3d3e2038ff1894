/*
 * fork_probe.c — a child process for FaultTests: fork() after the runtime ran tasks.
 *
 * The parent runs tasks on a queue of every class (their pools, workers and the monitor exist),
 * leaves a second queue idle, and forks. The child submits to a new queue and to the idle parent
 * queue and waits for both (bounded); it exits 0 when both ran, 1 otherwise. The parent waits for
 * the child (bounded, killing it after 20 s), checks that its own runtime still works, and prints
 * key=value lines: child_exit (the child's status, or -1 when it had to be killed), parent_ok.
 * Exits 0 when both are fine. With argument "from-body" the fork happens inside a task body on a
 * worker (the child then must not return from the body: it does its work and _exits).
 */
#include <operations_core.h>

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WAIT_NS (20LL * 1000000000LL)

static atomic_int ran;
static op_queue_t *idle_queue;

static void body(void *context) {
    (void)context;
    atomic_fetch_add(&ran, 1);
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* In the child: work on a new queue and on the idle parent queue. */
static int child_main(void) {
    atomic_store(&ran, 0);
    op_queue_t *fresh = op_queue_create("fork-probe-child", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    if (!fresh) return 3;
    for (int i = 0; i < 100; i++) {
        if (op_queue_submit_f(fresh, body, NULL) != 0) return 3;
        if (op_queue_submit_f(idle_queue, body, NULL) != 0) return 3;
    }
    if (op_queue_wait(fresh, WAIT_NS) != 0 || op_queue_wait(idle_queue, WAIT_NS) != 0) {
        fprintf(stderr, "child: work did not finish (ran %d of 200)\n", atomic_load(&ran));
        return 1;
    }
    /* A second class, never used in the child before. */
    op_queue_t *utility = op_queue_create("fork-probe-utility", OP_QOS_UTILITY, 1);
    if (!utility || op_queue_submit_f(utility, body, NULL) != 0) return 3;
    if (op_queue_wait(utility, WAIT_NS) != 0) return 1;
    return atomic_load(&ran) == 201 ? 0 : 1;
}

static pid_t forked = -1;

static void forking_body(void *context) {
    (void)context;
    pid_t pid = fork();
    if (pid == 0) {
        fflush(stdout);
        _exit(child_main()); /* must not return into the parent's worker loop */
    }
    forked = pid;
}

int main(int argc, char **argv) {
    bool from_body = argc == 2 && strcmp(argv[1], "from-body") == 0;
    if (argc > 2 || (argc == 2 && !from_body)) {
        fprintf(stderr, "usage: %s [from-body]\n", argv[0]);
        return 2;
    }
    /* The runtime runs: every class's pool has workers, the monitor runs. */
    for (int q = 0; q < OP_QOS_COUNT; q++) {
        op_queue_t *queue = op_queue_create("fork-probe-parent", (op_qos_t)q, OP_WIDTH_DEFAULT);
        if (!queue) return 3;
        for (int i = 0; i < 50; i++) op_queue_submit_f(queue, body, NULL);
        if (op_queue_wait(queue, WAIT_NS) != 0) return 3;
        op_queue_release(queue);
    }
    idle_queue = op_queue_create("fork-probe-idle", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    if (!idle_queue) return 3;
    op_queue_submit_f(idle_queue, body, NULL);
    if (op_queue_wait(idle_queue, WAIT_NS) != 0) return 3;
    fflush(stdout);

    pid_t pid;
    if (from_body) {
        op_queue_t *serial = op_queue_create("fork-probe-forker", OP_QOS_DEFAULT, 1);
        op_queue_submit_f(serial, forking_body, NULL);
        if (op_queue_wait(serial, WAIT_NS) != 0) return 3;
        pid = forked;
    } else {
        pid = fork();
        if (pid == 0) return child_main();
    }
    if (pid < 0) {
        perror("fork");
        return 3;
    }
    int status = 0;
    int child_exit = -1;
    long long deadline = now_ns() + WAIT_NS;
    for (;;) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) {
            child_exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
        if (now_ns() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        usleep(1000);
    }
    /* The parent's runtime is unaffected. */
    int before = atomic_load(&ran);
    for (int i = 0; i < 100; i++) op_queue_submit_f(idle_queue, body, NULL);
    bool parent_ok = op_queue_wait(idle_queue, WAIT_NS) == 0 && atomic_load(&ran) == before + 100;
    printf("child_exit=%d\nparent_ok=%d\n", child_exit, parent_ok ? 1 : 0);
    return child_exit == 0 && parent_ok ? 0 : 1;
}
