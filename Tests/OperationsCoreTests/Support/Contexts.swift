// Contexts.swift — passing Swift state through the core's `void *context`, counters that task
// bodies update, small task/queue helpers, and seeded randomness.
import Foundation
import Glibc
import OperationsCore
import Synchronization
import Testing

/// A task body or on_finish callback: C cannot capture, so state travels in `context`.
typealias TaskBody = @convention(c) (UnsafeMutableRawPointer?) -> Void

/// The context pointer for `object`. The object is retained and deliberately never released:
/// if a wait times out (the test fails) a task may still run later, and it must never find freed
/// memory. A handful of small objects per test.
func contextPointer<T: AnyObject>(_ object: T) -> UnsafeMutableRawPointer {
    Unmanaged.passRetained(object).toOpaque()
}

/// The object behind a context pointer made by `contextPointer`.
func contextObject<T: AnyObject>(_ context: UnsafeMutableRawPointer?, as type: T.Type) -> T {
    Unmanaged<T>.fromOpaque(context!).takeUnretainedValue()
}

/// Counters shared by task bodies and the test.
final class Counters: Sendable {
    /// Bodies that ran.
    let ran = Atomic<Int>(0)
    /// on_finish calls.
    let finished = Atomic<Int>(0)
    /// Bodies running right now, and the most seen at once.
    let running = Atomic<Int>(0)
    let maxRunning = Atomic<Int>(0)
    /// Hands out start positions (0, 1, 2, …) to bodies that record their order.
    let ticket = Atomic<Int>(0)
    /// Something a body saw that it should not have (a broken ordering rule).
    let violations = Atomic<Int>(0)
    /// Signalled by `finished` reaching `finishTarget` (set before submitting).
    let finishTarget = Atomic<Int>(Int.max)
    let allFinished = Latch()

    init() {}

    func enter() {
        let now = running.add(1, ordering: .sequentiallyConsistent).newValue
        var seen = maxRunning.load(ordering: .relaxed)
        while now > seen {
            let (exchanged, original) = maxRunning.compareExchange(
                expected: seen, desired: now, ordering: .relaxed)
            if exchanged { break }
            seen = original
        }
    }

    func leave() { running.subtract(1, ordering: .sequentiallyConsistent) }

    func noteFinished() {
        let now = finished.add(1, ordering: .acquiringAndReleasing).newValue
        if now == finishTarget.load(ordering: .acquiring) { allFinished.open() }
    }
}

/// Body: counts a run.
let countRun: TaskBody = { context in
    contextObject(context, as: Counters.self).ran.add(1, ordering: .relaxed)
}

/// on_finish: counts a finish (and opens `allFinished` at `finishTarget`).
let countFinish: TaskBody = { context in
    contextObject(context, as: Counters.self).noteFinished()
}

/// Body: counts a run while tracking how many bodies overlap (with a little work inside, so
/// an overlap has a window to show up in).
let countConcurrentRun: TaskBody = { context in
    let counters = contextObject(context, as: Counters.self)
    counters.enter()
    var spin = 0
    for i in 0..<200 { spin &+= i }
    withExtendedLifetime(spin) {}
    counters.ran.add(1, ordering: .relaxed)
    counters.leave()
}

/// Body: does nothing.
let emptyBody: TaskBody = { _ in }

/// Creates a task or fails the test.
func makeTask(_ body: TaskBody, _ context: UnsafeMutableRawPointer?,
              priority: op_priority_t = OP_PRIORITY_NORMAL, qos: Int32 = OP_QOS_INHERIT,
              threadPriority: Double = 0.5, flags: UInt32 = 0, onFinish: TaskBody? = nil,
              sourceLocation: SourceLocation = #_sourceLocation) throws -> OpaquePointer {
    var attr = op_task_attr_t()
    op_task_attr_init(&attr)
    attr.priority = priority
    attr.qos = qos
    attr.thread_priority = threadPriority
    attr.flags = flags
    attr.on_finish = onFinish
    return try #require(op_task_create(body, context, &attr), "op_task_create failed: errno \(errno)",
                        sourceLocation: sourceLocation)
}

/// Creates a queue or fails the test.
func makeQueue(_ label: String, qos: op_qos_t = OP_QOS_DEFAULT, width: Int32 = OP_WIDTH_DEFAULT,
               sourceLocation: SourceLocation = #_sourceLocation) throws -> OpaquePointer {
    try #require(op_queue_create(label, qos, width), "op_queue_create failed: errno \(errno)",
                 sourceLocation: sourceLocation)
}

/// op_task_attr_t.qos for a class.
func qosAttr(_ qos: op_qos_t) -> Int32 { Int32(bitPattern: qos.rawValue) }

let allQoSClasses: [op_qos_t] = [
    OP_QOS_BACKGROUND, OP_QOS_UTILITY, OP_QOS_DEFAULT, OP_QOS_USER_INITIATED,
    OP_QOS_USER_INTERACTIVE,
]

func qosName(_ qos: op_qos_t) -> String {
    ["background", "utility", "default", "userInitiated", "userInteractive"][Int(qos.rawValue)]
}

/// A raw pointer that may cross threads (the tests own its lifetime explicitly).
struct SendablePointer: @unchecked Sendable {
    let raw: OpaquePointer
    init(_ raw: OpaquePointer) { self.raw = raw }
}

/// The errno name of a return code, for messages.
func errnoName(_ rc: Int32) -> String {
    switch rc {
    case 0: return "0"
    case EINVAL: return "EINVAL"
    case EBUSY: return "EBUSY"
    case EALREADY: return "EALREADY"
    case ENOENT: return "ENOENT"
    case ETIMEDOUT: return "ETIMEDOUT"
    case EDEADLK: return "EDEADLK"
    case ENOMEM: return "ENOMEM"
    default: return "errno \(rc)"
    }
}

// ---- seeded randomness ----------------------------------------------------------------------



/// The NUL-terminated text in a C character buffer.
func string(fromCBuffer buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
