/*
 * release_fork_probe.c — a child process for RegistryTests (issue 33, item 8): fork() while a
 * tracking queue's finished contexts wait for release on a worker. The queue's release_context
 * blocks until the parent lets it go, so when the parent forks, the contexts of its finished
 * tasks are held by a worker thread that does not exist in the child. In the child a timed
 * op_queue_wait on the queue must return ETIMEDOUT within its timeout (before, it spun on the
 * count of contexts being released, ignoring the timeout, for ever). The parent then lets the
 * releases go and its own wait returns 0 with every context released.
 *
 * Prints child_rc= (the child's op_queue_wait result, ETIMEDOUT expected), child_ms= (how long
 * it took, timeout 50 ms), child_exit=, parent_rc=, released=, submitted=; exit 0 once printed,
 * 2 when a call failed.
 */
#include <operations_core.h>

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SUBMITTED 20
#define WAIT_NS (20LL * 1000000000LL)

static atomic_int ran;
static atomic_int released;
static atomic_int releasing;       /* a release_context has started */
static atomic_bool let_go;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void body(void *context) {
    (void)context;
    atomic_fetch_add(&ran, 1);
}

/* Blocks (at most 20 s) until the parent lets it go. */
static void release_context(void *context) {
    (void)context;
    atomic_fetch_add(&releasing, 1);
    long long start = now_ns();
    while (!atomic_load(&let_go) && now_ns() - start < WAIT_NS) usleep(200);
    atomic_fetch_add(&released, 1);
}

int main(void) {
    op_queue_t *queue = op_queue_create("release-fork-probe", OP_QOS_DEFAULT, 1);
    if (!queue || op_queue_set_tracking(queue, release_context) != 0) return 2;
    for (int i = 0; i < SUBMITTED; i++) {
        op_task_t *task = op_task_create(body, NULL, NULL);
        if (!task || op_queue_submit(queue, task) != 0) return 2;
        op_task_release(task);
    }
    /* Every task ran and a worker is inside a release, holding the rest. */
    long long start = now_ns();
    while ((atomic_load(&ran) < SUBMITTED || atomic_load(&releasing) == 0) && now_ns() - start < WAIT_NS) {
        usleep(200);
    }
    if (atomic_load(&releasing) == 0) return 2;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        long long began = now_ns();
        int rc = op_queue_wait(queue, 50LL * 1000000LL);
        long long ms = (now_ns() - began) / 1000000LL;
        printf("child_rc=%d\nchild_ms=%lld\n", rc, ms);
        fflush(stdout);
        _exit(0);
    }
    if (pid < 0) return 2;
    int status = 0;
    int child_exit = -1;
    long long deadline = now_ns() + 10LL * 1000000000LL;
    for (;;) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
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
    atomic_store(&let_go, true);
    int parent_rc = op_queue_wait(queue, WAIT_NS);
    printf("child_exit=%d\nparent_rc=%d\nreleased=%d\nsubmitted=%d\n", child_exit, parent_rc,
           atomic_load(&released), SUBMITTED);
    op_queue_release(queue);
    return 0;
}
