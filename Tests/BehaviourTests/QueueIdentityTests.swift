// QueueIdentityTests.swift — what a queue reports about itself and the operations it makes:
// default names (SEMANTICS Q13), and the QoS of a block added with addOperation { } (Q10).
import Testing

@Suite(.sharesProcess) struct QueueIdentityTests {
    @Test func Q13_aNewQueueIsNamedAfterItsAddress() {
        let first = OperationQueue()
        let second = OperationQueue()
        let firstName = first.name
        #expect(firstName != nil, "\(runtimeUnderTest): a new queue's name is nil")
        #expect(firstName?.hasPrefix("NSOperationQueue 0x") == true, "\(runtimeUnderTest): \(String(describing: firstName))")
        #expect(firstName != second.name)
        #expect(first.name == firstName, "the default name is stable")
        first.name = "downloads"
        #expect(first.name == "downloads")
    }

    @Test func Q13_theMainQueueIsNamedMainQueue() {
        #expect(OperationQueue.main.name == "NSOperationQueue Main Queue")
    }

    @Test(arguments: [QualityOfService.utility, .userInitiated, .background, .default])
    func Q10_aBlockAddedWithAddOperationReportsItsQueuesQoS(_ qos: QualityOfService) {
        let queue = OperationQueue()
        queue.qualityOfService = qos
        queue.isSuspended = true
        queue.addOperation {}
        let listed = queue.operations
        #expect(listed.count == 1)
        #expect(listed.first?.qualityOfService == qos, "\(runtimeUnderTest): \(String(describing: listed.first?.qualityOfService))")
        queue.isSuspended = false
        waitUntilAllOperationsAreFinished(queue)
    }

    @Test func Q10_aNewQueueReportsDefaultQoS() {
        #expect(OperationQueue().qualityOfService == .default)
        #expect(OperationQueue.main.qualityOfService == .userInteractive)
    }
}
