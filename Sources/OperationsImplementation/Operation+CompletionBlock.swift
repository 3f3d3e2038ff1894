// Operation+CompletionBlock.swift — where a completion block runs: after its operation's finish
// is over (isFinished reads true, waiters returned, dependents released, queue slot free), as a
// task of its own on the runtime's completion queue of the operation's QoS class — on another
// worker, not as part of the operation's work (Apple: "typically a secondary thread").
//
// So anything Foundation lets a completion block do works here: wait for its own operation or
// queue, wait for the next operation of its (serial) queue, take a lock that a thread waiting for
// the operation holds, add to or cancel its own queue. Inside it `OperationQueue.current` is nil
// and `op_task_current()` is the completion task, not the operation.
//
// The completion queues are core queues of default width, one per QoS class (made on first use,
// never freed, not tracking), so a block runs at its operation's class without being carried; a block
// that blocks is stood in for like any body (nested waits get spares, invisible ones the
// monitor). Only an operation that has a completion block pays for one: a box for the closure and
// a core task. If the task cannot be made (out of memory) the block runs on the finishing thread
// instead, after the finish, so it still runs exactly once.
import OperationsCore

extension Operation {
    /// Runs `block` (the operation's completion block, already taken from it) as a task of the
    /// completion queue of class `qos`, holding the operation until the block returned (as
    /// Foundation does: a block may capture it `unowned`). Called once the finish is over.
    func runCompletionBlock(_ block: @escaping @Sendable () -> Void, qos: op_qos_t) {
        let box = Unmanaged.passRetained(CompletionBlockBox(block, holding: self))
        if op_queue_submit_f(CompletionQueues.queue(for: qos), runCompletionBlockTask, box.toOpaque()) != 0 {
            // Out of memory: here, after the finish (never twice, never dropped).
            box.release()
            block()
        }
    }
}

/// A completion block on its way to the completion queue (a C context holds one pointer), with
/// its operation, kept alive until the block returned.
private final class CompletionBlockBox: @unchecked Sendable {
    let block: @Sendable () -> Void
    let operation: Operation
    init(_ block: @escaping @Sendable () -> Void, holding operation: Operation) {
        self.block = block
        self.operation = operation
    }
}

/// The completion task's body: runs the block once and frees the box.
private let runCompletionBlockTask: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    guard let context else { return }
    let box = Unmanaged<CompletionBlockBox>.fromOpaque(context).takeRetainedValue()
    box.block()
    // The box, and with it the operation, is released here, after the block.
}

/// The runtime's completion queues, one per QoS class, made on first use and never freed.
private enum CompletionQueues {
    static let queues = ClassQueues("operations completion blocks")

    static func queue(for qos: op_qos_t) -> OpaquePointer { queues.queue(for: qos) }
}
