/*
 * dispatch_baselines.h — the libdispatch side of the perf harness, in C, because the
 * function-pointer forms (dispatch_group_async_f, dispatch_group_notify_f) that match the core's
 * C API are not callable from Swift. Each function runs one timed workload and returns the
 * elapsed nanoseconds; `counter` counts executed work items so the harness can verify them.
 */
#ifndef DISPATCH_BASELINES_H
#define DISPATCH_BASELINES_H
#include <stddef.h>
#include <stdint.h>

/* Heap bytes in use (glibc mallinfo2().uordblks), for memory per queued operation. */
size_t baseline_heap_in_use(void);

/* The work item body every implementation runs: a relaxed atomic increment of *context. */
void baseline_count_one(void *counter);

/* n empty items with dispatch_group_async_f onto the default global queue, then a group wait. */
uint64_t dispatch_baseline_independent(long n, int64_t *counter);
/* n items on a serial queue, then a group wait. */
uint64_t dispatch_baseline_serial(long n, int64_t *counter);
/* A chain: item i runs from dispatch_group_notify_f on group i-1 and leaves group i. */
uint64_t dispatch_baseline_chain(long n, int64_t *counter);

#endif
