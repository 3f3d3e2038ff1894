// FoundationAPIQueueTests.swift — Foundation APIs that take a queue, given the queue under test
// (issue 22, item 4): NotificationCenter.addObserver(forName:object:queue:using:) delivers on the
// queue, in the order of the posts, synchronously, and stops after removeObserver; a URLSession
// made with the queue as its delegate queue calls its delegate there, in order (a data task to a
// server on the loopback interface, then invalidation). Compiled outside the module, against
// Operations (whose overloads take its own queue: NotificationCenter's in Operations,
// URLSession's in OperationsNetworking) and against Foundation.
import Testing

/// A one-shot HTTP server on 127.0.0.1: answers each of `connections` requests with `body`.
final class LoopbackHTTPServer: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    let served = Latch()

    init?(body: String, connections: Int = 1) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, named == 0, listen(fd, 4) == 0 else {
            close(fd)
            return nil
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        let served = self.served
        detachThread {
            for _ in 0..<connections {
                let connection = accept(fd, nil, nil)
                if connection < 0 { break }
                var request: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !request.suffix(4).elementsEqual([13, 10, 13, 10]) {
                    let count = read(connection, &buffer, buffer.count)
                    if count <= 0 { break }
                    request += buffer[0..<count]
                }
                var bytes = Array(response.utf8)
                _ = write(connection, &bytes, bytes.count)
                close(connection)
                served.arrive()
            }
            close(fd)
        }
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)/hello")! }
}

/// Records the delegate callbacks of a data task and of the session's end, each with whether it
/// ran on `queue`.
final class RecordingSessionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let queue: OperationQueue
    let events = Recorder<String>()
    let received = Locked(Data())
    let offQueue = Counter()
    let invalidated = Latch()
    let completed = Latch()

    init(queue: OperationQueue) {
        self.queue = queue
    }

    private func note(_ event: String) {
        if OperationQueue.current !== queue { offQueue.increment() }
        events.append(event)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        note("data")
        received.withLock { $0.append(data) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        note(error == nil ? "complete" : "failed: \(error!)")
        completed.open()
    }

    func urlSession(_ session: URLSession, didBecomeInvalidWithError error: (any Error)?) {
        note("invalid")
        invalidated.open()
    }
}

/// Sessions stay reachable after a test (Foundation's session objects form cycles of their own
/// that invalidation does not always break).
private let keptSessions = Locked<[URLSession]>([])

/// Why the URLSession tests do not run under AddressSanitizer: libcurl and FoundationNetworking
/// leak allocations of their own for every session (LeakSanitizer reports them at exit).
private let urlSessionLeaks: Comment = "libcurl and FoundationNetworking leak allocations of their own per session"

@Suite(.sharesProcess) struct FoundationAPIQueueTests {
    static let name = Notification.Name("FoundationAPIQueueTests")

    @Test(arguments: [1, OperationQueue.defaultMaxConcurrentOperationCount])
    func notificationObserverRunsOnTheQueueInPostOrderAndStopsWhenRemoved(_ width: Int) {
        let center = NotificationCenter()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = width
        let log = Recorder<Int>()
        let offQueue = Counter()
        let token = center.addObserver(forName: Self.name, object: nil, queue: queue) { notification in
            if OperationQueue.current !== queue { offQueue.increment() }
            log.append(notification.userInfo?["index"] as? Int ?? -1)
        }
        runOnNewThread("20 posts") {
            for index in 0..<20 { center.post(name: Self.name, object: nil, userInfo: ["index": index]) }
        }
        // Delivery is synchronous: when the posts returned, every block ran, in their order.
        #expect(log.snapshot == Array(0..<20), "\(runtimeUnderTest): \(log.snapshot)")
        #expect(offQueue.current == 0, "\(runtimeUnderTest): \(offQueue.current) blocks ran off the queue")
        center.removeObserver(token)
        runOnNewThread("a post after removeObserver") { center.post(name: Self.name, object: nil) }
        #expect(log.count == 20, "\(runtimeUnderTest): a removed observer was called")
        waitUntilAllOperationsAreFinished(queue)
    }

    @Test func notificationPostedFromAnOperationOfTheQueueRunsTheObserverInPlace() {
        let center = NotificationCenter()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let ranInPlace = Latch()
        let token = center.addObserver(forName: Self.name, object: nil, queue: queue) { _ in
            if OperationQueue.current === queue { ranInPlace.open() }
        }
        // On a serial queue an observer added to the queue behind the posting operation would
        // wait forever: it runs on the posting thread instead.
        queue.addOperation { center.post(name: Self.name, object: nil) }
        waitFor(ranInPlace, "the observer of a post from the queue's own operation")
        waitUntilAllOperationsAreFinished(queue)
        center.removeObserver(token)
    }

    @Test func notificationObserversWithoutAQueueOrWithTheMainQueueCompile() {
        let center = NotificationCenter()
        let ran = Counter()
        // nil and .main: Foundation's own method (ours is disfavoured), unambiguous on both.
        let inPlace = center.addObserver(forName: Self.name, object: nil, queue: nil) { _ in ran.increment() }
        // Compiled, not run: nothing here drives the main queue, and Foundation's observer with
        // a queue leaks its weak reference to it (LeakSanitizer).
        let _: () -> Void = {
            center.removeObserver(center.addObserver(forName: Self.name, object: nil, queue: .main) { _ in })
        }
        runOnNewThread("a post") { center.post(name: Self.name, object: nil) }
        #expect(ran.current == 1)
        center.removeObserver(inPlace)
    }

    /// On a serial queue (what Apple asks of a delegate queue) on both runtimes; on a concurrent
    /// one, Foundation runs the callbacks concurrently and out of order (it does not make the
    /// queue serial), while ours forwards them one at a time.
    @Test(.disabled(if: runningUnderAddressSanitizer, urlSessionLeaks),
          arguments: [1, OperationQueue.defaultMaxConcurrentOperationCount])
    func aURLSessionWithTheQueueCallsItsDelegateThereInOrderAndInvalidates(_ width: Int) throws {
        let server = try #require(LoopbackHTTPServer(body: "hello from loopback"), "no socket on 127.0.0.1")
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = width
        let delegate = RecordingSessionDelegate(queue: queue)
        let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: queue)
        keptSessions.withLock { $0.append(session) }
        session.dataTask(with: server.url).resume()
        guard waitFor(delegate.completed, "the data task to \(server.url) to complete") else { return }
        let handled = Latch()
        // Work added to the session's delegate queue runs in order with the callbacks.
        session.delegateQueue.addOperation {
            if OperationQueue.current === queue { handled.open() }
        }
        waitFor(handled, "a closure added to session.delegateQueue, on the queue")
        session.invalidateAndCancel()
        waitFor(delegate.invalidated, "urlSession(_:didBecomeInvalidWithError:)")
        let events = delegate.events.snapshot
        // The data callback too: Foundation may run it after the completion on a concurrent
        // queue, so the body is not there yet when the test looks (seen once under
        // ThreadSanitizer: callbacks ["complete", "invalid"], nothing received).
        let inOrder = {
            #expect(events.first == "data" && events.suffix(2) == ["complete", "invalid"],
                    "\(runtimeUnderTest), width \(width): callbacks \(events)")
            #expect(String(decoding: delegate.received.withLock { $0 }, as: UTF8.self) == "hello from loopback",
                    "\(runtimeUnderTest), width \(width): callbacks \(events)")
        }
        if width == 1 {
            inOrder()
        } else {
            deliberateDifference("Foundation runs a concurrent delegate queue's callbacks concurrently", inOrder)
        }
        #expect(delegate.offQueue.current == 0, "\(runtimeUnderTest): \(delegate.offQueue.current) callbacks ran off the queue")
        #if BEHAVIOUR_ON_FOUNDATION
        #expect(session.delegateQueue === queue)
        #else
        // The getter returns Foundation's type: the bridge, which leads back to the queue.
        #expect(session.delegateQueue.operationsQueue === queue)
        #endif
    }

    @Test(.disabled(if: runningUnderAddressSanitizer, urlSessionLeaks))
    func aURLSessionWithTheQueueRunsCompletionHandlersThere() throws {
        let server = try #require(LoopbackHTTPServer(body: "handler"), "no socket on 127.0.0.1")
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let session = URLSession(configuration: .ephemeral, delegate: nil, delegateQueue: queue)
        keptSessions.withLock { $0.append(session) }
        let result = Locked<(body: String, onQueue: Bool)?>(nil)
        let done = Latch()
        session.dataTask(with: server.url) { data, _, _ in
            result.withLock { $0 = (String(decoding: data ?? Data(), as: UTF8.self), OperationQueue.current === queue) }
            done.open()
        }.resume()
        waitFor(done, "the completion handler of a data task to \(server.url)")
        #expect(result.withLock { $0?.body } == "handler")
        #expect(result.withLock { $0?.onQueue } == true, "\(runtimeUnderTest): the completion handler ran off the queue")
        session.finishTasksAndInvalidate()
    }

    #if !BEHAVIOUR_ON_FOUNDATION
    @Test func addition_theFoundationQueueOfAQueueRunsItsWorkThereInOrder() {
        let queue = OperationQueue()  // concurrent: the bridge keeps the order
        let bridge = queue.foundationQueue
        #expect(bridge === queue.foundationQueue, "one bridge while it is held")
        #expect(bridge.operationsQueue === queue && bridge.maxConcurrentOperationCount == 1)
        #expect(Foundation.OperationQueue().operationsQueue == nil)
        let log = Recorder<Int>()
        let offQueue = Counter()
        for index in 0..<200 {
            bridge.addOperation {
                if OperationQueue.current !== queue { offQueue.increment() }
                log.append(index)
            }
        }
        // A Foundation operation whose Foundation dependency runs elsewhere, and a barrier.
        let dependencyRan = Latch()
        let dependency = Foundation.BlockOperation { dependencyRan.open() }
        let sawDependency = Locked<Bool?>(nil)
        let dependent = Foundation.BlockOperation {
            sawDependency.withLock { $0 = dependencyRan.isOpen }
            log.append(1001)
        }
        dependent.addDependency(dependency)
        bridge.addOperation(dependent)
        bridge.addBarrierBlock { log.append(1002) }
        runOnNewThread("the dependency on a thread of its own") { dependency.start() }
        runOnNewThread("the bridge's waitUntilAllOperationsAreFinished") { bridge.waitUntilAllOperationsAreFinished() }
        #expect(log.snapshot == Array(0..<200) + [1001, 1002])
        #expect(sawDependency.withLock { $0 } == true, "the Foundation operation ran before its dependency finished")
        #expect(offQueue.current == 0)
        runOnNewThread("addOperations(_:waitUntilFinished: true) on the bridge") {
            bridge.addOperations([Foundation.BlockOperation { log.append(2000) }], waitUntilFinished: true)
        }
        #expect(log.snapshot.last == 2000)
        waitUntilAllOperationsAreFinished(queue)
    }

    // Issue 33, item 4: cancelling the queue cancels what its Foundation queue forwards and
    // holds — the item in flight and the pending ones — and each Foundation operation ends
    // finished (its waiters return, its completion block runs); what is added afterwards runs.
    @Test func addition_cancellingTheQueueCancelsWhatItsFoundationQueueForwardsAndHolds() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let bridge = queue.foundationQueue
        let ran = Recorder<String>()
        let completed = Latch()
        let inFlight = Foundation.BlockOperation { ran.append("in flight") }
        inFlight.completionBlock = { completed.arrive() }
        let held = Foundation.BlockOperation { ran.append("held") }
        held.completionBlock = { completed.arrive() }
        bridge.addOperation(inFlight)               // forwarded to the suspended queue
        bridge.addOperation { ran.append("closure") } // held by the bridge
        bridge.addOperation(held)
        queue.cancelAllOperations()
        queue.isSuspended = false
        runOnNewThread("waitUntilFinished() of the Foundation operation in flight") { inFlight.waitUntilFinished() }
        runOnNewThread("waitUntilFinished() of the held Foundation operation") { held.waitUntilFinished() }
        waitFor(completed, "the completion blocks of both cancelled Foundation operations", count: 2)
        #expect(inFlight.isCancelled && inFlight.isFinished && held.isCancelled && held.isFinished)
        runOnNewThread("the bridge's waitUntilAllOperationsAreFinished") { bridge.waitUntilAllOperationsAreFinished() }
        #expect(ran.snapshot.isEmpty, "cancelled forwarded work ran: \(ran.snapshot)")
        // Added after the cancel: runs.
        runOnNewThread("an item added after the cancel") {
            bridge.addOperations([Foundation.BlockOperation { ran.append("after") }], waitUntilFinished: true)
        }
        #expect(ran.snapshot == ["after"])
        waitUntilAllOperationsAreFinished(queue)
    }

    // Issue 33, item 3: a Foundation operation added to the Foundation queue before the
    // operation it depends on (also added there) waits, and the ready one runs first; the
    // bridge forwarded strictly in order and hung.
    @Test func addition_aFoundationOperationAddedBeforeItsDependencyToTheFoundationQueueRuns() {
        let queue = OperationQueue()
        let bridge = queue.foundationQueue
        let log = Recorder<String>()
        let dependency = Foundation.BlockOperation { log.append("dependency") }
        let dependent = Foundation.BlockOperation { log.append("dependent") }
        dependent.addDependency(dependency)
        bridge.addOperation(dependent)
        bridge.addOperation { log.append("closure") }
        bridge.addOperation(dependency)
        runOnNewThread("the bridge's waitUntilAllOperationsAreFinished") { bridge.waitUntilAllOperationsAreFinished() }
        #expect(log.snapshot == ["closure", "dependency", "dependent"])
        #expect(dependent.isFinished && dependency.isFinished)
        waitUntilAllOperationsAreFinished(queue)
    }

    // Among the ready items the Foundation queue runs them in the order Foundation's own serial
    // queue does (queue priority, then the order added; a dependency added elsewhere releases
    // its dependent when it finishes). The same items go to a Foundation serial queue here, and
    // both orders must agree.
    @Test func addition_theFoundationQueueRunsTheReadyItemsInFoundationsOrder() {
        func run(on target: Foundation.OperationQueue, log: Recorder<String>) {
            let gate = DispatchSemaphore(value: 0)
            let started = Latch()
            target.addOperation { started.open(); gate.wait() } // holds the serial queue
            waitFor(started, "the first item to start")
            let external = Foundation.BlockOperation { log.append("external") }
            for (name, priority) in [("low", Foundation.Operation.QueuePriority.low), ("veryHigh", .veryHigh),
                                     ("normal", .normal), ("high", .high)] {
                let operation = Foundation.BlockOperation { log.append(name) }
                operation.queuePriority = priority
                target.addOperation(operation)
            }
            let waiting = Foundation.BlockOperation { log.append("waits for external") }
            waiting.queuePriority = .veryHigh
            waiting.addDependency(external)
            target.addOperation(waiting)
            target.addOperation { log.append("closure") }
            gate.signal()
            #expect(eventually { log.snapshot.count >= 5 }, "the five ready items of \(target) ran: \(log.snapshot)")
            external.start()
            runOnNewThread("waitUntilAllOperationsAreFinished of \(target)") { target.waitUntilAllOperationsAreFinished() }
        }
        let queue = OperationQueue()
        let ours = Recorder<String>()
        run(on: queue.foundationQueue, log: ours)
        let serial = Foundation.OperationQueue()
        serial.maxConcurrentOperationCount = 1
        let foundations = Recorder<String>()
        run(on: serial, log: foundations)
        #expect(ours.snapshot == foundations.snapshot, "ours: \(ours.snapshot), Foundation's serial queue: \(foundations.snapshot)")
        waitUntilAllOperationsAreFinished(queue)
    }
    #endif
}
