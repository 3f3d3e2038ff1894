/*
 * spare_reuse_probe.c — a child process for WorkerPoolTests: twenty bodies, one after another,
 * each block in op_task_wait (a spare stands in for their worker meanwhile). Between two waits,
 * a burst keeps every pinned worker of the class busy, so a token push wakes the parked spare,
 * which is no longer needed, and each round waits until no spare is counted any more (a parked
 * spare retires within 0.2 s). A retired spare lingers parked, so the next wait reuses its
 * thread: the bodies see at most a few distinct spare threads of their class (before, the
 * retired spare ended and every wait created one: twenty). Prints distinct= and exits 0 when it
 * is between 1 and 3, 1 otherwise; 2 or 3 when a wait timed out or a call failed.
 */
#include <operations_core.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 20
#define MAX_TIDS 256

static int tids[MAX_TIDS];
static int tid_count;
static op_queue_t *other;


/* Adds the thread ids of the default class's spares (named op-dflt-s<index>) to `tids`. */
static void note_spares(void) {
    DIR *dir = opendir("/proc/self/task");
    if (!dir) return;
    for (struct dirent *entry; (entry = readdir(dir));) {
        if (entry->d_name[0] == '.') continue;
        char path[300], name[32] = {0};
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", entry->d_name);
        FILE *file = fopen(path, "r");
        if (!file) continue;
        if (fgets(name, sizeof name, file) && strncmp(name, "op-dflt-s", 9) == 0) {
            int tid = atoi(entry->d_name), known = 0;
            for (int i = 0; i < tid_count; i++) known |= tids[i] == tid;
            if (!known && tid_count < MAX_TIDS) tids[tid_count++] = tid;
        }
        fclose(file);
    }
    closedir(dir);
}

/* Runs while a waiting body sleeps in op_task_wait, its spare standing in: counts the spare. */
static void short_body(void *context) {
    (void)context;
    usleep(2000);
    note_spares();
}

/* The burst's bodies: keep a pinned worker busy for 2 ms. */
static void short_body_quiet(void *context) {
    (void)context;
    usleep(2000);
}

static void waiting_body(void *context) {
    (void)context;
    op_task_t *task = op_task_create(short_body, NULL, NULL);
    if (!task) exit(3);
    op_queue_submit(other, task);
    if (op_task_wait(task, 10LL * 1000000000LL) != 0) exit(2); /* a spare stands in meanwhile */
    op_task_release(task);
}

int main(void) {
    op_queue_t *queue = op_queue_create("waiters", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    other = op_queue_create("waited for", OP_QOS_UTILITY, OP_WIDTH_DEFAULT);
    if (!queue || !other) return 3;
    /* One serial queue per pinned worker of the class, and one more: their tokens keep every
     * pinned worker busy, and the last push finds none parked and wakes the spare. */
    op_runtime_start_workers(OP_QOS_DEFAULT);
    int burst = op_runtime_worker_count(OP_QOS_DEFAULT) + 1;
    op_queue_t **busy = calloc((size_t)burst, sizeof *busy);
    if (!busy) return 3;
    for (int i = 0; i < burst; i++) {
        if (!(busy[i] = op_queue_create("burst", OP_QOS_DEFAULT, 1))) return 3;
    }
    for (int round = 0; round < ROUNDS; round++) {
        op_task_t *task = op_task_create(waiting_body, NULL, NULL);
        if (!task) return 3;
        op_queue_submit(queue, task);
        if (op_task_wait(task, 10LL * 1000000000LL) != 0) return 2;
        op_task_release(task);
        for (int i = 0; i < burst; i++) op_queue_submit_f(busy[i], short_body_quiet, NULL);
        for (int i = 0; i < burst; i++) {
            if (op_queue_wait(busy[i], 10LL * 1000000000LL) != 0) return 2;
        }
        /* Until the spare retired (no blocked thread needs it): within 0.2 s; 5 s at most. */
        for (int polls = 0; op_runtime_spare_workers(OP_QOS_DEFAULT, NULL) > 0; polls++) {
            if (polls == 5000) return 2;
            usleep(1000);
        }
    }
    for (int i = 0; i < burst; i++) op_queue_release(busy[i]);
    free(busy);
    printf("distinct=%d\n", tid_count);
    op_queue_release(queue);
    op_queue_release(other);
    return tid_count >= 1 && tid_count <= 3 ? 0 : 1;
}
