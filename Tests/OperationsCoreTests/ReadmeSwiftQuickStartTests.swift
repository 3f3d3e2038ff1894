// ReadmeSwiftQuickStartTests.swift — the README's Swift quick start is the code that
// Tests/OperationsTests/ReadmeQuickStartTests.swift compiles and runs: the README's first
// ```swift block that starts with `import Operations`, less its imports, equals that file's
// regions between "// README quick start: begin" and "// README quick start: end" (each with
// its common indentation removed, joined by a blank line), and the file imports what the block
// imports.
import Foundation
import Testing

/// The bodies of the fenced blocks opened by a line "```swift" in a Markdown text.
func swiftBlocks(inMarkdown text: String) -> [String] {
    var blocks: [String] = []
    var lines: [Substring]?
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if lines == nil {
            if trimmed == "```swift" { lines = [] }
        } else if trimmed.hasPrefix("```") {
            blocks.append(lines!.joined(separator: "\n"))
            lines = nil
        } else {
            lines!.append(line)
        }
    }
    return blocks
}

/// The regions of `source` between lines "// README quick start: begin" and "… end", each
/// with its common leading indentation removed.
func quickStartRegions(inSource source: String) -> [String] {
    var regions: [[Substring]] = []
    var current: [Substring]?
    for line in source.split(separator: "\n", omittingEmptySubsequences: false) {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if trimmed == "// README quick start: begin" {
            current = []
        } else if trimmed == "// README quick start: end", let lines = current {
            regions.append(lines)
            current = nil
        } else if current != nil {
            current!.append(line)
        }
    }
    return regions.map { lines in
        let indents = lines.filter { !$0.allSatisfy(\.isWhitespace) }.map { $0.prefix { $0 == " " }.count }
        let indent = indents.min() ?? 0
        return lines.map { $0.allSatisfy(\.isWhitespace) ? "" : String($0.dropFirst(indent)) }.joined(separator: "\n")
    }
}

@Suite struct ReadmeSwiftQuickStartTests {
    @Test func regionsAndBlocksAreExtracted() {
        let markdown = "```sh\nx\n```\n```swift\nimport A\nlet a = 1\n```\n"
        #expect(swiftBlocks(inMarkdown: markdown) == ["import A\nlet a = 1"])
        let source = "x\n// README quick start: begin\nlet a = 1\n// README quick start: end\n"
            + "  // README quick start: begin\n    f()\n\n      g()\n  // README quick start: end\n"
        #expect(quickStartRegions(inSource: source) == ["let a = 1", "f()\n\n  g()"])
    }

    @Test func readmeQuickStartIsTheCodeTheTestRuns() throws {
        let readme = try String(contentsOf: PackageLayout.root.appendingPathComponent("README.md"), encoding: .utf8)
        let testFile = PackageLayout.root.appendingPathComponent("Tests/OperationsTests/ReadmeQuickStartTests.swift")
        let source = try String(contentsOf: testFile, encoding: .utf8)
        let block = try #require(swiftBlocks(inMarkdown: readme).first { $0.hasPrefix("import Operations\n") },
                                 "README.md has no ```swift block starting with `import Operations`")
        let lines = block.split(separator: "\n", omittingEmptySubsequences: false)
        let imports = lines.prefix { $0.hasPrefix("import ") || $0.isEmpty }.filter { !$0.isEmpty }
        let code = lines.dropFirst(imports.count).drop { $0.isEmpty }.joined(separator: "\n")
        for line in imports {
            #expect(source.split(separator: "\n").contains(line), "\(testFile.lastPathComponent) does not `\(line)`")
        }
        let regions = quickStartRegions(inSource: source)
        #expect(regions.count == 2, "expected two quick-start regions in \(testFile.path), found \(regions.count)")
        let tested = regions.joined(separator: "\n\n")
        #expect(code.trimmingCharacters(in: .newlines) == tested.trimmingCharacters(in: .newlines),
                "the README's Swift quick start differs from the code \(testFile.lastPathComponent) runs:\n--- README ---\n\(code)\n--- test ---\n\(tested)")
    }
}
