/*
 * parking_and_wake.c — tokens in and out of a pool, an idle pinned worker's parking, and the
 * wake choice: which parked worker a token push wakes.
 *
 * Tokens: queues hand the pool tokens (a queue with a claimed slot) through one lock-free FIFO
 * per NUMA node (op_pool_push_token: the submitting thread's node); a worker takes from its own
 * node's FIFO before the others (op_pool_take_token). op_pool_rehome_tokens moves the tokens
 * that another pool serves now to that pool, as their class's `home` says: a queue's token after
 * a QoS, promotion or placement change, a carried task's after its promotion.
 *
 * Idle workers spin for 0.5 µs ("searching", at most half the pool), then (the first two)
 * yield the CPU between looks until 30 µs from the start (worker.c says why), then park, each
 * on a futex word of its own,
 * with a bit in the pool's `parked` mask (op_worker_park; spares park on the pool's event count,
 * parking.c). A token push wakes one parked worker, and only when no worker is searching
 * (op_pool_wake_one): in a pool of the default class or above, a thread that is not a worker
 * wakes the one pinned to its own CPU, which preempts it and finds the caches warm, and one on
 * another CPU as well if that one did not run at once; so does a worker that hands work over
 * into a class at least its own (op_pool_hand_over_token: a task it carries away as it leaves
 * the queue, the slot a carrier gives back); a worker, and a submitter to another pool, the
 * next parked one after its own CPU's (its own CPU is busy) and its own CPU's only when no
 * other is parked. A worker that finds work after searching or parking wakes one more
 * if tokens are left, so bursts fan out without a wake per task. How many tokens a queue hands
 * out is the queue's policy (queue.c: a new slot only while none of its drainers idles).
 *
 * Invariants (which atomics pair with which; the comments at each say the same):
 *   - No wake-up is lost: a pusher pushes, fences (seq_cst) and only then reads `searching` and
 *     the `parked` bits (op_pool_note_pushed); a worker that stops searching (worker.c) or
 *     registers as parked (op_worker_park: sets its bit seq_cst, fences) looks at the FIFOs
 *     after that. Dekker: either the worker sees the token, or the pusher sees no searcher and
 *     the worker's bit, and wakes it (or another).
 *   - A wake-up belongs to whoever clears the worker's `parked` bit (a seq_cst fetch-and): only
 *     that waker bumps the worker's `wake_word` (release, pairing with the parked worker's
 *     acquiring look at it: the token it was woken for is visible) and futex-wakes it. A worker
 *     that took a token while registering and finds its bit cleared already passes the wake-up
 *     on to another worker.
 *   - `wake_seen`: the `wake_word` value the worker saw when it last left a park, written by the
 *     worker, read by a waker after its own-CPU wake (both relaxed: a hint; a stale value only
 *     wakes a second worker for nothing). A wake-up that had not run is backed by one on another
 *     CPU and counted in `backed_wakes` (relaxed: a count).
 *   - `wakes_on_submitter_cpu`: set by the workers as they start (worker.c), read relaxed: it
 *     only picks which worker a wake-up goes to.
 *   - A token out of a FIFO (a worker's, or one rehoming holds) carries its queue's slot and busy
 *     unit, which keep the queue alive until the token is pushed again or drained.
 *   - After its fence the pusher also pokes the monitor (blocked_worker_monitor.c) and, while
 *     the pool is short of workers, retries them (worker_pool.c's op_pool_retry_workers, which
 *     decides under grow_lock; the same fence pairs with a leaving placed-pool worker's).
 */
#include "pool_private.h"
#include "../base/observe.h"

#include <errno.h>
#include <sched.h>

/* ---- tokens in and out ---------------------------------------------------------------------- */

/* After tokens were pushed into the pool's FIFOs: wakes a worker unless one searches, pokes the
 * monitor, and starts missing workers. */
static void op_pool_note_pushed(op_pool *pool, bool handing_over) {
    /* seq_cst: the push is ordered before reading `searching` and the parked bits (Dekker with a
     * worker that stops searching, or registers as parked, and then re-checks the FIFOs). */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&pool->searching, memory_order_seq_cst) == 0) {
        op_pool_wake_one_for(pool, handing_over);
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
    op_pool_note_pushed(pool, false);
}

void op_pool_hand_over_token(op_pool *pool, op_token *token) {
    int node = pool->node_count > 1 ? op_topology_current_node() : 0;
    op_fifo_push(&pool->tokens[node], token);
    op_pool_note_pushed(pool, true);
}

/* Tokens popped by one rehoming pass at most: a pass must end while others keep pushing. */
#define OP_REHOME_MAX 256

void op_pool_rehome_tokens(op_pool *pool) {
    /* Popping takes a token as a worker would: it carries what keeps its queue alive until the
     * token is pushed again (our last touch of it): a queue's slot and busy unit, or a carried
     * task's busy unit (and its slot, when it carries one). The pops and
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
    if (kept) op_pool_note_pushed(pool, false);
}

op_token *op_pool_take_token(op_pool *pool, int home) {
    for (int i = 0; i < pool->node_count; i++) {
        int node = (home + i) % pool->node_count;
        op_token *token = op_fifo_pop(&pool->tokens[node]);
        if (token) return token;
    }
    return NULL;
}

/* ---- the wake choice ------------------------------------------------------------------------ */

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
 * the one on its own CPU only when no other is parked — unless it hands the work over into a
 * class at least its own (op_pool_hand_over_token: a task it carries to another pool as it
 * leaves the queue, the slot a carrier gives back): then it stops running that work itself,
 * and wakes as a submitter does, its own CPU's worker first, which preempts it where the class
 * is above its own, or runs as it searches (yielding) and parks.
 * Waking the other CPU's worker instead cost W9 "one queue, width CPUs" two wake-ups of a
 * vCPU (50–100 µs each in the trace: the background carrier's slot to a default drainer on
 * the other CPU, its carry of the probe to a userInteractive worker on the first CPU again).
 * With none parked at all (or none but the one woken first), a parked spare (they park on the
 * pool's event). */
void op_pool_wake_one(op_pool *pool) { op_pool_wake_one_for(pool, false); }

void op_pool_wake_one_for(op_pool *pool, bool handing_over) {
    op_worker *self = op_tls_worker;
    /* A hand-over wakes as a submitter does, its own CPU's worker first, only into a class at
     * least its own (pool->qos: -1 for a pool made for a nice value, which never wakes on the
     * submitter's CPU): a worker of a lower class would not preempt it, and the backstop would
     * wake a second one every time. */
    if (handing_over && self && pool->qos >= self->pool->qos) self = NULL;
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
void op_pool_wake_all(op_pool *pool) {
    for (int index = 0; index < pool->size; index++) op_pool_wake_worker(pool, index);
    op_event_notify(&pool->event, INT32_MAX);
}

/* ---- parking -------------------------------------------------------------------------------- */

/* Parks pinned `worker` until a waker picks it or `timeout_ns` passes (ETIMEDOUT); returns with
 * a token if one showed up while it registered. The registration (its bit, seq_cst, then a
 * fence) and the look at the FIFOs after it pair with a pusher's push, fence and look at the
 * bits (Dekker): a token pushed meanwhile is either seen here or wakes a parked worker. */
op_token *op_worker_park(op_pool *pool, op_worker *worker, int64_t timeout_ns, int *rc) {
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
    op_count_own(&worker->counts.parks, 1);
    OP_OBSERVE_PARK(worker->cpu);
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
    if (woken != key) {
        op_count_own(&worker->counts.wakeups, 1);
        OP_OBSERVE_WAKE(worker->cpu);
    }
    /* Timed out (or woken and cleared already): make sure we are not registered any more. A
     * waker that cleared the bit after our timeout bumps the word for nothing: harmless. */
    uint64_t old = atomic_fetch_and_explicit(word, ~bit, memory_order_seq_cst);
    if (*rc == ETIMEDOUT && !(old & bit)) *rc = 0; /* picked just as we gave up: look for work */
    return NULL;
}
