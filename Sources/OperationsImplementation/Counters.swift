// Counters.swift — the runtime's counters from Swift (issue 35): always kept, nearly free (each
// worker counts on its own cache line; a queue's drainers count in their own registers and add
// when they leave), summed when read. Thin wrappers over op_runtime_counters,
// op_runtime_worker_counters, op_queue_counters and the JSON reports.
import OperationsCore

extension OperationsRuntime {
    /// The runtime's counters, summed over every worker and spare thread of every pool (those
    /// that exited included: the counts never go down).
    public struct Counters: Sendable, Equatable {
        /// Tasks the workers ran or retired (a cancelled one retires without its body).
        public var tasks: UInt64
        /// Tasks a worker took from another worker's local run queue.
        public var steals: UInt64
        /// Times a worker slept for want of work.
        public var parks: UInt64
        /// Of those, sleeps ended by a wake-up (the rest timed out).
        public var wakeups: UInt64
        /// Bodies carried to another pool's workers to run at their nice value (an operation
        /// of another QoS class than its queue's, or with a `threadPriority`).
        public var carries: UInt64
        /// Times the blocked-worker monitor found a worker asleep in a body where the runtime
        /// cannot see (a lock, I/O, `sleep`) and a spare stood in for it.
        public var rescues: UInt64
        /// Bodies reniced while they ran (QoS promotion: a waiter of a higher class).
        public var promotions: UInt64
        /// Spare threads started to stand in for blocked workers.
        public var sparesStarted: UInt64
        /// Worker threads running now.
        public var workers: Int
        /// Spare threads alive now (those lingering for reuse included).
        public var spares: Int
    }

    /// A snapshot of the runtime's counters.
    public static var counters: Counters {
        var raw = op_runtime_counters_t()
        _ = op_runtime_counters(&raw)
        return Counters(tasks: raw.tasks, steals: raw.steals, parks: raw.parks, wakeups: raw.wakeups,
                        carries: raw.carries, rescues: raw.rescues, promotions: raw.promotions,
                        sparesStarted: raw.spares_started, workers: Int(raw.workers),
                        spares: Int(raw.spares))
    }

    /// What a worker thread is doing when its counters are read.
    public enum WorkerState: Sendable, Equatable {
        /// Between operations: looking for work, or parked.
        case idle
        /// Running an operation's body.
        case running
        /// In a body, in a wait the runtime sees (`waitUntilFinished()`, a queue's wait).
        case waiting
        /// In a body, asleep where the runtime cannot see; a spare stands in for it.
        case blocked
    }

    /// One worker thread's counters.
    public struct WorkerCounters: Sendable, Equatable {
        /// The class of the worker's pool; `nil` for a pool made for a nice value.
        public var qualityOfService: QualityOfService?
        /// That pool's nice value, for a pool made for one; `nil` for a class's pool.
        public var poolNiceValue: Int32?
        /// Whether its pool serves queues placed on a CPU set.
        public var isPlaced: Bool
        /// Whether it is a spare, standing in for a blocked thread (then it is not pinned).
        public var isSpare: Bool
        /// The CPU it is pinned to; `nil` for a spare.
        public var cpu: Int?
        /// Its kernel thread id (as `ps -L` and `top -H` show it).
        public var threadID: Int32
        /// The nice value it runs at between operations.
        public var niceValue: Int32
        /// What it is doing.
        public var state: WorkerState
        /// The serial number of the task it runs, or ran last.
        public var taskSerial: UInt64
        /// The task it runs now (its core task's address, as the trace's `task` argument names
        /// it); `nil` between operations.
        public var taskID: UInt64?
        /// How long the body it runs has run, while ``OperationsRuntime/latencyHistogramsEnabled``
        /// (they time each start); `nil` otherwise or between operations.
        public var runningFor: Duration?
        /// Tasks it ran or retired.
        public var tasks: UInt64
        /// Tasks it took from other workers' local run queues.
        public var steals: UInt64
        /// Times it slept for want of work.
        public var parks: UInt64
        /// Of those, ended by a wake-up.
        public var wakeups: UInt64
        /// Bodies it carried to another pool's workers.
        public var carries: UInt64
        /// Times the monitor counted it blocked.
        public var rescues: UInt64
        /// Bodies reniced while they ran on it.
        public var promotions: UInt64
    }

    /// A snapshot of every worker and spare thread's counters.
    public static var workerCounters: [WorkerCounters] {
        var raw = [op_worker_counters_t]()
        var count = op_runtime_worker_counters(nil, 0)
        while true {
            raw = [op_worker_counters_t](repeating: op_worker_counters_t(), count: count + 8)
            let listed = raw.withUnsafeMutableBufferPointer { op_runtime_worker_counters($0.baseAddress, $0.count) }
            if listed <= raw.count {
                raw.removeLast(raw.count - listed)
                break
            }
            count = listed
        }
        return raw.map { worker in
            WorkerCounters(
                qualityOfService: worker.qos >= 0 ? QualityOfService(coreClass: op_qos_t(UInt32(worker.qos))) : nil,
                poolNiceValue: worker.qos < 0 ? worker.pool_nice : nil, isPlaced: worker.placed,
                isSpare: worker.spare, cpu: worker.cpu >= 0 ? Int(worker.cpu) : nil,
                threadID: worker.tid, niceValue: worker.class_nice,
                state: [.idle, .running, .waiting, .blocked][Int(worker.state.rawValue)],
                taskSerial: worker.serial, taskID: worker.task_id != 0 ? worker.task_id : nil,
                runningFor: worker.running_ns >= 0 ? .nanoseconds(worker.running_ns) : nil, tasks: worker.tasks, steals: worker.steals, parks: worker.parks,
                wakeups: worker.wakeups, carries: worker.carries, rescues: worker.rescues,
                promotions: worker.promotions)
        }
    }

    /// ``diagnosticReport()`` as one JSON object, for tools: the monitor, the runtime's
    /// ``counters``, and per pool its class (or nice value), waiting tokens, blocked and spare
    /// counts, and per worker its thread's name and id, CPU, state, nice value, the serial of the
    /// task it runs or ran last, and its counters. Keys are stable; new ones may be added.
    public static func diagnosticReportJSON() -> String {
        describeInBuffer { op_runtime_describe_json($0, $1) }
    }
}

extension OperationQueue {
    /// A queue's counters since it was made.
    public struct Counters: Sendable, Equatable {
        /// Operations (and jobs) added.
        public var submitted: UInt64
        /// Bodies begun.
        public var started: UInt64
        /// Operations that ended: ran, cancelled, or finished by an asynchronous operation.
        public var finished: UInt64
        /// Of those, operations that ended cancelled.
        public var cancelled: UInt64
    }

    /// A snapshot of the queue's counters. Threads running the queue count in their own
    /// registers and add what they counted when they leave it, so while operations run the
    /// snapshot may lag by a few; once the queue is idle it is exact.
    public var counters: Counters {
        var raw = op_queue_counters_t()
        _ = op_queue_counters(core, &raw)
        return Counters(submitted: raw.submitted, started: raw.started, finished: raw.finished,
                        cancelled: raw.cancelled)
    }

    /// ``diagnosticReport`` as one JSON object: the queue's name, QoS class, width, running
    /// and unfinished operations, suspension, and ``counters``.
    public var diagnosticReportJSON: String {
        describeInBuffer { op_queue_describe_json(core, $0, $1) }
    }
}
