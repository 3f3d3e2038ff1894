/*
 * topology.c — which CPUs the workers run on and which NUMA node each belongs to.
 *
 * The usable CPUs are the process's affinity mask at start-up (one worker per CPU per QoS
 * class), read with a set that grows past CPU_SETSIZE (1024) until the kernel takes it. The
 * default queue width is that count, or the cgroup's CPU limit when lower (cgroup.c).
 * Nodes come from libnuma when it works. It is not used, and workers are pinned with
 * plain pthread affinity instead, when:
 *   - OPERATIONS_NUMA is off (off/0/false/no/disable(d), any case: env.c);
 *   - numa_available() < 0 (kernel without NUMA, or libnuma cannot see it);
 *   - a NUMA system call fails with EPERM or ENOSYS: under a seccomp filter libnuma 2.0.16
 *     still reports "available", so we probe get_mempolicy ourselves.
 * The reason is kept for op_runtime_topology(). Node indices are dense (0 … node_count-1).
 * Written once under pthread_once; read-only afterwards, from any thread.
 */
#include "base.h"

#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

static op_topology_data op_topology;
static pthread_once_t op_topology_once = PTHREAD_ONCE_INIT;
/* Set when pinning through libnuma failed at run time; later pins use pthread affinity. */
static _Atomic bool op_numa_pin_failed = false;
static const char *_Atomic op_runtime_fallback_reason = NULL;

cpu_set_t *op_affinity_of(int tid, size_t *size) {
    /* A fixed cpu_set_t holds CPU_SETSIZE (1024) CPUs; sched_getaffinity fails with EINVAL when
     * the kernel's mask (nr_cpu_ids) is larger, so grow until it fits. */
    for (int count = CPU_SETSIZE; count <= (1 << 22); count *= 2) {
        cpu_set_t *set = CPU_ALLOC(count);
        if (!set) return NULL;
        size_t bytes = CPU_ALLOC_SIZE(count);
        CPU_ZERO_S(bytes, set);
        if (sched_getaffinity(tid, bytes, set) == 0) {
            *size = bytes;
            return set;
        }
        int error = errno;
        CPU_FREE(set);
        if (error != EINVAL) return NULL;
    }
    return NULL;
}

cpu_set_t *op_cpuset_of(const int *cpu_ids, int count) {
    const op_topology_data *topology = op_topology_get();
    cpu_set_t *set = CPU_ALLOC(topology->max_cpu_id + 1);
    if (!set) return NULL;
    CPU_ZERO_S(topology->cpuset_size, set);
    for (int i = 0; i < count; i++) CPU_SET_S(cpu_ids[i], topology->cpuset_size, set);
    return set;
}

/* "disabled by OPERATIONS_NUMA=<value>", written once under op_topology_once. */
static char op_numa_off_reason[96];

static void op_topology_init_once(void) {
    size_t mask_size = 0;
    cpu_set_t *mask = op_affinity_of(0, &mask_size);
    int count = mask ? CPU_COUNT_S(mask_size, mask) : 0;
    if (count < 1) count = 1;
    op_topology.cpus = calloc((size_t)count, sizeof(int));
    op_topology.cpu_node = calloc((size_t)count, sizeof(int));
    if (!op_topology.cpus || !op_topology.cpu_node) op_fatal("operations: out of memory");
    int n = 0, max_cpu = 0;
    for (int cpu = 0; mask && (size_t)cpu < mask_size * 8 && n < count; cpu++) {
        if (CPU_ISSET_S(cpu, mask_size, mask)) {
            op_topology.cpus[n++] = cpu;
            max_cpu = cpu;
        }
    }
    if (mask) CPU_FREE(mask);
    if (n == 0) op_topology.cpus[n++] = 0; /* the mask could not be read at all */
    op_topology.cpu_count = n;
    op_topology.max_cpu_id = max_cpu;
    op_topology.cpuset_size = CPU_ALLOC_SIZE(max_cpu + 1);

    /* The container's CPU limit sizes the default width; the workers stay one per CPU. */
    op_cgroup_cpu_limit limit;
    op_cgroup_read_cpu_limit(&limit);
    op_topology.cpu_quota = limit.quota;
    op_topology.default_width = limit.cpus > 0 && limit.cpus < n ? limit.cpus : n;
    if (op_topology.default_width < 1) op_topology.default_width = 1;
    if (limit.error[0]) {
        char *error = strdup(limit.error);
        op_topology.quota_error = error ? error : "a cgroup CPU limit file could not be read";
        fprintf(stderr,
                "operations: ignoring the cgroup CPU limit: %s; the default queue width follows "
                "the affinity mask (%d CPUs).\n",
                op_topology.quota_error, n);
    }

    const char *reason = NULL;
    if (!op_env_flag("OPERATIONS_NUMA", true)) {
        snprintf(op_numa_off_reason, sizeof op_numa_off_reason, "disabled by OPERATIONS_NUMA=%.40s",
                 getenv("OPERATIONS_NUMA"));
        reason = op_numa_off_reason;
    } else if (numa_available() < 0) {
        reason = "numa_available() < 0: no NUMA support in this kernel or process";
    } else {
        int mode = 0;
        errno = 0;
        if (get_mempolicy(&mode, NULL, 0, NULL, 0) != 0 && (errno == EPERM || errno == ENOSYS)) {
            reason = errno == EPERM ? "NUMA system calls are denied (get_mempolicy: EPERM; "
                                      "a seccomp filter?)"
                                    : "NUMA system calls are missing (get_mempolicy: ENOSYS)";
        }
    }
    op_topology.numa = reason == NULL;
    op_topology.fallback_reason = reason;

    /* Dense node indices. Without NUMA every CPU is on node 0. */
    int *raw_nodes = malloc(sizeof(int) * (size_t)n); /* at most one node per CPU */
    if (!raw_nodes) op_fatal("operations: out of memory");
    int node_count = 0;
    for (int i = 0; i < n; i++) {
        int raw = 0;
        if (op_topology.numa) {
            raw = numa_node_of_cpu(op_topology.cpus[i]);
            if (raw < 0) raw = 0;
        }
        int index = -1;
        for (int k = 0; k < node_count; k++) {
            if (raw_nodes[k] == raw) index = k;
        }
        if (index < 0) {
            index = node_count;
            raw_nodes[node_count++] = raw;
        }
        op_topology.cpu_node[i] = index;
    }
    free(raw_nodes);
    op_topology.node_count = node_count > 0 ? node_count : 1;

    op_topology.node_of_cpu_id = malloc(sizeof(int) * (size_t)(max_cpu + 1));
    if (!op_topology.node_of_cpu_id) op_fatal("operations: out of memory");
    for (int cpu = 0; cpu <= max_cpu; cpu++) op_topology.node_of_cpu_id[cpu] = -1;
    for (int i = 0; i < n; i++) op_topology.node_of_cpu_id[op_topology.cpus[i]] = op_topology.cpu_node[i];
}

const op_topology_data *op_topology_get(void) {
    pthread_once(&op_topology_once, op_topology_init_once);
    return &op_topology;
}

static void op_topology_note_failure(const char *reason) {
    atomic_store_explicit(&op_numa_pin_failed, true, memory_order_relaxed);
    const char *expected = NULL;
    /* relaxed: a diagnostic string with static storage. */
    atomic_compare_exchange_strong_explicit(&op_runtime_fallback_reason, &expected, reason,
                                            memory_order_relaxed, memory_order_relaxed);
}

void op_topology_pin_current_thread(int cpu, int node) {
    const op_topology_data *topology = op_topology_get();
    (void)node;
    if (topology->numa && !atomic_load_explicit(&op_numa_pin_failed, memory_order_relaxed)) {
        struct bitmask *mask = numa_allocate_cpumask();
        if (mask) {
            numa_bitmask_setbit(mask, (unsigned)cpu);
            int rc = numa_sched_setaffinity(0, mask);
            numa_bitmask_free(mask);
            if (rc == 0) {
                /* Prefer memory of the worker's own node (set_mempolicy). */
                int raw = numa_node_of_cpu(cpu);
                if (raw >= 0 && raw < (int)(sizeof(unsigned long) * 8)) {
                    /* The raw system call: libnuma's numa_set_preferred prints on failure. */
                    unsigned long nodes = 1UL << raw;
                    if (set_mempolicy(MPOL_PREFERRED, &nodes, sizeof(nodes) * 8) != 0 &&
                        (errno == EPERM || errno == ENOSYS)) {
                        op_topology_note_failure("set_mempolicy: EPERM; pinned without NUMA "
                                                 "memory preference");
                    }
                }
                return;
            }
            op_topology_note_failure("numa_sched_setaffinity failed; pinned with pthread "
                                     "affinity");
        }
    }
    /* A set sized for the highest usable cpu id: a fixed cpu_set_t cannot name CPU 1024+. */
    cpu_set_t *set = op_cpuset_of(&cpu, 1);
    if (set) {
        pthread_setaffinity_np(pthread_self(), topology->cpuset_size, set);
        CPU_FREE(set);
    }
}

int op_topology_current_node(void) {
    const op_topology_data *topology = op_topology_get();
    if (topology->node_count == 1) return 0;
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu > topology->max_cpu_id) return 0;
    int node = topology->node_of_cpu_id[cpu];
    return node < 0 ? 0 : node;
}

void op_runtime_topology(op_topology_t *out) {
    const op_topology_data *topology = op_topology_get();
    if (!out) return;
    out->cpu_count = topology->cpu_count;
    out->node_count = topology->node_count;
    const char *late = atomic_load_explicit(&op_runtime_fallback_reason, memory_order_relaxed);
    out->numa = topology->numa && !atomic_load_explicit(&op_numa_pin_failed, memory_order_relaxed);
    out->fallback_reason = topology->fallback_reason ? topology->fallback_reason : late;
    out->cpu_quota = topology->cpu_quota;
    out->default_width = topology->default_width;
    out->cpu_quota_error = topology->quota_error;
}

int op_runtime_cpu(int index, int *cpu, int *node) {
    const op_topology_data *topology = op_topology_get();
    if (index < 0 || index >= topology->cpu_count) return EINVAL;
    if (cpu) *cpu = topology->cpus[index];
    if (node) *node = topology->cpu_node[index];
    return 0;
}
