/*
 * fork_handler_order_probe.c — a child process for FaultTests and CExampleTests (linked against
 * the static archive): an application's own pthread_atfork handler, registered in its own
 * constructor before its first queue, uses the core in its prepare handler, and a fork() then
 * returns.
 *
 * Prepare handlers run in reverse order of registration. The core registers its handlers when
 * the library is loaded, so the application's, registered later, runs first, before the core
 * takes its locks. When the core registered its handlers at its first pool's creation instead,
 * the application's ran after them and deadlocked in op_runtime_start_workers (the pools' lock
 * held by the core's prepare handler): found by review. The parent then forks a child that runs
 * a task on a new queue. Prints key=value lines: fork_returned (1), child_exit (the child's
 * status, or -1 when it had to be killed). Exits 0 when both are fine.
 */
#include <operations_core.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WAIT_NS (20LL * 1000000000LL)

static atomic_int ran;

static void body(void *context) {
    (void)context;
    atomic_fetch_add(&ran, 1);
}

/* The application's prepare handler: makes sure the utility workers exist before a fork. */
static void application_prepare(void) { op_runtime_start_workers(OP_QOS_UTILITY); }

/* Registered in a constructor of the application's: in a static link its constructors run
 * before the archive members' of the same priority (the core's are priority 101: first). */
__attribute__((constructor)) static void register_application_handler(void) {
    pthread_atfork(application_prepare, NULL, NULL);
}

int main(void) {
    op_queue_t *queue = op_queue_create("before fork", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    op_queue_submit_f(queue, body, NULL);
    if (op_queue_wait(queue, WAIT_NS) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
        op_queue_t *child_queue = op_queue_create("in the child", OP_QOS_UTILITY, OP_WIDTH_DEFAULT);
        op_queue_submit_f(child_queue, body, NULL);
        _exit(op_queue_wait(child_queue, WAIT_NS) == 0 && atomic_load(&ran) == 2 ? 0 : 1);
    }
    printf("fork_returned=1\n");
    fflush(stdout);
    int status = 0;
    int child_exit = -1;
    for (int waited_ms = 0; waited_ms < 20000; waited_ms += 10) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            child_exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
        struct timespec pause = {0, 10 * 1000000L};
        nanosleep(&pause, NULL);
    }
    if (child_exit == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    printf("child_exit=%d\n", child_exit);
    op_queue_release(queue);
    return child_exit == 0 ? 0 : 1;
}
