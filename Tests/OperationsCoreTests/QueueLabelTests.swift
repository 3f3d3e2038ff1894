// QueueLabelTests.swift — a queue's label reaches every report and can change after creation
// (issue 35, item 1: a Swift queue's `name` is set after the core queue exists); the strings
// op_queue_label returned before a rename stay valid until the queue is destroyed; class names,
// not numbers, in the reports.
import Glibc
import OperationsCore
import Testing

@Suite struct QueueLabelTests {
    /// The queue's report (op_queue_describe) as a String.
    private func describe(_ queue: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 1024)
        _ = op_queue_describe(queue, &buffer, buffer.count)
        return String(cString: buffer)
    }

    @Test func aLabelSetAfterCreationIsInTheReportWithTheClassByName() throws {
        let queue = try makeQueue("first", qos: OP_QOS_UTILITY)
        defer { op_queue_release(queue) }
        #expect(String(cString: op_queue_label(queue)!) == "first")
        #expect(op_queue_set_label(queue, "downloads") == 0)
        #expect(String(cString: op_queue_label(queue)!) == "downloads")
        let report = describe(queue)
        #expect(report.contains("queue \"downloads\""), "\(report)")
        #expect(report.contains("qos utility"), "the class by name: \(report)")
        #expect(op_queue_set_label(queue, nil) == 0)
        #expect(op_queue_label(queue) == nil)
        #expect(describe(queue).contains("queue \"\""))
        #expect(op_queue_set_label(nil, "x") == EINVAL)
    }

    @Test func classNamesAreFoundationsSpelling() {
        let names = (0..<Int32(OP_QOS_COUNT)).map { String(cString: op_qos_name($0)) }
        #expect(names == ["background", "utility", "default", "userInitiated", "userInteractive"])
        #expect(String(cString: op_qos_name(OP_QOS_INHERIT)) == "inherit")
        #expect(String(cString: op_qos_name(7)) == "unknown")
    }

    /// Renames racing with readers: every string a reader got stays readable (it is one of the
    /// labels set) until the queue is destroyed. Under AddressSanitizer a label freed early is a
    /// use after free; under ThreadSanitizer the publication is checked.
    @Test func labelsReadWhileTheQueueIsRenamedStayValid() throws {
        let queue = try makeQueue("label 0")
        let held = Recorder<UInt>()  // the addresses op_queue_label returned
        let handle = SendablePointer(queue)
        let ok = runThreads(4) { index in
            let queue = handle.raw
            for round in 0..<500 {
                if index == 0 {
                    _ = op_queue_set_label(queue, "label \(round + 1)")
                } else if let label = op_queue_label(queue) {
                    held.append(UInt(bitPattern: label))
                    var buffer = [CChar](repeating: 0, count: 512)
                    _ = op_queue_describe(queue, &buffer, buffer.count)
                }
            }
        }
        #expect(ok, "the threads did not finish")
        for address in held.snapshot {
            let text = String(cString: UnsafePointer<CChar>(bitPattern: address)!)
            #expect(text.hasPrefix("label "), "a label read during the renames reads \(text)")
        }
        #expect(String(cString: op_queue_label(queue)!) == "label 500")
        op_queue_release(queue)
    }
}
