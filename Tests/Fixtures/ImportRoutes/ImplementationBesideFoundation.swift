// Must not compile: the implementation module imported directly, beside Foundation. It declares
// the four types as Foundation does, without the facade's scoped re-exports, so both are
// visible and this initializer call is ambiguous. Clients import Operations (the product's
// module), never OperationsImplementation; if a compiler resolves this, the facade may no longer
// be needed (update Sources/Operations/Exports.swift and "Moving from Foundation").
import Foundation
import OperationsImplementation

func makeQueue() -> AnyObject { OperationQueue() }
