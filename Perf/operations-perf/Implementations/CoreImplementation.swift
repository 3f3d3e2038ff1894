// CoreImplementation.swift — the workloads through our C API directly (OperationsCore).
import DispatchBaselines
import OperationsCore

/// Runs workloads on the C core. Every item runs `baseline_count_one`, the same C body the
/// dispatch side runs, so the two differ only in the runtime.
enum CoreImplementation {
    /// `n` tasks with `op_queue_submit_f` onto a default-width queue, then a queue wait.
    static func independent(_ n: Int, counter: UnsafeMutablePointer<Int64>, timeout: Int64) throws -> UInt64 {
        try run(width: OP_WIDTH_DEFAULT, n, counter: counter, timeout: timeout, name: "independent")
    }

    /// The same on a width-1 (serial) queue.
    static func serial(_ n: Int, counter: UnsafeMutablePointer<Int64>, timeout: Int64) throws -> UInt64 {
        try run(width: 1, n, counter: counter, timeout: timeout, name: "serial")
    }

    private static func run(
        width: Int32, _ n: Int, counter: UnsafeMutablePointer<Int64>, timeout: Int64, name: String
    ) throws -> UInt64 {
        guard let queue = op_queue_create("perf.\(name)", OP_QOS_DEFAULT, width) else {
            throw PerfError.setup("op_queue_create failed")
        }
        defer { op_queue_release(queue) }
        let start = Clock.nanoseconds()
        for _ in 0..<n { op_queue_submit_f(queue, baseline_count_one, counter) }
        let rc = op_queue_wait(queue, timeout)
        let elapsed = Clock.nanoseconds() - start
        guard rc == 0 else { throw PerfError.hang("core \(name): op_queue_wait returned \(rc)") }
        return elapsed
    }

    /// A chain: task i depends on task i−1; all created, linked and submitted, then the last
    /// is waited for.
    static func chain(_ n: Int, counter: UnsafeMutablePointer<Int64>, timeout: Int64) throws -> UInt64 {
        guard let queue = op_queue_create("perf.chain", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT) else {
            throw PerfError.setup("op_queue_create failed")
        }
        defer { op_queue_release(queue) }
        var tasks = [OpaquePointer?](repeating: nil, count: n)
        let start = Clock.nanoseconds()
        for i in 0..<n {
            let task = op_task_create(baseline_count_one, counter, nil)
            if i > 0 { op_task_add_dependency(task, tasks[i - 1]) }
            tasks[i] = task
        }
        for task in tasks { op_queue_submit(queue, task) }
        let rc = op_task_wait(tasks[n - 1], timeout)
        let elapsed = Clock.nanoseconds() - start
        guard rc == 0 else { throw PerfError.hang("core chain: op_task_wait returned \(rc)") }
        for task in tasks { op_task_release(task) }
        _ = op_queue_wait(queue, timeout)
        return elapsed
    }
}
