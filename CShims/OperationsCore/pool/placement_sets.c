/*
 * placement_sets.c — the CPU sets queues are placed on (op_queue_set_cpus,
 * op_queue_set_numa_node: queue/placement.c), each with a pool per QoS class.
 *
 * A placement is a set of usable CPUs, interned: one object per distinct set, made on first use
 * under a mutex and never freed (a small object: the set and a pool per class). Its pools'
 * workers leave after OPERATIONS_PLACED_POOL_IDLE_MS (10 s) without work and come back for the
 * next task (worker_pool.c), so a process that places queues on many sets keeps no threads for
 * the ones it no longer uses. It holds a pool per QoS class, made on first use (worker_pool.c:
 * one worker per CPU of the set, pinned as the default workers are, at the class's nice value;
 * their spares keep to the set).
 *
 * Threads: interning takes the placements' lock; a placement's pools are published with a
 * compare-and-swap (worker_pool.c). In a child of fork() the placements stay and their pools
 * are forgotten (pool_fork.c): a placed queue gets new pools on first use there.
 */
#include "pool.h"

#include <sched.h>
#include <string.h>

struct op_placement {
    cpu_set_t *cpus;                      /* the set (CPU_ALLOC'd, topology->cpuset_size bytes:
                                           * it can name CPUs beyond CPU_SETSIZE) */
    int size;                             /* CPUs in it */
    int *usable;                          /* their topology indices, ascending */
    op_pool *_Atomic pools[OP_QOS_COUNT]; /* made on first use */
    struct op_placement *next;            /* the interned list, under op_placements_lock */
};

static pthread_mutex_t op_placements_lock = PTHREAD_MUTEX_INITIALIZER;
static op_placement *op_placements; /* under op_placements_lock */

int op_placement_size(const op_placement *placement) { return placement->size; }

int op_placement_usable_index(const op_placement *placement, int i) { return placement->usable[i]; }

op_pool *op_placement_pool(const op_placement *placement, op_qos_t qos) {
    op_placement *p = (op_placement *)placement;
    return op_pool_for_placement(placement, qos, &p->pools[(unsigned)qos < OP_QOS_COUNT ? qos : OP_QOS_DEFAULT]);
}

void op_placement_lock_for_fork(void) { pthread_mutex_lock(&op_placements_lock); }

void op_placement_unlock_after_fork(void) { pthread_mutex_unlock(&op_placements_lock); }

void op_placement_forget_pools_after_fork(void) {
    /* The child's only thread holds the lock (taken in the prepare handler). The placements
     * stay (sets of CPUs, still valid); their pools' threads do not exist here. relaxed: no
     * other thread runs yet; threads started later are ordered after these stores by their
     * creation. */
    for (op_placement *p = op_placements; p; p = p->next) {
        for (int qos = 0; qos < OP_QOS_COUNT; qos++) {
            atomic_store_explicit(&p->pools[qos], NULL, memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&op_placements_lock);
}

void op_placement_bind_current_thread(const op_placement *placement) {
    pthread_setaffinity_np(pthread_self(), op_topology_get()->cpuset_size, placement->cpus);
}

/* The interned placement for the usable CPUs flagged in `chosen` (indexed by topology index). */
const op_placement *op_placement_intern(const bool *chosen) {
    const op_topology_data *topology = op_topology_get();
    size_t bytes = topology->cpuset_size;
    cpu_set_t *set = CPU_ALLOC(topology->max_cpu_id + 1);
    if (!set) return NULL;
    CPU_ZERO_S(bytes, set);
    int size = 0;
    for (int i = 0; i < topology->cpu_count; i++) {
        if (chosen[i]) {
            CPU_SET_S(topology->cpus[i], bytes, set);
            size++;
        }
    }
    pthread_mutex_lock(&op_placements_lock);
    for (op_placement *p = op_placements; p; p = p->next) {
        if (CPU_EQUAL_S(bytes, p->cpus, set)) {
            pthread_mutex_unlock(&op_placements_lock);
            CPU_FREE(set);
            return p;
        }
    }
    op_placement *made = calloc(1, sizeof *made);
    int *usable = made ? malloc(sizeof(int) * (size_t)size) : NULL;
    if (!made || !usable) {
        pthread_mutex_unlock(&op_placements_lock);
        free(made);
        CPU_FREE(set);
        return NULL;
    }
    made->cpus = set;
    made->size = size;
    made->usable = usable;
    for (int i = 0, n = 0; i < topology->cpu_count; i++) {
        if (chosen[i]) usable[n++] = i;
    }
    for (int qos = 0; qos < OP_QOS_COUNT; qos++) atomic_init(&made->pools[qos], NULL);
    made->next = op_placements;
    op_placements = made;
    pthread_mutex_unlock(&op_placements_lock);
    return made;
}
