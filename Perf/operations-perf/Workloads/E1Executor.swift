// E1Executor.swift — Swift concurrency on our queues against Swift's default executor, in one run:
// the cost of a job on an OperationQueue used as a task executor or an actor's serial executor,
// next to the same code without the queue (the global concurrent executor, a default actor).
import Dispatch
import Foundation
import Glibc
import Operations

/// Executor jobs: ns per job on our queue, on Swift's default executor, and on a hand-written
/// executor over a dispatch queue (what Linux code writes today: Dispatch has no
/// DispatchSerialQueue executor there).
enum E1Executor {
    static let id = "E1"
    static let help = """
        executor jobs, ns per job, --executor-jobs jobs per run, three contenders: operations (a
        default-QoS OperationQueue, width 1 for the actor), default (Swift's default executor: no
        preference, a default actor) and dispatch (a TaskExecutor/SerialExecutor over a dispatch
        queue, each job one async). Scenarios: yield (a task on the executor yields N times: one
        job each, the executor's own cost), spawn (N child tasks on the executor added to a task
        group, awaited), round trip (a task on the executor awaits N new tasks on it, one after
        another), round trip from default (the same driven from the default executor: two
        executors, a hand-over each way; no goal), actor (an actor receives N calls from one
        caller task per CPU; the default actor is switched to inline, without a job), and round
        trip from default with our workers as Swift's global executor
        (OperationsRuntime.installAsGlobalExecutor(), in a child process: it cannot be undone;
        set beside the default and dispatch figures of round trip from default). Ratios: the
        other's time / ours (above 1: ours is cheaper).
        """

    enum Scenario: String, CaseIterable, Codable {
        case yield, spawn, roundTrip = "round trip", roundTripFromDefault = "round trip from default", actor
        /// Whether the goal (ours <= default's) applies.
        var hasGoal: Bool { self != .roundTripFromDefault }
    }

    enum Contender: String, CaseIterable, Codable {
        case operations, `default`, dispatch
    }

    /// A task and serial executor over a dispatch queue: each job is one `async`.
    final class DispatchExecutor: TaskExecutor, SerialExecutor, @unchecked Sendable {
        let queue: DispatchQueue
        init(serial: Bool) {
            queue = serial ? DispatchQueue(label: "E1 dispatch actor") : DispatchQueue.global()
        }
        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            queue.async { [self] in
                job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
            }
        }
    }

    /// A default actor (the runtime switches to it inline).
    actor DefaultCounter {
        var count = 0
        func bump() { count += 1 }
    }

    /// An actor on a custom serial executor.
    actor CustomCounter {
        let executor: any SerialExecutor
        var count = 0
        init(executor: any SerialExecutor) { self.executor = executor }
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        func bump() { count += 1 }
    }

    /// Runs `body` as a detached task and blocks the calling (non-pool) thread until it returns.
    static func blockOn<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        let result = ResultBox<T>()
        Task.detached {
            result.value = await body()
            done.signal()
        }
        done.wait()
        return result.value!
    }

    final class ResultBox<T>: @unchecked Sendable { var value: T? } // written before the signal

    /// The executors of one run.
    struct Executors: @unchecked Sendable {
        let queue: OperationQueue
        let serialQueue: OperationQueue
        let dispatch: DispatchExecutor
        let dispatchSerial: DispatchExecutor
    }

    /// One timed run: ns per job, and how many jobs ran (for verification).
    static func sample(_ scenario: Scenario, _ contender: Contender, jobs: Int, executors: Executors,
                       callers: Int) -> (ns: Double, ran: Int) {
        blockOn {
            let preference: (any TaskExecutor)? = switch contender {
            case .operations: executors.queue
            case .default: nil
            case .dispatch: executors.dispatch
            }
            let start = Clock.nanoseconds()
            var ran = 0
            switch scenario {
            case .yield:
                ran = await withTaskExecutorPreference(preference) {
                    for _ in 0..<jobs { await Task.yield() }
                    return jobs
                }
            case .spawn:
                ran = await withTaskExecutorPreference(preference) {
                    await withTaskGroup(of: Int.self) { group in
                        for _ in 0..<jobs { group.addTask { 1 } }
                        return await group.reduce(0, +)
                    }
                }
            case .roundTrip:
                ran = await withTaskExecutorPreference(preference) {
                    var ran = 0
                    for _ in 0..<jobs { ran += await Task(executorPreference: preference) { 1 }.value }
                    return ran
                }
            case .roundTripFromDefault:
                for _ in 0..<jobs { ran += await Task(executorPreference: preference) { 1 }.value }
            case .actor:
                let perCaller = jobs / callers
                let bump: @Sendable () async -> Void
                let count: @Sendable () async -> Int
                switch contender {
                case .default:
                    let actor = DefaultCounter()
                    bump = { await actor.bump() }
                    count = { await actor.count }
                case .operations, .dispatch:
                    let actor = CustomCounter(executor: contender == .operations ? executors.serialQueue : executors.dispatchSerial)
                    bump = { await actor.bump() }
                    count = { await actor.count }
                }
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<callers { group.addTask { for _ in 0..<perCaller { await bump() } } }
                }
                ran = await count()
            }
            return (Double(Clock.nanoseconds() - start) / Double(max(ran, 1)), ran)
        }
    }

    /// Every scenario, the contenders interleaved (rotating who goes first), `rounds` times.
    static func run(jobs: Int, rounds: Int, cpus: Int) throws -> [ExecutorResult] {
        let queue = OperationQueue()
        queue.name = "E1 executor"
        let serial = OperationQueue()
        serial.name = "E1 actor"
        serial.maxConcurrentOperationCount = 1
        let executors = Executors(queue: queue, serialQueue: serial, dispatch: DispatchExecutor(serial: false),
                                  dispatchSerial: DispatchExecutor(serial: true))
        let callers = max(1, cpus)
        var results = try Scenario.allCases.map { scenario in
            Progress.show("\(id): \(scenario.rawValue)")
            let expected = scenario == .actor ? (jobs / callers) * callers : jobs
            var result = ExecutorResult(scenario: scenario.rawValue, jobs: expected, hasGoal: scenario.hasGoal)
            try Watchdog.guarding("\(id) \(scenario.rawValue)") {
                for round in 0..<rounds {
                    let all = Contender.allCases
                    let order = (0..<all.count).map { all[($0 + round) % all.count] }
                    var times: [String: Double] = [:]
                    for contender in order {
                        let (ns, ran) = sample(scenario, contender, jobs: jobs, executors: executors, callers: callers)
                        guard ran == expected else {
                            throw PerfError.wrongCount(workload: "\(id) \(scenario.rawValue)", implementation: contender.rawValue,
                                                       expected: expected, got: Int64(ran))
                        }
                        times[contender.rawValue] = ns
                    }
                    result.rounds.append(times)
                }
            }
            return result
        }
        if let fromDefault = results.first(where: { $0.scenario == Scenario.roundTripFromDefault.rawValue }) {
            results.append(try globalExecutorResult(jobs: jobs, rounds: rounds, beside: fromDefault))
        }
        return results
    }

    /// The scenario of the row "round trip from default, ours as global executor": "round trip
    /// from default" with `OperationsRuntime.installAsGlobalExecutor()`, so that the awaiting
    /// task runs on our workers too. Installing cannot be undone, so it runs in a child process
    /// (this executable with `--global-executor-child`), after the other scenarios; its rounds
    /// are set beside the same rounds of "round trip from default" in this process (default
    /// and dispatch as measured there), so its ratios pair rounds of one run, not of one moment.
    static let globalExecutorScenario = "round trip from default, ours as global executor"

    /// Runs the child and makes its row. A child that outlives the watchdog's limit is killed.
    static func globalExecutorResult(jobs: Int, rounds: Int, beside fromDefault: ExecutorResult) throws -> ExecutorResult {
        Progress.show("\(id): \(globalExecutorScenario)")
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        // Into a file, not a pipe, so that a child writing much (a crash) never blocks.
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("operations-perf-e1-\(getpid()).txt")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: executable)
        child.arguments = ["--global-executor-child", "\(jobs)", "--rounds", "\(rounds)", "--parent-pid", "\(getpid())"]
        child.standardOutput = handle
        child.standardError = handle
        try child.run()
        let deadline = Clock.nanoseconds() + UInt64(Watchdog.limitSeconds) * 1_000_000_000
        while child.isRunning && Clock.nanoseconds() < deadline { usleep(10_000) }
        let hung = child.isRunning
        if hung {
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
        }
        try handle.close()
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        if hung { throw PerfError.setup("E1's global-executor child ran past \(Watchdog.limitSeconds) s and was killed: \(text)") }
        let times = text.split(separator: "\n").compactMap { line -> Double? in
            let fields = line.split(separator: " ")
            return fields.count == 2 && fields[0] == "E1-global-executor-ns" ? Double(fields[1]) : nil
        }
        guard child.terminationReason == .exit, child.terminationStatus == 0, times.count == rounds else {
            throw PerfError.setup("E1's global-executor child failed (status \(child.terminationStatus)): \(text)")
        }
        var result = ExecutorResult(scenario: globalExecutorScenario, jobs: jobs, hasGoal: false)
        for (index, ns) in times.enumerated() {
            var round = index < fromDefault.rounds.count ? fromDefault.rounds[index] : [:]
            round[Contender.operations.rawValue] = ns
            result.rounds.append(round)
        }
        return result
    }

    /// `--global-executor-child N`: installs our workers as Swift's global executor and prints
    /// the operations contender's "round trip from default" (N jobs) once per round, as
    /// "E1-global-executor-ns <ns per job>"; exits 0, or 3 when the hook is not there.
    static func runGlobalExecutorChild(jobs: Int, rounds: Int) -> Never {
        guard OperationsRuntime.installAsGlobalExecutor() else {
            print("E1-global-executor: the Swift runtime offers no global executor hook")
            exit(3)
        }
        let queue = OperationQueue()
        queue.name = "E1 executor"
        let serial = OperationQueue()
        serial.maxConcurrentOperationCount = 1
        let executors = Executors(queue: queue, serialQueue: serial, dispatch: DispatchExecutor(serial: false),
                                  dispatchSerial: DispatchExecutor(serial: true))
        for _ in 0..<max(1, rounds) {
            let (ns, ran) = sample(.roundTripFromDefault, .operations, jobs: jobs, executors: executors, callers: 1)
            guard ran == jobs else {
                print("E1-global-executor: \(ran) of \(jobs) jobs ran")
                exit(4)
            }
            print("E1-global-executor-ns \(ns)")
        }
        fflush(nil) // nil: every output stream
        exit(0)
    }
}

/// One E1 scenario: ns per job of each contender in every round.
struct ExecutorResult: Codable {
    var scenario: String
    var jobs: Int
    var hasGoal: Bool
    var rounds: [[String: Double]] = []

    func median(_ contender: String) -> Double { rounds.compactMap { $0[contender] }.median }
    /// The median over rounds of `other`'s time / ours in the same round.
    func ratio(_ other: String) -> Double {
        rounds.compactMap { round in round[other].flatMap { o in round["operations"].map { o / $0 } } }.median
    }
}
