/*
 * base/observe.h — the observation points: every place the core tells the outside what it does
 * (issue 35) is one OP_OBSERVE_* macro here, used by the layers above at the point it names. Each
 * feeds the same two consumers, so a point is defined once:
 *   - a USDT probe (provider "operations", <sys/sdt.h> from systemtap-sdt-dev): a nop and an ELF
 *     note, free while nothing is attached; `readelf -n` lists them, bpftrace and perf attach to
 *     them by name (docs/DESIGN.md "Seeing what the runtime does"). Without the header (a build
 *     on a machine without systemtap-sdt-dev) the probes compile to nothing;
 *   - the trace recorder (trace.c): one relaxed load of op_trace_recording and a branch the
 *     predictor learns; taken only while a trace records, it appends one event to the calling
 *     thread's own buffer (no lock, no shared write).
 *
 * Arguments are plain values (pointers serve as ids, never dereferenced by a consumer); a text
 * (a queue's label, an operation's name) is copied by the recorder, truncated. A probe's
 * arguments are computed even while nothing is attached, so probes take only values at hand;
 * what costs more (a label, a count of unfinished tasks) is evaluated only inside the trace's
 * branch.
 *
 * The points (probe arguments first; the trace's extra ones after a bar):
 *   submit(task, queue | label, unfinished)  a task reached its queue (op_queue_submit*)
 *   start(task, queue, qos, nice, priority | label, nice_delta)  its body begins on this thread
 *                                            (the label again: a flight recorder may have lost
 *                                            the submit that carried it)
 *   end(task)                                its body returned
 *   finish(task, queue, cancelled)           it finished (ran, cancelled or completed); `queue`
 *                                            is an id only here: the finishing thread may hold
 *                                            nothing that keeps it alive
 *   release(dependency, dependent | live)    a finish released a dependent (OP_OBSERVE_EDGE); the
 *                                            trace skips a dependent already finished (a
 *                                            cancelled one: no start to draw an arrow to)
 *   cancel(task)                             op_task_cancel's first call on a task
 *   promote(task, queue, qos)                a task or queue raised to class qos
 *   carry(task, queue, to_qos, to_nice)      a body carried to another pool's workers
 *   rescue(tid)                              the monitor counted thread tid blocked in a body
 *   spare(qos)                               a spare thread started for a pool of class qos
 *   park(cpu) / wake(cpu)                    a worker sleeps for want of work / was woken
 *   name(task, text)                         an operation's name (the Swift layer, tracing only)
 */
#ifndef OPERATIONS_CORE_OBSERVE_H
#define OPERATIONS_CORE_OBSERVE_H

#include "base.h"

#if defined(__has_include)
#if __has_include(<sys/sdt.h>) && !defined(OPERATIONS_NO_PROBES)
#include <sys/sdt.h>
#define OP_HAVE_PROBES 1
#endif
#endif

#ifdef OP_HAVE_PROBES
#define OP_PROBE1(name, a) DTRACE_PROBE1(operations, name, a)
#define OP_PROBE2(name, a, b) DTRACE_PROBE2(operations, name, a, b)
#define OP_PROBE3(name, a, b, c) DTRACE_PROBE3(operations, name, a, b, c)
#define OP_PROBE4(name, a, b, c, d) DTRACE_PROBE4(operations, name, a, b, c, d)
#define OP_PROBE5(name, a, b, c, d, e) DTRACE_PROBE5(operations, name, a, b, c, d, e)
#else
#define OP_PROBE1(name, a) ((void)0)
#define OP_PROBE2(name, a, b) ((void)0)
#define OP_PROBE3(name, a, b, c) ((void)0)
#define OP_PROBE4(name, a, b, c, d) ((void)0)
#define OP_PROBE5(name, a, b, c, d, e) ((void)0)
#endif

#pragma GCC visibility push(hidden) /* internal: never exported from the shared library */

/* ---- trace.c: the recorder ------------------------------------------------------------------ */

enum {
    OP_EV_SUBMIT = 1,
    OP_EV_START,
    OP_EV_END,
    OP_EV_FINISH,
    OP_EV_EDGE,
    OP_EV_CANCEL,
    OP_EV_PROMOTE,
    OP_EV_CARRY,
    OP_EV_RESCUE,
    OP_EV_SPARE,
    OP_EV_NAME,
};

/* Whether a trace records (op_trace_start .. op_trace_stop). relaxed: a switch; an event racing
 * with the start or stop is kept or not, and the writer copes with an event still being written. */
extern _Atomic bool op_trace_recording;

static inline bool op_tracing(void) {
    return OP_UNLIKELY(atomic_load_explicit(&op_trace_recording, memory_order_relaxed));
}

/* Appends one event to the calling thread's buffer (trace.c). `text` may be NULL. */
void op_trace_record(int kind, const void *a, const void *b, int32_t value, int8_t qos,
                     int8_t nice, int8_t priority, int8_t delta, const char *text);

/* ---- the points ----------------------------------------------------------------------------- */

#define OP_OBSERVE_SUBMIT(task, queue, label, unfinished)                                          \
    do {                                                                                           \
        OP_PROBE2(submit, (task), (queue));                                                        \
        if (op_tracing())                                                                          \
            op_trace_record(OP_EV_SUBMIT, (task), (queue), (int32_t)(unfinished), 0, 0, 0, 0,      \
                            (label));                                                              \
    } while (0)

#define OP_OBSERVE_START(task, queue, label, qos, nice, priority, delta)                           \
    do {                                                                                           \
        OP_PROBE5(start, (task), (queue), (qos), (nice), (priority));                              \
        if (op_tracing())                                                                          \
            op_trace_record(OP_EV_START, (task), (queue), 0, (int8_t)(qos), (int8_t)(nice),       \
                            (int8_t)(priority), (int8_t)(delta), (label));                         \
    } while (0)

#define OP_OBSERVE_END(task)                                                                       \
    do {                                                                                           \
        OP_PROBE1(end, (task));                                                                    \
        if (op_tracing()) op_trace_record(OP_EV_END, (task), NULL, 0, 0, 0, 0, 0, NULL);           \
    } while (0)

#define OP_OBSERVE_FINISH(task, queue, cancelled, unfinished)                                      \
    do {                                                                                           \
        OP_PROBE3(finish, (task), (queue), (cancelled));                                           \
        if (op_tracing())                                                                          \
            op_trace_record(OP_EV_FINISH, (task), (queue), (int32_t)(unfinished),                  \
                            (int8_t)(cancelled), 0, 0, 0, NULL);                                   \
    } while (0)

#define OP_OBSERVE_EDGE(dependency, dependent, dependent_live)                                     \
    do {                                                                                           \
        OP_PROBE2(release, (dependency), (dependent));                                             \
        if (op_tracing() && (dependent_live))                                                      \
            op_trace_record(OP_EV_EDGE, (dependency), (dependent), 0, 0, 0, 0, 0, NULL);           \
    } while (0)

#define OP_OBSERVE_CANCEL(task)                                                                    \
    do {                                                                                           \
        OP_PROBE1(cancel, (task));                                                                 \
        if (op_tracing()) op_trace_record(OP_EV_CANCEL, (task), NULL, 0, 0, 0, 0, 0, NULL);        \
    } while (0)

#define OP_OBSERVE_PROMOTE(task, queue, qos)                                                       \
    do {                                                                                           \
        OP_PROBE3(promote, (task), (queue), (qos));                                                \
        if (op_tracing())                                                                          \
            op_trace_record(OP_EV_PROMOTE, (task), (queue), 0, (int8_t)(qos), 0, 0, 0, NULL);      \
    } while (0)

#define OP_OBSERVE_CARRY(task, queue, qos, nice)                                                   \
    do {                                                                                           \
        OP_PROBE4(carry, (task), (queue), (qos), (nice));                                          \
        if (op_tracing())                                                                          \
            op_trace_record(OP_EV_CARRY, (task), (queue), 0, (int8_t)(qos), (int8_t)(nice), 0, 0,  \
                            NULL);                                                                 \
    } while (0)

#define OP_OBSERVE_RESCUE(tid)                                                                     \
    do {                                                                                           \
        OP_PROBE1(rescue, (tid));                                                                  \
        if (op_tracing()) op_trace_record(OP_EV_RESCUE, NULL, NULL, (tid), 0, 0, 0, 0, NULL);     \
    } while (0)

#define OP_OBSERVE_SPARE(qos)                                                                      \
    do {                                                                                           \
        OP_PROBE1(spare, (qos));                                                                   \
        if (op_tracing()) op_trace_record(OP_EV_SPARE, NULL, NULL, 0, (int8_t)(qos), 0, 0, 0, NULL); \
    } while (0)

#define OP_OBSERVE_PARK(cpu) OP_PROBE1(park, (cpu))
#define OP_OBSERVE_WAKE(cpu) OP_PROBE1(wake, (cpu))

#pragma GCC visibility pop

#endif
