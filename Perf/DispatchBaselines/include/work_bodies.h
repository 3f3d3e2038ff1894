/*
 * work_bodies.h — the C bodies every competitor runs, so that they differ only in the runtime:
 * the counting body of the throughput workloads, the probe and load bodies of the latency and
 * priority workloads (W7, W9), the saturating body of the nice-share experiment, and the
 * process's memory figures (W8). Bodies run on any runtime's worker threads.
 */
#ifndef WORK_BODIES_H
#define WORK_BODIES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The throughput body: a relaxed atomic increment of *(int64_t *)counter. */
void baseline_count_one(void *counter);

/* S1's body: a fixed amount of CPU work (a dependent integer loop of `iterations` steps,
 * calibrated once with perf_calibrate_spin), then a count into *counter. */
typedef struct spin_work {
    int64_t *counter;
    uint64_t iterations;
} spin_work;
void perf_spin_body(void *work);
/* Loop steps per µs of this CPU: the fastest of several timed runs on the calling thread. */
double perf_calibrate_spin(void);

/* Restricts the calling process to the first `count` CPUs of its affinity mask (threads created
 * afterwards inherit it). 0, EINVAL when the mask holds fewer, or the error of the call. */
int perf_restrict_to_cpus(int count);
/* CPUs in the calling thread's affinity mask. */
int perf_affinity_cpu_count(void);
/* For a `--cpus` child: asks the kernel to send this process SIGTERM when its parent thread
 * exits, so a parent stopped by a time limit leaves no child running on (it would take the CPUs
 * of whatever is measured next). 0; ESRCH when the parent `parent_pid` has already gone (the
 * child then stops); or the error of the call. */
int perf_exit_with_parent(int parent_pid);
/* Pins process (its main thread) `pid` to CPU `cpu` (`--hog-cpus`). 0, or the error of
 * sched_setaffinity. */
int perf_pin_process(int pid, int cpu);
/* Burns the calling thread's CPU until the process is killed: the body of a `--hog` child. */
__attribute__((noreturn)) void perf_spin_forever(void);

/* Heap bytes in use: glibc mallinfo2's uordblks (all arenas) plus hblkhd (mmap'd chunks). */
size_t baseline_heap_in_use(void);
/* Returns free heap memory to the system (malloc_trim), so RSS deltas count new pages. */
void baseline_trim_heap(void);
/* Resident set size in bytes (/proc/self/statm). */
size_t baseline_resident_bytes(void);

/* CLOCK_MONOTONIC in ns (the clock every latency is taken on). */
uint64_t perf_now_ns(void);
/* The calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID). */
uint64_t perf_thread_cpu_ns(void);
/* The calling thread's nice value (getpriority on its thread id). */
int perf_thread_nice(void);

/* One submitted item of W7 / W9. The submitter calls probe_mark_submitted right before its
 * submit call; the body stamps started_ns first thing and sets finished last. */
typedef struct probe_slot {
    uint64_t submitted_ns;
    uint64_t started_ns;  /* 0 until the body starts; read with probe_started_ns */
    uint32_t finished;    /* 0 until the body is done; read with probe_is_finished */
    int32_t nice;         /* the nice the body ran at, when record_nice is set */
    int32_t record_nice;
} probe_slot;

void probe_mark_submitted(probe_slot *slot);
uint64_t probe_started_ns(const probe_slot *slot);
bool probe_is_finished(const probe_slot *slot);

/* The probe body: stamps started_ns, records the nice when asked, sets finished. */
void perf_probe_body(void *slot);
/* The load body: like the probe, then burns perf_load_cpu_ns of thread CPU time (default 1 ms)
 * unless the stop flag is set. */
void perf_load_body(void *slot);
void perf_set_load_cpu_ns(uint64_t ns);

/* W12's background work: burns perf_set_inversion_cpu_ns of thread CPU time (default 0.5 ms;
 * the stop flag does not end it), then stamps started_ns (the end of its work), records the
 * nice it ended at when asked, and sets finished. */
void perf_inversion_target_body(void *slot);
void perf_set_inversion_cpu_ns(uint64_t ns);

/* The stop flag that ends load and saturating bodies early (set, then cleared for the next run). */
void perf_set_stop(bool stop);

/* One side of the nice-share experiment; bodies add the CPU time they used between the go
 * flag and the stop flag. */
typedef struct share_side {
    uint64_t cpu_ns;      /* sum over its bodies; read after they finished */
    int32_t nice;         /* nice of the last body that ran */
    uint32_t started;     /* bodies started; read with share_started */
} share_side;

/* The go flag that opens the nice-share window (every saturating body spins from its start). */
void perf_set_go(bool go);
/* The saturating body: spins; counts its thread CPU time from the go flag to the stop flag. */
void perf_saturate_body(void *side);
uint32_t share_started(const share_side *side);

#endif
