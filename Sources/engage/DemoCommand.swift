import EngageAPI
import EngageCore
import EventStore
import Foundation
import Postgres
import Projections
import Runtime
import Synchronization

/// `engage demo`: the quick start's main job. Runs engage on its local PostgreSQL, sends a
/// simulated day of notification traffic through its own API, shows the report, and keeps
/// serving until Ctrl-C.
enum DemoCommand {
    static let notifications = Option("notifications", value: "n", help: "Notifications to simulate.", default: 10_000,
                                      validate: .range(100...1_000_000))
    static let reportFile = Option("report-file", value: "file", help: "Where to write the HTML report.", default: ".engage/report.html",
                                   validate: .path)

    static let definition = Command(
        name: "demo",
        abstract: "Run engage on its local PostgreSQL, simulate a day of traffic, show the report, serve until Ctrl-C.",
        options: CommonOptions.databaseAndLogging + ServerOptions.all + [notifications, reportFile],
        flags: ServerOptions.flags,
        run: run)

    static func run(_ arguments: ParsedArguments) async throws {
        let listen = arguments[ServerOptions.listen]
        guard let trafficHost = EventSender.sendableHost(listen.host) else {
            throw arguments.usageError(.invalidValue, "invalid value '\(listen.optionText)' for option '\(ServerOptions.listen.longName)': "
                + EventSender.ipv6LiteralProblem(sending: "the demo's traffic") + "; listen on [::1], [::] or an IPv4 address")
        }
        // Before the server, its PostgreSQL and the simulated day: the report is written last.
        try WritableFile.check(arguments[reportFile], option: reportFile.longName, arguments, creatingDirectory: true)
        try await ServerOptions.withServer(arguments, logger: CommonOptions.quietLogger(arguments)) { engage, address, setup in
            let ingestKey = try await engage.keys.create(app: "demo", role: .ingest, name: "demo ingest key").secret
            let readKey = try await engage.keys.create(app: "demo", role: .read, name: "demo read key").secret
            print("engage runs at \(address) on its own PostgreSQL (\(setup.embedded?.dataDirectory ?? setup.configuration.description))")

            // The server ends at Ctrl-C or SIGTERM, also while the simulated day is still being
            // sent or folded: the showcase then stops with it, rather than failing on a server
            // that no longer listens (or waiting a minute for a projector that stopped, and saying
            // engage keeps running), and the local PostgreSQL is stopped before a second signal.
            let stopping = StopSeen()
            try await withThrowingTaskGroup(of: DemoPart.self) { group in
                group.addTask {
                    try await engage.run(onShutdown: stopping.note)
                    return .server
                }
                group.addTask {
                    do {
                        try await showcase(engage: engage, address: address, trafficAddress: "http://\(trafficHost):\(engage.port)",
                                           ingestKey: ingestKey, readKey: readKey,
                                           notifications: arguments[notifications], reportFile: arguments[reportFile])
                    } catch where stopping.seen {
                        // Cut off by the stop (a send refused, a wait cancelled): not a failure.
                    }
                    return .showcase
                }
                while let part = try await group.next(), part != .server {}
                group.cancelAll()
            }
        }
    }

    /// How long the demo sends at most: a million notifications (its largest day, about 4.7
    /// million events) through its own API take minutes on a small machine, and a day cut short
    /// at 120 s showed only its morning.
    static let sendingDeadline = Duration.seconds(1_800)

    /// The demo's two concurrent parts.
    enum DemoPart: Sendable {
        case server, showcase
    }

    /// Whether the server's shutdown has begun.
    final class StopSeen: Sendable {
        private let state = Mutex(false)
        var seen: Bool { state.withLock { $0 } }
        @Sendable func note() { state.withLock { $0 = true } }
    }

    /// Sends simulated traffic through the API, waits for the projector, prints the report.
    static func showcase(engage: EngageServer, address: String, trafficAddress: String, ingestKey: String, readKey: String,
                         notifications: Int, reportFile: String) async throws {
        // Printed, never opened: the demo may run where no browser is (a server, a container).
        let consoleURL = engage.consoleServed ? address + "/" : "(off: --console off)"
        var scenario = SimulationScenario.standard
        scenario.notificationCount = notifications
        let start = SystemTime().wallClock.adding(microseconds: -(scenario.spanSeconds + SimulationScenario.maximumTailSeconds) * 1_000_000 - 60_000_000)
        let simulator = try TrafficSimulator(scenario: scenario, seed: UInt64(Date().timeIntervalSince1970),
                                             start: start, options: SimulationOptions(outOfOrderFraction: 0.1, duplicateFraction: 0.02))
        print("sending a simulated day of \(notifications) notifications through the API...")
        let progress = ProgressLine.standardError("demo")
        let summary = try await SimulationRun(simulator: simulator, batchSize: 200, deadline: Self.sendingDeadline)
            .send(to: .api(EventSender(base: trafficAddress, key: ingestKey)), progress: progress)
        progress.finish()
        print(summary.description)
        // Wait for the projector to fold everything into the read model.
        var behind = true
        for _ in 0..<600 {
            behind = try await engage.pool.withConnection { connection -> Bool in
                let total = try connection.query("SELECT count(*) FROM events")[0].decode(0, as: Int.self)
                let done = try connection.query("SELECT coalesce(max(events_processed), 0) FROM projection_checkpoints WHERE projection = 'engagement'")[0].decode(0, as: Int.self)
                return done < total
            }
            if !behind { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        if behind {
            // A slow machine: the report is of what was folded, which it says as "current as of".
            print("note: the projector has not folded every event after 60 s; the report below is of what it has (see its \"current as of\" line)")
        }
        let report = try await ReportQuery(appID: "demo").run(on: engage.pool, now: SystemTime().wallClock)
        print(report.renderTable())
        do {
            try ReplacedFile.write(Array(report.renderHTML().utf8), to: reportFile)
        } catch {
            // Checked before the demo began: the write itself failed (a full disk, say).
            throw ReportError(description: "option '\(DemoCommand.reportFile.longName)': cannot write '\(reportFile)': \(error)")
        }
        let now = SystemTime().wallClock.rfc3339
        print("""

            The HTML report is in \(reportFile).
            engage keeps running at \(address) for the demo app (Ctrl-C stops it):
              ingest key: \(ingestKey)
              read key:   \(readKey)
            The console (report, extension, experiments, ingestion) is at \(consoleURL)
              sign in with the read key; an admin key starts and stops experiments:
              .build/release/engage keys create --app demo --role admin
            Send an event:
              curl -s \(address)/v1/events -H 'Authorization: Bearer \(ingestKey)' -H 'Content-Type: application/json' \\
                -d '[{"event_id":"\(UUID().uuidString.lowercased())","type":"displayed","notification_id":"apns-1","device_id":"device-1","category":"new_photo","occurred_at":"\(now)","presentation":"rich","attachment_kind":"image"}]'
            Read the report as JSON:
              curl -s '\(address)/v1/report?by=category' -H 'Authorization: Bearer \(readKey)'
            """)
    }
}
