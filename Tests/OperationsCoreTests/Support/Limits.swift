// Limits.swift — deadlines and clocks shared by every test. Every wait in this suite is bounded
// by one of these; a wait that runs out fails the test with a message instead of hanging.
@_exported import OperationsTestSupport
import Glibc

enum Limits {
    /// Deadline of a wait for work that should finish well within a second (generous, so a
    /// loaded machine or ThreadSanitizer never turns a slow run into a false failure).
    static let waitSeconds: Double = 30
    static let waitNs: Int64 = 30 * 1_000_000_000
    /// How long "nothing happens" is watched for in negative checks (a suspended queue, a
    /// width-0 queue, a manual-completion task that was not completed yet).
    static let quietNs: Int64 = 100_000_000
}

/// CLOCK_MONOTONIC in nanoseconds.
func monotonicNs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// CPU time consumed by the whole process (all threads), in nanoseconds.
func processCPUTimeNs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Sleeps for a duration. Only for "nothing may happen during this time" checks and the idle
/// measurement, never as synchronisation.
func sleepNs(_ ns: Int64) {
    var request = timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}

/// Seconds elapsed since `startNs`, for messages.
func secondsSince(_ startNs: Int64) -> Double { Double(monotonicNs() - startNs) / 1e9 }

/// True when the process runs under ThreadSanitizer (its runtime exports __tsan_init). Used only
/// to scale the largest loops down, never to skip a check.

/// A size for debug builds, and a smaller one under ThreadSanitizer (10-20x slower on atomics).
func scaled(_ normal: Int, tsan: Int) -> Int { runningUnderThreadSanitizer ? tsan : normal }
