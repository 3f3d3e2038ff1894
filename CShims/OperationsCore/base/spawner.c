/*
 * spawner.c — starts the core's threads at the nice floor when the caller sits above it.
 *
 * A new thread inherits its creator's nice value, and without CAP_SYS_NICE (or an RLIMIT_NICE
 * that allows it) a thread can raise its nice value but never lower it again. A pool made from
 * a background body (nice 10) would then run its userInteractive workers at 10 for good, and a
 * spare started by the monitor would inherit whatever the monitor runs at. So, only in a process
 * that may not lower nice values freely, one thread made when the runtime starts (nice.c, on the
 * thread that starts it, at the floor) creates the threads whose creator sits above the nice
 * they need. Thread creation is rare (pools, spares), never on the task path: a mutex and a
 * condition variable are enough.
 *
 * The spawner itself is made with plain pthread_create, not op_thread_create, so the fault
 * injection's thread counts (OPERATIONS_FAULT_THREAD_CREATE) stay those of the workers. If it
 * cannot start, threads are created directly (at the creator's nice, clamped as before).
 *
 * Fork: the child has no spawner; the pool's child handler calls op_spawner_forget_after_fork,
 * and the next request that needs one starts a new one from the requesting thread.
 */
#include "base.h"

#include <errno.h>
#include <pthread.h>

typedef struct op_spawn_request {
    pthread_t *thread;
    const pthread_attr_t *attr;
    void *(*start)(void *);
    void *arg;
    int rc;
    bool done;
    struct op_spawn_request *next;
} op_spawn_request;

static pthread_mutex_t op_spawner_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t op_spawner_wake = PTHREAD_COND_INITIALIZER;  /* requests pending */
static pthread_cond_t op_spawner_done = PTHREAD_COND_INITIALIZER;  /* a request was served */
static op_spawn_request *op_spawner_pending; /* under the lock */
static bool op_spawner_running;              /* under the lock */
static bool op_spawner_failed;               /* under the lock: could not start, create directly */

static void *op_spawner_main(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "op-spawner");
    op_time_slice_reset_current_thread(); /* a short-slice worker may have started it */
    pthread_mutex_lock(&op_spawner_lock);
    for (;;) {
        while (!op_spawner_pending) pthread_cond_wait(&op_spawner_wake, &op_spawner_lock);
        op_spawn_request *request = op_spawner_pending;
        op_spawner_pending = request->next;
        pthread_mutex_unlock(&op_spawner_lock);
        int rc = op_thread_create(request->thread, request->attr, request->start, request->arg);
        pthread_mutex_lock(&op_spawner_lock);
        request->rc = rc;
        request->done = true;
        pthread_cond_broadcast(&op_spawner_done);
    }
    return NULL;
}

/* Under the lock. */
static void op_spawner_start_locked(void) {
    if (op_spawner_running || op_spawner_failed) return;
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attr, op_spawner_main, NULL) == 0) {
        op_spawner_running = true;
    } else {
        op_spawner_failed = true;
    }
    pthread_attr_destroy(&attr);
}

void op_spawner_start(void) {
    pthread_mutex_lock(&op_spawner_lock);
    op_spawner_start_locked();
    pthread_mutex_unlock(&op_spawner_lock);
}

int op_thread_create_at(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                        void *arg, int nice) {
    op_nice_init();
    int current = op_current_thread_nice();
    /* At or below the nice it needs, or allowed to lower to it: the thread sets it itself. */
    if (current <= nice || op_nice_can_hold(nice)) {
        return op_thread_create(thread, attr, start, arg);
    }
    pthread_mutex_lock(&op_spawner_lock);
    op_spawner_start_locked();
    if (!op_spawner_running) {
        pthread_mutex_unlock(&op_spawner_lock);
        return op_thread_create(thread, attr, start, arg);
    }
    op_spawn_request request = {
        .thread = thread, .attr = attr, .start = start, .arg = arg, .rc = 0, .done = false,
        .next = op_spawner_pending};
    op_spawner_pending = &request;
    pthread_cond_signal(&op_spawner_wake);
    /* Bounded by one pthread_create on the spawner. */
    while (!request.done) pthread_cond_wait(&op_spawner_done, &op_spawner_lock);
    pthread_mutex_unlock(&op_spawner_lock);
    return request.rc;
}

void op_spawner_forget_after_fork(void) {
    /* Only this thread exists: re-initialise what a thread of the parent may have held. */
    pthread_mutex_init(&op_spawner_lock, NULL);
    pthread_cond_init(&op_spawner_wake, NULL);
    pthread_cond_init(&op_spawner_done, NULL);
    op_spawner_pending = NULL;
    op_spawner_running = false;
    op_spawner_failed = false;
}
