// DispatchImplementation.swift — the workloads on plain libdispatch (C side in DispatchBaselines).
import DispatchBaselines

/// libdispatch: global queue + group, serial queue + group, and chains of groups.
enum DispatchImplementation {
    static func independent(_ n: Int, counter: UnsafeMutablePointer<Int64>) -> UInt64 {
        dispatch_baseline_independent(n, counter)
    }

    static func serial(_ n: Int, counter: UnsafeMutablePointer<Int64>) -> UInt64 {
        dispatch_baseline_serial(n, counter)
    }

    static func chain(_ n: Int, counter: UnsafeMutablePointer<Int64>) -> UInt64 {
        dispatch_baseline_chain(n, counter)
    }
}
