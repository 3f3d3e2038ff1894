// Tracing.swift — the runtime's trace from Swift (issue 35): start and stop a timeline that
// opens in Perfetto, dump the flight recorder; operations name their slices. Thin wrappers over
// the core's op_trace_*; the recorder and the writer live in the core (base/trace.c).
import OperationsCore

/// An error of the runtime's trace: what failed, and the `errno` the core gave.
public struct TraceError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What was asked: "start", "stop" or "write".
    public var operation: String
    /// The `errno` value (`EALREADY`: a trace already records, or none does).
    public var code: Int32
    /// An error of `operation` with `errno` value `code`.
    public init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }
    public var description: String {
        "the runtime's trace could not \(operation): \(String(cString: strerror(code))) (errno \(code))"
    }
}

extension OperationsRuntime {
    /// Starts recording a trace of what the runtime does, written to `path` as Chrome Trace
    /// Event JSON by ``stopTracing()`` (and, when started by the environment variable
    /// `OPERATIONS_TRACE=<file>`, at the process's normal exit). Open the file in
    /// ui.perfetto.dev or chrome://tracing: a track per thread (worker threads are named by
    /// class and CPU, `op-uinit-c3`), a slice per operation's body named by its `name` (else its
    /// type) with its queue, QoS, nice value, queue priority and thread-priority delta; arrows
    /// from an add to the start and from a dependency's finish to its dependent's start;
    /// instant events for cancellations, promotions, carries to another class's workers, the
    /// monitor's rescues of blocked workers and spare threads; a counter of unfinished
    /// operations per queue.
    ///
    /// - Parameter flightRecorderBytes: `nil` keeps the whole trace (up to 2^20 events a thread);
    ///   a size keeps only about the latest that many bytes of events, which
    ///   ``writeTrace(to:)`` writes at any moment (a flight recorder).
    /// - Throws: ``TraceError`` when a trace already records (`EALREADY`) or `path` is empty.
    public static func startTracing(to path: String, flightRecorderBytes: Int? = nil) throws(TraceError) {
        let rc = op_trace_start(path, flightRecorderBytes.map { max(0, $0) } ?? 0)
        if rc != 0 { throw TraceError(operation: "start", code: rc) }
    }

    /// Stops recording and writes the trace to the path given to ``startTracing(to:flightRecorderBytes:)``.
    /// - Throws: ``TraceError`` when no trace records (`EALREADY`) or the file cannot be written.
    public static func stopTracing() throws(TraceError) {
        let rc = op_trace_stop()
        if rc != 0 { throw TraceError(operation: "stop", code: rc) }
    }

    /// Writes what the current (or last) trace holds to `path` (`nil`: the path it was started
    /// with) without stopping it: a flight recorder's dump when something was slow.
    public static func writeTrace(to path: String? = nil) throws(TraceError) {
        let rc = op_trace_write(path)
        if rc != 0 { throw TraceError(operation: "write", code: rc) }
    }

    /// Whether a trace records now.
    public static var isTracing: Bool { op_trace_is_recording() }
}

extension Operation {
    /// While a trace records: names this operation's slices by its `name`, else its type (the
    /// type's name is made once per type: `String(describing:)` of a type costs about a
    /// microsecond).
    func nameForTrace() {
        if let name {
            op_trace_name_task(task, name)
        } else {
            TraceTypeNames.shared.withName(of: type(of: self)) { op_trace_name_task(task, $0) }
        }
    }
}

/// The C strings of operation types' names, made once per type, for the trace.
private final class TraceTypeNames: @unchecked Sendable {
    static let shared = TraceTypeNames()
    private var mutex = pthread_mutex_t()
    private var names: [ObjectIdentifier: [CChar]] = [:]  // under `mutex`

    private init() { pthread_mutex_init(&mutex, nil) }

    /// Calls `body` with the name of `type` (under the lock: op_trace_name_task copies it).
    func withName(of type: Operation.Type, _ body: (UnsafePointer<CChar>) -> Void) {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        let key = ObjectIdentifier(type)
        if names[key] == nil { names[key] = Array(String(describing: type).utf8CString) }
        names[key]!.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
