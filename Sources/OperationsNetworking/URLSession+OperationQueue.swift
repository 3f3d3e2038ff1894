// URLSession+OperationQueue.swift — URLSession with this package's queue as its delegate queue.
// A module of its own: FoundationNetworking links libcurl and the libraries it needs, which a
// program that imports only Operations should not have to load.
@_exported import FoundationNetworking
@_exported import Operations

extension URLSession {
    /// A session whose delegate callbacks (and completion handlers) run on `queue`, one at a
    /// time and in order: Foundation's `init(configuration:delegate:delegateQueue:)` with this
    /// package's queue.
    ///
    /// The session keeps `queue.foundationQueue` (``Operations/OperationQueue/foundationQueue``),
    /// a Foundation queue that forwards each callback to `queue` once the previous one finished,
    /// so the order holds even on a concurrent queue. `delegateQueue`, a Foundation API, returns
    /// that Foundation queue: `session.delegateQueue.addOperation { … }` runs on `queue` in
    /// order with the callbacks, and `session.delegateQueue.operationsQueue` is `queue`. With
    /// `queue` nil, the session makes a serial Foundation queue of its own, as Foundation does.
    ///
    /// Disfavoured, so a call with `delegateQueue: nil` or `.main` still goes to Foundation's
    /// own initializer.
    @_disfavoredOverload
    public convenience init(configuration: URLSessionConfiguration, delegate: (any URLSessionDelegate)?,
                            delegateQueue queue: Operations.OperationQueue?) {
        self.init(configuration: configuration, delegate: delegate, delegateQueue: queue?.foundationQueue)
    }
}
