import EngageCore
import EventStore
import Foundation
import Postgres
import Testing
import TestSupport

/// The log's `occurred_at` BRIN index (migration 015) is summarized by vacuum, never by
/// autosummarize (migration 020). Under sustained ingestion autosummarize asks autovacuum to
/// summarize each filled range; the work items overflowed the queue (a LOG line with the whole
/// append statement per range refused: 17 MB of server log in 8 minutes), and the one a worker
/// took up waited on the week's partition that another worker was vacuuming, and after
/// `deadlock_timeout` cancelled that vacuum: the partition's vacuum never finished (BENCHMARKS.md,
/// "2026-12-05 06:25-06:44 UTC").
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

    @Test func vacuumSummarizesTheRangesAnAppendFilled() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        defer { connection.close() }
        // Several ranges (128 pages each) of today's partition.
        for round in 0..<10 {
            _ = try EventStore.append(EventFactory.items(1_000, notificationPrefix: "r\(round)"), on: connection)
        }
        let partition: String = try connection.query("SELECT tableoid::regclass::text FROM events LIMIT 1")[0].decode(0)
        let pages = try connection.query("SELECT pg_relation_size(\(partition)::regclass) / current_setting('block_size')::int8")[0]
            .decode(0, as: Int64.self)
        #expect(pages > 3 * 128, "\(pages) pages in \(partition)")

        try connection.execute(SQL(unsafeSQL: "VACUUM \(partition)"))

        let index = try #require(try Self.partitionIndexes(connection).keys.first { $0.hasPrefix(partition) })
        // Vacuum summarized every full range; the function, which takes partial ones too, finds
        // at most the last range, still filling.
        let left = try connection.query("SELECT brin_summarize_new_values(\(index)::regclass)")[0].decode(0, as: Int.self)
        #expect(left <= 1, "\(left) ranges of \(pages) pages left unsummarized")
    }
}
