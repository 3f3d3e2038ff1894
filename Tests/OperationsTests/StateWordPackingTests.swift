// StateWordPackingTests.swift — the state word of an operation (OperationStateBits.swift): its
// reference part for addresses with high bits set (aarch64 TBI/MTE/HWASan tags, x86_64 LAM,
// addresses above 2^48), which this x86_64 machine never hands out. The packing is checked as
// pure arithmetic on synthetic tagged addresses, the side table with synthetic tagged values,
// and real operations through the side-table form by forcing it (`setSideTableForced`; the
// whole behaviour suite runs that way with OPERATIONS_FORCE_SIDE_TABLE=1).
@testable import OperationsImplementation
import OperationsCore
import Testing

/// Addresses as platforms with pointer tagging or wider address spaces hand them out, all
/// 16-byte aligned heap-like addresses that a 48-bit word cannot hold as they are.
private let taggedAddresses: [(String, UInt)] = [
    ("MTE tag in bits 56-59", 0x0B00_FFFF_A3C0_1230),
    ("MTE tag 0xF", 0x0F00_0000_0001_0000),
    ("HWASan top byte", 0xE700_AAAA_5555_0010),
    ("HWASan top byte 0xFF", 0xFF00_7FFF_FFFF_FFF0),
    ("x86_64 LAM_U57 bits 57-62", 0x7E00_7FFF_1234_5670),
    ("x86_64 LAM_U48 bits 48-62", 0x7FFF_7FFF_1234_5670),
    ("arm64 52-bit VA", 0x000F_FFFF_FFFF_FFF0),
    ("arm64 52-bit VA with MTE tag", 0x0300_8000_0000_0040),
    ("x86_64 57-bit VA", 0x00FF_FFFF_FFFF_FFF0),
    ("bit 48 only", 0x0001_0000_0000_0000),
    ("bit 63 only", 0x8000_0000_0000_0000),
]

/// Reference parts of every form, from addresses that fit and slot indexes.
private func sampleReferences(_ generator: inout SeededGenerator) -> [OperationStateBits.Reference] {
    var references: [OperationStateBits.Reference] = [
        .task(16), .task(0x7FFF_FFFF_FFF0), .task(0xFFFF_FFFF_FFF0),
        .extras(16), .extras(0x5555_5555_5550), .extras(0xFFFF_FFFF_FFF0),
        .slot(0), .slot(1), .slot(63), .slot(64), .slot(OperationStateBits.maxSlotIndex),
    ]
    for _ in 0..<200 {
        let address = UInt.random(in: 1...(OperationStateBits.lowMask >> 4), using: &generator) << 4
        references.append(.task(address))
        references.append(.extras(address))
        references.append(.slot(UInt.random(in: 0...OperationStateBits.maxSlotIndex, using: &generator)))
    }
    return references
}

@Suite(.sharesProcess) struct StateWordPackingTests {
    @Test func addressesWithHighBitsDoNotFitAndNeverLoseThem() {
        for (what, address) in taggedAddresses {
            #expect(!OperationStateBits.fits(address, rejecting: OperationStateBits.unfitBits), "\(what)")
            #expect(!OperationStateBits.fits(address, rejecting: OperationStateBits.forcedRejectMask), "\(what)")
            // Stripping the high bits (what the old packing's mask would have done) changes the
            // address: the word must not hold it as it is.
            #expect(address & OperationStateBits.lowMask != address, "\(what)")
        }
        // Not 16-byte aligned: the low bits are the marks.
        for address: UInt in [0x7FFF_1234_5671, 0x7FFF_1234_5678, 0x7FFF_1234_5672] {
            #expect(!OperationStateBits.fits(address, rejecting: OperationStateBits.unfitBits))
        }
        // The common case: 16-byte aligned below 2^48 fits, unless forced.
        for address: UInt in [16, 0x5555_5555_5550, 0x7FFF_FFFF_FFF0, 0xFFFF_FFFF_FFF0] {
            #expect(OperationStateBits.fits(address, rejecting: OperationStateBits.unfitBits))
            #expect(!OperationStateBits.fits(address, rejecting: OperationStateBits.forcedRejectMask))
        }
    }

    @Test func everyReferencePartReadsBackUnderAnyStateBits() {
        var generator = SeededGenerator(seed: testSeed())
        for reference in sampleReferences(&generator) {
            let part = OperationStateBits.part(reference)
            #expect(part & ~OperationStateBits.lowMask == 0, "\(reference) spills into the state bits")
            for bits: UInt32 in [0, 1, 0x8000, 0xFFFF, UInt32.random(in: 0...0xFFFF, using: &generator)] {
                let word = OperationStateBits.word(bits: bits, part: part)
                #expect(OperationStateBits.reference(in: word) == reference)
                #expect(OperationStateBits.bits(in: word) == bits)
            }
            // Bits above the 16 the word has are dropped, never written over the reference.
            let word = OperationStateBits.word(bits: 0xFFFF_FFFF, part: part)
            #expect(OperationStateBits.reference(in: word) == reference)
        }
    }

    /// The operands of the state bits' atomic OR and AND, applied to words of every form: the
    /// reference part comes out as it went in, and the state bits as asked.
    @Test func stateBitOperationsNeverTouchTheReferencePart() {
        var generator = SeededGenerator(seed: testSeed())
        for reference in sampleReferences(&generator) {
            let part = OperationStateBits.part(reference)
            var bits = UInt32.random(in: 0...0xFFFF, using: &generator)
            var word = OperationStateBits.word(bits: bits, part: part)
            for step in 0..<64 {
                let operand = UInt32.random(in: 0...UInt32.max, using: &generator)
                if step % 2 == 0 {
                    word |= OperationStateBits.orOperand(operand)
                    bits |= operand & 0xFFFF
                } else {
                    word &= OperationStateBits.andOperand(operand)
                    bits &= operand
                }
                #expect(OperationStateBits.reference(in: word) == reference)
                #expect(OperationStateBits.bits(in: word) == bits)
            }
            // Every single bit on and off again.
            for bit in 0..<16 {
                let one = UInt32(1) << UInt32(bit)
                word |= OperationStateBits.orOperand(one)
                #expect(OperationStateBits.bits(in: word) & one != 0)
                word &= OperationStateBits.andOperand(~one)
                #expect(OperationStateBits.bits(in: word) & one == 0)
                #expect(OperationStateBits.reference(in: word) == reference)
            }
        }
    }

    @Test func sideTableLocationsTileTheIndexes() {
        typealias Table = OperationSideTable
        #expect(Table.location(of: 0) == (0, 0))
        #expect(Table.location(of: 63) == (0, 63))
        #expect(Table.location(of: 64) == (1, 0))
        #expect(Table.location(of: 191) == (1, 127))
        #expect(Table.location(of: 192) == (2, 0))
        let last = Table.location(of: Table.capacity - 1)
        #expect(last.chunk == Table.chunkCount - 1)
        #expect(last.offset == (Table.firstChunkSlots << UInt(Table.chunkCount - 1)) - 1)
        #expect(Table.capacity - 1 <= OperationStateBits.maxSlotIndex, "a slot index the word cannot hold")
        // Consecutive indexes: the next offset in the chunk, or the start of the next chunk.
        var previous = Table.location(of: 0)
        for index in UInt(1)..<20_000 {
            let here = Table.location(of: index)
            if here.chunk == previous.chunk {
                #expect(here.offset == previous.offset + 1)
            } else {
                #expect(here.chunk == previous.chunk + 1 && here.offset == 0)
                #expect(previous.offset == (Table.firstChunkSlots << UInt(previous.chunk)) - 1)
            }
            previous = here
        }
    }

    /// Tagged values in, the same values out, across chunks and through reuse of given-back
    /// slots.
    @Test func sideTableKeepsFullWidthValues() {
        let table = OperationSideTable()
        var generator = SeededGenerator(seed: testSeed())
        var live: [(index: UInt, value: UInt)] = []
        for round in 0..<4 {
            for _ in 0..<3_000 {
                let tag = UInt.random(in: 0...0xFFFF, using: &generator) << 48
                let value = tag | (UInt.random(in: 1...(OperationStateBits.lowMask >> 4), using: &generator) << 4)
                live.append((table.take(value), value))
            }
            for (index, value) in live { #expect(table.value(at: index) == value, "round \(round)") }
            #expect(Set(live.map(\.index)).count == live.count, "a slot handed out twice")
            #expect(table.slotsInUse == live.count)
            // Give back about half, in random order.
            live.shuffle(using: &generator)
            for (index, _) in live.suffix(live.count / 2) { table.giveBack(index) }
            live.removeLast(live.count / 2)
            #expect(table.slotsInUse == live.count)
        }
        // Given-back slots are taken again before new ones: the table does not grow past its peak.
        let peak = live.map(\.index).max() ?? 0
        for (index, _) in live { table.giveBack(index) }
        #expect(table.slotsInUse == 0)
        let again = (0..<live.count).map { _ in table.take(0xFF00_0000_0000_0010) }
        #expect(again.allSatisfy { $0 <= peak })
        for (_, (what, address)) in taggedAddresses.enumerated() {
            let index = table.take(address)
            #expect(table.value(at: index) == address, "\(what)")
        }
    }

    /// Two threads take, read and give back slots of one table at once; each reads only its own
    /// values.
    @Test func sideTableSlotsStayTheirOwnsUnderConcurrentUse() {
        let table = OperationSideTable()
        let seed = testSeed()
        let threads = (0..<2).map { thread in
            onNewThread {
                var generator = SeededGenerator(seed: seed &+ UInt64(thread))
                var live: [(UInt, UInt)] = []
                for step in 0..<20_000 {
                    if live.isEmpty || Int.random(in: 0..<3, using: &generator) < 2 {
                        let value = (UInt(thread + 1) << 56) | (UInt(step + 1) << 4)
                        live.append((table.take(value), value))
                    } else {
                        let position = Int.random(in: 0..<live.count, using: &generator)
                        live.swapAt(position, live.count - 1)
                        let (index, value) = live.removeLast()
                        if table.value(at: index) != value {
                            Issue.record("seed \(seed), thread \(thread), step \(step): slot \(index) lost its value")
                            return
                        }
                        table.giveBack(index)
                    }
                }
                for (index, value) in live where table.value(at: index) != value {
                    Issue.record("seed \(seed), thread \(thread): slot \(index) lost its value at the end")
                    return
                }
            }
        }
        for (thread, done) in threads.enumerated() {
            waitFor(done, "seed \(seed): side-table thread \(thread) to finish")
        }
    }
}

/// Real operations in the side-table form, forced by each test (one at a time, in a quiet
/// process, so the slots counted are the test's; other suites would be correct in either form).
@Suite(.needsQuietProcess, .serialized) struct SideTableOperationTests {
    /// The form of `operation`'s state word.
    static func reference(of operation: Operation) -> OperationStateBits.Reference {
        OperationStateBits.reference(in: operation.stateWord.load(ordering: .acquiring))
    }

    static func isSlot(_ operation: Operation) -> Bool {
        if case .slot = reference(of: operation) { return true }
        return false
    }

    /// `make()` in the word's common form, while the side table is forced.
    static func unforced<T>(_ make: () -> T) -> T {
        let wasForced = OperationStateBits.setSideTableForced(false)
        defer { OperationStateBits.setSideTableForced(wasForced) }
        return make()
    }

    /// Runs `body` with every new operation in the side-table form, then checks that every
    /// slot its operations took was given back once they were freed.
    static func withSideTableForced(_ body: () -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
        let slotsBefore = OperationSideTable.shared.slotsInUse
        let wasForced = OperationStateBits.setSideTableForced(true)
        body()
        OperationStateBits.setSideTableForced(wasForced)
        // Queues drop their references on finished operations a little later.
        let freed = eventually { OperationSideTable.shared.slotsInUse <= slotsBefore }
        #expect(freed, "\(OperationSideTable.shared.slotsInUse - slotsBefore) side-table slots still taken after the operations went",
                sourceLocation: sourceLocation)
    }

    @Test func forcedOperationsLeadToTheirTaskThroughTheSideTable() {
        Self.withSideTableForced {
            let operation = BlockOperation {}
            #expect(Self.isSlot(operation))
            let extras = operation.readExtras(nil) { $0 }
            #expect(extras != nil, "the side-table form leads to extras")
            #expect(extras.map { $0.task == operation.task } == true)
            #expect(op_task_context(operation.task) == Unmanaged.passUnretained(operation).toOpaque())
            // Nothing of the extras shows: they hold the defaults.
            #expect(operation.name == nil && operation.completionBlock == nil && operation.dependencies.isEmpty)
            #expect(operation.threadPriority == 0.5 && operation.isReady && !operation.isFinished)
            operation.start()
            #expect(operation.isFinished && !operation.isExecuting)
        }
        // Unforced: on this machine every address fits, and an operation is its one word.
        let plain = Self.unforced { BlockOperation {} }
        #expect(Self.reference(of: plain) == .task(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(plain.task)))))
    }

    /// An operation made in the word's common form gets its extras in the side-table form:
    /// the switch of the reference part (`makeExtrasLocked`) while other threads change its
    /// state bits.
    @Test func extrasMadeLaterGoToTheSideTableWhileStateBitsChange() {
        Self.withSideTableForced {
            let operations = Self.unforced { (0..<200).map { _ in BlockOperation {} } }
            #expect(operations.allSatisfy { if case .task = Self.reference(of: $0) { true } else { false } })
            let queue = OperationQueue()
            queue.isSuspended = true
            for operation in operations { queue.addOperation(operation) }
            // One thread names them (making extras), the other cancels every other one: state
            // bits and reference part change at once.
            let naming = onNewThread {
                for (index, operation) in operations.enumerated() { operation.name = "op \(index)" }
            }
            let cancelling = onNewThread {
                for (index, operation) in operations.enumerated() where index % 2 == 0 { operation.cancel() }
            }
            waitFor(naming, "the naming thread")
            waitFor(cancelling, "the cancelling thread")
            for (index, operation) in operations.enumerated() {
                #expect(Self.isSlot(operation))
                #expect(operation.name == "op \(index)")
                #expect(operation.isCancelled == (index % 2 == 0))
                #expect(!operation.isFinished)
            }
            queue.isSuspended = false
            waitUntilAllOperationsAreFinished(queue)
            #expect(operations.allSatisfy { $0.isFinished })
        }
    }

    /// Dependencies, completion blocks, several blocks, observers, cancellation and waits, with
    /// operations of both forms depending on each other.
    @Test func queuedOperationsBehaveTheSameInTheSideTableForm() {
        let log = Recorder<String>()
        Self.withSideTableForced {
            // A side-table operation waits for a plain-form one, and the other way round below.
            let plainFirst = Self.unforced { BlockOperation { log.append("plain first") } }
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 2
            let completions = Latch()
            let observed = Latch()
            var chain: [BlockOperation] = []
            for index in 0..<20 {
                let operation = BlockOperation { log.append("chain \(index)") }
                operation.completionBlock = { completions.open() }
                if let previous = chain.last { operation.addDependency(previous) } else { operation.addDependency(plainFirst) }
                chain.append(operation)
            }
            let several = BlockOperation { log.append("block 1") }
            several.addExecutionBlock { log.append("block 2") }
            several.addDependency(chain[chain.count - 1])
            let token = several.observe(.isFinished) { _ in observed.open() }
            let cancelled = BlockOperation { log.append("cancelled ran") }
            cancelled.addDependency(chain[0])
            cancelled.cancel()
            let plainLast = Self.unforced { BlockOperation { log.append("plain last") } }
            #expect(Self.reference(of: plainLast) == .task(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(plainLast.task)))))
            Self.unforced { plainLast.addDependency(several) } // extras in the word's own form
            if case .extras = Self.reference(of: plainLast) {} else { Issue.record("\(Self.reference(of: plainLast))") }
            #expect(Self.isSlot(several))

            queue.addOperations(chain + [several, cancelled, plainLast], waitUntilFinished: false)
            queue.addOperation(plainFirst)
            waitUntilFinished(plainLast)
            waitUntilAllOperationsAreFinished(queue)
            withExtendedLifetime(token) {}
            waitFor(completions, "the chain's completion blocks", count: chain.count)
            waitFor(observed, "the isFinished observer")
            let order = log.snapshot
            #expect(order.first == "plain first")
            #expect(Array(order.dropFirst().prefix(chain.count)) == (0..<chain.count).map { "chain \($0)" })
            #expect(Set(order.dropFirst(chain.count + 1).prefix(2)) == ["block 1", "block 2"])
            #expect(order.last == "plain last")
            #expect(!order.contains("cancelled ran"))
            #expect(cancelled.isFinished && cancelled.isCancelled)
            #expect((chain + [several]).allSatisfy { $0.isFinished && !$0.isCancelled && Self.isSlot($0) })
        }
    }

    /// Many short-lived operations through a queue from two threads: every slot is given back
    /// (withSideTableForcedAsync checks), whichever thread frees the operation.
    @Test func slotsComeBackFromOperationsFreedAnywhere() async {
        await Self.withSideTableForcedAsync {
            let queue = OperationQueue()
            let ran = Counter()
            let producers = (0..<2).map { _ in
                onNewThread {
                    for _ in 0..<5_000 { queue.addOperation { _ = ran.increment() } }
                }
            }
            for (index, done) in producers.enumerated() { waitFor(done, "producer \(index)") }
            await queue.waitUntilAllOperationsAreFinished()
            #expect(ran.current == 10_000)
            // Async waits register in the extras too.
            let last = BlockOperation {}
            #expect(Self.isSlot(last))
            queue.addOperation(last)
            await last.waitUntilFinished()
            #expect(last.isFinished)
        }
    }

    /// withSideTableForced for async bodies.
    static func withSideTableForcedAsync(_ body: () async -> Void, sourceLocation: SourceLocation = #_sourceLocation) async {
        let slotsBefore = OperationSideTable.shared.slotsInUse
        let wasForced = OperationStateBits.setSideTableForced(true)
        await body()
        OperationStateBits.setSideTableForced(wasForced)
        let freed = eventually { OperationSideTable.shared.slotsInUse <= slotsBefore }
        #expect(freed, "\(OperationSideTable.shared.slotsInUse - slotsBefore) side-table slots still taken after the operations went",
                sourceLocation: sourceLocation)
    }
}
