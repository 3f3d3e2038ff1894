/*
 * task_cache_exit_probe.c — a child process for TaskCacheTests: task memory that a thread frees
 * while it exits, after the task cache's own thread-exit destructor ran (as when Foundation
 * frees a Thread's closure and the operations it held), must not stay in that thread's
 * thread-local list, which nothing visits again.
 *
 * A thread creates and releases one task (its cache registers its destructor), then arms a
 * thread-local key of its own whose destructor re-arms once, so that its second call comes in a
 * later destructor round than the cache's. There it creates and releases `count` tasks and
 * records their addresses. After joining the thread, the main thread creates tasks; as its own
 * cache is empty it takes what the global stack holds, so every block the exiting thread gave
 * back shows up among them. Prints "freed=N" and "returned=M"; exits 0 when M == N.
 */
#include <operations_core.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { count = 100, probes = 4 * count };

static void *freed[count];
static int freed_count;
static pthread_key_t late_key;

static void body(void *context) { (void)context; }

static void late_destructor(void *value) {
    if ((int)(long)value == 1) { /* first round: come back after the cache's destructor ran */
        pthread_setspecific(late_key, (void *)2L);
        return;
    }
    for (int i = 0; i < count; i++) {
        op_task_t *task = op_task_create(body, NULL, NULL);
        if (!task) exit(3);
        freed[freed_count++] = task;
        op_task_release(task);
    }
}

static void *exiting_thread(void *unused) {
    (void)unused;
    op_task_release(op_task_create(body, NULL, NULL)); /* the cache's destructor is armed */
    pthread_setspecific(late_key, (void *)1L);
    return NULL;
}

int main(void) {
    if (pthread_key_create(&late_key, late_destructor) != 0) return 3;
    pthread_t thread;
    if (pthread_create(&thread, NULL, exiting_thread, NULL) != 0) return 3;
    pthread_join(thread, NULL);

    op_task_t *taken[probes];
    int returned = 0;
    for (int i = 0; i < probes; i++) {
        taken[i] = op_task_create(body, NULL, NULL);
        if (!taken[i]) return 3;
        for (int j = 0; j < freed_count; j++) {
            if ((void *)taken[i] == freed[j]) { returned++; break; }
        }
    }
    for (int i = 0; i < probes; i++) op_task_release(taken[i]);
    printf("freed=%d\nreturned=%d\n", freed_count, returned);
    return returned == freed_count ? 0 : 1;
}
