/*
 * parking.c — how idle threads sleep and wake: a futex-based event count.
 *
 * A spare thread that found no work spins briefly (pool/worker.c), then parks here (pinned
 * workers park on a futex word each, in pool/parking_and_wake.c, so a waker can pick one). The
 * protocol has no lost wake-up:
 *
 *   waiter:   key = prepare_wait()      registers as a waiter (seq_cst), reads the epoch
 *             if (work appeared) cancel_wait()          re-check AFTER registering
 *             else wait(key)            sleeps only while the epoch still equals key
 *   notifier: publish work; notify()    seq_cst fence, then: any waiter? bump epoch, futex wake
 *
 * Either the notifier's load sees the waiter's registration (and bumps the epoch, so the
 * waiter's futex_wait returns at once or is woken), or the waiter's re-check sees the work:
 * both sides do "write, full fence, read" on two locations (Dekker). A notify with no waiter
 * costs one fence and one load: no syscall.
 *
 * The state word packs the waiter count (low 32 bits) and the epoch (high 32 bits); the futex
 * sleeps on the epoch half, and epoch overflow simply wraps off the top of the word.
 */
#include "base.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

_Noreturn void op_fatal(const char *format, ...) {
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
    abort();
}

int64_t op_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void op_spin_pause(int64_t spun_ns) {
    if (spun_ns < 1000) {
        for (int i = 0; i < 16; i++) op_cpu_relax();
    } else {
        sched_yield();
    }
}

int op_futex_wait(_Atomic uint32_t *word, uint32_t expected, int64_t timeout_ns) {
    struct timespec ts, *tsp = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000);
        ts.tv_nsec = (long)(timeout_ns % 1000000000);
        tsp = &ts;
    }
    long rc = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, tsp, NULL, 0);
    if (rc == -1 && errno == ETIMEDOUT) return ETIMEDOUT;
    return 0; /* woken, value changed (EAGAIN) or interrupted (EINTR): callers re-check */
}

void op_futex_wake(_Atomic uint32_t *word, int count) {
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

#define OP_EVENT_WAITER UINT64_C(1)
#define OP_EVENT_EPOCH (UINT64_C(1) << 32)

static _Atomic uint32_t *op_event_epoch_word(op_event_t *event) {
    /* The high half of the 64-bit state on a little-endian machine. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "op_event assumes a little-endian machine"
#endif
    return (_Atomic uint32_t *)((char *)&event->state + 4);
}

void op_event_init(op_event_t *event) { atomic_init(&event->state, 0); }

op_event_t *op_event_create(void) {
    op_event_t *event = NULL;
    if (posix_memalign((void **)&event, OP_CACHE_LINE, sizeof *event) != 0) return NULL;
    op_event_init(event);
    return event;
}

void op_event_destroy(op_event_t *event) { free(event); }

uint32_t op_event_prepare_wait(op_event_t *event) {
    /* seq_cst: the registration must be ordered before the caller's re-check of its condition
     * (the Dekker pair with notify's fence + load). */
    uint64_t prev = atomic_fetch_add_explicit(&event->state, OP_EVENT_WAITER,
                                              memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
    return (uint32_t)(prev >> 32);
}

void op_event_cancel_wait(op_event_t *event) {
    /* relaxed: leaving only lowers the count; a notify that still counts us just wakes nobody. */
    atomic_fetch_sub_explicit(&event->state, OP_EVENT_WAITER, memory_order_relaxed);
}

int op_event_wait(op_event_t *event, uint32_t key, int64_t timeout_ns) {
    _Atomic uint32_t *epoch = op_event_epoch_word(event);
    int64_t deadline = timeout_ns >= 0 ? op_now_ns() + timeout_ns : -1;
    int rc = 0;
    /* acquire: pairs with notify's epoch bump, so the work published before it is visible. */
    while (atomic_load_explicit(epoch, memory_order_acquire) == key) {
        int64_t left = -1;
        if (deadline >= 0) {
            left = deadline - op_now_ns();
            if (left <= 0) { rc = ETIMEDOUT; break; }
        }
        op_futex_wait(epoch, key, left);
    }
    op_event_cancel_wait(event);
    return rc;
}

void op_event_notify(op_event_t *event, int count) {
    /* seq_cst: orders the caller's publication of work before reading the waiter count. */
    atomic_thread_fence(memory_order_seq_cst);
    uint64_t state = atomic_load_explicit(&event->state, memory_order_relaxed);
    if ((uint32_t)state == 0) return; /* no waiter: no syscall */
    /* release: a waiter that acquires the new epoch sees the work published before it. */
    atomic_fetch_add_explicit(&event->state, OP_EVENT_EPOCH, memory_order_release);
    op_futex_wake(op_event_epoch_word(event), count);
}
