// ProcessExclusivity.swift — suites that need the test process (and the runtime's workers) to
// themselves, and suites that share it: a Swift Testing trait over a reader-writer lock.
import Testing

/// A fair reader-writer lock for whole suites, across both test targets (they run in one
/// process). Most suites share the process; a few need it to themselves: core tests that need
/// two workers free at the same moment (other suites' blocking operations would hold them), and
/// the tests that change the global nice table or read every worker's nice value.
/// Waiting suspends (no thread is blocked), and it wraps suites, not test cases, so it never
/// holds one of Swift Testing's test-case slots while waiting.
public actor ProcessLock {
    public static let shared = ProcessLock()

    private var readers = 0
    private var writer = false
    private var waiting: [(exclusive: Bool, continuation: CheckedContinuation<Void, Never>)] = []

    private func canEnter(exclusive: Bool) -> Bool {
        exclusive ? (!writer && readers == 0) : !writer
    }

    private func enter(exclusive: Bool) {
        if exclusive { writer = true } else { readers += 1 }
    }

    public func acquire(exclusive: Bool) async {
        if waiting.isEmpty && canEnter(exclusive: exclusive) {
            enter(exclusive: exclusive)
            return
        }
        await withCheckedContinuation { continuation in
            waiting.append((exclusive, continuation))
        }
    }

    public func release(exclusive: Bool) {
        if exclusive { writer = false } else { readers -= 1 }
        // First come, first served: a waiting exclusive suite is not overtaken by later sharers.
        while let first = waiting.first, canEnter(exclusive: first.exclusive) {
            waiting.removeFirst()
            enter(exclusive: first.exclusive)
            first.continuation.resume()
        }
    }
}

/// `.sharesProcess` / `.needsQuietProcess`: see ProcessLock.
public struct ProcessExclusivity: SuiteTrait, TestTrait, TestScoping {
    public let exclusive: Bool
    public var isRecursive: Bool { false }

    public func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        await ProcessLock.shared.acquire(exclusive: exclusive)
        do {
            try await function()
        } catch {
            await ProcessLock.shared.release(exclusive: exclusive)
            throw error
        }
        await ProcessLock.shared.release(exclusive: exclusive)
    }
}

extension Trait where Self == ProcessExclusivity {
    /// The suite may run alongside other sharing suites.
    public static var sharesProcess: Self { ProcessExclusivity(exclusive: false) }
    /// Nothing else in this process runs while the suite runs.
    public static var needsQuietProcess: Self { ProcessExclusivity(exclusive: true) }
}
