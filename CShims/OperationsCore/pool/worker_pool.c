/*
 * worker_pool.c — per-CPU pinned worker threads, one pool per QoS class, created lazily.
 *
 * A pool has one worker per usable CPU (topology.c), each pinned to its CPU and running at its
 * class's nice value (nice.c). Queues hand the pool tokens (a queue with a claimed slot) through
 * one lock-free FIFO per NUMA node: a token goes to the submitting thread's node, and a worker
 * looks at its own node's FIFO before the others, so work tends to stay on the node that made
 * it.
 *
 * A worker with a token drains that queue (drain.c) until the queue runs dry or its budget is
 * spent, then looks for the next token. Each pinned worker has a local run queue
 * (local_run_queue.c) for the tasks released on it while it drains; op_pool_steal lets another
 * drainer of the same queue take half of them. Idle workers spin for 2 µs ("searching", at most
 * half the pool), look a few more microseconds while yielding the CPU, then park, each on a
 * futex word of its own, with a bit in the pool's `parked` mask (op_worker_park; spares park on
 * the pool's event count, parking.c). A token push wakes one parked worker, and only when no
 * worker is searching (op_pool_wake_one): in a pool of the default class or above, a thread
 * that is not a worker wakes the one pinned to its own CPU, which preempts it and finds the
 * caches warm, and one on another CPU as well if that one did not run at once; a worker, and a
 * submitter to another pool, the next parked one after its own CPU's (its own CPU is busy) and
 * its own CPU's only when no other is parked. A worker that finds work after searching or
 * parking wakes one more if tokens are left, so bursts fan out without a wake per task. How
 * many tokens a queue hands out is the queue's policy (queue.c: a new slot only while none of
 * its drainers idles).
 *
 * The pool knows tasks only as tokens (internal.h): it hands a token to a worker and calls the
 * token's class to drain it (drain.c runs the tasks, at their nice values, through
 * op_worker_refresh_nice and op_worker_body_begin/end here). It names nothing of the queues or
 * the tasks: every call back up goes through a token's class, set when its queue was made.
 *
 * Blocking waits: a task that blocks in op_task_wait / op_queue_wait (waitUntilFinished and
 * friends) would take its worker out of the pool, and with one worker per CPU a few nested
 * waits deadlock the class. So a worker about to sleep in a wait tells the pool
 * (op_worker_will_block, from queue.c, which also lends the task's slot), which makes sure at
 * least as many spare threads serve it as workers are blocked: a spare is started when none is
 * left over (bounded by OP_SPARES_MAX per class). Spares run the same loop as workers, on the
 * CPUs the blocked worker's affinity allows (they inherit it), and exit as soon as they are
 * between tasks (or wake from a park of at most OP_SPARE_IDLE_NS) while there are more spares
 * than blocked threads, so spares never take work from the pinned workers. Blocked threads and
 * spares are counted in one word, so "start one" and "retire one" can never both miss each
 * other.
 *
 * Bodies that block where the core cannot see (a mutex, a condition variable, I/O): the
 * blocked-worker monitor (blocked_worker_monitor.c) calls op_pool_monitor_tick every 10 ms while
 * tokens wait, tasks wait in workers' local run queues, a default-width queue's work waits
 * behind its width (then it looks at every pool), or a worker counted blocked could not have
 * its slot lent (its queue's width may become the default). A worker (or spare) that has run one task
 * for a whole tick and that the kernel reports asleep is counted blocked as if it waited in
 * op_task_wait: a spare stands in for it (started by the monitor, on any usable CPU), and the
 * token's class lends its slot if the queue's width allows (a default-width queue). Each worker
 * says what it runs in one word of its own (`run`: a task serial and the OP_RUN_* bits); the
 * monitor marks the word with a compare-and-swap, so it can only mark the task it looked at,
 * and the worker, at the task's end, takes back what was lent. While the monitor lends
 * (OP_RUN_LENDING, a few instructions) the worker waits at its task's end, so the queue behind
 * the token stays alive.
 *
 * The default pools' workers live as long as the process. A placed pool's workers (one pool per
 * CPU set and class) leave after OPERATIONS_PLACED_POOL_IDLE_MS (10 s) parked without work,
 * highest slot first so that slots [0, created) keep their threads (op_pool_worker_leaves_idle),
 * and the next token push starts them again through the retry path below (no backoff: nothing
 * failed). Pool creation takes a mutex (once per class), and the
 * list of a pool's spares one (spares start and leave, the monitor walks them); nothing on the
 * task path locks.
 *
 * Out of threads (a container's pids.max, RLIMIT_NPROC: five classes of one worker per CPU,
 * their spares and placed pools are over a thousand threads on a large node): a pool whose
 * workers cannot all start runs with those that did. Workers are started in index order and
 * creation stops at the first failure, so the slots [0, created) have threads and the others
 * none (tid 0: the monitor, stealing and introspection skip them, their local run queues stay
 * empty). One warning goes to stderr (what failed, why, how many workers run, what to change),
 * and the missing workers are retried, with a backoff from 1 ms doubling to 1 s, by the next
 * token push and by the monitor's tick while they are missing. A pool where not even one worker
 * started holds its tokens until a retry succeeds: it warns that its class's work waits, and
 * every submit and monitor tick retries (bounded by the backoff); nothing aborts and nothing
 * waits silently. A spare that cannot start is retried at the monitor's ticks.
 *
 * Fork: the child of a fork() has only the forking thread. A pthread_atfork child handler forgets
 * every pool (op_pools, the placed pools, each placement's slots) and resets the monitor, so the
 * first use in the child makes new pools and a new monitor. The parent's pools are leaked, not
 * freed: queues and drainers' stacks may still point into them. Tasks that were queued or
 * running at the fork stay unfinished in the child (their queues keep the slots and busy counts
 * they had); queues that were idle work normally. The forking thread is an ordinary thread in
 * the child, even if it was a worker (a body that forks must exec or _exit in the child, not
 * return: the worker loop it would return to belongs to the parent).
 *
 * Beside this file: worker_pool_private.h (the structures), running_body_promotion.c (renicing a
 * running body for QoS promotion) and worker_pool_report.c (introspection, the diagnostic
 * report).
 */
#include "pool_private.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <string.h>
#include <unistd.h>

/* Spinning uses op_spin_pause (parking.c): pauses for a microsecond, then yields the CPU
 * between looks, so a thread that would give us work is not starved of it on a small box. */
#define OP_SEARCH_NS 8000   /* an idle worker looks for tokens this long before parking */
#define OP_SEARCH_SPIN_NS 2000 /* ... the first part of it spinning, counted as searching */
#define OP_YIELD_SEARCHERS 2   /* ... the rest yielding the CPU, only this many at once */
#define OP_SPARES_MAX 512   /* spare threads per class at most (nested waits that deep) */
#define OP_SPARE_IDLE_NS (200 * INT64_C(1000000)) /* a parked spare looks whether it is surplus */
#define OP_SPARE_LINGER_NS (500 * INT64_C(1000000)) /* a surplus spare waits this long for reuse */

_Thread_local op_pool *op_tls_pool;
_Thread_local op_worker *op_tls_worker;
static void op_pool_start_spare(op_pool *pool);
static void op_pool_retry_workers(op_pool *pool);

op_pool *_Atomic op_pools[OP_QOS_COUNT];
/* The pools made for a nice value (threadPriority without the privilege to renice and back),
 * indexed by nice + 20; also on op_placed_pools' list, which the monitor walks. */
op_pool *_Atomic op_nice_pools[40];
pthread_mutex_t op_pools_lock = PTHREAD_MUTEX_INITIALIZER;
/* Every pool made for a placement (placement.c), newest first; pools live as long as the
 * process, so the list only grows. The monitor walks it. */
op_pool *_Atomic op_placed_pools;

bool op_pool_has_tokens(op_pool *pool) {
    for (int i = 0; i < pool->node_count; i++) {
        if (op_fifo_maybe_nonempty(&pool->tokens[i])) return true;
    }
    return false;
}

op_pool *op_pool_current(void) { return op_tls_pool; }

op_local_run_queue *op_worker_local_run_queue(void) {
    op_worker *worker = op_tls_worker;
    return worker && !worker->spare ? &worker->local : NULL;
}

int op_pool_qos(const op_pool *pool) { return pool->qos; }

const op_placement *op_pool_placement(const op_pool *pool) { return pool->placement; }

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
                return op_local_run_queue_pop(thief);
            }
        } else {
            void *entry = op_local_run_queue_steal_one(&victim->local, tag);
            if (entry) return entry;
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

static op_token *op_pool_take_token(op_pool *pool, int home);

/* Wakes parked pinned worker `index` if it is still parked (its bit ours to clear); true then,
 * with `ticket` the value the wake-up set in its wake_word: once the worker ran after the
 * wake-up, its wake_seen holds that value (or a later one). seq_cst: the clear is the waker's
 * half of the Dekker pair with the worker's registration (set bit, fence, look at the FIFOs). */
static bool op_pool_wake_worker_ticket(op_pool *pool, int index, uint32_t *ticket) {
    uint64_t bit = UINT64_C(1) << (index % 64);
    uint64_t old = atomic_fetch_and_explicit(&pool->parked[index / 64], ~bit, memory_order_seq_cst);
    if (!(old & bit)) return false; /* awake already, or another waker took it */
    op_worker *worker = &pool->workers[index];
    /* release: the worker's acquiring look at the word sees the token pushed before. */
    *ticket = atomic_fetch_add_explicit(&worker->wake_word, 1, memory_order_release) + 1;
    op_futex_wake(&worker->wake_word, 1);
    return true;
}

/* op_pool_wake_worker_ticket without the ticket. */
static bool op_pool_wake_worker(op_pool *pool, int index) {
    uint32_t ticket;
    return op_pool_wake_worker_ticket(pool, index, &ticket);
}

/* Wakes one parked worker of the pool for a token just pushed (the caller pushed and fenced).
 * Which one: a thread that is not a worker (a submitter of its own) wakes the worker pinned to
 * the CPU it runs on, if parked, in a pool of the default class or above whose workers run under
 * SCHED_OTHER (wakes_on_submitter_cpu). That worker preempts the submitter as the wake's system
 * call returns (their short slice, time_slice.c), with no inter-processor interrupt: waking a
 * thread on an idle CPU costs an interrupt, and the idle CPU's exit from its sleep (on a 2-vCPU
 * VM: 24 µs to a worker on the other vCPU, 2.5 µs to one on the waker's own, tools probe of
 * 2026-11; libdispatch's threads land on the waker's CPU the same way, through the kernel's
 * wake-affine choice). If it has not run by then (the kernel did not preempt: the worker was not
 * yet eligible, the kernel granted no short slice, the submitter runs under a real-time policy or
 * has a short slice too, or moved to another CPU meanwhile), it waits for the submitter to block
 * or to be preempted, and being pinned it cannot move to an idle CPU: a worker on another CPU is
 * woken as well, and whichever comes first takes the token (counted in backed_wakes). Without the
 * short slice that is every time, and still the cheaper choice on the 2-CPU VM with the slice
 * turned off: W7 idle p50 14-18 µs, against 40-45 µs waking the other CPU's worker first (and
 * 7-9 µs with no backstop, which left a submitter that goes on running ahead of its work for up
 * to 4 ms). In the other pools (utility, background, a pool for a nice value) a worker woken on
 * the CPU of a submitter that goes on running would wait behind it (p50 1.9 ms, the other CPU
 * idle, in a probe that spins after each submit on 2 CPUs), so a submitter wakes as a worker
 * does. A worker of any pool keeps its own CPU busy with the body that submitted, so it wakes a
 * worker on another CPU, the first parked one after its own (wake-ups spread over the CPUs), and
 * the one on its own CPU only when no other is parked. With none parked at all (or none but the
 * one woken first), a parked spare (they park on the pool's event). */
static void op_pool_wake_one(op_pool *pool) {
    op_worker *self = op_tls_worker;
    int cpu = self && !self->spare ? self->cpu : sched_getcpu();
    int local = cpu >= 0 && cpu <= pool->max_cpu_id ? pool->worker_of_cpu[cpu] : -1;
    uint32_t ticket;
    /* relaxed: a hint (see wakes_on_submitter_cpu). */
    bool own_first = atomic_load_explicit(&pool->wakes_on_submitter_cpu, memory_order_relaxed);
    if (!self && local >= 0 && own_first && op_pool_wake_worker_ticket(pool, local, &ticket)) {
        /* relaxed: a stale value only wakes the second worker for nothing. The worker's value
         * is below ours (we bumped last) unless it ran since: then the difference is below 2^31. */
        uint32_t seen = atomic_load_explicit(&pool->workers[local].wake_seen, memory_order_relaxed);
        if (seen - ticket < UINT32_C(0x80000000)) return;
        atomic_fetch_add_explicit(&pool->backed_wakes, 1, memory_order_relaxed);
    }
    /* The others, starting after ours (so wake-ups spread over the CPUs); the one on our own
     * CPU only when no other is parked: it would wait for what runs here. */
    int start = local >= 0 ? local + 1 : 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int w = 0; w <= pool->parked_words; w++) {
            int word_index = (start / 64 + w) % pool->parked_words;
            /* seq_cst: after the caller's push and fence, as the registration's counterpart. */
            uint64_t word = atomic_load_explicit(&pool->parked[word_index], memory_order_seq_cst);
            if (w == 0) word &= ~UINT64_C(0) << (start % 64); /* from `start` on in its word */
            while (word) {
                int index = word_index * 64 + __builtin_ctzll(word);
                word &= word - 1;
                if (index >= pool->size || (pass == 0 && index == local)) continue;
                if (op_pool_wake_worker(pool, index)) return;
            }
        }
        if (local < 0) break;
    }
    op_event_notify(&pool->event, 1);
}

/* Wakes every parked worker (a placed pool's idle workers leaving one after another). */
static void op_pool_wake_all(op_pool *pool) {
    for (int index = 0; index < pool->size; index++) op_pool_wake_worker(pool, index);
    op_event_notify(&pool->event, INT32_MAX);
}

/* Parks pinned `worker` until a waker picks it or `timeout_ns` passes (ETIMEDOUT); returns with
 * a token if one showed up while it registered. The registration (its bit, seq_cst, then a
 * fence) and the look at the FIFOs after it pair with a pusher's push, fence and look at the
 * bits (Dekker): a token pushed meanwhile is either seen here or wakes a parked worker. */
static op_token *op_worker_park(op_pool *pool, op_worker *worker, int64_t timeout_ns, int *rc) {
    *rc = 0;
    uint64_t bit = UINT64_C(1) << (worker->index % 64);
    _Atomic uint64_t *word = &pool->parked[worker->index / 64];
    /* relaxed: only wakers change it, each after clearing our bit, which we read after this. */
    uint32_t key = atomic_load_explicit(&worker->wake_word, memory_order_relaxed);
    atomic_fetch_or_explicit(word, bit, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
    op_token *token = op_pool_take_token(pool, worker->node);
    if (token) {
        /* Unregister; if a waker cleared our bit first, its wake-up was meant for a token (maybe
         * the one we took): pass it on, as the wake-up of another worker. */
        uint64_t old = atomic_fetch_and_explicit(word, ~bit, memory_order_seq_cst);
        if (!(old & bit)) {
            /* That waker's ticket is key + 1 (only the waker that cleared our bit bumps): it
             * finds us running and wakes nobody else (relaxed: see op_pool_wake_one). */
            atomic_store_explicit(&worker->wake_seen, key + 1, memory_order_relaxed);
            if (op_pool_has_tokens(pool)) op_pool_wake_one(pool);
        }
        return token;
    }
    int64_t deadline = timeout_ns >= 0 ? op_now_ns() + timeout_ns : -1;
    /* acquire: pairs with the waker's releasing bump (the token it woke us for is visible). */
    while (atomic_load_explicit(&worker->wake_word, memory_order_acquire) == key) {
        int64_t left = -1;
        if (deadline >= 0) {
            left = deadline - op_now_ns();
            if (left <= 0) { *rc = ETIMEDOUT; break; }
        }
        op_futex_wait(&worker->wake_word, key, left);
    }
    /* Running again: a waker that checks whether its wake-up ran reads this (relaxed: a hint,
     * see op_pool_wake_one). */
    uint32_t woken = atomic_load_explicit(&worker->wake_word, memory_order_relaxed);
    atomic_store_explicit(&worker->wake_seen, woken, memory_order_relaxed);
    /* Timed out (or woken and cleared already): make sure we are not registered any more. A
     * waker that cleared the bit after our timeout bumps the word for nothing: harmless. */
    uint64_t old = atomic_fetch_and_explicit(word, ~bit, memory_order_seq_cst);
    if (*rc == ETIMEDOUT && !(old & bit)) *rc = 0; /* picked just as we gave up: look for work */
    return NULL;
}

/* After tokens were pushed into the pool's FIFOs: wakes a worker unless one searches, pokes the
 * monitor, and starts missing workers. */
static void op_pool_note_pushed(op_pool *pool) {
    /* seq_cst: the push is ordered before reading `searching` and the parked bits (Dekker with a
     * worker that stops searching, or registers as parked, and then re-checks the FIFOs). */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&pool->searching, memory_order_seq_cst) == 0) {
        op_pool_wake_one(pool);
    }
    op_monitor_poke(); /* after the fence: see blocked_worker_monitor.c */
    /* relaxed: a hint; the retry decides under its lock. */
    if (OP_UNLIKELY(atomic_load_explicit(&pool->created, memory_order_relaxed) < pool->size)) {
        op_pool_retry_workers(pool);
    }
}

void op_pool_push_token(op_pool *pool, op_token *token) {
    int node = pool->node_count > 1 ? op_topology_current_node() : 0;
    op_fifo_push(&pool->tokens[node], token);
    op_pool_note_pushed(pool);
}

/* Tokens popped by one rehoming pass at most: a pass must end while others keep pushing. */
#define OP_REHOME_MAX 256

void op_pool_rehome_tokens(op_pool *pool) {
    /* Popping takes a token as a worker would: it carries its queue's slot and busy unit, which
     * keep the queue alive until the token is pushed again (our last touch of it). The pops and
     * pushes are the FIFOs' own (lock-free, multi-producer multi-consumer). A token of this pool
     * goes back behind those pushed meanwhile: the order of tokens is a pool's fairness only. */
    op_token *taken[OP_REHOME_MAX];
    int node_of[OP_REHOME_MAX];
    int count = 0;
    for (int node = 0; node < pool->node_count && count < OP_REHOME_MAX; node++) {
        for (op_token *token; count < OP_REHOME_MAX && (token = op_fifo_pop(&pool->tokens[node]));) {
            node_of[count] = node;
            taken[count++] = token;
        }
    }
    OP_RACE_WINDOW("rehome: tokens taken out, before pushing them again");
    bool kept = false;
    for (int i = 0; i < count; i++) {
        /* A class without `home` (tokens that are not a queue's) stays in this pool. */
        op_pool *home = taken[i]->cls->home ? taken[i]->cls->home(taken[i]) : NULL;
        if (home && home != pool) {
            op_pool_push_token(home, taken[i]);
        } else {
            op_fifo_push(&pool->tokens[node_of[i]], taken[i]); /* back on the node it waited on */
            kept = true;
        }
    }
    /* A worker that looked while we held the tokens saw the FIFOs empty and may have parked:
     * what went back is announced as any push is (pushing back with no wake-up stranded a
     * serial queue's token with every worker parked). */
    if (kept) op_pool_note_pushed(pool);
}

static op_token *op_pool_take_token(op_pool *pool, int home) {
    for (int i = 0; i < pool->node_count; i++) {
        int node = (home + i) % pool->node_count;
        op_token *token = op_fifo_pop(&pool->tokens[node]);
        if (token) return token;
    }
    return NULL;
}

/* ---- what runs tasks on a worker needs of it ---------------------------------------------- */

/* The nice a pool's workers hold between tasks, before clamping. */
static int op_pool_wanted_nice(const op_pool *pool) {
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

static void op_pool_uncount_blocked(op_pool *pool);

void op_worker_count_task(void) {
    op_worker *worker = op_tls_worker;
    /* relaxed: a count for introspection; no body runs, nothing for the monitor to see. */
    atomic_store_explicit(&worker->run, ++worker->serial << OP_RUN_SERIAL_SHIFT,
                          memory_order_relaxed);
}

void op_worker_body_begin(op_token *token) {
    op_worker *worker = op_tls_worker;
    worker->token = token;
    /* release: the monitor, which reads `token` after its acquiring compare-and-swap. */
    atomic_store_explicit(&worker->run, (++worker->serial << OP_RUN_SERIAL_SHIFT) | OP_RUN_IN_TASK,
                          memory_order_release);
}

/* Sets the worker's `run` word to (run & keep) | set once the monitor is not lending for it;
 * returns the word it replaced (acquire: a lending monitor's count and `monitor_lent`, written
 * before its releasing flip to LENT or RELENT, come before the caller's take-back). */
static uint64_t op_worker_settle_run(op_worker *worker, uint64_t keep, uint64_t set) {
    return op_worker_word_settle(&worker->run, OP_RUN_LENDING, keep, set);
}

void op_worker_body_end(void) {
    op_worker *worker = op_tls_worker;
    uint64_t old = op_worker_settle_run(worker, 0, worker->serial << OP_RUN_SERIAL_SHIFT);
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

/* ---- spares for blocked workers ------------------------------------------------------------ */

/* An idle spare leaves if there are more spares than blocked threads; true if it may exit. */
static bool op_spare_retire(op_pool *pool) {
    uint64_t word = atomic_load_explicit(&pool->balance, memory_order_relaxed);
    while (OP_BALANCE_SPARES(word) > OP_BALANCE_BLOCKED(word)) {
        /* relaxed: a count; the thread that needs a spare re-decides on this same word. */
        if (atomic_compare_exchange_weak_explicit(&pool->balance, &word, word - OP_BALANCE_SPARE,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            return true;
        }
    }
    return false;
}

/* Counts one more blocked thread; true when the caller must start a spare (already counted). */
static bool op_pool_count_blocked(op_pool *pool) {
    uint64_t word = atomic_load_explicit(&pool->balance, memory_order_relaxed);
    for (;;) {
        uint32_t blocked = OP_BALANCE_BLOCKED(word) + 1;
        uint32_t spares = OP_BALANCE_SPARES(word);
        bool start = spares < blocked && spares < OP_SPARES_MAX;
        uint64_t next = word + 1 + (start ? OP_BALANCE_SPARE : 0);
        /* relaxed: counts only; one word, so this and op_spare_retire decide in one order. */
        if (atomic_compare_exchange_weak_explicit(&pool->balance, &word, next,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            return start;
        }
    }
}

static void op_pool_uncount_blocked(op_pool *pool) {
    /* relaxed: a count. A surplus spare notices when it next idles. */
    atomic_fetch_sub_explicit(&pool->balance, 1, memory_order_relaxed);
}

bool op_worker_will_block(void) {
    op_pool *pool = op_tls_pool;
    if (!pool) return false; /* not a worker: nothing to stand in for */
    bool lent_by_monitor = false;
    op_worker *worker = op_tls_worker;
    if (worker) {
        /* relaxed: the monitor's compare-and-swap on the same word sees the bit or not. */
        uint64_t old = atomic_fetch_or_explicit(&worker->run, OP_RUN_VISIBLE_WAIT,
                                                memory_order_relaxed);
        lent_by_monitor = (old & (OP_RUN_LENT | OP_RUN_LENDING)) != 0;
    }
    if (op_pool_count_blocked(pool)) op_pool_start_spare(pool);
    return !lent_by_monitor;
}

void op_worker_wait_settled(bool lent) {
    if (!op_tls_worker) return;
    /* relaxed: as VISIBLE_WAIT; the monitor's compare-and-swap sees the bits or not, and acts on
     * a wait only once it is settled, so never lends what the wait's start lent. */
    atomic_fetch_or_explicit(&op_tls_worker->run,
                             OP_RUN_WAIT_SETTLED | (lent ? OP_RUN_WAIT_LENT : 0),
                             memory_order_relaxed);
}

void op_worker_did_unblock(void) {
    op_pool *pool = op_tls_pool;
    if (!pool) return;
    op_worker *worker = op_tls_worker;
    if (worker) {
        /* The wait's bits go, and with them a slot the monitor lent during the wait (RELENT):
         * it is taken back here, once, so a later wait or block of the same task starts from
         * nothing lent and the queue runs no longer over its width. While the monitor lends
         * (LENDING, a few instructions) we wait for it, as at a task's end. */
        uint64_t old = op_worker_settle_run(
            worker, ~(OP_RUN_VISIBLE_WAIT | OP_RUN_WAIT_SETTLED | OP_RUN_WAIT_LENT | OP_RUN_RELENT),
            0);
        if (old & OP_RUN_RELENT) {
            worker->monitor_lent->cls->take_back_slot(worker->monitor_lent);
            worker->monitor_lent = NULL;
        }
    }
    op_pool_uncount_blocked(pool);
}

/* ---- the monitor's look at the workers ------------------------------------------------------ */

/* Counts `worker` blocked if it ran one task since the monitor's last look and the kernel
 * reports it asleep: a spare stands in, and a default-width queue gets its slot lent. */
static void op_pool_look_at(op_pool *pool, op_worker *worker) {
    /* relaxed: a first look; the compare-and-swap below decides. */
    uint64_t run = atomic_load_explicit(&worker->run, memory_order_relaxed);
    uint64_t seen = worker->monitor_seen;
    worker->monitor_seen = run;
    if ((run & (OP_RUN_IN_TASK | OP_RUN_LENT | OP_RUN_VISIBLE_WAIT | OP_RUN_LENDING |
                OP_RUN_WAIT_SETTLED | OP_RUN_WAIT_LENT | OP_RUN_RELENT)) ==
            (OP_RUN_IN_TASK | OP_RUN_VISIBLE_WAIT | OP_RUN_WAIT_SETTLED) &&
        run == seen) {
        /* In a visible wait for a whole tick, whose queue could not lend its slot when the wait
         * began (an explicit width): the width may be the default now (a body set it), and the
         * work the wait waits for may sit behind it. Lend as for a worker counted blocked; the
         * wait counted itself blocked already. acquire, and LENDING holds the worker at its
         * task's end, as below. What it released went to the bands when the wait began. */
        if (atomic_compare_exchange_strong_explicit(&worker->run, &run, run | OP_RUN_LENDING,
                                                    memory_order_acquire, memory_order_relaxed)) {
            bool lent = worker->token->cls->lend_slot(worker->token, NULL);
            if (lent) worker->monitor_lent = worker->token;
            /* release: `monitor_lent` before the worker's acquiring end sees RELENT. */
            atomic_fetch_xor_explicit(&worker->run, OP_RUN_LENDING | (lent ? OP_RUN_RELENT : 0),
                                      memory_order_release);
        }
        return;
    }
    if ((run & (OP_RUN_IN_TASK | OP_RUN_LENT | OP_RUN_VISIBLE_WAIT | OP_RUN_LENDING)) ==
            (OP_RUN_IN_TASK | OP_RUN_LENT) &&
        run == seen) {
        /* Counted blocked, still in that task. If its queue could not lend its slot then (an
         * explicit width), the width may have become the default since (a body set it): ask
         * again. acquire, and the worker waits at its task's end while LENDING is set, as below;
         * `monitor_lent` is read only after it: the worker clears it at a task's end, before
         * the releasing start of its next task. */
        if (atomic_compare_exchange_strong_explicit(&worker->run, &run, run | OP_RUN_LENDING,
                                                    memory_order_acquire, memory_order_relaxed)) {
            if (!worker->monitor_lent &&
                worker->token->cls->lend_slot(worker->token, worker->spare ? NULL : &worker->local)) {
                worker->monitor_lent = worker->token;
                atomic_fetch_sub_explicit(&pool->blocked_unlent, 1, memory_order_relaxed);
            }
            /* release: `monitor_lent` before the worker's acquiring end sees LENDING clear. */
            atomic_fetch_and_explicit(&worker->run, ~OP_RUN_LENDING, memory_order_release);
        }
        return;
    }
    if ((run & (OP_RUN_IN_TASK | OP_RUN_LENT | OP_RUN_VISIBLE_WAIT | OP_RUN_LENDING)) !=
            OP_RUN_IN_TASK ||
        run != seen) {
        return; /* idle, counted already, or a new task since the last look */
    }
    int tid = atomic_load_explicit(&worker->tid, memory_order_relaxed);
    if (tid == 0 || !op_thread_is_asleep(tid)) return;
    /* acquire: see the worker's `queue` for this task. The worker waits at its task's end while
     * LENDING is set, so the queue stays alive until we flip to LENT. */
    if (!atomic_compare_exchange_strong_explicit(&worker->run, &run, run | OP_RUN_LENDING,
                                                 memory_order_acquire, memory_order_relaxed)) {
        return; /* the task ended, or a visible wait began */
    }
    bool start = op_pool_count_blocked(pool);
    /* May push a token: a spare takes it. */
    worker->monitor_lent =
        worker->token->cls->lend_slot(worker->token, worker->spare ? NULL : &worker->local)
            ? worker->token : NULL;
    /* relaxed: a count (see blocked_unlent); the worker's end reads monitor_lent after LENT. */
    if (!worker->monitor_lent) atomic_fetch_add_explicit(&pool->blocked_unlent, 1, memory_order_relaxed);
    /* release: the count and `monitor_lent` before LENT (the worker's acquiring end). The
     * exchange keeps a VISIBLE_WAIT bit set meanwhile. */
    atomic_fetch_xor_explicit(&worker->run, OP_RUN_LENDING | OP_RUN_LENT, memory_order_release);
    if (start) op_pool_start_spare(pool);
}

/* Whether some worker's local run queue holds a task: work that waits like a token does (its
 * worker may be blocked in the body that released it). */
static bool op_pool_holds_local_work(op_pool *pool) {
    for (int i = 0; i < pool->size; i++) {
        if (!op_local_run_queue_is_empty(&pool->workers[i].local)) return true;
    }
    return false;
}

/* The monitor's tick: for each pool whose tokens (or local run queues' tasks) wait, look at its
 * workers and spares. */
/* Queues whose work waits behind their width (op_pool_count_queue_waiting_at_width). One word for
 * the process: written when a queue is marked or cleared (not per task), read by the monitor's
 * tick. */
alignas(OP_CACHE_LINE) _Atomic int32_t op_queues_waiting_at_width;

void op_pool_count_queue_waiting_at_width(int delta) {
    /* relaxed: a count the monitor reads at its next tick; the wake-up below orders the first. */
    int32_t before = atomic_fetch_add_explicit(&op_queues_waiting_at_width, delta,
                                               memory_order_relaxed);
    if (delta > 0 && before == 0) {
        /* seq_cst fence: Dekker with the monitor going to sleep (it publishes ASLEEP, fences,
         * then ticks once more), as a token push does. */
        atomic_thread_fence(memory_order_seq_cst);
        op_monitor_poke();
    }
}

/* Looks at the pool's workers when its tokens or local run queues wait, or (`every`) always. */
static bool op_pool_monitor_look(op_pool *pool, bool every) {
    if (!pool) return false;
    /* relaxed: counts and hints; a change after this look wakes the monitor again or is seen
     * at its next tick. */
    bool tokens = op_pool_has_tokens(pool);
    /* Tokens that waited through a whole tick may belong to a queue that moved to another pool
     * since they were pushed (a QoS or placement change racing a push): they go there. Only
     * the monitor reads and writes `tokens_waited`. */
    if (tokens && pool->tokens_waited) op_pool_rehome_tokens(pool);
    pool->tokens_waited = tokens;
    if (!every && !tokens && !op_pool_holds_local_work(pool) &&
        atomic_load_explicit(&pool->blocked_unlent, memory_order_relaxed) <= 0) {
        return false;
    }
    for (int i = 0; i < pool->size; i++) op_pool_look_at(pool, &pool->workers[i]);
    pthread_mutex_lock(&pool->spares_lock);
    for (op_worker *spare = pool->spares; spare; spare = spare->next_spare) {
        op_pool_look_at(pool, spare);
    }
    pthread_mutex_unlock(&pool->spares_lock);
    return true;
}

static bool op_pool_monitor_tick(void) {
    /* relaxed: a count; a queue marked after this look wakes the monitor again. */
    bool every = atomic_load_explicit(&op_queues_waiting_at_width, memory_order_relaxed) > 0;
    bool waiting = every;
    for (int qos = 0; qos < OP_QOS_COUNT; qos++) {
        /* acquire: pairs with the publishing store in op_pool_for. */
        if (op_pool_monitor_look(atomic_load_explicit(&op_pools[qos], memory_order_acquire), every)) {
            waiting = true;
        }
    }
    /* acquire: pairs with the publishing exchange in op_pool_for_placement. */
    for (op_pool *pool = atomic_load_explicit(&op_placed_pools, memory_order_acquire); pool;
         pool = pool->next_placed) {
        if (op_pool_monitor_look(pool, every)) waiting = true;
    }
    return waiting;
}

static void *op_worker_main(void *arg);

/* Raises spares_peak to the spares counted now (a started or a reused spare). */
static void op_pool_note_spares_peak(op_pool *pool) {
    /* relaxed: counts for op_runtime_spare_workers' report. */
    int total = (int)OP_BALANCE_SPARES(atomic_load_explicit(&pool->balance, memory_order_relaxed));
    int peak = atomic_load_explicit(&pool->spares_peak, memory_order_relaxed);
    while (total > peak && !atomic_compare_exchange_weak_explicit(
                               &pool->spares_peak, &peak, total, memory_order_relaxed,
                               memory_order_relaxed)) {
    }
}

/* A spare is needed (already counted in `balance`): wake a lingering one if there is one not
 * yet claimed; true when one was claimed. Between a spare's retiring (op_spare_retire) and its
 * lingering it is counted in neither word: a wait that blocks then starts a new thread, and the
 * old one lingers and leaves (a thread too many for 0.5 s, never a claim without a thread). */
static bool op_pool_reuse_idle_spare(op_pool *pool) {
    uint64_t word = atomic_load_explicit(&pool->idle_spares, memory_order_relaxed);
    while (OP_IDLE_SPARES(word) > OP_IDLE_CLAIMS(word)) {
        /* relaxed: the claim is a count; the event's notify (a seq_cst fence) orders it before
         * the look at its waiters, and the spare re-reads the word after registering. */
        if (atomic_compare_exchange_weak_explicit(&pool->idle_spares, &word, word + OP_IDLE_CLAIM,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            op_event_notify(&pool->idle_event, 1);
            op_pool_note_spares_peak(pool);
            return true;
        }
    }
    return false;
}

/* A spare that is no longer needed lingers: parked on idle_event until a claim (it becomes a
 * needed spare again: true) or OP_SPARE_LINGER_NS without one (it leaves: false). The claim
 * and the leaving are decided on one word, so a claim is never left without a thread. */
static bool op_spare_linger(op_pool *pool, op_worker *worker) {
    /* relaxed: a flag for the diagnostic report only. */
    atomic_store_explicit(&worker->lingering, true, memory_order_relaxed);
    /* relaxed, here and in the compare-and-swap below: every decision (take a claim, leave) is
     * made by a compare-and-swap on this one word, so a stale read only fails it; the claim's
     * visibility comes from the event (prepare_wait's seq_cst registration against notify's
     * seq_cst fence), not from this word's order. */
    atomic_fetch_add_explicit(&pool->idle_spares, OP_IDLE_SPARE, memory_order_relaxed);
    int64_t deadline = op_now_ns() + OP_SPARE_LINGER_NS;
    for (;;) {
        uint32_t key = op_event_prepare_wait(&pool->idle_event);
        /* after registering (prepare_wait is seq_cst): a claim made before the notify's fence is
         * seen here, or the notify sees us registered and wakes us. */
        uint64_t word = atomic_load_explicit(&pool->idle_spares, memory_order_relaxed);
        /* One clock read for both the test and the wait: a negative time left would make
         * op_event_wait sleep without a limit. */
        int64_t left = deadline - op_now_ns();
        bool expired = left <= 0;
        while (OP_IDLE_CLAIMS(word) > 0 || expired) {
            uint64_t next = OP_IDLE_CLAIMS(word) > 0 ? word - OP_IDLE_CLAIM - OP_IDLE_SPARE
                                                      : word - OP_IDLE_SPARE;
            if (atomic_compare_exchange_weak_explicit(&pool->idle_spares, &word, next,
                                                      memory_order_relaxed, memory_order_relaxed)) {
                op_event_cancel_wait(&pool->idle_event);
                atomic_store_explicit(&worker->lingering, false, memory_order_relaxed);
                return OP_IDLE_CLAIMS(word) > 0;
            }
        }
        op_event_wait(&pool->idle_event, key, left);
    }
}

static void op_pool_start_spare(op_pool *pool) {
    if (op_pool_reuse_idle_spare(pool)) return;
    op_worker *spare = NULL;
    if (posix_memalign((void **)&spare, OP_CACHE_LINE, sizeof *spare) != 0) spare = NULL;
    int rc = ENOMEM;
    if (spare) {
        memset(spare, 0, sizeof *spare);
        spare->pool = pool;
        spare->spare = true;
        spare->index = atomic_fetch_add_explicit(&pool->spare_serial, 1, memory_order_relaxed);
        spare->cpu = -1;
        spare->node = 0;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = op_thread_create_at(&spare->thread, &attr, op_worker_main, spare,
                                 op_pool_wanted_nice(pool));
        pthread_attr_destroy(&attr);
    }
    if (rc != 0) {
        /* Out of threads: undo the count and go on blocking; the wait still ends when its
         * work runs on the remaining threads, and the monitor's ticks retry the spare
         * (op_pool_retry_spare). Reported once. */
        free(spare);
        atomic_fetch_sub_explicit(&pool->balance, OP_BALANCE_SPARE, memory_order_relaxed);
        /* relaxed: a hint read by the monitor's retry, which re-decides on `balance`. */
        atomic_store_explicit(&pool->spare_short, true, memory_order_relaxed);
        /* relaxed: only one thread may print; nothing else is ordered by it. */
        static _Atomic bool reported = false;
        if (!atomic_exchange_explicit(&reported, true, memory_order_relaxed)) {
            fprintf(stderr,
                    "operations: cannot start a spare worker for a blocked one (class %d): %s; "
                    "the blocked task's queue waits for the other workers, and the spare is "
                    "retried. Raise the container's pids.max or RLIMIT_NPROC (ulimit -u), or "
                    "restrict the CPU set so fewer workers are started.\n",
                    pool->qos, strerror(rc));
        }
        return;
    }
    op_pool_note_spares_peak(pool);
}

int op_runtime_spare_workers(op_qos_t qos, int *peak) {
    if ((unsigned)qos >= OP_QOS_COUNT) return 0;
    op_pool *pool = atomic_load_explicit(&op_pools[qos], memory_order_acquire);
    if (!pool) {
        if (peak) *peak = 0;
        return 0;
    }
    if (peak) *peak = atomic_load_explicit(&pool->spares_peak, memory_order_relaxed);
    return (int)OP_BALANCE_SPARES(atomic_load_explicit(&pool->balance, memory_order_relaxed));
}

/* How long a placed pool's worker stays parked without work before it leaves:
 * OPERATIONS_PLACED_POOL_IDLE_MS, read once (env.c's op_env_int: a malformed or out-of-range
 * value keeps the default, said once on stderr); default 10 s. At most INT64_MAX / 10^6 ms, so
 * that the nanoseconds fit. */
#define OP_PLACED_POOL_IDLE_MS_DEFAULT 10000
static pthread_once_t op_placed_pool_idle_once = PTHREAD_ONCE_INIT;
static int64_t op_placed_pool_idle_ms_value = OP_PLACED_POOL_IDLE_MS_DEFAULT;

static void op_placed_pool_idle_read_env(void) {
    op_placed_pool_idle_ms_value =
        op_env_int("OPERATIONS_PLACED_POOL_IDLE_MS", OP_PLACED_POOL_IDLE_MS_DEFAULT, 1,
                   INT64_MAX / 1000000, "milliseconds");
}

int64_t op_runtime_placed_pool_idle_ms(void) {
    /* pthread_once orders the value's store before every return through it. */
    pthread_once(&op_placed_pool_idle_once, op_placed_pool_idle_read_env);
    return op_placed_pool_idle_ms_value;
}

static int64_t op_placed_pool_idle_ns(void) { return op_runtime_placed_pool_idle_ms() * 1000000; }

/* A placed pool's worker found nothing to do for a whole idle period (or another one left and
 * passed the word on): it leaves if it is the highest-numbered worker with a thread, so the
 * slots [0, created) keep theirs, and wakes the others, one of which is then the highest.
 * True when it may exit: its slot is then free for the next start, which the next token push
 * makes (op_pool_push_token sees the pool short). */
static bool op_pool_worker_leaves_idle(op_pool *pool, op_worker *worker) {
    pthread_mutex_lock(&pool->grow_lock);
    int created = atomic_load_explicit(&pool->created, memory_order_relaxed);
    if (worker->index != created - 1 || !op_local_run_queue_is_empty(&worker->local)) {
        pthread_mutex_unlock(&pool->grow_lock);
        return false;
    }
    /* Our slot's fields are reset before the slot is given up: a start may reuse it at once. */
    atomic_store_explicit(&worker->tid, 0, memory_order_relaxed);
    atomic_fetch_sub_explicit(&pool->started, 1, memory_order_relaxed);
    /* seq_cst store, then a fence and a look at the tokens: Dekker with op_pool_push_token
     * (push, fence, read `created`). Either the pusher sees the pool short and starts a worker,
     * or we see its token and stay. */
    atomic_store_explicit(&pool->created, created - 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
    if (op_pool_has_tokens(pool)) {
        atomic_store_explicit(&pool->created, created, memory_order_relaxed);
        atomic_fetch_add_explicit(&pool->started, 1, memory_order_relaxed);
        atomic_store_explicit(&worker->tid, op_current_tid(), memory_order_relaxed);
        /* relaxed: a hint read by parked workers; cleared while work comes. */
        atomic_store_explicit(&pool->leaving, false, memory_order_relaxed);
        pthread_mutex_unlock(&pool->grow_lock);
        return false;
    }
    /* The next push restarts workers at once (no backoff: nothing failed). */
    atomic_store_explicit(&pool->retry_at, 0, memory_order_relaxed);
    bool more = created - 1 > 0;
    atomic_store_explicit(&pool->leaving, more, memory_order_relaxed);
    pthread_mutex_unlock(&pool->grow_lock);
    /* A pusher that saw the pool short while we held grow_lock could not start a worker (its
     * retry only tries the lock): look once more now that it is free. seq_cst fence: after our
     * unlock, before the look at the tokens, as in the Dekker pair above. */
    atomic_thread_fence(memory_order_seq_cst);
    if (op_pool_has_tokens(pool)) op_pool_retry_workers(pool);
    if (more) op_pool_wake_all(pool); /* the next highest leaves too */
    return true;
}

static void *op_worker_main(void *arg) {
    op_worker *worker = arg;
    op_pool *pool = worker->pool;
    char name[16];
    if (pool->fixed_nice != OP_NICE_UNCHANGED) {
        snprintf(name, sizeof name, worker->spare ? "op-n%d-s%d" : "op-n%d-w%d", pool->fixed_nice,
                 worker->index);
    } else {
        snprintf(name, sizeof name, worker->spare ? "op-q%d-s%d" : "op-q%d-w%d", pool->qos,
                 worker->index);
    }
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
                    op_event_wait(&pool->event, key, OP_SPARE_IDLE_NS);
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
    pthread_mutex_unlock(&pool->spares_lock);
    free(worker);
    return NULL;
}

/* Starts the threads of the slots from `created` on, in order, stopping at the first failure.
 * Under grow_lock. Returns 0 or the failure's errno value. */
static int op_pool_start_workers(op_pool *pool) {
    int created = atomic_load_explicit(&pool->created, memory_order_relaxed);
    int rc = 0;
    while (created < pool->size) {
        op_worker *worker = &pool->workers[created];
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = op_thread_create_at(&worker->thread, &attr, op_worker_main, worker,
                                 op_pool_wanted_nice(pool));
        pthread_attr_destroy(&attr);
        if (rc != 0) break;
        /* relaxed: a hint (see `leaving`): workers are needed again, the idle cascade stops. */
        atomic_store_explicit(&pool->leaving, false, memory_order_relaxed);
        created++;
        /* relaxed: see the field's comment. */
        atomic_store_explicit(&pool->created, created, memory_order_relaxed);
    }
    return rc;
}

/* Says once on stderr that workers could not start. */
static void op_pool_report_short(op_pool *pool, int rc) {
    int created = atomic_load_explicit(&pool->created, memory_order_relaxed);
    /* relaxed: only one thread may print each message; nothing else is ordered by them. */
    static _Atomic bool reported = false, reported_none = false;
    if (!atomic_exchange_explicit(&reported, true, memory_order_relaxed)) {
        fprintf(stderr,
                "operations: cannot start a worker thread (class %d%s): %s; %d of %d workers run "
                "instead, and the missing ones are retried with backoff. Raise the container's "
                "pids.max or RLIMIT_NPROC (ulimit -u), or restrict the CPU set (taskset, cpuset) "
                "so fewer workers are needed.\n",
                pool->qos, pool->placement ? ", a placed pool" : "", strerror(rc), created,
                pool->size);
    }
    if (created == 0 && !atomic_exchange_explicit(&reported_none, true, memory_order_relaxed)) {
        fprintf(stderr,
                "operations: no worker of class %d could start: its work waits until one can "
                "(retried on each submit and monitor tick, at most every second).\n",
                pool->qos);
    }
}

#define OP_RETRY_FIRST_NS INT64_C(1000000)     /* 1 ms */
#define OP_RETRY_MAX_NS INT64_C(1000000000)    /* 1 s */

/* Waits (bounded) until every worker that has a thread runs. */
static void op_pool_wait_started(op_pool *pool) {
    int64_t deadline = op_now_ns() + 10 * INT64_C(1000000000);
    while (atomic_load_explicit(&pool->started, memory_order_acquire) <
               atomic_load_explicit(&pool->created, memory_order_relaxed) &&
           op_now_ns() < deadline) {
        usleep(20);
    }
}

/* Starts missing workers if the backoff allows; never blocks on another retry. */
static void op_pool_retry_workers(op_pool *pool) {
    int64_t now = op_now_ns();
    if (now < atomic_load_explicit(&pool->retry_at, memory_order_relaxed)) return;
    if (pthread_mutex_trylock(&pool->grow_lock) != 0) return;
    if (atomic_load_explicit(&pool->created, memory_order_relaxed) < pool->size &&
        now >= atomic_load_explicit(&pool->retry_at, memory_order_relaxed)) {
        int rc = op_pool_start_workers(pool);
        if (rc != 0) {
            if (!atomic_exchange_explicit(&pool->start_failed, true, memory_order_relaxed)) {
                op_pool_report_short(pool, rc); /* workers that left when idle came back short */
            }
            pool->retry_delay = pool->retry_delay * 2 < OP_RETRY_MAX_NS ? pool->retry_delay * 2
                                                                        : OP_RETRY_MAX_NS;
            atomic_store_explicit(&pool->retry_at, op_now_ns() + pool->retry_delay,
                                  memory_order_relaxed);
        } else if (atomic_exchange_explicit(&pool->start_failed, false, memory_order_relaxed)) {
            fprintf(stderr, "operations: all %d workers of class %d%s run now.\n", pool->size,
                    pool->qos, pool->placement ? " (a placed pool)" : "");
        }
        /* So that op_runtime_worker_count / _info see the new workers as a prefix. */
        op_pool_wait_started(pool);
    }
    pthread_mutex_unlock(&pool->grow_lock);
}

/* A spare that could not start (op_pool_start_spare) is started now if still short. The
 * monitor's, every tick while flagged. */
static void op_pool_retry_spare(op_pool *pool) {
    if (!atomic_load_explicit(&pool->spare_short, memory_order_relaxed)) return;
    atomic_store_explicit(&pool->spare_short, false, memory_order_relaxed);
    uint64_t word = atomic_load_explicit(&pool->balance, memory_order_relaxed);
    while (OP_BALANCE_SPARES(word) < OP_BALANCE_BLOCKED(word) &&
           OP_BALANCE_SPARES(word) < OP_SPARES_MAX) {
        /* relaxed: counts, decided on the one word as op_pool_count_blocked does. */
        if (atomic_compare_exchange_weak_explicit(&pool->balance, &word, word + OP_BALANCE_SPARE,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            op_pool_start_spare(pool); /* flags spare_short again if it fails */
            return;
        }
    }
}

static void op_pool_retry(op_pool *pool) {
    if (!pool) return;
    if (atomic_load_explicit(&pool->start_failed, memory_order_relaxed) &&
        atomic_load_explicit(&pool->created, memory_order_relaxed) < pool->size) {
        op_pool_retry_workers(pool);
    }
    op_pool_retry_spare(pool);
}

/* The monitor's tick (op_pool_monitor_tick), then the retries of threads that could not start. */
static bool op_pool_monitor_tick_and_retry(void) {
    bool waiting = op_pool_monitor_tick();
    for (int qos = 0; qos < OP_QOS_COUNT; qos++) {
        /* acquire: as in op_pool_monitor_tick. */
        op_pool_retry(atomic_load_explicit(&op_pools[qos], memory_order_acquire));
    }
    for (op_pool *pool = atomic_load_explicit(&op_placed_pools, memory_order_acquire); pool;
         pool = pool->next_placed) {
        op_pool_retry(pool);
    }
    return waiting;
}

/* Makes a pool of class `qos` with one pinned worker per CPU of `placement` (NULL: every usable
 * CPU, the class's default pool). Workers that cannot start are reported and retried later. */
static op_pool *op_pool_create(int qos, const op_placement *placement, int fixed_nice) {
    op_pool_fork_register(); /* before its first worker: a fork from now on finds pools */
    const op_topology_data *topology = op_topology_get();
    op_nice_init();
    op_pool *pool = NULL;
    if (posix_memalign((void **)&pool, OP_CACHE_LINE, sizeof *pool) != 0) {
        op_fatal("operations: out of memory creating workers");
    }
    memset(pool, 0, sizeof *pool);
    pool->qos = qos;
    pool->fixed_nice = fixed_nice;
    pool->placement = placement;
    pool->size = placement ? op_placement_size(placement) : topology->cpu_count;
    pool->node_count = topology->node_count;
    if (posix_memalign((void **)&pool->tokens, OP_CACHE_LINE,
                       sizeof(op_fifo) * (size_t)pool->node_count) != 0 ||
        posix_memalign((void **)&pool->workers, OP_CACHE_LINE,
                       sizeof(op_worker) * (size_t)pool->size) != 0) {
        op_fatal("operations: out of memory creating workers");
    }
    for (int i = 0; i < pool->node_count; i++) op_fifo_init(&pool->tokens[i], 64);
    op_event_init(&pool->event);
    op_event_init(&pool->idle_event);
    atomic_init(&pool->idle_spares, 0);
    pool->parked_words = (pool->size + 63) / 64;
    pool->max_cpu_id = topology->max_cpu_id;
    if (posix_memalign((void **)&pool->parked, OP_CACHE_LINE,
                       sizeof(uint64_t) * (size_t)pool->parked_words) != 0 ||
        !(pool->worker_of_cpu = malloc(sizeof(int) * (size_t)(pool->max_cpu_id + 1)))) {
        op_fatal("operations: out of memory creating workers");
    }
    for (int i = 0; i < pool->parked_words; i++) atomic_init(&pool->parked[i], 0);
    for (int cpu = 0; cpu <= pool->max_cpu_id; cpu++) pool->worker_of_cpu[cpu] = -1;
    atomic_init(&pool->searching, 0);
    atomic_init(&pool->wakes_on_submitter_cpu, false);
    atomic_init(&pool->backed_wakes, 0);
    atomic_init(&pool->started, 0);
    atomic_init(&pool->balance, 0);
    atomic_init(&pool->spares_peak, 0);
    atomic_init(&pool->spare_serial, 0);
    atomic_init(&pool->created, 0);
    atomic_init(&pool->start_failed, false);
    atomic_init(&pool->blocked_unlent, 0);
    atomic_init(&pool->leaving, false);
    atomic_init(&pool->retry_at, 0);
    atomic_init(&pool->spare_short, false);
    pool->retry_delay = OP_RETRY_FIRST_NS / 2; /* doubled before the first wait */
    pthread_mutex_init(&pool->spares_lock, NULL);
    pthread_mutex_init(&pool->grow_lock, NULL);
    pool->spares = NULL;
    memset(pool->workers, 0, sizeof(op_worker) * (size_t)pool->size);
    /* Every slot is complete before any thread starts: a slot without a thread (tid 0, an
     * empty local run queue) is skipped by whatever walks the array. */
    for (int i = 0; i < pool->size; i++) {
        op_worker *worker = &pool->workers[i];
        worker->pool = pool;
        worker->index = i;
        int usable = placement ? op_placement_usable_index(placement, i) : i;
        worker->cpu = topology->cpus[usable];
        worker->node = topology->cpu_node[usable];
        if (worker->cpu >= 0 && worker->cpu <= pool->max_cpu_id) pool->worker_of_cpu[worker->cpu] = i;
        atomic_init(&worker->wake_word, 0);
        atomic_init(&worker->wake_seen, 0);
        atomic_init(&worker->tid, 0);
        atomic_init(&worker->body, 0);
        atomic_init(&worker->body_queue, NULL);
        atomic_init(&worker->class_nice, 0);
        atomic_init(&worker->run, 0);
        op_local_run_queue_init(&worker->local);
    }
    /* The monitor first: when threads are scarce it is what retries the missing workers. */
    op_monitor_start(op_pool_monitor_tick_and_retry);
    pthread_mutex_lock(&pool->grow_lock);
    int rc = op_pool_start_workers(pool);
    if (rc != 0) {
        atomic_store_explicit(&pool->start_failed, true, memory_order_relaxed);
        pool->retry_delay = OP_RETRY_FIRST_NS;
        atomic_store_explicit(&pool->retry_at, op_now_ns() + pool->retry_delay,
                              memory_order_relaxed);
        op_pool_report_short(pool, rc);
    }
    pthread_mutex_unlock(&pool->grow_lock);
    return pool;
}

op_pool *op_pool_for(op_qos_t qos) {
    if ((unsigned)qos >= OP_QOS_COUNT) qos = OP_QOS_DEFAULT;
    op_pool *pool = op_pool_for_nice_of_class(qos);
    op_class_requested((int)qos); /* after the pool: its workers noted what the kernel refused */
    return pool;
}

op_pool *op_pool_for_nice_of_class(op_qos_t qos) {
    if ((unsigned)qos >= OP_QOS_COUNT) qos = OP_QOS_DEFAULT;
    /* acquire: pairs with the release store below, so the pool is fully built. */
    op_pool *pool = atomic_load_explicit(&op_pools[qos], memory_order_acquire);
    if (OP_LIKELY(pool != NULL)) return pool;
    pthread_mutex_lock(&op_pools_lock);
    pool = atomic_load_explicit(&op_pools[qos], memory_order_relaxed);
    if (!pool) {
        pool = op_pool_create((int)qos, NULL, OP_NICE_UNCHANGED);
        /* Publish the pool only once every worker that started is running, so the
         * introspection calls see a complete, consistent set (workers start in any order).
         * Bounded: a thread that pthread_create accepted starts within microseconds; 10 s means
         * something is broken, and we go on rather than hang. */
        op_pool_wait_started(pool);
        atomic_store_explicit(&op_pools[qos], pool, memory_order_release);
    }
    pthread_mutex_unlock(&op_pools_lock);
    return pool;
}

/* The pool in `slot`, made on first use (class `qos`, `placement`, `fixed_nice`) and put on the
 * list of placed pools, which the monitor walks, before it goes into the slot. */
static op_pool *op_pool_listed_in(op_pool *_Atomic *slot, int qos, const op_placement *placement,
                                  int fixed_nice) {
    /* acquire: pairs with the release store below. */
    op_pool *pool = atomic_load_explicit(slot, memory_order_acquire);
    if (OP_LIKELY(pool != NULL)) return pool;
    pthread_mutex_lock(&op_pools_lock);
    pool = atomic_load_explicit(slot, memory_order_relaxed);
    if (!pool) {
        pool = op_pool_create(qos, placement, fixed_nice);
        op_pool_wait_started(pool);
        /* Onto the monitor's list (under the lock: one writer), then into the slot.
         * release: the monitor's acquiring load sees the pool built. */
        pool->next_placed = atomic_load_explicit(&op_placed_pools, memory_order_relaxed);
        atomic_store_explicit(&op_placed_pools, pool, memory_order_release);
        atomic_store_explicit(slot, pool, memory_order_release);
    }
    pthread_mutex_unlock(&op_pools_lock);
    return pool;
}

op_pool *op_pool_for_placement(const op_placement *placement, op_qos_t qos, op_pool *_Atomic *slot) {
    if ((unsigned)qos >= OP_QOS_COUNT) qos = OP_QOS_DEFAULT;
    op_pool *pool = op_pool_listed_in(slot, (int)qos, placement, OP_NICE_UNCHANGED);
    op_class_requested((int)qos); /* as op_pool_for */
    return pool;
}

op_pool *op_pool_for_nice(int nice) {
    if (nice < -20) nice = -20;
    if (nice > 19) nice = 19;
    /* Listed with the placed pools, which the monitor walks. */
    return op_pool_listed_in(&op_nice_pools[nice + 20], -1, NULL, nice);
}
