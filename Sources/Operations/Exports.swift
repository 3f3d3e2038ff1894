// Exports.swift — `import Operations` is the one import a file needs: it brings Foundation too.
//
// Swift resolves a name that a module declares itself and also re-exports from a module it
// imports to the module's own declaration (checked by Tests/OperationsTests/ImportRouteTests):
// in a file that imports Operations and not Foundation, `OperationQueue`, `Operation`,
// `BlockOperation` and `QualityOfService` are ours, and `Date`, `URL`, `NSLock`, `Progress`,
// `NotificationCenter` and the rest of Foundation (with Dispatch) are Foundation's. A file that
// imports Foundation as well (directly, or through a module that re-exports it, like XCTest)
// sees both declarations and calls them ambiguous; there scoped imports
// (`import class Operations.OperationQueue`) pick ours. See "Moving from Foundation" in the
// documentation catalog.
@_exported import Foundation
