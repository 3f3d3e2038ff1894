/*
 * queue.c — queues: width, suspension, QoS, five priority bands, slots, waits and lifetime.
 *
 * A queue holds its ready tasks in its own op_ready_queue, so priority order holds among its
 * tasks at every width: a worker picks the next task at the moment it can run one. Workers
 * never see tasks directly: a queue with ready tasks and a free slot (running < width) claims
 * the slot and hands a token (the queue pointer) to the worker pool of its QoS class. The
 * worker holding the token drains the queue (drain.c), task after task, keeping the slot; it
 * gives the slot back when the queue is empty, suspended or narrowed. The add → run → finish
 * path takes no lock.
 *
 * How many drainers a queue gets (the waking policy, after tokio's and Go's "searching"
 * workers): a drainer that runs dry marks itself idle in `slots` while it looks for more work
 * (a few microseconds) before it gives its slot back. A submit claims a new slot only while no
 * drainer of the queue idles: an idle one takes the task. A drainer that takes a task and sees
 * more waiting claims one more slot if none idles (op_queue_ramp_up), so a backlog draws
 * drainers one at a time and a trickle keeps one or two, instead of one per free slot fighting
 * over each task.
 *
 * Work released on a drainer of the queue (a body's submits, dependents readied by a finish)
 * goes to that worker's local run queue (op_queue_push_local) and costs no shared line; the
 * queue's other drainers steal from it (drain.c, pool/worker.c).
 *
 * No lost work between "producer pushes, sees no free slot or an idle drainer" and "drainer
 * finds the queue empty, gives its slot back": each side writes (push / slots), issues a
 * seq_cst fence, then reads the other's location (slots / the bands and local run queues), so at
 * least one sees the other and claims a slot again (Dekker).
 *
 * Lifetime: `busy` counts unfinished tasks plus claimed slots (plus the credit a drainer took
 * ahead for its bodies' submits, drain.c). While busy > 0 the queue holds one extra reference
 * (taken on 0 → 1, dropped on 1 → 0), so a queue whose last handle is released lives until its
 * last task finished. Every path touches the queue last with its busy subtraction or a token
 * push, so nothing reads a queue after it could be freed.
 */
#include "queue.h"
#include "../base/observe.h"

#include <errno.h>
#include <string.h>

/* A queue's label: its text, and the next label the queue had (queue->labels_retired). */
typedef struct op_label {
    struct op_label *next;
    char text[];
} op_label;

static op_label *op_label_make(const char *text) {
    size_t length = strlen(text);
    op_label *label = malloc(sizeof *label + length + 1);
    if (!label) return NULL;
    label->next = NULL;
    memcpy(label->text, text, length + 1);
    return label;
}

_Thread_local op_queue_t *op_tls_queue = NULL;

static bool op_queue_token_lend_slot(op_token *token, op_local_run_queue_t *ring);
static void op_queue_token_take_back_slot(op_token *token) {
    op_queue_take_back_slot(op_queue_of_token(token));
}
static op_pool *op_queue_token_home(op_token *token) {
    return op_queue_pool(op_queue_of_token(token));
}

/* How the worker pool reaches a queue through its tokens (the pool's only way up). */
static const op_token_class op_queue_token_class = {
    .drain = op_drain_token,
    .lend_slot = op_queue_token_lend_slot,
    .take_back_slot = op_queue_token_take_back_slot,
    .home = op_queue_token_home,
};

op_queue_t *op_queue_create(const char *label, op_qos_t qos, int width) {
    if ((unsigned)qos >= OP_QOS_COUNT || width < OP_WIDTH_DEFAULT) {
        errno = EINVAL;
        return NULL;
    }
    op_queue_install_fork_hooks(); /* one relaxed load once installed */
    op_queue_t *queue = NULL;
    if (posix_memalign((void **)&queue, OP_CACHE_LINE, sizeof *queue) != 0) {
        errno = ENOMEM;
        return NULL;
    }
    atomic_init(&queue->busy, 0);
    atomic_init(&queue->started, 0);
    atomic_init(&queue->finished, 0);
    atomic_init(&queue->cancelled, 0);
    atomic_init(&queue->slots, 0);
    atomic_init(&queue->width, width);
    atomic_init(&queue->waits_at_width, false);
    atomic_init(&queue->bands_used, 0);
    atomic_init(&queue->suspended, false);
    atomic_init(&queue->qos, (int32_t)qos);
    atomic_init(&queue->promo, 0);
    memset(queue->promo_counts, 0, sizeof queue->promo_counts);
    atomic_init(&queue->placement, NULL);
    atomic_init(&queue->refs, 1);
    atomic_init(&queue->idle_epoch, 0);
    atomic_init(&queue->idle_waiters, 0);
    atomic_init(&queue->idle_notices, NULL);
    pthread_mutex_init(&queue->idle_lock, NULL);
    /* The affinity CPU count, or the cgroup CPU limit when lower (cgroup.c). */
    queue->default_width = op_topology_get()->default_width;
    queue->context = NULL;
    queue->context_retain = NULL;
    queue->context_release = NULL;
    queue->token.cls = &op_queue_token_class;
    op_label *made = label ? op_label_make(label) : NULL;
    if (label && !made) {
        free(queue);
        errno = ENOMEM;
        return NULL;
    }
    atomic_init(&queue->label, made ? made->text : NULL);
    atomic_init(&queue->labels_retired, made);
    atomic_init(&queue->latency, NULL);
    op_ready_queue_init(&queue->ready, 64);
    op_fifo_init(&queue->stash, 4);
    atomic_init(&queue->stashed, 0);
    queue->tracking = false;
    queue->release_context = NULL;
    atomic_init(&queue->registry_head, NULL);
    atomic_init(&queue->submitting, 0);
    atomic_init(&queue->registry_finishes, 0);
    queue->barriers_submitted = 0;
    atomic_init(&queue->barrier, NULL);
    atomic_init(&queue->compact_requested, false);
    atomic_init(&queue->releasing, 0);
    pthread_mutex_init(&queue->registry_lock, NULL);
    atomic_init(&queue->registry_kept, 0);
    atomic_init(&queue->registry_finishes_at_compaction, 0);
    return queue;
}

void op_queue_retain(op_queue_t *queue) {
    /* relaxed: the caller already holds a reference. */
    atomic_fetch_add_explicit(&queue->refs, 1, memory_order_relaxed);
}

void op_queue_release(op_queue_t *queue) {
    if (!queue) return;
    /* acq_rel: the last release sees all other owners' writes before freeing. */
    if (atomic_fetch_sub_explicit(&queue->refs, 1, memory_order_acq_rel) == 1) {
        /* relaxed: nobody else can reach the queue now. A mark left by a marker that lost a race
         * with the queue's going idle must not keep the count up for ever. */
        if (atomic_load_explicit(&queue->waits_at_width, memory_order_relaxed)) {
            op_pool_count_queue_waiting_at_width(-1);
        }
        op_registry_destroy(queue);
        op_queue_destroy_idle_notices(queue);
        /* Only entries made stale by re-banding can be left: each holds a task reference. */
        for (void *entry; (entry = op_ready_queue_pop(&queue->ready));) {
            op_task_release((op_task_t *)((uintptr_t)entry & ~OP_ENTRY_TAG_MASK));
        }
        op_ready_queue_deinit(&queue->ready);
        op_fifo_destroy(&queue->stash);
        /* relaxed: the last reference is gone (the acq_rel drop before ordered every rename). */
        for (op_label *l = atomic_load_explicit(&queue->labels_retired, memory_order_relaxed); l;) {
            op_label *next = l->next;
            free(l);
            l = next;
        }
        op_latency_free(queue);
        free(queue);
    }
}

const char *op_queue_label(const op_queue_t *queue) {
    /* acquire: pairs with op_queue_set_label's release store (the text is written). */
    return atomic_load_explicit(&((op_queue_t *)queue)->label, memory_order_acquire);
}

int op_queue_set_label(op_queue_t *queue, const char *label) {
    if (!queue) return EINVAL;
    op_label *made = NULL;
    if (label) {
        made = op_label_make(label);
        if (!made) return ENOMEM;
        /* Kept until the queue is destroyed (readers may hold any label it had). release: the
         * record's `next` and text before it is reachable; relaxed failure: we only retry. */
        made->next = atomic_load_explicit(&queue->labels_retired, memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(&queue->labels_retired, &made->next, made,
                                                      memory_order_release, memory_order_relaxed)) {
        }
    }
    /* release: the text before a reader that loads the pointer with acquire. */
    atomic_store_explicit(&queue->label, made ? made->text : NULL, memory_order_release);
    return 0;
}

static void op_queue_clear_waiting_at_width(op_queue_t *queue);

void op_queue_busy_add(op_queue_t *queue, uint64_t count) {
    /* seq_cst: ordered before the waiter's registration check in op_queue_wait. */
    uint64_t before = atomic_fetch_add_explicit(&queue->busy, count, memory_order_seq_cst);
    if (before == 0) {
        op_queue_retain(queue);
        if (queue->context_retain) queue->context_retain(queue->context);
    }
}

void op_queue_busy_sub(op_queue_t *queue, uint64_t count) {
    if (count == 0) return;
    /* Finished tasks are unlinked from the registry by the threads that finish them, where
     * they are still in cache, not by the submitter. Once our busy units are given back the
     * queue may be freed by whoever takes it idle, so a compaction after that holds a
     * reference of its own. */
    bool compact = queue->tracking && op_registry_compaction_due(queue, count);
    if (compact) op_queue_retain(queue);
    OP_RACE_WINDOW("busy: before the subtraction");
    /* seq_cst: Dekker with op_queue_wait (we write busy then read idle_waiters; it writes
     * idle_waiters then reads busy), and release of the tasks' effects to the waiter. */
    uint64_t before = atomic_fetch_sub_explicit(&queue->busy, count, memory_order_seq_cst);
    if (before != count) {
        if (compact) {
            op_registry_compact_if_idle(queue);
            op_queue_release(queue);
        }
        return;
    }
    if (compact) op_queue_release(queue); /* the idle path below compacts anyway */
    op_queue_clear_waiting_at_width(queue); /* idle: nothing waits (our busy reference holds it) */
    if (queue->tracking) op_registry_compact_if_idle(queue); /* unlink what finished */
    OP_RACE_WINDOW("busy: idle, before telling the waiters");
    if (atomic_load_explicit(&queue->idle_waiters, memory_order_seq_cst) != 0) {
        op_queue_wake_idle_waiters(queue);
    }
    if (queue->context_release) queue->context_release(queue->context);
    op_queue_release(queue); /* the busy reference; may free the queue */
}

void op_queue_busy_sub_held(op_queue_t *queue, uint64_t count) {
    /* seq_cst, as every change of busy (the waiters' Dekker pair); the caller holds other units,
     * so this never reaches zero. */
    OP_RACE_WINDOW("busy: a batch of finishes, before the subtraction");
    atomic_fetch_sub_explicit(&queue->busy, count, memory_order_seq_cst);
}

/* Where a claim looks for the work it claims a slot for. */
typedef enum {
    OP_WORK_KNOWN,    /* the caller knows of some */
    OP_WORK_IN_BANDS, /* the stash or the bands */
    OP_WORK_ANYWHERE, /* those, or a worker's local run queue */
} op_work_check;

/* Claims one slot, starting from `word` (the slots word as the caller last saw it): not while the
 * queue is suspended or at its width, nor (with `yield_to_idle`) while a drainer idles, and only
 * while work waits where `check` says. True when claimed. seq_cst, as every claim of a slot:
 * claims, releases and lends compare-and-swap the same word (see op_queue_release_slot). */
static bool op_queue_claim_slot(op_queue_t *queue, uint64_t word, bool yield_to_idle,
                                op_work_check check) {
    for (;;) {
        if (atomic_load_explicit(&queue->suspended, memory_order_relaxed)) return false;
        if (yield_to_idle && op_slots_idle(word) != 0) return false;
        if (op_slots_running(word) >= op_queue_effective_width(queue)) return false;
        if (check != OP_WORK_KNOWN && !op_queue_has_ready(queue) &&
            (check == OP_WORK_IN_BANDS ||
             !op_pool_local_work(op_queue_pool(queue), queue))) {
            return false;
        }
        OP_RACE_WINDOW("claim a slot");
        if (atomic_compare_exchange_weak_explicit(&queue->slots, &word, word + 1,
                                                  memory_order_seq_cst, memory_order_relaxed)) {
            return true;
        }
    }
}

/* A default-width queue's task that blocks where the core cannot see (a semaphore, a pipe, a
 * sleep) keeps its slot, and with one slot per CPU, as many such bodies as CPUs leave nothing for
 * the work that would unblock them. The monitor finds such bodies only where it looks: pools with
 * waiting tokens or local work, and pools counting a queue whose work waits behind its width.
 * A dispatch that could not claim a slot because the queue is at its width, or a drainer that
 * could not draw one more for the work behind the task it took, marks the queue here
 * (once, until it is cleared): the monitor then watches every pool's workers (the bodies that
 * hold the slots may have started on another pool before a QoS or placement change), and one
 * asleep in a task for a whole tick gets its slot lent and a spare to run the waiting work.
 * Queues of explicit width lend nothing (their width is a limit the caller chose), so they are
 * not marked. */
/* Whether the queue is a default-width queue at its width with ready work waiting (relaxed
 * reads: the callers fence around them where they pair with others). */
static bool op_queue_waits_at_width_now(op_queue_t *queue) {
    if (atomic_load_explicit(&queue->width, memory_order_relaxed) >= 0) return false;
    if (atomic_load_explicit(&queue->suspended, memory_order_relaxed)) return false;
    uint64_t word = atomic_load_explicit(&queue->slots, memory_order_relaxed);
    if (op_slots_idle(word) != 0 || op_slots_running(word) < op_queue_effective_width(queue)) {
        return false;
    }
    return op_queue_has_ready(queue);
}

void op_queue_note_waiting_at_width(op_queue_t *queue) {
    for (;;) {
        /* relaxed: the common case on a busy queue is "already marked"; the exchange decides. */
        if (atomic_load_explicit(&queue->waits_at_width, memory_order_relaxed)) return;
        if (!op_queue_waits_at_width_now(queue)) return;
        /* seq_cst: one marker counts the queue, exactly one clearer uncounts it. */
        if (atomic_exchange_explicit(&queue->waits_at_width, true, memory_order_seq_cst)) return;
        op_pool_count_queue_waiting_at_width(+1);
        /* What we read may have changed before the mark was set (the work taken, the queue gone
         * idle, its drainers' clears finding nothing marked): look again, and unmark a stale
         * mark, or the count stays up (a monitor that never sleeps) and an idle queue stays
         * marked. Then, unmarked, look once more, as a clear does. */
        atomic_thread_fence(memory_order_seq_cst);
        if (op_queue_waits_at_width_now(queue)) return;
        if (!atomic_exchange_explicit(&queue->waits_at_width, false, memory_order_seq_cst)) return;
        op_pool_count_queue_waiting_at_width(-1);
        atomic_thread_fence(memory_order_seq_cst);
    }
}

/* A slot was given back or the queue went idle: unless work still waits behind its width, the
 * mark goes. Cleared first, then looked again (a seq_cst exchange and fence against the marker's
 * push, fence and load of the mark: a submitter that saw the mark set and so did not mark again
 * pushed before our look, and we see its work), and marked again if work still waits: a slot
 * given back by one drainer while the others' bodies block leaves the queue at its width. */
static void op_queue_clear_waiting_at_width(op_queue_t *queue) {
    /* relaxed first look: one load on the path of every drainer that leaves. */
    if (OP_LIKELY(!atomic_load_explicit(&queue->waits_at_width, memory_order_relaxed))) return;
    /* seq_cst: see above; exactly one clearer uncounts. */
    if (!atomic_exchange_explicit(&queue->waits_at_width, false, memory_order_seq_cst)) return;
    op_pool_count_queue_waiting_at_width(-1);
    atomic_thread_fence(memory_order_seq_cst);
    op_queue_note_waiting_at_width(queue);
}

void op_queue_dispatch_sub(op_queue_t *queue, int max_tokens, uint64_t sub) {
    /* seq_cst: the caller's push into the bands is ordered before our read of `slots` and
     * `suspended` (Dekker with op_queue_release_slot). */
    OP_RACE_WINDOW("dispatch: pushed, before claiming");
    atomic_thread_fence(memory_order_seq_cst);
    if (max_tokens > 1) {
        /* A burst (a resume, a wider width, a batch) claims no more slots than tasks wait: a
         * width of INT_MAX, or 256 CPUs, with one task waiting hands out one token, not one per
         * unit of width. At least one, for an entry still being published; drainers that find
         * more behind the one they take draw the rest (op_queue_ramp_up). relaxed: a size hint. */
        uint64_t waiting = atomic_load_explicit(&queue->stashed, memory_order_relaxed) +
                           op_ready_queue_count_hint(&queue->ready, (uint64_t)max_tokens);
        if (waiting < (uint64_t)max_tokens) max_tokens = waiting > 0 ? (int)waiting : 1;
    }
    int claimed = 0;
    /* An idle drainer takes the work (it looks at the bands after marking itself idle).
     * relaxed loads: the fence above orders them; each claim is the helper's seq_cst CAS. */
    while (claimed < max_tokens &&
           op_queue_claim_slot(queue, atomic_load_explicit(&queue->slots, memory_order_relaxed),
                               true, OP_WORK_IN_BANDS)) {
        claimed++;
    }
    if (claimed == 0) {
        op_queue_note_waiting_at_width(queue); /* while our units or the caller's keep it alive */
        op_queue_busy_sub(queue, sub);
        return;
    }
    op_pool *pool = op_queue_pool(queue);
    /* One add for the slots' units and the caller's units: stays >= claimed > 0. */
    uint64_t delta = (uint64_t)claimed - sub;
    if ((int64_t)delta > 0) {
        op_queue_busy_add(queue, delta);
    } else if ((int64_t)delta < 0) {
        atomic_fetch_sub_explicit(&queue->busy, sub - (uint64_t)claimed, memory_order_seq_cst);
    }
    for (int i = 0; i < claimed; i++) op_pool_push_token(pool, &queue->token); /* last touch */
}

/* Hands a slot just claimed to the pool. The caller keeps the queue alive across it (its own
 * slot or task); the token push is its last touch of the queue. */
static void op_queue_hand_out_claimed(op_queue_t *queue) {
    op_queue_busy_add(queue, 1);
    op_pool_push_token(op_queue_pool(queue), &queue->token);
}

bool op_queue_ramp_up(op_queue_t *queue, bool work_waits) {
    /* relaxed: a hint. Missing a chance to ramp up loses nothing (the submitters' claims and
     * the drainers' checks when they give slots back keep work from being stranded); the
     * compare-and-swap in op_queue_claim_slot decides. */
    uint64_t word = atomic_load_explicit(&queue->slots, memory_order_relaxed);
    /* The bands only: looking at every worker's local run queue on each pop would cost more than
     * the drainer it might draw. */
    if (!op_queue_claim_slot(queue, word, true, work_waits ? OP_WORK_KNOWN : OP_WORK_IN_BANDS)) {
        /* At its width with work behind the task we took (a resume or a wider width claimed
         * the slots, no submit failed since): the other place that sees work wait behind the
         * width. One relaxed load when already marked. */
        op_queue_note_waiting_at_width(queue);
        return false;
    }
    op_queue_hand_out_claimed(queue);
    return true;
}

bool op_queue_has_ready(op_queue_t *queue) {
    /* relaxed: a hint, like maybe_nonempty; the Dekker fences around its callers order it. */
    return atomic_load_explicit(&queue->stashed, memory_order_relaxed) != 0 ||
           op_ready_queue_maybe_nonempty(&queue->ready);
}

/* Notes that `band` holds or held a task, for the drainers' one-load check of the bands above
 * their local run queue's (drain.c). Written once per band per queue. */
static void op_queue_note_band(op_queue_t *queue, op_priority_t band) {
    uint32_t bit = UINT32_C(1) << band;
    /* relaxed: a hint read by drainers; a drainer that misses a fresh bit takes the task on
     * its next look at the bands, at the latest when its local run queue is empty. */
    if (!(atomic_load_explicit(&queue->bands_used, memory_order_relaxed) & bit)) {
        atomic_fetch_or_explicit(&queue->bands_used, bit, memory_order_relaxed);
    }
}

static void op_queue_push_band(op_queue_t *queue, void *entry, op_priority_t band) {
    if ((unsigned)band >= OP_PRIORITY_COUNT) band = OP_PRIORITY_NORMAL;
    op_queue_note_band(queue, band);
    op_ready_queue_push(&queue->ready, entry, band);
}

/* The entry that stands for `task` now: the task pointer tagged with its generation. */
static void *op_queue_entry_for(op_task_t *task) {
    /* relaxed: the generation was written by this thread's own re-band CAS, or it is the one
     * the task had when the caller won QUEUED (an acq_rel RMW on the same word). */
    uint32_t state = atomic_load_explicit(&task->state, memory_order_relaxed);
    return (void *)((uintptr_t)task | ((state & OP_STATE_GEN_MASK) >> OP_STATE_GEN_SHIFT));
}

static op_priority_t op_task_band(op_task_t *task) {
    /* relaxed: read by the thread that pushes the task, after the acq_rel that made it ready
     * (or a re-band on this thread). */
    return (op_priority_t)atomic_load_explicit((_Atomic uint8_t *)&task->priority,
                                               memory_order_relaxed);
}

void op_queue_push_ready(op_queue_t *queue, op_task_t *task) {
    op_queue_push_band(queue, op_queue_entry_for(task), op_task_band(task));
}

void op_queue_push_entry(op_queue_t *queue, void *entry) {
    op_task_t *task = (op_task_t *)((uintptr_t)entry & ~OP_ENTRY_TAG_MASK);
    op_queue_push_band(queue, entry, op_task_band(task));
}

bool op_queue_push_local(op_queue_t *queue, op_task_t *task, bool job) {
    op_drain *drain = &op_tls_drain;
    if (drain->queue != queue || !drain->local || op_task_band(task) != OP_PRIORITY_NORMAL ||
        op_queue_effective_width(queue) <= 1) { /* a body may have narrowed it to serial */
        return false;
    }
    /* A queue moved to another class or placement while this body ran: what it releases goes
     * to the bands, where the queue's new workers look (they do not steal from this pool). */
    op_pool *pool = op_pool_current();
    if (OP_UNLIKELY(!pool || !op_pool_serves(pool, queue))) {
        return false;
    }
    bool was_empty = op_local_run_queue_is_empty(drain->local);
    if (!op_local_run_queue_push(drain->local, op_queue_entry_for(task))) return false;
    /* A job (an executor's: a task's next part, a yield, a child) that a running *job* pushes
     * into an empty ring is most often the one thing that job leaves behind, taken by this
     * worker the moment it returns, as tokio's LIFO slot: drawing a drainer for it would bounce
     * a single task between workers. So there, one is drawn when a second job waits. A job
     * pushed by an operation's body draws one at once, like any task (the body may go on to
     * wait for it). */
    bool chain = job && op_tls_task && (op_tls_task->flags & OP_TASK_IS_JOB);
    bool draws = chain ? (!was_empty && op_local_run_queue_length(drain->local) == 2) : was_empty;
    /* seq_cst: our push is ordered before reading `slots`, as a drainer that marks itself idle
     * (or gives its slot back) orders that before looking at the local run queues: one of the
     * two sees the other (Dekker). */
    atomic_thread_fence(memory_order_seq_cst);
    uint64_t word = atomic_load_explicit(&queue->slots, memory_order_relaxed);
    if (op_slots_idle(word) != 0) {
        /* A drainer idles and looks at the bands: hand it what we hold. An entry in flight from
         * our local run queue to the bands is in neither for a moment, and the idle drainer's
         * last look may fall in it; dispatching after the pushes (a fence, then `slots`) pairs
         * with that look, so either it sees the work or we claim a drainer. */
        op_drain_flush_local();
        op_queue_dispatch_sub(queue, 1, 0);
        return true;
    }
    /* The first task in an empty local run queue (for jobs, the second) draws one more drainer
     * if the width allows; it steals half, and a thief that leaves some behind draws the next
     * (op_drain_take). The ones after it wait for that drainer or for us. */
    if (draws && op_slots_running(word) < op_queue_effective_width(queue) &&
        op_queue_ramp_up(queue, true)) {
        return true;
    }
    /* Nobody was called for it: if this body now blocks where we cannot see, the monitor must
     * look (local work counts as waiting work for it, as tokens do). After our fence. */
    op_monitor_poke();
    return true;
}

bool op_queue_claim_entry(void *entry, op_task_t **out) {
    op_task_t *task = (op_task_t *)((uintptr_t)entry & ~OP_ENTRY_TAG_MASK);
    uint32_t tag = (uint32_t)((uintptr_t)entry & OP_ENTRY_TAG_MASK) << OP_STATE_GEN_SHIFT;
    /* relaxed first look; the CAS below orders. */
    uint32_t state = atomic_load_explicit(&task->state, memory_order_relaxed);
    for (;;) {
        /* Stale: claimed, pushed under an older generation, or pushed before the task went
         * back to waiting (every entry is pushed after QUEUED was won, and only settling a
         * deferral clears it: that also moves the 4-bit generation on, which could come round
         * to an old entry's after 16 deferrals). */
        if ((state & OP_STATE_TAKEN) || !(state & OP_STATE_QUEUED) ||
            (state & OP_STATE_GEN_MASK) != tag) {
            op_task_release(task); /* the reference the re-band gave this entry */
            return false;
        }
        /* acq_rel: one claimant wins against the other entries and a concurrent re-band
         * (which CASes the same word), and sees what the pusher published. */
        if (atomic_compare_exchange_weak_explicit(&task->state, &state, state | OP_STATE_TAKEN,
                                                  memory_order_acq_rel, memory_order_relaxed)) {
            *out = task;
            return true;
        }
    }
}

op_task_t *op_queue_take_ready(op_queue_t *queue) {
    if (OP_UNLIKELY(atomic_load_explicit(&queue->stashed, memory_order_acquire) != 0)) {
        op_task_t *task = op_fifo_pop(&queue->stash);
        if (task) {
            atomic_fetch_sub_explicit(&queue->stashed, 1, memory_order_relaxed);
            return task; /* already claimed when it was first taken */
        }
    }
    /* Only the bands that ever held a task (most queues use one): a pop looks at no empty band
     * above them. relaxed: a hint (op_queue_note_band). A band whose first push happens-before
     * this load has its bit seen here (coherence); one pushed concurrently may be missed, which
     * reorders nothing that was ordered. When these bands are empty, all five are looked at
     * before the answer is "empty", so a missed bit never leaves a task behind. */
    uint32_t used = atomic_load_explicit(&queue->bands_used, memory_order_relaxed);
    for (;;) {
        void *entry = op_ready_queue_pop_bands(&queue->ready, used);
        if (!entry) entry = op_ready_queue_pop(&queue->ready);
        if (!entry) return NULL;
        op_task_t *task;
        if (op_queue_claim_entry(entry, &task)) return task;
    }
}

bool op_queue_claim_for_drainer(op_queue_t *queue, op_task_t *task, uint32_t state) {
    /* relaxed: hints. A task stashed or pushed before this check by a thread we synchronised
     * with is seen (we acquired its effects through the finish); one pushed concurrently has
     * no order against this one, so either outcome keeps priority and FIFO order. */
    if (atomic_load_explicit(&queue->stashed, memory_order_relaxed) != 0) return false;
    op_priority_t band = (op_priority_t)atomic_load_explicit((_Atomic uint8_t *)&task->priority,
                                                             memory_order_relaxed);
    if (op_ready_queue_maybe_nonempty_from(&queue->ready, band)) return false;
    /* acq_rel: the same claim as op_queue_claim_entry's (TAKEN), against a re-band's CAS on the
     * same word: if a re-band or a cancel changed the word since we won QUEUED, we fail and the
     * caller pushes as usual. */
    return atomic_compare_exchange_strong_explicit(&task->state, &state, state | OP_STATE_TAKEN,
                                                   memory_order_acq_rel, memory_order_relaxed);
}

void op_queue_stash(op_queue_t *queue, op_task_t *task) {
    op_fifo_push(&queue->stash, task);
    /* release: a worker that sees the count (acquire) finds the task in the stash. */
    atomic_fetch_add_explicit(&queue->stashed, 1, memory_order_release);
}

bool op_queue_release_slot(op_queue_t *queue, bool idle) {
    /* seq_cst: giving the slot back, then re-reading the bands and the local run queues, is our
     * half of the Dekker pair with producers (push, fence, read slots). */
    uint64_t mark = 1 + (idle ? OP_SLOTS_IDLE_ONE : 0);
    uint64_t word = atomic_fetch_sub_explicit(&queue->slots, mark, memory_order_seq_cst) - mark;
    OP_RACE_WINDOW("release a slot: given back, before the re-check");
    bool claimed = false;
    /* A producer skips claiming a slot only when it sees the queue at its width, or a drainer
     * idle; if neither could have been because of us, any producer that pushed meanwhile saw a
     * free slot and no idle drainer of ours, and claimed one itself: nothing to re-check. */
    if (idle || op_slots_running(word) + 1 >= op_queue_effective_width(queue)) {
        atomic_thread_fence(memory_order_seq_cst);
        /* Another drainer that idles takes the work (it looks again before it leaves). */
        claimed = op_queue_claim_slot(queue, word, true, OP_WORK_ANYWHERE);
    }
    /* Our caller's units keep the queue alive here. */
    op_queue_clear_waiting_at_width(queue);
    return claimed;
}

/* With the default width (one running task per worker) a blocked task's worker is handed to a
 * spare, so the queue may start one more. seq_cst, like every change of `slots`: claims
 * compare-and-swap the same word, so none can start on a stale width once the slot is taken
 * back. */
op_queue_t *op_queue_lend_slot(op_queue_t *queue) {
    if (!queue || atomic_load_explicit(&queue->width, memory_order_relaxed) >= 0) return NULL;
    atomic_fetch_sub_explicit(&queue->slots, 1, memory_order_seq_cst);
    return queue;
}

/* seq_cst, as above. The queue may run over its width until a drainer gives a slot back
 * (drain.c); nothing new starts meanwhile. */
void op_queue_take_back_slot(op_queue_t *queue) {
    if (queue) atomic_fetch_add_explicit(&queue->slots, 1, memory_order_seq_cst);
}

/* The monitor saw a task of this queue asleep in its body. What the sleeper released into its
 * local run queue goes to the bands: the sleeper may wait for exactly that, and after a QoS or
 * placement change the queue's new drainers do not steal from the old pool's rings. Then its
 * slot is lent (default width only) and one is claimed for the queue's waiting work, in its
 * bands or a worker's local run queue, whether or not a drainer idles. The blocked task's unit
 * keeps the queue alive meanwhile. */
static bool op_queue_token_lend_slot(op_token *token, op_local_run_queue_t *ring) {
    op_queue_t *queue = op_queue_of_token(token);
    if (ring) {
        /* As a thief (the owner sleeps): only entries while the ring serves this queue. */
        for (void *entry; (entry = op_local_run_queue_steal_one(ring, queue));) {
            op_queue_push_entry(queue, entry);
        }
    }
    /* A queue of explicit width lends nothing, but its waiting work (the sleeper's local run
     * queue, say: a job it pushed and then blocked on) still gets a drainer if the width
     * allows one. */
    bool lent = op_queue_lend_slot(queue) != NULL;
    /* seq_cst: the lent slot (our RMW) and the pushes before the reads, as in
     * op_queue_release_slot. */
    atomic_thread_fence(memory_order_seq_cst);
    uint64_t word = atomic_load_explicit(&queue->slots, memory_order_relaxed);
    if (op_queue_claim_slot(queue, word, false, OP_WORK_ANYWHERE)) op_queue_hand_out_claimed(queue);
    return lent;
}

/* The default-width queue whose slot this thread lent while asleep in a wait. */
static _Thread_local op_queue_t *op_tls_lent_queue;

void op_queue_will_block(void) {
    if (!op_pool_current()) return; /* not a worker: nothing to stand in for */
    /* What this worker released and holds in its local run queue goes to the bands, where
     * others (the spare) find it: the body may wait for exactly that. */
    op_queue_t *drained = op_tls_drain.queue;
    bool flushed = op_drain_flush_local();
    bool may_lend = op_worker_will_block();
    /* A body running outside its queue's slots (carry.c) holds none to lend. relaxed: the bit
     * was set by this thread's RUNNING read-modify-write (or the one that carried it here, which
     * the carry token's acquire ordered). */
    bool outside = op_tls_task && (atomic_load_explicit(&op_tls_task->state,
                                                         memory_order_relaxed) &
                                   OP_STATE_OUTSIDE_WIDTH);
    if (may_lend && !outside) op_tls_lent_queue = op_queue_lend_slot(op_tls_queue);
    /* Lent now, or (not lent by the monitor already) to be lent by the monitor if the queue's
     * width becomes the default while we wait; outside the slots, nothing to lend ever. */
    op_worker_wait_settled(!may_lend || op_tls_lent_queue != NULL || outside);
    /* The queue may now start one more of its tasks (on the spare, or any worker); on a queue
     * of another width nothing is lent, but what we flushed still needs a drainer if the width
     * allows one. Our slot keeps the queue alive across both. */
    if (op_tls_lent_queue) {
        op_queue_dispatch_sub(op_tls_lent_queue, 1, 0);
    } else if (flushed) {
        op_queue_dispatch_sub(drained, 1, 0);
    }
}

void op_queue_did_unblock(void) {
    if (!op_pool_current()) return;
    op_queue_take_back_slot(op_tls_lent_queue);
    op_tls_lent_queue = NULL;
    op_worker_did_unblock();
}

/* Claims `task` for `queue`: true exactly once per task (false: it was submitted already). */
static bool op_queue_claim_task(op_queue_t *queue, op_task_t *task) {
    op_queue_t *expected = NULL;
    /* acq_rel: claims the task for this queue exactly once. */
    return atomic_compare_exchange_strong_explicit(&task->queue, &expected, queue,
                                                   memory_order_acq_rel, memory_order_relaxed);
}

/* The rest of a submit, for a task op_queue_claim_task claimed. EBUSY (the claim undone) when
 * the task finished meanwhile (completed by hand). */
static int op_queue_submit_claimed(op_queue_t *queue, op_task_t *task, bool allow_local,
                                   bool *pushed_shared) {
    OP_RACE_WINDOW("submit: claimed for the queue, before its references");
    /* Everything the queue holds for the task is taken *before* SUBMITTED is published: from
     * that moment a cancel (op_task_cancel) or an early completion may make the task ready and a
     * worker may run it, finish it and drop the queue's reference and busy unit at once. The
     * queue's reference, dropped when the task finished, and for a tracking queue the
     * registry's, dropped by the compaction that unlinks it: one step. relaxed, as any retain
     * (the caller holds a reference). */
    uint32_t refs = queue->tracking ? 2 : 1;
    atomic_fetch_add_explicit(&task->refs, refs, memory_order_relaxed);
    bool from_credit = op_drain_busy_add_one(queue);
    /* Before SUBMITTED: from then on a cancel may start it (the trace's start after its submit). */
    OP_OBSERVE_SUBMIT(task, queue, op_queue_label(queue), op_queue_unfinished(queue));
    uint32_t state = atomic_load_explicit(&task->state, memory_order_acquire);
    do {
        if (state & OP_STATE_FINISHED) {
            /* Completed by hand before it was submitted: give back what we took. The caller
             * still holds a reference, so the task lives on. */
            atomic_fetch_sub_explicit(&task->refs, refs, memory_order_relaxed);
            op_drain_busy_return_one(queue, from_credit);
            atomic_store_explicit(&task->queue, NULL, memory_order_relaxed);
            return EBUSY;
        }
        /* acq_rel: one of submit and cancel sees the other's bit (both read-modify-write the
         * word); our release publishes the references taken above to whoever acts on SUBMITTED. */
    } while (!atomic_compare_exchange_weak_explicit(&task->state, &state,
                                                    state | OP_STATE_SUBMITTED,
                                                    memory_order_acq_rel, memory_order_acquire));
    OP_RACE_WINDOW("submit: SUBMITTED published, before registering and the hold's drop");
    if (queue->tracking) op_registry_add(queue, task); /* may add a barrier dependency */
    /* A serial queue's task of a higher class than the queue's raises what is ahead of it
     * (promotion.c), before it can start; on a default-width queue it runs on its own class's
     * workers, outside its slots (carry.c). relaxed loads: the caller's own settings. */
    bool above = OP_UNLIKELY(atomic_load_explicit((_Atomic int8_t *)&task->qos,
                                                  memory_order_relaxed) >
                             (int)atomic_load_explicit(&queue->qos, memory_order_relaxed));
    if (above && atomic_load_explicit(&queue->width, memory_order_relaxed) == 1) {
        op_promotion_submitted(task, queue);
    }
    /* acq_rel: drop the submission hold; reaching zero means no dependency is left. */
    uint32_t before = atomic_fetch_sub_explicit(&task->pending, OP_PENDING_HOLD,
                                                memory_order_acq_rel);
    if (before == OP_PENDING_HOLD || (state & OP_STATE_CANCELLED)) {
        /* Ready now (or cancelled before submission): into the bands (the caller dispatches),
         * or into the calling drainer's local run queue. */
        op_latency_note_ready(task);
        uint32_t old = atomic_fetch_or_explicit(&task->state, OP_STATE_QUEUED,
                                                memory_order_acq_rel);
        if (!(old & OP_STATE_QUEUED) && !(above && op_carry_ready_outside_width(queue, task)) &&
            !(allow_local && op_queue_push_local(queue, task, false))) {
            op_queue_push_ready(queue, task);
            *pushed_shared = true;
        }
    }
    return 0;
}

int op_queue_submit_one(op_queue_t *queue, op_task_t *task, bool allow_local, bool *pushed_shared) {
    if (!op_queue_claim_task(queue, task)) return EBUSY;
    return op_queue_submit_claimed(queue, task, allow_local, pushed_shared);
}

int op_queue_submit(op_queue_t *queue, op_task_t *task) {
    if (!queue || !task) return EINVAL;
    bool pushed_shared = false;
    int rc = op_queue_submit_one(queue, task, true, &pushed_shared);
    if (pushed_shared) op_queue_dispatch_sub(queue, 1, 0);
    return rc;
}

int op_queue_submit_batch(op_queue_t *queue, op_task_t *const *tasks, size_t count) {
    if (!queue || (!tasks && count)) return EINVAL;
    for (size_t i = 0; i < count; i++) {
        if (!tasks[i]) return EINVAL;
    }
    /* First every task is claimed for this queue (the compare-and-swap a submit starts with; a
     * task met twice fails its second claim, one submitted elsewhere or finished fails too);
     * on a failure every claim is undone and nothing was submitted. Nothing is visible to
     * workers, cancels or completions until the second pass: a claim only sets `queue`. */
    size_t claimed = 0;
    while (claimed < count) {
        op_task_t *task = tasks[claimed];
        /* acquire: a finished task's FINISHED, as submit_one reads it. */
        if ((atomic_load_explicit(&task->state, memory_order_acquire) & OP_STATE_FINISHED) ||
            !op_queue_claim_task(queue, task)) {
            break;
        }
        claimed++;
    }
    if (claimed < count) {
        /* relaxed: nobody acted on these claims (see above). A submit of the same task racing
         * with this batch saw it taken and returned EBUSY, and now neither submitted it: the
         * caller raced two submissions of one task, and both are told EBUSY. */
        for (size_t i = 0; i < claimed; i++) {
            atomic_store_explicit(&tasks[i]->queue, NULL, memory_order_relaxed);
        }
        return EBUSY;
    }
    /* Into the bands only, never a local run queue: the whole batch is in the queue before a
     * worker that is not already draining it is handed any of it (priority order holds). A
     * task completed by hand while its batch was being submitted (a race of the caller's) is
     * finished: it is left out. */
    bool pushed_shared = false;
    for (size_t i = 0; i < count; i++) {
        (void)op_queue_submit_claimed(queue, tasks[i], false, &pushed_shared);
    }
    if (pushed_shared) {
        int width = op_queue_effective_width(queue);
        op_queue_dispatch_sub(queue, (size_t)width < count ? width : (int)count, 0);
    }
    return 0;
}

/* A task nobody holds a handle to and no registry lists: plain initialisation, and its one
 * reference is the queue's. Nobody else can see it yet, so no read-modify-write until the push
 * below, which publishes it (release, in op_fifo_push or the local run queue's tail), but a
 * promotion's on its own word, which nobody else sees either. */
static int op_queue_submit_untracked(op_queue_t *queue, op_task_fn fn, void *context, int qos,
                                     bool job) {
    op_task_t *task = op_task_cache_alloc();
    if (!task) return ENOMEM;
    const op_task_attr_t attr = {
        .priority = OP_PRIORITY_NORMAL, .qos = qos, .thread_priority = 0.5};
    op_task_init(task, fn, context, &attr);
    if (job) task->flags |= OP_TASK_IS_JOB;
    atomic_init(&task->state, OP_STATE_SUBMITTED | OP_STATE_QUEUED);
    atomic_init(&task->pending, 0);
    atomic_init(&task->queue, queue);
    op_drain_busy_add_one(queue);
    /* A job of a higher class than its serial queue's raises the queue (what is ahead of it)
     * until it finished, as op_queue_submit_claimed does for a task (promotion.c): counted on
     * the queue now, taken off by its finish. Before the push below: once pushed, a worker may
     * run, finish and recycle it. relaxed loads: the caller's own settings. */
    if (OP_UNLIKELY(qos > (int)atomic_load_explicit(&queue->qos, memory_order_relaxed)) &&
        atomic_load_explicit(&queue->width, memory_order_relaxed) == 1) {
        op_promotion_submitted(task, queue);
    }
    OP_OBSERVE_SUBMIT(task, queue, op_queue_label(queue), op_queue_unfinished(queue));
    op_latency_note_ready(task);
    if (op_queue_push_local(queue, task, job)) return 0;
    op_queue_push_band(queue, task, OP_PRIORITY_NORMAL); /* generation 0: no tag */
    op_queue_dispatch_sub(queue, 1, 0);
    return 0;
}

int op_queue_submit_f(op_queue_t *queue, op_task_fn fn, void *context) {
    if (!queue || !fn) return EINVAL;
    if (queue->tracking) {
        /* Registered, and perhaps behind a barrier: the general path. */
        op_task_t *task = op_task_create(fn, context, NULL);
        if (!task) return errno;
        int rc = op_queue_submit(queue, task);
        op_task_release(task);
        return rc;
    }
    return op_queue_submit_untracked(queue, fn, context, OP_QOS_INHERIT, false);
}

int op_queue_submit_job(op_queue_t *queue, op_task_fn fn, void *context, int qos) {
    if (!queue || !fn || qos < OP_QOS_INHERIT || qos >= OP_QOS_COUNT) return EINVAL;
    return op_queue_submit_untracked(queue, fn, context, qos, true);
}

int op_queue_set_width(op_queue_t *queue, int width) {
    if (!queue || width < OP_WIDTH_DEFAULT) return EINVAL;
    atomic_store_explicit(&queue->width, width, memory_order_relaxed);
    op_queue_dispatch_sub(queue, op_queue_effective_width(queue), 0);
    return 0;
}

int op_queue_width(const op_queue_t *queue) {
    return atomic_load_explicit(&((op_queue_t *)queue)->width, memory_order_relaxed);
}

void op_queue_set_suspended(op_queue_t *queue, bool suspended) {
    if (!queue) return;
    /* seq_cst: resuming is a write followed by dispatch's fence and reads; workers read the
     * flag before each task. */
    atomic_store_explicit(&queue->suspended, suspended, memory_order_seq_cst);
    if (!suspended) op_queue_dispatch_sub(queue, op_queue_effective_width(queue), 0);
}

bool op_queue_is_suspended(const op_queue_t *queue) {
    return atomic_load_explicit(&((op_queue_t *)queue)->suspended, memory_order_relaxed);
}

int op_queue_set_qos(op_queue_t *queue, op_qos_t qos) {
    if (!queue || (unsigned)qos >= OP_QOS_COUNT) return EINVAL;
    op_pool *before = op_queue_pool(queue);
    atomic_store_explicit(&queue->qos, (int32_t)qos, memory_order_relaxed);
    op_queue_left_pool(queue, before);
    return 0;
}

void op_queue_left_pool(op_queue_t *queue, op_pool *before) {
    /* Tokens of the queue already waiting in the old pool go to the new one now, not when a
     * worker of the old pool is free (drainers move the slots they hold themselves). */
    if (before && before != op_queue_pool(queue)) op_pool_rehome_tokens(before);
}

op_qos_t op_queue_qos(const op_queue_t *queue) { return (op_qos_t)op_queue_own_qos(queue); }

size_t op_queue_unfinished(const op_queue_t *queue) {
    op_queue_t *q = (op_queue_t *)queue;
    uint64_t busy = atomic_load_explicit(&q->busy, memory_order_acquire);
    int32_t slots = op_slots_running(atomic_load_explicit(&q->slots, memory_order_relaxed));
    return busy > (uint64_t)slots ? (size_t)(busy - (uint64_t)slots) : 0;
}

op_queue_t *op_queue_current(void) { return op_tls_queue; }

op_queue_t *op_queue_swap_current(op_queue_t *queue) {
    op_queue_t *previous = op_tls_queue;
    op_tls_queue = queue;
    /* A binding's body ran here (a queue's work on a dispatch queue): what it finished is
     * released once it no longer runs one (context_release.c). */
    if (!queue) op_release_flush_if_safe();
    return previous;
}

void op_queue_release_many(op_queue_t *queue, uint32_t count) {
    if (count == 0) return;
    /* acq_rel: as op_queue_release. */
    uint32_t before = atomic_fetch_sub_explicit(&queue->refs, count, memory_order_acq_rel);
    if (before == count) {
        /* Ours were the last: drop the final one through the usual path, which frees. */
        atomic_fetch_add_explicit(&queue->refs, 1, memory_order_relaxed);
        op_queue_release(queue);
    }
}

void op_queue_set_context(op_queue_t *queue, void *context, op_task_fn retain, op_task_fn release) {
    if (!queue) return;
    queue->context = context;
    queue->context_retain = retain;
    queue->context_release = release;
}

void *op_queue_context(const op_queue_t *queue) { return queue ? queue->context : NULL; }

int op_queue_counters(const op_queue_t *queue, op_queue_counters_t *out) {
    if (!queue || !out) return EINVAL;
    op_queue_t *q = (op_queue_t *)queue;
    /* Unfinished first: a drainer adds to `finished` before it takes from `busy`, so this order
     * never reads a task in neither. */
    size_t unfinished = op_queue_unfinished(q);
    out->started = op_count_read(&q->started);
    out->finished = op_count_read(&q->finished);
    out->submitted = out->finished + unfinished;
    out->cancelled = op_count_read(&q->cancelled);
    return 0;
}

size_t op_queue_describe_json(const op_queue_t *queue, char *buffer, size_t size) {
    op_report report = {.buffer = buffer, .size = size, .length = 0};
    if (size) buffer[0] = '\0';
    if (!queue) {
        op_report_add(&report, "null");
        return report.length;
    }
    op_queue_t *q = (op_queue_t *)queue;
    op_queue_counters_t counts;
    op_queue_counters(queue, &counts);
    /* relaxed: a snapshot for a report; nothing is decided on it. */
    uint64_t slots = atomic_load_explicit(&q->slots, memory_order_relaxed);
    op_report_add(&report, "{\"label\": ");
    op_report_json_string(&report, op_queue_label(q));
    op_report_add(&report,
                  ", \"qos\": \"%s\", \"width\": %d, \"effective_width\": %d, \"running\": %d, "
                  "\"unfinished\": %zu, \"suspended\": %s, \"waiting_at_width\": %s, "
                  "\"counters\": {\"submitted\": %llu, \"started\": %llu, \"finished\": %llu, "
                  "\"cancelled\": %llu}}",
                  op_qos_name((int)atomic_load_explicit(&q->qos, memory_order_relaxed)),
                  atomic_load_explicit(&q->width, memory_order_relaxed),
                  op_queue_effective_width(q), op_slots_running(slots), op_queue_unfinished(q),
                  atomic_load_explicit(&q->suspended, memory_order_relaxed) ? "true" : "false",
                  atomic_load_explicit(&q->waits_at_width, memory_order_relaxed) ? "true" : "false",
                  (unsigned long long)counts.submitted, (unsigned long long)counts.started,
                  (unsigned long long)counts.finished, (unsigned long long)counts.cancelled);
    return report.length;
}

size_t op_queue_describe(const op_queue_t *queue, char *buffer, size_t size) {
    if (!queue) return (size_t)snprintf(buffer, size, "(no queue)");
    op_queue_t *q = (op_queue_t *)queue;
    /* relaxed: a snapshot for a report; nothing is decided on it. */
    uint64_t busy = atomic_load_explicit(&q->busy, memory_order_relaxed);
    uint64_t slots = atomic_load_explicit(&q->slots, memory_order_relaxed);
    int width = atomic_load_explicit(&q->width, memory_order_relaxed);
    int n = snprintf(buffer, size,
                     "queue \"%s\": busy %llu (unfinished tasks + slots + credit), slots %d running"
                     " / %u idle, width %d (effective %d), %s, qos %s, ready tasks %s, stashed %u,"
                     " waiting behind its width %s, placed %s",
                     op_queue_label(q) ? op_queue_label(q) : "", (unsigned long long)busy, op_slots_running(slots),
                     op_slots_idle(slots), width, op_queue_effective_width(q),
                     atomic_load_explicit(&q->suspended, memory_order_relaxed) ? "suspended" : "running",
                     op_qos_name((int)atomic_load_explicit(&q->qos, memory_order_relaxed)),
                     op_queue_has_ready(q) ? "maybe" : "none",
                     atomic_load_explicit(&q->stashed, memory_order_relaxed),
                     atomic_load_explicit(&q->waits_at_width, memory_order_relaxed) ? "yes" : "no",
                     atomic_load_explicit(&q->placement, memory_order_relaxed) ? "yes" : "no");
    return n < 0 ? 0 : (size_t)n;
}
