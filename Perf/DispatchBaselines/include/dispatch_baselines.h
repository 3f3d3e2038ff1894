/*
 * dispatch_baselines.h — the libdispatch competitor of the perf harness, in C, because the
 * function-pointer forms (dispatch_group_async_f, dispatch_group_notify_f) that match the core's
 * C API are not callable from Swift. The timed functions return elapsed nanoseconds; `counter`
 * counts executed work items (baseline_count_one) so the harness can verify them.
 */
#ifndef DISPATCH_BASELINES_H
#define DISPATCH_BASELINES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "work_bodies.h"

/* n empty items with dispatch_group_async_f onto the default global queue, then a group wait. */
uint64_t dispatch_baseline_independent(long n, int64_t *counter);
/* n items on a serial queue, then a group wait. */
uint64_t dispatch_baseline_serial(long n, int64_t *counter);

/* S1: n items running fn(context) with dispatch_group_async_f onto the default global queue,
 * then a group wait. */
uint64_t dispatch_baseline_independent_f(long n, void (*fn)(void *), void *context);

/* S3: a tree of items on the default global queue, all in one group: each item counts one and,
 * above `depth`, adds `fan` children from its own body; then a group wait for the whole tree
 * (1 + fan + ... + fan^depth items). */
uint64_t dispatch_baseline_spawn(int fan, int depth, int64_t *counter);

/* A dependency graph of n items in CSR form: item i's successors are
 * successors[successor_start[i] ..< successor_start[i + 1]], and it has predecessor_count[i]
 * predecessors. Each item with predecessors waits on a group of them (entered once per
 * predecessor, left by each as it finishes) through dispatch_group_notify_f; items without
 * run at once with dispatch_async_f. All on the default global queue; then a wait for all. */
uint64_t dispatch_baseline_graph(long n, const int32_t *successor_start, const int32_t *successors,
                                 const int32_t *predecessor_count, int64_t *counter);

/* QoS classes for dispatch_baseline_global_queue (the values of <sys/qos.h>). */
enum {
    DISPATCH_BASELINE_QOS_BACKGROUND = 0x09,
    DISPATCH_BASELINE_QOS_UTILITY = 0x11,
    DISPATCH_BASELINE_QOS_DEFAULT = 0x15,
    DISPATCH_BASELINE_QOS_USER_INITIATED = 0x19,
    DISPATCH_BASELINE_QOS_USER_INTERACTIVE = 0x21,
};

/* An opaque dispatch object (queue or group). */
typedef void *dispatch_baseline_object;

/* The global concurrent queue of a QoS class (not to be released). */
dispatch_baseline_object dispatch_baseline_global_queue(int qos_class);
/* A new concurrent queue; release it with dispatch_baseline_release. */
dispatch_baseline_object dispatch_baseline_concurrent_queue(const char *label);
void dispatch_baseline_release(dispatch_baseline_object object);
/* dispatch_async_f. */
void dispatch_baseline_async(dispatch_baseline_object queue, void *context, void (*fn)(void *));

/* S2: a group, counting items added from several threads onto the default global queue. */
dispatch_baseline_object dispatch_baseline_group_create(void);
/* n counting items with dispatch_group_async_f onto the default global queue. */
void dispatch_baseline_group_add(dispatch_baseline_object group, long n, int64_t *counter);
/* Waits for every item of the group. */
void dispatch_baseline_group_wait(dispatch_baseline_object group);

/* W8: a suspended concurrent queue and a group; fill it, then resume and wait for the group. */
typedef struct dispatch_baseline_suspended dispatch_baseline_suspended;
dispatch_baseline_suspended *dispatch_baseline_suspended_create(void);
/* n items counting into counter, with dispatch_group_async_f onto the suspended queue. */
void dispatch_baseline_suspended_fill(dispatch_baseline_suspended *state, long n, int64_t *counter);
/* Resumes, waits for every item, and frees the state. */
void dispatch_baseline_suspended_drain(dispatch_baseline_suspended *state);

/* W12: perf_inversion_target_body(target) on the background global queue and a waiter on the
 * userInteractive one that runs perf_probe_body(waiter) after it: through dispatch_group_wait
 * in a block (depends false) or dispatch_group_notify_f (depends true). Marks waiter submitted
 * first. */
void dispatch_baseline_inversion(bool depends, probe_slot *target, probe_slot *waiter);

#endif
