// OperationExtras.swift — the state few operations use (dependency lists, completion blocks,
// names, thread priorities, observers, a BlockOperation's further blocks), made on first use.
// An operation with extras points its state word at them instead of at its core task, so a
// plain operation carries no pointer for them (see OperationStateBits.swift). An operation whose
// core task's address has high bits set (a tagged pointer) gets them at creation, to hold it.

import Synchronization

/// The state of an operation that few operations use: created on first use (or with the
/// operation, for a task address the state word cannot hold), guarded by the
/// operation's stripe of `StripedLock.shared`, and freed by the operation's deinit. The lock
/// keeps accesses exclusive, so the fields skip the runtime's exclusivity checks (a
/// swift_beginAccess/endAccess pair per access, from the closures the lock runs).
final class OperationExtras {
    /// The operation's core task, its full pointer: the state word leads here once the extras
    /// exist.
    let task: OpaquePointer
    @exclusivity(unchecked) var dependencies = DependencyList()
    /// The operations waiting for this one, announced when it finishes (weak: see
    /// `WeakOperation`).
    @exclusivity(unchecked) var dependents: [WeakOperation] = []
    /// Bumped when an unfinished dependency is added (after the core and the late-dependency
    /// mark know it), and the value whose "isReady" change for the last dependency's finish was
    /// posted: each finished dependency announces, and one whose announcement comes late (after
    /// its core task finished, the next dependency may have finished too) must not post the same
    /// change twice, while a change after a dependency added since is still posted.
    ///
    /// The bump is an atomic add outside the lock (it was the second trip through the lock for
    /// every edge `addDependency(_:)` adds, issue 36). Releasing bump, acquiring load: the bump
    /// publishes the core's edge and the late mark, so an announcement that loads the new
    /// generation (before it checks readiness) sees the new dependency unfinished; one that
    /// loads the old one posts for the old generation, and the new dependency's finish posts
    /// again. The deinit's acquiring load orders the bump before the free for ThreadSanitizer,
    /// which does not see Swift's reference counts.
    let dependencyGeneration = Atomic<Int64>(0)
    @exclusivity(unchecked) var announcedGeneration: Int64 = -1
    @exclusivity(unchecked) var completionBlock: (@Sendable () -> Void)?
    @exclusivity(unchecked) var name: String?
    @exclusivity(unchecked) var threadPriority: Double = 0.5
    @exclusivity(unchecked) var observers: [Operation.ObservationKey: [Int: @Sendable (Operation) -> Void]] = [:]
    /// A BlockOperation's blocks after its first.
    @exclusivity(unchecked) var moreBlocks: [@Sendable () -> Void] = []
    /// Tasks suspended in `await waitUntilFinished()`, resumed once when it completes.
    @exclusivity(unchecked) var finishWaiters: [CheckedContinuation<Void, Never>] = []
    /// Made by `addBarrierBlock(_:)`: counts nothing toward its queue's `progress`.
    @exclusivity(unchecked) var isBarrier = false

    init(task: OpaquePointer) { self.task = task }
}

/// An operation's dependencies in the order they were added, holding each one: the first two
/// inline and the others in an array made only for a third one. Most operations that have
/// dependencies have one (a chain, a fan-out's children) or two (a wavefront's cell, a join):
/// for them this saves the array's allocation and release (with one inline, a quarter of the
/// allocator's work per operation in W4; the second inline took the array from each of W5's
/// cells, issue 36). A wide fan-in also keeps a set of the identities, made once the list passes
/// `indexedFrom`, so that the duplicate check of `addDependency(_:)` stays O(1) (a fan-in of
/// 10^5 took 5·10^9 comparisons to add without it).
///
/// Invariant: `second` is set only while `first` is, and `rest` is non-empty only while both
/// are; the order is first, second, rest.
struct DependencyList {
    private(set) var first: Operation?
    private(set) var second: Operation?
    private(set) var rest: [Operation] = []
    /// The identities of every entry, once `rest` holds `indexedFrom` of them.
    private var index: Set<ObjectIdentifier>?

    /// The length of `rest` from which `index` is kept: below it a linear look is cheaper than
    /// hashing (W6's fan-in of 100 paid 1 % of its samples in Hasher with 32).
    static let indexedFrom = 128

    var isEmpty: Bool { first == nil }

    /// Whether `operation` (by identity) is in the list.
    func contains(_ operation: Operation) -> Bool {
        guard let first else { return false }
        if let index { return index.contains(ObjectIdentifier(operation)) }
        return first === operation || second === operation || rest.contains { $0 === operation }
    }

    mutating func append(_ operation: Operation) {
        // Once made, the index holds every entry, the inline ones too: a wide list pruned to
        // one and grown again must still find a second add of the new one (and remove it).
        index?.insert(ObjectIdentifier(operation))
        if first == nil {
            first = operation
            return
        }
        if second == nil {
            second = operation
            return
        }
        rest.append(operation)
        if index == nil && rest.count >= DependencyList.indexedFrom {
            var made = Set<ObjectIdentifier>(minimumCapacity: count * 2)
            forEach { made.insert(ObjectIdentifier($0)) }
            index = made
        }
    }

    /// Removes `operation` (by identity), keeping the others' order; whether it was there.
    mutating func remove(_ operation: Operation) -> Bool {
        guard let current = first else { return false }
        if index != nil {
            guard index!.remove(ObjectIdentifier(operation)) != nil else { return false }
        }
        if current === operation {
            // Everything moves up one place.
            first = second
            second = rest.isEmpty ? nil : rest.removeFirst()
            return true
        }
        if second === operation {
            second = rest.isEmpty ? nil : rest.removeFirst()
            return true
        }
        guard let position = rest.firstIndex(where: { $0 === operation }) else { return false }
        rest.remove(at: position)
        return true
    }

    /// Whether `predicate` holds for every dependency (true for none).
    func allSatisfy(_ predicate: (Operation) -> Bool) -> Bool {
        guard let first else { return true }
        guard predicate(first) else { return false }
        guard let second else { return true }
        return predicate(second) && rest.allSatisfy(predicate)
    }

    /// How many dependencies it holds.
    var count: Int { first == nil ? 0 : second == nil ? 1 : 2 + rest.count }

    /// The dependency at `index` (0 is the first added).
    subscript(index: Int) -> Operation {
        switch index {
        case 0: first!
        case 1: second!
        default: rest[index - 2]
        }
    }

    /// Calls `body` for each dependency in order.
    func forEach(_ body: (Operation) -> Void) {
        guard let first else { return }
        body(first)
        guard let second else { return }
        body(second)
        rest.forEach(body)
    }

    /// The dependencies as an array, in order (what `Operation.dependencies` reports).
    var array: [Operation] {
        guard let first else { return [] }
        guard let second else { return [first] }
        if rest.isEmpty { return [first, second] }
        return [first, second] + rest
    }
}
