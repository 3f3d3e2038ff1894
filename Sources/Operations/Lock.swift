// Lock.swift — the lock for the rare state off the hot path (names, dependency lists, completion
// blocks, observers). A pthread mutex, because ThreadSanitizer on this toolchain does not see
// Synchronization.Mutex; striped by object so an operation costs no lock allocation of its own.
import Glibc

/// A fixed table of pthread mutexes; an object uses the one its identity hashes to.
/// Critical sections are short and never call out to user code.
final class StripedLock: @unchecked Sendable {
    static let shared = StripedLock(stripes: 64)

    private let mutexes: UnsafeMutablePointer<pthread_mutex_t>
    private let mask: Int

    private init(stripes: Int) {
        mutexes = .allocate(capacity: stripes)
        for index in 0..<stripes { pthread_mutex_init(mutexes + index, nil) }
        mask = stripes - 1
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
        let mutex = mutexes + (index & mask)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
