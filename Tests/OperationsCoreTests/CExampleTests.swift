// CExampleTests.swift — the README's C example compiles against the core and runs: the first
// fenced block opened by a line "```c" in README.md, built with the system's `cc`.
import Foundation
import Glibc
import Testing

/// The body of the first ```c fenced block of a Markdown text, or nil.
func firstCBlock(inMarkdown text: String) -> String? {
    var lines: [Substring] = []
    var inside = false
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if !inside {
            if trimmed == "```c" { inside = true }
        } else if trimmed.hasPrefix("```") {
            return lines.joined(separator: "\n") + "\n"
        } else {
            lines.append(line)
        }
    }
    return nil
}

// No ProcessLock trait: the example runs in a child process.
@Suite
struct CExampleTests {
    @Test func markdownExtractionTakesTheFirstCBlockOnly() {
        let text = "# T\n```sh\necho no\n```\ntext\n```c\nint main(void) { return 0; }\n```\n```c\nsecond\n```\n"
        #expect(firstCBlock(inMarkdown: text) == "int main(void) { return 0; }\n")
        #expect(firstCBlock(inMarkdown: "```swift\nlet x = 1\n```\n") == nil)
        #expect(firstCBlock(inMarkdown: "```c\nunterminated\n") == nil)
    }

    @Test func readmeCExampleCompilesRunsAndPrintsOK() async throws {
        let readme = PackageLayout.root.appendingPathComponent("README.md")
        let text = try #require(try? String(contentsOf: readme, encoding: .utf8),
                                "no README.md at \(readme.path): the C example lives there")
        let example = try #require(firstCBlock(inMarkdown: text),
                                   "README.md has no fenced block starting with a line \"```c\" (closed by \"```\")")
        let directory = try makeScratchDirectory("readme-example")
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("example.c")
        try example.write(to: source, atomically: true, encoding: .utf8)
        let binary = directory.appendingPathComponent("example").path

        let build = await compileWithCore([source.path], output: binary)
        try #require(build.succeeded, "the README's C example does not compile:\n\(build)\n--- example.c ---\n\(example)")

        let run = await runChild(binary, [], environment: childEnvironment(), seconds: 30, backtraceOnTimeout: true)
        let hung = run.timedOut
        #expect(!hung, "the README's C example did not exit within 30 s:\n\(run)")
        #expect(run.exitCode == 0, "the README's C example failed:\n\(run)")
        #expect(run.stdout.contains("ok"), "the README's C example did not print \"ok\":\n\(run)")
    }
}
