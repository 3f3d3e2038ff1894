// JSONReport.swift — `--json FILE`: the whole SuiteReport, every round included.
import Foundation

/// Writes a report as pretty-printed JSON.
enum JSONReport {
    static func write(_ report: SuiteReport, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        try encoder.encode(report).write(to: URL(fileURLWithPath: path))
    }
}
