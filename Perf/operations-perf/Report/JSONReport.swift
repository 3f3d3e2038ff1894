// JSONReport.swift — `--json FILE`: the whole report, every round included; and reading it back.
import Foundation

/// Writes reports as pretty-printed JSON, and reads them back (`--cpus` children's reports).
enum JSONReport {
    static func write(_ report: some Encodable, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        // Atomic (a temporary file renamed over it): `--cpus` rewrites the file after each CPU
        // count, and a run stopped mid-write must keep the last whole one.
        try encoder.encode(report).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    static func read<Report: Decodable>(_ type: Report.Type, from path: String) throws -> Report {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return try decoder.decode(type, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }
}
