import EngageCore
import EventStore
import Foundation
import LogRetention
import Postgres
import Runtime
import TestSupport

/// A database whose log holds days recorded in the past, and what a test compares.
struct RetentionFixtures {
    let pool: ConnectionPool
    let store: EventStore

    init(_ configuration: PostgresConfiguration? = nil) throws {
        pool = ConnectionPool(configuration: try configuration ?? TestPostgres.freshDatabase(), size: 4)
        store = EventStore(pool: pool)
    }

    /// Two events (delivered, displayed) for each of `notifications` notifications.
    static func events(notifications: Int, tag: String) -> [AppendItem] {
        let start = Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000) - 3_600_000_000)
        return (0..<notifications).flatMap { n -> [AppendItem] in
            let notification = "\(tag)-\(n)"
            let delivered = Event(eventID: EventID(UUID()), notificationID: notification, deviceID: "device-\(n % 7)", category: "new_photo",
                                  occurredAt: start, details: .delivered(DeliveredDetails(
                                      attachment: DeliveredAttachment(kind: .image, format: .jpeg, bytes: 1_000, source: .network, downloadMS: 300),
                                      outcome: .attached, processingMS: 400, timeWillExpire: false, network: .wifi, strategy: .full)))
            let displayed = Event(eventID: EventID(UUID()), notificationID: notification, deviceID: "device-\(n % 7)", category: "new_photo",
                                  occurredAt: start.adding(microseconds: 1_000_000),
                                  details: .displayed(DisplayedDetails(presentation: .rich, attachmentKind: .image)))
            return [AppendItem(appID: "app-1", event: delivered), AppendItem(appID: "app-1", event: displayed)]
        }
    }

    /// A database whose log dates from before migration 010: 300 events, a third each recorded at
    /// 03:00 40, 39 and 2 days ago, stored under migration 9, then the upgrade; they lie in the
    /// legacy partition in the order they were recorded.
    static func legacyDatabase() throws -> PostgresConfiguration {
        let configuration = try TestPostgres.freshDatabase(migrated: false)
        let connection = try Connection(configuration: configuration)
        defer { connection.close() }
        let all = try Migrator.fromSQLDirectory()
        try Migrator(migrations: all.migrations.filter { $0.version <= 9 }, viewScripts: all.viewScripts).migrate(connection)
        try connection.execute("""
            INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at, recorded_at, payload)
            SELECT gen_random_uuid(), 'app-1', 'n-' || i, 'expanded', 'new_photo', 'device-1', now(),
                   date_trunc('day', now()) - make_interval(days => (ARRAY[40, 39, 2])[i % 3 + 1]) + interval '3 hours', '{}'
            FROM generate_series(1, 300) i ORDER BY 8
            """)
        try all.migrate(connection)
        return configuration
    }

    /// Appends the events now, then moves them to noon (UTC) `daysAgo` days back, as if recorded
    /// then: the rows move to that day's partition and keep their place in the log.
    @discardableResult
    func seed(_ items: [AppendItem], daysAgo: Int) async throws -> [AppendItem] {
        _ = try await store.append(items)
        if daysAgo > 0 { try await RecordedInThePast.move(items.map(\.event.eventID), daysAgo: daysAgo, pool: pool) }
        return items
    }

    /// Every event of the log in experiment `exp`, in the arm its notification number's parity
    /// gives (even: control, odd: thumbnail), for the tests of incremental looks around a prune.
    func putEveryEventInTheExperiment() async throws {
        _ = try await pool.withConnection { connection in
            try connection.execute("""
                UPDATE events SET experiment_id = 'exp',
                       experiment_arm = CASE WHEN right(notification_id, 1) IN ('0', '2', '4', '6', '8') THEN 'control' ELSE 'thumbnail' END
                """)
        }
    }

    /// Every event as `id txid/position recorded_at payload`, sorted by id.
    func log() async throws -> [String] {
        try await pool.withConnection { connection in
            try connection.query("""
                SELECT event_id::text || ' ' || transaction_id::text || '/' || position || ' ' || recorded_at::text || ' ' || payload::text
                FROM events ORDER BY event_id
                """).rows.map { try $0.decode(0, as: String.self) }
        }
    }

    func count(_ sql: SQL) async throws -> Int {
        try await pool.withConnection { try $0.query(sql)[0].decode(0, as: Int.self) }
    }

    /// Unpaced: the tests would otherwise rest three times as long as they work (the default pace
    /// is covered by the command's tests).
    func pruner(olderThan days: Int, archive: String? = nil, checks: [LogPruner.Check] = [],
                legacyDaysPerPass: Int = 31, resetReaders: LogRewrite.Reset? = nil) -> LogPruner {
        var configuration = LogPruner.Configuration(olderThan: .seconds(86_400 * Int64(days)), window: IdempotencyWindow(), archiveDirectory: archive)
        configuration.checks = checks
        configuration.batchRows = 100
        configuration.pace = .unpaced
        configuration.legacyDaysPerPass = legacyDaysPerPass
        configuration.resetReaders = resetReaders
        return LogPruner(pool: pool, configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()))
    }

    func restorer(_ directory: String, resetReaders: LogRewrite.Reset? = nil) -> LogRestorer {
        var restorer = LogRestorer(pool: pool, directory: directory, logger: Logger(label: "test", sink: MemoryLogSink()))
        restorer.batchRows = 37
        restorer.resetReaders = resetReaders
        return restorer
    }

    /// A new, empty directory for an archive, removed by the caller.
    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "engage-archive-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Runs a shell command (the standard gzip, to check archives against), feeding it `input`;
    /// its standard output.
    static func shell(_ command: String, input: Data? = nil) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        let output = Pipe(), feed = Pipe()
        process.standardOutput = output
        if input != nil { process.standardInput = feed }
        try process.run()
        if let input {
            feed.fileHandleForWriting.write(input)
            try feed.fileHandleForWriting.close()
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return data
    }
}
