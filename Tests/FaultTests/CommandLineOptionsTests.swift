import EmbeddedPostgres
import EngageAPI
import Foundation
import Testing
import TestSupport

/// engage's own option declarations, seen as an operator sees them: help, defaults, the
/// environment and refusals of the built executable.
@Suite("engage command line")
struct CommandLineOptionsTests {
    /// Runs engage with `arguments` and only PATH and `environment` set; its exit status and output
    /// (its standard error alone when `standardErrorOnly`: standard output goes to /dev/null).
    static func engage(_ arguments: [String], environment: [String: String] = [:], standardErrorOnly: Bool = false,
                       in workspace: FaultWorkspace) async throws -> (status: Int32, output: String) {
        var variables = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": workspace.path]
        variables.merge(environment) { $1 }
        let command = [try BuiltProgram.path("engage")] + arguments
        let child = try ChildProcess(standardErrorOnly ? ["/bin/sh", "-c", #"exec "$0" "$@" >/dev/null"#] + command : command,
                                     environment: variables,
                                     outputPath: workspace.file("engage-\(UUID().uuidString.prefix(6)).log"))
        guard let status = await child.waitForExit(timeout: .seconds(60)) else {
            child.signal(SIGKILL)
            throw FaultTestError("engage \(arguments.joined(separator: " ")) still runs after a minute", log: child.output)
        }
        return (status, child.output)
    }

    @Test(.timeLimit(.minutes(2)))
    func serveHelpShowsTheServersOwnDefaultsAndVariables() async throws {
        let workspace = try FaultWorkspace("cli")
        defer { workspace.remove() }
        let (status, help) = try await Self.engage(["help", "serve"], in: workspace)
        #expect(status == 0)
        let defaults = EngageServer.Configuration()
        for expected in [
            "Numeric address and port to listen on ([::1]:8080 for IPv6). (default: \(defaults.http.host):\(defaults.http.port)) (env: ENGAGE_LISTEN)",
            "HTTP daemon threads. (default: \(defaults.http.threading.threads)) (env: ENGAGE_HTTP_THREADS)",
            "(default: \(defaults.http.eventLoop.rawValue)) (env: ENGAGE_HTTP_EVENT_LOOP)",
            "Most concurrent HTTP connections. (default: \(defaults.http.maxConnections)) (env: ENGAGE_MAX_CONNECTIONS)",
            "larger ones get 431. (default: \(defaults.http.maxHeaderBytes)) (env: ENGAGE_MAX_HEADER_BYTES)",
            "before it is closed. (default: \(defaults.http.requestTimeout.components.seconds)) (env: ENGAGE_REQUEST_TIMEOUT)",
            "stays open. (default: \(defaults.http.connectionTimeout.components.seconds)) (env: ENGAGE_IDLE_TIMEOUT)",
            "besides one per committer. (default: \(defaults.poolSize)) (env: ENGAGE_POOL_SIZE)",
            "(default: \(defaults.committers)) (env: ENGAGE_COMMITTERS)",
            "before requests get 429. (default: \(defaults.queueCapacity)) (env: ENGAGE_QUEUE_CAPACITY)",
            "gets 503. (default: \(defaults.commitTimeout.components.seconds)) (env: ENGAGE_COMMIT_TIMEOUT)",
            "docs/high-availability.md). (default: \(defaults.requiredSynchronousStandbys)) (env: ENGAGE_SYNCHRONOUS_STANDBYS)",
            "too far behind. (env: ENGAGE_READ_DATABASE_URL)",
            "is not read. (default: \(defaults.readReplica.maxLag.components.seconds)) (env: ENGAGE_READ_MAX_LAG)",
            "Events per request. (default: \(defaults.ingest.limits.maxEvents)) (env: ENGAGE_MAX_EVENTS)",
            "after decompression. (default: \(defaults.ingest.maxDecompressedBytes)) (env: ENGAGE_MAX_BODY_BYTES)",
            "Size of one event. (default: \(defaults.ingest.limits.event.maxEventBytes)) (env: ENGAGE_MAX_EVENT_BYTES)",
            "(default: \(defaults.ingest.limits.event.maxPast.components.seconds / 86_400)) (env: ENGAGE_MAX_PAST_DAYS)",
            "(default: \(defaults.ingest.limits.event.maxFuture.components.seconds / 60)) (env: ENGAGE_MAX_FUTURE_MINUTES)",
            "or off. (default: off) (env: ENGAGE_RATE_LIMIT)",
            "(default: \(Int(defaults.projector.readInterval / .milliseconds(1)))) (env: ENGAGE_PROJECTOR_READ_INTERVAL)",
            "Least severe log level written: trace, debug, info, notice, warning or error. (default: info) (env: ENGAGE_LOG_LEVEL)",
            "--incremental-looks",
        ] {
            #expect(help.contains(expected), "missing: \(expected)")
        }
    }

    @Test(.timeLimit(.minutes(2)), arguments: [
        (["project", "--batch", "0"], [:],
         "error: invalid value '0' for option '--batch': expected an integer from 1 to 100000\nusage: engage project [--database <url>]"),
        (["scheduler"], ["ENGAGE_SCHEDULER_POLL": "soon"],
         "error: invalid value 'soon' for option '--poll' (from ENGAGE_SCHEDULER_POLL): expected an integer from 1 to 3600"),
        (["report", "--since", "2026-13-01"], [:], "error: invalid value '2026-13-01' for option '--since': expected a date such as 2026-11-29"),
        (["report", "--category", ""], [:],
         "error: invalid value '' for option '--category': expected a notification category such as new_photo\nusage: engage report [--database"),
        (["report", "--since", "2026-12-05", "--until", "2026-12-01"], [:],
         "error: option '--since' 2026-12-05 is after option '--until' 2026-12-01: no day lies between them\nusage: engage report [--database"),
        (["report", "--until", "0000-01-01"], [:], "error: invalid value '0000-01-01' for option '--until': expected a date such as 2026-11-29"),
        (["report"], ["ENGAGE_READ_MAX_LAG": "0"], "error: invalid value '0' for option '--read-max-lag' (from ENGAGE_READ_MAX_LAG): expected an integer from 1 to 86400"),
        (["serve", "--commit-timeout", "0"], [:], "error: invalid value '0' for option '--commit-timeout': expected an integer from 1 to 3600"),
        (["serve"], ["ENGAGE_PROJECTOR_READ_INTERVAL": "1001"],
         "error: invalid value '1001' for option '--projector-read-interval' (from ENGAGE_PROJECTOR_READ_INTERVAL): expected an integer from 0 to 1000"),
        (["project", "--projector-read-interval", "-1"], [:],
         "error: invalid value '-1' for option '--projector-read-interval': expected an integer from 0 to 1000\nusage: engage project [--database"),
        (["serve"], ["ENGAGE_SYNCHRONOUS_STANDBYS": "-1"],
         "error: invalid value '-1' for option '--synchronous-standbys' (from ENGAGE_SYNCHRONOUS_STANDBYS): expected an integer from 0 to 16"),
        (["serve"], ["ENGAGE_LISTEN": "localhost:8080"],
         "error: invalid value 'localhost:8080' for option '--listen' (from ENGAGE_LISTEN): expected a numeric IPv4 or IPv6 address and a port, such as 127.0.0.1:8080 or [::1]:8080"),
        (["serve", "--listen", "::1:8080"], [:],
         "error: invalid value '::1:8080' for option '--listen': expected a numeric IPv4 or IPv6 address and a port, such as 127.0.0.1:8080 or [::1]:8080"),
        (["keys", "create", "--app", "two words"], [:],
         "error: invalid value 'two words' for option '--app': use 1-64 letters, digits, '.', '_' or '-'\nusage: engage keys create [--database"),
        (["db", "start"], ["ENGAGE_DATABASE_URL": "postgres://elsewhere/engage"],
         "error: engage db start manages the local PostgreSQL; unset --database / ENGAGE_DATABASE_URL to use it\nusage: engage db start [--database"),
        (["projections", "rebuild", "other"], [:],
         "error: unknown read model 'other'; the read models are: engagement\nusage: engage projections rebuild [--database"),
        (["bench", "report", "--sizes", "10"], [:],
         "error: invalid value '10' for option '--sizes': expected sizes from 4000 to 100000000 events, such as 1000000,10000000\nusage: engage bench report [--database"),
        (["simulate", "--duplicates", "1.5"], [:], "error: invalid value '1.5' for option '--duplicates': expected a fraction from 0 to 1"),
        (["bench", "ingest", "--url", "http://127.0.0.1:9"], ["ENGAGE_BENCH_KEY": "a secret with spaces"],
         "error: invalid value for option '--key' (from ENGAGE_BENCH_KEY): expected a key as printed by engage keys create"),
        (["bench", "frob"], [:], "error: unknown subcommand 'frob'\nusage: engage bench <subcommand>"),
        (["experiment", "show", "--format", "json"], [:], "error: missing argument '<id>'\nusage: engage experiment show [--database"),
        (["log", "prune"], [:], "error: missing value for option '--older-than'\nusage: engage log prune [--database"),
        (["log", "prune", "--older-than", "3 weeks"], [:],
         "error: invalid value '3 weeks' for option '--older-than': expected a time span such as 31d, 36h or 30d12h"),
        (["log", "prune", "--older-than", "30d"], [:],
         "error: option '--older-than' 30d is inside the idempotency window of 30 days 13 hours 10 minutes (30d13h10m): ingestion accepts "
            + "occurred_at up to 30 days in the past and 10 minutes ahead, after moving back the times of a device clock up to 12 hours ahead"),
        (["log", "prune", "--older-than", "45d"], ["ENGAGE_MAX_PAST_DAYS": "90"],
         "error: option '--older-than' 45d is inside the idempotency window of 90 days 13 hours 10 minutes (90d13h10m)"),
        (["log", "prune", "--older-than", "31d", "--archive", "/proc/engage-archive"], [:],
         "error: option '--archive': cannot make the directory /proc/engage-archive\nusage: engage log prune [--database"),
        (["log", "prune", "--older-than", "31d", "--pace", "0"], [:],
         "error: invalid value '0' for option '--pace': expected an integer from 1 to 100\nusage: engage log prune [--database"),
        (["log", "prune", "--older-than", "31d", "--nice", "20"], [:],
         "error: invalid value '20' for option '--nice': expected an integer from 0 to 19\nusage: engage log prune [--database"),
        (["log", "restore", "/nonexistent/archive"], [:], "error: argument '<dir>': /nonexistent/archive is not a directory"),
        // Ages, arm counts and spreads that would trap the command once it ran (found by a hunt for traps).
        (["log", "prune", "--older-than", "200000000d"], [:],
         "error: invalid value '200000000d' for option '--older-than': expected a time span such as 31d, 36h or 30d12h, at most 36500d (100 years)"),
        (["bench", "calibration", "--devices", "4", "--arms", "2,5"], [:],
         "error: --arms must list arm counts between 2 and 10, such as 2,3, none above --devices (4)\nusage: engage bench calibration"),
        (["bench", "calibration", "--spread", "nan"], [:], "error: invalid value 'nan' for option '--spread': expected a number from 0 to 10"),
        (["bench", "report-coverage", "--spread", "nan"], [:], "error: invalid value 'nan' for option '--spread': expected a number from 0 to 10"),
        // An app id no key could have selects nothing: refused, as keys create refuses it.
        (["report", "--app", ""], [:], "error: invalid value '' for option '--app': use 1-64 letters, digits, '.', '_' or '-'"),
        (["report", "--app", "two words"], [:], "error: invalid value 'two words' for option '--app': use 1-64 letters, digits, '.', '_' or '-'"),
        (["experiment", "list", "--app", "a/b"], [:], "error: invalid value 'a/b' for option '--app': use 1-64 letters, digits, '.', '_' or '-'"),
        (["simulate", "--url", "localhost 8080", "--key", "egk_x"], [:],
         "error: invalid value 'localhost 8080' for option '--url': expected an http:// or https:// address such as http://127.0.0.1:8080"),
        (["simulate", "--key", "egk_x"], ["ENGAGE_URL": "ftp://h"],
         "error: invalid value 'ftp://h' for option '--url': expected an http:// or https:// address such as http://127.0.0.1:8080"),
        // Sent, it failed with NSURLErrorDomain -1000 (and the process trapped half the time).
        (["simulate", "--url", "http://[::1]:8080", "--key", "egk_x"], [:],
         "error: invalid value 'http://[::1]:8080' for option '--url': FoundationNetworking, which sends the traffic, cannot reach an IPv6 address"),
        (["demo", "--listen", "[fd00::2]:0"], [:],
         "error: invalid value '[fd00::2]:0' for option '--listen': FoundationNetworking, which sends the demo's traffic, cannot reach an IPv6 address"),
    ] as [([String], [String: String], String)])
    func refusedSettingsExit64NamingTheOptionBeforeAnythingStarts(arguments: [String], environment: [String: String], message: String) async throws {
        let workspace = try FaultWorkspace("cli")
        defer { workspace.remove() }
        let dataDirectory = workspace.file("postgres")
        let (status, output) = try await Self.engage(arguments, environment: environment.merging(["ENGAGE_DATA_DIR": dataDirectory]) { $1 },
                                                     in: workspace)
        #expect(status == 64)
        #expect(output.hasPrefix(message), "\(output)")
        #expect(!output.contains("a secret with spaces"))
        // Refused while parsing: no local PostgreSQL was created or started for it.
        #expect(!FileManager.default.fileExists(atPath: dataDirectory))
    }
}
