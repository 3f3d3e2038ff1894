// InvocationOperation.swift — the Swift counterpart of NSInvocationOperation: calls a method on
// a target with an argument and keeps the result, or the thrown error, for the caller.
import Synchronization

/// Calls `method` on `target` with `argument` when it runs, and keeps what it returned (or
/// threw). Read `result` / `error` after it finished.
open class InvocationOperation<Target: AnyObject, Argument, Result>: Operation, @unchecked Sendable {
    private let target: Target
    private let method: (Target) -> (Argument) throws -> Result
    private let argument: Argument
    private var lockedOutcome: Swift.Result<Result, any Error>?

    /// An operation that will call `method(target)(argument)`, e.g.
    /// `InvocationOperation(target: worker, method: Worker.process, argument: data)`.
    public init(target: Target, method: @escaping (Target) -> (Argument) throws -> Result, argument: Argument) {
        self.target = target
        self.method = method
        self.argument = argument
        super.init()
    }

    /// What the call returned, once finished; nil before, after a throw, or when cancelled
    /// before it ran.
    public var result: Result? {
        guard case .success(let value) = outcome else { return nil }
        return value
    }

    /// What the call threw, once finished; nil otherwise.
    public var error: (any Error)? {
        guard case .failure(let error) = outcome else { return nil }
        return error
    }

    /// The result, rethrowing the call's error (NSInvocationOperation's `result` raises).
    public func value() throws -> Result? {
        try outcome?.get()
    }

    private var outcome: Swift.Result<Result, any Error>? {
        StripedLock.shared.withLock(for: self) { lockedOutcome }
    }

    open override func main() {
        let outcome = Swift.Result { try method(target)(argument) }
        StripedLock.shared.withLock(for: self) { lockedOutcome = outcome }
    }
}
