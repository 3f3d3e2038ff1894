// main.swift — the probe behind GlobalExecutorTests: `OperationsRuntime.installAsGlobalExecutor()`
// cannot be undone, so it is tried in a process of its own (this executable), never in the test
// process. It installs, then checks that tasks no executor claims run on the runtime's workers of
// their priority's class, that `OperationQueue.current` stays nil there, and that tasks still
// hand over to and from a queue used as a task executor, to an actor on a serial queue, and
// through task groups and `async let`. Every wait has a deadline. Prints "ok" and exits 0, or
// prints "FAIL: …" and exits 1.
import Dispatch
import Glibc
import Operations

func fail(_ message: String) -> Never {
    print("FAIL: \(message)")
    fflush(nil) // nil: every output stream
    exit(1)
}

/// The calling thread's name (the runtime names its workers op-<class>-c<cpu>).
func threadName() -> String {
    let fd = open("/proc/thread-self/comm", O_RDONLY)
    if fd < 0 { fail("/proc/thread-self/comm could not be opened (errno \(errno))") }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 32)
    let count = read(fd, &buffer, buffer.count)
    if count <= 0 { fail("/proc/thread-self/comm could not be read (errno \(errno))") }
    return String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .newlines)
}

final class Box<T>: @unchecked Sendable { var value: T?; init() {} } // written before the signal

/// Runs `body` as a detached task of `priority` and waits for it on this (main) thread, at most
/// 20 s.
func run<T: Sendable>(_ what: String, priority: TaskPriority? = nil, _ body: @escaping @Sendable () async -> T) -> T {
    let done = DispatchSemaphore(value: 0)
    let result = Box<T>()
    Task.detached(priority: priority) {
        result.value = await body()
        done.signal()
    }
    if done.wait(timeout: .now() + 20) == .timedOut { fail("\(what) did not finish within 20 s") }
    return result.value!
}

actor Counter {
    let queue: OperationQueue
    var count = 0
    init(queue: OperationQueue) { self.queue = queue }
    nonisolated var unownedExecutor: UnownedSerialExecutor { queue.asUnownedSerialExecutor() }
    func bump() -> String { count += 1; return threadName() }
}

if OperationsRuntime.isGlobalExecutor { fail("isGlobalExecutor before the installation") }
guard OperationsRuntime.installAsGlobalExecutor() else { fail("installAsGlobalExecutor() returned false") }
if !OperationsRuntime.isGlobalExecutor { fail("isGlobalExecutor false after the installation") }
if !OperationsRuntime.installAsGlobalExecutor() { fail("a second installAsGlobalExecutor() returned false") }

// Each priority's tasks run on the workers of its class.
let classes: [(TaskPriority, String)] = [(.background, "op-bkgd-"), (.utility, "op-util-"), (.medium, "op-dflt-"),
                                         (.high, "op-uinit-")]
for (priority, prefix) in classes {
    let (name, current) = run("a task of priority \(priority)", priority: priority) { () -> (String, Bool) in
        (threadName(), OperationQueue.current == nil)
    }
    if !name.hasPrefix(prefix) { fail("a task of priority \(priority) ran on thread '\(name)', not a worker '\(prefix)…'") }
    if !current { fail("OperationQueue.current is not nil in a task of the global executor") }
}

// Hand-overs: to a queue used as a task executor and back, many times; to an actor on a serial
// queue; a task group and async let.
let queue = OperationQueue()
queue.name = "probe queue"
let serial = OperationQueue()
serial.name = "probe actor queue"
serial.maxConcurrentOperationCount = 1
let total = run("round trips through a task executor, a group, async let and an actor") { () -> Int in
    var sum = 0
    for _ in 0..<2_000 {
        sum += await Task(executorPreference: queue) { OperationQueue.current === queue ? 1 : 0 }.value
        if !threadName().hasPrefix("op-") { return -1 }
    }
    sum += await withTaskGroup(of: Int.self) { group in
        for _ in 0..<1_000 { group.addTask { threadName().hasPrefix("op-") ? 1 : 0 } }
        return await group.reduce(0, +)
    }
    async let a = Task.detached { threadName().hasPrefix("op-") ? 1 : 0 }.value
    async let b = Task.detached { threadName().hasPrefix("op-") ? 1 : 0 }.value
    sum += await a + b
    let counter = Counter(queue: serial)
    for _ in 0..<500 where await counter.bump().hasPrefix("op-") { sum += 1 }
    try? await Task.sleep(for: .milliseconds(5)) // resumed by Dispatch's timer, then ours again
    await Task.yield()
    if threadName().hasPrefix("op-") { sum += 1 }
    return sum
}
if total != 2_000 + 1_000 + 2 + 500 + 1 {
    fail("of 3503 steps that should run on the runtime's workers (or on the task executor's queue), \(total) did")
}
print("ok")
fflush(nil)
exit(0)
