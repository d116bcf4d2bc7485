import EmbeddedPostgres
import Foundation
import Postgres
import Testing
import TestSupport

/// What people reach for on the command line, run as the built executable: psql with arguments,
/// the database's URL, a progress line only on a terminal, shell completion.
@Suite("engage command line details")
struct CommandLineDetailsTests {
    static func engage(_ arguments: [String], in workspace: FaultWorkspace) async throws -> (status: Int32, output: String) {
        try await CommandLineOptionsTests.engage(arguments, in: workspace)
    }

    /// `command` (a shell command line) run inside a pseudo-terminal by util-linux's script(1), so
    /// that its standard output and error are a terminal; what the terminal received.
    static func onTerminal(_ command: String, in workspace: FaultWorkspace) async throws -> (status: Int32, output: String) {
        let child = try ChildProcess(["/usr/bin/script", "--quiet", "--return", "--command", command, "/dev/null"],
                                     environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": workspace.path],
                                     outputPath: workspace.file("terminal-\(UUID().uuidString.prefix(6)).log"))
        guard let status = await child.waitForExit(timeout: .seconds(120)) else {
            child.signal(SIGKILL)
            throw FaultTestError("\(command) still runs after two minutes", log: child.output)
        }
        return (status, child.output)
    }

    static func quoted(_ words: [String]) -> String {
        words.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
    }

    @Test(.timeLimit(.minutes(2)))
    func psqlTakesArgumentsAfterTheDoubleDashAndURLPrintsTheDatabase() async throws {
        let workspace = try FaultWorkspace("db-psql")
        defer { workspace.remove() }
        let database = try TestPostgres.freshDatabase().connectionString
        let psql = try await Self.engage(["db", "psql", "--database", database, "--", "-At", "-c", "select 40 + 2", "-c", "select current_user"],
                                         in: workspace)
        #expect(psql.status == 0)
        #expect(psql.output == "42\nengage\n")
        // psql's own exit status comes back: engage became psql.
        let failing = try await Self.engage(["db", "psql", "--database", database, "--", "-v", "ON_ERROR_STOP=1", "-c", "select nonsense"],
                                            in: workspace)
        #expect(failing.status == 1)
        #expect(failing.output.contains("column \"nonsense\" does not exist"), "\(failing.output)")
        // A password reaches psql in its environment, not on its command line (anyone's to read).
        let withPassword = database.hasPrefix("postgres")
            ? database + (database.contains("?") ? "&" : "?") + "password=s3cret" : database + " password=s3cret"
        let shown = try await Self.engage(["db", "psql", "--database", withPassword, "--", "-At",
                                           "-c", #"\! tr '\0' ' ' < /proc/$PPID/cmdline; echo; printenv PGPASSWORD"#], in: workspace)
        #expect(shown.status == 0, "\(shown.output)")
        let lines = shown.output.split(separator: "\n")
        #expect(lines.count == 2 && lines[0].contains("psql") && !lines[0].contains("s3cret") && lines[1] == "s3cret", "\(shown.output)")
        let url = try await Self.engage(["db", "url", "--database", database], in: workspace)
        #expect(url.status == 0)
        #expect(url.output == database + "\n")
        let refused = try await Self.engage(["db", "psql", "--database", database, "-c", "select 1"], in: workspace)
        #expect(refused.status == 64)
        #expect(refused.output.hasPrefix("error: unknown option '-c'\nusage: engage db psql [--database <url>] [--data-dir <path>] [-- <psql-argument>...]"),
                "\(refused.output)")
    }

    @Test(.timeLimit(.minutes(3)))
    func theLocalDatabaseHasAURLOtherToolsTake() async throws {
        let workspace = try FaultWorkspace("db-url")
        defer { workspace.remove() }
        let directory = workspace.file("pg")
        let stopped = try await Self.engage(["db", "url", "--data-dir", directory], in: workspace)
        let expected = "postgresql://engage@/engage?host=\(directory.replacingOccurrences(of: "/", with: "%2F"))&port=5432"
        #expect(stopped.status == 0)
        #expect(stopped.output.hasPrefix(expected + "\n"), "\(stopped.output)")
        #expect(stopped.output.contains("note: the local PostgreSQL in \(directory) is not running; start it with: engage db start"))

        let started = try await Self.engage(["db", "start", "--data-dir", directory], in: workspace)
        #expect(started.status == 0, "\(started.output)")
        defer { _ = try? ProcessRunner.run([try! BuiltProgram.path("engage"), "db", "stop", "--data-dir", directory]) }
        let running = try await Self.engage(["db", "url", "--data-dir", directory], in: workspace)
        #expect(running.output == expected + "\n")
        let other = try await offPool {
            try ProcessRunner.run(["/usr/bin/psql", expected, "-At", "-c", "select current_database() || ' ' || count(*) from schema_migrations"])
        }
        #expect(other.status == 0, "\(other.output)")
        #expect(other.output.hasPrefix("engage "), "\(other.output)")
        let psql = try await Self.engage(["db", "psql", "--data-dir", directory, "--", "-At", "-c", "select 6 * 7"], in: workspace)
        #expect(psql.output == "42\n")
        #expect(try await Self.engage(["db", "stop", "--data-dir", directory], in: workspace).status == 0)
    }

    @Test(.timeLimit(.minutes(3)))
    func longCommandsShowProgressOnATerminalOnly() async throws {
        let workspace = try FaultWorkspace("progress")
        defer { workspace.remove() }
        let database = try TestPostgres.freshDatabase().connectionString
        let engage = try BuiltProgram.path("engage")
        let simulate = [engage, "simulate", "--direct", "--notifications", "3000", "--database", database]
        let terminal = try await Self.onTerminal(Self.quoted(simulate), in: workspace)
        #expect(terminal.status == 0, "\(terminal.output)")
        #expect(terminal.output.contains("\r\u{1B}[2Ksimulate: "), "\(terminal.output)")
        #expect(terminal.output.contains("/3,000 notifications ("), "\(terminal.output)")
        #expect(terminal.output.contains("simulated 3000 notifications:"))
        let rebuild = try await Self.onTerminal(Self.quoted([engage, "projections", "rebuild", "--database", database]), in: workspace)
        #expect(rebuild.output.contains("\r\u{1B}[2Krebuild engagement: "), "\(rebuild.output)")
        #expect(rebuild.status == 0)
        #expect(rebuild.output.contains(" events ("), "\(rebuild.output)")

        let piped = try await Self.engage(Array(simulate.dropFirst()), in: workspace)
        #expect(piped.status == 0)
        #expect(piped.output.hasPrefix("simulated 3000 notifications:"), "\(piped.output)")
        #expect(!piped.output.contains("\r") && !piped.output.contains("\u{1B}"))
        let pipedRebuild = try await Self.engage(["projections", "rebuild", "--database", database], in: workspace)
        #expect(pipedRebuild.status == 0)
        #expect(!pipedRebuild.output.contains("\r") && !pipedRebuild.output.contains("\u{1B}"), "\(pipedRebuild.output)")
    }

    @Test(.timeLimit(.minutes(2)))
    func completionScriptsCompleteTheRealCommandTree() async throws {
        let workspace = try FaultWorkspace("completion")
        defer { workspace.remove() }
        let bash = try await Self.engage(["completion", "bash"], in: workspace)
        #expect(bash.status == 0)
        try bash.output.write(toFile: workspace.file("engage.bash"), atomically: true, encoding: .utf8)
        let cases: [([String], String)] = [
            (["engage", ""], "serve demo migrate db keys report simulate project projections log experiment scheduler bench completion help"),
            (["engage", "db", ""], "start stop status psql url transaction-ids help"),
            (["engage", "log", ""], "prune restore help"),
            (["engage", "serve", "--tls-"], "--tls-cert --tls-key"),
            (["engage", "serve", "--http-event-loop", ""], "poll epoll"),
            (["engage", "completion", ""], "bash zsh --help"),
            (["engage", "projections", "rebuild", "e"], "engagement"),
        ]
        var script = "source \(workspace.file("engage.bash"))\n"
            + "t() { COMP_WORDS=(\"$@\"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _engage; echo \"${COMPREPLY[*]}\"; }\n"
        for (words, _) in cases { script += "t " + Self.quoted(words) + "\n" }
        let driver = script
        let answers = try await offPool { try ProcessRunner.run(["/bin/bash", "--norc", "--noprofile", "-c", driver]) }
        let lines = answers.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (index, (words, expected)) in cases.enumerated() {
            #expect(index < lines.count && lines[index] == expected, "\(words): \(answers.output)")
        }

        let zsh = try await Self.engage(["completion", "zsh"], in: workspace)
        #expect(zsh.output.hasPrefix("#compdef engage\n"))
        try zsh.output.write(toFile: workspace.file("_engage"), atomically: true, encoding: .utf8)
        let registered = try await offPool {
            try ProcessRunner.run(["/usr/bin/zsh", "-f", "-c",
                                   "fpath=(\(workspace.path) $fpath); autoload -U compinit && compinit -u -D; print -r -- $_comps[engage]"])
        }
        #expect(registered.output == "_engage\n")

        let fish = try await Self.engage(["completion", "fish"], in: workspace)
        #expect(fish.status == 64)
        #expect(fish.output.hasPrefix("error: unknown shell 'fish' for argument '<shell>': expected bash or zsh\nusage: engage completion <shell>"))
    }

    /// A checkout deeper than the server's socket path allows gets its default cluster under
    /// /var/tmp (named after the checkout), not a data directory `engage demo` would refuse.
    @Test func aDeepCheckoutKeepsItsClusterWhereTheSocketFits() throws {
        // A real directory anyone may enter, so that only its depth decides (run as root, an
        // unreachable checkout goes to /var/tmp anyway).
        let top = NSTemporaryDirectory() + "engage-deep-\(UUID().uuidString.prefix(8))"
        let deep = top + String(repeating: "/projects", count: 8) + "/engage"
        try FileManager.default.createDirectory(atPath: deep, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(atPath: top) }
        let shallow = EmbeddedPostgres.defaultDataDirectory(workingDirectory: top)
        #expect(shallow == top + "/.engage/postgres")
        let directory = EmbeddedPostgres.defaultDataDirectory(workingDirectory: deep)
        #expect(directory.hasPrefix("/var/tmp/engage-") && directory.hasSuffix("/postgres"), "\(directory)")
        #expect(directory == EmbeddedPostgres.defaultDataDirectory(workingDirectory: deep))
        #expect(directory != EmbeddedPostgres.defaultDataDirectory(workingDirectory: deep + "2"))
        #expect(throws: Never.self) { try EmbeddedPostgres(options: EmbeddedPostgres.Options(dataDirectory: directory, port: 65_535)) }
        #expect(throws: EmbeddedPostgresError.self) {
            try EmbeddedPostgres(options: EmbeddedPostgres.Options(dataDirectory: deep + "/.engage/postgres", port: 5432))
        }
    }
}
