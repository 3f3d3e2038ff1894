/*
 * ready_queue.c — lock-free multi-producer multi-consumer FIFO, and the five-band ready queue.
 *
 * One band (op_fifo) is a chain of bounded rings. Each ring is Dmitry Vyukov's bounded MPMC
 * queue: a power-of-two array of cells, each with a sequence number, and two positions
 * (enqueue, dequeue) that threads advance with compare-and-swap. A producer owns cell `pos`
 * once it moves the enqueue position from pos to pos+1, writes the item, then publishes the
 * cell by storing seq = pos+1; a consumer takes it by moving the dequeue position and frees the
 * cell for the next lap by storing seq = pos+capacity.
 *
 * Growth: when a ring is full, the producer closes it (sets CLOSED in its enqueue position, so
 * every later compare-and-swap on it fails) and links a ring of twice the size behind it.
 * Producers move on to the new ring; consumers finish the closed ring, and move on only once
 * its dequeue position reached its final enqueue position, so FIFO order holds across rings.
 * Nothing is ever dropped and push never fails (it aborts only if memory runs out).
 *
 * ABA: positions are 64-bit counters that only grow (2^63 operations never wrap), and a cell's
 * sequence number names the lap it belongs to, so a stale thread's compare-and-swap on a
 * position fails and a stale cell never looks ready.
 *
 * Memory reclamation: a ring is freed only when the whole fifo is destroyed. A closed ring may
 * still be read by threads that loaded it before it was closed, and keeping it is what makes
 * that safe without hazard pointers or epochs. Since each new ring doubles the capacity, the
 * retired rings together are never larger than the live one: memory stays within twice the
 * peak number of queued items.
 *
 * Who touches what: any thread may push or pop. The producers' end (enqueue position, tail
 * pointer) and the consumers' end (dequeue position, head pointer) lie 128 bytes apart.
 */
#include "base.h"

#include <string.h>

#define OP_RING_CLOSED (UINT64_C(1) << 63)

typedef struct op_cell {
    _Atomic uint64_t seq;
    void *_Atomic item;
} op_cell;

struct op_ring {
    alignas(OP_CACHE_LINE) _Atomic uint64_t enqueue_pos; /* producers; OP_RING_CLOSED when sealed */
    alignas(OP_CACHE_LINE) _Atomic uint64_t dequeue_pos; /* consumers */
    alignas(OP_CACHE_LINE) op_ring *_Atomic next;        /* successor once closed */
    uint64_t mask;
    op_cell cells[];
};

static op_ring *op_ring_create(uint64_t capacity) {
    op_ring *ring = NULL;
    size_t size = sizeof(op_ring) + capacity * sizeof(op_cell);
    if (posix_memalign((void **)&ring, OP_CACHE_LINE, size) != 0) {
        op_fatal("operations: out of memory growing a ready queue to %llu items",
                 (unsigned long long)capacity);
    }
    atomic_init(&ring->enqueue_pos, 0);
    atomic_init(&ring->dequeue_pos, 0);
    atomic_init(&ring->next, NULL);
    ring->mask = capacity - 1;
    for (uint64_t i = 0; i < capacity; i++) {
        atomic_init(&ring->cells[i].seq, i);
        atomic_init(&ring->cells[i].item, NULL);
    }
    return ring;
}

void op_fifo_init(op_fifo *fifo, uint32_t initial_capacity) {
    uint64_t capacity = 2;
    while (capacity < initial_capacity) capacity <<= 1;
    op_ring *ring = op_ring_create(capacity);
    atomic_init(&fifo->head, ring);
    atomic_init(&fifo->tail, ring);
    fifo->first = ring;
}

void op_fifo_destroy(op_fifo *fifo) {
    op_ring *ring = fifo->first;
    while (ring) {
        op_ring *next = atomic_load_explicit(&ring->next, memory_order_relaxed);
        free(ring);
        ring = next;
    }
    fifo->first = NULL;
}

/* Returns the ring after `ring`, creating it if nobody has. */
static op_ring *op_ring_successor(op_ring *ring) {
    /* acquire: pairs with the release CAS below, so the new ring's cells are initialised. */
    op_ring *next = atomic_load_explicit(&ring->next, memory_order_acquire);
    if (next) return next;
    op_ring *fresh = op_ring_create((ring->mask + 1) * 2);
    op_ring *expected = NULL;
    /* release: publishes the initialised ring; acquire on failure: we read the winner's. */
    if (atomic_compare_exchange_strong_explicit(&ring->next, &expected, fresh,
                                                memory_order_acq_rel, memory_order_acquire)) {
        return fresh;
    }
    free(fresh);
    return expected;
}

void op_fifo_push(op_fifo *fifo, void *item) {
    for (;;) {
        /* acquire: the ring we load was published with release (init or successor CAS). */
        op_ring *ring = atomic_load_explicit(&fifo->tail, memory_order_acquire);
        /* relaxed: the position is only a guess; the cell's seq (acquire) validates it. */
        uint64_t pos = atomic_load_explicit(&ring->enqueue_pos, memory_order_relaxed);
        for (;;) {
            if (pos & OP_RING_CLOSED) break;
            op_cell *cell = &ring->cells[pos & ring->mask];
            /* acquire: pairs with the consumer's release of this cell, so its read of the old
             * item happened before we overwrite it. */
            uint64_t seq = atomic_load_explicit(&cell->seq, memory_order_acquire);
            int64_t diff = (int64_t)(seq - pos);
            if (diff == 0) {
                /* relaxed: winning the position only reserves the cell; the item is published
                 * by the release store of seq below. */
                if (atomic_compare_exchange_weak_explicit(&ring->enqueue_pos, &pos, pos + 1,
                                                          memory_order_relaxed,
                                                          memory_order_relaxed)) {
                    atomic_store_explicit(&cell->item, item, memory_order_relaxed);
                    /* release: makes the item visible to the consumer that acquires seq. */
                    atomic_store_explicit(&cell->seq, pos + 1, memory_order_release);
                    return;
                }
            } else if (diff < 0) {
                /* Full (the cell still holds last lap's item): seal this ring. relaxed is
                 * enough: the sealed bit only makes other producers' CAS fail and move on;
                 * the items they will write go to the successor, published by its own seqs. */
                atomic_fetch_or_explicit(&ring->enqueue_pos, OP_RING_CLOSED,
                                         memory_order_relaxed);
                break;
            } else {
                pos = atomic_load_explicit(&ring->enqueue_pos, memory_order_relaxed);
            }
        }
        op_ring *next = op_ring_successor(ring);
        op_ring *expected = ring;
        /* release: later producers that acquire tail see the initialised successor. Failure
         * means another producer advanced it already. */
        atomic_compare_exchange_strong_explicit(&fifo->tail, &expected, next,
                                                memory_order_release, memory_order_relaxed);
    }
}

void *op_fifo_pop(op_fifo *fifo) {
    for (;;) {
        /* acquire: as in push, the ring was published with release. */
        op_ring *ring = atomic_load_explicit(&fifo->head, memory_order_acquire);
        uint64_t pos = atomic_load_explicit(&ring->dequeue_pos, memory_order_relaxed);
        for (;;) {
            op_cell *cell = &ring->cells[pos & ring->mask];
            /* acquire: pairs with the producer's release of seq, so the item is visible. */
            uint64_t seq = atomic_load_explicit(&cell->seq, memory_order_acquire);
            int64_t diff = (int64_t)(seq - (pos + 1));
            if (diff == 0) {
                /* relaxed: the cell's contents were already acquired through seq. */
                if (atomic_compare_exchange_weak_explicit(&ring->dequeue_pos, &pos, pos + 1,
                                                          memory_order_relaxed,
                                                          memory_order_relaxed)) {
                    void *item = atomic_load_explicit(&cell->item, memory_order_relaxed);
                    /* release: our read of the item happens before a producer reuses the cell. */
                    atomic_store_explicit(&cell->seq, pos + ring->mask + 1, memory_order_release);
                    return item;
                }
            } else if (diff < 0) {
                /* The cell is not published. Either the ring is empty, or a producer reserved
                 * the cell and has not published yet (then the item appears shortly and that
                 * producer's submit wakes a worker: returning empty loses nothing), or the ring
                 * is sealed and fully drained and the items continue in the successor.
                 * acquire: the successor's cells are initialised, and its seal is visible.
                 * The successor is looked at first: it exists only once the ring is sealed, so
                 * an empty ring in use answers without reading the producers' line (on many
                 * CPUs, consumers that poll an empty queue would otherwise take that line from
                 * the producer at every look). */
                op_ring *next = atomic_load_explicit(&ring->next, memory_order_acquire);
                if (!next) return NULL; /* not sealed, or nothing pushed beyond it yet */
                uint64_t enq = atomic_load_explicit(&ring->enqueue_pos, memory_order_acquire);
                if (!(enq & OP_RING_CLOSED) || pos != (enq & ~OP_RING_CLOSED)) return NULL;
                op_ring *expected = ring;
                /* release: consumers that acquire head see the initialised successor. */
                atomic_compare_exchange_strong_explicit(&fifo->head, &expected, next,
                                                        memory_order_release,
                                                        memory_order_relaxed);
                break;
            } else {
                pos = atomic_load_explicit(&ring->dequeue_pos, memory_order_relaxed);
            }
        }
    }
}

bool op_fifo_maybe_nonempty(const op_fifo *fifo) {
    op_ring *head = atomic_load_explicit(&((op_fifo *)fifo)->head, memory_order_acquire);
    op_ring *tail = atomic_load_explicit(&((op_fifo *)fifo)->tail, memory_order_acquire);
    if (head != tail) return true;
    /* The cell at the consumers' position says whether an item waits there (published for
     * this lap), without reading the producers' position: a poller would take that line from
     * the producer at every look. relaxed: a hint; callers that must not miss an item pair it
     * with a seq_cst fence (the producer publishes the cell, then fences). A cell reserved but
     * not yet published reads empty: its producer dispatches after publishing. */
    uint64_t deq = atomic_load_explicit(&head->dequeue_pos, memory_order_relaxed);
    uint64_t seq = atomic_load_explicit(&head->cells[deq & head->mask].seq, memory_order_relaxed);
    /* Published for this lap, or already consumed (our `deq` is stale, and later cells may hold
     * items): both say "maybe". */
    return (int64_t)(seq - (deq + 1)) >= 0;
}

uint64_t op_fifo_count_hint(const op_fifo *fifo, uint64_t limit) {
    /* relaxed: a snapshot for sizing a burst of claims, never for correctness; the rings from
     * head to tail were published with release and are never freed while the fifo lives. */
    op_ring *ring = atomic_load_explicit(&((op_fifo *)fifo)->head, memory_order_acquire);
    op_ring *tail = atomic_load_explicit(&((op_fifo *)fifo)->tail, memory_order_acquire);
    uint64_t count = 0;
    while (ring && count < limit) {
        uint64_t enq = atomic_load_explicit(&ring->enqueue_pos, memory_order_relaxed) &
                       ~OP_RING_CLOSED;
        uint64_t deq = atomic_load_explicit(&ring->dequeue_pos, memory_order_relaxed);
        if (enq > deq) count += enq - deq;
        if (ring == tail) break;
        ring = atomic_load_explicit(&ring->next, memory_order_acquire);
    }
    return count < limit ? count : limit;
}

/* ---- five bands ------------------------------------------------------------------------------ */

void op_ready_queue_init(op_ready_queue_t *queue, uint32_t initial_capacity) {
    for (int band = 0; band < OP_PRIORITY_COUNT; band++) {
        op_fifo_init(&queue->bands[band], initial_capacity);
    }
}

void op_ready_queue_deinit(op_ready_queue_t *queue) {
    for (int band = 0; band < OP_PRIORITY_COUNT; band++) op_fifo_destroy(&queue->bands[band]);
}

op_ready_queue_t *op_ready_queue_create(void) {
    op_ready_queue_t *queue = NULL;
    if (posix_memalign((void **)&queue, OP_CACHE_LINE, sizeof *queue) != 0) return NULL;
    op_ready_queue_init(queue, 64);
    return queue;
}

void op_ready_queue_destroy(op_ready_queue_t *queue) {
    if (!queue) return;
    op_ready_queue_deinit(queue);
    free(queue);
}

void op_ready_queue_push(op_ready_queue_t *queue, void *item, op_priority_t band) {
    if ((unsigned)band >= OP_PRIORITY_COUNT) band = OP_PRIORITY_NORMAL;
    op_fifo_push(&queue->bands[band], item);
}

/* Every band's bit, for op_ready_queue_pop_bands. */
#define OP_ALL_BANDS ((UINT32_C(1) << OP_PRIORITY_COUNT) - 1)

void *op_ready_queue_pop(op_ready_queue_t *queue) {
    return op_ready_queue_pop_bands(queue, OP_ALL_BANDS);
}

void *op_ready_queue_pop_bands(op_ready_queue_t *queue, uint32_t bands) {
    bands &= OP_ALL_BANDS;
    while (bands) {
        int band = 31 - __builtin_clz(bands); /* the highest left */
        void *item = op_fifo_pop(&queue->bands[band]);
        if (item) return item;
        bands &= ~(UINT32_C(1) << band);
    }
    return NULL;
}

bool op_ready_queue_maybe_nonempty_from(const op_ready_queue_t *queue, op_priority_t band) {
    if ((unsigned)band >= OP_PRIORITY_COUNT) band = OP_PRIORITY_NORMAL;
    for (int b = OP_PRIORITY_COUNT - 1; b >= (int)band; b--) {
        if (op_fifo_maybe_nonempty(&queue->bands[b])) return true;
    }
    return false;
}

bool op_ready_queue_maybe_nonempty(const op_ready_queue_t *queue) {
    for (int band = OP_PRIORITY_COUNT - 1; band >= 0; band--) {
        if (op_fifo_maybe_nonempty(&queue->bands[band])) return true;
    }
    return false;
}

uint64_t op_ready_queue_count_hint(const op_ready_queue_t *queue, uint64_t limit) {
    uint64_t count = 0;
    for (int band = OP_PRIORITY_COUNT - 1; band >= 0 && count < limit; band--) {
        count += op_fifo_count_hint(&queue->bands[band], limit - count);
    }
    return count;
}
