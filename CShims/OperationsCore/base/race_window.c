/*
 * race_window.c — the race-window build: seeded random short delays at the core's publication
 * points, so that races whose windows are a few instructions wide in a normal build (a cancel
 * between a submit's publication and its bookkeeping, a completion during a worker's hand-off)
 * open wide enough for the stress tests, the liveness fuzzer and AddressSanitizer to see them.
 * ThreadSanitizer finds a data race only in a window that actually opens; this opens them.
 *
 * Compiled in only with OPERATIONS_RACE_WINDOWS defined (`swift build -Xcc
 * -DOPERATIONS_RACE_WINDOWS`, as CI's race-window run does); otherwise OP_RACE_WINDOW(point)
 * (base/base.h) is nothing and this file is empty. In that build, each point is taken with
 * probability 1/4 and then pauses the calling thread for one of: a few CPU pauses, a
 * sched_yield, or a sleep of 1 to 50 µs. The choices come from a per-thread generator seeded
 * from OPERATIONS_RACE_SEED (decimal; default: the clock), mixed with the thread id; the seed is
 * printed once on stderr so a failing run can be repeated as closely as thread timing allows.
 */
#include "base.h"

#ifdef OPERATIONS_RACE_WINDOWS

#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t op_race_seed;
static pthread_once_t op_race_once = PTHREAD_ONCE_INIT;
static _Thread_local uint64_t op_race_state;

static void op_race_init(void) {
    const char *text = getenv("OPERATIONS_RACE_SEED");
    op_race_seed = text && *text ? strtoull(text, NULL, 10) : (uint64_t)op_now_ns();
    fprintf(stderr, "operations: race-window build, OPERATIONS_RACE_SEED=%llu\n",
            (unsigned long long)op_race_seed);
}

/* SplitMix64. */
static uint64_t op_race_next(void) {
    if (OP_UNLIKELY(op_race_state == 0)) {
        pthread_once(&op_race_once, op_race_init);
        op_race_state = op_race_seed ^ ((uint64_t)op_current_tid() * UINT64_C(0x9E3779B97F4A7C15));
        if (op_race_state == 0) op_race_state = 1;
    }
    uint64_t z = (op_race_state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

void op_race_window(const char *point) {
    (void)point; /* named at each call site for readers and debuggers */
    uint64_t r = op_race_next();
    if ((r & 3) != 0) return;
    switch ((r >> 2) % 3) {
    case 0:
        for (uint64_t i = 0, n = 1 + ((r >> 8) & 255); i < n; i++) op_cpu_relax();
        break;
    case 1:
        sched_yield();
        break;
    default:
        usleep((useconds_t)(1 + ((r >> 8) % 50)));
        break;
    }
}

#endif /* OPERATIONS_RACE_WINDOWS */
