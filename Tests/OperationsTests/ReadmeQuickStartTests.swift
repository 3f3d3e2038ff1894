// ReadmeQuickStartTests.swift — the README's Swift quick start, compiled and run. The two regions
// between "README quick start" markers are the README's ```swift block (after its imports),
// the second one indented into a test; ReadmeSwiftQuickStartTests (in OperationsCoreTests)
// checks that the README says the same, so an edit to either side fails until both agree.
import Operations
import Synchronization
import Testing

// README quick start: begin
/// An asynchronous operation: start() returns at once, and the operation finishes when its
/// work (here a Swift task) is done. Changes of isExecuting and isFinished are announced.
final class Delay: Operation, @unchecked Sendable {
    private let state = Mutex((executing: false, finished: false))
    private let milliseconds: Int
    init(milliseconds: Int) { self.milliseconds = milliseconds }

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { state.withLock { $0.executing } }
    override var isFinished: Bool { state.withLock { $0.finished } }

    override func start() {
        if isCancelled { return finish() }
        willChangeValue(forKey: "isExecuting")
        state.withLock { $0.executing = true }
        didChangeValue(forKey: "isExecuting")
        Task {
            try? await Task.sleep(for: .milliseconds(milliseconds))
            self.finish()
        }
    }

    private func finish() {
        willChangeValue(forKey: "isExecuting")
        willChangeValue(forKey: "isFinished")
        state.withLock { $0 = (executing: false, finished: true) }
        didChangeValue(forKey: "isFinished")
        didChangeValue(forKey: "isExecuting")
    }
}
// README quick start: end

@Suite(.sharesProcess) struct ReadmeQuickStartTests {
    @Test func quickStartRunsTheGraphAndTheAwaitReturns() async {
        let finished = await completes("the README's quick start") {
            // README quick start: begin
            let queue = OperationQueue()
            queue.qualityOfService = .utility                  // its workers run at nice 2 (6 unprivileged)
            let download = Delay(milliseconds: 20)
            let parse = BlockOperation { print("parse: after the download") }
            let index = BlockOperation { print("index: no dependency, runs at once") }
            let report = BlockOperation { print("report: after parse and index") }
            parse.addDependency(download)
            report.addDependency(parse)
            report.addDependency(index)
            queue.addOperations([download, parse, index, report], waitUntilFinished: false)

            await report.waitUntilFinished()                   // suspends this task; no thread blocks
            // README quick start: end
            #expect(download.isFinished && parse.isFinished && index.isFinished && report.isFinished)
            #expect(!download.isCancelled && !report.isCancelled)
        }
        #expect(finished)
    }

    @Test func delayCancelledBeforeItsQueueStartsItFinishesWithoutRunning() async {
        let finished = await completes("a cancelled Delay") {
            let queue = OperationQueue()
            queue.isSuspended = true
            let delay = Delay(milliseconds: 10_000)
            let after = BlockOperation {}
            after.addDependency(delay)
            queue.addOperations([delay, after], waitUntilFinished: false)
            delay.cancel()
            queue.isSuspended = false
            await after.waitUntilFinished()
            #expect(delay.isFinished && !delay.isExecuting)
        }
        #expect(finished)
    }
}
