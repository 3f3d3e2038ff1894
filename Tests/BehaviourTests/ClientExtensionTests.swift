// ClientExtensionTests.swift — client code that declares its own members on Foundation's types,
// as apps written for Foundation do, compiles against both runtimes and calls the client's
// members: our additions must not make those calls ambiguous (issue "Drop-in for real"). A
// compile test first: most of what it checks is that this file builds in both targets.
import Testing

extension OperationQueue {
    /// A client's own async form of `addOperation`, as apps declare it over Foundation (which
    /// has none): the operation stays executing until the body returned or threw.
    func addOperation(block: @escaping () async throws -> Void) {
        clientAsyncAdds.increment()
        nonisolated(unsafe) let body = block
        addOperation(BlockOperation {
            let done = DispatchSemaphore(value: 0)
            Task {
                try? await body()
                done.signal()
            }
            done.wait()
        })
    }
}

/// How many times the client's `addOperation(block:)` was called.
private let clientAsyncAdds = Counter()

extension NotificationCenter {
    /// A client's helper over `addObserver(forName:object:queue:using:)`, its queue typed with
    /// the OperationQueue its file sees (ours where it imports Operations) and defaulting to nil:
    /// the forwarding call must pick the method for that queue, and `nil` stay unambiguous.
    func clientObserve(_ name: Notification.Name, queue: OperationQueue? = nil,
                       _ block: @escaping @Sendable (Notification) -> Void) -> any NSObjectProtocol {
        addObserver(forName: name, object: nil, queue: queue, using: block)
    }
}

/// The process to itself: the client's async body runs in a Swift task, which needs a thread of
/// the cooperative pool (two on a 2-CPU machine), and other suites' synchronous tests hold those
/// threads for seconds (the liveness fuzz for 11 s: in CI the task then did not run within the
/// test's 10 s deadline).
@Suite(.needsQuietProcess) struct ClientExtensionTests {
    // Async, and waiting without blocking a thread: the client's body runs in a task, which
    // needs a thread of the cooperative pool (two threads on a 2-CPU machine).
    @Test func aClientsAsyncAddOperationExtensionIsCalledWithATrailingClosure() async throws {
        let queue = OperationQueue()
        let ran = Latch()
        let addsBefore = clientAsyncAdds.current
        // With an async addOperation(_:) of ours beside it, this call picked ours over the
        // client's (and a client's @Sendable variant made it ambiguous).
        queue.addOperation {
            await Task.yield()
            ran.arrive()
        }
        #expect(clientAsyncAdds.current == addsBefore + 1, "\(runtimeUnderTest): the trailing closure did not call the client's addOperation(block:)")
        queue.addOperation { ran.arrive() }  // no await: Foundation's addOperation(_:)
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(Deadline.seconds)
        while ran.arrivals < 2 && clock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(ran.arrivals == 2, "\(runtimeUnderTest): \(ran.arrivals) of the client's async block and a synchronous one ran")
    }

    @Test func aClientsNotificationHelperForwardsItsQueue() {
        let center = NotificationCenter()
        let name = Notification.Name("ClientExtensionTests")
        let queue = OperationQueue()
        let onQueue = Counter()
        let inPlace = Counter()
        let first = center.clientObserve(name, queue: queue) { _ in
            if OperationQueue.current === queue { onQueue.increment() }
        }
        let second = center.clientObserve(name) { _ in inPlace.increment() }
        runOnNewThread("a post") { center.post(name: name, object: nil) }
        #expect(onQueue.current == 1 && inPlace.current == 1,
                "\(runtimeUnderTest): \(onQueue.current) on the queue, \(inPlace.current) in place")
        center.removeObserver(first)
        center.removeObserver(second)
    }

    #if !BEHAVIOUR_ON_FOUNDATION
    // Foundation on Linux marks addOperations(_:waitUntilFinished:) noasync, so there this call
    // does not compile in async code even without waiting; ours keeps it synchronous and
    // available, with addOperationsAndWait(_:) as the async waiting form.
    @Test func addition_addOperationsWithoutWaitingCompilesInAsyncCodeWithoutAwait() async {
        let queue = OperationQueue()
        let ran = Counter()
        queue.addOperations([BlockOperation { ran.increment() }, BlockOperation { ran.increment() }],
                            waitUntilFinished: false)
        await queue.addOperationsAndWait([BlockOperation { ran.increment() }])
        await queue.waitUntilAllOperationsAreFinished()
        #expect(ran.current == 3, "\(runtimeUnderTest): \(ran.current) of 3 operations ran")
    }
    #endif
}
