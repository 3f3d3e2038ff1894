// Lock.swift — the lock for the rare state off the hot path (names, dependency lists, completion
// blocks, observers). A pthread mutex, because ThreadSanitizer on this toolchain does not see
// Synchronization.Mutex; striped by object so an operation costs no lock allocation of its own.
import Glibc

/// A fixed table of pthread mutexes; an object uses the one its identity hashes to.
/// Critical sections are short and never call out to user code. Each mutex has a cache line of
/// its own: packed (40 bytes each), threads locking neighbouring stripes would move one line
/// between their CPUs at every lock and unlock. (On 2 CPUs W1-W6 showed no difference either
/// way, within the noise of 4 alternating runs; the unlock in `Operation`'s deinit is 6 % of
/// W6's samples.)
final class StripedLock: @unchecked Sendable {
    static let shared = StripedLock(stripes: 64)

    /// Bytes from one mutex to the next: a cache line (64 bytes; a mutex is 40).
    private static let stride = 64
    private let storage: UnsafeMutableRawPointer
    private let mask: Int

    private init(stripes: Int) {
        precondition(MemoryLayout<pthread_mutex_t>.size <= Self.stride)
        storage = .allocate(byteCount: stripes * Self.stride, alignment: Self.stride)
        mask = stripes - 1
        for index in 0..<stripes { pthread_mutex_init(mutex(at: index), nil) }
    }

    @inline(__always)
    private func mutex(at index: Int) -> UnsafeMutablePointer<pthread_mutex_t> {
        (storage + index * Self.stride).assumingMemoryBound(to: pthread_mutex_t.self)
    }

    /// Runs `body` holding the stripe of `object`. `body` must not take another stripe.
    @inline(__always)
    func withLock<T>(for object: AnyObject, _ body: () throws -> T) rethrows -> T {
        try withLock(forAddress: Unmanaged.passUnretained(object).toOpaque(), body)
    }

    /// The same stripe as `withLock(for:)` of the object at `address` (for a deinit, which must
    /// not pass `self` on as a reference).
    @inline(__always)
    func withLock<T>(forAddress pointer: UnsafeMutableRawPointer, _ body: () throws -> T) rethrows -> T {
        // The object's address, without Hasher (SipHash is far too slow for this): heap objects
        // are 16-byte aligned, so the low bits carry nothing; mix a few higher ones in.
        let address = UInt(bitPattern: pointer)
        let index = Int(truncatingIfNeeded: (address >> 4) ^ (address >> 10))
        let mutex = mutex(at: index & mask)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
