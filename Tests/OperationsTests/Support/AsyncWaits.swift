// AsyncWaits.swift — bounded awaits for the async API's tests: the awaited work runs as a task
// of its own and the test waits for it with a deadline (on a thread of ours, so the wait blocks
// no thread of the cooperative pool), so an await that never returns fails the test with a
// message instead of hanging the run.
import Foundation
import Testing

/// Runs `body` as an unstructured task and waits at most `seconds` for it to return. Returns
/// false (and records an issue naming `what`) on timeout; the task is then left behind.
@discardableResult
func completes(_ what: String, seconds: Double = Limits.waitSeconds,
               sourceLocation: SourceLocation = #_sourceLocation,
               _ body: @escaping @Sendable () async -> Void) async -> Bool {
    let done = Latch()
    Task.detached { await body(); done.open() }
    let returned = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        detachThread { continuation.resume(returning: done.wait(for: 1, seconds: seconds)) }
    }
    if !returned {
        Issue.record("timed out after \(seconds) s waiting for \(what)", sourceLocation: sourceLocation)
    }
    return returned
}
