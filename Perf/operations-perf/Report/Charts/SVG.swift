// SVG.swift — a minimal SVG writer (rectangles, lines, polylines, text) and a log-scale axis;
// the charts are plain SVG text, small and readable without a chart library.
import Foundation

/// An SVG document built element by element.
struct SVGDocument {
    let width: Double
    let height: Double
    private var elements: [String] = []

    init(width: Double, height: Double) {
        self.width = width
        self.height = height
        rect(x: 0, y: 0, width: width, height: height, fill: "white")
    }

    mutating func rect(x: Double, y: Double, width: Double, height: Double, fill: String) {
        elements.append("<rect x=\"\(n(x))\" y=\"\(n(y))\" width=\"\(n(width))\" height=\"\(n(height))\" fill=\"\(fill)\"/>")
    }

    mutating func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String = "#ccc", width: Double = 1, dashed: Bool = false) {
        elements.append("<line x1=\"\(n(x1))\" y1=\"\(n(y1))\" x2=\"\(n(x2))\" y2=\"\(n(y2))\" stroke=\"\(stroke)\" "
                        + "stroke-width=\"\(n(width))\"\(dashed ? " stroke-dasharray=\"4 3\"" : "")/>")
    }

    mutating func polyline(_ points: [(Double, Double)], stroke: String, width: Double = 2) {
        let list = points.map { "\(n($0.0)),\(n($0.1))" }.joined(separator: " ")
        elements.append("<polyline points=\"\(list)\" fill=\"none\" stroke=\"\(stroke)\" stroke-width=\"\(n(width))\"/>")
        for point in points {
            elements.append("<circle cx=\"\(n(point.0))\" cy=\"\(n(point.1))\" r=\"2.5\" fill=\"\(stroke)\"/>")
        }
    }

    /// Text; `anchor` is start, middle or end.
    mutating func text(_ x: Double, _ y: Double, _ string: String, size: Double = 11, anchor: String = "start",
                       bold: Bool = false, fill: String = "#222") {
        elements.append("<text x=\"\(n(x))\" y=\"\(n(y))\" font-size=\"\(n(size))\" text-anchor=\"\(anchor)\" fill=\"\(fill)\""
                        + "\(bold ? " font-weight=\"bold\"" : "")>\(escape(string))</text>")
    }

    /// A legend row: a colour swatch and a name per entry.
    mutating func legend(x: Double, y: Double, _ entries: [(name: String, color: String)]) {
        var cursor = x
        for entry in entries {
            rect(x: cursor, y: y - 9, width: 10, height: 10, fill: entry.color)
            text(cursor + 14, y, entry.name)
            cursor += 24 + Double(entry.name.count) * 6.5
        }
    }

    var svg: String {
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(n(width))\" height=\"\(n(height))\" "
            + "viewBox=\"0 0 \(n(width)) \(n(height))\" font-family=\"Helvetica, Arial, sans-serif\">\n"
            + elements.joined(separator: "\n") + "\n</svg>\n"
    }

    func write(to path: String) throws {
        try svg.write(toFile: path, atomically: true, encoding: .utf8)
    }

    private func n(_ value: Double) -> String { Table.fixed(value, 1) }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}

/// A base-10 logarithmic axis from `low` to `high` mapped onto pixels `from` … `to`.
struct LogAxis {
    let low: Double
    let high: Double
    let from: Double
    let to: Double

    /// An axis spanning `values` rounded out to whole decades.
    init(covering values: [Double], from: Double, to: Double) {
        let finite = values.filter { $0.isFinite && $0 > 0 }
        low = pow(10, floor(log10(finite.min() ?? 1)))
        high = pow(10, ceil(log10(max(finite.max() ?? 10, low * 10))))
        self.from = from
        self.to = to
    }

    func position(_ value: Double) -> Double {
        let clamped = min(max(value, low), high)
        return from + (to - from) * (log10(clamped) - log10(low)) / (log10(high) - log10(low))
    }

    /// The decades from low to high.
    var decades: [Double] {
        stride(from: log10(low), through: log10(high), by: 1).map { pow(10, $0) }
    }
}

/// Colours and the names of units shared by every chart.
enum ChartStyle {
    static func color(_ contender: String) -> String {
        switch contender {
        case "operations": "#1f77b4"
        case "core": "#2ca02c"
        case "foundation": "#d62728"
        case "dispatch": "#7f7f7f"
        case "swift-dispatch": "#ff7f0e"
        default: "#9467bd"
        }
    }

    /// "100 ns", "10 µs", "1 s" for a value in ns.
    static func duration(_ ns: Double) -> String {
        switch ns {
        case ..<1_000: "\(Table.format(ns)) ns"
        case ..<1_000_000: "\(Table.format(ns / 1e3)) µs"
        case ..<1_000_000_000: "\(Table.format(ns / 1e6)) ms"
        default: "\(Table.format(ns / 1e9)) s"
        }
    }
}
