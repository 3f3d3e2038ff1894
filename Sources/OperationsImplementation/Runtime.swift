// Runtime.swift — introspection of the C core from Swift: topology, the nice table, and the
// nice values and privileges actually in effect. Thin wrappers; the logic lives in the core.
import OperationsCore

/// What the runtime found about the machine and the privileges it runs with.
public enum OperationsRuntime {
    /// The CPUs and NUMA nodes the workers use.
    public struct Topology: Sendable, Equatable {
        /// Usable CPUs (the process's affinity mask); each QoS class has one worker per CPU.
        public var cpuCount: Int
        /// NUMA nodes those CPUs belong to (1 without NUMA).
        public var nodeCount: Int
        /// Whether libnuma is used for topology and pinning.
        public var usesNUMA: Bool
        /// Why NUMA is not used (nil when it is).
        public var fallbackReason: String?
        /// The CPU limit of the process's cgroup (a container's CPU quota), in CPUs of time:
        /// quota / period from cgroup v2 `cpu.max` or v1 `cpu.cfs_quota_us` and
        /// `cpu.cfs_period_us`, the tightest level up the hierarchy; e.g. 1.5. `nil` when there
        /// is no limit, or when its file could not be parsed (see ``cpuQuotaError``).
        /// `OPERATIONS_CGROUP_ROOT` points the core at another directory of those files.
        public var cpuQuota: Double?
        /// The width a queue gets when none is set (`maxConcurrentOperationCount` left at
        /// `OperationQueue.defaultMaxConcurrentOperationCount`): `min(cpuCount, ceil(cpuQuota))`,
        /// at least 1, or `cpuCount` without a quota. The workers stay one per CPU of the
        /// affinity mask: the quota is CPU time, and any of those CPUs may run it.
        public var defaultWidth: Int
        /// Why a cgroup CPU limit file was ignored (unreadable or malformed), or `nil`. The
        /// default width then follows ``cpuCount``; the message is also printed once on stderr.
        public var cpuQuotaError: String?
    }

    /// The topology and the cgroup CPU limit, read at start-up.
    public static var topology: Topology {
        var raw = op_topology_t()
        op_runtime_topology(&raw)
        return Topology(
            cpuCount: Int(raw.cpu_count), nodeCount: Int(raw.node_count), usesNUMA: raw.numa,
            fallbackReason: raw.fallback_reason.map { String(cString: $0) },
            cpuQuota: raw.cpu_quota > 0 ? raw.cpu_quota : nil, defaultWidth: Int(raw.default_width),
            cpuQuotaError: raw.cpu_quota_error.map { String(cString: $0) })
    }

    /// The nice value of each QoS class, indexed background … userInteractive.
    public static var niceTable: [Int32] {
        var table = [Int32](repeating: 0, count: Int(OP_QOS_COUNT))
        table.withUnsafeMutableBufferPointer { op_runtime_nice_table($0.baseAddress) }
        return table
    }

    /// Where ``niceTable`` came from.
    public enum NiceTableKind: Sendable, Equatable {
        /// libdispatch's table: background 10, utility 2, default 0, userInitiated -2,
        /// userInteractive -4.
        case `default`
        /// The default moved up so that its lowest entry is ``niceFloor`` (from a nice-0
        /// process: 14, 6, 4, 2, 0). Chosen at start-up when the process may not lower nice
        /// values that far (no CAP_SYS_NICE, RLIMIT_NICE too low: the usual container or
        /// unprivileged user) and `OPERATIONS_QOS_NICE` is not set. The classes keep their
        /// differences, and so their CPU shares against each other; the trade-off is that the
        /// process's threads then run below other processes' nice-0 threads.
        case shifted
        /// Read from `OPERATIONS_QOS_NICE` at start-up.
        case environment
        /// Set at run time with the core's `op_runtime_set_nice_table`.
        case set
    }

    /// Where ``niceTable`` came from: the default, shifted for lack of privilege, the
    /// environment, or set at run time.
    public static var niceTableKind: NiceTableKind {
        switch op_runtime_nice_table_kind() {
        case OP_NICE_TABLE_SHIFTED: .shifted
        case OP_NICE_TABLE_ENVIRONMENT: .environment
        case OP_NICE_TABLE_SET: .set
        default: .default
        }
    }

    /// The lowest nice value the runtime's workers can run at: -20 with CAP_SYS_NICE, else the
    /// lower of what RLIMIT_NICE allows and the nice value the process started at.
    public static var niceFloor: Int32 { op_runtime_nice_floor() }

    /// Whether this process may use negative nice values (CAP_SYS_NICE or RLIMIT_NICE).
    public static var negativeNiceAllowed: Bool { op_runtime_negative_nice_allowed() }

    /// Whether a wanted nice value had to be clamped for lack of privilege.
    public static var niceWasClamped: Bool { op_runtime_nice_clamped() }

    /// Whether the runtime says on stderr, in one line, once per process, when something asked
    /// for is changed for lack of privilege: a nice value (a QoS class or `threadPriority`)
    /// clamped, the ``NiceTableKind/shifted`` table once a class it could not give is used, or
    /// the short time slice refused once a latency class is used. A process that never asks for
    /// anything it cannot have is told nothing. On by default; `OPERATIONS_NICE_WARNINGS=off`
    /// turns it off at start-up. Set it to `false` before the first operation runs to keep
    /// stderr quiet; a report that comes due while it is off is dropped. Clamps are still
    /// recorded (``niceWasClamped``), and the table still reported (``niceTableKind``).
    public static var clampWarnings: Bool {
        get { op_runtime_clamp_warning() }
        set { op_runtime_set_clamp_warning(newValue) }
    }

    /// The time slice the workers of `.default`, `.userInitiated` and `.userInteractive` asked
    /// the kernel for and got: 100 µs, so that their wake-ups preempt what runs on their CPU
    /// (lower-class work, or the thread that submitted and woke them) instead of waiting for
    /// its slice to end (Linux 6.12 and later; their nice values, their share of the CPU, are
    /// unchanged). `nil` when they keep the kernel's default slice (`OPERATIONS_SHORT_SLICE=off`,
    /// or a kernel that refused or ignored the request, which is reported once on stderr when a
    /// `.userInitiated` or `.userInteractive` worker asked) or when no worker of those classes
    /// has started yet. `.utility` and `.background` workers keep the default. A thread that an
    /// operation's body creates inherits its worker's slice, as it inherits its nice value.
    public static var shortTimeSlice: Duration? {
        let nanoseconds = op_runtime_short_time_slice()
        return nanoseconds > 0 ? .nanoseconds(nanoseconds) : nil
    }

    /// Whether QoS promotion is on: work that higher-QoS work waits for (`waitUntilFinished()`,
    /// the queue's waits, dependencies) runs at the waiter's class until it finished.
    /// `OPERATIONS_QOS_PROMOTION=off` turns it off at start-up. Setting it turns new promotions
    /// off or on from then on, to compare both in one process (the perf harness's W12 does);
    /// promotions already made are undone as usual.
    public static var qosPromotion: Bool {
        get { op_runtime_qos_promotion() }
        set { op_runtime_set_qos_promotion(newValue) }
    }
}
