/*
 * operations_core.h — the one public header of the Operations C core.
 *
 * The core runs tasks (a function pointer and a context) on per-CPU pinned worker threads, one
 * set of workers per quality-of-service class, each class at its own nice value. Tasks go to
 * queues; a queue has a width (how many of its tasks may run at once), a suspended flag, a QoS
 * and five priority bands. Tasks may depend on other tasks, on any queue.
 *
 * OWNERSHIP
 *   - op_task_create() and op_queue_create() return an object with one reference, owned by the
 *     caller. op_*_retain() adds one, op_*_release() drops one; the last drop frees the object.
 *   - op_queue_submit() takes its own reference on the task until the task has finished; the
 *     caller may release its reference right after submitting.
 *   - A queue keeps itself alive while it holds unfinished tasks: releasing the last handle of
 *     a busy queue frees it only after its last task has finished.
 *   - The core never frees a task's context: free it in the body or in attr.on_finish.
 *   - Strings passed in (queue labels) are copied. Strings returned are owned by the core and
 *     live until the process exits.
 *
 * THREADING
 *   Every function may be called from any thread at any time, including from inside a task body,
 *   unless its comment says otherwise. Waiting (op_task_wait, op_queue_wait) from a task body
 *   blocks that worker; see the notes on each.
 *
 * ERRORS
 *   Functions that can fail return 0 or a positive errno value (EINVAL, EBUSY, EALREADY,
 *   ENOENT, ETIMEDOUT, EDEADLK, ENOMEM) and never abort for bad input. Functions returning a
 *   pointer return NULL and set errno. Running out of memory inside the scheduler (a ready queue
 *   that must grow) aborts with a message: the core never drops work.
 *
 * THREADS
 *   Per QoS class, one worker per CPU of the process's affinity mask (any size: masks beyond
 *   CPU_SETSIZE are read with CPU_ALLOC'd sets), pinned, started on first
 *   use; spares while bodies block (op_runtime_spare_workers); and one monitor thread for the
 *   process ("op-monitor"), which sleeps while no work waits. The workers of a placed queue's
 *   pool (op_queue_set_cpus) leave after OPERATIONS_PLACED_POOL_IDLE_MS (default 10000) ms
 *   without work and are started again by its next task.
 *   When a thread cannot be started (EAGAIN: a container's pids.max, RLIMIT_NPROC), no call
 *   aborts: a class runs with the workers that started (op_runtime_worker_count says how many),
 *   one line on stderr says what failed and what to do (raise pids.max or RLIMIT_NPROC, or
 *   restrict the CPU set), and the missing workers are retried with backoff (1 ms doubling to
 *   1 s) on submits and the monitor's ticks. A class where no worker could start holds its work
 *   until a retry succeeds, and says so on stderr. A spare that cannot start is retried at the
 *   monitor's ticks. Without a readable /proc the monitor cannot see which workers sleep: it
 *   says so once on stderr and counts a worker blocked once it has run one task for 50 ms while
 *   work waits.
 *
 * FORK
 *   fork() may be called at any time, also from a task body. The child gets a fresh runtime:
 *   the parent's workers, spares and monitor do not exist there, so its pools are forgotten
 *   (their memory is leaked, not freed) and new pools and a new monitor are started on first
 *   use in the child. Queues and tasks made in the parent stay valid. A queue that was idle at
 *   the fork works normally in the child. Tasks that were queued or running at the fork are not
 *   carried into the child: they stay unfinished there, and so does their queue (waits on it
 *   time out; its slots stay taken); so does a task whose finish another thread was running at
 *   the fork (op_task_is_finished is true, op_task_wait times out). The forking thread is an
 *   ordinary thread in the child, even if it was a worker (op_task_current() and
 *   op_queue_current() return NULL); a body that forks must end the child with exec or _exit,
 *   not return from the body. As after any fork of a multithreaded process, a lock another
 *   thread held at the fork (a queue's idle or registry lock) stays held in the child.
 *
 * ENVIRONMENT
 *   Every variable the runtime reads (the core's and the Swift layer's), each read once, when
 *   first needed. docs/DESIGN.md's "Environment" table is the reference (values, defaults, when
 *   each is read); the DocC article "Environment variables" has the same. On/off switches take,
 *   in any case, off, 0, false, no, disable, disabled / on, 1, true, yes, enable, enabled;
 *   numbers take decimal digits only. Another value keeps the default, with one line on stderr
 *   naming the variable, the value and what is accepted.
 *   OPERATIONS_QOS_NICE      per-class nice values, e.g. "userInteractive=-8,background=15".
 *                            A malformed value is rejected whole with a message on stderr naming
 *                            the bad entry; the defaults stay. Unset, and the process may not go
 *                            below the default table (no CAP_SYS_NICE): the table is shifted up
 *                            (op_runtime_nice_table_kind, OP_NICE_TABLE_SHIFTED).
 *   OPERATIONS_QOS_PROMOTION=off  no QoS promotion (see "QoS promotion" below; switched at
 *                            run time with op_runtime_set_qos_promotion). Switch, default on.
 *   OPERATIONS_NUMA=off      do not use libnuma; pin workers with plain pthread affinity.
 *                            Switch, default on.
 *   OPERATIONS_NICE_WARNINGS=off  do not print the one-line report of a clamp, the shifted
 *                            table or a refused time slice on stderr (see
 *                            op_runtime_set_clamp_warning, which overrides it at run time).
 *                            Switch, default on.
 *   OPERATIONS_SHORT_SLICE=off  the default and latency classes' workers keep the kernel's time
 *                            slice (op_runtime_short_time_slice). Switch, default on.
 *   OPERATIONS_CGROUP_ROOT=<dir>  read the CPU limit from <dir> instead of the process's cgroup
 *                            (found through /proc/self/cgroup and /proc/self/mountinfo): the
 *                            directory is taken as the process's own cgroup, with cgroup v2's
 *                            cpu.max or v1's cpu.cfs_quota_us and cpu.cfs_period_us (for tests).
 *   OPERATIONS_PLACED_POOL_IDLE_MS=<ms>  how long a placed pool's idle workers stay (10000): a
 *                            whole number, 1 … 9223372036854; another value keeps the default,
 *                            with one line on stderr (op_runtime_placed_pool_idle_ms tells).
 *   OPERATIONS_TRACE=<file>  record a trace from the library's load and write it to <file> at the
 *                            normal exit (op_trace_start: Chrome Trace Event JSON, for Perfetto).
 *   OPERATIONS_TRACE_FLIGHT_MB=<n>  with OPERATIONS_TRACE: a flight recorder keeping about the
 *                            latest <n> megabytes of events (0 … 1048576; 0: the whole trace).
 *   OPERATIONS_HISTOGRAMS=on  the latency histograms record from the library's load
 *                            (op_runtime_set_latency_histograms). Switch, default off.
 *   OPERATIONS_FORCE_SIDE_TABLE=on  the Swift layer only: every operation takes the state-word
 *                            form of a tagged pointer (to test it). Switch, default off.
 *   For tests only (fault injection, read once before the first thread starts; a value they do
 *   not take is ignored):
 *   OPERATIONS_FAULT_THREAD_CREATE=N or N-M  the core's Nth thread creation and later ones (or
 *                            the Nth to the Mth) fail with EAGAIN, counted from 1 per process.
 *   OPERATIONS_FAULT_PROC=unreadable  the monitor finds /proc/self/task/TID/stat missing.
 *   OPERATIONS_FAULT_SETPRIORITY=eperm  every setpriority of the core fails with EPERM (a
 *                            refused renice is reported once on stderr; threads keep their nice).
 *   OPERATIONS_RACE_SEED=<n>  the seed of the race-window delays, in a build with
 *                            -DOPERATIONS_RACE_WINDOWS only (default: the clock).
 *
 * CONTAINER CPU LIMITS
 *   A cgroup CPU quota (a container's --cpus) sizes the default queue width:
 *   min(affinity CPUs, ceil(quota / period)), at least 1 (op_topology_t.default_width). The
 *   workers stay one per CPU of the affinity mask, pinned.
 */
#ifndef OPERATIONS_CORE_H
#define OPERATIONS_CORE_H

#include <sched.h> /* cpu_set_t (its CPU_* macros need _GNU_SOURCE) */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library builds with -fvisibility=hidden (CMakeLists.txt): only what this header declares
 * is exported from liboperations_core.so, with default visibility from here to the matching pop
 * at the end; the core's internal functions stay hidden. .ci/check-exports checks that the
 * shared library's dynamic symbols are exactly this header's functions. */
#pragma GCC visibility push(default)

/* ---------------------------------------------------------------------------------------------
 * Enumerations
 * ------------------------------------------------------------------------------------------- */

/** The five priority bands of a queue (Operation.QueuePriority veryLow … veryHigh). */
typedef enum op_priority {
    OP_PRIORITY_VERY_LOW = 0,
    OP_PRIORITY_LOW = 1,
    OP_PRIORITY_NORMAL = 2,
    OP_PRIORITY_HIGH = 3,
    OP_PRIORITY_VERY_HIGH = 4,
} op_priority_t;
#define OP_PRIORITY_COUNT 5

/** Quality-of-service classes, lowest first. Each has its own workers at its own nice value; a
 *  task of another class than its queue's runs on its own class's workers (the queue's worker
 *  hands the task over with its slot, which the task keeps until it finished), and a thread
 *  priority runs on workers at its nice value where the process could not renice there and
 *  back. */
typedef enum op_qos {
    OP_QOS_BACKGROUND = 0,
    OP_QOS_UTILITY = 1,
    OP_QOS_DEFAULT = 2,
    OP_QOS_USER_INITIATED = 3,
    OP_QOS_USER_INTERACTIVE = 4,
} op_qos_t;
#define OP_QOS_COUNT 5
/** For op_task_attr_t.qos: the task runs at its queue's QoS. */
#define OP_QOS_INHERIT (-1)
/** The class's name as Foundation spells it ("background", "utility", "default",
 *  "userInitiated", "userInteractive"); "inherit" for OP_QOS_INHERIT, "unknown" otherwise. A
 *  static string. */
const char *op_qos_name(int qos);

/** A queue width that lets the runtime choose: one per worker of the queue's QoS class, or the
 *  container's CPU limit when lower (op_topology_t.default_width). */
#define OP_WIDTH_DEFAULT (-1)

/** Wait forever (for the timeout_ns arguments). */
#define OP_WAIT_FOREVER (-1)

/* ---------------------------------------------------------------------------------------------
 * Tasks
 * ------------------------------------------------------------------------------------------- */

typedef struct op_task op_task_t;
typedef struct op_queue op_queue_t;

/** A task body, or an on_finish callback. Runs on a worker thread (or the completing thread). */
typedef void (*op_task_fn)(void *context);

enum {
    /** Call the body even when the task was cancelled before it started (the body checks
     *  op_task_is_cancelled). Without it a cancelled task is retired without calling the body. */
    OP_TASK_RUN_WHEN_CANCELLED = 1u << 0,
    /** The task is not finished when its body returns: it keeps its queue slot, and its
     *  dependents wait, until someone calls op_task_complete(). (Asynchronous operations.) */
    OP_TASK_MANUAL_COMPLETION = 1u << 1,
    /** The body applies its thread priority itself around the part it is meant for
     *  (op_thread_priority_apply / op_thread_priority_restore), where the thread may renice
     *  there and back: the core then runs it on its class's workers without renicing. Where it
     *  may not (no CAP_SYS_NICE), the core still runs it on a worker already at its nice value,
     *  and the body's apply changes nothing. (Operation's start() applies it around main().) */
    OP_TASK_BODY_APPLIES_THREAD_PRIORITY = 1u << 2,
};

/** How a task runs. Initialise with op_task_attr_init(); every field has a safe default. */
typedef struct op_task_attr {
    op_priority_t priority;  /**< band in its queue; default OP_PRIORITY_NORMAL */
    int qos;                 /**< op_qos_t, or OP_QOS_INHERIT (default) */
    double thread_priority;  /**< 0.0 … 1.0, default 0.5; see op_runtime_nice_for() */
    uint32_t flags;          /**< OP_TASK_* flags; default 0 */
    op_task_fn on_finish;    /**< optional: called once with the context when the task is
                                  finished (ran, retired after cancellation, or completed),
                                  before its dependents are released and before op_task_wait
                                  and op_queue_wait return. op_task_wait on the task from its
                                  on_finish (or from the on_finish of a task that on_finish
                                  completed on the same thread) returns 0 at once; an on_finish
                                  that waits for another thread which waits for the task
                                  deadlocks. It must return normally (no longjmp, C++
                                  exception or pthread_exit out of it) */
} op_task_attr_t;

/** Fills *attr with the defaults: normal priority, inherited QoS, thread priority 0.5. */
void op_task_attr_init(op_task_attr_t *attr);

/** Creates a task. attr may be NULL for the defaults. Returns NULL with errno EINVAL (fn is
 *  NULL, or an attribute is out of range) or ENOMEM. The caller owns one reference. */
op_task_t *op_task_create(op_task_fn fn, void *context, const op_task_attr_t *attr);
void op_task_retain(op_task_t *task);
void op_task_release(op_task_t *task);

/** Makes `task` wait for `dependency` to finish (or to be retired after cancellation). O(1).
 *  Returns 0; EINVAL for NULL or a task depending on itself; EALREADY when `task` is already
 *  ready, running or finished (the dependency cannot hold it back and is not recorded);
 *  ENOMEM. A dependency that already finished is accepted and counts as satisfied. */
int op_task_add_dependency(op_task_t *task, op_task_t *dependency);

/** Removes a dependency that has not fired yet; may make `task` ready at once.
 *  Returns 0, or ENOENT when there is no such unfinished dependency. */
int op_task_remove_dependency(op_task_t *task, op_task_t *dependency);

/** Changes the band of the task. A task waiting in its queue's ready queue moves to the back of
 *  its new band (the old entry is skipped when reached); otherwise the band applies when it
 *  next becomes ready. Setting the band it has already does nothing. Returns 0 or EINVAL. */
int op_task_set_priority(op_task_t *task, op_priority_t priority);
/** The band set at creation or by op_task_set_priority. */
op_priority_t op_task_priority(const op_task_t *task);
/** Changes the task's thread priority (0.0 … 1.0, see op_task_attr_t.thread_priority) for its
 *  next run. Returns 0 or EINVAL (NaN). */
int op_task_set_thread_priority(op_task_t *task, double thread_priority);
/** The task's nice offset from its class for its thread priority (op_runtime_nice_for). */
int op_task_nice_delta(const op_task_t *task);
/** Changes the task's QoS (op_qos_t or OP_QOS_INHERIT) for its next run. Returns 0 or EINVAL. */
int op_task_set_qos(op_task_t *task, int qos);
/** The QoS set at creation or by op_task_set_qos (op_qos_t or OP_QOS_INHERIT). */
int op_task_qos(const op_task_t *task);
/** Whether `task` was submitted to `queue`: false before the submission completed. A comparison
 *  of addresses: once the task finished it keeps no hold on its queue, whose address may then
 *  be reused by another queue. */
bool op_task_is_on_queue(const op_task_t *task, const op_queue_t *queue);

/** Number of dependencies of `task` that have not finished yet (holds not counted). */
uint32_t op_task_unfinished_dependencies(const op_task_t *task);

/** Holds the task back like an unfinished dependency that no task stands for (a custom
 *  readiness condition). Returns 0, or EALREADY when the task is already ready, running or
 *  finished (the hold is not taken). Each successful hold needs one op_task_unhold. */
int op_task_hold(op_task_t *task);
/** Drops a hold taken with op_task_hold or op_task_defer; the task becomes ready when nothing
 *  holds it any more. Calling it without a hold breaks the count (a programmer error). */
void op_task_unhold(op_task_t *task);
/** From the task's own body only: when the body returns, the task does not finish but goes
 *  back to waiting, held once (as by op_task_hold); op_task_unhold makes it ready again and
 *  its body runs again. The worker keeps the queue slot for other tasks. Cancelling a deferred
 *  task makes it ready at once. Returns 0, or EINVAL when not called from the task's body. */
int op_task_defer(op_task_t *task);

/** Cancels: sets the flag (idempotent). A task that has not started becomes ready at once so
 *  its queue can retire it; it then counts as finished for its dependents. A running body
 *  is not interrupted: it may poll op_task_is_cancelled(). */
void op_task_cancel(op_task_t *task);

bool op_task_is_cancelled(const op_task_t *task);
/** True from the moment a worker takes the task until it is finished. */
bool op_task_is_executing(const op_task_t *task);
/** True once the task is finished: from the start of its finish, so also while its on_finish
 *  runs and before its dependents are counted down (op_task_finish_is_over says when that is
 *  done). */
bool op_task_is_finished(const op_task_t *task);
/** True once the task's finish is over: on_finish returned and its dependents were counted down
 *  (what op_task_wait waits for). A look that never blocks, for waits that must not block a
 *  thread. */
bool op_task_finish_is_over(const op_task_t *task);
/** True while the task is handed to the workers of its own class, outside its queue's slots: on
 *  a queue of OP_WIDTH_DEFAULT, a task whose own QoS is above the queue's counts against its
 *  class (one worker per CPU), not against the queue's width (a default width is counted per
 *  class, as Apple's runtime does). It stays true once such a task finished. False before it
 *  was handed out, for a task given back to the queue's slots (the queue was suspended or given
 *  an explicit width first) or back to waiting (op_task_defer: it is handed out again when
 *  ready), and for every other task. A width set while such a task runs does not count it. */
bool op_task_runs_outside_width(const op_task_t *task);
/** True when no unfinished dependency holds the task back, or it is cancelled (holds from
 *  op_task_hold / op_task_defer are not counted: they stand for the caller's own condition). */
bool op_task_is_ready(const op_task_t *task);
void *op_task_context(const op_task_t *task);
/** Replaces the context passed to the body and on_finish (for bindings that create the task
 *  before the object it points to is complete). Only before the task is submitted. */
void op_task_set_context(op_task_t *task, void *context);

/** Finishes a task that is not run by a queue's worker. For an OP_TASK_MANUAL_COMPLETION task:
 *  whose body has returned (this releases its queue slot); whose body is still running (it is
 *  finished now, the slot is released when the body returns); or that was submitted but not
 *  started, waiting in its queue or for its dependencies (it is finished now, releasing its
 *  dependents and waiters, and its queue retires it without calling its body when it reaches it,
 *  as a cancelled task: it never takes a slot). Or a task that was never submitted and that the
 *  caller ran itself. Returns 0; EALREADY when already finished; EBUSY when the task is submitted
 *  and is not a manual-completion task. */
int op_task_complete(op_task_t *task);

/** Blocks until `task` is finished and its finish is over (on_finish returned, its dependents
 *  were counted down: one run by hand right after is ready), or timeout_ns passes
 *  (OP_WAIT_FOREVER: no limit). Returns 0, ETIMEDOUT, EINVAL (task is NULL), or EDEADLK when
 *  called from the task's own body. From the task's on_finish, or from the on_finish of a task
 *  that on_finish completed on the same thread, it returns 0 at once, before the dependents are
 *  counted down (they are counted down after that on_finish returns). op_task_is_finished
 *  reads true from the start of the finish, while on_finish runs. */
int op_task_wait(op_task_t *task, int64_t timeout_ns);

/* ---------------------------------------------------------------------------------------------
 * QoS promotion (no priority inversion)
 *
 * Work that higher-QoS work waits for is raised to the waiter's class until it finished:
 *   - a task not started yet runs at the raised class (its drainer hands it to that class's
 *     workers with its slot), and its queue runs at that class meanwhile (its waiting slots go
 *     to that class's workers; on a serial queue so does everything ahead of it: the queue is
 *     raised as libdispatch raises a queue with a QoS override);
 *   - a body already running: its thread is reniced to the class's nice value until the body
 *     returns, then put back exactly — only where the process may lower nice values (CAP_SYS_NICE
 *     or RLIMIT_NICE, op_runtime_negative_nice_allowed); unprivileged a running body stays at
 *     its nice value (a thread may not lower another's nice), and only what has not started yet
 *     moves to the higher class's workers.
 * op_task_wait and op_queue_wait raise what they wait for to the waiting thread's class
 * (op_current_thread_qos). A task or job (op_queue_submit_job) submitted to a serial queue with
 * a higher QoS than the queue's raises the queue until it finished. Dependencies are not followed (edges do not keep the
 * dependencies alive): bindings walk them (the Swift layer does). OPERATIONS_QOS_PROMOTION=off
 * (read once) turns promotion off, and op_runtime_set_qos_promotion switches it at run
 * time: while it is off the calls below raise nothing (op_queue_promote returns ENOTSUP), and
 * what was raised before is still undone as usual.
 * ------------------------------------------------------------------------------------------- */

/** Raises `task` (the caller holds a reference) to at least class `qos` until it finished, as
 *  described above; never lowers. Returns 0 (also when the task already runs at or above
 *  `qos`, is finished, or promotion is off) or EINVAL. */
int op_task_promote(op_task_t *task, op_qos_t qos);
/** The class the task was promoted to (op_qos_t), or -1 when it was not (also after it
 *  finished: the value stays readable). */
int op_task_promoted_qos(const op_task_t *task);
/** Raises every task of `queue` that has not finished, and the queue's later tasks, to at least
 *  `qos` until op_queue_unpromote with the same class (counted: each promote that returned 0
 *  needs one unpromote). Returns 0, EINVAL, or ENOTSUP when promotion is off (nothing was
 *  raised: do not unpromote). */
int op_queue_promote(op_queue_t *queue, op_qos_t qos);
/** Ends one op_queue_promote(queue, qos) that returned 0. A class with no raise in force is
 *  left alone (an unmatched call changes nothing). */
void op_queue_unpromote(op_queue_t *queue, op_qos_t qos);
/** The class the queue's tasks start at now: its QoS, or the class it is promoted to. */
op_qos_t op_queue_effective_qos(const op_queue_t *queue);
/** The QoS class of the calling thread as a waiter: in a task body, the class the task runs at
 *  (its own, its queue's, or its promotion); on a worker between tasks, its pool's class;
 *  elsewhere, from the thread's nice value: -4 or lower userInteractive, -3 … -1
 *  userInitiated, 0 or above background (an ordinary thread has no QoS: its waits raise
 *  nothing; run the wait in an operation, or a Swift task with a priority, to raise). */
op_qos_t op_current_thread_qos(void);
/** Whether QoS promotion is on: OPERATIONS_QOS_PROMOTION (default on), or the last
 *  op_runtime_set_qos_promotion. */
bool op_runtime_qos_promotion(void);
/** Turns QoS promotion on or off from now on, over what OPERATIONS_QOS_PROMOTION chose: for
 *  experiments that compare both in one process (the perf harness's W12). Promotions already
 *  made stay until their work finished or their wait ended, and are undone as usual; calls that
 *  raise (op_task_promote, op_queue_promote, the waits' own raises) then do nothing. */
void op_runtime_set_qos_promotion(bool on);

/** The task whose body runs on the calling thread, or NULL. Not retained. */
op_task_t *op_task_current(void);
/** Makes op_task_current() report `task` on the calling thread and returns what it reported
 *  before (restore it afterwards). For bindings that run a task's work by hand, so that waits
 *  on the task from inside its own work fail with EDEADLK instead of hanging. */
op_task_t *op_task_swap_current(op_task_t *task);

/* ---------------------------------------------------------------------------------------------
 * Queues
 * ------------------------------------------------------------------------------------------- */

/** Creates a queue. label may be NULL (it is copied). width: OP_WIDTH_DEFAULT, or >= 0
 *  (1 = serial, 0 = start nothing until raised). Returns NULL with errno EINVAL or ENOMEM. */
op_queue_t *op_queue_create(const char *label, op_qos_t qos, int width);
void op_queue_retain(op_queue_t *queue);
/** Drops a handle. A queue with unfinished tasks lives on until its last task finished. */
void op_queue_release(op_queue_t *queue);
/** The queue's label (NULL when it has none). The string is owned by the queue and stays valid
 *  until the queue is destroyed, also after op_queue_set_label replaced it. */
const char *op_queue_label(const op_queue_t *queue);
/** Renames the queue, from any thread at any time (label may be NULL; it is copied): reports
 *  (op_queue_describe) and later op_queue_label calls show the new label; strings returned
 *  before stay valid until the queue is destroyed (a renamed queue keeps each label it had).
 *  Returns 0; EINVAL for a NULL queue; ENOMEM. */
int op_queue_set_label(op_queue_t *queue, const char *label);

/** Adds a task. It runs once its dependencies finished, in priority order among the queue's
 *  ready tasks, on a worker of the queue's QoS class. Returns 0; EINVAL for NULL; EBUSY when the
 *  task was already submitted (to any queue) or finished. */
int op_queue_submit(op_queue_t *queue, op_task_t *task);

/** Adds `count` tasks; all are in the queue before any of them is handed to a worker that is
 *  not already running this queue. Returns 0; EINVAL (NULL queue, array or task) or EBUSY (a
 *  task appears twice, or was already submitted to any queue or finished), and then nothing
 *  is submitted. A task that another thread completes by hand while the batch is being
 *  submitted is finished and left out. */
int op_queue_submit_batch(op_queue_t *queue, op_task_t *const *tasks, size_t count);

/** Creates and submits a default-attribute task in one call and keeps no handle (like
 *  dispatch_async_f). Returns 0 or ENOMEM. */
int op_queue_submit_f(op_queue_t *queue, op_task_fn fn, void *context);

/** Submits a job: fn(context) as a task of `queue` that nobody holds a handle to and that is
 *  never tracked, even on a tracking queue — not listed by op_queue_for_each, not cancelled by
 *  op_queue_cancel_all, not held back by barriers (for executors: Swift's TaskExecutor jobs).
 *  It counts against the width, waits while the queue is suspended, counts as unfinished for
 *  op_queue_wait, and runs at `qos` (op_qos_t, or OP_QOS_INHERIT for the queue's) in the normal
 *  band; on a serial queue a job whose `qos` is above the queue's raises the queue until it
 *  finished, as a task of that class does (see "QoS promotion"). Submitted from a job of the same queue it stays on that worker (its local run queue)
 *  and draws another worker only once a second one waits there: a task's next part is most
 *  often the one thing a job leaves behind (if that job then blocks where the core cannot see,
 *  the blocked-worker monitor draws a worker for it). The caller frees `context`, in fn. Returns 0,
 *  EINVAL (NULL, a bad qos) or ENOMEM. */
int op_queue_submit_job(op_queue_t *queue, op_task_fn fn, void *context, int qos);

/** Turns on tracking: the queue keeps its unfinished tasks in submission order so they can be
 *  listed (op_queue_for_each) and cancelled together (op_queue_cancel_all), and barriers can be
 *  added. It costs a few atomic operations per submit. `release_context` (may be NULL) is
 *  called once per tracked task, with its context, soon after the task finished, never while a
 *  listing can hand the context out: the place to drop what keeps the context alive. It runs on
 *  the thread that settles the task (the worker that ran or retired it, or op_task_complete when
 *  the body had returned), once that thread holds nothing of the queue — a worker at the end of
 *  its turn on the queue, or a background-class helper task (raised by a wait) that a worker
 *  hands a batch of them to every 256 / CPUs finishes (at least 32); any other thread before
 *  op_task_complete returns (inside a body, a listing's fn or an on_finish: once that ended) — so
 *  it may wait for the queue. op_queue_wait returns once the contexts of the tasks finished by
 *  then are released. Only before the first submit: returns 0, EINVAL, or EBUSY when the queue
 *  already holds tasks. */
int op_queue_set_tracking(op_queue_t *queue, op_task_fn release_context);

/** Calls fn(task, arg) for each unfinished tracked task that is not a barrier, oldest first.
 *  Task and context stay valid during the call. Listings of one queue run one at a time; fn
 *  must not list, cancel all on, or add a barrier to the same queue. No-op without tracking. */
void op_queue_for_each(op_queue_t *queue, void (*fn)(op_task_t *task, void *arg), void *arg);

/** Cancels every unfinished tracked task, barriers included (jobs are not tracked: they run).
 *  Returns 0, or EINVAL for NULL or a queue without tracking (op_queue_set_tracking): such a
 *  queue keeps no list of its tasks, so nothing is cancelled; cancel its tasks one by one
 *  (op_task_cancel) or turn tracking on before the first submit. (It returned void, doing
 *  nothing on such a queue; a caller that ignores the result still compiles and links.) */
int op_queue_cancel_all(op_queue_t *queue);

/** Submits a barrier: `task` starts only after every task submitted to the queue before it
 *  finished, and every task submitted after it waits until it finished. Needs tracking.
 *  O(unfinished tasks). Returns 0; EINVAL without tracking; EBUSY as op_queue_submit. */
int op_queue_submit_barrier(op_queue_t *queue, op_task_t *task);

/** Sets the width: OP_WIDTH_DEFAULT or >= 0. Raising it starts waiting tasks at once; lowering
 *  it stops no running task. Returns 0 or EINVAL. */
int op_queue_set_width(op_queue_t *queue, int width);
int op_queue_width(const op_queue_t *queue);

/** While suspended no task of the queue starts; running ones go on. Resuming starts tasks. */
void op_queue_set_suspended(op_queue_t *queue, bool suspended);
bool op_queue_is_suspended(const op_queue_t *queue);

/** QoS of the queue; tasks submitted afterwards are handed to that class's workers. */
int op_queue_set_qos(op_queue_t *queue, op_qos_t qos);
op_qos_t op_queue_qos(const op_queue_t *queue);

/** Unfinished tasks of the queue (waiting, ready or running), a snapshot. Each worker publishes
 *  its finishes in batches of up to 32 (and when it leaves the queue), so the count may run up to
 *  32 per draining worker behind while a queue drains, and a worker whose bodies submit to the
 *  queue they run on counts up to 15 more ahead. */
size_t op_queue_unfinished(const op_queue_t *queue);

/** Blocks until the queue holds no unfinished task, or timeout_ns passes. Tasks added
 *  meanwhile extend the wait. On a tracking queue it also waits, within the same timeout, until
 *  the contexts of its finished tasks are released (op_queue_set_tracking) — not when called
 *  from a release_context itself. Returns 0 or ETIMEDOUT (also in a child forked while a
 *  context of the queue waited in another thread for release: never released there); EDEADLK
 *  when called from a body running on this queue. */
int op_queue_wait(op_queue_t *queue, int64_t timeout_ns);

/** Calls fn(context) once, the next time the queue holds no unfinished task: at once, on the
 *  calling thread, when it holds none now; otherwise on the thread that finishes the last task
 *  (after the op_queue_wait waiters are woken, before the queue's context is released), so fn
 *  must be short and must not block. Notices run in the order they were registered. It never
 *  blocks, so it may be called from anywhere, a body of the queue included. The caller keeps a
 *  handle on the queue until fn has run. Unlike op_queue_wait it does not wait for the release
 *  of finished tasks' contexts (op_queue_set_tracking): those of the last tasks may still be on
 *  their way when fn runs. Returns 0, EINVAL (NULL) or ENOMEM. */
int op_queue_notify_idle(op_queue_t *queue, op_task_fn fn, void *context);

/** The queue whose task body runs on the calling thread, or NULL. Not retained. */
op_queue_t *op_queue_current(void);

/** Makes op_queue_current() report `queue` on the calling thread and returns what it reported
 *  before (restore it afterwards). For bindings that run a queue's work on threads of their own
 *  (a dispatch queue, the main thread). */
op_queue_t *op_queue_swap_current(op_queue_t *queue);

/** Places the queue: from now on its tasks start only on workers pinned to CPUs of `cpus`.
 *  Those workers (one per CPU of the set, per QoS class) are made on first use, pinned and at
 *  their class's nice value as the default workers are; spares that stand in for them while
 *  bodies block keep to the set. NULL lifts the placement. Tasks already running finish where
 *  they are; waiting ones start on the new set. Placement composes with everything else (QoS,
 *  thread priority, width, priorities, suspension, waits, dependencies on any queue).
 *  Returns 0; EINVAL for NULL queue, an empty set, or a CPU outside the process's affinity
 *  mask (the placement stays as it was); ENOMEM. Any thread, any time. */
int op_queue_set_cpus(op_queue_t *queue, const cpu_set_t *cpus);
/** op_queue_set_cpus with a list of CPU ids (count 0 lifts the placement). On EINVAL for a CPU
 *  the process may not run on, *bad_cpu (if not NULL) is that CPU. */
int op_queue_set_cpu_list(op_queue_t *queue, const int *cpus, size_t count, int *bad_cpu);
/** Places the queue on the usable CPUs of NUMA node `node` (libnuma's numbering). Without
 *  NUMA every usable CPU is node 0. Returns 0; EINVAL for a node with no usable CPU (one that
 *  does not exist, or any but 0 without NUMA): the placement stays as it was; ENOMEM. */
int op_queue_set_numa_node(op_queue_t *queue, int node);
/** The placement: 0 with the set in *out, or ENOENT when the queue is not placed (EINVAL).
 *  A cpu_set_t holds CPUs 0 … CPU_SETSIZE-1 only; op_queue_cpu_list names any CPU. */
int op_queue_cpus(const op_queue_t *queue, cpu_set_t *out);
/** The placement as CPU ids, ascending: writes at most `capacity` and returns how many there
 *  are (0: not placed). */
size_t op_queue_cpu_list(const op_queue_t *queue, int *cpus, size_t capacity);

/** Writes a one-line description of the queue's scheduling state into `buffer` (NUL-terminated,
 *  truncated to `size`): unfinished tasks, claimed slots and idle drainers against the width,
 *  suspension, QoS, whether ready tasks wait (in its bands or stash) and whether it is marked as
 *  waiting behind its width for the blocked-worker monitor. For diagnosing a queue that seems
 *  stuck; a snapshot of relaxed reads. Returns the length it needed (as snprintf). */
size_t op_queue_describe(const op_queue_t *queue, char *buffer, size_t size);

/** Attaches a context to the queue (for language bindings). While the queue has unfinished
 *  tasks the core holds the context: `retain(context)` is called when the queue goes from idle
 *  to busy, `release(context)` when it goes back to idle (after waking waiters, on the thread
 *  that finished the last task). Either callback may be NULL. Set it before the first submit. */
void op_queue_set_context(op_queue_t *queue, void *context, op_task_fn retain, op_task_fn release);
void *op_queue_context(const op_queue_t *queue);

/* ---------------------------------------------------------------------------------------------
 * Runtime: topology, nice values, introspection
 * ------------------------------------------------------------------------------------------- */

typedef struct op_topology {
    int cpu_count;               /**< CPUs in the process's affinity mask = workers per class */
    int node_count;              /**< NUMA nodes those CPUs lie on (1 without NUMA) */
    bool numa;                   /**< true when libnuma is used for topology and pinning */
    const char *fallback_reason; /**< why NUMA is not used, or NULL */
    /** The CPU limit of the process's cgroup in CPUs of time (quota / period of cgroup v2
     *  cpu.max or v1 cpu.cfs_quota_us / cpu.cfs_period_us, the tightest level up the
     *  hierarchy), e.g. 1.5; 0 when there is none (or its file could not be parsed). */
    double cpu_quota;
    /** What OP_WIDTH_DEFAULT means for a new queue: min(cpu_count, ceil(cpu_quota)), at least 1
     *  (cpu_count without a quota). Workers stay one per CPU of the affinity mask. */
    int default_width;
    /** Why a cgroup CPU limit file was ignored (unreadable or malformed; the width then follows
     *  cpu_count and the message is also printed once on stderr), or NULL. */
    const char *cpu_quota_error;
} op_topology_t;

/** Reads the topology and the cgroup CPU limit (starts the runtime, not the workers). */
void op_runtime_topology(op_topology_t *out);
/** CPU id and node index of the index-th usable CPU (0 … cpu_count-1). Returns 0 or EINVAL. */
int op_runtime_cpu(int index, int *cpu, int *node);

/** Copies the per-class nice table (indexed by op_qos_t). Default {10, 2, 0, -2, -4}. */
void op_runtime_nice_table(int table[OP_QOS_COUNT]);
/** Replaces the table; each value in -20 … 19. Running workers take their new value before
 *  their next task. Returns 0 or EINVAL. */
int op_runtime_set_nice_table(const int table[OP_QOS_COUNT]);

/** Parses an OPERATIONS_QOS_NICE spec ("userInteractive=-8,background=15") over the values
 *  already in `table`. Returns 0, or EINVAL leaving `table` unchanged and writing a message that
 *  names the bad entry to `error` (may be NULL). */
int op_runtime_parse_nice_spec(const char *spec, int table[OP_QOS_COUNT], char *error,
                               size_t error_size);
/** The message for a rejected OPERATIONS_QOS_NICE at start-up, or NULL. */
const char *op_runtime_nice_env_error(void);

/** The nice a task of class `qos` with `thread_priority` asks for:
 *  table[qos] + lround((0.5 - thread_priority) * 10), limited to -20 … 19. So 0.5 runs at the
 *  class's nice, 1.0 five steps higher priority (nice - 5), 0.0 five steps lower (nice + 5). */
int op_runtime_nice_for(op_qos_t qos, double thread_priority);

/** Where the nice table came from. */
typedef enum op_nice_table_kind {
    /** The default, libdispatch's {10, 2, 0, -2, -4}. */
    OP_NICE_TABLE_DEFAULT = 0,
    /** The default moved up so that its lowest entry is op_runtime_nice_floor(): chosen at
     *  start-up when the process may not go below it (no CAP_SYS_NICE, RLIMIT_NICE too low) and
     *  OPERATIONS_QOS_NICE is not set. From a nice-0 process {14, 6, 4, 2, 0}: the classes keep
     *  their differences (their CPU shares against each other), and the process's threads run
     *  below other processes' nice-0 threads. Announced once on stderr (OPERATIONS_NICE_WARNINGS). */
    OP_NICE_TABLE_SHIFTED = 1,
    /** From OPERATIONS_QOS_NICE. */
    OP_NICE_TABLE_ENVIRONMENT = 2,
    /** Set with op_runtime_set_nice_table. */
    OP_NICE_TABLE_SET = 3,
} op_nice_table_kind_t;
/** Where the current nice table came from. */
op_nice_table_kind_t op_runtime_nice_table_kind(void);
/** The lowest nice value the core's workers can run at: the lower of op_runtime_lowest_nice()
 *  and the nice of the thread that started the runtime (workers start there, and without
 *  privilege never go below it). -20 with CAP_SYS_NICE. */
int op_runtime_nice_floor(void);

/** True when this process may lower nice values below 0 (CAP_SYS_NICE or RLIMIT_NICE). */
bool op_runtime_negative_nice_allowed(void);
/** The lowest nice value the process may set at any time (-20 with CAP_SYS_NICE). */
int op_runtime_lowest_nice(void);
/** True once a wanted nice value had to be clamped because privilege was missing (whether or
 *  not it was said on stderr). */
bool op_runtime_nice_clamped(void);
/** Turns the one-line stderr report on or off (default on: OPERATIONS_NICE_WARNINGS). The line
 *  is printed once per process, and only when something asked for is changed for lack of
 *  privilege: a nice value clamped (a task's or queue's class, a thread priority), at the first
 *  clamp; the shifted table (OP_NICE_TABLE_SHIFTED), once a class whose own value lies below
 *  what the process may set is used (a process running only default-QoS work is told
 *  nothing); a refused short time slice (op_runtime_short_time_slice), once userInitiated or
 *  userInteractive is used. Call it before the first task to keep stderr quiet: a report that
 *  comes due while it is off is dropped. */
void op_runtime_set_clamp_warning(bool enabled);
/** Whether that report is on (OPERATIONS_NICE_WARNINGS, then op_runtime_set_clamp_warning). */
bool op_runtime_clamp_warning(void);

/** The time slice the workers of the default, userInitiated and userInteractive classes asked
 *  the kernel for and got, in ns (100 000: their wake-ups preempt what runs on their CPU, lower-
 *  class work or the thread that woke them, Linux 6.12+); 0 when they keep the kernel's default
 *  (OPERATIONS_SHORT_SLICE=off, a thread under a real-time or the idle policy, which is not
 *  asked, or a kernel that refused or ignored it, reported once on stderr); -1 before any worker
 *  of those classes started. Utility and background workers keep the default. */
int64_t op_runtime_short_time_slice(void);
/** How long, in milliseconds, the workers of a placed queue's pool (op_queue_set_cpus) stay
 *  without work before they leave: OPERATIONS_PLACED_POOL_IDLE_MS (1 … 9223372036854), read
 *  once, at the first call or the first time such a worker idles; 10000 when unset, or when the
 *  value is not a whole number in that range (then said once on stderr). */
int64_t op_runtime_placed_pool_idle_ms(void);
/** Starts the workers of a class now (they otherwise start with the first task). */
void op_runtime_start_workers(op_qos_t qos);
/** Workers running for a class (0 before they started). */
int op_runtime_worker_count(op_qos_t qos);
/** Spare threads serving a class now, and (in *peak, may be NULL) the most at once. A body that
 *  blocks in op_task_wait or op_queue_wait gets a spare thread to stand in for its worker while
 *  it sleeps, so nested waits cannot use up a class's workers (a default-width queue lends the
 *  sleeping task's slot meanwhile). A body that blocks anywhere else (a lock, a condition
 *  variable, I/O, sleep) gets the same once the runtime's monitor thread sees it asleep while
 *  work waits (in its pool, in a worker's local run queue, or behind the width of a
 *  default-width queue — its own, waiting for a task submitted after it, say): 10 to 20 ms after
 *  it blocked; a default-width queue then runs as many tasks as its bodies block, beyond the CPU
 *  count. A queue of explicit width lends no slot. A spare stops serving as soon as no blocked
 *  thread needs it (between tasks, or within 0.2 s when parked) and never takes work from the
 *  pinned workers otherwise; it then lingers parked for 0.5 s, so that the next blocking wait
 *  reuses its thread instead of creating one, and leaves (lingering spares are not counted
 *  here). At most 512 per class. */
int op_runtime_spare_workers(op_qos_t qos, int *peak);

typedef struct op_worker_info {
    int tid;          /**< kernel thread id (for getpriority / sched_getaffinity) */
    int cpu;          /**< the CPU it is pinned to */
    int node;         /**< node index of that CPU */
    int class_nice;   /**< nice it runs at between tasks, after clamping */
    uint64_t tasks;   /**< tasks it has run */
} op_worker_info_t;
/** Describes worker `index` of class `qos`. Returns 0 or EINVAL. */
int op_runtime_worker_info(op_qos_t qos, int index, op_worker_info_t *out);

/** Writes a multi-line description of the runtime's threads into `buffer` (NUL-terminated,
 *  truncated to `size`): the monitor (asleep or awake), how many queues wait behind their width,
 *  and per pool (each class, each placed set) its tokens, spares and blocked count, how many
 *  wake-ups of a submitter's own CPU's worker had not run when the wake returned and were backed
 *  by a second one on another CPU ("N wake-ups backed on another CPU"), and per
 *  worker its thread id, tasks run and whether it runs a task, is in a visible wait, or was
 *  counted blocked by the monitor (with or without its slot lent). For diagnosing a process that
 *  seems stuck; a snapshot of relaxed reads. Returns the length it needed (as snprintf). */
size_t op_runtime_describe(char *buffer, size_t size);

/* ---- counters: always on, summed on read (issue 35) ---------------------------------------- */

/** What a worker thread is doing, in op_worker_counters_t.state. */
typedef enum op_worker_state {
    OP_WORKER_IDLE = 0,    /**< between tasks: looking for work or parked */
    OP_WORKER_RUNNING = 1, /**< running a task's body */
    OP_WORKER_WAITING = 2, /**< in a body, in a wait the runtime sees (op_task_wait, op_queue_wait) */
    OP_WORKER_BLOCKED = 3, /**< in a body, counted blocked by the monitor (asleep where the runtime
                                cannot see: a lock, I/O); a spare stands in for it */
} op_worker_state_t;

/** One worker thread's counters (a pinned worker or a spare). Each counter is kept on the
 *  worker's own cache line by the worker itself, so keeping them costs no shared write; a
 *  snapshot sums relaxed reads (a count may lag by the event under way). */
typedef struct op_worker_counters {
    int qos;          /**< its pool's class, or -1 for a pool made for a nice value */
    int pool_nice;    /**< that nice value; OP_NICE_UNCHANGED for a class's pool */
    bool placed;      /**< its pool is placed on a CPU set (op_queue_set_cpus) */
    bool spare;       /**< a spare standing in for a blocked thread (then `cpu` is -1) */
    int cpu;          /**< the CPU it is pinned to; -1 for a spare */
    int tid;          /**< its kernel thread id; 0 while it has no thread */
    int class_nice;   /**< the nice value it runs at between tasks */
    op_worker_state_t state;
    uint64_t serial;  /**< the serial of the body it runs or ran last: one more at each body it
                           begins (a task's, one it carries away, a batch of context releases);
                           `tasks` counts the tasks */
    uint64_t task_id; /**< the task it runs now (its address, as the trace's "task" names it); 0
                           between tasks */
    int64_t running_ns; /**< how long that body has run, while the latency histograms are on (they
                             time each start); -1 otherwise or between tasks */
    uint64_t tasks;   /**< tasks it has run or retired (a cancelled one) */
    uint64_t steals;  /**< tasks it took from another worker's local run queue */
    uint64_t parks;   /**< times it slept for want of work */
    uint64_t wakeups; /**< of those, ended by a wake-up (not a timeout) */
    uint64_t carries; /**< bodies it carried to another pool's workers to run at their nice value
                           (a task of another class, or with a thread priority) */
    uint64_t rescues; /**< times the monitor counted it blocked in a body and a spare stood in */
    uint64_t promotions; /**< bodies reniced while they ran on it (QoS promotion) */
} op_worker_counters_t;

/** Writes the counters of every worker and spare of every pool into `out` (at most `capacity`
 *  entries; `out` may be NULL when `capacity` is 0) and returns how many there are, which may be
 *  more than `capacity` (call again with a bigger array). */
size_t op_runtime_worker_counters(op_worker_counters_t *out, size_t capacity);

/** The runtime's counters, summed over every worker and spare of every pool, those that exited
 *  included: they never go down. */
typedef struct op_runtime_counters {
    uint64_t tasks, steals, parks, wakeups, carries, rescues, promotions;
    uint64_t spares_started; /**< spare threads started for blocked workers (a reused one: once) */
    uint32_t workers;        /**< worker threads running now */
    uint32_t spares;         /**< spare threads alive now (lingering ones included) */
} op_runtime_counters_t;
/** Fills `out` (EINVAL when NULL, else 0). */
int op_runtime_counters(op_runtime_counters_t *out);

/** A queue's counters since it was made. `started`: bodies begun (a deferred task's every run);
 *  `finished`: tasks that ended (ran, were cancelled, or were completed by hand), counted as the
 *  queue settles them; `cancelled`: those of them that ended cancelled (whether or not their body
 *  had started); `submitted`: `finished` plus the unfinished tasks (op_queue_unfinished), so a
 *  submit costs nothing more. Kept by the threads that drain the queue in their own registers
 *  and added when they leave it, so a running queue's snapshot lags by a drainer's batch (and
 *  `submitted` may count a drainer's credit of up to 16 units); an idle queue's is exact. */
typedef struct op_queue_counters {
    uint64_t submitted, started, finished, cancelled;
} op_queue_counters_t;
/** Fills `out` with `queue`'s counters. Returns 0, or EINVAL. */
int op_queue_counters(const op_queue_t *queue, op_queue_counters_t *out);

/** op_runtime_describe as one JSON object (RFC 8259), for tools: {"monitor": {...}, "pools":
 *  [{"class", "nice", "placed", "tokens_waiting", "blocked", "spares", "spares_started",
 *  "workers": [{"thread", "tid", "cpu", "spare", "state", "nice", "task" (its running task's
 *  address or null), "running_us" (how long it has run, with the latency histograms on, else
 *  null), "task_serial", "tasks", "steals", "parks", "wakeups", "carries", "rescues",
 *  "promotions"}]}], "counters": {...}}.
 *  Returns the length it needed (as snprintf); `buffer` holds a NUL-terminated prefix. */
size_t op_runtime_describe_json(char *buffer, size_t size);
/** op_queue_describe as one JSON object: {"label", "qos", "width", "running", "unfinished",
 *  "suspended", "counters": {...}}. Returns the length it needed (as snprintf). */
size_t op_queue_describe_json(const op_queue_t *queue, char *buffer, size_t size);

/* ---- latency histograms: opt-in at run time (issue 35) ------------------------------------- */

/** Buckets of an op_histogram_t: values below 8 ns one each, then four per power of two (a
 *  bucket is at most a quarter of its lower bound wide), up to 2^64 ns. */
#define OP_HISTOGRAM_BUCKETS 252
/** A histogram of durations in nanoseconds: how many (`count`), their sum and maximum, and the
 *  count in each bucket (op_histogram_bucket_bounds gives a bucket's range). */
typedef struct op_histogram {
    uint64_t count;
    uint64_t sum_ns;
    uint64_t max_ns;
    uint64_t buckets[OP_HISTOGRAM_BUCKETS];
} op_histogram_t;
/** The smallest and largest value bucket `index` counts (both 0 outside 0 … OP_HISTOGRAM_BUCKETS-1). */
void op_histogram_bucket_bounds(int index, uint64_t *low, uint64_t *high);
/** The value at `percentile` (0 … 100) of `histogram`: the upper bound of the bucket holding it
 *  (at most the maximum). 0 for an empty histogram. */
uint64_t op_histogram_percentile(const op_histogram_t *histogram, double percentile);

/** Switches the latency histograms on or off for the whole process (default off; the
 *  environment variable OPERATIONS_HISTOGRAMS=on switches them on at start-up). While on, each
 *  task that starts records its queue wait (from when it became ready: submitted with no
 *  unfinished dependency, or its last dependency finished, to its body's start) and each body its
 *  run time (start to return), into its queue's histograms and its class's (the class it ran
 *  at). Off, they cost one load and a branch per task. A queue's histograms are allocated at its
 *  first task recorded. A task's ready time is kept in a fixed table of 16 384 slots chosen by
 *  its address: when two tasks ready at once share a slot, the earlier one's wait goes
 *  unmeasured (counted in op_runtime_unmeasured_waits): about N in 16 384 waits with N tasks
 *  ready at once (2 % at 300). */
void op_runtime_set_latency_histograms(bool on);
/** Whether the latency histograms record now. */
bool op_runtime_latency_histograms(void);
/** Queue waits that could not be measured (their ready time was overwritten in the table by
 *  another task's: more ready at once than the table holds). */
uint64_t op_runtime_unmeasured_waits(void);
/** Copies `queue`'s histograms (zeros when none was recorded yet); either pointer may be NULL.
 *  Returns 0 or EINVAL. */
int op_queue_latency_histograms(const op_queue_t *queue, op_histogram_t *wait, op_histogram_t *run);
/** Copies class `qos`'s histograms (every queue's tasks that ran at that class). 0 or EINVAL. */
int op_runtime_class_latency_histograms(op_qos_t qos, op_histogram_t *wait, op_histogram_t *run);

/* ---- the trace: a timeline for Perfetto (issue 35) ----------------------------------------- */

/** Starts recording a trace that op_trace_stop writes to `path` as Chrome Trace Event JSON (open
 *  it in ui.perfetto.dev or chrome://tracing): a track per thread (worker threads are named by
 *  class and CPU), a slice per body named by its operation's name (op_trace_name_task) with its
 *  queue, class, nice value, queue priority and nice delta; flow arrows from a submit to the
 *  start and from a dependency's finish to its dependent's start; instant events for
 *  cancellations, promotions, carries, monitor rescues and spares; a counter track of unfinished
 *  tasks per queue. `flight_bytes` 0 keeps the whole trace (up to 2^20 events a thread; more are
 *  dropped and counted); otherwise a flight recorder that keeps about the latest `flight_bytes`
 *  (each thread a ring of its latest events) and writes them on op_trace_write or
 *  op_trace_stop. Each thread records into a buffer of its own, with no lock. While no trace
 *  records, an observation point costs one load and a branch. The environment variable
 *  OPERATIONS_TRACE=<file> starts one when the library loads and writes it at the process's normal
 *  exit (OPERATIONS_TRACE_FLIGHT_MB=<n> for the flight recorder). Returns 0, EINVAL (no path),
 *  EALREADY (a trace records), ENOMEM. */
int op_trace_start(const char *path, size_t flight_bytes);
/** Stops recording and writes the trace to op_trace_start's path. Returns 0, EALREADY (none
 *  records), or the errno of creating or writing the file. */
int op_trace_stop(void);
/** Writes what the current (or last) trace holds to `path` (NULL: op_trace_start's), without
 *  stopping: the flight recorder's dump on demand. Returns 0, EINVAL, or a file's errno. */
int op_trace_write(const char *path);
/** Whether a trace records now. */
bool op_trace_is_recording(void);
/** While a trace records: names `task`'s slices (its operation's name, truncated to 27 bytes).
 *  Call before submitting it. Nothing while no trace records. */
void op_trace_name_task(op_task_t *task, const char *name);

/** The calling thread's kernel thread id (gettid). */
int op_current_thread_id(void);

/** The nice value the calling thread runs at (getpriority on its thread id). */
int op_current_thread_nice(void);
/** The CPUs the calling thread may run on (its affinity), ascending: writes at most `capacity`
 *  ids and returns how many there are (0 on failure). */
size_t op_current_thread_cpus(int *cpus, size_t capacity);

/** Returned by op_thread_priority_apply when it changed nothing. */
#define OP_NICE_UNCHANGED (-1000)
/** Moves the calling thread to op_runtime_nice_for(qos, thread_priority), clamped for the
 *  process's privilege as workers are. Returns the previous nice for
 *  op_thread_priority_restore, or OP_NICE_UNCHANGED when nothing changed (no system call is
 *  made to restore then). Any thread may call it, for itself. */
int op_thread_priority_apply(op_qos_t qos, double thread_priority);
/** Puts the calling thread back at `previous` (from op_thread_priority_apply). */
void op_thread_priority_restore(int previous);

/* ---------------------------------------------------------------------------------------------
 * Building blocks, public for tests and for C code that wants them on their own
 * ------------------------------------------------------------------------------------------- */

/** Lock-free multi-producer multi-consumer FIFO with five priority bands (see ready_queue.c).
 *  Items are non-NULL pointers; the queue neither owns nor frees them. Never full: it grows. */
typedef struct op_ready_queue op_ready_queue_t;
op_ready_queue_t *op_ready_queue_create(void);
/** Destroys the queue; no other thread may use it any more. Items still in it are dropped. */
void op_ready_queue_destroy(op_ready_queue_t *queue);
void op_ready_queue_push(op_ready_queue_t *queue, void *item, op_priority_t band);
/** Takes the oldest item of the highest non-empty band, or returns NULL. */
void *op_ready_queue_pop(op_ready_queue_t *queue);
/** False only when every band was seen empty (a hint under concurrency). */
bool op_ready_queue_maybe_nonempty(const op_ready_queue_t *queue);

/** A worker's local run queue (see local_run_queue.c): a bounded ring of 256 non-NULL pointers.
 *  One thread, the owner, pushes and pops (FIFO); any other thread may steal half of it into
 *  its own (empty) ring, but only while the ring serves the `owner_tag` the thief names
 *  (op_local_run_queue_serve; retiring starts a new generation, and thieves that looked before
 *  take nothing). Neither owns nor frees the pointers. */
typedef struct op_local_run_queue op_local_run_queue_t;
op_local_run_queue_t *op_local_run_queue_create(void);
/** No other thread may use it any more. */
void op_local_run_queue_destroy(op_local_run_queue_t *ring);
/** Owner: appends; false when full (256). */
bool op_local_run_queue_push(op_local_run_queue_t *ring, void *item);
/** Owner: takes the oldest item, or NULL. */
void *op_local_run_queue_pop(op_local_run_queue_t *ring);
/** Owner of the empty ring: its items now belong to `owner_tag` (compared, never dereferenced). */
void op_local_run_queue_serve(op_local_run_queue_t *ring, const void *owner_tag);
/** Owner of the empty ring: it serves nothing, and a new generation begins. */
void op_local_run_queue_retire(op_local_run_queue_t *ring);
/** Moves half (rounded up) of `victim`'s oldest items, if it serves `owner_tag`, into the
 *  calling thread's own empty ring `thief`, in order; returns how many. */
uint32_t op_local_run_queue_steal(op_local_run_queue_t *victim, op_local_run_queue_t *thief,
                                  const void *owner_tag);

/** Event count for parking threads without lost wake-ups (see parking.c):
 *  key = op_event_prepare_wait(e); if (condition) op_event_cancel_wait(e);
 *  else op_event_wait(e, key, timeout). Notifiers change the condition, then op_event_notify. */
typedef struct op_event op_event_t;
op_event_t *op_event_create(void);
void op_event_destroy(op_event_t *event);
uint32_t op_event_prepare_wait(op_event_t *event);
void op_event_cancel_wait(op_event_t *event);
/** Sleeps until notified after prepare_wait returned `key`, or timeout. Returns 0 or ETIMEDOUT. */
int op_event_wait(op_event_t *event, uint32_t key, int64_t timeout_ns);
/** Wakes up to `count` waiters; cheap (no syscall) when nobody waits. */
void op_event_notify(op_event_t *event, int count);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* OPERATIONS_CORE_H */
