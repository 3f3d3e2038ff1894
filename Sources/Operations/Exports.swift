// Exports.swift — the whole `Operations` module: `import Operations` is the one import a file
// needs, also in a file that imports Foundation or XCTest as well.
//
// The implementation lives in OperationsImplementation (Sources/OperationsImplementation); this
// module only re-exports it, with Foundation. Foundation declares four of its names too
// (`Operation`, `BlockOperation`, `OperationQueue`, `QualityOfService`), and a whole-module import
// of each would leave them ambiguous wherever a file sees Foundation through another import
// (`import Foundation`, `import XCTest`, which re-exports it). So:
//
// - the four are re-exported by scoped imports: a scoped import takes precedence over
//   whole-module imports, and an `@_exported` one is carried into every file that imports this
//   module, so there `OperationQueue`, `Operation.QueuePriority`, `.veryLow` and `init()` are
//   ours, whatever else the file imports;
// - the module declares each as a type alias of the implementation's type: a module's own
//   declaration wins a lookup into the module, so the scoped imports users wrote before
//   (`import class Operations.OperationQueue`) name ours. With the scoped re-exports alone such
//   an import was "ambiguous name 'OperationQueue' in module 'Operations'" (it finds Foundation's
//   through the re-export too), and in a file with one, `Operations.OperationQueue` and every
//   unqualified use of the four were ambiguous as well. The aliases are left out of the
//   documentation, which shows the classes;
// - the rest of the implementation (`TaskOperation`, `InvocationOperation`, `OperationsRuntime`,
//   the extensions of Foundation's types) and Foundation itself are re-exported whole: `Date`,
//   `URL`, `NSLock`, `Progress`, `NotificationCenter` and Dispatch stay Foundation's, and
//   `Foundation.OperationQueue` still names Foundation's queue.
//
// Tests/OperationsTests/ImportRouteTests type-checks client files of each kind in the Swift 5
// and Swift 6 language modes; Tests/SwapInTestFilesTests is such a test target; see "Moving from
// Foundation" in the documentation catalog.
@_exported import Foundation
@_exported import class OperationsImplementation.Operation
@_exported import class OperationsImplementation.BlockOperation
@_exported import class OperationsImplementation.OperationQueue
@_exported import enum OperationsImplementation.QualityOfService
@_exported import OperationsImplementation

@_documentation(visibility: internal) public typealias Operation = OperationsImplementation.Operation
@_documentation(visibility: internal) public typealias BlockOperation = OperationsImplementation.BlockOperation
@_documentation(visibility: internal) public typealias OperationQueue = OperationsImplementation.OperationQueue
@_documentation(visibility: internal) public typealias QualityOfService = OperationsImplementation.QualityOfService
