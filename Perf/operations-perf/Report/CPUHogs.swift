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
    /// The CPUs they were pinned to (`--hog-cpus`), round robin; empty: unpinned.
    nonisolated(unsafe) private(set) static var cpus: [Int] = []

    /// Starts `count` hogs and waits until each spins (it renamed itself `perf-hog`, which
    /// `perf_spin_forever` does first), so the first workload already shares the machine.
    /// Call it on the main thread: a child's PR_SET_PDEATHSIG fires when the thread that
    /// started it exits, so hogs started from another thread would die with that thread, and
    /// hogs started from a thread that outlives the run would not.
    static func start(_ count: Int, pinnedTo cpus: [Int] = []) throws {
        guard count > 0 else { return }
        self.count = count
        self.cpus = cpus
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
            if !cpus.isEmpty {
                let cpu = cpus[(children.count - 1) % cpus.count]
                let rc = perf_pin_process(child.processIdentifier, Int32(cpu))
                if rc != 0 {
                    stop()
                    throw PerfError.setup("--hog-cpus: hog process \(child.processIdentifier) could not be pinned to CPU \(cpu) (error \(rc))")
                }
            }
        }
        let deadline = Date().addingTimeInterval(5)
        for child in children {
            while !isSpinning(child.processIdentifier) {
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

    /// Whether the process renamed itself `perf-hog` (it spins from then on).
    private static func isSpinning(_ pid: Int32) -> Bool {
        (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.hasPrefix("perf-hog") == true
    }

    /// The `--cpus` parent starts none itself (each child runs its own, on its CPUs); its report
    /// says how many each child ran beside.
    static func noteChildrenRunBeside(_ count: Int, pinnedTo cpus: [Int]) {
        self.count = count
        self.cpus = cpus
    }

    /// The body of a `--hog-child` process: spins until killed.
    static func runChild() -> Never {
        perf_spin_forever()
    }
}
