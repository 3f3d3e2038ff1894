/* dispatch_baselines.c — libdispatch workloads for the perf harness (see the header). */
#include "dispatch_baselines.h"

/* libdispatch's C entry points, declared here because the toolchain's <dispatch/dispatch.h>
 * is not on SwiftPM's C include path (and -I would need unsafeFlags). These are libdispatch's
 * stable C ABI: objects are pointers, DISPATCH_TIME_FOREVER is ~0, a NULL attribute makes a
 * serial queue. libdispatch.so comes with the Swift toolchain and swiftc links it. */
typedef void *dispatch_queue_t;
typedef void *dispatch_group_t;
typedef void (*dispatch_function_t)(void *);
#define DISPATCH_TIME_FOREVER (~(uint64_t)0)
#define DISPATCH_QUEUE_PRIORITY_DEFAULT 0
#define DISPATCH_QUEUE_SERIAL NULL
extern dispatch_queue_t dispatch_get_global_queue(long identifier, unsigned long flags);
extern dispatch_queue_t dispatch_queue_create(const char *label, void *attr);
extern dispatch_group_t dispatch_group_create(void);
extern void dispatch_group_async_f(dispatch_group_t, dispatch_queue_t, void *, dispatch_function_t);
extern void dispatch_group_notify_f(dispatch_group_t, dispatch_queue_t, void *, dispatch_function_t);
extern void dispatch_async_f(dispatch_queue_t, void *, dispatch_function_t);
extern void dispatch_group_enter(dispatch_group_t);
extern void dispatch_group_leave(dispatch_group_t);
extern long dispatch_group_wait(dispatch_group_t, uint64_t timeout);
extern void dispatch_release(void *object);

#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void baseline_count_one(void *context) {
    /* relaxed: a tally read after the group wait, which orders it. */
    atomic_fetch_add_explicit((_Atomic int64_t *)context, 1, memory_order_relaxed);
}

/* n items onto `queue` in one group, then a group wait; returns the elapsed ns. */
static uint64_t run_group(dispatch_queue_t queue, long n, int64_t *counter) {
    dispatch_group_t group = dispatch_group_create();
    uint64_t start = now_ns();
    for (long i = 0; i < n; i++) dispatch_group_async_f(group, queue, counter, baseline_count_one);
    dispatch_group_wait(group, DISPATCH_TIME_FOREVER);
    uint64_t elapsed = now_ns() - start;
    dispatch_release(group);
    return elapsed;
}

uint64_t dispatch_baseline_independent(long n, int64_t *counter) {
    return run_group(dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_DEFAULT, 0), n, counter);
}

uint64_t dispatch_baseline_serial(long n, int64_t *counter) {
    dispatch_queue_t queue = dispatch_queue_create("perf.serial", DISPATCH_QUEUE_SERIAL);
    uint64_t elapsed = run_group(queue, n, counter);
    dispatch_release(queue);
    return elapsed;
}

typedef struct chain_link {
    dispatch_group_t done;
    _Atomic int64_t *counter;
} chain_link;

static void chain_step(void *context) {
    chain_link *link = context;
    baseline_count_one(link->counter);
    dispatch_group_leave(link->done);
}

uint64_t dispatch_baseline_chain(long n, int64_t *counter) {
    dispatch_queue_t queue = dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_DEFAULT, 0);
    chain_link *links = calloc((size_t)n, sizeof *links);
    uint64_t start = now_ns();
    for (long i = 0; i < n; i++) {
        links[i].done = dispatch_group_create();
        links[i].counter = (_Atomic int64_t *)counter;
        dispatch_group_enter(links[i].done);
        if (i == 0) {
            dispatch_async_f(queue, &links[i], chain_step);
        } else {
            dispatch_group_notify_f(links[i - 1].done, queue, &links[i], chain_step);
        }
    }
    dispatch_group_wait(links[n - 1].done, DISPATCH_TIME_FOREVER);
    uint64_t elapsed = now_ns() - start;
    for (long i = 0; i < n; i++) dispatch_release(links[i].done);
    free(links);
    return elapsed;
}

size_t baseline_heap_in_use(void) { return mallinfo2().uordblks; }
