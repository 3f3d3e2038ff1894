// OperationExtras.swift — the state few operations use (dependency lists, completion blocks,
// names, thread priorities, observers, a BlockOperation's further blocks), made on first use.
// An operation with extras points its state word at them instead of at its core task, so a
// plain operation carries no pointer for them (see OperationStateBits.swift). An operation whose
// core task's address has high bits set (a tagged pointer) gets them at creation, to hold it.

/// The state of an operation that few operations use: created on first use (or with the
/// operation, for a task address the state word cannot hold), guarded by the
/// operation's stripe of `StripedLock.shared`, and freed by the operation's deinit.
final class OperationExtras {
    /// The operation's core task, its full pointer: the state word leads here once the extras
    /// exist.
    let task: OpaquePointer
    var dependencies: [Operation] = []
    /// The operations waiting for this one, announced when it finishes (weak: see
    /// `WeakOperation`).
    var dependents: [WeakOperation] = []
    var completionBlock: (@Sendable () -> Void)?
    var name: String?
    var threadPriority: Double = 0.5
    var observers: [Operation.ObservationKey: [Int: @Sendable (Operation) -> Void]] = [:]
    /// A BlockOperation's blocks after its first.
    var moreBlocks: [@Sendable () -> Void] = []
    /// Tasks suspended in `await waitUntilFinished()`, resumed once when it completes.
    var finishWaiters: [CheckedContinuation<Void, Never>] = []
    /// Made by `addBarrierBlock(_:)`: counts nothing toward its queue's `progress`.
    var isBarrier = false

    init(task: OpaquePointer) { self.task = task }
}
