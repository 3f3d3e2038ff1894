// Operation+Dependencies.swift — dependencies between operations, on any queue or none. The
// graph itself lives in the core (an O(1) edge per dependency); the list kept here is what
// `dependencies` reports, in the order they were added. Also here: the readiness announcement
// (a dependency tells its registered dependents when it finished, O12), dependencies the core
// could no longer record (D3), and the search for a cycle that a blocked wait reports (D4).
import Glibc
import OperationsCore

extension Operation {
    /// `addDependency(_:)`: records `operation` in the list `dependencies` reports, makes the
    /// core task wait for it, and registers the receiver with it for the readiness
    /// announcement (O12, D1). A dependency added to an operation that the core already holds
    /// ready (it sits in its queue, suspended or waiting for a slot) but that has not started
    /// holds it back all the same (D3): the core cannot take it any more, so the receiver keeps
    /// it itself (`State.lateDependencies`) and its `isReady` reads false until it finished.
    func addDependencyToCore(_ operation: Operation) {
        if operation === self {
            operationMisuse("addDependency(_:) called on \(self) with itself; an operation cannot wait for itself")
        }
        // A dependency added twice counts once (as Foundation: the second add is ignored).
        // Unmanaged into the closure: capturing `operation` costs a retain and a release
        // around it besides the list's own reference.
        let dependency = Unmanaged.passUnretained(operation)
        // The extras come back unretained: they live as long as the operation (deinit frees
        // them), and the generation's bump below needs no lock.
        let (added, extras) = withExtras { extras -> (Bool, Unmanaged<OperationExtras>) in
            let reference = Unmanaged.passUnretained(extras)
            return dependency._withUnsafeGuaranteedRef { operation in
                if extras.dependencies.contains(operation) { return (false, reference) }
                extras.dependencies.append(operation)
                return (true, reference)
            }
        }
        guard added else { return }
        willChangeValue(forKey: "dependencies")
        var lateAndUnfinished = false
        if !op_task_is_finished(operation.task) {
            let rc = op_task_add_dependency(task, operation.task)
            if rc == EALREADY && state.load(ordering: .acquiring) & (State.started | State.finished) == 0 {
                // Ready in the core but not started: the Swift layer holds it (D3).
                state.bitwiseOr(State.lateDependencies, ordering: .acquiringAndReleasing)
                lateAndUnfinished = true
            }
            // A new generation, once the core and the late mark know the dependency: an
            // announcement that read the old one posts its change (its readiness check may
            // have come first), and this dependency's finish posts the next one.
            extras._withUnsafeGuaranteedRef { _ = $0.dependencyGeneration.wrappingAdd(1, ordering: .releasing) }
            // The announcement re-reads `isReady` and tells observers; a plain BlockOperation
            // (its isReady is ours) without observers has nobody to tell, and the core makes it
            // ready: W4–W6 add no registration per edge. Unless it has a late dependency: then
            // its queue may hold it back by the Swift layer's own readiness hold (runFromQueue),
            // which only an announcement lifts, and the core, which accepts this dependency
            // while it holds the task, does not announce (seed 2397465958266045583: a plain
            // operation held for one late dependency got a second one, accepted by the core,
            // and waited for ever once both finished).
            if lateAndUnfinished || needsReadinessAnnouncements
                || state.load(ordering: .acquiring) & State.lateDependencies != 0 {
                operation.registerDependent(self)
            }
        }
        didChangeValue(forKey: "dependencies")
        if lateAndUnfinished {
            // Its readiness changed from true to false.
            willChangeValue(forKey: "isReady")
            didChangeValue(forKey: "isReady")
        }
    }

    /// `removeDependency(_:)`: if the dependency had not finished, the receiver may become
    /// ready at once; an "isReady" change is posted either way, as Foundation does.
    func removeDependencyFromCore(_ operation: Operation) {
        willChangeValue(forKey: "dependencies")
        let removed = readExtras(false) { extras -> Bool in extras.dependencies.remove(operation) }
        if removed { _ = op_task_remove_dependency(task, operation.task) }
        didChangeValue(forKey: "dependencies")
        if removed {
            willChangeValue(forKey: "isReady")
            didChangeValue(forKey: "isReady")
        }
    }

    /// Whether every dependency in the list finished: the late ones (D3), which the core could
    /// not record, are counted only here.
    var lateDependenciesFinished: Bool {
        readExtras(true) { extras in extras.dependencies.allSatisfy { op_task_is_finished($0.task) } }
    }

    /// Whether the receiver's last dependency finished (cancellation aside): the core's count
    /// is zero and so are the late ones.
    var dependenciesFinished: Bool {
        if op_task_unfinished_dependencies(task) != 0 { return false }
        if state.load(ordering: .acquiring) & State.lateDependencies == 0 { return true }
        return lateDependenciesFinished
    }

    /// Whether the receiver must hear when its last dependency finishes: a subclass may
    /// override `isReady` (and start itself from it), and observers want the "isReady" change.
    /// A plain BlockOperation without observers needs nothing: the core makes it ready.
    var needsReadinessAnnouncements: Bool {
        !isPlainBlockOperation || state.load(ordering: .acquiring) & State.hasObservers != 0
    }

    /// A plain BlockOperation that gets its first observer: registers with the dependencies
    /// that have not finished, which it skipped until now (see `needsReadinessAnnouncements`).
    func registerWithUnfinishedDependencies() {
        for dependency in dependencies where !op_task_is_finished(dependency.task) {
            dependency.registerDependent(self)
        }
    }

    /// Registers `dependent` to be announced when the receiver finishes. If the receiver is
    /// finishing or finished already (`dependentsClosed`), it will announce nobody: the
    /// dependent re-checks its own readiness once the receiver's core task finished.
    func registerDependent(_ dependent: Operation) {
        withExtras { $0.dependents.append(WeakOperation(dependent)) }
        // Ordered with the finisher's closing or-/compare-exchange on the same word: if it came
        // first we see its mark, else it sees our bit (and our entry, written under the lock).
        let old = state.bitwiseOr(State.hasDependents, ordering: .acquiringAndReleasing).oldValue
        guard old & State.dependentsClosed != 0 else { return }
        // The queue's fast path marks before its core task finishes, with no user code in
        // between: this wait is short, and returns at once after the general finish.
        op_task_retain(task)
        _ = op_task_wait(task, Int64(OP_WAIT_FOREVER))
        op_task_release(task)
        dependent.dependencyFinished()
    }

    /// The finished receiver's announcement to the operations that registered with it.
    func announceReadinessOfDependents() {
        let dependents = withExtras { extras -> [WeakOperation] in
            let list = extras.dependents
            extras.dependents = []
            return list
        }
        for entry in dependents {
            guard let dependent = entry.operation else { continue }
            // A core reference around the calls, so ThreadSanitizer sees the dependent's task
            // outlive our reads of it: it does not see Swift's reference counts, and the
            // dependent may be freed on another thread right after.
            let task = dependent.task
            op_task_retain(task)
            dependent.dependencyFinished()
            op_task_release(task)
        }
    }

    /// One of the receiver's dependencies finished: when it was the last, re-read `isReady`
    /// through the getter (an override runs) and post an "isReady" change, also for an
    /// operation in no queue (O12) — once: a dependency announces after its core task finished,
    /// so the announcement of one that finished earlier can come after the last one's (seen
    /// under ThreadSanitizer: two changes posted).
    func dependencyFinished() {
        if state.load(ordering: .acquiring) & (State.started | State.finished) != 0 { return }
        // The generation before the readiness check: a dependency added after it bumps it, so
        // the change posted here does not hide that dependency's own.
        let generation = readExtras(Int64(0)) { $0.dependencyGeneration.load(ordering: .acquiring) }
        guard dependenciesFinished else { return }
        let first = withExtras { extras -> Bool in
            // Newer only: a slow announcement of an older generation, coming after a newer one
            // posted, would move the mark back and let the newer one's late announcement post
            // again (review, issue 36).
            guard generation > extras.announcedGeneration else { return false }
            extras.announcedGeneration = generation
            return true
        }
        guard first else { return }
        willChangeValue(forKey: "isReady")
        didChangeValue(forKey: "isReady")
    }
}

/// A dependent as its dependency keeps it: weakly, so an operation that waits for one that
/// never finishes can still be freed.
struct WeakOperation {
    weak var operation: Operation?
    init(_ operation: Operation) { self.operation = operation }
}

extension Operation {
    /// A dependency cycle reachable from the receiver through unfinished, uncancelled
    /// operations, as the operations in it (first repeated at the end), or nil. Used by waits
    /// that have been blocked for a while; never on the add or run path.
    func reachableDependencyCycle() -> [Operation]? {
        Operation.dependencyCycle(reachableFrom: [self]).cycle
    }

    /// What a search for a dependency cycle found: a cycle, none, or (with a visit limit) not
    /// whether there is one.
    struct CycleSearch {
        /// The operations of a cycle, the first repeated at the end; nil when none was found.
        var cycle: [Operation]?
        /// Whether the search stopped at its visit limit before it could tell.
        var stoppedAtLimit = false
    }

    /// A depth-first search from `roots` through unfinished, uncancelled operations for a
    /// dependency cycle, with an explicit stack: no recursion, so a chain of any length (10^6
    /// and more) is walked in O(operations + edges) time and heap memory, never on the thread's
    /// stack. Visits at most `visitLimit` operations (then `stoppedAtLimit`). One walk for all
    /// roots: an operation finished exploring is not explored again.
    static func dependencyCycle(reachableFrom roots: [Operation], visitLimit: Int = .max) -> CycleSearch {
        // false: on the current path; true: explored, no cycle through it.
        var explored: [ObjectIdentifier: Bool] = [:]
        // The current path: each operation with its dependencies and the next one to look at.
        // The list as the operation keeps it (two inline dependencies, no array made: a chain
        // of 10^6 costs no allocation per step).
        var path: [(operation: Operation, dependencies: DependencyList, next: Int)] = []
        var visited = 0
        func enter(_ operation: Operation) -> CycleSearch? {
            if operation.isFinished || operation.isCancelled { return nil }
            let id = ObjectIdentifier(operation)
            if let done = explored[id] {
                if done { return nil }
                let start = path.firstIndex { $0.operation === operation }!
                return CycleSearch(cycle: path[start...].map(\.operation) + [operation])
            }
            visited += 1
            if visited > visitLimit { return CycleSearch(cycle: nil, stoppedAtLimit: true) }
            explored[id] = false
            path.append((operation, operation.dependencyList, 0))
            return nil
        }
        for root in roots {
            if let found = enter(root) { return found }
            while let top = path.last {
                if top.next < top.dependencies.count {
                    path[path.count - 1].next += 1
                    if let found = enter(top.dependencies[top.next]) { return found }
                } else {
                    explored[ObjectIdentifier(top.operation)] = true
                    path.removeLast()
                }
            }
        }
        return CycleSearch()
    }

    /// "A → B → A" for a message.
    /// A cycle of more than `describedCycleLength` operations names its first ones and its last
    /// two, and says how many it leaves out (a cycle through a chain of 10^5 is one message).
    static func describeCycle(_ cycle: [Operation]) -> String {
        let limit = describedCycleLength
        guard cycle.count > limit + 2 else { return cycle.map(\.description).joined(separator: " → ") }
        let head = cycle.prefix(limit).map(\.description)
        let tail = cycle.suffix(2).map(\.description)
        return (head + ["… (\(cycle.count - limit - 2) more) …"] + tail).joined(separator: " → ")
    }

    /// How many operations of a long cycle a message names before it skips.
    static let describedCycleLength = 8
}
