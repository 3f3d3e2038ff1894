// QueueLabelTests.swift — a queue's label reaches every report and can change after creation
// (issue 35, item 1: a Swift queue's `name` is set after the core queue exists); the strings
// op_queue_label returned before a rename stay valid until the queue is destroyed; class names,
// not numbers, in the reports.
import Foundation
import Glibc
import OperationsCore
import Testing

@Suite struct QueueLabelTests {
    /// The queue's report (op_queue_describe) as a String.
    private func describe(_ queue: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 1024)
        _ = op_queue_describe(queue, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
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

    /// A worker's thread is named by its class and the CPU it is pinned to ("op-uinit-c3"), a
    /// spare by its class and serial ("op-uinit-s2"): ps -L, top -H, perf and the trace show
    /// these names.
    @Test func workerThreadsAreNamedByClassAndCPU() throws {
        let queue = try makeQueue("thread-names", qos: OP_QOS_USER_INITIATED)
        defer { op_queue_release(queue) }
        let seen = ThreadNameProbe()
        #expect(op_queue_submit_f(queue, { context in
            let probe = contextObject(context, as: ThreadNameProbe.self)
            // The kernel's name of this thread, and the one CPU a pinned worker may run on.
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(op_current_thread_id())/comm", encoding: .utf8)) ?? ""
            var cpus = [Int32](repeating: -1, count: 4096)
            let count = op_current_thread_cpus(&cpus, cpus.count)
            probe.record(name: comm.trimmingCharacters(in: .newlines), cpu: count == 1 ? cpus[0] : -1)
        }, contextPointer(seen)) == 0)
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        let (name, cpu) = seen.value
        let pinned = name == "op-uinit-c\(cpu)"
        let spare = name.hasPrefix("op-uinit-s") && Int(name.dropFirst("op-uinit-s".count)) != nil
        #expect(pinned || spare, "a userInitiated body on CPU \(cpu) ran on a thread named \"\(name)\"")
    }
}

/// What a body saw of its thread: its name and CPU.
private final class ThreadNameProbe: Sendable {
    private let seen = Recorder<(String, Int32)>()
    func record(name: String, cpu: Int32) { seen.append((name, cpu)) }
    var value: (String, Int32) { seen.snapshot.first ?? ("(the body did not run)", -1) }
}
