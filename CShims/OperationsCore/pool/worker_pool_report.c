/*
 * worker_pool_report.c — what the worker pools say about themselves: the workers of a class
 * (op_runtime_worker_count / op_runtime_worker_info: thread ids, CPUs, nice values, tasks run)
 * and the diagnostic report (op_runtime_describe: every pool, its tokens, searching, blocked
 * and spare counts, and what each worker and spare is doing), its JSON form
 * (op_runtime_describe_json), and the counters (op_runtime_counters, op_runtime_worker_counters:
 * each worker's own, kept on its own line, summed here). Snapshots: every read is relaxed or an
 * acquire of a published pool, and nothing here changes the pools, except op_worker_counts_retire,
 * which a spare calls as it exits.
 */
#include "pool_private.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void op_runtime_start_workers(op_qos_t qos) {
    (void)op_pool_for(qos); /* returns once the pool's workers are running */
}

int op_runtime_worker_count(op_qos_t qos) {
    if ((unsigned)qos >= OP_QOS_COUNT) return 0;
    op_pool *pool = atomic_load_explicit(&op_pools[qos], memory_order_acquire);
    return pool ? atomic_load_explicit(&pool->started, memory_order_acquire) : 0;
}

int op_runtime_worker_info(op_qos_t qos, int index, op_worker_info_t *out) {
    if ((unsigned)qos >= OP_QOS_COUNT || !out) return EINVAL;
    op_pool *pool = atomic_load_explicit(&op_pools[qos], memory_order_acquire);
    if (!pool || index < 0 || index >= atomic_load_explicit(&pool->started, memory_order_acquire)) {
        return EINVAL;
    }
    op_worker *worker = &pool->workers[index];
    if (atomic_load_explicit(&worker->tid, memory_order_relaxed) == 0) return EINVAL;
    out->tid = atomic_load_explicit(&worker->tid, memory_order_relaxed);
    out->cpu = worker->cpu;
    out->node = worker->node;
    out->class_nice = atomic_load_explicit(&worker->class_nice, memory_order_relaxed);
    out->tasks = op_count_read(&worker->counts.tasks);
    return 0;
}

/* ---- diagnostics ------------------------------------------------------------------------------ */

static void op_report_worker(op_report *report, const char *kind, op_worker *worker) {
    /* relaxed: a snapshot. */
    uint64_t run = atomic_load_explicit(&worker->run, memory_order_relaxed);
    int tid = atomic_load_explicit(&worker->tid, memory_order_relaxed);
    if (tid == 0) {
        op_report_add(report, "    %s %d: no thread\n", kind, worker->index);
        return;
    }
    op_report_add(report, "    %s %d: tid %d, %llu tasks, %s%s%s%s%s\n", kind, worker->index, tid,
                  (unsigned long long)op_count_read(&worker->counts.tasks),
                  (run & OP_RUN_IN_TASK) ? "in a task" : "between tasks",
                  (run & OP_RUN_VISIBLE_WAIT)
                      ? ((run & OP_RUN_RELENT) ? ", in a visible wait (slot lent by the monitor)"
                                               : ", in a visible wait")
                      : "",
                  (run & OP_RUN_LENT) ? ", counted blocked by the monitor" : "",
                  (run & OP_RUN_LENT) ? (worker->monitor_lent ? " (slot lent)" : " (slot not lent)") : "",
                  (run & OP_RUN_LENDING) ? ", being counted" : "");
}

static void op_report_pool(op_report *report, op_pool *pool) {
    if (!pool) return;
    /* relaxed: a snapshot. */
    uint64_t balance = atomic_load_explicit(&pool->balance, memory_order_relaxed);
    uint64_t idle = atomic_load_explicit(&pool->idle_spares, memory_order_relaxed);
    char kind[48];
    if (pool->fixed_nice != OP_NICE_UNCHANGED) {
        snprintf(kind, sizeof kind, "at nice %d", pool->fixed_nice);
    } else {
        snprintf(kind, sizeof kind, "of class %s", op_qos_name(pool->qos));
    }
    op_report_add(report,
                  "  pool %s%s: %d workers (%d with a thread), tokens %s, searching %d,"
                  " %u blocked, %u spares, %u lingering (%u of them claimed),"
                  " %llu wake-ups backed on another CPU\n",
                  kind, pool->placement ? " (placed)" : "", pool->size,
                  atomic_load_explicit(&pool->created, memory_order_relaxed),
                  op_pool_has_tokens(pool) ? "waiting" : "none",
                  atomic_load_explicit(&pool->searching, memory_order_relaxed),
                  OP_BALANCE_BLOCKED(balance), OP_BALANCE_SPARES(balance),
                  OP_IDLE_SPARES(idle), OP_IDLE_CLAIMS(idle),
                  (unsigned long long)atomic_load_explicit(&pool->backed_wakes, memory_order_relaxed));
    for (int i = 0; i < pool->size; i++) op_report_worker(report, "worker", &pool->workers[i]);
    pthread_mutex_lock(&pool->spares_lock);
    for (op_worker *spare = pool->spares; spare; spare = spare->next_spare) {
        /* relaxed: a snapshot. */
        op_report_worker(report,
                         atomic_load_explicit(&spare->lingering, memory_order_relaxed)
                             ? "spare (lingering)" : "spare",
                         spare);
    }
    pthread_mutex_unlock(&pool->spares_lock);
}

size_t op_runtime_describe(char *buffer, size_t size) {
    op_report report = {.buffer = buffer, .size = size, .length = 0};
    if (size) buffer[0] = '\0';
    op_report_add(&report, "monitor %s; %d queue(s) waiting behind their width\n",
                  op_monitor_is_asleep() ? "asleep" : "awake",
                  atomic_load_explicit(&op_queues_waiting_at_width, memory_order_relaxed));
    for (int qos = 0; qos < OP_QOS_COUNT; qos++) {
        op_report_pool(&report, atomic_load_explicit(&op_pools[qos], memory_order_acquire));
    }
    for (op_pool *pool = atomic_load_explicit(&op_placed_pools, memory_order_acquire); pool;
         pool = pool->next_placed) {
        op_report_pool(&report, pool);
    }
    return report.length;
}

/* ---- counters ------------------------------------------------------------------------------- */

/* Calls `each` for every pool: the classes', then the placed and nice-value pools. */
static void op_pools_each(void (*each)(op_pool *pool, void *context), void *context) {
    for (int qos = 0; qos < OP_QOS_COUNT; qos++) {
        op_pool *pool = atomic_load_explicit(&op_pools[qos], memory_order_acquire);
        if (pool) each(pool, context);
    }
    for (op_pool *pool = atomic_load_explicit(&op_placed_pools, memory_order_acquire); pool;
         pool = pool->next_placed) {
        each(pool, context);
    }
}

void op_worker_counts_retire(op_pool *pool, const op_worker *worker) {
    const op_worker_counts *from = &worker->counts;
    op_worker_counts *to = &pool->retired;
    op_count_shared(&to->tasks, op_count_read(&from->tasks));
    op_count_shared(&to->steals, op_count_read(&from->steals));
    op_count_shared(&to->parks, op_count_read(&from->parks));
    op_count_shared(&to->wakeups, op_count_read(&from->wakeups));
    op_count_shared(&to->carries, op_count_read(&from->carries));
    op_count_shared(&to->rescues, op_count_read(&from->rescues));
    op_count_shared(&to->promotions, op_count_read(&from->promotions));
}

/* The kernel's name of thread `tid` of this process ("" when it is gone): read from /proc, not
 * through a pthread_t, which a thread that exited no longer backs. */
static void op_thread_name_of(int tid, char *name, size_t size) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    name[0] = '\0';
    FILE *file = fopen(path, "re");
    if (!file) return;
    if (fgets(name, (int)size, file)) name[strcspn(name, "\n")] = '\0';
    fclose(file);
}

static op_worker_state_t op_worker_state_of(uint64_t run) {
    if (!(run & OP_RUN_IN_TASK)) return OP_WORKER_IDLE;
    if (run & OP_RUN_LENT) return OP_WORKER_BLOCKED;
    if (run & OP_RUN_VISIBLE_WAIT) return OP_WORKER_WAITING;
    return OP_WORKER_RUNNING;
}

static const char *const op_worker_state_names[] = {"idle", "running", "waiting", "blocked"};

/* One worker's counters (relaxed reads: a snapshot). */
static void op_worker_counters_of(op_pool *pool, op_worker *worker, op_worker_counters_t *out) {
    uint64_t run = atomic_load_explicit(&worker->run, memory_order_relaxed);
    out->qos = pool->qos;
    out->pool_nice = pool->fixed_nice;
    out->placed = pool->placement != NULL && pool->fixed_nice == OP_NICE_UNCHANGED;
    out->spare = worker->spare;
    out->cpu = worker->spare ? -1 : worker->cpu;
    out->tid = atomic_load_explicit(&worker->tid, memory_order_relaxed);
    out->class_nice = atomic_load_explicit(&worker->class_nice, memory_order_relaxed);
    out->state = op_worker_state_of(run);
    out->serial = run >> OP_RUN_SERIAL_SHIFT;
    out->tasks = op_count_read(&worker->counts.tasks);
    /* The running task (published for promoters: `body_task`); since when, if its start was
     * timed (the same serial). */
    out->task_id = (run & OP_RUN_IN_TASK)
                       ? (uint64_t)(uintptr_t)atomic_load_explicit(&worker->body_task,
                                                                   memory_order_relaxed)
                       : 0;
    out->running_ns = -1;
    if (out->task_id && atomic_load_explicit(&worker->counts.body_started_serial,
                                             memory_order_acquire) == out->serial) {
        int64_t started = atomic_load_explicit(&worker->counts.body_started_ns, memory_order_relaxed);
        int64_t now = op_now_ns();
        if (started > 0 && now >= started) out->running_ns = now - started;
    }
    out->steals = op_count_read(&worker->counts.steals);
    out->parks = op_count_read(&worker->counts.parks);
    out->wakeups = op_count_read(&worker->counts.wakeups);
    out->carries = op_count_read(&worker->counts.carries);
    out->rescues = op_count_read(&worker->counts.rescues);
    out->promotions = op_count_read(&worker->counts.promotions);
}

typedef struct op_worker_listing {
    op_worker_counters_t *out;
    size_t capacity;
    size_t count;
} op_worker_listing;

static void op_list_worker(op_pool *pool, op_worker *worker, op_worker_listing *listing) {
    if (listing->count < listing->capacity) {
        op_worker_counters_of(pool, worker, &listing->out[listing->count]);
    }
    listing->count++;
}

static void op_list_pool_workers(op_pool *pool, void *context) {
    op_worker_listing *listing = context;
    int created = atomic_load_explicit(&pool->created, memory_order_relaxed);
    for (int i = 0; i < created && i < pool->size; i++) {
        if (atomic_load_explicit(&pool->workers[i].tid, memory_order_relaxed) == 0) continue;
        op_list_worker(pool, &pool->workers[i], listing);
    }
    pthread_mutex_lock(&pool->spares_lock);
    for (op_worker *spare = pool->spares; spare; spare = spare->next_spare) {
        op_list_worker(pool, spare, listing);
    }
    pthread_mutex_unlock(&pool->spares_lock);
}

size_t op_runtime_worker_counters(op_worker_counters_t *out, size_t capacity) {
    op_worker_listing listing = {.out = out, .capacity = out ? capacity : 0, .count = 0};
    op_pools_each(op_list_pool_workers, &listing);
    return listing.count;
}

static void op_add_worker(op_runtime_counters_t *sum, const op_worker_counters_t *worker) {
    sum->tasks += worker->tasks;
    sum->steals += worker->steals;
    sum->parks += worker->parks;
    sum->wakeups += worker->wakeups;
    sum->carries += worker->carries;
    sum->rescues += worker->rescues;
    sum->promotions += worker->promotions;
    if (worker->spare) {
        sum->spares++;
    } else if (worker->tid != 0) {
        sum->workers++;
    }
}

static void op_sum_pool(op_pool *pool, void *context) {
    op_runtime_counters_t *sum = context;
    op_worker_counters_t worker;
    /* Every slot, also one whose thread left (a placed pool's idle worker): its counts stay in
     * the slot, and a thread that takes the slot again goes on from them, so sums never go
     * down. Slots never started are zeros (the pool was made zeroed). */
    for (int i = 0; i < pool->size; i++) {
        op_worker_counters_of(pool, &pool->workers[i], &worker);
        op_add_worker(sum, &worker);
    }
    /* Under spares_lock, as a spare leaves the list and adds itself to `retired` in one step:
     * each is counted once, here or there. */
    pthread_mutex_lock(&pool->spares_lock);
    for (op_worker *spare = pool->spares; spare; spare = spare->next_spare) {
        op_worker_counters_of(pool, spare, &worker);
        op_add_worker(sum, &worker);
    }
    const op_worker_counts *retired = &pool->retired;
    sum->tasks += op_count_read(&retired->tasks);
    sum->steals += op_count_read(&retired->steals);
    sum->parks += op_count_read(&retired->parks);
    sum->wakeups += op_count_read(&retired->wakeups);
    sum->carries += op_count_read(&retired->carries);
    sum->rescues += op_count_read(&retired->rescues);
    sum->promotions += op_count_read(&retired->promotions);
    pthread_mutex_unlock(&pool->spares_lock);
    sum->spares_started += op_count_read(&pool->spares_started);
}

int op_runtime_counters(op_runtime_counters_t *out) {
    if (!out) return EINVAL;
    memset(out, 0, sizeof *out);
    op_pools_each(op_sum_pool, out);
    return 0;
}

/* ---- the JSON report ------------------------------------------------------------------------ */

static void op_json_worker(op_report *report, op_pool *pool, op_worker *worker, bool *first) {
    op_worker_counters_t c;
    op_worker_counters_of(pool, worker, &c);
    char name[32] = "";
    if (c.tid != 0) op_thread_name_of(c.tid, name, sizeof name);
    op_report_add(report, "%s\n      {\"thread\": ", *first ? "" : ",");
    *first = false;
    op_report_json_string(report, name);
    op_report_add(report,
                  ", \"tid\": %d, \"cpu\": %d, \"spare\": %s, \"state\": \"%s\", \"nice\": %d, ",
                  c.tid, c.cpu, c.spare ? "true" : "false", op_worker_state_names[c.state], c.class_nice);
    if (c.task_id) {
        op_report_add(report, "\"task\": \"0x%llx\", ", (unsigned long long)c.task_id);
    } else {
        op_report_add(report, "\"task\": null, ");
    }
    if (c.running_ns >= 0) {
        op_report_add(report, "\"running_us\": %.1f, ", (double)c.running_ns / 1000.0);
    } else {
        op_report_add(report, "\"running_us\": null, ");
    }
    op_report_add(report,
                  "\"task_serial\": %llu, \"tasks\": %llu, \"steals\": %llu, \"parks\": %llu, "
                  "\"wakeups\": %llu, \"carries\": %llu, \"rescues\": %llu, \"promotions\": %llu}",
                  (unsigned long long)c.serial, (unsigned long long)c.tasks,
                  (unsigned long long)c.steals, (unsigned long long)c.parks,
                  (unsigned long long)c.wakeups, (unsigned long long)c.carries,
                  (unsigned long long)c.rescues, (unsigned long long)c.promotions);
}

typedef struct op_json_pools {
    op_report *report;
    bool first;
} op_json_pools;

static void op_json_pool(op_pool *pool, void *context) {
    op_json_pools *pools = context;
    op_report *report = pools->report;
    uint64_t balance = atomic_load_explicit(&pool->balance, memory_order_relaxed);
    op_report_add(report, "%s\n    {\"class\": ", pools->first ? "" : ",");
    pools->first = false;
    if (pool->fixed_nice != OP_NICE_UNCHANGED) {
        op_report_add(report, "null, \"nice\": %d", pool->fixed_nice);
    } else {
        op_report_add(report, "\"%s\", \"nice\": null", op_qos_name(pool->qos));
    }
    op_report_add(report,
                  ", \"placed\": %s, \"size\": %d, \"tokens_waiting\": %s, \"searching\": %d, "
                  "\"blocked\": %u, \"spares\": %u, \"spares_started\": %llu, "
                  "\"wakeups_backed\": %llu, \"workers\": [",
                  pool->placement ? "true" : "false", pool->size,
                  op_pool_has_tokens(pool) ? "true" : "false",
                  atomic_load_explicit(&pool->searching, memory_order_relaxed),
                  OP_BALANCE_BLOCKED(balance), OP_BALANCE_SPARES(balance),
                  (unsigned long long)op_count_read(&pool->spares_started),
                  (unsigned long long)atomic_load_explicit(&pool->backed_wakes, memory_order_relaxed));
    bool first = true;
    int created = atomic_load_explicit(&pool->created, memory_order_relaxed);
    for (int i = 0; i < created && i < pool->size; i++) {
        if (atomic_load_explicit(&pool->workers[i].tid, memory_order_relaxed) == 0) continue;
        op_json_worker(report, pool, &pool->workers[i], &first);
    }
    pthread_mutex_lock(&pool->spares_lock);
    for (op_worker *spare = pool->spares; spare; spare = spare->next_spare) {
        op_json_worker(report, pool, spare, &first);
    }
    pthread_mutex_unlock(&pool->spares_lock);
    op_report_add(report, "]}");
}

size_t op_runtime_describe_json(char *buffer, size_t size) {
    op_report report = {.buffer = buffer, .size = size, .length = 0};
    if (size) buffer[0] = '\0';
    op_runtime_counters_t sum;
    op_runtime_counters(&sum);
    op_report_add(&report,
                  "{\"monitor\": {\"awake\": %s, \"queues_waiting_at_width\": %d},\n"
                  "  \"counters\": {\"tasks\": %llu, \"steals\": %llu, \"parks\": %llu, "
                  "\"wakeups\": %llu, \"carries\": %llu, \"rescues\": %llu, \"promotions\": %llu, "
                  "\"spares_started\": %llu, \"workers\": %u, \"spares\": %u},\n  \"pools\": [",
                  op_monitor_is_asleep() ? "false" : "true",
                  atomic_load_explicit(&op_queues_waiting_at_width, memory_order_relaxed),
                  (unsigned long long)sum.tasks, (unsigned long long)sum.steals,
                  (unsigned long long)sum.parks, (unsigned long long)sum.wakeups,
                  (unsigned long long)sum.carries, (unsigned long long)sum.rescues,
                  (unsigned long long)sum.promotions, (unsigned long long)sum.spares_started,
                  sum.workers, sum.spares);
    op_json_pools pools = {.report = &report, .first = true};
    op_pools_each(op_json_pool, &pools);
    op_report_add(&report, "]}\n");
    return report.length;
}
