// LongGraphTests.swift — graphs of 10^5–10^6 operations (issue 33, item 2): waits on the last of
// a long chain that has not run, cancelling it, and a wide fan-in. Nothing may recurse once per
// operation: a wait looked for a dependency cycle with a recursive walk and overflowed the stack
// on a chain of 100 000 (release build; 20 000 in debug), both the blocking wait (after its first
// 100 ms) and the async one (at once).
//
// Not on Foundation: its queue rescans every waiting operation each time one finishes (quadratic
// on a chain) and frees an operation's dependencies recursively (DependencyTests, D5 section).
import Testing

#if !BEHAVIOUR_ON_FOUNDATION
/// Operations in the long chains: 10^6, 10^5 under the sanitizers (ten times slower there).
private let longChainCount = runningUnderSanitizer ? 100_000 : 1_000_000

/// A chain of `count` plain operations, each depending on the one before.
private func makeChain(_ count: Int) -> [Operation] {
    var chain: [Operation] = []
    chain.reserveCapacity(count)
    for index in 0..<count {
        let operation = BlockOperation {}
        if index > 0 { operation.addDependency(chain[index - 1]) }
        chain.append(operation)
    }
    return chain
}

@Suite(.needsQuietProcess) struct LongGraphTests {
    // The blocking wait on the last of a chain of 10^6 that has not run: its looks for a cycle
    // (the first after 100 ms, the next 200 ms later) walk the whole chain, without recursion;
    // then the chain runs and the wait returns.
    @Test func D4_blockingWaitOnTheLastOfAMillionOperationChainThatHasNotRunReturns() {
        let queue = OperationQueue()
        queue.isSuspended = true
        var chain = makeChain(longChainCount)
        queue.addOperations(chain, waitUntilFinished: false)
        let last = chain[chain.count - 1]
        let waiting = Latch()
        let waited = onNewThread {
            waiting.open()
            last.waitUntilFinished()
        }
        waitFor(waiting, "the waiter to start")
        // Not a synchronisation: the wait's looks for a cycle run on a timer, and the defect
        // was in them. Two of them (at 100 and 300 ms) walk the unrun chain.
        quietPeriod(0.45)
        queue.isSuspended = false
        waitFor(waited, "waitUntilFinished() on the last of a chain of \(longChainCount)", seconds: 120)
        chain = []
        waitUntilAllOperationsAreFinished(queue, seconds: 60)
    }

    // The async wait on the last of a chain of 10^6 that has not run: its first look is bounded,
    // the rest of the walk runs later without recursion.
    @Test func D4_asyncWaitOnTheLastOfAMillionOperationChainThatHasNotRunReturns() async {
        let queue = OperationQueue()
        queue.isSuspended = true
        let chain = makeChain(longChainCount)
        queue.addOperations(chain, waitUntilFinished: false)
        let last = chain[chain.count - 1]
        let returned = Latch()
        let waiter = Task {
            await last.waitUntilFinished()
            returned.open()
        }
        // As above: let the deferred walk run over the unrun chain first.
        quietPeriod(0.45)
        queue.isSuspended = false
        let done = await Task.detached { returned.wait(for: 1, seconds: 120) }.value
        #expect(done, "await waitUntilFinished() on the last of a chain of \(longChainCount) returned")
        await waiter.value
        await queue.waitUntilAllOperationsAreFinished()
    }

    // cancelAllOperations() on a suspended queue holding a chain of 10^6: each ends cancelled and
    // finished once the queue resumes, with no recursion through the chain.
    @Test func O8_cancellingAMillionOperationChainEndsEveryOneFinished() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let ran = Counter()
        var chain: [Operation] = []
        chain.reserveCapacity(longChainCount)
        for index in 0..<longChainCount {
            let operation = BlockOperation { ran.increment() }
            if index > 0 { operation.addDependency(chain[index - 1]) }
            chain.append(operation)
        }
        queue.addOperations(chain, waitUntilFinished: false)
        queue.cancelAllOperations()
        queue.isSuspended = false
        guard waitUntilAllOperationsAreFinished(queue, seconds: 120) else { return }
        let unfinished = chain.lazy.filter { !($0.isFinished && $0.isCancelled) }.count
        #expect(unfinished == 0, "\(unfinished) of \(longChainCount) cancelled operations are not finished and cancelled")
        #expect(ran.current == 0, "\(ran.current) cancelled operations ran")
    }

    // A userInteractive operation that depends on 10^5 unstarted operations of a background
    // queue: the promotion walk is bounded, the add returns at once, and everything runs.
    @Test func P6_aHigherQoSOperationDependingOnAHundredThousandUnstartedOnesRuns() {
        let count = runningUnderSanitizer ? 20_000 : 100_000
        let background = OperationQueue()
        background.qualityOfService = .background
        background.isSuspended = true
        let ran = Counter()
        let dependencies = (0..<count).map { _ in BlockOperation { ran.increment() } }
        background.addOperations(dependencies, waitUntilFinished: false)
        let sink = BlockOperation {}
        sink.qualityOfService = .userInteractive
        for dependency in dependencies { sink.addDependency(dependency) }
        let urgent = OperationQueue()
        urgent.addOperation(sink)
        background.isSuspended = false
        guard waitUntilFinished(sink, seconds: 120) else { return }
        #expect(ran.current == count)
        waitUntilAllOperationsAreFinished(background, seconds: 60)
    }
}
#endif
