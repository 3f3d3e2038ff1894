// A networking file: `import OperationsNetworking` (it re-exports Operations, and with it
// Foundation, and FoundationNetworking): URLSession takes this package's queue as its delegate
// queue (item 4), and `nil` or `.main` still go to Foundation's initializer.
import OperationsNetworking

final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        print(data.count, OperationQueue.current as Any)
    }
}

func makeSessions(queue: OperationQueue = OperationQueue()) -> [URLSession] {
    queue.maxConcurrentOperationCount = 1
    let session = URLSession(configuration: .ephemeral, delegate: Delegate(), delegateQueue: queue)
    session.delegateQueue.addOperation { print("on the delegate queue") }
    let delegateQueue: OperationQueue? = session.delegateQueue.operationsQueue
    _ = delegateQueue
    let plain = URLSession(configuration: .default, delegate: nil, delegateQueue: nil)
    let main = URLSession(configuration: .default, delegate: nil, delegateQueue: .main)
    return [session, plain, main]
}
