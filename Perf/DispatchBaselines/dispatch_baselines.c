/* dispatch_baselines.c — libdispatch workloads for the perf harness (see the header). */
#include "dispatch_baselines.h"
#include "work_bodies.h"

/* libdispatch's C entry points, declared here because the toolchain's <dispatch/dispatch.h>
 * is not on SwiftPM's C include path (and -I would need unsafeFlags). These are libdispatch's
 * stable C ABI: objects are pointers, DISPATCH_TIME_FOREVER is ~0, a NULL attribute makes a
 * serial queue, &_dispatch_queue_attr_concurrent a concurrent one. libdispatch.so comes with
 * the Swift toolchain and swiftc links it. */
typedef void *dispatch_queue_t;
typedef void *dispatch_group_t;
typedef void (*dispatch_function_t)(void *);
struct dispatch_queue_attr_s;
extern struct dispatch_queue_attr_s _dispatch_queue_attr_concurrent;
#define DISPATCH_TIME_FOREVER (~(uint64_t)0)
#define DISPATCH_QUEUE_SERIAL NULL
#define DISPATCH_QUEUE_CONCURRENT ((void *)&_dispatch_queue_attr_concurrent)
extern dispatch_queue_t dispatch_get_global_queue(long identifier, unsigned long flags);
extern dispatch_queue_t dispatch_queue_create(const char *label, void *attr);
extern dispatch_group_t dispatch_group_create(void);
extern void dispatch_group_async_f(dispatch_group_t, dispatch_queue_t, void *, dispatch_function_t);
extern void dispatch_group_notify_f(dispatch_group_t, dispatch_queue_t, void *, dispatch_function_t);
extern void dispatch_async_f(dispatch_queue_t, void *, dispatch_function_t);
extern void dispatch_group_enter(dispatch_group_t);
extern void dispatch_group_leave(dispatch_group_t);
extern long dispatch_group_wait(dispatch_group_t, uint64_t timeout);
extern void dispatch_suspend(void *object);
extern void dispatch_resume(void *object);
extern void dispatch_release(void *object);

#include <stdlib.h>

/* n items fn(context) onto `queue` in one group, then a group wait; returns the elapsed ns. */
static uint64_t run_group(dispatch_queue_t queue, long n, dispatch_function_t fn, void *context) {
    dispatch_group_t group = dispatch_group_create();
    uint64_t start = perf_now_ns();
    for (long i = 0; i < n; i++) dispatch_group_async_f(group, queue, context, fn);
    dispatch_group_wait(group, DISPATCH_TIME_FOREVER);
    uint64_t elapsed = perf_now_ns() - start;
    dispatch_release(group);
    return elapsed;
}

uint64_t dispatch_baseline_independent(long n, int64_t *counter) {
    return run_group(dispatch_get_global_queue(DISPATCH_BASELINE_QOS_DEFAULT, 0), n,
                     baseline_count_one, counter);
}

uint64_t dispatch_baseline_serial(long n, int64_t *counter) {
    dispatch_queue_t queue = dispatch_queue_create("perf.serial", DISPATCH_QUEUE_SERIAL);
    uint64_t elapsed = run_group(queue, n, baseline_count_one, counter);
    dispatch_release(queue);
    return elapsed;
}

uint64_t dispatch_baseline_independent_f(long n, void (*fn)(void *), void *context) {
    return run_group(dispatch_get_global_queue(DISPATCH_BASELINE_QOS_DEFAULT, 0), n, fn, context);
}

/* S3: one level of the tree; an item of level d adds `fan` items of level d + 1. */
typedef struct spawn_level {
    dispatch_queue_t queue;
    dispatch_group_t group;
    int64_t *counter;
    int fan;
    struct spawn_level *next; /* NULL at the leaves */
} spawn_level;

static void spawn_step(void *context) {
    spawn_level *level = context;
    baseline_count_one(level->counter);
    if (!level->next) return;
    for (int i = 0; i < level->fan; i++) {
        dispatch_group_async_f(level->group, level->queue, level->next, spawn_step);
    }
}

uint64_t dispatch_baseline_spawn(int fan, int depth, int64_t *counter) {
    spawn_level *levels = calloc((size_t)depth + 1, sizeof *levels);
    dispatch_group_t group = dispatch_group_create();
    for (int d = 0; d <= depth; d++) {
        levels[d] = (spawn_level){dispatch_get_global_queue(DISPATCH_BASELINE_QOS_DEFAULT, 0), group,
                                  counter, fan, d < depth ? &levels[d + 1] : NULL};
    }
    uint64_t start = perf_now_ns();
    dispatch_group_async_f(group, levels[0].queue, &levels[0], spawn_step);
    dispatch_group_wait(group, DISPATCH_TIME_FOREVER);
    uint64_t elapsed = perf_now_ns() - start;
    dispatch_release(group);
    free(levels);
    return elapsed;
}

dispatch_baseline_object dispatch_baseline_group_create(void) { return dispatch_group_create(); }

void dispatch_baseline_group_add(dispatch_baseline_object group, long n, int64_t *counter) {
    dispatch_queue_t queue = dispatch_get_global_queue(DISPATCH_BASELINE_QOS_DEFAULT, 0);
    for (long i = 0; i < n; i++) dispatch_group_async_f(group, queue, counter, baseline_count_one);
}

void dispatch_baseline_group_wait(dispatch_baseline_object group) {
    dispatch_group_wait(group, DISPATCH_TIME_FOREVER);
}

typedef struct graph_run graph_run;

typedef struct graph_item {
    dispatch_group_t predecessors; /* NULL for an item without predecessors */
    graph_run *run;
    long index;
} graph_item;

struct graph_run {
    graph_item *items;
    const int32_t *successor_start;
    const int32_t *successors;
    dispatch_group_t all_done;
    int64_t *counter;
};

static void graph_step(void *context) {
    graph_item *item = context;
    graph_run *run = item->run;
    baseline_count_one(run->counter);
    for (int32_t s = run->successor_start[item->index]; s < run->successor_start[item->index + 1]; s++) {
        dispatch_group_leave(run->items[run->successors[s]].predecessors);
    }
    dispatch_group_leave(run->all_done);
}

uint64_t dispatch_baseline_graph(long n, const int32_t *successor_start, const int32_t *successors,
                                 const int32_t *predecessor_count, int64_t *counter) {
    dispatch_queue_t queue = dispatch_get_global_queue(DISPATCH_BASELINE_QOS_DEFAULT, 0);
    graph_run run = {calloc((size_t)n, sizeof(graph_item)), successor_start, successors, NULL, counter};
    uint64_t start = perf_now_ns();
    run.all_done = dispatch_group_create();
    for (long i = 0; i < n; i++) {
        graph_item *item = &run.items[i];
        item->run = &run;
        item->index = i;
        dispatch_group_enter(run.all_done);
        if (predecessor_count[i] > 0) {
            item->predecessors = dispatch_group_create();
            for (int32_t p = 0; p < predecessor_count[i]; p++) dispatch_group_enter(item->predecessors);
            dispatch_group_notify_f(item->predecessors, queue, item, graph_step);
        }
    }
    for (long i = 0; i < n; i++) {
        if (predecessor_count[i] == 0) dispatch_async_f(queue, &run.items[i], graph_step);
    }
    dispatch_group_wait(run.all_done, DISPATCH_TIME_FOREVER);
    uint64_t elapsed = perf_now_ns() - start;
    for (long i = 0; i < n; i++) {
        if (run.items[i].predecessors) dispatch_release(run.items[i].predecessors);
    }
    dispatch_release(run.all_done);
    free(run.items);
    return elapsed;
}

dispatch_baseline_object dispatch_baseline_global_queue(int qos_class) {
    return dispatch_get_global_queue(qos_class, 0);
}

dispatch_baseline_object dispatch_baseline_concurrent_queue(const char *label) {
    return dispatch_queue_create(label, DISPATCH_QUEUE_CONCURRENT);
}

void dispatch_baseline_release(dispatch_baseline_object object) { dispatch_release(object); }

void dispatch_baseline_async(dispatch_baseline_object queue, void *context, void (*fn)(void *)) {
    dispatch_async_f(queue, context, fn);
}

struct dispatch_baseline_suspended {
    dispatch_queue_t queue;
    dispatch_group_t group;
};

dispatch_baseline_suspended *dispatch_baseline_suspended_create(void) {
    dispatch_baseline_suspended *state = malloc(sizeof *state);
    state->queue = dispatch_queue_create("perf.suspended", DISPATCH_QUEUE_CONCURRENT);
    state->group = dispatch_group_create();
    dispatch_suspend(state->queue);
    return state;
}

void dispatch_baseline_suspended_fill(dispatch_baseline_suspended *state, long n, int64_t *counter) {
    for (long i = 0; i < n; i++) dispatch_group_async_f(state->group, state->queue, counter, baseline_count_one);
}

void dispatch_baseline_suspended_drain(dispatch_baseline_suspended *state) {
    dispatch_resume(state->queue);
    dispatch_group_wait(state->group, DISPATCH_TIME_FOREVER);
    dispatch_release(state->group);
    dispatch_release(state->queue);
    free(state);
}

/* W12: the waiter of the wait case, on the userInteractive global queue. */
typedef struct inversion_wait {
    dispatch_group_t group;
    probe_slot *waiter;
} inversion_wait;

static void inversion_waiter(void *context) {
    inversion_wait *wait = context;
    dispatch_group_wait(wait->group, DISPATCH_TIME_FOREVER);
    dispatch_release(wait->group);
    probe_slot *waiter = wait->waiter;
    free(wait);
    perf_probe_body(waiter);
}

void dispatch_baseline_inversion(bool depends, probe_slot *target, probe_slot *waiter) {
    dispatch_group_t group = dispatch_group_create();
    probe_mark_submitted(waiter);
    dispatch_group_async_f(group, dispatch_get_global_queue(DISPATCH_BASELINE_QOS_BACKGROUND, 0), target,
                           perf_inversion_target_body);
    dispatch_queue_t interactive = dispatch_get_global_queue(DISPATCH_BASELINE_QOS_USER_INTERACTIVE, 0);
    if (depends) {
        /* dispatch's form of a dependency: the notify block runs once the group is empty. */
        dispatch_group_notify_f(group, interactive, waiter, perf_probe_body);
        dispatch_release(group);
    } else {
        inversion_wait *wait = malloc(sizeof *wait);
        if (!wait) abort();
        *wait = (inversion_wait){group, waiter};
        dispatch_async_f(interactive, wait, inversion_waiter);
    }
}
