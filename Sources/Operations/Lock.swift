// Lock.swift — the lock for the rare state off the hot path (names, dependency lists, completion
// blocks, observers). A pthread mutex, because ThreadSanitizer on this toolchain does not see
// Synchronization.Mutex; striped by object so an operation costs no lock allocation of its own.
import Glibc

/// A fixed table of pthread mutexes; an object uses the one its identity hashes to.
/// Critical sections are short and never call out to user code.
final class StripedLock: @unchecked Sendable {
    static let shared = StripedLock()

    /// How many stripes there are (a power of two).
    static let stripeCount = 64

    private let mutexes: UnsafeMutablePointer<pthread_mutex_t>

    /// The stripe of the object at `pointer`: its address, without Hasher (SipHash is far too
    /// slow for this). Heap objects are 16-byte aligned, so the low bits carry nothing; mix a
    /// few higher ones in.
    @inline(__always)
    static func stripe(forAddress pointer: UnsafeMutableRawPointer) -> Int {
        let address = UInt(bitPattern: pointer)
        return Int(truncatingIfNeeded: (address >> 4) ^ (address >> 10)) & (stripeCount - 1)
    }

    private init() {
        mutexes = .allocate(capacity: Self.stripeCount)
        for index in 0..<Self.stripeCount { pthread_mutex_init(mutexes + index, nil) }
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
        let mutex = mutexes + Self.stripe(forAddress: pointer)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
