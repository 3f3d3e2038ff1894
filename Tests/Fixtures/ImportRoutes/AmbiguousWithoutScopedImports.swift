// Must not compile (the documented limit): with both modules imported as a whole, both
// OperationQueue types are visible and this initializer call is ambiguous.
import Foundation
import Operations

func makeQueue() -> AnyObject { OperationQueue() }
