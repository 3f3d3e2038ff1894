// Imports.swift — every file of the implementation sees Foundation (and with it Dispatch).
//
// This module declares `Operation`, `BlockOperation`, `OperationQueue` and `QualityOfService`
// beside Foundation's; inside it, and in a file that imports it alone, its own declarations win.
// Users do not import it: they import `Operations` (Sources/Operations/Exports.swift), the facade
// that makes these four names ours also in files that import Foundation or XCTest. A file that
// imports this module directly beside Foundation finds both declarations ambiguous
// (Tests/Fixtures/ImportRoutes/ImplementationBesideFoundation.swift).
@_exported import Foundation
