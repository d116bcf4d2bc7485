import EngageCore
import EventStore
import Foundation
import Postgres
import Runtime
import Testing
import TestSupport

/// The log's `occurred_at` BRIN index (migration 015) is summarized by vacuum and by the partition
/// maintenance (`OccurredAtSummaries`), never by autosummarize (migration 020). Under sustained ingestion autosummarize asks autovacuum to
/// summarize each filled range; the work items overflowed the queue (a LOG line with the whole
/// append statement per range refused: 17 MB of server log in 8 minutes), and the one a worker
/// took up waited on the week's partition that another worker was vacuuming, and after
/// `deadlock_timeout` cancelled that vacuum: the partition's vacuum never finished (BENCHMARKS.md,
/// "2026-12-05 06:25-07:33 UTC").
@Suite("Occurred-at summaries")
struct OccurredAtSummaryTests {
    /// The `occurred_at` index of each partition of the log, with its options.
    static func partitionIndexes(_ connection: Connection) throws -> [String: String] {
        let rows = try connection.query("""
            SELECT c.relname::text, coalesce(array_to_string(c.reloptions, ','), '')
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'events_occurred_at'::regclass
            """)
        var indexes: [String: String] = [:]
        for row in rows.rows { indexes[try row.decode(0)] = try row.decode(1) }
        return indexes
    }

    @Test func everyPartitionsIndexLeavesSummariesToVacuumThoseMadeLaterToo() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        defer { connection.close() }
        // A week far from today's, made the way appends and engage serve make them.
        let later = Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970) * Timestamp.microsecondsPerSecond
                                  + 60 * Timestamp.microsecondsPerDay)
        try EventPartitions.ensure(day: later, on: connection)

        let partitions = try EventPartitions.list(on: connection)
        let indexes = try Self.partitionIndexes(connection)
        #expect(indexes.count == partitions.count, "\(indexes) for \(partitions.map(\.name))")
        for (index, options) in indexes {
            #expect(options.contains("autosummarize=off"), "\(index): \(options)")
        }
    }

    @Test func theIndexesOfPartitionsMadeBeforeTheMigrationLeaveSummariesToVacuum() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase(migrated: false))
        defer { connection.close() }
        let all = try Migrator.fromSQLDirectory()
        // Migrated up to 019, with this week's partitions made as engage made them then.
        try Migrator(migrations: all.migrations.filter { $0.version <= 19 }, viewScripts: all.viewScripts).migrate(connection)
        let before = try Self.partitionIndexes(connection)
        #expect(!before.isEmpty && before.values.allSatisfy { $0.contains("autosummarize=on") }, "\(before)")

        try all.migrate(connection)

        let after = try Self.partitionIndexes(connection)
        #expect(after.count >= before.count)
        for (index, options) in after {
            #expect(options.contains("autosummarize=off"), "\(index): \(options)")
        }
    }

    /// Today's partition with several ranges (128 pages each) of events and no summary, its
    /// autovacuum off before the first append so that only the test summarizes it; its name and
    /// its index's.
    static func filledPartition(_ connection: Connection) throws -> (partition: String, index: String, pages: Int64) {
        let partition: String = try connection.query("SELECT name FROM event_partitions WHERE lower <= now() AND now() < upper")[0].decode(0)
        try connection.execute(SQL(unsafeSQL: "ALTER TABLE \(partition) SET (autovacuum_enabled = off)"))
        for round in 0..<10 {
            _ = try EventStore.append(EventFactory.items(1_000, notificationPrefix: "r\(round)"), on: connection)
        }
        let pages = try connection.query("SELECT pg_relation_size(\(partition)::regclass) / current_setting('block_size')::int8")[0]
            .decode(0, as: Int64.self)
        #expect(pages > 3 * 128, "\(pages) pages in \(partition)")
        let index = try #require(try Self.partitionIndexes(connection).keys.first { $0.hasPrefix(partition) })
        return (partition, index, pages)
    }

    /// Ranges of `index` without a summary; summarizes them, so it is asked once per state.
    static func unsummarized(_ index: String, _ connection: Connection) throws -> Int {
        try connection.query("SELECT brin_summarize_new_values(\(index)::regclass)")[0].decode(0, as: Int.self)
    }

    /// The summaries in `index` and how many of them are placeholders (a summarization stopped
    /// inside its range), read from the index's pages with pageinspect.
    static func summaries(_ index: String, _ connection: Connection) throws -> (all: Int, placeholders: Int) {
        try connection.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        let row = try connection.query("""
            SELECT count(*), count(*) FILTER (WHERE item.placeholder)
            FROM generate_series(1, (pg_relation_size(\(index)::regclass) / current_setting('block_size')::int8)::int - 1) page,
                 LATERAL (SELECT get_raw_page(\(index), page) AS raw) p,
                 LATERAL brin_page_items(p.raw, \(index)::regclass) item
            WHERE brin_page_type(p.raw) = 'regular'
            """)[0]
        return (try row.decode(0, as: Int.self), try row.decode(1, as: Int.self))
    }

    /// The ranges an outcome summarized, -1 for any other outcome. At least every full range but
    /// the first, which has had a summary since the index was made on the empty partition.
    static func ranges(_ outcome: OccurredAtSummaries.Outcome) -> Int {
        guard case .summarized(let ranges) = outcome else { return -1 }
        return ranges
    }

    /// The partition maintenance of engage serve, running on a pool of its own with its lines kept.
    static func runningMaintenance(_ configuration: PostgresConfiguration) -> (ConnectionPool, MemoryLogSink, Task<Void, any Error>) {
        let pool = ConnectionPool(configuration: configuration, size: 2)
        let sink = MemoryLogSink()
        let maintenance = EventPartitionMaintenance(pool: pool, interval: .seconds(3600), logger: Logger(label: "test", sink: sink))
        return (pool, sink, Task { try await maintenance.run() })
    }

    @Test func vacuumSummarizesTheRangesAnAppendFilled() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        defer { connection.close() }
        let (partition, index, pages) = try Self.filledPartition(connection)

        try connection.execute(SQL(unsafeSQL: "VACUUM \(partition)"))

        // Vacuum summarized every full range; the function, which takes partial ones too, finds
        // at most the last range, still filling.
        let left = try Self.unsummarized(index, connection)
        #expect(left <= 1, "\(left) ranges of \(pages) pages left unsummarized")
    }

    @Test func summarizingTakesEveryRangeThePartialLastOneToo() async throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        defer { connection.close() }
        let (partition, index, pages) = try Self.filledPartition(connection)

        let outcome = try await OccurredAtSummaries.summarize(partition: partition, on: connection)

        #expect(Self.ranges(outcome) >= Int(pages / 128) - 1, "\(outcome)")
        #expect(try Self.unsummarized(index, connection) == 0)
        #expect(try Self.summaries(index, connection) == (Int((pages + 127) / 128), 0))
        // The recorded_at index over the same blocks too (migration 022): since the open week
        // is not vacuumed for its inserts, nothing else summarized it, and the dashboards'
        // recorded_at panels read the whole week.
        let recordedAt: String = try connection.query("""
            SELECT x.indexrelid::regclass::text FROM pg_index x JOIN pg_inherits i ON i.inhrelid = x.indexrelid
            WHERE x.indrelid = \(partition)::regclass AND i.inhparent = 'events_recorded_at'::regclass
            """)[0].decode(0)
        #expect(try Self.unsummarized(recordedAt, connection) == 0)
        #expect(try Self.summaries(recordedAt, connection) == (Int((pages + 127) / 128), 0))
        for other in try EventPartitions.list(on: connection).map(\.name) where other != partition {
            #expect(try await OccurredAtSummaries.summarize(partition: other, on: connection) == .summarized(ranges: 0), "\(other)")
        }
    }

    @Test func aStepStopsBetweenTwoRangesLeavingNoPlaceholder() async throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        defer { connection.close() }
        let (partition, index, pages) = try Self.filledPartition(connection)

        // The first range has had a summary since the index was made on the empty partition
        // (inserts widen it). No time at all: one range, then the next one's start.
        #expect(try Self.summaries(index, connection) == (1, 0))
        let step = try OccurredAtSummaries.step(partition: partition, from: 128, budget: .zero, on: connection)

        #expect(step == .summarized(ranges: 1, next: 256))
        #expect(try Self.summaries(index, connection) == (2, 0))
        // Step after step, one range each, to the end.
        #expect(Self.ranges(try await OccurredAtSummaries.summarize(partition: partition, budget: .zero, on: connection)) >= Int(pages / 128) - 2)
        #expect(try Self.summaries(index, connection) == (Int((pages + 127) / 128), 0))
    }

    @Test(.timeLimit(.minutes(1)))
    func aPartitionHeldByAnotherSessionIsLeftForTheNextRunNotWaitedFor() async throws {
        let database = try TestPostgres.freshDatabase()
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        let (partition, index, _) = try Self.filledPartition(connection)
        let holder = try Connection(configuration: database)
        defer { holder.close() }
        // What a vacuum of the partition, or a second engage process summarizing it, holds.
        try holder.execute("BEGIN")
        try holder.execute(SQL(unsafeSQL: "LOCK TABLE \(partition) IN SHARE UPDATE EXCLUSIVE MODE"))

        #expect(try await OccurredAtSummaries.summarize(partition: partition, on: connection) == .busy(ranges: 0))

        try holder.execute("ROLLBACK")
        #expect(Self.ranges(try await OccurredAtSummaries.summarize(partition: partition, on: connection)) > 0)
        #expect(try Self.unsummarized(index, connection) == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func aPartitionAPruneDropsWhileTheStepWaitsIsGone() async throws {
        let database = try TestPostgres.freshDatabase()
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        let partition: String = try connection.query("SELECT name FROM event_partitions WHERE lower > now() ORDER BY lower LIMIT 1")[0].decode(0)
        // What `engage log prune` does to a week it removed.
        try connection.execute("BEGIN")
        try connection.execute(SQL(unsafeSQL: "ALTER TABLE events DETACH PARTITION \(partition)"))
        try connection.execute(SQL(unsafeSQL: "DROP TABLE \(partition)"))

        let step = Task.detached {
            let stepper = try Connection(configuration: database)
            defer { stepper.close() }
            return try OccurredAtSummaries.step(partition: partition, from: 0, lockWait: .seconds(50), on: stepper)
        }
        let observer = try Connection(configuration: database)
        defer { observer.close() }
        // The step waits for the partition's lock (the only lock of this database not granted).
        try await pollUntil(every: .milliseconds(20)) {
            try observer.query("""
                SELECT count(*) FROM pg_locks WHERE NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                """)[0].decode(0, as: Int.self) > 0
        }
        try connection.execute("COMMIT")

        #expect(try await step.value == .gone)
    }

    @Test func aPartitionThatDoesNotExistIsGone() async throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        defer { connection.close() }
        #expect(try await OccurredAtSummaries.summarize(partition: "events_1999_01_04", on: connection) == .gone)
    }

    /// Without the log's partitioned index the function fails as a dropped partition does
    /// (undefined_table); the partition still there, that is an error to report, not a prune.
    @Test func aPartitionWithoutTheLogsIndexIsAFailureNotGone() async throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        defer { connection.close() }
        let partition = try #require(try EventPartitions.list(on: connection).first).name
        try connection.execute("DROP INDEX events_occurred_at")

        let error = await #expect(throws: PostgresError.self) {
            try await OccurredAtSummaries.summarize(partition: partition, on: connection)
        }
        #expect(error?.sqlState == "42P01")
        #expect(try await OccurredAtSummaries.summarize(partition: "events_1999_01_04", on: connection) == .gone)
    }

    @Test(.timeLimit(.minutes(1)))
    func theMaintenanceSummarizesWhatIsLeftWhenItStarts() async throws {
        let database = try TestPostgres.freshDatabase()
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        let (_, index, _) = try Self.filledPartition(connection)
        let (pool, sink, running) = Self.runningMaintenance(database)
        defer { running.cancel() }

        try await pollUntil { sink.lines.contains { $0.contains("log.ranges-summarized") || $0.contains("log.summaries-") } }

        #expect(sink.lines.filter { $0.contains("log.summaries-") }.isEmpty, "\(sink.lines)")
        #expect(try Self.unsummarized(index, connection) == 0)
        running.cancel()
        _ = try? await running.value
        await pool.close()
    }

    @Test(.timeLimit(.minutes(1)))
    func stoppingTheMaintenanceDuringItsSummariesIsNoFailure() async throws {
        let database = try TestPostgres.freshDatabase()
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        // The step's wait for the partition's lock (half of this) outlasts a slow poll.
        try connection.execute(SQL(unsafeSQL: "ALTER DATABASE \(try connection.query("SELECT current_database()")[0].decode(0, as: String.self)) SET deadlock_timeout = '60s'"))
        let (partition, index, _) = try Self.filledPartition(connection)
        let holder = try Connection(configuration: database)
        defer { holder.close() }
        try holder.execute("BEGIN")
        try holder.execute(SQL(unsafeSQL: "LOCK TABLE \(partition) IN SHARE UPDATE EXCLUSIVE MODE"))
        let (pool, sink, running) = Self.runningMaintenance(database)

        // Stopped (SIGTERM) while its step waits for the partition's lock; the step, let go,
        // summarizes within its budget and the pass ends there.
        try await pollUntil(every: .milliseconds(5)) {
            try connection.query("""
                SELECT count(*) FROM pg_locks WHERE relation = \(partition)::regclass AND NOT granted
                """)[0].decode(0, as: Int.self) > 0
        }
        running.cancel()
        try holder.execute("ROLLBACK")
        _ = try? await running.value

        #expect(sink.lines.filter { $0.contains("log.summaries-") }.isEmpty, "\(sink.lines)")
        #expect(try Self.summaries(index, connection).placeholders == 0)
        await pool.close()
    }

    @Test(.timeLimit(.minutes(1)))
    func aPartitionTheServerRefusesIsPassedOverNotTheNewerOnes() async throws {
        let database = try TestPostgres.freshDatabase()
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        let (partition, index, _) = try Self.filledPartition(connection)
        // engage connects as a role that owns the partitions it made, not the older week another
        // role (the one that ran the migrations) made.
        let role = "engage_summaries_\(UUID().uuidString.prefix(6).lowercased())"
        try UnprivilegedRole.create(role, on: connection)
        let now = Int64(Date().timeIntervalSince1970) * Timestamp.microsecondsPerSecond
        try EventPartitions.ensure(day: Timestamp(microsecondsSinceEpoch: now - 14 * Timestamp.microsecondsPerDay), on: connection)
        let older = try #require(try EventPartitions.list(on: connection).first?.name)
        #expect(older != partition)
        try connection.execute(SQL(unsafeSQL: "ALTER TABLE \(partition) OWNER TO \(role)"))
        let (pool, sink, running) = Self.runningMaintenance(database.withUser(role))
        defer { running.cancel() }

        try await pollUntil { sink.lines.contains { $0.contains("log.ranges-summarized") } }

        let failed = sink.lines.filter { $0.contains("log.summaries-failed") }
        #expect(failed.count == 1 && failed[0].contains("partition=\(older)") && failed[0].contains("42501"), "\(sink.lines)")
        #expect(try Self.unsummarized(index, connection) == 0)
        running.cancel()
        _ = try? await running.value
        await pool.close()
    }
}
