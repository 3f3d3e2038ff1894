#!/usr/bin/env python3
"""Tests/Mutations/put_back.py — puts one of issue 33's fixed bugs back into a copy of the
repository, for the liveness fuzzer's mutation check (Tests/Mutations/run.sh).
Usage: put_back.py <repo> <completion-order|in-order-bridge|promo-12-bit>"""
import sys
repo, name = sys.argv[1], sys.argv[2]

def patch(path, old, new):
    p = f"{repo}/{path}"
    s = open(p).read()
    assert old in s, (path, old[:60])
    open(p, "w").write(s.replace(old, new, 1))

if name == "completion-order":
    # Item 1 put back: the completion block runs inside the body, before the core finish.
    patch("Sources/OperationsImplementation/Operation.swift",
          "if let block { completion = (block, effectiveCoreQoS) }",
          "block?() // MUTATION: the old order")
elif name == "in-order-bridge":
    # Item 3 put back: the bridge forwards strictly in the order items were added; a Foundation
    # operation waits for its dependencies inside its item.
    path = "Sources/OperationsImplementation/OperationQueue+Foundation.swift"
    patch(path, "        for (offset, item) in snapshot.enumerated() {",
          "        for (offset, item) in snapshot.prefix(1).enumerated() { // MUTATION: in order")
    patch(path, "                guard operation.isReady else {\n                    waiting.append(operation)\n                    continue\n                }",
          "                // MUTATION: no readiness look")
    patch(path, "            if !operation.isReady && !operation.isCancelled {",
          "            for dependency in operation.dependencies { dependency.waitUntilFinished() } // MUTATION\n            if !operation.isReady && !operation.isCancelled {")
elif name == "promo-12-bit":
    # Item 5 put back: the counts as 12-bit fields of one word (kept in promo_counts[0] here),
    # with the old arithmetic: an add carries into the next class's field, a subtraction is
    # skipped when the class's field reads 0 (so a field that wrapped to 0 loses its count and
    # the carry stays: the queue raised to the next class for good).
    patch("CShims/OperationsCore/queue/promotion.c",
          """    uint64_t *count = &queue->promo_counts[qos];
    if (delta < 0 && *count == 0) {""",
          """    /* MUTATION: the old packed word. */
    uint64_t *packed = &queue->promo_counts[0];
    uint64_t unit = UINT64_C(1) << (12 * qos);
    if (delta < 0 && ((*packed >> (12 * qos)) & 0xFFF) == 0) {
        pthread_mutex_unlock(lock);
        return;
    }
    *packed = delta > 0 ? *packed + unit : *packed - unit;
    uint32_t packed_summary = 0;
    for (int c = 0; c < OP_QOS_COUNT; c++) if ((*packed >> (12 * c)) & 0xFFF) packed_summary |= UINT32_C(1) << c;
    atomic_store_explicit(&queue->promo, packed_summary, memory_order_seq_cst);
    pthread_mutex_unlock(lock);
    op_queue_left_pool(queue, before);
    return;
    uint64_t *count = &queue->promo_counts[qos];
    if (delta < 0 && *count == 0) {""")
else:
    sys.exit(f"unknown mutation {name}")
print(f"applied {name}")
