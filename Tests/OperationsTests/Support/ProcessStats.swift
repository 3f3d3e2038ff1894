// ProcessStats.swift — what the kernel says about this process (resident memory from
// /proc/self/statm, threads from /proc/self/task), and environment variables that size long
// tests.
import Glibc

enum ProcessStats {
    /// Resident set size in bytes: the second field of /proc/self/statm, in pages.
    static func residentBytes() -> Int? {
        guard let file = fopen("/proc/self/statm", "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        guard fgets(&line, Int32(line.count), file) != nil else { return nil }
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let fields = text.split(separator: " ")
        guard fields.count >= 2, let residentPages = Int(fields[1]) else { return nil }
        return residentPages * sysconf(Int32(_SC_PAGESIZE))
    }

    /// Threads of this process now: the entries of /proc/self/task.
    static func threadCount() -> Int {
        guard let directory = opendir("/proc/self/task") else { return 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let isDotEntry = withUnsafeBytes(of: entry.pointee.d_name) { $0.first == UInt8(ascii: ".") }
            if !isDotEntry { count += 1 }
        }
        return count
    }
}

/// An environment variable, or nil when it is unset or empty.
func environmentValue(_ name: String) -> String? {
    guard let raw = getenv(name) else { return nil }
    let value = String(cString: raw)
    return value.isEmpty ? nil : value
}
