import EngageCore
import EventStore
import Postgres
@testable import Projections
import Testing
import TestSupport

/// A day's telemetry histograms end at their highest bucket in use, however they got there: a
/// notification that leaves the bucket it held highest (its earliest delivery arrives late, on
/// another day) leaves no trailing zeros behind, so the live model equals a rebuild row for row.
@Suite("Telemetry histograms trimmed")
struct HistogramTrimTests {
    @Test func theHighestBucketLeftByALateEventLeavesNoZerosBehind() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 3)
        let store = EventStore(pool: pool)
        let today = ProjectionFixtures.start
        func delivered(_ notification: String, _ serial: UInt64, at time: Timestamp, downloadMS: Int) -> AppendItem {
            AppendItem(appID: "app-1", event: Event(
                eventID: EventID(high: 0x7000_0000_0000_0000 | serial, low: 0x8000_0000_0000_0000 | serial),
                notificationID: notification, deviceID: "device-\(notification)", category: "new_photo", occurredAt: time,
                details: .delivered(DeliveredDetails(
                    attachment: DeliveredAttachment(kind: .image, format: .jpeg, bytes: 1_000, source: .network, downloadMS: downloadMS),
                    outcome: .attached, processingMS: 400, timeWillExpire: false, network: .wifi, strategy: .full))))
        }
        // Today: one fast download and one slow, the slow one the day's highest bucket.
        _ = try await store.append([delivered("fast", 1, at: today, downloadMS: 40),
                                    delivered("slow", 2, at: today, downloadMS: 9_000)])
        try await Self.catchUp(pool)
        // The slow notification's earliest delivery, two days back, arrives late: it moves there.
        _ = try await store.append([delivered("slow", 3, at: today.adding(microseconds: -2 * 86_400_000_000), downloadMS: 40)])
        try await Self.catchUp(pool)

        let histograms = try await pool.withConnection { connection in
            try connection.query("SELECT download_ms_histogram::text FROM extension_telemetry_daily ORDER BY day").rows
                .map { try $0.decode(0, as: String.self) }
        }
        #expect(histograms.count == 2)
        #expect(histograms.allSatisfy { !$0.hasSuffix(",0}") })
        let live = try await ReadModelSnapshot.rows(pool)
        #expect(try await EngagementRebuild(pool: pool, batchSize: 211).run() > 0)
        let rebuilt = try await ReadModelSnapshot.rows(pool)
        #expect(Set(live).symmetricDifference(rebuilt).isEmpty, "differ: \(Set(live).symmetricDifference(rebuilt).sorted().prefix(4))")
        await pool.close()
    }

    /// Folds the log with a new batcher until its checkpoint reaches the last event stored.
    static func catchUp(_ pool: ConnectionPool) async throws {
        try await pollUntil(every: .milliseconds(20)) {
            let folded = try await pool.withConnection { connection in
                var batcher = EngagementBatcher(tables: .live, checkpointName: EngagementStore.projectionName, batchSize: 100,
                                                position: try EngagementStore.checkpoint(EngagementStore.projectionName, on: connection))
                return try batcher.processBatch(on: connection)
            }
            return folded == 0 ? try await ReadModelSnapshot.isCaughtUp(pool) : false
        }
    }
}
