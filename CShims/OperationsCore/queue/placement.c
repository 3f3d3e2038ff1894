/*
 * placement.c — queues placed on chosen CPUs (op_queue_set_cpus, op_queue_set_numa_node).
 *
 * The CPU sets and their pools are the pool layer's (pool/placement_sets.c). A placed queue
 * points at its placement (`queue->placement`); everything that hands the queue's tokens to a
 * pool asks op_queue_pool, and a drainer whose pool is not the queue's any
 * more hands its token over (drain.c), as it does when the queue's QoS changes. So placement
 * composes with QoS, thread priority, width, priorities, suspension and waits: only the pool
 * that runs the tokens changes.
 *
 * Threads: op_queue_set_cpus and op_queue_set_numa_node may be called from any thread at any
 * time; the placement is published with a release store, read with acquire loads. In a child
 * of fork() the placements stay and their pools are forgotten (pool/pool_fork.c):
 * a placed queue gets new pools on first use there.
 */
#include "queue.h"

#include <errno.h>
#include <numa.h>
#include <sched.h>
#include <string.h>

bool op_pool_serves(const op_pool *pool, op_queue_t *queue) {
    return op_pool_class_serves(op_pool_qos(pool), op_pool_placement(pool), queue);
}

op_pool *op_queue_pool(op_queue_t *queue) {
    op_qos_t qos = (op_qos_t)op_queue_run_qos(queue); /* its QoS, or the class it is promoted to */
    /* acquire: pairs with the release store in op_queue_place (the placement is built). */
    const op_placement *placement = atomic_load_explicit(&queue->placement, memory_order_acquire);
    return placement ? op_placement_pool(placement, qos) : op_pool_for(qos);
}

/* Places the queue on the usable CPUs flagged in `chosen`, or unplaces it (NULL). */
static int op_queue_place(op_queue_t *queue, const bool *chosen) {
    const op_placement *placement = NULL;
    if (chosen) {
        placement = op_placement_intern(chosen);
        if (!placement) return ENOMEM;
    }
    op_pool *before = op_queue_pool(queue);
    /* release: a reader of the pointer sees the placement built. */
    atomic_store_explicit(&queue->placement, placement, memory_order_release);
    op_queue_left_pool(queue, before); /* its waiting tokens follow it */
    return 0;
}

/* The topology index of CPU id `cpu`, or -1 when the process may not run on it. */
static int op_usable_index(int cpu) {
    const op_topology_data *topology = op_topology_get();
    for (int i = 0; i < topology->cpu_count; i++) {
        if (topology->cpus[i] == cpu) return i;
    }
    return -1;
}

int op_queue_set_cpu_list(op_queue_t *queue, const int *cpus, size_t count, int *bad_cpu) {
    if (!queue || (count && !cpus)) return EINVAL;
    if (count == 0) return op_queue_place(queue, NULL);
    const op_topology_data *topology = op_topology_get();
    bool *chosen = calloc((size_t)topology->cpu_count, sizeof *chosen);
    if (!chosen) return ENOMEM;
    for (size_t i = 0; i < count; i++) {
        int index = op_usable_index(cpus[i]);
        if (index < 0) {
            if (bad_cpu) *bad_cpu = cpus[i];
            free(chosen);
            return EINVAL;
        }
        chosen[index] = true;
    }
    int rc = op_queue_place(queue, chosen);
    free(chosen);
    return rc;
}

int op_queue_set_cpus(op_queue_t *queue, const cpu_set_t *cpus) {
    if (!queue) return EINVAL;
    if (!cpus) return op_queue_place(queue, NULL);
    int list[CPU_SETSIZE];
    size_t count = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, cpus)) list[count++] = cpu;
    }
    if (count == 0) return EINVAL; /* an empty set: use NULL to lift a placement */
    return op_queue_set_cpu_list(queue, list, count, NULL);
}

int op_queue_set_numa_node(op_queue_t *queue, int node) {
    if (!queue || node < 0) return EINVAL;
    const op_topology_data *topology = op_topology_get();
    bool *chosen = calloc((size_t)topology->cpu_count, sizeof *chosen);
    if (!chosen) return ENOMEM;
    int found = 0;
    for (int i = 0; i < topology->cpu_count; i++) {
        int of = topology->numa ? numa_node_of_cpu(topology->cpus[i]) : 0;
        if (of == node) {
            chosen[i] = true;
            found++;
        }
    }
    int rc = found ? op_queue_place(queue, chosen) : EINVAL;
    free(chosen);
    return rc;
}

size_t op_queue_cpu_list(const op_queue_t *queue, int *cpus, size_t capacity) {
    if (!queue) return 0;
    /* acquire: as in op_queue_pool. */
    const op_placement *placement =
        atomic_load_explicit(&((op_queue_t *)queue)->placement, memory_order_acquire);
    if (!placement) return 0;
    const op_topology_data *topology = op_topology_get();
    for (int i = 0; i < op_placement_size(placement) && (size_t)i < capacity; i++) {
        cpus[i] = topology->cpus[op_placement_usable_index(placement, i)];
    }
    return (size_t)op_placement_size(placement);
}

int op_queue_cpus(const op_queue_t *queue, cpu_set_t *out) {
    if (!queue || !out) return EINVAL;
    const op_placement *placement =
        atomic_load_explicit(&((op_queue_t *)queue)->placement, memory_order_acquire);
    if (!placement) return ENOENT;
    /* The public set is a fixed cpu_set_t: CPUs beyond CPU_SETSIZE show in op_queue_cpu_list only. */
    CPU_ZERO(out);
    const op_topology_data *topology = op_topology_get();
    for (int i = 0; i < op_placement_size(placement); i++) {
        int cpu = topology->cpus[op_placement_usable_index(placement, i)];
        if (cpu < CPU_SETSIZE) CPU_SET(cpu, out);
    }
    return 0;
}

size_t op_current_thread_cpus(int *cpus, size_t capacity) {
    /* Sized by the kernel's CPU count, not CPU_SETSIZE: a fixed set fails beyond 1024 CPUs. */
    size_t bytes = 0;
    cpu_set_t *set = op_affinity_of(0, &bytes);
    if (!set) return 0;
    size_t count = 0;
    for (size_t cpu = 0; cpu < bytes * 8; cpu++) {
        if (!CPU_ISSET_S(cpu, bytes, set)) continue;
        if (count < capacity) cpus[count] = (int)cpu;
        count++;
    }
    CPU_FREE(set);
    return count;
}
