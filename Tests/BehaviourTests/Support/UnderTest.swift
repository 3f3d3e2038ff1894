// UnderTest.swift — which runtime the behaviour tests run against. Every file in this folder
// is compiled twice: in OperationsBehaviourTests over `Operations`, and in
// FoundationBehaviourTests (Tests/BehaviourTestsOnFoundation/Shared is a symbolic link to this
// folder, compiled with BEHAVIOUR_ON_FOUNDATION) over Foundation's OperationQueue. The files use
// only Foundation's Operation API; a test that checks one of our deliberate differences (Apple
// semantics that Foundation on Linux lacks, or an addition of ours) says so in its name and
// wraps its checks in `deliberateDifference(_:_:)`.
//
// One rule for every test here: an operation that depends on another must stay alive until
// that other one finished. Foundation on Linux keeps unretained pointers to an operation's
// dependents and follows them when it finishes: a dependent freed earlier crashes the run in
// `Operation.observeValue` (5 of 6 runs of this target did, before the tests kept theirs).
#if BEHAVIOUR_ON_FOUNDATION
@_exported import Foundation
@_exported import FoundationNetworking
#else
@_exported import Operations
@_exported import OperationsNetworking
#endif
@_exported import Dispatch
@_exported import Glibc
@_exported import OperationsTestSupport
import Testing

/// The runtime these tests run against, for messages.
#if BEHAVIOUR_ON_FOUNDATION
let runtimeUnderTest = "Foundation"
let onFoundation = true
#else
let runtimeUnderTest = "Operations"
let onFoundation = false
#endif

/// Deadlines of the behaviour tests.
enum Deadline {
    /// For something that must happen: a timeout fails the test with a message.
    static let seconds: Double = 10
    /// For something that must not happen (yet): how long a test looks before it goes on.
    static let quietSeconds: Double = 0.2
    /// For something that must happen here but that Foundation, in a test of a deliberate
    /// difference, is known not to do: the Foundation run need not wait long for it.
    static let differenceSeconds: Double = onFoundation ? 1 : seconds
}

extension Tag {
    /// Checks one of our deliberate differences from Foundation on Linux (Apple semantics it
    /// lacks, or an addition of ours): on Foundation its failures are known issues.
    @Tag static var deliberateDifference: Tag
}

/// Runs `checks`. On Foundation, what they record is a known issue: the test checks a
/// deliberate difference, named in `why`, so Foundation is expected to fail it (or pass by
/// chance, where the difference is a race).
func deliberateDifference(_ why: Comment, _ checks: () throws -> Void) rethrows {
    #if BEHAVIOUR_ON_FOUNDATION
    withKnownIssue(why, isIntermittent: true) { try checks() }
    #else
    try checks()
    #endif
}

/// Waits for `target` arrivals at `latch`; on timeout records an issue naming `what` and
/// returns false (what the caller waited for did not happen: it should stop).
@discardableResult
func waitFor(_ latch: Latch, _ what: String, count target: Int = 1, seconds: Double = Deadline.seconds,
             sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    if latch.wait(for: target, seconds: seconds) { return true }
    Issue.record("\(runtimeUnderTest): timed out after \(seconds) s waiting for \(what) (\(latch.arrivals)/\(target))",
                 sourceLocation: sourceLocation)
    return false
}

/// Blocks operations' bodies until opened: they wait on an operation in no queue with
/// `waitUntilFinished()` (a wait the runtime knows of), and `open()` starts it.
final class OperationGate: @unchecked Sendable {
    private let operation = BlockOperation {}
    private let opened = Locked(false)

    /// Blocks until `open()` was called.
    func wait() { operation.waitUntilFinished() }

    /// Lets every waiter go on; idempotent.
    func open() {
        let first = opened.withLock { opened -> Bool in
            defer { opened = true }
            return !opened
        }
        if first { operation.start() }
    }
}

