// OperationFootprintTests.swift — what an operation costs in memory (issue 3's W8 budget of
// 144 heap bytes per queued BlockOperation): the object itself is one 48-byte malloc block
// (its state bits share one word with the address of its core task, or of its extras once it
// has them), and those extras are freed with the operation.
import Glibc
import Operations
import OperationsTestSupport
import Testing

/// Something captured by an operation's closures, to see when they are freed.
private final class Canary: Sendable {}

/// glibc's malloc_usable_size (not in the Glibc module; the sanitizers' allocators answer it
/// with the size asked for).
private let mallocUsableSize: @convention(c) (UnsafeMutableRawPointer?) -> Int = {
    guard let symbol = dlsym(nil, "malloc_usable_size") else { fatalError("no malloc_usable_size") }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutableRawPointer?) -> Int).self)
}()

/// The usable bytes of the heap block holding `object`.
private func heapBlockSize(_ object: AnyObject) -> Int {
    mallocUsableSize(Unmanaged.passUnretained(object).toOpaque())
}

/// The smallest heap block `make` gets in 32 tries: glibc may hand out a larger free chunk when
/// splitting it would leave less than its minimum chunk (a 64-byte chunk for a 48-byte
/// request), depending on what other tests of the process freed just before; the size class
/// the object needs is the smallest block it is ever given.
private func smallestHeapBlock(_ make: () -> AnyObject) -> Int {
    let objects = (0..<32).map { _ in make() }
    return objects.map(heapBlockSize).min() ?? 0
}

@Suite(.sharesProcess) struct OperationFootprintTests {
    /// malloc's usable size of a block holding an object of 40 bytes (a 48-byte chunk); it was
    /// 56 with the state word and extras pointer the object used to carry.
    static let smallObjectUsableSize = 40

    @Test func aBlockOperationIsOneFortyByteObject() {
        let usable = smallestHeapBlock { BlockOperation {} }
        #expect(usable <= Self.smallObjectUsableSize,
                "a BlockOperation's heap block has \(usable) usable bytes; W8's budget needs \(Self.smallObjectUsableSize)")

        // Setting what goes in the extras does not grow the object.
        let named = smallestHeapBlock {
            let named = BlockOperation {}
            named.name = "named"
            named.completionBlock = {}
            return named
        }
        #expect(named == usable)
    }

    @Test func extrasAreFreedWithTheirOperation() {
        weak var weakCanary: Canary?
        weak var weakDependency: BlockOperation?
        do {
            let canary = Canary()
            weakCanary = canary
            let dependency = BlockOperation {}
            weakDependency = dependency
            let operation = BlockOperation { withExtendedLifetime(canary) {} }
            operation.name = "holds extras"
            operation.completionBlock = { withExtendedLifetime(canary) {} }
            operation.addExecutionBlock { withExtendedLifetime(canary) {} }
            operation.threadPriority = 0.25
            operation.addDependency(dependency)
            let token = operation.observe(.isFinished) { _ in withExtendedLifetime(canary) {} }
            withExtendedLifetime(token) {}
            #expect(operation.name == "holds extras")
            #expect(operation.dependencies.count == 1)
        }
        #expect(weakCanary == nil, "the blocks, completion block or observer outlived their operation")
        #expect(weakDependency == nil, "a dependency outlived the operation that held it")
    }

    /// Many operations with extras, freed in any order, each keep their own: an entry is never
    /// handed to another operation that reuses a freed one's address.
    @Test func eachOperationKeepsItsOwnExtrasWhileOthersComeAndGo() {
        var kept: [BlockOperation] = []
        for round in 0..<20 {
            var batch: [BlockOperation] = []
            for index in 0..<200 {
                let operation = BlockOperation {}
                operation.name = "r\(round)-\(index)"
                batch.append(operation)
            }
            kept.append(batch[round])
            batch.removeAll()
            let fresh = BlockOperation {}
            #expect(fresh.name == nil, "a new operation found a freed one's name: \(fresh.name ?? "")")
        }
        for (round, operation) in kept.enumerated() {
            #expect(operation.name == "r\(round)-\(round)")
        }
    }

    /// Operations with extras come and go in random order (seeded), so freed addresses are
    /// reused; every live operation keeps exactly its own name throughout, also while several
    /// threads do the same at once.
    @Test func eachOperationKeepsItsOwnExtrasUnderRandomChurnOnTwoThreads() {
        let seed = testSeed()
        let churn: @Sendable (Int) -> Void = { thread in
            var generator = SeededGenerator(seed: seed &+ UInt64(thread))
            var live: [(BlockOperation, String)] = []
            var next = 0
            for step in 0..<20_000 {
                // Waves: mostly adding for a while, then mostly removing, so tables grow and shrink.
                let adding = (step / 2_000) % 2 == 0 ? 3 : 1
                if live.isEmpty || Int.random(in: 0..<4, using: &generator) < adding {
                    let operation = BlockOperation {}
                    let name = "t\(thread)-\(next)"
                    next += 1
                    operation.name = name
                    live.append((operation, name))
                } else {
                    let index = Int.random(in: 0..<live.count, using: &generator)
                    live.swapAt(index, live.count - 1)
                    let (operation, name) = live.removeLast()
                    if operation.name != name {
                        Issue.record("seed \(seed), thread \(thread), step \(step): \(name) reads \(operation.name ?? "nil")")
                        return
                    }
                }
            }
            for (operation, name) in live where operation.name != name {
                Issue.record("seed \(seed), thread \(thread): \(name) reads \(operation.name ?? "nil") at the end")
                return
            }
        }
        let threads = (0..<2).map { thread in onNewThread { churn(thread) } }
        for (thread, done) in threads.enumerated() {
            waitFor(done, "seed \(seed): churning thread \(thread) to finish")
        }
    }
}
