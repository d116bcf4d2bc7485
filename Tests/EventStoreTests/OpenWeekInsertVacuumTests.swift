import EngageCore
import EventStore
import Foundation
import Postgres
import Runtime
import Testing
import TestSupport

/// The log's partition of a week that has not ended gets no insert-driven vacuum (migration 021):
/// it only receives inserts, and at sustained ingestion those vacuums came every minute or two,
/// growing with the week, beside the appends and the projector at peak. Once the week has ended,
/// the partition maintenance gives it back, so that autovacuum passes over the closed week once.
@Suite("Open weeks without insert-driven vacuum")
struct OpenWeekInsertVacuumTests {
    static let withoutInsertVacuum = "autovacuum_vacuum_insert_threshold=-1"

    /// Each partition's storage options, by name.
    static func options(_ connection: Connection) throws -> [String: String] {
        let rows = try connection.query("""
            SELECT p.name, coalesce(array_to_string(c.reloptions, ','), '')
            FROM event_partitions p JOIN pg_class c ON c.oid = to_regclass(quote_ident(p.name))
            """)
        var options: [String: String] = [:]
        for row in rows.rows { options[try row.decode(0)] = try row.decode(1) }
        return options
    }

    static func day(daysFromNow days: Int64) -> Timestamp {
        Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970) * Timestamp.microsecondsPerSecond
                      + days * Timestamp.microsecondsPerDay)
    }

    /// The partition holding `day`, made the way appends and engage serve make them.
    static func partition(holding day: Timestamp, on connection: Connection) throws -> String {
        try EventPartitions.ensure(day: day, on: connection)
        return try connection.query("""
            SELECT name FROM event_partitions WHERE lower <= \(PostgresTimestamp(unixMicroseconds: day.microsecondsSinceEpoch))
                AND \(PostgresTimestamp(unixMicroseconds: day.microsecondsSinceEpoch)) < upper
            """)[0].decode(0)
    }

    /// Runs the partition maintenance as `configuration`'s role until it logs `event`; returns its
    /// log's lines, that line, and the partitions' options as the maintenance left them.
    static func maintenance(as configuration: PostgresConfiguration, until event: String) async throws
        -> (lines: [String], line: String, options: [String: String]) {
        let pool = ConnectionPool(configuration: configuration, size: 1)
        let sink = MemoryLogSink()
        let maintenance = EventPartitionMaintenance(pool: pool, interval: .seconds(3600), logger: Logger(label: "test", sink: sink))
        let running = Task { try await maintenance.run() }
        try await pollUntil { sink.lines.contains { $0.contains(event) } }
        running.cancel()
        _ = try? await running.value
        let options = try await pool.withConnection { try Self.options($0) }
        await pool.close()
        return (sink.lines, sink.lines.first { $0.contains(event) } ?? "", options)
    }

    @Test func weeksNotEndedAreMadeWithoutInsertVacuumAndEndedOnesWithIt() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        defer { connection.close() }
        let ended = try Self.partition(holding: Self.day(daysFromNow: -30), on: connection)
        let later = try Self.partition(holding: Self.day(daysFromNow: 60), on: connection)
        let current = try Self.partition(holding: Self.day(daysFromNow: 0), on: connection)

        let options = try Self.options(connection)
        #expect(options[current]?.contains(Self.withoutInsertVacuum) == true, "\(options)")
        #expect(options[later]?.contains(Self.withoutInsertVacuum) == true, "\(options)")
        #expect(options[ended] == "", "\(options)")
    }

    /// A week that ended about a month ago, as it was while it was open.
    static func endedWeekWithoutInsertVacuum(on connection: Connection) throws -> String {
        let ended = try Self.partition(holding: Self.day(daysFromNow: -37), on: connection)
        try connection.execute("ALTER TABLE \(identifier: ended) SET (autovacuum_vacuum_insert_threshold = -1)")
        return ended
    }

    @Test func aWeekThatEndedGetsInsertVacuumBackOnceItsDelayHasPassed() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        defer { connection.close() }
        let ended = try Self.endedWeekWithoutInsertVacuum(on: connection)
        let current = try Self.partition(holding: Self.day(daysFromNow: 0), on: connection)
        let sinceItsEnd = try connection.query("""
            SELECT floor(extract(epoch FROM now() - upper))::bigint FROM event_partitions WHERE name = \(ended)
            """)[0].decode(0, as: Int64.self)

        let early = try EventPartitions.reopenInsertVacuum(endedMoreThan: .seconds(sinceItsEnd + 600), on: connection)
        #expect(!early.reopened.contains(ended), "\(early)")
        #expect(try Self.options(connection)[ended]?.contains(Self.withoutInsertVacuum) == true)

        let due = try EventPartitions.reopenInsertVacuum(endedMoreThan: .seconds(sinceItsEnd - 600), on: connection)
        #expect(due.reopened.contains(ended) && due.busy.isEmpty && due.notOwned.isEmpty, "\(due)")
        let options = try Self.options(connection)
        #expect(options[ended] == "", "\(options)")
        #expect(options[current]?.contains(Self.withoutInsertVacuum) == true, "\(options)")
        #expect(try !EventPartitions.reopenInsertVacuum(on: connection).reopened.contains(ended))
    }

    /// A vacuum or a step of summaries holds the partition: the call gives up within half of
    /// `deadlock_timeout` (so it cancels no vacuum) and a later one reopens it.
    @Test(.timeLimit(.minutes(1)))
    func aClosedWeekWhoseLockIsBusyIsLeftForTheNextCall() throws {
        let database = try TestPostgres.freshDatabase()
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        let holder = try Connection(configuration: database)
        defer { holder.close() }
        let ended = try Self.endedWeekWithoutInsertVacuum(on: connection)

        try holder.execute("BEGIN")
        try holder.execute("LOCK TABLE \(identifier: ended) IN SHARE UPDATE EXCLUSIVE MODE")
        let busy = try EventPartitions.reopenInsertVacuum(on: connection)
        #expect(busy.busy == [ended] && !busy.reopened.contains(ended), "\(busy)")
        #expect(try Self.options(connection)[ended]?.contains(Self.withoutInsertVacuum) == true)
        try holder.execute("COMMIT")

        #expect(try EventPartitions.reopenInsertVacuum(on: connection).reopened.contains(ended))
    }

    /// engage connects as a role that does not own the partitions another role (the one that ran
    /// the migrations) made: it cannot reopen them and says so, every run, instead of passing them
    /// over in silence.
    @Test(.timeLimit(.minutes(1)))
    func aClosedWeekAnotherRoleOwnsIsReportedNotPassedOverInSilence() async throws {
        let database = try TestPostgres.freshDatabase()
        let role = "engage_reopen_\(UUID().uuidString.prefix(6).lowercased())"
        let ended = try {
            let connection = try Connection(configuration: database)
            defer { connection.close() }
            try UnprivilegedRole.create(role, on: connection)
            return try Self.endedWeekWithoutInsertVacuum(on: connection)
        }()
        let run = try await Self.maintenance(as: database.withUser(role), until: "log.partitions-vacuum-refused")
        #expect(run.line.contains(ended) && run.line.contains("42501"), "\(run.line)")
        #expect(!run.lines.contains { $0.contains("log.partitions-failed") }, "\(run.lines)")
        #expect(run.options[ended]?.contains(Self.withoutInsertVacuum) == true, "\(run.options)")
    }

    @Test func theOpenWeeksOfALogMadeBeforeTheMigrationLoseInsertVacuumAndEndedWeeksKeepIt() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase(migrated: false))
        defer { connection.close() }
        let all = try Migrator.fromSQLDirectory()
        try Migrator(migrations: all.migrations.filter { $0.version <= 20 }, viewScripts: all.viewScripts).migrate(connection)
        let ended = try Self.partition(holding: Self.day(daysFromNow: -30), on: connection)
        let before = try Self.options(connection)
        #expect(before.count >= 2 && before.values.allSatisfy { !$0.contains(Self.withoutInsertVacuum) }, "\(before)")

        try all.migrate(connection)

        let after = try Self.options(connection)
        let open = try connection.query("SELECT name FROM event_partitions WHERE upper > now()").rows.map { try $0.decode(0, as: String.self) }
        #expect(!open.isEmpty)
        for name in open { #expect(after[name]?.contains(Self.withoutInsertVacuum) == true, "\(name): \(after)") }
        #expect(after[ended] == "", "\(after)")
    }

    @Test(.timeLimit(.minutes(1)))
    func thePartitionMaintenanceReopensTheWeeksThatEnded() async throws {
        let database = try TestPostgres.freshDatabase()
        let ended = try {
            let connection = try Connection(configuration: database)
            defer { connection.close() }
            return try Self.endedWeekWithoutInsertVacuum(on: connection)
        }()
        let run = try await Self.maintenance(as: database, until: "log.partitions-vacuum-reopened")
        #expect(run.line.contains(ended), "\(run.line)")
        #expect(run.options[ended] == "", "\(run.options)")
    }
}
