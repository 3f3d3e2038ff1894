// DiagnosticsTests.swift — the reports name each queue by its `name` (issue 35, item 1): the
// default `NSOperationQueue 0x…` from the start, a name set later, and the class by name. An
// addition (Foundation has no diagnostic report), so not a behaviour test.
import Operations
import Testing

@Suite(.sharesProcess) struct DiagnosticsTests {
    @Test func aQueuesReportNamesItAsItsNameDoesAndItsClassByName() {
        let queue = OperationQueue()
        queue.qualityOfService = .utility
        #expect(queue.diagnosticReport.contains("queue \"\(queue.name!)\""),
                "the default name: \(queue.diagnosticReport)")
        queue.name = "thumbnails"
        #expect(queue.diagnosticReport.contains("queue \"thumbnails\""), "\(queue.diagnosticReport)")
        #expect(queue.diagnosticReport.contains("qos utility"), "\(queue.diagnosticReport)")
        queue.name = nil
        #expect(queue.name!.hasPrefix("NSOperationQueue 0x"))
        #expect(queue.diagnosticReport.contains("queue \"\(queue.name!)\""), "\(queue.diagnosticReport)")
    }
}
