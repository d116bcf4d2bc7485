import Foundation
import Testing
import TestSupport

/// What the command line can tell from its arguments alone it says before it opens a database
/// (or starts a local one): a malformed experiment file, a report file that cannot be written,
/// an empty path. Here the database never answers (port 1), so an answer naming the database
/// would show the check came too late, and one that does not shows a valid value got past it.
@Suite("engage command line: checks before the database")
struct CommandLineEarlyChecksTests {
    static let nowhere = "postgresql://engage@127.0.0.1:1/engage?connect_timeout=2"

    @Test(.timeLimit(.minutes(2)))
    func anExperimentFileIsCheckedBeforeTheDatabase() async throws {
        let workspace = try FaultWorkspace("cli-early-experiment")
        defer { workspace.remove() }
        try Data(#"{"id": "broken", "arms": ["#.utf8).write(to: URL(fileURLWithPath: workspace.file("broken.json")))
        let broken = try await CommandLineOptionsTests.engage(
            ["experiment", "create", "--file", workspace.file("broken.json"), "--database", Self.nowhere], in: workspace)
        #expect(broken.status == 1)
        #expect(broken.output.hasPrefix("error: the definition is invalid:\n"), "\(broken.output)")
        #expect(!broken.output.contains("could not be reached"), "\(broken.output)")

        // A check made only at creation (an alpha below the smallest the analysis can resolve).
        let tiny = #"{"id":"tiny","app_id":"app","alpha":1e-12,"arms":[{"name":"control","strategy":"full","weight":0.5,"control":true},"#
            + #"{"name":"thumbnail","strategy":"thumbnail","weight":0.5}],"primary_metric":"open"}"#
        try Data(tiny.utf8).write(to: URL(fileURLWithPath: workspace.file("tiny.json")))
        let tooSmall = try await CommandLineOptionsTests.engage(
            ["experiment", "create", "--file", workspace.file("tiny.json"), "--database", Self.nowhere], in: workspace)
        #expect(tooSmall.status == 1)
        #expect(tooSmall.output.hasPrefix("error: the definition is invalid:\n  alpha: "), "\(tooSmall.output)")
    }

    /// A file the report can be written to passes the check: a relative one (in the current
    /// directory), an existing device. The database is what then fails.
    @Test(.timeLimit(.minutes(2)), arguments: ["report.html", "/dev/null"])
    func aWritableReportFileGetsPastTheCheck(file: String) async throws {
        let workspace = try FaultWorkspace("cli-early-output")
        defer { workspace.remove() }
        let answer = try await CommandLineOptionsTests.engage(["report", "--output", file, "--database", Self.nowhere], in: workspace)
        #expect(answer.status == 69, "\(answer.output)")
        #expect(answer.output.contains("the database could not be reached"), "\(answer.output)")
    }

    /// The check changes nothing: a link to a file not made yet stays a link, and no file appears.
    @Test(.timeLimit(.minutes(2)))
    func theCheckOfALinkToAFileNotMadeYetLeavesBothAsTheyWere() async throws {
        let workspace = try FaultWorkspace("cli-early-link")
        defer { workspace.remove() }
        try FileManager.default.createSymbolicLink(atPath: workspace.file("link.html"), withDestinationPath: workspace.file("target.html"))
        let answer = try await CommandLineOptionsTests.engage(["report", "--output", workspace.file("link.html"), "--database", Self.nowhere],
                                                              in: workspace)
        #expect(answer.status == 69, "\(answer.output)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: workspace.file("link.html")) == workspace.file("target.html"))
        #expect(!FileManager.default.fileExists(atPath: workspace.file("target.html")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: workspace.path).filter { $0.hasPrefix(".engage-write-check") }.isEmpty)
    }

    @Test(.timeLimit(.minutes(2)), arguments: [
        (["report", "--output", "/nonexistent-engage-dir/report.html"], "option '--output': cannot write"),
        (["report", "--output", ""], "option '--output'"),
        (["log", "prune", "--older-than", "90d", "--archive", ""], "option '--archive'"),
        (["db", "status", "--data-dir", ""], "option '--data-dir'"),
        // Permission bits pass anything for root: the file is opened to be sure.
        (["report", "--output", "/proc/engage-report.html"], "option '--output': cannot write"),
        // A directory that takes files may still refuse the name: longer than a name may be.
        (["report", "--output", "/tmp/" + String(repeating: "r", count: 300) + ".html"], "option '--output': cannot write"),
        (["bench", "ingest", "--key", "k", "--latencies", "/tmp/" + String(repeating: "l", count: 300)], "option '--latencies': cannot write"),
        // An id no experiment can have, a restore of no archive: refused before any connection.
        (["experiment", "show", "Not An Id!"], "argument '<id>': no experiment has this id"),
        (["experiment", "runs", ""], "argument '<id>': no experiment has this id"),
        (["experiment", "stop", String(repeating: "a", count: 101)], "argument '<id>': no experiment has this id"),
        (["log", "restore", ""], "argument '<dir>': expected a directory"),
        (["log", "restore", "/tmp"], "argument '<dir>': /tmp holds no manifest.json"),
        (["demo", "--report-file", "/proc/engage-report.html"], "option '--report-file': cannot write"),
        (["demo", "--report-file", ""], "option '--report-file'"),
        // A list entry that does not read is refused, not skipped; sizes and spreads are bounded.
        (["bench", "calibration", "--arms", "2,x"], "--arms"),
        (["bench", "report", "--sizes", "4000,99999999999999999999"], "option '--sizes'"),
        (["bench", "report", "--sizes", "9223372036854775807"], "option '--sizes'"),
        (["bench", "cuped", "--spread", "1e300"], "option '--spread'"),
        // The load's files, checked before it starts (the generator's own failure exited 1).
        (["bench", "ingest", "--key", "k", "--latencies", "/nonexistent-engage-dir/latencies.txt"], "option '--latencies': cannot write"),
        (["bench", "ingest", "--key", "k", "--latencies", ""], "option '--latencies'"),
        (["bench", "ingest", "--key", "k", "--url", "https://127.0.0.1:1", "--cacert", ""], "option '--cacert'"),
        // Swift's integer parsing takes a sign ("+1"), inet_pton does not: the load failed (exit 1).
        (["bench", "ingest", "--key", "k", "--url", "http://+1.2.3.4:8080"], "option '--url'"),
        // An empty key was sent and refused 401 (exit 1), where an empty ENGAGE_KEY was a usage error.
        (["simulate", "--key", ""], "option '--key'"),
        // From 2^62 the pre-period's seed (bit 62 set) is the seed itself: its traffic another run's.
        (["simulate", "--direct", "--seed", "4611686018427387904"], "option '--seed'"),
    ])
    func argumentsThatCannotWorkAreUsageErrors(arguments: [String], message: String) async throws {
        let workspace = try FaultWorkspace("cli-early")
        defer { workspace.remove() }
        let database = ["report", "log", "serve", "demo", "experiment"].contains(arguments[0]) ? ["--database", Self.nowhere] : []
        let answer = try await CommandLineOptionsTests.engage(arguments + database, in: workspace)
        #expect(answer.status == 64, "\(answer.output)")
        #expect(answer.output.hasPrefix("error: "), "\(answer.output)")
        #expect(answer.output.contains(message), "\(answer.output)")
    }

    /// A connection string libpq cannot read is a typing slip, not an outage (69, "try again
    /// later", which a script would retry for ever): refused as a usage error naming the option,
    /// from the command line or the environment, without repeating the value (it may hold a
    /// password).
    @Test(.timeLimit(.minutes(2)), arguments: [
        (["keys", "list", "--database", "nonsense-s3cret"], [:], "option '--database':"),
        (["keys", "list", "--database", "postgresql://u:s3cret@h:notaport/db"], [:], "option '--database':"),
        (["keys", "list", "--database", "postgresql://u:s3cret@h:99999/db"], [:], "option '--database':"),
        (["report"], ["ENGAGE_DATABASE_URL": "host='s3cret"], "option '--database' (from ENGAGE_DATABASE_URL):"),
        (["report", "--database", CommandLineEarlyChecksTests.nowhere, "--read-database", "postgresql://h:0/db?password=s3cret"], [:], "option '--read-database':"),
    ])
    func anUnreadableConnectionStringIsAUsageError(arguments: [String], environment: [String: String], message: String) async throws {
        let workspace = try FaultWorkspace("cli-connection-string")
        defer { workspace.remove() }
        let answer = try await CommandLineOptionsTests.engage(arguments, environment: environment, in: workspace)
        #expect(answer.status == 64, "\(answer.output)")
        #expect(answer.output.hasPrefix("error: invalid value for \(message.dropLast()): expected a PostgreSQL connection"),
                "\(answer.output)")
        #expect(!answer.output.contains("s3cret"), "\(answer.output)")
    }

    /// A value echoed in a message reaches the terminal without its control characters: an
    /// argument could otherwise retitle the window, move the cursor or hide the rest of the line.
    @Test(.timeLimit(.minutes(2)))
    func controlCharactersOfAnEchoedValueAreShownNotSent() async throws {
        let workspace = try FaultWorkspace("cli-controls")
        defer { workspace.remove() }
        let answer = try await CommandLineOptionsTests.engage(["report", "--since", "\u{1B}]0;pwn\u{07}\r", "--database", Self.nowhere],
                                                              in: workspace)
        #expect(answer.status == 64, "\(answer.output)")
        #expect(answer.output.contains("option '--since'"), "\(answer.output)")
        #expect(!answer.output.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "\(answer.output.debugDescription)")
        #expect(answer.output.contains(#"\u{1B}]0;pwn\u{7}\u{D}"#), "\(answer.output.debugDescription)")
    }
}
