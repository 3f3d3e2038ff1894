// Watchdog.swift — turns a hang into a loud failure naming the workload: one timer thread
// checks every 100 ms whether the guarded body passed its deadline and then ends the process
// with exit status 3 and a message naming what hung.
import Glibc
import Synchronization

/// Guards one run of one workload on one competitor.
enum Watchdog {
    /// Seconds a guarded body may take (`--watchdog`); set once before the runs start.
    nonisolated(unsafe) static var limitSeconds = 120

    /// What is guarded now: its label and deadline (CLOCK_MONOTONIC ns), or nil.
    private static let current = Mutex<(label: String, deadline: UInt64)?>(nil)
    /// Starts the timer thread on first use.
    private static let started: Bool = {
        var thread = pthread_t()
        pthread_create(&thread, nil, { _ in
            while true {
                usleep(100_000)
                let now = Clock.nanoseconds()
                if let expired = Watchdog.current.withLock({ $0.flatMap { now > $0.deadline ? $0.label : nil } }) {
                    writeStandardError("\noperations-perf: watchdog: \(expired) did not finish within \(Watchdog.limitSeconds) s\n")
                    exit(3)
                }
            }
        }, nil)
        pthread_detach(thread)
        return true
    }()

    /// Runs `body`, ending the process if it takes longer than `limitSeconds`.
    static func guarding<T>(_ label: String, _ body: () throws -> T) throws -> T {
        _ = started
        let deadline = Clock.nanoseconds() + UInt64(limitSeconds) * 1_000_000_000
        let outer = current.withLock { slot in
            defer { slot = (label, deadline) }
            return slot
        }
        defer { current.withLock { $0 = outer } }
        return try body()
    }
}
