/*
 * worker.c — a worker's thread: the loop each worker and spare runs (op_worker_main), what the
 * code that runs tasks on it asks of it, and stealing between workers' local run queues.
 *
 * A worker with a token drains that queue (drain.c) until the queue runs dry or its budget is
 * spent, then looks for the next token. Each pinned worker has a local run queue
 * (local_run_queue.c) for the tasks released on it while it drains; op_pool_steal lets another
 * drainer of the same queue take half of them. Between tokens the loop searches (spinning, then
 * yielding the CPU: the constants below) and parks (parking_and_wake.c, with the wake choice);
 * a spare leaves the loop when it is surplus (spares.c), a placed pool's worker after an idle
 * period (worker_pool.c).
 *
 * The pool knows tasks only as tokens (pool.h): it hands a token to a worker and calls the
 * token's class to drain it (drain.c runs the tasks, at their nice values, through
 * op_worker_refresh_nice and op_worker_body_begin/end here). It names nothing of the queues or
 * the tasks: every call back up goes through a token's class, set when its queue was made.
 *
 * Invariants (the comments at each atomic say the same):
 *   - Each worker says what it runs in one word of its own, `run` (a body serial and the
 *     OP_RUN_* bits, pool_private.h), written by the worker once at each body's start, once at
 *     its end and around a visible wait (spares.c), and marked with compare-and-swaps by the
 *     monitor (monitor_view.c) and by promoters (running_body_promotion.c). A body begins
 *     before the task's RUNNING (promotion's Dekker pair), so the monitor may see IN_TASK
 *     through the bookkeeping before a body, and for a task retired or carried away without
 *     one: a few instructions, never two of its ticks unless the thread sleeps there. op_worker_body_begin writes `token`, `body_task`
 *     and `body_queue`, then `run` with seq_cst (the release the watchers' acquiring
 *     compare-and-swaps need, and promotion's Dekker pairs). A body's end settles the word
 *     (op_worker_word_settle: waits out OP_RUN_LENDING and OP_RUN_PROMOTING, then an acquiring
 *     compare-and-swap, pairing with the watchers' releasing flips), then takes back what the
 *     monitor lent and undoes a promoter's renice; while LENDING is set the worker waits, so
 *     the queue behind the token stays alive. Each watcher changes only its own bits, with
 *     read-modify-writes, so neither loses the other's.
 *   - A worker's other fields are its thread's own (serial, the nice values, `token`;
 *     `monitor_lent` is the monitor's while it holds LENDING, the worker's after settling);
 *     `class_nice` and `tid` are relaxed stores that introspection and the monitor read.
 *   - `searching` is the workers' half of the Dekker pair with a token push (seq_cst; see
 *     parking_and_wake.c). A worker that found work after searching or parking fences (seq_cst)
 *     before it looks for more tokens to wake a helper for.
 *   - `started`: a pinned worker's releasing increment once its fields are set, paired with the
 *     acquire loads of worker_pool.c's op_pool_wait_started and of the report.
 *   - Local run queues: op_pool_local_work's relaxed look at a ring's queue is a hint; its
 *     callers' seq_cst fences order it (Dekker with local pushers).
 */
#include "pool_private.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>

/* An idle worker's search (the loop below): pauses between looks (op_cpu_relax), then yields
 * the CPU between looks, so a thread that would give us work is not starved of it. */
#define OP_SEARCH_NS 30000  /* an idle worker looks for tokens this long before parking */
#define OP_SEARCH_SPIN_NS 500  /* ... the first part of it spinning, counted as searching */
#define OP_YIELD_SEARCHERS 2   /* ... the rest yielding the CPU, only this many at once (the
                                  others park after spinning) */
/* Why the yielding part is long and the spinning part short (issue 36, E1 "round trip from
 * default" and W7 "stream"): work often comes back from a thread that our last task woke, and
 * the kernel puts that thread on our CPU (it wakes on the waker's CPU when the other one is
 * busy). A spinning searcher keeps it off the CPU (it has a shorter time slice, so the woken
 * thread does not preempt it); a yielding one lets it run at once and takes what it submits
 * on its next look, instead of waiting for a futex wake-up (~10 µs on a VM; a yielding
 * searcher is not counted as searching, so the push may still wake a parked worker on another
 * CPU, which then finds nothing and parks again). Measured on the 2-CPU
 * VM: 8 µs of search (2 µs spinning) → 30 µs (0.5 µs spinning): Swift's default executor →
 * queue → back 10–18 µs → 5–7.5 µs per round trip; W7 stream p50 8 µs → 1 µs. Parking at once
 * instead: 19–23 µs. Spinning all 8 µs: 15–20 µs. The cost is CPU: a worker that found no
 * work yields for up to 30 µs before it parks (idle CPU stays ~0: an idle pool parks). */
#define OP_SPARE_IDLE_NS (200 * INT64_C(1000000)) /* a parked spare looks whether it is surplus */

/* ---- the worker on this thread, and stealing from the others -------------------------------- */

_Thread_local op_pool *op_tls_pool;
_Thread_local op_worker *op_tls_worker;

op_pool *op_pool_current(void) { return op_tls_pool; }

op_local_run_queue *op_worker_local_run_queue(void) {
    op_worker *worker = op_tls_worker;
    return worker && !worker->spare ? &worker->local : NULL;
}

void *op_pool_steal(op_pool *pool, op_local_run_queue *thief, const void *tag) {
    if (!pool) return NULL;
    /* Start after our own index, so thieves spread over the victims. */
    op_worker *self = op_tls_worker;
    int first = self && !self->spare ? self->index + 1 : 0;
    for (int i = 0; i < pool->size; i++) {
        op_worker *victim = &pool->workers[(first + i) % pool->size];
        if (victim == self || op_local_run_queue_is_empty(&victim->local)) continue;
        if (thief) {
            if (op_local_run_queue_steal(&victim->local, thief, tag)) {
                if (self) op_count_own(&self->counts.steals, 1);
                return op_local_run_queue_pop(thief);
            }
        } else {
            void *entry = op_local_run_queue_steal_one(&victim->local, tag);
            if (entry) {
                if (self) op_count_own(&self->counts.steals, 1);
                return entry;
            }
        }
    }
    return NULL;
}

bool op_pool_local_work(op_pool *pool, const void *tag) {
    if (!pool) return false;
    for (int i = 0; i < pool->size; i++) {
        op_local_run_queue *ring = &pool->workers[i].local;
        /* relaxed: a hint; the callers' seq_cst fences order it (Dekker with local pushers). */
        if (atomic_load_explicit(&ring->queue, memory_order_relaxed) == tag &&
            !op_local_run_queue_is_empty(ring)) {
            return true;
        }
    }
    return false;
}

/* ---- what runs tasks on a worker needs of it ------------------------------------------------ */

/* The nice a pool's workers hold between tasks, before clamping. */
int op_pool_wanted_nice(const op_pool *pool) {
    return pool->fixed_nice != OP_NICE_UNCHANGED ? pool->fixed_nice : op_nice_of_class(pool->qos);
}

int op_worker_refresh_nice(void) {
    op_worker *worker = op_tls_worker;
    uint32_t generation = op_nice_generation();
    if (OP_LIKELY(generation == worker->nice_generation)) return worker->current_nice;
    worker->nice_generation = generation;
    int nice = op_nice_clamp_class(op_pool_wanted_nice(worker->pool), worker->base_nice);
    if (nice != worker->current_nice && op_nice_set_current_thread(nice) == 0) {
        worker->current_nice = nice;
    }
    atomic_store_explicit(&worker->class_nice, worker->current_nice, memory_order_relaxed);
    return worker->current_nice;
}

void op_worker_note_body_start(int64_t ns) {
    op_worker *worker = op_tls_worker;
    if (!worker) return;
    /* release: the time before its serial; a report that acquires the serial and finds it the
     * running task's reads that task's time (or a later one's, which its serial check drops). */
    atomic_store_explicit(&worker->counts.body_started_ns, ns, memory_order_relaxed);
    atomic_store_explicit(&worker->counts.body_started_serial, worker->serial, memory_order_release);
}

void op_worker_count_carry(void) {
    op_worker *worker = op_tls_worker;
    if (worker) op_count_own(&worker->counts.carries, 1);
}

void op_worker_body_begin(op_token *token, op_task_t *task, op_queue_t *queue, int nice) {
    op_worker *worker = op_tls_worker;
    worker->token = token;
    worker->body_nice = nice;
    /* relaxed: published by the store of `run` below (see the field). */
    atomic_store_explicit(&worker->body_task, task, memory_order_relaxed);
    atomic_store_explicit(&worker->body_queue, queue, memory_order_relaxed);
    /* seq_cst: the Dekker pairs of promotion.c (a promoter changes the task's state word or its
     * queue's `promo`, then loads `run`; we store `run`, then our caller reads those). It is also
     * the release the monitor and promoters need: they read `token`, `body_task` and
     * `body_queue` after an acquiring load or compare-and-swap that sees this value. */
    atomic_store_explicit(&worker->run, (++worker->serial << OP_RUN_SERIAL_SHIFT) | OP_RUN_IN_TASK,
                          memory_order_seq_cst);
}

void op_worker_body_nice(int nice) {
    op_worker *worker = op_tls_worker;
    if (worker) worker->body_nice = nice;
}

/* Sets the worker's `run` word to (run & keep) | set once the monitor is not lending for it;
 * returns the word it replaced (acquire: a lending monitor's count and `monitor_lent`, written
 * before its releasing flip to LENT or RELENT, come before the caller's take-back). */
uint64_t op_worker_settle_run(op_worker *worker, uint64_t keep, uint64_t set) {
    return op_worker_word_settle(&worker->run, OP_RUN_LENDING, keep, set);
}

void op_worker_body_end(bool counted) {
    op_worker *worker = op_tls_worker;
    if (counted) op_count_own(&worker->counts.tasks, 1);
    /* One compare-and-swap for both watchers: a monitor lending and a promoter renicing (one
     * system call) are waited for; acquire: what they did before clearing their busy bit. */
    uint64_t old = op_worker_word_settle(&worker->run, OP_RUN_LENDING | OP_RUN_PROMOTING, 0,
                                         worker->serial << OP_RUN_SERIAL_SHIFT);
    /* Raised by a promoter: back to the nice the body started at. */
    if (OP_UNLIKELY(old & OP_RUN_PROMOTED)) op_nice_set_current_thread(worker->body_nice);
    /* (A slot the monitor lent for a visible wait, RELENT, was taken back when the wait ended:
     * op_worker_did_unblock.) */
    if (OP_LIKELY(!(old & OP_RUN_LENT))) return;
    /* Counted blocked; a slot was lent only if the queue's width allowed it. */
    if (worker->monitor_lent) {
        worker->monitor_lent->cls->take_back_slot(worker->monitor_lent);
    } else {
        atomic_fetch_sub_explicit(&worker->pool->blocked_unlent, 1, memory_order_relaxed);
    }
    worker->monitor_lent = NULL;
    op_pool_uncount_blocked(worker->pool);
}

/* ---- the worker thread ---------------------------------------------------------------------- */

void *op_worker_main(void *arg) {
    op_worker *worker = arg;
    op_pool *pool = worker->pool;
    /* The thread's name (15 characters at most; ps -L, top -H, perf and the trace show it):
     * "op-" and the class (op_qos_short_name) or "n" and the pool's nice value, then the CPU a
     * pinned worker runs on ("-c3") or a spare's serial ("-s7"). A placed pool's workers add
     * "p" before the CPU: "op-uiact-pc255", "op-n-20-pc1023" fit. */
    char class_part[8];
    if (pool->fixed_nice != OP_NICE_UNCHANGED) {
        snprintf(class_part, sizeof class_part, "n%d", pool->fixed_nice);
    } else {
        snprintf(class_part, sizeof class_part, "%s", op_qos_short_name(pool->qos));
    }
    char name[16];
    snprintf(name, sizeof name, "op-%s-%s%s%d", class_part, pool->placement ? "p" : "",
             worker->spare ? "s" : "c", worker->spare ? worker->index : worker->cpu);
    pthread_setname_np(pthread_self(), name);
    op_tls_pool = pool;
    op_tls_worker = worker;
    if (worker->spare) {
        /* A spare of a placed pool keeps to the placement's CPUs (one the monitor starts would
         * inherit the monitor's whole mask). */
        if (pool->placement) op_placement_bind_current_thread(pool->placement);
        pthread_mutex_lock(&pool->spares_lock);
        worker->next_spare = pool->spares;
        pool->spares = worker;
        pthread_mutex_unlock(&pool->spares_lock);
    } else {
        op_topology_pin_current_thread(worker->cpu, worker->node);
    }
    /* The workers of the default class and above preempt what runs on their CPU when they
     * wake: lower-class work, and the submitter that woke them (time_slice.c). */
    if (pool->fixed_nice == OP_NICE_UNCHANGED && pool->qos >= OP_QOS_DEFAULT) {
        /* Only the latency classes report a kernel that refuses or ignores the slice: the
         * default class's wake-ups have their backstop without it (op_pool_wake_one). A
         * worker woken on the submitter's CPU never preempts it under SCHED_BATCH. */
        op_time_slice_shorten_current_thread(pool->qos >= OP_QOS_USER_INITIATED);
        if (sched_getscheduler(0) == SCHED_OTHER) {
            atomic_store_explicit(&pool->wakes_on_submitter_cpu, true, memory_order_relaxed);
        }
    } else {
        op_time_slice_reset_current_thread();
    }
    worker->base_nice = op_current_thread_nice();
    worker->current_nice = worker->base_nice;
    worker->nice_generation = 0;
    op_worker_refresh_nice();
    atomic_store_explicit(&worker->tid, op_current_tid(), memory_order_relaxed);
    /* release: op_runtime_start_workers reads the worker's fields after seeing the count. */
    if (!worker->spare) atomic_fetch_add_explicit(&pool->started, 1, memory_order_release);

    for (;;) {
        if (worker->spare && op_spare_retire(pool)) {
            /* No longer needed: take no work, but pass on a wake-up we may have taken from a
             * parked worker (seq_cst: Dekker with op_pool_push_token). Then linger for reuse
             * (a body's next blocking wait needs a spare again), and leave if none came. */
            atomic_thread_fence(memory_order_seq_cst);
            if (op_pool_has_tokens(pool)) op_pool_wake_one(pool);
            if (op_spare_linger(pool, worker)) continue; /* needed again: counted by the blocker */
            break;
        }
        op_token *token = op_pool_take_token(pool, worker->node);
        if (!token) {
            /* seq_cst: `searching` is half of the Dekker pair with op_pool_push_token. At most
             * half the workers search at once: on a loaded machine a spinning worker takes the
             * CPU from the thread that would give it work. */
            int searchers = atomic_fetch_add_explicit(&pool->searching, 1, memory_order_seq_cst);
            int64_t start = op_now_ns();
            if (searchers < (pool->size + 1) / 2) {
                /* First pauses only, never sched_yield: a searcher counts in `searching`, which
                 * stops token pushes from waking parked workers, so it must not give its CPU
                 * away (a busy submitter on the same CPU could keep it a whole time slice while
                 * the tokens wait). */
                int64_t now = start;
                do {
                    for (int i = 0; i < 16; i++) op_cpu_relax();
                    token = op_pool_take_token(pool, worker->node);
                    now = op_now_ns();
                } while (!token && now - start < OP_SEARCH_SPIN_NS);
            }
            atomic_fetch_sub_explicit(&pool->searching, 1, memory_order_seq_cst);
            /* Then, no longer counted (pushes wake parked workers again), keep looking while
             * yielding the CPU, in case a submitter shares it with us. Only the first few
             * searchers do: on many CPUs a crowd of threads calling sched_yield in a loop
             * fights over the kernel's run-queue locks (seen on 16 CPUs); the rest park. */
            for (int64_t now = op_now_ns();
                 !token && searchers < OP_YIELD_SEARCHERS && now - start < OP_SEARCH_NS;
                 now = op_now_ns()) {
                sched_yield();
                token = op_pool_take_token(pool, worker->node);
            }
            if (!token && !worker->spare) {
                /* A placed pool's workers leave after a while without work (finding: one
                 * pool per CPU set and class for the life of the process); the default
                 * pools' stay. A pool made for a nice value leaves when idle too. */
                bool leaves = pool->placement || pool->fixed_nice != OP_NICE_UNCHANGED;
                int rc = 0;
                token = op_worker_park(pool, worker,
                                       leaves ? op_placed_pool_idle_ns() : OP_WAIT_FOREVER, &rc);
                if (!token) {
                    /* Woken: take work here, so that finding it wakes the next helper below.
                     * Without that only searchers woke helpers: a burst of tokens pushed while
                     * one worker searched (no push wakes anyone then) woke one helper, and on
                     * 16 CPUs the other tokens waited behind blocked workers (issue 14). */
                    token = op_pool_take_token(pool, worker->node);
                    if (!token) {
                        if (leaves &&
                            (rc == ETIMEDOUT ||
                             atomic_load_explicit(&pool->leaving, memory_order_relaxed)) &&
                            op_pool_worker_leaves_idle(pool, worker)) {
                            return NULL; /* touches nothing of the slot any more */
                        }
                        continue;
                    }
                }
            } else if (!token) {
                /* A spare parks on the pool's event: a push wakes it when no pinned worker is
                 * parked (op_pool_wake_one). */
                uint32_t key = op_event_prepare_wait(&pool->event);
                token = op_pool_take_token(pool, worker->node);
                if (token) {
                    op_event_cancel_wait(&pool->event);
                } else {
                    op_count_own(&worker->counts.parks, 1);
                    if (op_event_wait(&pool->event, key, OP_SPARE_IDLE_NS) == 0) {
                        op_count_own(&worker->counts.wakeups, 1);
                    }
                    continue; /* retires at the top when surplus */
                }
            }
            /* We found work after searching or parking: if more is waiting, wake a helper, who
             * does the same, so a burst of tokens wakes as many workers as it needs, one at a
             * time, and no more. */
            atomic_thread_fence(memory_order_seq_cst);
            if (op_pool_has_tokens(pool)) op_pool_wake_one(pool);
        }
        token->cls->drain(token); /* the queue runs its tasks on this thread */
    }
    /* Only spares leave. */
    pthread_mutex_lock(&pool->spares_lock);
    for (op_worker **link = &pool->spares; *link; link = &(*link)->next_spare) {
        if (*link == worker) {
            *link = worker->next_spare;
            break;
        }
    }
    /* Under the lock that the sums read the spares and `retired` under: each snapshot counts
     * this spare once, on the list or in `retired`. */
    op_worker_counts_retire(pool, worker);
    pthread_mutex_unlock(&pool->spares_lock);
    free(worker);
    return NULL;
}
