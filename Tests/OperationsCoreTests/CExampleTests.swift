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

    /// A program linked against a static archive of the core pulls in only the object files it
    /// references. The dependency graph's hooks were installed by a constructor in
    /// dependencies.o, which a program that calls nothing there never linked: its first task
    /// crashed (a NULL hook table). The hooks are now a table that drain.o references.
    @Test func staticArchiveLinksTheGraphHooks() async throws {
        let directory = try makeScratchDirectory("static-archive")
        defer { try? FileManager.default.removeItem(at: directory) }
        let archive = try await Self.buildStaticArchive(in: directory)
        // Submits with op_queue_submit_f and waits: nothing of dependencies.c by name.
        let program = """
            #include <operations_core.h>
            #include <stdatomic.h>
            #include <stdio.h>
            static atomic_int ran;
            static void body(void *context) { (void)context; atomic_fetch_add(&ran, 1); }
            int main(void) {
                op_queue_t *queue = op_queue_create("static", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
                for (int i = 0; i < 100; i++) op_queue_submit_f(queue, body, NULL);
                if (op_queue_wait(queue, 10000000000LL) != 0) return 1;
                printf("ran=%d\\n", atomic_load(&ran));
                op_queue_release(queue);
                return atomic_load(&ran) == 100 ? 0 : 1;
            }
            """
        let source = directory.appendingPathComponent("program.c")
        try program.write(to: source, atomically: true, encoding: .utf8)
        let binary = directory.appendingPathComponent("program").path
        let link = await runChild("cc", ["-std=gnu11", "-I\(PackageLayout.coreInclude)", source.path, archive,
                                         "-lnuma", "-lpthread", "-lm", "-o", binary], environment: childEnvironment(), seconds: 120)
        try #require(link.succeeded, "linking against the static archive:\n\(link)")
        let run = await runChild(binary, [], environment: childEnvironment(), seconds: 30, backtraceOnTimeout: true)
        #expect(!run.timedOut && run.exitCode == 0, "a program linked against liboperations_core.a failed:\n\(run)")
        #expect(run.stdout.contains("ran=100"), "\(run)")
    }

    /// Compiles every core source on its own and archives the objects: liboperations_core.a as
    /// a C program links it (only the members it references are pulled in, after its own
    /// objects). Returns the archive's path.
    private static func buildStaticArchive(in directory: URL) async throws -> String {
        var objects: [String] = []
        for source in PackageLayout.coreSources {
            let object = directory.appendingPathComponent(URL(fileURLWithPath: source).lastPathComponent + ".o").path
            let build = await runChild("cc", ["-std=gnu11", "-O1", "-D_GNU_SOURCE", "-I\(PackageLayout.coreInclude)", "-c", source, "-o", object],
                                       environment: childEnvironment(), seconds: 120)
            try #require(build.succeeded, "compiling \(source):\n\(build)")
            objects.append(object)
        }
        let archive = directory.appendingPathComponent("liboperations_core.a").path
        let ar = await runChild("ar", ["rcs", archive] + objects, environment: childEnvironment())
        try #require(ar.succeeded, "ar:\n\(ar)")
        return archive
    }

    /// An application's fork handler registered in its own constructor, in a program linked
    /// against the static archive: the application's constructors come first in link order, so
    /// the core's handlers (a constructor of priority 101) must still be registered before it,
    /// or the application's prepare handler, which uses the core, runs after the core's took its
    /// locks and fork() deadlocks (found by review; the probe hung without the priority).
    @Test func staticArchiveRegistersTheForkHandlersBeforeTheApplications() async throws {
        let directory = try makeScratchDirectory("static-archive-fork")
        defer { try? FileManager.default.removeItem(at: directory) }
        let archive = try await Self.buildStaticArchive(in: directory)
        let probe = PackageLayout.probesDirectory.appendingPathComponent("fork_handler_order_probe.c").path
        let binary = directory.appendingPathComponent("fork_handler_order_probe").path
        let link = await runChild("cc", ["-std=gnu11", "-I\(PackageLayout.coreInclude)", probe, archive,
                                         "-lnuma", "-lpthread", "-lm", "-o", binary], environment: childEnvironment(), seconds: 120)
        try #require(link.succeeded, "linking the probe against the static archive:\n\(link)")
        let run = await runChild(binary, [], environment: childEnvironment(), seconds: 30, backtraceOnTimeout: true)
        try #require(!run.timedOut, "fork() deadlocked in the prepare handlers (static link):\n\(run)")
        #expect(run.values["fork_returned"] == "1" && run.values["child_exit"] == "0", "\(run)")
        #expect(run.exitCode == 0, "\(run)")
    }
}
