// CPUHogs.swift — `--hog N`: the noisy neighbour. N busy processes beside the run, so that a
// table shows what other work on the machine does to each contender's figures (issue 36).
import DispatchBaselines
import Foundation
import Glibc

/// N child processes (this executable with `--hog-child`), each burning one thread's CPU at nice
/// 0, unpinned: a neighbour the kernel moves wherever it likes, as another container's job would
/// be. They start before the first workload and are killed after the last; each child also
/// dies with its parent (PR_SET_PDEATHSIG), so a run stopped by a time limit leaves none behind.
/// Every contender runs beside the same hogs, so the ratios within a round stay fair.
enum CPUHogs {
    /// The hogs running now (set on the main thread before the run, cleared after it).
    nonisolated(unsafe) private static var children: [Process] = []
    /// How many hogs the run was asked for.
    nonisolated(unsafe) private(set) static var count = 0

    /// Starts `count` hogs and waits until each has run (its /proc state is R), so the first
    /// workload already shares the machine.
    static func start(_ count: Int) throws {
        guard count > 0 else { return }
        self.count = count
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        for _ in 0..<count {
            let child = Process()
            child.executableURL = URL(fileURLWithPath: executable)
            child.arguments = ["--hog-child", "--parent-pid", "\(getpid())"]
            do { try child.run() } catch {
                stop()
                throw PerfError.setup("--hog: a hog process could not start: \(error)")
            }
            children.append(child)
        }
        let deadline = Date().addingTimeInterval(5)
        for child in children {
            while !isRunning(child.processIdentifier) {
                guard child.isRunning, Date() < deadline else {
                    stop()
                    throw PerfError.setup("--hog: hog process \(child.processIdentifier) did not start spinning within 5 s")
                }
                usleep(1000)
            }
        }
    }

    /// Kills the hogs and reaps them.
    static func stop() {
        for child in children where child.isRunning {
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
        }
        children = []
    }

    /// Whether /proc says the process is running or runnable (state R).
    private static func isRunning(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return stat[close...].dropFirst(2).first == "R"
    }

    /// The body of a `--hog-child` process: spins until killed.
    static func runChild() -> Never {
        perf_spin_forever()
    }
}
