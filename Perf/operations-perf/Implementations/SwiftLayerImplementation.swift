// SwiftLayerImplementation.swift — the same workloads through our Swift API (Operations) and
// through Foundation's OperationQueue, for the Swift layer's figures.
import DispatchBaselines
import Foundation
import Operations

enum OperationsImplementation {
    /// n empty BlockOperations added one by one to a default-width queue, then a wait.
    static func independent(_ n: Int, counter: UnsafeMutablePointer<Int64>) -> UInt64 {
        let queue = Operations.OperationQueue()
        let box = CounterBox(counter)
        let start = Clock.nanoseconds()
        for _ in 0..<n { queue.addOperation(Operations.BlockOperation { baseline_count_one(box.pointer) }) }
        queue.waitUntilAllOperationsAreFinished()
        return Clock.nanoseconds() - start
    }
}

enum FoundationImplementation {
    static func independent(_ n: Int, counter: UnsafeMutablePointer<Int64>) -> UInt64 {
        let queue = Foundation.OperationQueue()
        let box = CounterBox(counter)
        let start = Clock.nanoseconds()
        for _ in 0..<n { queue.addOperation(Foundation.BlockOperation { baseline_count_one(box.pointer) }) }
        queue.waitUntilAllOperationsAreFinished()
        return Clock.nanoseconds() - start
    }
}

/// The counter pointer, sendable into closures (the harness owns its lifetime).
struct CounterBox: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Int64>
    init(_ pointer: UnsafeMutablePointer<Int64>) { self.pointer = pointer }
}

/// Heap bytes (glibc mallinfo2's in-use bytes) per BlockOperation queued on a suspended queue.
enum QueuedMemory {
    static func operations(_ n: Int) -> Double {
        let queue = Operations.OperationQueue()
        queue.isSuspended = true
        let before = baseline_heap_in_use()
        for _ in 0..<n { queue.addOperation(Operations.BlockOperation {}) }
        let after = baseline_heap_in_use()
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        return Double(Int(after) - Int(before)) / Double(n)
    }

    static func foundation(_ n: Int) -> Double {
        let queue = Foundation.OperationQueue()
        queue.isSuspended = true
        let before = baseline_heap_in_use()
        for _ in 0..<n { queue.addOperation(Foundation.BlockOperation {}) }
        let after = baseline_heap_in_use()
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        return Double(Int(after) - Int(before)) / Double(n)
    }
}
