// OperationStateBits.swift — an operation's one stored word (`Operation.stateWord`): its state
// bits in the top 16 bits, and in the low 48 the address of its core task or, once it has
// extras, of its extras (which hold the task), marked by bit 0. User-space addresses on Linux
// use at most 47 bits and heap blocks are 16-byte aligned, so both fit. A queued BlockOperation
// is then a 40-byte object (a 48-byte heap block instead of 64).
import Synchronization

/// The state bits of one operation (`Operation.State`), with the `Atomic<UInt32>` calls the
/// operation uses, each one atomic operation on `Operation.stateWord` with the order given.
/// The address part changes once at most, from the task to the extras
/// (`Operation.makeExtrasLocked`); these calls keep whatever it is.
struct OperationStateBits {
    /// Where the state bits start in the word.
    static let shift: UInt = 48
    /// The address part of the word (with the extras mark).
    static let lowMask: UInt = (1 << shift) - 1
    /// Marks an address part that points at the operation's extras rather than its task.
    static let extrasMark: UInt = 1

    /// The address part for `pointer`. Traps for an address above 48 bits (Linux maps none
    /// there unless a program asks for it with an mmap hint) or not 16-byte aligned.
    static func addressPart(_ pointer: UnsafeMutableRawPointer) -> UInt {
        let address = UInt(bitPattern: pointer)
        precondition(address & ~lowMask == 0 && address & 0xF == 0,
                     "Operations: \(pointer) is not a 16-byte aligned address below 2^48, as an operation's state word needs")
        return address
    }

    /// The core task in a state word (loaded with acquiring order, so the extras' fields are
    /// visible when the word points at them).
    @inline(__always)
    static func task(in word: UInt) -> OpaquePointer {
        let address = word & lowMask
        if address & extrasMark == 0 { return OpaquePointer(bitPattern: address).unsafelyUnwrapped }
        return extrasReference(address)._withUnsafeGuaranteedRef { $0.task }
    }

    /// The extras in a state word, if it points at them.
    @inline(__always)
    static func extras(in word: UInt) -> OperationExtras? {
        let address = word & lowMask
        if address & extrasMark == 0 { return nil }
        return extrasReference(address).takeUnretainedValue()
    }

    /// The extras at a marked address part (the word holds one reference on them).
    @inline(__always)
    static func extrasReference(_ address: UInt) -> Unmanaged<OperationExtras> {
        Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: address & ~extrasMark).unsafelyUnwrapped)
    }

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
        return UInt32(truncatingIfNeeded: value >> Self.shift)
    }

    @inline(__always)
    @discardableResult
    func bitwiseOr(_ bits: UInt32, ordering: AtomicUpdateOrdering) -> (oldValue: UInt32, newValue: UInt32) {
        let operand = UInt(bits & 0xFFFF) << Self.shift
        let old = owner._withUnsafeGuaranteedRef { operation -> UInt in
            switch ordering {
            case .relaxed: operation.stateWord.bitwiseOr(operand, ordering: .relaxed).oldValue
            case .acquiring: operation.stateWord.bitwiseOr(operand, ordering: .acquiring).oldValue
            case .releasing: operation.stateWord.bitwiseOr(operand, ordering: .releasing).oldValue
            case .acquiringAndReleasing: operation.stateWord.bitwiseOr(operand, ordering: .acquiringAndReleasing).oldValue
            default: operation.stateWord.bitwiseOr(operand, ordering: .sequentiallyConsistent).oldValue
            }
        }
        let oldBits = UInt32(truncatingIfNeeded: old >> Self.shift)
        return (oldBits, oldBits | bits)
    }

    @inline(__always)
    @discardableResult
    func bitwiseAnd(_ mask: UInt32, ordering: AtomicUpdateOrdering) -> (oldValue: UInt32, newValue: UInt32) {
        let operand = (UInt(mask & 0xFFFF) << Self.shift) | Self.lowMask
        let old = owner._withUnsafeGuaranteedRef { operation -> UInt in
            switch ordering {
            case .relaxed: operation.stateWord.bitwiseAnd(operand, ordering: .relaxed).oldValue
            case .acquiring: operation.stateWord.bitwiseAnd(operand, ordering: .acquiring).oldValue
            case .releasing: operation.stateWord.bitwiseAnd(operand, ordering: .releasing).oldValue
            case .acquiringAndReleasing: operation.stateWord.bitwiseAnd(operand, ordering: .acquiringAndReleasing).oldValue
            default: operation.stateWord.bitwiseAnd(operand, ordering: .sequentiallyConsistent).oldValue
            }
        }
        let oldBits = UInt32(truncatingIfNeeded: old >> Self.shift)
        return (oldBits, oldBits & mask)
    }

    /// Strong compare-and-exchange of the bits: fails only when the bits are not `expected`
    /// (a change of the address part meanwhile is retried here).
    @inline(__always)
    func compareExchange(expected: UInt32, desired: UInt32, ordering: AtomicUpdateOrdering)
        -> (exchanged: Bool, original: UInt32)
    {
        let result = owner._withUnsafeGuaranteedRef { operation -> (exchanged: Bool, original: UInt) in
            // relaxed: only a guess at the address part; the exchange itself checks it.
            var address = operation.stateWord.load(ordering: .relaxed) & Self.lowMask
            while true {
                let old = (UInt(expected) << Self.shift) | address
                let new = (UInt(desired & 0xFFFF) << Self.shift) | address
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
                address = result.original & Self.lowMask // only the address part moved: again
            }
        }
        return (result.exchanged, UInt32(truncatingIfNeeded: result.original >> Self.shift))
    }
}
