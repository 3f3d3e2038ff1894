/*
 * local_run_queue.c — a pinned worker's own run queue: ready tasks of the queue it drains that
 * were released on it (a body's submits to its own queue, dependents that a finish made ready
 * beyond the one handed off), so they stay on the CPU whose cache holds them and never touch the
 * queue's shared bands. Other drainers of the same queue steal half of them when they run dry.
 *
 * A bounded ring of OP_LOCAL_RUN_QUEUE_SIZE entries (entries are ready-queue entries: tagged
 * task pointers, see op_queue_claim_entry). The owner is the only producer: push writes a slot
 * and release-stores `tail`, no read-modify-write. The owner and thieves consume from the head
 * (FIFO for both, like tokio's local queue) with a compare-and-swap on `head`, one 64-bit word
 * that packs the head position (low 32 bits) and a generation (high 32 bits). The owner bumps
 * the generation whenever the ring changes queue (op_local_run_queue_flush), so a thief that
 * looked at the ring while it held one queue's tasks can never take another queue's: its
 * compare-and-swap names the old generation and fails.
 *
 * A thief copies the entries it wants into its own ring before its compare-and-swap claims them;
 * if the compare-and-swap fails it has published nothing (its own tail is stored after).
 * Positions are 32-bit and wrap; only differences are used.
 *
 * Who touches what: the owner writes `tail`, the slots and `queue`; anyone reads them; owner
 * and thieves compare-and-swap `head`. The owner's line (tail, queue) and the consumers' line
 * (head) are kept apart.
 */
#include "base.h"

#define OP_LOCAL_MASK ((uint32_t)OP_LOCAL_RUN_QUEUE_SIZE - 1)
#define OP_LOCAL_GENERATION UINT64_C(0x100000000)

static inline uint32_t op_local_head_position(uint64_t word) { return (uint32_t)word; }

/* The head word with its position advanced by `count` (wrapping within the low half) and the
 * generation kept. */
static inline uint64_t op_local_head_advance(uint64_t word, uint32_t count) {
    return (word & ~(uint64_t)UINT32_MAX) | (uint32_t)(op_local_head_position(word) + count);
}

op_local_run_queue *op_local_run_queue_create(void) {
    op_local_run_queue *ring = NULL;
    if (posix_memalign((void **)&ring, OP_CACHE_LINE, sizeof *ring) != 0) return NULL;
    op_local_run_queue_init(ring);
    return ring;
}

void op_local_run_queue_destroy(op_local_run_queue *ring) { free(ring); }

void op_local_run_queue_init(op_local_run_queue *ring) {
    atomic_init(&ring->head, 0);
    atomic_init(&ring->tail, 0);
    atomic_init(&ring->queue, NULL);
    for (uint32_t i = 0; i < OP_LOCAL_RUN_QUEUE_SIZE; i++) atomic_init(&ring->slots[i], NULL);
}

bool op_local_run_queue_push(op_local_run_queue *ring, void *entry) {
    /* relaxed: only the owner writes tail. acquire on head: a thief's claim of a slot (its read
     * of the entry) happens before we reuse the slot. */
    uint32_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
    uint32_t head = op_local_head_position(atomic_load_explicit(&ring->head, memory_order_acquire));
    if (tail - head >= OP_LOCAL_RUN_QUEUE_SIZE) return false; /* full: the caller pushes shared */
    /* relaxed: published by the release store of tail below. */
    atomic_store_explicit(&ring->slots[tail & OP_LOCAL_MASK], entry, memory_order_relaxed);
    /* release: a consumer that acquires the tail sees the entry. */
    atomic_store_explicit(&ring->tail, tail + 1, memory_order_release);
    return true;
}

void *op_local_run_queue_pop(op_local_run_queue *ring) {
    /* Owner only: the tail is ours, so it is read without ordering. */
    uint32_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
    /* acquire: we read a slot that a thief may have emptied; see the claim below. */
    uint64_t word = atomic_load_explicit(&ring->head, memory_order_acquire);
    for (;;) {
        uint32_t head = op_local_head_position(word);
        if (head == tail) return NULL;
        void *entry = atomic_load_explicit(&ring->slots[head & OP_LOCAL_MASK], memory_order_relaxed);
        /* acq_rel: one consumer wins the entry against thieves (who compare-and-swap the same
         * word); release orders our read of the slot before the owner's later reuse of it. */
        if (atomic_compare_exchange_weak_explicit(&ring->head, &word, op_local_head_advance(word, 1),
                                                  memory_order_acq_rel, memory_order_acquire)) {
            return entry;
        }
    }
}

bool op_local_run_queue_is_empty(const op_local_run_queue *ring) {
    op_local_run_queue *r = (op_local_run_queue *)ring;
    /* acquire: a hint for any thread; pairs with the owner's release of tail. */
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    uint32_t head = op_local_head_position(atomic_load_explicit(&r->head, memory_order_acquire));
    return head == tail;
}

uint32_t op_local_run_queue_length(const op_local_run_queue *ring) {
    op_local_run_queue *r = (op_local_run_queue *)ring;
    /* relaxed: the owner's own tail; acquire on head as in is_empty (a hint). */
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint32_t head = op_local_head_position(atomic_load_explicit(&r->head, memory_order_acquire));
    return tail - head;
}

uint32_t op_local_run_queue_steal(op_local_run_queue *victim, op_local_run_queue *thief,
                                  const void *queue) {
    for (int attempt = 0; attempt < 4; attempt++) {
        /* acquire: the head word first, then the queue: if both still hold when our
         * compare-and-swap succeeds, every entry below the tail we read is `queue`'s (the owner
         * changes queue only after bumping the generation). */
        uint64_t word = atomic_load_explicit(&victim->head, memory_order_acquire);
        if (atomic_load_explicit(&victim->queue, memory_order_acquire) != queue) return 0;
        /* acquire: the entries below the tail are visible. */
        uint32_t tail = atomic_load_explicit(&victim->tail, memory_order_acquire);
        uint32_t head = op_local_head_position(word);
        uint32_t available = tail - head;
        if (available == 0 || available > OP_LOCAL_RUN_QUEUE_SIZE) return 0; /* empty, or torn */
        uint32_t take = available - available / 2;
        /* relaxed: the thief's own ring is empty and its own; published by the tail store. */
        uint32_t thief_tail = atomic_load_explicit(&thief->tail, memory_order_relaxed);
        for (uint32_t i = 0; i < take; i++) {
            void *entry = atomic_load_explicit(&victim->slots[(head + i) & OP_LOCAL_MASK],
                                               memory_order_relaxed);
            atomic_store_explicit(&thief->slots[(thief_tail + i) & OP_LOCAL_MASK], entry,
                                  memory_order_relaxed);
        }
        /* acq_rel: as in pop; a bumped generation (the owner moved to another queue) or a
         * moved head fails it, and we publish nothing. */
        if (atomic_compare_exchange_strong_explicit(&victim->head, &word,
                                                    op_local_head_advance(word, take),
                                                    memory_order_acq_rel, memory_order_relaxed)) {
            /* release: the copied entries are visible to whoever acquires our tail. */
            atomic_store_explicit(&thief->tail, thief_tail + take, memory_order_release);
            return take;
        }
    }
    return 0;
}

void *op_local_run_queue_steal_one(op_local_run_queue *victim, const void *queue) {
    for (int attempt = 0; attempt < 4; attempt++) {
        /* acquire, in this order: as in op_local_run_queue_steal. */
        uint64_t word = atomic_load_explicit(&victim->head, memory_order_acquire);
        if (atomic_load_explicit(&victim->queue, memory_order_acquire) != queue) return NULL;
        uint32_t tail = atomic_load_explicit(&victim->tail, memory_order_acquire);
        uint32_t head = op_local_head_position(word);
        uint32_t available = tail - head;
        if (available == 0 || available > OP_LOCAL_RUN_QUEUE_SIZE) return NULL;
        void *entry = atomic_load_explicit(&victim->slots[head & OP_LOCAL_MASK],
                                           memory_order_relaxed);
        /* acq_rel: as in op_local_run_queue_steal. */
        if (atomic_compare_exchange_strong_explicit(&victim->head, &word,
                                                    op_local_head_advance(word, 1),
                                                    memory_order_acq_rel, memory_order_relaxed)) {
            return entry;
        }
    }
    return NULL;
}

void op_local_run_queue_serve(op_local_run_queue *ring, const void *queue) {
    /* release: thieves that acquire the queue pointer see a ring that is empty and bumped. */
    atomic_store_explicit(&ring->queue, queue, memory_order_release);
}

void op_local_run_queue_retire(op_local_run_queue *ring) {
    /* The ring is empty (flushed). Owner only. A new generation, then no queue: a thief that
     * read the old generation fails its claim. acq_rel on the head word: against thieves'
     * compare-and-swaps on it. */
    uint64_t word = atomic_load_explicit(&ring->head, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&ring->head, &word, word + OP_LOCAL_GENERATION,
                                                  memory_order_acq_rel, memory_order_relaxed)) {
    }
    atomic_store_explicit(&ring->queue, NULL, memory_order_release);
}
