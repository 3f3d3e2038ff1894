/*
 * histogram.c — a log-bucketed histogram of nanoseconds (issue 35, item 3), HdrHistogram's idea
 * with two significant bits: values below 8 ns have a bucket each; above, each power of two is
 * cut into four buckets, so a bucket's width is at most a quarter of its lower bound (a
 * percentile read from it is within 25 %). OP_HISTOGRAM_BUCKETS buckets cover 0 … 2^64 ns.
 *
 * Recording is a relaxed fetch-add on the bucket and one on the sum (the maximum moves by
 * compare-and-swap only when exceeded; the count is the buckets' sum, made when read): no
 * allocation, no lock; it runs only while histograms are switched on (queue/latency.c). Reads
 * are relaxed snapshots (the buckets may be a recording ahead of the sum).
 * The histogram itself is its owner's (a queue's, a class's).
 */
#include "base.h"

#include <string.h>

static inline int op_histogram_index(uint64_t ns) {
    if (ns < 8) return (int)ns;
    int exponent = 63 - __builtin_clzll(ns); /* >= 3 */
    int sub = (int)((ns >> (exponent - 2)) & 3);
    return 8 + (exponent - 3) * 4 + sub;
}

void op_histogram_record(op_histogram_t *histogram, uint64_t ns) {
    _Atomic uint64_t *bucket = (_Atomic uint64_t *)&histogram->buckets[op_histogram_index(ns)];
    atomic_fetch_add_explicit(bucket, 1, memory_order_relaxed);
    atomic_fetch_add_explicit((_Atomic uint64_t *)&histogram->sum_ns, ns, memory_order_relaxed);
    /* `count` is the buckets' sum, made by the snapshot: one read-modify-write fewer here. */
    uint64_t max = atomic_load_explicit((_Atomic uint64_t *)&histogram->max_ns, memory_order_relaxed);
    while (ns > max && !atomic_compare_exchange_weak_explicit((_Atomic uint64_t *)&histogram->max_ns,
                                                              &max, ns, memory_order_relaxed,
                                                              memory_order_relaxed)) {
    }
}

void op_histogram_snapshot(const op_histogram_t *histogram, op_histogram_t *out) {
    out->sum_ns = atomic_load_explicit((_Atomic uint64_t *)&histogram->sum_ns, memory_order_relaxed);
    out->max_ns = atomic_load_explicit((_Atomic uint64_t *)&histogram->max_ns, memory_order_relaxed);
    out->count = 0;
    for (int i = 0; i < OP_HISTOGRAM_BUCKETS; i++) {
        out->buckets[i] = atomic_load_explicit((_Atomic uint64_t *)&histogram->buckets[i],
                                               memory_order_relaxed);
        out->count += out->buckets[i];
    }
}

void op_histogram_bucket_bounds(int index, uint64_t *low, uint64_t *high) {
    if (index < 0 || index >= OP_HISTOGRAM_BUCKETS) {
        *low = *high = 0;
        return;
    }
    if (index < 8) {
        *low = (uint64_t)index;
        *high = (uint64_t)index;
        return;
    }
    int exponent = 3 + (index - 8) / 4;
    int sub = (index - 8) % 4;
    uint64_t base = UINT64_C(1) << exponent;
    uint64_t step = base >> 2;
    *low = base + (uint64_t)sub * step;
    *high = *low + step - 1;
}

uint64_t op_histogram_percentile(const op_histogram_t *histogram, double percentile) {
    uint64_t count = 0;
    for (int i = 0; i < OP_HISTOGRAM_BUCKETS; i++) count += histogram->buckets[i];
    if (count == 0) return 0;
    if (percentile < 0) percentile = 0;
    if (percentile > 100) percentile = 100;
    uint64_t rank = (uint64_t)((percentile / 100.0) * (double)count + 0.5);
    if (rank == 0) rank = 1;
    uint64_t seen = 0;
    for (int i = 0; i < OP_HISTOGRAM_BUCKETS; i++) {
        seen += histogram->buckets[i];
        if (seen >= rank) {
            uint64_t low, high;
            op_histogram_bucket_bounds(i, &low, &high);
            return high < histogram->max_ns || histogram->max_ns == 0 ? high : histogram->max_ns;
        }
    }
    return histogram->max_ns;
}
