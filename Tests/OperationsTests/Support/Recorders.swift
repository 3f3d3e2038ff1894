// Recorders.swift — deadlines and the default quiet period (the logs, counters and gauges are
// in OperationsTestSupport).
import Glibc
import Testing

enum Limits {
    /// Deadline of a wait for work that should finish well within a second (generous, so a loaded
    /// 2-core machine or ThreadSanitizer never turns a slow run into a false failure).
    static let waitSeconds: Double = 20
    /// How long "nothing happens" is watched for in negative checks (a suspended queue, a width-0
    /// queue, an operation whose dependency has not finished). Never used as synchronisation.
    static let quietSeconds: Double = 0.1
}

/// A quiet period of the default length (`Limits.quietSeconds`).
func quietPeriod() { quietPeriod(Limits.quietSeconds) }
