/*
 * task_cache.c — recycles task memory (and dependency edges, which fit in a task's block)
 * between the threads that free tasks (workers) and the threads that create them (submitters),
 * without malloc's cross-thread slow path.
 *
 * Each thread keeps a private list of free task blocks. A thread that frees more than a batch
 * hands the whole list to a global stack of batches; a thread whose list is empty takes the
 * whole global stack at once. Pushing a batch is a compare-and-swap on the stack head and
 * taking is an exchange with NULL, so there is no pop of a single node and no ABA problem.
 * The global stack is capped (OP_CACHE_GLOBAL_MAX blocks); beyond it, batches go back to
 * malloc, so an idle process keeps at most about 1.3 MB here (16K blocks; 64K let a soak of
 * short-lived submitting threads grow RSS by 5 MB before it levelled). A thread's private list
 * goes to the global stack when the thread exits. A thread can still free and create tasks
 * after that, while other thread-local destructors run (Foundation frees a Thread's closure
 * there, with whatever operations it held): from then on its cache is closed, so each block it
 * frees goes to the global stack at once and it creates from malloc, keeping nothing in a
 * thread-local list that no destructor would visit again.
 */
#include "base.h"

#include <pthread.h>

#define OP_CACHE_BATCH 256
#define OP_CACHE_GLOBAL_MAX (16 * 1024)

typedef struct op_free_block {
    struct op_free_block *next;       /* within a batch */
    struct op_free_block *next_batch; /* on the global stack (valid in a batch's first block) */
    struct op_free_block *batch_tail; /* last block of the batch (first block only) */
    uint32_t batch_count;             /* blocks in the batch (first block only) */
} op_free_block;

_Static_assert(sizeof(op_free_block) <= sizeof(op_task_t), "a free block overlays a task");

typedef struct op_local_cache {
    op_free_block *head;
    op_free_block *tail;
    uint32_t count;
    bool registered;
    bool closed; /* the thread-exit destructor ran: keep nothing here */
} op_local_cache;

static op_free_block *_Atomic op_global_batches = NULL;
static _Atomic int64_t op_global_count = 0;
static _Thread_local op_local_cache op_cache;
static pthread_key_t op_cache_key;
static pthread_once_t op_cache_key_once = PTHREAD_ONCE_INIT;

static void op_cache_publish(op_local_cache *cache) {
    if (!cache->head) return;
    op_free_block *batch = cache->head;
    op_free_block *tail = cache->tail; /* kept up to date: publishing never walks the list */
    uint32_t count = cache->count;
    cache->head = cache->tail = NULL;
    cache->count = 0;
    /* relaxed: an approximate cap, not a synchronising counter. */
    if (atomic_load_explicit(&op_global_count, memory_order_relaxed) + count >
        OP_CACHE_GLOBAL_MAX) {
        while (batch) {
            op_free_block *next = batch->next;
            free(batch);
            batch = next;
        }
        return;
    }
    atomic_fetch_add_explicit(&op_global_count, count, memory_order_relaxed);
    batch->batch_count = count;
    batch->batch_tail = tail;
    op_free_block *head = atomic_load_explicit(&op_global_batches, memory_order_relaxed);
    do {
        batch->next_batch = head;
        /* release: the taker (acquire exchange) sees the batch's links. */
    } while (!atomic_compare_exchange_weak_explicit(&op_global_batches, &head, batch,
                                                    memory_order_release, memory_order_relaxed));
}

static void op_cache_thread_exit(void *unused) {
    (void)unused;
    op_cache.closed = true;
    op_cache_publish(&op_cache);
}

static void op_cache_make_key(void) { pthread_key_create(&op_cache_key, op_cache_thread_exit); }

static void op_cache_register(op_local_cache *cache) {
    cache->registered = true;
    pthread_once(&op_cache_key_once, op_cache_make_key);
    pthread_setspecific(op_cache_key, cache); /* non-NULL so the destructor runs */
}

op_task_t *op_task_cache_alloc(void) {
    op_local_cache *cache = &op_cache;
    if (OP_UNLIKELY(!cache->head)) {
        if (OP_UNLIKELY(cache->closed)) return malloc(sizeof(op_task_t));
        /* acquire: pairs with the release push, so the batches' links are visible. */
        op_free_block *batches = atomic_exchange_explicit(&op_global_batches, NULL,
                                                          memory_order_acquire);
        /* A thread that takes blocks hands what it did not use back when it exits (a thread
         * that only creates tasks would otherwise take them with it). */
        if (batches && OP_UNLIKELY(!cache->registered)) op_cache_register(cache);
        while (batches) {
            op_free_block *next_batch = batches->next_batch;
            atomic_fetch_sub_explicit(&op_global_count, batches->batch_count,
                                      memory_order_relaxed);
            batches->batch_tail->next = cache->head;
            if (!cache->head) cache->tail = batches->batch_tail;
            cache->head = batches;
            cache->count += batches->batch_count;
            batches = next_batch;
        }
        if (!cache->head) return malloc(sizeof(op_task_t));
    }
    op_free_block *block = cache->head;
    op_free_block *next = block->next;
    cache->head = next;
    if (!next) {
        cache->tail = NULL;
    } else {
        /* The next block was last written on the thread that freed it, most often a worker on
         * another CPU: fetch its lines for writing now, while this task is filled in and
         * submitted, rather than stall on them (its `next` first) at the next create. */
        __builtin_prefetch(next, 1, 3);
        __builtin_prefetch((char *)next + sizeof(op_task_t) - 1, 1, 3); /* its last line */
    }
    cache->count--;
    return (op_task_t *)block;
}

void op_task_cache_free(op_task_t *task) {
    op_local_cache *cache = &op_cache;
    if (OP_UNLIKELY(!cache->registered)) op_cache_register(cache);
    op_free_block *block = (op_free_block *)task;
    block->next = cache->head;
    if (!cache->head) cache->tail = block;
    cache->head = block;
    if (++cache->count >= 2 * OP_CACHE_BATCH || OP_UNLIKELY(cache->closed)) op_cache_publish(cache);
}
