// main.swift — the probe behind GlobalExecutorTests: `OperationsRuntime.installAsGlobalExecutor()`
// cannot be undone, so it is tried in a process of its own (this executable), never in the test
// process. It checks that another library's hook is left alone, installs, then checks that tasks
// no executor claims run on the runtime's workers of their priority's class with
// `OperationQueue.current` nil; that a nonisolated async call does not hop through the queues;
// that a high-priority task does not wait behind a backlog of background ones; that tasks
// blocked on a semaphore do not starve the one that would release them; and that tasks still
// hand over to and from a queue used as a task executor, an actor on a serial queue, a task
// group, `async let` and `Task.sleep`. Every wait has a deadline, and the whole probe an alarm.
// Prints "ok" and exits 0, or prints "FAIL: …" and exits 1.
import Dispatch
import Glibc
import Operations
import Synchronization

let failing = Atomic<Bool>(false)

/// Says what failed and ends the process; once, whichever thread comes first (the others wait
/// for the exit).
func fail(_ message: String) -> Never {
    if failing.exchange(true, ordering: .acquiringAndReleasing) {
        while true { pause() }
    }
    print("FAIL: \(message)")
    fflush(nil) // nil: every output stream
    _exit(1)
}

alarm(100) // SIGALRM ends a probe that hangs anyway (each wait below has a shorter deadline)

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

final class Flag: Sendable { let value = Atomic<Bool>(false) }

/// Runs `body` as a detached task of `priority` and waits for it on this (main) thread, at most
/// 15 s.
func run<T: Sendable>(_ what: String, priority: TaskPriority? = nil, _ body: @escaping @Sendable () async -> T) -> T {
    let done = DispatchSemaphore(value: 0)
    let result = Box<T>()
    Task.detached(priority: priority) {
        result.value = await body()
        done.signal()
    }
    if done.wait(timeout: .now() + 15) == .timedOut { fail("\(what) did not finish within 15 s") }
    return result.value!
}

actor Counter {
    let queue: OperationQueue
    var count = 0
    init(queue: OperationQueue) { self.queue = queue }
    nonisolated var unownedExecutor: UnownedSerialExecutor { queue.asUnownedSerialExecutor() }
    func bump() -> String { count += 1; return threadName() }
}

/// A nonisolated async function: called from a task of the global executor, it runs there.
nonisolated func plusOne(_ value: Int) async -> Int { value + 1 }

// Another library's global executor (here a hook that passes every job on) is left in place.
typealias Hook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void
guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "swift_task_enqueueGlobal_hook") else {
    fail("the Swift runtime has no swift_task_enqueueGlobal_hook")
}
let slot = symbol.assumingMemoryBound(to: Optional<Hook>.self)
slot.pointee = { job, original in original(job) }
if OperationsRuntime.installAsGlobalExecutor() { fail("installAsGlobalExecutor() replaced another library's hook") }
if OperationsRuntime.isGlobalExecutor { fail("isGlobalExecutor true while another library's hook is installed") }
slot.pointee = nil

if OperationsRuntime.isGlobalExecutor { fail("isGlobalExecutor before the installation") }
guard OperationsRuntime.installAsGlobalExecutor() else { fail("installAsGlobalExecutor() returned false") }
if !OperationsRuntime.isGlobalExecutor { fail("isGlobalExecutor false after the installation") }
if !OperationsRuntime.installAsGlobalExecutor() { fail("a second installAsGlobalExecutor() returned false") }

// Each priority's tasks run on the workers of its class.
let classes: [(TaskPriority, String)] = [(.background, "op-bkgd-"), (.utility, "op-util-"), (.medium, "op-dflt-"),
                                         (.high, "op-uinit-"), (TaskPriority(rawValue: 0x21), "op-uiact-")]
for (priority, prefix) in classes {
    let (name, current) = run("a task of priority \(priority)", priority: priority) { () -> (String, Bool) in
        (threadName(), OperationQueue.current == nil)
    }
    if !name.hasPrefix(prefix) { fail("a task of priority \(priority) ran on thread '\(name)', not a worker '\(prefix)…'") }
    if !current { fail("OperationQueue.current is not nil in a task of the global executor") }
}

// A nonisolated async call runs where its caller runs: 10 000 calls take no trip through the
// queues (with a task executor of our own as the jobs' executor, each call and return did).
let tasksBefore = OperationsRuntime.counters.tasks
let sum = run("10 000 nonisolated async calls") { () -> Int in
    var value = 0
    for _ in 0..<10_000 { value = await plusOne(value) }
    return value
}
let tasksRun = OperationsRuntime.counters.tasks - tasksBefore
if sum != 10_000 { fail("10 000 nonisolated async calls returned \(sum)") }
if tasksRun > 1_000 { fail("10 000 nonisolated async calls ran \(tasksRun) tasks on the workers: each call hops") }

// No priority inversion: background tasks fill every slot of their class and block on a gate
// that only a later high-priority task opens; it must start before the backlog behind them does.
let width = OperationsRuntime.topology.defaultWidth
let backlog = 4 * width + 4
let gate = DispatchSemaphore(value: 0)
let started = Box<Int>()
let startedLock = DispatchSemaphore(value: 1)
let backlogDone = DispatchSemaphore(value: 0)
for _ in 0..<backlog {
    Task.detached(priority: .background) {
        startedLock.wait(); started.value = (started.value ?? 0) + 1; startedLock.signal()
        if gate.wait(timeout: .now() + 15) == .timedOut { fail("a background task waited 15 s for the gate") }
        gate.signal() // passes the gate on
        backlogDone.signal()
    }
}
let startedBeforeHigh = run("a high-priority task behind a background backlog", priority: .high) { () -> Int in
    startedLock.wait(); let count = started.value ?? 0; startedLock.signal()
    gate.signal()
    return count
}
if startedBeforeHigh >= backlog {
    fail("the high-priority task started after all \(backlog) background tasks had: it waited behind them")
}
for _ in 0..<backlog where backlogDone.wait(timeout: .now() + 15) == .timedOut {
    fail("the background backlog did not finish within 15 s of the gate opening")
}

// A task's first child runs beside it, as on the cooperative pool: a parent that spins until its
// child has run finishes (with the executor's LIFO slot the child waited for the parent to
// suspend, for ever). Needs a second CPU's slot.
if width >= 2 {
    let ran = Flag()
    let ranWhileSpinning = run("a parent spinning until its first child runs") { () -> Bool in
        let child = Task { ran.value.store(true, ordering: .releasing) }
        let deadline = DispatchTime.now() + 10
        while !ran.value.load(ordering: .acquiring) && DispatchTime.now() < deadline { sched_yield() }
        let whileSpinning = ran.value.load(ordering: .acquiring) // before the await lets it run here
        await child.value
        return whileSpinning
    }
    if !ranWhileSpinning { fail("a task's first child did not run while its parent spun for 10 s") }
}

// Tasks that block their threads (width + 1 of them, waiting for the last) do not starve it: the
// blocked-worker monitor draws a spare (the cooperative pool would wait for ever).
let blocked = DispatchSemaphore(value: 0)
let allDone = DispatchSemaphore(value: 0)
for index in 0...width {
    Task.detached {
        if index < width {
            if blocked.wait(timeout: .now() + 15) == .timedOut { fail("a blocked task waited 15 s: no spare ran the last one") }
        } else {
            for _ in 0..<width { blocked.signal() }
        }
        allDone.signal()
    }
}
for _ in 0...width where allDone.wait(timeout: .now() + 20) == .timedOut {
    fail("\(width + 1) tasks, \(width) of them blocked on the last, did not finish within 20 s")
}

// Hand-overs: to a queue used as a task executor and back, many times; to an actor on a serial
// queue; a task group, async let, Task.sleep.
let queue = OperationQueue()
queue.name = "probe queue"
let serial = OperationQueue()
serial.name = "probe actor queue"
serial.maxConcurrentOperationCount = 1
let total = run("round trips through a task executor, a group, async let, an actor and a sleep") { () -> Int in
    var sum = 0
    for _ in 0..<2_000 {
        sum += await Task(executorPreference: queue) { OperationQueue.current === queue ? 1 : 0 }.value
        // Back on the global executor, not on the queue.
        if !threadName().hasPrefix("op-") || OperationQueue.current != nil { return -1 }
    }
    sum += await withTaskGroup(of: Int.self) { group in
        for _ in 0..<1_000 { group.addTask { threadName().hasPrefix("op-") && OperationQueue.current == nil ? 1 : 0 } }
        return await group.reduce(0, +)
    }
    async let a = Task.detached { threadName().hasPrefix("op-") ? 1 : 0 }.value
    async let b = Task.detached { threadName().hasPrefix("op-") ? 1 : 0 }.value
    sum += await a + b
    let counter = Counter(queue: serial)
    for _ in 0..<500 where await counter.bump().hasPrefix("op-") { sum += 1 }
    try? await Task.sleep(for: .milliseconds(5)) // the timer wakes the task through the hook
    if threadName().hasPrefix("op-dflt-") && OperationQueue.current == nil { sum += 1 }
    return sum
}
if total != 2_000 + 1_000 + 2 + 500 + 1 {
    fail("of 3503 steps that should run on the runtime's workers (or on the task executor's queue), \(total) did")
}
print("ok")
fflush(nil)
exit(0)
