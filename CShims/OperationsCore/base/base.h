/*
 * base/base.h — the building blocks: what every layer above may use; nothing here calls up.
 *
 * Offers: the ready queue (ready_queue.c) and a worker's local run queue (local_run_queue.c),
 * the event count and futex helpers (parking.c), the task object and its state word (task.c,
 * task_cache.c), nice values, thread priority and the short time slice (nice.c, time_slice.c),
 * the topology and the cgroup CPU limit (topology.c, cgroup.c), environment switches (env.c),
 * thread creation, the spawner and fault injection (faults.c, spawner.c), the race-window build
 * (race_window.c).
 *
 * Owns: nothing of a queue or pool. A task's fields are written by the layers above as their
 * comments say (`queue` by submit, `dependents` / `own_edges` by the graph, `registry_next` by
 * the registry); base only creates, recycles and frees the object (the last reference).
 * Not installed; the public API is include/operations_core.h.
 */
#ifndef OPERATIONS_CORE_BASE_H
#define OPERATIONS_CORE_BASE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "operations_core.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#pragma GCC visibility push(hidden) /* internal: never exported from the shared library */

/* Producer and consumer ends of shared structures are kept this far apart: x86-64 prefetches
 * cache lines in pairs, so 64 bytes is not enough to stop false sharing. */
#define OP_CACHE_LINE 128

#define OP_LIKELY(x) __builtin_expect(!!(x), 1)
#define OP_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Aborts with a message: for states the core cannot continue from (out of memory while growing
 * a ready queue, a broken invariant). Never used for bad input from callers. */
_Noreturn void op_fatal(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* The race-window build (race_window.c): a seeded random short delay at a publication point,
 * compiled in only with OPERATIONS_RACE_WINDOWS. `point` names the window for readers. */
#ifdef OPERATIONS_RACE_WINDOWS
void op_race_window(const char *point);
#define OP_RACE_WINDOW(point) op_race_window(point)
#else
#define OP_RACE_WINDOW(point) ((void)0)
#endif

/* Counters (issue 35): always on, nearly free. A counter has one writer where it can (a
 * worker's own, on the worker's own line): that writer bumps it with a relaxed load and store,
 * no locked instruction; readers sum relaxed snapshots. A counter several threads bump (a
 * queue's, events of the monitor or a promoter) uses a relaxed fetch-add: a count, ordering
 * nothing. */
static inline void op_count_own(_Atomic uint64_t *counter, uint64_t by) {
    atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + by,
                          memory_order_relaxed);
}
static inline void op_count_shared(_Atomic uint64_t *counter, uint64_t by) {
    atomic_fetch_add_explicit(counter, by, memory_order_relaxed);
}
static inline uint64_t op_count_read(const _Atomic uint64_t *counter) {
    return atomic_load_explicit((_Atomic uint64_t *)counter, memory_order_relaxed);
}

static inline void op_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* ---- ready_queue.c ------------------------------------------------------------------------ */

/* One band: an unbounded MPMC FIFO made of a chain of bounded rings. */
typedef struct op_ring op_ring;
typedef struct op_fifo {
    alignas(OP_CACHE_LINE) op_ring *_Atomic head; /* consumers' ring */
    alignas(OP_CACHE_LINE) op_ring *_Atomic tail; /* producers' ring */
    alignas(OP_CACHE_LINE) op_ring *first;        /* every ring ever used, chained by next */
} op_fifo;

void op_fifo_init(op_fifo *fifo, uint32_t initial_capacity);
void op_fifo_destroy(op_fifo *fifo);
void op_fifo_push(op_fifo *fifo, void *item);
void *op_fifo_pop(op_fifo *fifo);
bool op_fifo_maybe_nonempty(const op_fifo *fifo);
/* About how many items the fifo holds, at most `limit` (reserved cells count; a snapshot that
 * reads the producers' line: for sizing a burst of claims, not for the hot path). */
uint64_t op_fifo_count_hint(const op_fifo *fifo, uint64_t limit);

struct op_ready_queue {
    op_fifo bands[OP_PRIORITY_COUNT];
};
void op_ready_queue_init(op_ready_queue_t *queue, uint32_t initial_capacity);
void op_ready_queue_deinit(op_ready_queue_t *queue);
/* Pops the first item of the highest non-empty band among those whose bit (1 << band) is set
 * in `bands`; NULL when those are empty (the others are not looked at). */
void *op_ready_queue_pop_bands(op_ready_queue_t *queue, uint32_t bands);
/* True when a band from `band` up may hold an item; a hint, like op_fifo_maybe_nonempty. */
bool op_ready_queue_maybe_nonempty_from(const op_ready_queue_t *queue, op_priority_t band);
/* About how many entries the bands hold, at most `limit` (stale re-band entries count too). */
uint64_t op_ready_queue_count_hint(const op_ready_queue_t *queue, uint64_t limit);

/* ---- parking.c ------------------------------------------------------------------------------ */

struct op_event {
    /* Low 32 bits: threads between prepare_wait and the end of wait. High 32 bits: the epoch,
     * bumped by every notify that finds a waiter; the futex sleeps on this half. */
    alignas(OP_CACHE_LINE) _Atomic uint64_t state;
};
void op_event_init(op_event_t *event);
/* Futex helpers shared with dependencies.c and queue.c. */
int op_futex_wait(_Atomic uint32_t *word, uint32_t expected, int64_t timeout_ns);
void op_futex_wake(_Atomic uint32_t *word, int count);
int64_t op_now_ns(void);
/* Before a waiter sleeps it re-checks its condition this long, pausing and then yielding the
 * CPU between looks: a futex wake-up costs tens to hundreds of microseconds on a VM, more than
 * short waits take. */
#define OP_WAIT_SPIN_NS 20000
/* One pause of such a spin loop: CPU pauses for the first microsecond, then sched_yield. */
void op_spin_pause(int64_t spun_ns);

/* ---- local_run_queue.c ------------------------------------------------------------------ */

#define OP_LOCAL_RUN_QUEUE_SIZE 256 /* a power of two */

/* A pinned worker's own run queue (see local_run_queue.c and the public header): owner pushes
 * and pops, other drainers of the same queue steal half. Entries are ready-queue entries
 * (tagged task pointers); the tag a ring serves is the op_queue_t whose tasks it holds. */
struct op_local_run_queue {
    alignas(OP_CACHE_LINE) _Atomic uint64_t head; /* consumers: position | generation << 32 */
    alignas(OP_CACHE_LINE) _Atomic uint32_t tail; /* written by the owner only */
    const void *_Atomic queue;                    /* the op_queue_t it serves; the owner's */
    void *_Atomic slots[OP_LOCAL_RUN_QUEUE_SIZE];
};
typedef op_local_run_queue_t op_local_run_queue;

void op_local_run_queue_init(op_local_run_queue *ring);
/* Any thread: false when it may hold an entry (a hint). */
bool op_local_run_queue_is_empty(const op_local_run_queue *ring);
/* The owner: how many entries its ring holds (thieves may have taken some meanwhile: a hint). */
uint32_t op_local_run_queue_length(const op_local_run_queue *ring);
/* A thread draining `queue` that has no ring of its own (a spare): takes one entry of
 * `victim`'s, if they are `queue`'s, or NULL. */
void *op_local_run_queue_steal_one(op_local_run_queue *victim, const void *queue);

/* ---- task.c (the task object) and dependencies.c (the graph) --------------------------------- */

enum {
    OP_STATE_SUBMITTED = 1u << 0, /* handed to a queue */
    OP_STATE_QUEUED = 1u << 1,    /* pushed into its queue's ready queue (exactly once) */
    OP_STATE_RUNNING = 1u << 2,   /* a worker took it */
    OP_STATE_FINISHED = 1u << 3,
    OP_STATE_CANCELLED = 1u << 4,
    OP_STATE_WAITERS = 1u << 5, /* someone sleeps on the state word */
    OP_STATE_BODY_DONE = 1u << 6, /* the body returned (manual-completion tasks) */
    /* handed to its own class's workers, outside its queue's slots (carry.c): its
     * manual completion gives back its busy unit only, no slot; a promotion is not counted on
     * its queue */
    OP_STATE_OUTSIDE_WIDTH = 1u << 7,
    OP_STATE_DEFER = 1u << 8,     /* the body asked to go back to waiting (op_task_defer) */
    OP_STATE_TAKEN = 1u << 9,     /* a worker claimed its ready-queue entry (op_queue_take_ready) */
    /* The finish is over: on_finish ran and the dependents were counted down (set last, after
     * FINISHED). op_task_wait returns on it, so a waiter finds the dependents ready. */
    OP_STATE_RELEASED = 1u << 10,
    /* QoS promotion (promotion.c): the class it was raised to + 1 in bits 16-18 (0: none),
     * COUNTED when that raise is also counted on its queue (queue->promo_counts), PROMOTING while a
     * promoter changes either (the finisher waits for it before it settles the count). */
    OP_STATE_PROMO_COUNTED = 1u << 19,
    OP_STATE_PROMOTING = 1u << 20,
};
#define OP_STATE_PROMO_SHIFT 16
#define OP_STATE_PROMO_MASK (UINT32_C(7) << OP_STATE_PROMO_SHIFT)
/* The class a state word says the task was promoted to, or -1. */
static inline int op_state_promoted_qos(uint32_t state) {
    return (int)((state & OP_STATE_PROMO_MASK) >> OP_STATE_PROMO_SHIFT) - 1;
}

/* Re-banding (op_task_set_priority on a queued task) pushes a second entry into the new band.
 * Each entry carries, in its pointer's low bits (tasks are 16-byte aligned), the generation the
 * task had when it was pushed; the generation lives in these bits of the state word and the
 * re-band bumps it. A worker claims a task by setting TAKEN only if the entry's generation is
 * the task's current one, so exactly one entry runs the task and the others are skipped. After
 * 16 re-bands of one waiting task an old entry may match again: the task still runs exactly
 * once, only its position is then that of the older entry. Settling a deferral (the task goes
 * back to waiting) bumps it too, and an entry found while the task is not QUEUED is stale
 * whatever its generation (op_queue_claim_entry). */
#define OP_STATE_GEN_SHIFT 12
#define OP_STATE_GEN_MASK (UINT32_C(0xF) << OP_STATE_GEN_SHIFT)
#define OP_ENTRY_TAG_MASK ((uintptr_t)0xF)

/* The dependency count holds this extra unit until the task is submitted, so a task can only
 * become ready through submission (or cancellation after submission). Dependencies and holds
 * stay below it (2^31 of them would exhaust memory long before). */
#define OP_PENDING_HOLD (UINT32_C(1) << 31)

/* Internal bits of op_task.flags, above the public OP_TASK_* ones. */
enum {
    OP_TASK_IS_JOB = 1u << 5,     /* submitted with op_queue_submit_job */
    OP_TASK_IS_BARRIER = 1u << 6, /* submitted with op_queue_submit_barrier */
    OP_TASK_HAS_EXT = 1u << 7,    /* `context` points to an op_task_ext */
};

/* What few tasks have, kept out of line so a task fits in 72 bytes: created with the task when
 * it has an on_finish callback. Owned by the task, freed with it. */
typedef struct op_task_ext {
    void *context; /* the caller's context */
    op_task_fn on_finish;
} op_task_ext;

/* A dependency edge (the graph, graph/dependencies.c, links and fires it; task.c frees it with
 * its owner): owned by the dependent task (freed with it) and linked
 * into two lists: the dependent's own list (to find it for removal) and the dependency's
 * `dependents` list, a push-only stack that the dependency closes (OP_EDGES_CLOSED) when it
 * finishes. It moves out of OP_EDGE_ACTIVE once, by compare-and-swap. */
typedef struct op_edge op_edge;
enum { OP_EDGE_ACTIVE = 0, OP_EDGE_FIRED = 1, OP_EDGE_REMOVED = 2, OP_EDGE_DEAD = 3 };
struct op_edge {
    op_task_t *dependent;   /* owner */
    op_task_t *dependency;  /* compared by remove_dependency, never dereferenced through here */
    _Atomic uint32_t state; /* OP_EDGE_* */
    op_edge *next_in_dependency;
    op_edge *next_owned;
};
#define OP_EDGES_CLOSED ((op_edge *)(uintptr_t)1)

/* 72 bytes (an 80-byte malloc chunk): a queued BlockOperation is this plus a 40-byte Swift
 * object (a 48-byte chunk). */
struct op_task {
    _Atomic uint32_t state;          /* OP_STATE_* bits; futex word for op_task_wait */
    _Atomic uint32_t refs;
    _Atomic uint32_t pending;        /* unfinished dependencies + holds + OP_PENDING_HOLD */
    _Atomic uint32_t holds;          /* units of `pending` that are holds, not dependencies */
    op_task_fn fn;
    void *context;                   /* the caller's, or an op_task_ext (OP_TASK_HAS_EXT) */
    op_queue_t *_Atomic queue;       /* set once by submit */
    op_edge *_Atomic dependents;     /* edges of tasks waiting for this one; CLOSED when done */
    op_edge *_Atomic own_edges;      /* edges this task owns (one per dependency it was given) */
    op_task_t *registry_next;        /* registry.c: the tracking queue's stack */
    uint32_t barrier_seq;            /* registry.c: number of the barrier it waits for (0: none),
                                      * or a barrier's own number */
    uint8_t priority;
    int8_t qos;                      /* op_qos_t or OP_QOS_INHERIT */
    int8_t nice_delta;               /* from thread_priority */
    uint8_t flags;                   /* OP_TASK_* */
};

/* The context the caller gave (what the body and on_finish receive). */
static inline void *op_task_user_context(const op_task_t *task) {
    return OP_UNLIKELY(task->flags & OP_TASK_HAS_EXT) ? ((op_task_ext *)task->context)->context
                                                      : task->context;
}

/* task_cache.c: task memory recycled between threads. */
op_task_t *op_task_cache_alloc(void);
void op_task_cache_free(op_task_t *task);
/* Fills a freshly allocated task; attr must be valid. */
void op_task_init(op_task_t *task, op_task_fn fn, void *context, const op_task_attr_t *attr);

/* The task this thread runs now (seen by op_task_current); set by the drainer (queue layer). */
extern _Thread_local op_task_t *op_tls_task;

/* ---- histogram.c ---------------------------------------------------------------------------- */

/* Adds `ns` to `histogram` (relaxed fetch-adds; see histogram.c). */
void op_histogram_record(op_histogram_t *histogram, uint64_t ns);
/* A relaxed copy of `histogram`. */
void op_histogram_snapshot(const op_histogram_t *histogram, op_histogram_t *out);

/* ---- report_buffer.c ------------------------------------------------------------------------ */

/* A bounded text buffer for reports: appends count what would have been written (as snprintf),
 * so `length` past `size` says how much room the caller needs; `buffer` always holds a
 * NUL-terminated prefix (when size > 0). */
typedef struct op_report {
    char *buffer;
    size_t size;
    size_t length;
} op_report;
void op_report_add(op_report *report, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* Appends `text` (NULL: "") as a JSON string, quoted and escaped; a byte that does not start a
 * valid UTF-8 character becomes U+FFFD. */
void op_report_json_string(op_report *report, const char *text);
/* The length of the valid UTF-8 character of two to four bytes at `c`, or 0. */
size_t op_utf8_char_length(const unsigned char *c);

/* ---- faults.c ------------------------------------------------------------------------------- */

/* pthread_create for every thread the core starts; returns 0 or an errno value (EAGAIN when a
 * test injects the failure with OPERATIONS_FAULT_THREAD_CREATE). */
int op_thread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                     void *arg);
/* OPERATIONS_FAULT_PROC=unreadable: the monitor treats /proc as missing. */
/* faults.c: true when OPERATIONS_FAULT_SETPRIORITY=eperm makes every setpriority fail. */
bool op_fault_setpriority_refused(void);
bool op_fault_proc_unreadable(void);

/* ---- topology.c ----------------------------------------------------------------------------- */

typedef struct op_topology_data {
    int cpu_count;
    int node_count;
    bool numa;
    const char *fallback_reason;
    int *cpus;        /* cpu id of each usable CPU */
    int *cpu_node;    /* node index of each usable CPU */
    int max_cpu_id;   /* for the reverse table */
    int *node_of_cpu_id; /* indexed by cpu id; -1 when not usable */
    size_t cpuset_size;  /* CPU_ALLOC_SIZE for a set that can hold every usable cpu id */
    double cpu_quota;    /* the cgroup's CPU limit in CPUs (quota / period); 0 = none */
    int default_width;   /* min(cpu_count, ceil(cpu_quota)), at least 1: OP_WIDTH_DEFAULT */
    const char *quota_error; /* why a cgroup limit file was ignored, or NULL */
} op_topology_data;

const op_topology_data *op_topology_get(void);
/* Pins the calling thread to `cpu` (libnuma when in use, else pthread affinity) and prefers
 * memory of `node`. A failure is recorded (the fallback reason) but never fatal. */
void op_topology_pin_current_thread(int cpu, int node);
/* Node index of the CPU the caller runs on (0 when unknown). */
int op_topology_current_node(void);
/* The affinity mask of thread `tid` (0: the caller) whatever the kernel's CPU count: the set
 * grows from CPU_SETSIZE until sched_getaffinity takes it. A CPU_ALLOC'd set (CPU_FREE it) and
 * its size in bytes, or NULL. */
cpu_set_t *op_affinity_of(int tid, size_t *size);
/* A CPU_ALLOC'd set of topology->cpuset_size bytes with the given cpu ids (CPU_FREE it), or
 * NULL when out of memory. */
cpu_set_t *op_cpuset_of(const int *cpu_ids, int count);

/* ---- cgroup.c ------------------------------------------------------------------------------- */

typedef struct op_cgroup_cpu_limit {
    double quota;     /* CPUs of time allowed (quota / period, tightest level); 0 = no limit */
    int cpus;         /* ceil(quota / period) of the tightest level; 0 = no limit */
    bool overridden;  /* read from OPERATIONS_CGROUP_ROOT */
    char error[512];  /* a limit file that could not be read or parsed (then no limit), or "" */
} op_cgroup_cpu_limit;

/* Reads the process's cgroup CPU limit (v2 cpu.max or v1 cfs quota), or the files in
 * OPERATIONS_CGROUP_ROOT. Called once, at topology start-up. */
void op_cgroup_read_cpu_limit(op_cgroup_cpu_limit *out);

/* ---- env.c ---------------------------------------------------------------------------------- */

/* 1 for on / 1 / true / yes / enable(d), 0 for off / 0 / false / no / disable(d) (any case,
 * blanks around forgiven), -1 for anything else or NULL. */
int op_env_parse_flag(const char *value);
/* The on/off variable `name`: `default_value` when unset, empty or unrecognised (then with
 * one line on stderr naming the variable, the value and the accepted spellings). */
bool op_env_flag(const char *name, bool default_value);
/* A whole number of decimal digits (blanks around forgiven) within [min, max] (min >= 0):
 * 0 with *out set, EINVAL when `value` is NULL or not such a number (a sign, a unit, other
 * text), ERANGE when it is outside [min, max] or beyond int64_t. */
int op_env_parse_int(const char *value, int64_t min, int64_t max, int64_t *out);
/* The whole-number variable `name` (`unit` names what it counts, for the message):
 * `default_value` when unset or empty, or when op_env_parse_int refuses it (then with one line
 * on stderr naming the variable, the value, the accepted range and the default). Read it once
 * (under a pthread_once), so the line is printed at most once. */
int64_t op_env_int(const char *name, int64_t default_value, int64_t min, int64_t max,
                   const char *unit);

/* ---- nice.c --------------------------------------------------------------------------------- */

void op_nice_init(void);
/* Generation of the nice table: bumped by op_runtime_set_nice_table (nice.c owns it; every
 * worker reads it before each task, hence inline). acquire: a worker that sees a new
 * generation also sees the entries stored before it (nice.c's releasing bump). */
extern _Atomic uint32_t op_nice_table_generation;
static inline uint32_t op_nice_generation(void) {
    return atomic_load_explicit(&op_nice_table_generation, memory_order_acquire);
}
/* The class's name in five letters at most ("bkgd", "util", "dflt", "uinit", "uiact"; "other"),
 * for thread names. A static string. */
const char *op_qos_short_name(int qos);
/* Wanted nice of a class, straight from the table. */
int op_nice_of_class(int qos);
/* The nice a worker should hold between tasks for a wanted value, after clamping for the
 * process's privilege, given the nice the thread started with. Reports a clamp once. */
int op_nice_clamp_class(int wanted, int thread_base);
/* The nice to apply for a task body on a worker sitting at class_nice; reports clamps once. */
int op_nice_clamp_task(int wanted, int class_nice);
/* True when the process may set `nice` on a thread at any time (it is at or above the lowest
 * settable value: CAP_SYS_NICE, RLIMIT_NICE). */
bool op_nice_can_hold(int nice);
/* setpriority on the calling thread; returns 0 or errno. */
int op_nice_set_current_thread(int nice);

/* Reports that only a user of a class should see, made when that class is first asked for:
 * bit OP_CLASS_REPORT_SHIFT(c) while the shifted table's report is due to a user of class c
 * (nice.c: c's own value lies below the floor), OP_CLASS_REPORT_SLICE(c) while a refused short
 * time slice's is (time_slice.c: the latency classes). Zero in a process with nothing to say. */
extern _Atomic uint32_t op_class_reports_pending;
#define OP_CLASS_REPORT_SHIFT(qos) (UINT32_C(1) << (qos))
#define OP_CLASS_REPORT_SHIFT_ALL ((UINT32_C(1) << OP_QOS_COUNT) - 1)
#define OP_CLASS_REPORT_SLICE(qos) (UINT32_C(1) << (8 + (qos)))
#define OP_CLASS_REPORT_SLICE_ALL (OP_CLASS_REPORT_SHIFT_ALL << 8)
/* nice.c: makes the reports due to a user of class `qos` (each once per process). */
void op_class_report(int qos);
/* Class `qos` is asked for: by a queue or task of that class, a promotion to it, or
 * op_runtime_start_workers (worker_pool.c's op_pool_for and op_pool_for_placement; not a pool
 * borrowed for its nice value). One relaxed load when nothing is due: a hint, op_class_report's
 * read-modify-write decides. */
static inline void op_class_requested(int qos) {
    if (OP_UNLIKELY(atomic_load_explicit(&op_class_reports_pending, memory_order_relaxed) &
                    (OP_CLASS_REPORT_SHIFT(qos) | OP_CLASS_REPORT_SLICE(qos)))) {
        op_class_report(qos);
    }
}

/* time_slice.c: asks the kernel for the short slice of a worker of the default class or above
 * (the calling thread); false when off, refused or ignored. With `report` (the latency
 * classes) a refusal is noted, and said once on stderr when a latency class is asked for
 * (op_time_slice_report_refusal). */
bool op_time_slice_shorten_current_thread(bool report);
/* time_slice.c: class `qos` was asked for: says a noted refusal once, if it is a latency class
 * and warnings are on (op_runtime_clamp_warning). */
void op_time_slice_report_refusal(int qos);
/* time_slice.c: a worker of another class (or the monitor, the spawner) gives up the short
 * slice it inherited from the thread that created it (a short-slice worker, or a body on one). */
void op_time_slice_reset_current_thread(void);
int op_current_tid(void);

/* ---- spawner.c ------------------------------------------------------------------------------ */

/* Starts the spawner thread (nice.c, at start-up, when the process may not lower nice values
 * freely). */
void op_spawner_start(void);
/* op_thread_create for a thread that must be able to run at `nice`: created by the spawner when
 * the caller sits above it and may not lower to it. */
int op_thread_create_at(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                        void *arg, int nice);
/* Fork, in the child: the spawner is gone. */
void op_spawner_forget_after_fork(void);

/* setpriority on thread `tid` (not the caller's); 0 or errno (the fault injection applies). */
int op_nice_set_thread(int tid, int nice);

#pragma GCC visibility pop

#endif /* OPERATIONS_CORE_BASE_H */
