// OperationStateBits.swift — an operation's one stored word (`Operation.stateWord`): its state
// bits in the top 16 bits and, in the low 48, a reference part that leads to its core task.
//
// The reference part takes one of three forms; its bits 0 and 1 say which:
//
//     …00   the core task's address (a 16-byte aligned heap block: its low four bits are free);
//     …01   the address of the operation's extras (`OperationExtras`, which hold the task's
//           full pointer), once it has them, with bit 0 set;
//     …11   bits 4–47: the index of a slot of `OperationSideTable`, which holds the extras'
//           full 64-bit address.
//
// The first two need an address that "fits": 16-byte aligned, with its top 16 bits zero. Every
// heap address does on x86_64 with 4-level paging and on aarch64 without pointer tagging, where
// Linux gives user space 47 or 48 bits. That is the common case, and its cost is what it was
// before the third form existed: a queued BlockOperation is one 40-byte object (a 48-byte
// heap block instead of 64), reading its task tests bit 0 and uses the word, and packing an
// address tests it against `rejectMask` (one load of a global).
//
// Addresses with high bits set are legitimate elsewhere, and the word must not drop them:
//   - aarch64 ignores the top byte of user addresses (TBI, always on for EL0 on Linux), so an
//     allocator may tag its pointers there: HWASan in bits 56–63; with the Memory Tagging
//     Extension (Android, Scudo, glibc with the glibc.mem.tagging tunable) malloc returns
//     pointers whose bits 56–59 hold the allocation tag. That tag cannot simply be stripped
//     and put back: a pointer whose tag does not match its memory's faults on access (MTE's
//     tag check) or is reported (HWASan), and the 16 bits above the address are the state;
//     reading the tag back with `ldg` would work for MTE only, not for HWASan or LAM.
//   - x86_64 Linear Address Masking ignores bits 57–62 (LAM_U57, what Linux enables; the
//     hardware also has LAM_U48, bits 48–62) for the same kind of tagging (HWASan on x86_64).
//   - 52-bit user addresses (arm64 with LVA or LPA2) and 57-bit ones (x86_64 with 5-level
//     paging), which Linux maps only for an mmap hint above 2^48 (arm64) or 2^47 (x86_64);
//     an allocator may still ask for them.
// Such an address takes the third form, with no bit of it dropped: when the core task does not
// fit, the operation gets its extras at once (they hold the task's full pointer); when the
// extras do not fit, a side-table slot holds their full pointer and the word the slot's index.
// That is correct whatever a platform keeps in the high bits, with no platform-specific code,
// and it costs only operations that need it: their extras, a slot (a mutex taken at creation
// and at deinit), and a few more loads on each read of the task. On a platform that tags every
// heap pointer (MTE, HWASan) that is every operation. Moving state bits out of the word
// instead would cost every operation 8 bytes (a 64-byte heap block for a BlockOperation).
//
// `OPERATIONS_FORCE_SIDE_TABLE=1` (or the test hook `setSideTableForced`) sends every
// operation created from then on to the third form, so it can be tested on x86_64:
//   OPERATIONS_FORCE_SIDE_TABLE=1 swift test --skip-build --filter OperationsBehaviourTests
import Glibc
import Synchronization

/// The state bits of one operation (`Operation.State`), with the `Atomic<UInt32>` calls the
/// operation uses, each one atomic operation on `Operation.stateWord` with the order given.
/// The reference part changes once at most, from the task to the extras
/// (`Operation.makeExtrasLocked`); these calls keep whatever it is.
struct OperationStateBits {
    /// Where the state bits start in the word.
    static let shift: UInt = 48
    /// The reference part of the word.
    static let lowMask: UInt = (1 << shift) - 1
    /// Bit 0 of a reference part: it leads to the operation's extras rather than its task.
    static let extrasMark: UInt = 1
    /// Bit 1 of a reference part (with bit 0): the extras' address is in a side-table slot.
    static let slotMark: UInt = 2
    /// Where a slot's index starts in a reference part.
    static let slotShift: UInt = 4
    /// The largest slot index a reference part holds (2^44 - 1).
    static let maxSlotIndex: UInt = lowMask >> slotShift
    /// The bits of an address that does not fit in a reference part as it is: any above bit
    /// 47 (a tag, or a wider address) and the low four (the marks; heap blocks are 16-byte
    /// aligned, so none is set in practice).
    static let unfitBits: UInt = ~lowMask | 0xF
    /// `rejectMask` while every operation is sent to the side table: every object's address
    /// (16 or above) has one of these bits.
    static let forcedRejectMask: UInt = ~0xF

    /// Addresses with any of these bits set do not go in the word as they are: `unfitBits`, or
    /// `forcedRejectMask` while forced; all bits until the first slow path configures it (it
    /// reads OPERATIONS_FORCE_SIDE_TABLE then). Relaxed: each value only picks one of two
    /// correct forms. A constant initialiser, so reading it is one load (no lazy global).
    static let rejectMask = Atomic<UInt>(UInt.max)

    /// What a reference part says.
    enum Reference: Equatable {
        /// The core task's address.
        case task(UInt)
        /// The extras' address.
        case extras(UInt)
        /// The index of the side-table slot that holds the extras' address.
        case slot(UInt)
    }

    /// The reference part for `reference`, whose address must fit (`unfitBits`).
    static func part(_ reference: Reference) -> UInt {
        switch reference {
        case .task(let address):
            precondition(address & unfitBits == 0, "Operations: a task address that does not fit in a state word")
            return address
        case .extras(let address):
            precondition(address & unfitBits == 0, "Operations: an extras address that does not fit in a state word")
            return address | extrasMark
        case .slot(let index):
            precondition(index <= maxSlotIndex, "Operations: a side-table index that does not fit in a state word")
            return index << slotShift | slotMark | extrasMark
        }
    }

    /// What the reference part of `word` says (any state bits are ignored).
    @inline(__always)
    static func reference(in word: UInt) -> Reference {
        let part = word & lowMask
        if part & extrasMark == 0 { return .task(part) }
        if part & slotMark == 0 { return .extras(part & ~extrasMark) }
        return .slot(part >> slotShift)
    }

    /// The core task in a state word (loaded with acquiring order, so the extras' fields, and
    /// the side-table slot, are visible when the word leads to them).
    @inline(__always)
    static func task(in word: UInt) -> OpaquePointer {
        if case .task(let address) = reference(in: word) {
            return OpaquePointer(bitPattern: address).unsafelyUnwrapped
        }
        return extrasReference(in: word).unsafelyUnwrapped._withUnsafeGuaranteedRef { $0.task }
    }

    /// The extras in a state word, if it leads to them.
    @inline(__always)
    static func extras(in word: UInt) -> OperationExtras? {
        extrasReference(in: word)?.takeUnretainedValue()
    }

    /// The extras a state word leads to (the word holds one reference on them), or nil.
    @inline(__always)
    static func extrasReference(in word: UInt) -> Unmanaged<OperationExtras>? {
        let address: UInt
        switch reference(in: word) {
        case .task: return nil
        case .extras(let direct): address = direct
        case .slot(let index): address = sideTableValue(at: index)
        }
        return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: address).unsafelyUnwrapped)
    }

    /// The value of a side-table slot: out of line, so the callers that inline the common
    /// forms stay small.
    @inline(never)
    static func sideTableValue(at index: UInt) -> UInt { OperationSideTable.shared.value(at: index) }

    // MARK: Packing

    /// Whether `address` goes in the word as it is, for a reject mask (`unfitBits`, or
    /// `forcedRejectMask` while forced).
    @inline(__always)
    static func fits(_ address: UInt, rejecting mask: UInt) -> Bool { address & mask == 0 }

    /// Whether `address` goes in the word as it is: in the common case, always.
    @inline(__always)
    static func fits(_ address: UInt) -> Bool {
        // relaxed: see rejectMask.
        fits(address, rejecting: rejectMask.load(ordering: .relaxed))
    }

    /// `fits`, after reading OPERATIONS_FORCE_SIDE_TABLE if no call did yet (the slow path).
    static func fitsConfigured(_ address: UInt) -> Bool {
        fits(address, rejecting: configuredRejectMask())
    }

    /// `rejectMask`, set from the environment first if nothing set it yet.
    static func configuredRejectMask() -> UInt {
        // relaxed: see rejectMask.
        let mask = rejectMask.load(ordering: .relaxed)
        if mask != UInt.max { return mask }
        let wanted = forcedByEnvironment ? forcedRejectMask : unfitBits
        let (exchanged, original) = rejectMask.compareExchange(expected: UInt.max, desired: wanted, ordering: .relaxed)
        return exchanged ? wanted : original
    }

    /// Whether OPERATIONS_FORCE_SIDE_TABLE asks for the side table for every operation. Spelt
    /// as the core's switches (env.c): on, 1, true, yes, enable, enabled or off, 0, false, no,
    /// disable, disabled, in any case; any other value keeps the default (off) with one line on
    /// stderr.
    static let forcedByEnvironment: Bool = {
        let name = "OPERATIONS_FORCE_SIDE_TABLE"
        guard let raw = getenv(name) else { return false }
        let text = String(cString: raw)
        let value = text.lowercased().filter { !$0.isWhitespace }
        if value.isEmpty || ["off", "0", "false", "no", "disable", "disabled"].contains(value) { return false }
        if ["on", "1", "true", "yes", "enable", "enabled"].contains(value) { return true }
        let message = "operations: \(name)=\"\(text)\" is not recognised; accepted (any case): off, 0, false, no, disable, disabled, or on, 1, true, yes, enable, enabled. Using the default (off).\n"
        message.withCString { _ = Glibc.write(2, $0, strlen($0)) }
        return false
    }()

    /// Test hook: sends every operation created from now on to the side table (`true`), or only
    /// those whose addresses need it (`false`). Returns whether it was forced before. Operations
    /// created before keep their form; both forms may live side by side.
    @discardableResult
    static func setSideTableForced(_ forced: Bool) -> Bool {
        _ = configuredRejectMask()
        // relaxed: see rejectMask.
        let old = rejectMask.exchange(forced ? forcedRejectMask : unfitBits, ordering: .relaxed)
        return old == forcedRejectMask
    }

    /// The reference part for a new operation's core task: the task itself when it fits, or
    /// else its extras, made now to hold the task's full pointer.
    @inline(__always)
    static func initialPart(task: OpaquePointer) -> UInt {
        let address = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(task)))
        if fits(address) { return address }
        return initialPartOutOfLine(task: task)
    }

    @inline(never)
    static func initialPartOutOfLine(task: OpaquePointer) -> UInt {
        let address = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(task)))
        if fitsConfigured(address) { return part(.task(address)) }
        // The word's reference, dropped by the operation's deinit.
        return extrasPart(Unmanaged.passRetained(OperationExtras(task: task)))
    }

    /// The reference part for `extras`, taking over the reference passed: their address, or
    /// else a side-table slot holding it.
    static func extrasPart(_ extras: Unmanaged<OperationExtras>) -> UInt {
        let address = UInt(bitPattern: Int(bitPattern: extras.toOpaque()))
        if fitsConfigured(address) { return part(.extras(address)) }
        return part(.slot(OperationSideTable.shared.take(address)))
    }

    /// Gives back the side-table slot of a state word that has one (from deinit, once nothing
    /// reads the word any more).
    static func releaseSlot(of word: UInt) {
        if case .slot(let index) = reference(in: word) { OperationSideTable.shared.giveBack(index) }
    }

    // MARK: State bits

    /// The state bits of a word.
    @inline(__always)
    static func bits(in word: UInt) -> UInt32 { UInt32(truncatingIfNeeded: word >> shift) }

    /// The operand that ORs `bits` into a word: nothing in its reference part.
    @inline(__always)
    static func orOperand(_ bits: UInt32) -> UInt { UInt(bits & 0xFFFF) << shift }

    /// The operand that ANDs `mask` into a word: all ones in its reference part.
    @inline(__always)
    static func andOperand(_ mask: UInt32) -> UInt { (UInt(mask & 0xFFFF) << shift) | lowMask }

    /// A word of state `bits` and reference part `part`.
    @inline(__always)
    static func word(bits: UInt32, part: UInt) -> UInt { (UInt(bits & 0xFFFF) << shift) | (part & lowMask) }

    /// The operation whose bits these are; the caller holds it. Reached through
    /// `_withUnsafeGuaranteedRef`: a plain reference would be retained around every access.
    let owner: Unmanaged<Operation>

    @inline(__always)
    init(owner: Operation) { self.owner = Unmanaged.passUnretained(owner) }

    // Atomic wants each ordering as a constant at its call: each call below switches on the
    // caller's ordering, and inlining leaves only the branch the caller named.

    @inline(__always)
    func load(ordering: AtomicLoadOrdering) -> UInt32 {
        let value = owner._withUnsafeGuaranteedRef { operation -> UInt in
            switch ordering {
            case .relaxed: operation.stateWord.load(ordering: .relaxed)
            case .acquiring: operation.stateWord.load(ordering: .acquiring)
            default: operation.stateWord.load(ordering: .sequentiallyConsistent)
            }
        }
        return Self.bits(in: value)
    }

    @inline(__always)
    @discardableResult
    func bitwiseOr(_ bits: UInt32, ordering: AtomicUpdateOrdering) -> (oldValue: UInt32, newValue: UInt32) {
        let operand = Self.orOperand(bits)
        let old = owner._withUnsafeGuaranteedRef { operation -> UInt in
            switch ordering {
            case .relaxed: operation.stateWord.bitwiseOr(operand, ordering: .relaxed).oldValue
            case .acquiring: operation.stateWord.bitwiseOr(operand, ordering: .acquiring).oldValue
            case .releasing: operation.stateWord.bitwiseOr(operand, ordering: .releasing).oldValue
            case .acquiringAndReleasing: operation.stateWord.bitwiseOr(operand, ordering: .acquiringAndReleasing).oldValue
            default: operation.stateWord.bitwiseOr(operand, ordering: .sequentiallyConsistent).oldValue
            }
        }
        let oldBits = Self.bits(in: old)
        return (oldBits, oldBits | bits)
    }

    @inline(__always)
    @discardableResult
    func bitwiseAnd(_ mask: UInt32, ordering: AtomicUpdateOrdering) -> (oldValue: UInt32, newValue: UInt32) {
        let operand = Self.andOperand(mask)
        let old = owner._withUnsafeGuaranteedRef { operation -> UInt in
            switch ordering {
            case .relaxed: operation.stateWord.bitwiseAnd(operand, ordering: .relaxed).oldValue
            case .acquiring: operation.stateWord.bitwiseAnd(operand, ordering: .acquiring).oldValue
            case .releasing: operation.stateWord.bitwiseAnd(operand, ordering: .releasing).oldValue
            case .acquiringAndReleasing: operation.stateWord.bitwiseAnd(operand, ordering: .acquiringAndReleasing).oldValue
            default: operation.stateWord.bitwiseAnd(operand, ordering: .sequentiallyConsistent).oldValue
            }
        }
        let oldBits = Self.bits(in: old)
        return (oldBits, oldBits & mask)
    }

    /// Strong compare-and-exchange of the bits: fails only when the bits are not `expected`
    /// (a change of the reference part meanwhile is retried here).
    @inline(__always)
    func compareExchange(expected: UInt32, desired: UInt32, ordering: AtomicUpdateOrdering)
        -> (exchanged: Bool, original: UInt32)
    {
        let result = owner._withUnsafeGuaranteedRef { operation -> (exchanged: Bool, original: UInt) in
            // relaxed: only a guess at the reference part; the exchange itself checks it.
            var part = operation.stateWord.load(ordering: .relaxed) & Self.lowMask
            while true {
                let old = (UInt(expected) << Self.shift) | part
                let new = Self.word(bits: desired, part: part)
                let result: (exchanged: Bool, original: UInt)
                switch ordering {
                case .relaxed: result = operation.stateWord.compareExchange(expected: old, desired: new, ordering: .relaxed)
                case .acquiring: result = operation.stateWord.compareExchange(expected: old, desired: new, ordering: .acquiring)
                case .releasing: result = operation.stateWord.compareExchange(expected: old, desired: new, ordering: .releasing)
                case .acquiringAndReleasing:
                    result = operation.stateWord.compareExchange(expected: old, desired: new, ordering: .acquiringAndReleasing)
                default:
                    result = operation.stateWord.compareExchange(expected: old, desired: new, ordering: .sequentiallyConsistent)
                }
                if result.exchanged || result.original >> Self.shift != UInt(expected) { return result }
                part = result.original & Self.lowMask // only the reference part moved: again
            }
        }
        return (result.exchanged, Self.bits(in: result.original))
    }
}
