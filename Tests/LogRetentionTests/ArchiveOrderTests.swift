import EngageCore
import EventStore
import Foundation
@testable import LogRetention
import Postgres
import Runtime
import Testing
import TestSupport

/// The archive reads a partition in the order its rows lie, without a sort (issue 19: the sort
/// and the compression under ingestion cost its p99 most): the files hold that order, whatever
/// the batches, and a restore of them gives back the log as it was, once.
@Suite("Archives in the partition's own order")
struct ArchiveOrderTests {
    @Test func anArchiveInThePartitionsOrderWithItsDaysInterleavedComesBackOnce() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 40, tag: "d45"), daysAgo: 45)
        let partition = try await Self.partition(of: "d45-0", fixtures)
        // The rows rewritten in reverse log order, alternately recorded on the week's first and
        // fourth day: neither the log's order nor one day after another.
        try await fixtures.pool.withConnection { connection in
            try connection.execute("""
                CREATE TEMPORARY TABLE moved AS
                SELECT e.*, row_number() OVER (ORDER BY transaction_id, position) AS n FROM \(identifier: partition.name) e
                """)
            try connection.execute("""
                UPDATE moved SET recorded_at = \(PostgresTimestamp(partition.lower!))
                    + CASE WHEN n % 2 = 0 THEN interval '1 hour' ELSE interval '3 days 1 hour' END
                """)
            try connection.execute("DELETE FROM \(identifier: partition.name)")
            try connection.execute("""
                INSERT INTO \(identifier: partition.name)
                SELECT position, transaction_id, event_id, app_id, notification_id, type, category, device_id, occurred_at, recorded_at,
                       experiment_id, experiment_arm, payload
                FROM moved ORDER BY transaction_id DESC, position DESC
                """)
            try connection.execute("DROP TABLE moved")
        }
        let before = try await fixtures.log()
        let lying = try await fixtures.pool.withConnection { connection in
            try connection.query("""
                SELECT to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), position FROM \(identifier: partition.name) ORDER BY ctid
                """).rows.map { (try $0.decode(0, as: String.self), try $0.decode(1, as: Int64.self)) }
        }
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let report = try await fixtures.pruner(olderThan: 31, archive: directory).run()

        #expect(report.days.map(\.events) == [40, 40])
        for day in report.days {
            let dayText = ArchiveManifest.dayText(day.day)
            let positions = try Self.lines(of: directory + "/" + ArchiveManifest.fileName(forDay: dayText)).map { Int64($0[0])! }
            let expected = lying.filter { $0.0 == dayText }.map(\.1)
            #expect(positions == expected)
            // Not the log's order: the rows lie backwards.
            #expect(positions.first! > positions.last!)
        }
        let restored = try await fixtures.restorer(directory).run()
        #expect(restored.restored == 80)
        #expect(try await fixtures.log() == before)
        let again = try await fixtures.restorer(directory).run()
        #expect(again.restored == 0)
        #expect(again.present == 80)
        #expect(try await fixtures.log() == before)
    }

    @Test func thePartitionReadInBatchesOfOneBlockOrAllAtOnceGivesTheSameFiles() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 150, tag: "d45"), daysAgo: 45)
        let partition = try await Self.partition(of: "d45-0", fixtures)
        let (one, all) = (try RetentionFixtures.temporaryDirectory(), try RetentionFixtures.temporaryDirectory())
        defer { for directory in [one, all] { try? FileManager.default.removeItem(atPath: directory) } }

        let read = try await fixtures.pool.withConnection { connection in
            let blocks = try LogPruner.blockCount(of: partition.name, on: connection)
            var reader = PartitionReader(partition: partition.name, recordedBefore: partition.upper, blocks: blocks, blocksPerBatch: 1,
                                         pace: .unpaced)
            let byBlock = try reader.archive(into: one, on: connection)
            reader.blocksPerBatch = 1_000
            return (blocks, byBlock, try reader.archive(into: all, on: connection))
        }

        #expect(read.0 > 3)
        #expect(read.1.map(\.events) == [300])
        #expect(read.1.map(\.entry?.sha256) == read.2.map(\.entry?.sha256))
        #expect(read.1.map(\.entry?.bytes) == read.2.map(\.entry?.bytes))
    }

    @Test func aDutyCycleRestsInProportionToTheWorkAndStatesItself() {
        #expect(DutyCycle(share: 0.25).rest(after: .milliseconds(100)) == .milliseconds(300))
        #expect(DutyCycle(share: 0.5).rest(after: .milliseconds(40)) == .milliseconds(40))
        #expect(DutyCycle(share: 1, pause: .milliseconds(5)).rest(after: .seconds(2)) == .milliseconds(5))
        #expect(DutyCycle(share: 0.1, pause: .milliseconds(5)).rest(after: .milliseconds(10)) == .milliseconds(95))
        #expect(DutyCycle.standard.description == "working 25% of the time")
        #expect(DutyCycle.unpaced.description == "unpaced")
        #expect(DutyCycle(share: 0.5, pause: .milliseconds(200)).description == "working 50% of the time, 200 ms rest per batch")
    }

    static func partition(of notification: String, _ fixtures: RetentionFixtures) async throws -> EventPartitions.Partition {
        try await fixtures.pool.withConnection { connection in
            let name = try connection.query("""
                SELECT tableoid::regclass::text FROM events WHERE notification_id = \(notification) LIMIT 1
                """)[0].decode(0, as: String.self)
            return try #require(try EventPartitions.list(on: connection).first { $0.name == name })
        }
    }

    /// The archive file's lines, split into columns.
    static func lines(of path: String) throws -> [[Substring]] {
        let reader = try GzipFileReader(path: path)
        var bytes: [UInt8] = []
        while let chunk = try reader.next() { bytes += chunk }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
    }
}
