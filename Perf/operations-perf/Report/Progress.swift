// Progress.swift — the progress line on stderr (overwritten in place, with the elapsed time).
import Glibc

/// One line on stderr saying what runs now.
enum Progress {
    /// When the run started (set by `start`).
    nonisolated(unsafe) private static var startNs: UInt64 = Clock.nanoseconds()

    static func start() { startNs = Clock.nanoseconds() }

    /// Replaces the line with `text`, prefixed with the seconds since `start`.
    static func show(_ text: String) {
        let seconds = Double(Clock.nanoseconds() - startNs) / 1e9
        writeStandardError("\r\u{1B}[K[\(Int(seconds)) s] \(text)")
    }

    /// Clears the line.
    static func done() { writeStandardError("\r\u{1B}[K") }

    /// Seconds since `start`.
    static var elapsedSeconds: Double { Double(Clock.nanoseconds() - startNs) / 1e9 }
}

/// Writes to file descriptor 2 (Glibc's `stderr` global is not concurrency-safe in Swift 6).
func writeStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
}
