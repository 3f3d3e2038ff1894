// ChainRelease.swift — frees chains of operations iteratively. Every operation holds its
// dependencies (as Foundation's does), so dropping the last operation of a chain 10^5 long
// would free the chain by recursion, one stack frame per operation, and overflow the stack.
import Glibc

/// A per-thread loop that releases dependency lists one after another: an operation's deinit
/// hands its list here, and lists handed over while the loop runs wait their turn in it.
enum ChainRelease {
    /// The lists waiting on this thread, and whether its loop is running.
    private final class Pending {
        // One per thread, used by that thread only: no runtime exclusivity checks.
        @exclusivity(unchecked) var lists: [DependencyList] = []
        @exclusivity(unchecked) var draining = false
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            Unmanaged<AnyObject>.fromOpaque(pointer).release()
        }
        return key
    }()

    private static var pending: Pending {
        if let pointer = pthread_getspecific(key) {
            return Unmanaged<Pending>.fromOpaque(pointer).takeUnretainedValue()
        }
        let pending = Pending()
        pthread_setspecific(key, Unmanaged.passRetained(pending).toOpaque())
        return pending
    }

    /// Drops `list` (it is left empty: the loop must hold the only reference, or the caller's
    /// copy would free it on return, recursively again); operations it frees hand their own
    /// lists to the same loop.
    static func release(_ list: inout DependencyList) {
        let pending = self.pending
        pending.lists.append(list)
        list = DependencyList()
        if pending.draining { return }
        pending.draining = true
        while let next = pending.lists.popLast() {
            withExtendedLifetime(next) {} // freed here, at constant stack depth
        }
        pending.draining = false
    }
}
