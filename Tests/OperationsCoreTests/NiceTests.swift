// NiceTests.swift — QoS classes and thread priority as nice values: what a task body runs at,
// that workers go back to their class's value, the mapping function, the OPERATIONS_QOS_NICE
// parser and the run-time nice table.
//
// One serialized suite with the process to itself: several tests change the global nice table
// (and restore it), and the others read the nice value of every worker.
import Glibc
import OperationsCore
import Synchronization
import Testing

/// What a task body saw about itself.
private final class NiceRecord: Sendable {
    let nice = Atomic<Int32>(Int32.min)
    let currentTask = Atomic<Int>(0)
    let ran = Atomic<Int>(0)
    init() {}
}

private let recordNiceBody: TaskBody = { context in
    let record = contextObject(context, as: NiceRecord.self)
    record.nice.store(op_current_thread_nice(), ordering: .relaxed)
    record.currentTask.store(Int(bitPattern: op_task_current()), ordering: .relaxed)
    record.ran.add(1, ordering: .relaxed)
}

@Suite(.needsQuietProcess, .serialized)
struct NiceTests {
    @Test func defaultTableMatchesLibdispatch() {
        #expect(niceTable() == defaultNiceTable,
                "the nice table is \(niceTable()) (is OPERATIONS_QOS_NICE set for the test run?)")
        #expect(op_runtime_nice_env_error() == nil)
    }

    @Test func taskBodiesRunAtTheNiceOfTheirQoSAndThreadPriorityAndWorkersGoBack() throws {
        let queueClass = OP_QOS_USER_INITIATED
        op_runtime_start_workers(queueClass)
        let queue = try makeQueue("nice-bodies", qos: queueClass)
        defer { op_queue_release(queue) }
        let callerNice = op_current_thread_nice()

        struct Case { let qos: Int32; let threadPriority: Double; let record: NiceRecord; let task: OpaquePointer }
        var cases: [Case] = []
        for qos in allQoSClasses.map(qosAttr) + [OP_QOS_INHERIT] {
            for threadPriority in [1.0, 0.0, 0.5, 0.75] {
                let record = NiceRecord()
                let task = try makeTask(recordNiceBody, contextPointer(record), qos: qos, threadPriority: threadPriority)
                cases.append(Case(qos: qos, threadPriority: threadPriority, record: record, task: task))
            }
        }
        for item in cases { #expect(op_queue_submit(queue, item.task) == 0) }
        for item in cases {
            // Polled: a wait that sleeps would raise the task to this thread's class (QoS
            // promotion), and this measures the nice each class runs at on its own.
            let start = monotonicNs()
            while !op_task_is_finished(item.task) && monotonicNs() - start < Limits.waitNs { sleepNs(100_000) }
            let rc = op_task_is_finished(item.task) ? 0 : ETIMEDOUT
            #expect(rc == 0, "task (qos \(item.qos), thread priority \(item.threadPriority)) did not finish: \(errnoName(rc))")
        }
        for item in cases {
            let effective = item.qos == OP_QOS_INHERIT ? queueClass : op_qos_t(rawValue: UInt32(item.qos))
            let expected = op_runtime_nice_for(effective, item.threadPriority)
            let seen = item.record.nice.load(ordering: .relaxed)
            #expect(seen == expected,
                    "body of a \(item.qos == OP_QOS_INHERIT ? "inherited" : qosName(effective)) task at thread priority \(item.threadPriority) ran at nice \(seen), expected \(expected)")
            #expect(item.record.currentTask.load(ordering: .relaxed) == Int(bitPattern: item.task),
                    "op_task_current() in the body was not the task")
            op_task_release(item.task)
        }
        #expect(op_task_current() == nil, "op_task_current() outside a body")
        #expect(op_current_thread_nice() == callerNice, "the submitting thread's nice changed")

        // Every worker of the queue's class is back at the class's value.
        let table = niceTable()
        for (index, info) in workerInfos(queueClass).enumerated() {
            let nice = niceOfThread(info.tid)
            #expect(nice == info.class_nice && info.class_nice == table[Int(queueClass.rawValue)],
                    "\(qosName(queueClass)) worker \(index) (tid \(info.tid)) is at nice \(nice.map { "\($0)" } ?? "?") after the tasks; class nice \(info.class_nice), table \(table[Int(queueClass.rawValue)])")
        }
    }

    @Test func niceForMapsThreadPriorityAroundTheClassValue() throws {
        try #require(niceTable() == defaultNiceTable, "needs the default table, found \(niceTable())")
        #expect(op_runtime_nice_for(OP_QOS_DEFAULT, 0.5) == 0)
        #expect(op_runtime_nice_for(OP_QOS_DEFAULT, 1.0) == -5)
        #expect(op_runtime_nice_for(OP_QOS_DEFAULT, 0.0) == 5)
        #expect(op_runtime_nice_for(OP_QOS_BACKGROUND, 0.0) == 15)
        #expect(op_runtime_nice_for(OP_QOS_BACKGROUND, 0.5) == 10)
        #expect(op_runtime_nice_for(OP_QOS_UTILITY, 1.0) == -3)
        #expect(op_runtime_nice_for(OP_QOS_USER_INITIATED, 0.0) == 3)
        #expect(op_runtime_nice_for(OP_QOS_USER_INTERACTIVE, 1.0) == -9)
        #expect(op_runtime_nice_for(OP_QOS_USER_INTERACTIVE, 0.5) == -4)
        // lround((0.5 - t) * 10): halves round away from zero.
        #expect(op_runtime_nice_for(OP_QOS_DEFAULT, 0.75) == -3)
        #expect(op_runtime_nice_for(OP_QOS_DEFAULT, 0.25) == 3)
        #expect(op_runtime_nice_for(OP_QOS_DEFAULT, 0.6) == -1)

        // Limited to -20 … 19.
        let original = niceTable()
        try #require(setNiceTable([19, 2, 0, -2, -20]) == 0)
        #expect(op_runtime_nice_for(OP_QOS_BACKGROUND, 0.0) == 19, "19 + 5 must clamp to 19")
        #expect(op_runtime_nice_for(OP_QOS_BACKGROUND, 1.0) == 14)
        #expect(op_runtime_nice_for(OP_QOS_USER_INTERACTIVE, 1.0) == -20, "-20 - 5 must clamp to -20")
        #expect(op_runtime_nice_for(OP_QOS_USER_INTERACTIVE, 0.0) == -15)
        #expect(setNiceTable(original) == 0)
        #expect(niceTable() == original)
    }

    @Test func parseNiceSpecChangesOnlyTheNamedEntries() {
        var table = defaultNiceTable
        var error = [CChar](repeating: 0, count: 256)
        let rc = op_runtime_parse_nice_spec("userInteractive=-8,background=15", &table, &error, error.count)
        #expect(rc == 0, "rejected: \(string(fromCBuffer: error))")
        #expect(table == [15, 2, 0, -2, -8])

        // Class names are case-insensitive; -20 and 19 are in range.
        var other: [Int32] = [1, 1, 1, 1, 1]
        let rc2 = op_runtime_parse_nice_spec("USERINTERACTIVE=-20,Utility=19,default=7,userinitiated=-3", &other, &error, error.count)
        #expect(rc2 == 0, "rejected: \(string(fromCBuffer: error))")
        #expect(other == [1, 19, 7, -3, -20])

        // One entry; the error buffer may be NULL.
        var single: [Int32] = [0, 0, 0, 0, 0]
        #expect(op_runtime_parse_nice_spec("Background=3", &single, nil, 0) == 0)
        #expect(single == [3, 0, 0, 0, 0])
    }

    static let badSpecs: [(spec: String, names: String)] = [
        ("", "empty"),
        ("foo=3", "'foo=3'"),
        ("background", "'background'"),
        ("background=", "'background='"),
        ("background=abc", "'background=abc'"),
        ("background=20", "'background=20'"),
        ("utility=-21", "'utility=-21'"),
        ("default=1,", "''"),
        (",default=1", "''"),
        ("default=1.5", "'default=1.5'"),
        ("default=1,bogus=2", "'bogus=2'"),
        ("default=1,,utility=2", "''"),
    ]

    @Test(arguments: badSpecs)
    func parseNiceSpecRejectsABadSpecWholeAndNamesTheEntry(spec: String, names fragment: String) {
        let sentinel: [Int32] = [11, 12, 13, 14, 15]
        var table = sentinel
        var error = [CChar](repeating: 0, count: 256)
        let rc = op_runtime_parse_nice_spec(spec, &table, &error, error.count)
        let message = string(fromCBuffer: error)
        #expect(rc == EINVAL, "\"\(spec)\" returned \(errnoName(rc))")
        #expect(table == sentinel, "\"\(spec)\" changed the table to \(table)")
        #expect(message.contains(fragment), "message for \"\(spec)\" does not name \(fragment): \"\(message)\"")

        // No error buffer, and a tiny one: still EINVAL, no overflow, NUL-terminated.
        #expect(op_runtime_parse_nice_spec(spec, &table, nil, 0) == EINVAL)
        var tiny = [CChar](repeating: 0x7F, count: 9)
        #expect(op_runtime_parse_nice_spec(spec, &table, &tiny, 8) == EINVAL)
        #expect(tiny[8] == 0x7F, "wrote past the error buffer's size")
        #expect(tiny[..<8].contains(0), "truncated message is not NUL-terminated")
        #expect(table == sentinel)
    }

    @Test func setNiceTableRejectsOutOfRangeValuesAndKeepsTheTable() {
        let original = niceTable()
        for bad: [Int32] in [[20, 2, 0, -2, -4], [10, 2, 0, -2, -21], [10, 2, 100, -2, -4], [10, Int32.min, 0, -2, -4]] {
            #expect(setNiceTable(bad) == EINVAL, "accepted \(bad)")
            #expect(niceTable() == original, "a rejected table \(bad) changed the table")
        }
        #expect(op_runtime_set_nice_table(nil) == EINVAL)
    }

    @Test func setNiceTableIsVisibleAndWorkersTakeTheNewValueBeforeTheirNextTask() throws {
        let original = niceTable()
        let changed: [Int32] = original.map { $0 < 19 ? $0 + 1 : $0 - 1 }
        for qos in allQoSClasses { op_runtime_start_workers(qos) }

        try #require(setNiceTable(changed) == 0)
        #expect(niceTable() == changed)
        for qos in allQoSClasses {
            let ran = try runTasksUntilEveryWorkerRanOne(qos)
            checkWorkers(qos, areAt: changed[Int(qos.rawValue)], ranOn: ran)
        }

        #expect(setNiceTable(original) == 0)
        #expect(niceTable() == original)
        for qos in allQoSClasses {
            let ran = try runTasksUntilEveryWorkerRanOne(qos)
            checkWorkers(qos, areAt: original[Int(qos.rawValue)], ranOn: ran)
        }
    }

    private func checkWorkers(_ qos: op_qos_t, areAt nice: Int32, ranOn tids: Set<Int32>?,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        let workers = workerInfos(qos)
        if let tids {
            #expect(Set(workers.map(\.tid)).isSubset(of: tids), "the tasks did not run on every \(qosName(qos)) worker",
                    sourceLocation: sourceLocation)
        }
        for info in workers {
            let actual = niceOfThread(info.tid)
            #expect(actual == nice && info.class_nice == nice,
                    "\(qosName(qos)) worker tid \(info.tid): nice \(actual.map { "\($0)" } ?? "?"), class_nice \(info.class_nice), expected \(nice)",
                    sourceLocation: sourceLocation)
        }
    }
}
