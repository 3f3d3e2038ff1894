/*
 * latency.c — the latency histograms (issue 35, item 3), opt-in at run time: per queue and per
 * class, each task's queue wait (from ready to its body's start) and each body's run time.
 *
 * The switch: op_runtime_set_latency_histograms, or OPERATIONS_HISTOGRAMS=on at start-up. Off,
 * the task path pays one relaxed load of op_latency_on and a branch (op_latency_recording).
 *
 * A task's ready time needs a place, and a task has no spare word (72 bytes, a malloc chunk of
 * 80; the W8 budget): so while the histograms are on, the thread that makes a task ready
 * writes (task, time) into a slot of a fixed table of OP_READY_STAMPS slots chosen by the
 * task's address, and the worker that starts it reads the slot back and clears it. Two tasks
 * ready at once in one slot: the later one's time wins, the earlier one's wait is not measured
 * (op_runtime_unmeasured_waits counts them). Each slot is a seqlock keyed by its task: the writer
 * clears `task` (relaxed), then writes `ns`, then `task` with release; the reader loads `task`
 * (acquire), then `ns`, then takes the slot with a compare-and-swap of `task` to 0 (acq_rel):
 * if a writer came between, the key changed and the value is dropped, never misattributed.
 *
 * The histograms (base/histogram.c) are recorded with relaxed fetch-adds. A queue's pair is
 * allocated at its first recorded task (a compare-and-swap publishes it, release; readers
 * acquire) and freed with the queue (op_latency_free). The classes' pairs are static.
 */
#include "queue.h"

#include <errno.h>
#include <string.h>

#define OP_READY_STAMPS 16384 /* a power of two */

typedef struct op_latency_pair {
    op_histogram_t wait;
    op_histogram_t run;
} op_latency_pair;

typedef struct op_ready_stamp {
    _Atomic uint64_t task;
    _Atomic int64_t ns;
} op_ready_stamp;

_Atomic bool op_latency_on = false;
/* When the histograms were last switched on (op_now_ns): a ready time older than that was
 * stamped in an earlier period, possibly for another task at the same address, and is ignored.
 * relaxed: set before `on`, read by recorders that saw `on`. */
static _Atomic int64_t op_latency_on_since = 0;
static op_ready_stamp *_Atomic op_ready_stamps = NULL;
static _Atomic uint64_t op_unmeasured_waits = 0;
static op_latency_pair op_class_latency[OP_QOS_COUNT];
static pthread_once_t op_latency_env_once = PTHREAD_ONCE_INIT;

static void op_latency_read_env(void) {
    if (op_env_flag("OPERATIONS_HISTOGRAMS", false)) op_runtime_set_latency_histograms(true);
}

__attribute__((constructor)) static void op_latency_at_load(void) {
    pthread_once(&op_latency_env_once, op_latency_read_env);
}

void op_runtime_set_latency_histograms(bool on) {
    if (on && !atomic_load_explicit(&op_ready_stamps, memory_order_acquire)) {
        op_ready_stamp *table = calloc(OP_READY_STAMPS, sizeof *table);
        op_ready_stamp *expected = NULL;
        if (!table) return; /* out of memory: stays off */
        /* release: the zeroed table before a recorder that acquires the pointer uses it. */
        if (!atomic_compare_exchange_strong_explicit(&op_ready_stamps, &expected, table,
                                                     memory_order_release, memory_order_acquire)) {
            free(table);
        }
    }
    if (on && !atomic_load_explicit(&op_latency_on, memory_order_relaxed)) {
        atomic_store_explicit(&op_latency_on_since, op_now_ns(), memory_order_relaxed);
    }
    /* release: `on_since` before `on`; a recorder that saw `on` fences (acquire) before it reads
     * `on_since`. A task racing with the switch is measured or not. */
    atomic_store_explicit(&op_latency_on, on, memory_order_release);
}

bool op_runtime_latency_histograms(void) { return op_latency_recording(); }

uint64_t op_runtime_unmeasured_waits(void) { return op_count_read(&op_unmeasured_waits); }

static op_ready_stamp *op_ready_slot(op_ready_stamp *table, const op_task_t *task) {
    uint64_t key = (uint64_t)(uintptr_t)task;
    return &table[(size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 40) & (OP_READY_STAMPS - 1)];
}

void op_latency_note_ready_slow(op_task_t *task) {
    op_ready_stamp *table = atomic_load_explicit(&op_ready_stamps, memory_order_acquire);
    if (!table) return;
    op_ready_stamp *slot = op_ready_slot(table, task);
    /* See the file comment: clear the key, write the value, publish the key. */
    /* acquire: the stores below stay after it (a reader that took this slot's previous key
     * with its compare-and-swap ordered before our exchange never reads our time). */
    uint64_t previous = atomic_exchange_explicit(&slot->task, 0, memory_order_acquire);
    if (previous && previous != (uint64_t)(uintptr_t)task) op_count_shared(&op_unmeasured_waits, 1);
    atomic_store_explicit(&slot->ns, op_now_ns(), memory_order_relaxed);
    atomic_store_explicit(&slot->task, (uint64_t)(uintptr_t)task, memory_order_release);
}

/* The queue's pair, made at its first use (NULL when out of memory). */
static op_latency_pair *op_latency_of(op_queue_t *queue) {
    op_latency_pair *pair = atomic_load_explicit(&queue->latency, memory_order_acquire);
    if (OP_LIKELY(pair)) return pair;
    op_latency_pair *made = calloc(1, sizeof *made);
    if (!made) return NULL;
    /* release: the zeroed pair before readers that acquire it. */
    if (atomic_compare_exchange_strong_explicit(&queue->latency, &pair, made, memory_order_release,
                                                memory_order_acquire)) {
        return made;
    }
    free(made);
    return pair;
}

int64_t op_latency_started_slow(op_task_t *task, op_queue_t *queue, int qos) {
    int64_t now = op_now_ns();
    op_ready_stamp *table = atomic_load_explicit(&op_ready_stamps, memory_order_acquire);
    if (!table) return now;
    op_ready_stamp *slot = op_ready_slot(table, task);
    uint64_t key = (uint64_t)(uintptr_t)task;
    if (atomic_load_explicit(&slot->task, memory_order_acquire) != key) return now; /* unstamped */
    int64_t ready = atomic_load_explicit(&slot->ns, memory_order_relaxed);
    if (!atomic_compare_exchange_strong_explicit(&slot->task, &key, 0, memory_order_acq_rel,
                                                 memory_order_relaxed)) {
        return now; /* another task took the slot meanwhile: its time, not ours */
    }
    atomic_thread_fence(memory_order_acquire); /* pairs with the switch's release of `on` */
    if (ready < atomic_load_explicit(&op_latency_on_since, memory_order_relaxed)) {
        op_count_shared(&op_unmeasured_waits, 1); /* stamped before the histograms were on again */
        return now;
    }
    uint64_t wait = now > ready ? (uint64_t)(now - ready) : 0;
    op_latency_pair *pair = op_latency_of(queue);
    if (pair) op_histogram_record(&pair->wait, wait);
    if ((unsigned)qos < OP_QOS_COUNT) op_histogram_record(&op_class_latency[qos].wait, wait);
    return now;
}

void op_latency_ended_slow(op_queue_t *queue, int qos, int64_t started) {
    if (started == 0) return; /* switched on while the body ran */
    uint64_t run = (uint64_t)(op_now_ns() - started);
    op_latency_pair *pair = op_latency_of(queue);
    if (pair) op_histogram_record(&pair->run, run);
    if ((unsigned)qos < OP_QOS_COUNT) op_histogram_record(&op_class_latency[qos].run, run);
}

void op_latency_free(op_queue_t *queue) {
    free(atomic_load_explicit(&queue->latency, memory_order_relaxed));
}

static void op_latency_copy(const op_latency_pair *pair, op_histogram_t *wait, op_histogram_t *run) {
    if (wait) {
        if (pair) op_histogram_snapshot(&pair->wait, wait); else memset(wait, 0, sizeof *wait);
    }
    if (run) {
        if (pair) op_histogram_snapshot(&pair->run, run); else memset(run, 0, sizeof *run);
    }
}

int op_queue_latency_histograms(const op_queue_t *queue, op_histogram_t *wait, op_histogram_t *run) {
    if (!queue) return EINVAL;
    op_latency_copy(atomic_load_explicit(&((op_queue_t *)queue)->latency, memory_order_acquire),
                    wait, run);
    return 0;
}

int op_runtime_class_latency_histograms(op_qos_t qos, op_histogram_t *wait, op_histogram_t *run) {
    if ((unsigned)qos >= OP_QOS_COUNT) return EINVAL;
    op_latency_copy(&op_class_latency[qos], wait, run);
    return 0;
}
