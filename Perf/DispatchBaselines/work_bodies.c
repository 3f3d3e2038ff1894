/* work_bodies.c — the bodies and measurements every competitor shares (see the header). */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include "work_bodies.h"

#include <errno.h>
#include <sched.h>

#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_bool stop_flag;
static atomic_bool go_flag;
static uint64_t load_cpu_ns = 1000000;

void baseline_count_one(void *context) {
    /* relaxed: a tally read after the runtime's wait, which orders it. */
    atomic_fetch_add_explicit((_Atomic int64_t *)context, 1, memory_order_relaxed);
}

/* The spin loop: steps of a 64-bit LCG, each depending on the one before, so the compiler can
 * neither vectorise nor drop it (the result goes to a volatile sink). */
static volatile uint64_t spin_sink;

static void spin(uint64_t iterations) {
    uint64_t x = iterations | 1;
    for (uint64_t i = 0; i < iterations; i++) x = x * 6364136223846793005u + 1442695040888963407u;
    spin_sink = x;
}

void perf_spin_body(void *work) {
    spin_work *w = work;
    spin(w->iterations);
    baseline_count_one(w->counter);
}

double perf_calibrate_spin(void) {
    const uint64_t steps = 2000000;
    uint64_t best = UINT64_MAX;
    spin(steps); /* warm up (frequency, caches) */
    for (int trial = 0; trial < 7; trial++) {
        uint64_t start = perf_now_ns();
        spin(steps);
        uint64_t elapsed = perf_now_ns() - start;
        if (elapsed < best) best = elapsed;
    }
    return (double)steps * 1000.0 / (double)(best ? best : 1);
}

int perf_restrict_to_cpus(int count) {
    cpu_set_t current, wanted;
    if (sched_getaffinity(0, sizeof current, &current) != 0) return errno;
    if (count < 1 || count > CPU_COUNT(&current)) return EINVAL;
    CPU_ZERO(&wanted);
    int taken = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && taken < count; cpu++) {
        if (CPU_ISSET(cpu, &current)) {
            CPU_SET(cpu, &wanted);
            taken++;
        }
    }
    return sched_setaffinity(0, sizeof wanted, &wanted) == 0 ? 0 : errno;
}

int perf_affinity_cpu_count(void) {
    cpu_set_t current;
    if (sched_getaffinity(0, sizeof current, &current) != 0) return 1;
    return CPU_COUNT(&current);
}

int perf_exit_with_parent(int parent_pid) {
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) return errno;
    /* The parent may have exited before the request was made: then no signal comes. */
    return getppid() == parent_pid ? 0 : ESRCH;
}

int perf_pin_process(int pid, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(pid, sizeof set, &set) == 0 ? 0 : errno;
}

void perf_spin_forever(void) {
    /* volatile: the loop must do work the compiler cannot drop (an empty infinite loop may be
     * removed). */
    volatile uint64_t count = 0;
    prctl(PR_SET_NAME, "perf-hog"); /* its name in top, ps and scheduler traces */
    for (;;) count = count + 1;
}

size_t baseline_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

void baseline_trim_heap(void) { malloc_trim(0); }

size_t baseline_resident_bytes(void) {
    FILE *file = fopen("/proc/self/statm", "r");
    if (!file) return 0;
    unsigned long size = 0, resident = 0;
    int fields = fscanf(file, "%lu %lu", &size, &resident);
    fclose(file);
    return fields == 2 ? resident * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

static uint64_t clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t perf_now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
uint64_t perf_thread_cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }
int perf_thread_nice(void) { return getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid)); }

void probe_mark_submitted(probe_slot *slot) { slot->submitted_ns = perf_now_ns(); }

uint64_t probe_started_ns(const probe_slot *slot) {
    /* acquire: pairs with the body's release store. */
    return __atomic_load_n(&slot->started_ns, __ATOMIC_ACQUIRE);
}

bool probe_is_finished(const probe_slot *slot) {
    /* acquire: the body's writes (nice) are visible once finished reads 1. */
    return __atomic_load_n(&slot->finished, __ATOMIC_ACQUIRE) != 0;
}

static void probe_start(probe_slot *slot) {
    /* release: the submitter spinning on started_ns sees a complete stamp. */
    __atomic_store_n(&slot->started_ns, perf_now_ns(), __ATOMIC_RELEASE);
    if (slot->record_nice) slot->nice = perf_thread_nice();
}

static void probe_finish(probe_slot *slot) { __atomic_store_n(&slot->finished, 1, __ATOMIC_RELEASE); }

void perf_probe_body(void *context) {
    probe_slot *slot = context;
    probe_start(slot);
    probe_finish(slot);
}

void perf_set_load_cpu_ns(uint64_t ns) { load_cpu_ns = ns; }

/* relaxed: the flag only ends spinning early; the waits that follow order everything else. */
void perf_set_stop(bool stop) { atomic_store_explicit(&stop_flag, stop, memory_order_relaxed); }
static bool stopped(void) { return atomic_load_explicit(&stop_flag, memory_order_relaxed); }

void perf_load_body(void *context) {
    probe_slot *slot = context;
    probe_start(slot);
    uint64_t until = perf_thread_cpu_ns() + load_cpu_ns;
    while (!stopped() && perf_thread_cpu_ns() < until) {
        for (volatile int i = 0; i < 200; i++) {}
    }
    probe_finish(slot);
}

static uint64_t inversion_cpu_ns = 500000;

void perf_set_inversion_cpu_ns(uint64_t ns) { inversion_cpu_ns = ns; }

void perf_inversion_target_body(void *context) {
    probe_slot *slot = context;
    uint64_t until = perf_thread_cpu_ns() + inversion_cpu_ns;
    while (perf_thread_cpu_ns() < until) {
        for (volatile int i = 0; i < 200; i++) {}
    }
    probe_start(slot); /* the end of its work, and the nice it ended at (a raise renices) */
    probe_finish(slot);
}

/* relaxed: as for the stop flag. */
void perf_set_go(bool go) { atomic_store_explicit(&go_flag, go, memory_order_relaxed); }

static void spin_until(atomic_bool *flag) {
    while (!atomic_load_explicit(flag, memory_order_relaxed)) {
        for (volatile int i = 0; i < 1000; i++) {}
    }
}

void perf_saturate_body(void *context) {
    share_side *side = context;
    __atomic_store_n(&side->nice, perf_thread_nice(), __ATOMIC_RELAXED);
    __atomic_fetch_add(&side->started, 1, __ATOMIC_RELEASE);
    spin_until(&go_flag);
    /* A body that is not running when go is set reads its CPU time when it next runs: the
     * same value it had at go. */
    uint64_t start = perf_thread_cpu_ns();
    spin_until(&stop_flag);
    __atomic_fetch_add(&side->cpu_ns, perf_thread_cpu_ns() - start, __ATOMIC_RELAXED);
}

uint32_t share_started(const share_side *side) {
    return __atomic_load_n(&side->started, __ATOMIC_ACQUIRE);
}
