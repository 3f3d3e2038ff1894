// OperationSideTable.swift — full 64-bit addresses for the state words that cannot hold theirs
// (an operation's extras at an address with high bits set: a tagged pointer, or one above 2^48;
// see OperationStateBits.swift). Unused on x86_64 and untagged aarch64, where no address needs it.
import Glibc
import Synchronization

/// Slots of full-width addresses, named by index. A slot is taken for one operation's extras
/// (their address carries the state word's reference on them) when the word is set, and given
/// back by the operation's deinit; its value does not change in between. Readers take no lock:
/// the index reached them through the state word, written after the slot (with releasing
/// order, or before the operation was shared), and the chunk holding a slot never moves or goes.
final class OperationSideTable: @unchecked Sendable {
    static let shared = OperationSideTable()

    /// Slots in the first chunk; chunk k holds `firstChunkSlots << k`.
    static let firstChunkSlots: UInt = 64
    /// Chunks: 64 × (2^38 − 1) slots in all, as many as the 44-bit index of a state word names.
    static let chunkCount = 38
    /// The number of slots there can be.
    static let capacity: UInt = firstChunkSlots * ((1 << UInt(chunkCount)) - 1)

    /// Where slot `index` is: its chunk, and its offset in that chunk. Chunk k starts at index
    /// 64 × (2^k − 1).
    static func location(of index: UInt) -> (chunk: Int, offset: UInt) {
        let sizeInFirstChunks = index / firstChunkSlots + 1 // in [2^k, 2^(k+1)) for chunk k
        let chunk = UInt.bitWidth - 1 - sizeInFirstChunks.leadingZeroBitCount
        return (chunk, index - firstChunkSlots * ((1 << UInt(chunk)) - 1))
    }

    /// Chunk k's slots, as the address of its first (0 until the chunk is made).
    private let chunks: UnsafeMutablePointer<Atomic<UInt>>
    /// Guards `freeSlots`, `nextUnused` and the making of chunks. A pthread mutex, for
    /// ThreadSanitizer (see Lock.swift).
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Slots given back, taken again first.
    private var freeSlots: [UInt] = []
    /// The first slot never taken.
    private var nextUnused: UInt = 0

    /// A table of its own (the tests make some; the operations share `shared`).
    init() {
        chunks = .allocate(capacity: Self.chunkCount)
        for chunk in 0..<Self.chunkCount { (chunks + chunk).initialize(to: Atomic(0)) }
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        for chunk in 0..<Self.chunkCount {
            // relaxed: the table's last owner is the only thread here.
            let base = chunks[chunk].load(ordering: .relaxed)
            if base == 0 { continue }
            let slots = UnsafeMutablePointer<Atomic<UInt>>(bitPattern: base).unsafelyUnwrapped
            slots.deinitialize(count: Int(Self.firstChunkSlots << UInt(chunk)))
            slots.deallocate()
        }
        chunks.deinitialize(count: Self.chunkCount)
        chunks.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Puts `value` in a free slot and returns the slot's index.
    func take(_ value: UInt) -> UInt {
        pthread_mutex_lock(mutex)
        let index: UInt
        if let free = freeSlots.popLast() {
            index = free
        } else {
            index = nextUnused
            precondition(index < Self.capacity, "Operations: the side table of state words is full")
            nextUnused += 1
            let (chunk, offset) = Self.location(of: index)
            // relaxed: made and read under the mutex here.
            if offset == 0 && chunks[chunk].load(ordering: .relaxed) == 0 {
                let count = Int(Self.firstChunkSlots << UInt(chunk))
                let slots = UnsafeMutablePointer<Atomic<UInt>>.allocate(capacity: count)
                for slot in 0..<count { (slots + slot).initialize(to: Atomic(0)) }
                // releasing: a reader that finds the chunk sees its slots initialised.
                chunks[chunk].store(UInt(bitPattern: Int(bitPattern: slots)), ordering: .releasing)
            }
        }
        pthread_mutex_unlock(mutex)
        // relaxed: the slot is ours; its readers get the index later, through an ordered write.
        slot(index).pointee.store(value, ordering: .relaxed)
        return index
    }

    /// The value in slot `index`, taken and not given back.
    @inline(__always)
    func value(at index: UInt) -> UInt {
        // relaxed: see the type's comment.
        slot(index).pointee.load(ordering: .relaxed)
    }

    /// Gives slot `index` back for another value; nothing reads it any more.
    func giveBack(_ index: UInt) {
        // relaxed: a stale read would find nothing rather than an old value (for debugging).
        slot(index).pointee.store(0, ordering: .relaxed)
        pthread_mutex_lock(mutex)
        freeSlots.append(index)
        pthread_mutex_unlock(mutex)
    }

    /// The slots taken and not given back.
    var slotsInUse: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return Int(nextUnused) - freeSlots.count
    }

    /// Slot `index`, in a chunk that exists.
    @inline(__always)
    private func slot(_ index: UInt) -> UnsafeMutablePointer<Atomic<UInt>> {
        let (chunk, offset) = Self.location(of: index)
        // acquiring: pairs with the releasing store that made the chunk.
        let base = chunks[chunk].load(ordering: .acquiring)
        return UnsafeMutablePointer<Atomic<UInt>>(bitPattern: base).unsafelyUnwrapped + Int(offset)
    }
}
