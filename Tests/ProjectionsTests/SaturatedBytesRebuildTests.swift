import EngageCore
import EventStore
import Foundation
import Postgres
import Projections
import Runtime
import Testing
import TestSupport

/// Byte sums saturate at Int64.max instead of trapping. The projector also subtracts: a late,
/// earlier `delivered` event moves a notification's telemetry to another day, and its bytes are
/// taken off the bucket it leaves. Taken off a saturated sum, they leave a number a rebuild (which
/// never added them there) does not compute: the read model must still equal a rebuild.
@Suite("Saturated byte sums and a rebuild")
struct SaturatedBytesRebuildTests {
    let pool: ConnectionPool
    let store: EventStore

    init() throws {
        pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 6)
        store = EventStore(pool: pool)
    }

    static let largestAccepted = 9_007_199_254_740_992  // 2^53, the most one event may report
    static let day: Int64 = 86_400_000_000

    func delivered(_ n: Int, serial: UInt64, at: Timestamp) -> AppendItem {
        AppendItem(appID: "app-1", event: Event(
            eventID: ProjectionFixtures.id(97, serial), notificationID: "huge-\(n)", deviceID: "d\(n % 9)",
            category: "new_photo", occurredAt: at,
            details: .delivered(DeliveredDetails(attachment: DeliveredAttachment(kind: .image, format: .jpeg,
                                                                                 bytes: Self.largestAccepted,
                                                                                 source: .network, downloadMS: 40),
                                                 outcome: .attached, processingMS: 90, timeWillExpire: false))))
    }

    func waitUntilCaughtUp() async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(60))
        while clock.now < deadline {
            if try await ReadModelSnapshot.isCaughtUp(pool) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("projector did not catch up")
    }

    @Test(.timeLimit(.minutes(3)))
    func aNotificationLeavingASaturatedBucketLeavesWhatARebuildComputes() async throws {
        var configuration = Projector.Configuration()
        configuration.pollInterval = .milliseconds(100)
        let projector = Projector(pool: pool, configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()),
                                  metrics: ProjectorMetrics(registry: MetricsRegistry()))
        let running = Task { try await projector.run() }
        let today = ProjectionFixtures.start
        // 1,100 notifications of 2^53 bytes on one day: about 9.9e18, past Int64.max (about 9.2e18).
        _ = try await store.append((0..<1_100).map { delivered($0, serial: UInt64($0), at: today) })
        try await waitUntilCaughtUp()
        // A first delivery two days earlier, arriving late, moves one notification to that day.
        // Without it the day still holds 1,099 x 2^53, about 9.9e18: still past Int64.max.
        _ = try await store.append([delivered(0, serial: 5_000, at: today.adding(microseconds: -2 * Self.day))])
        try await waitUntilCaughtUp()
        running.cancel()
        _ = try? await running.value

        let incremental = try await byteSums()
        let rows = try await ReadModelSnapshot.rows(pool)
        try await EngagementRebuild(pool: pool).run()
        let rebuilt = try await byteSums()
        #expect(rebuilt == incremental)
        let rebuiltRows = try await ReadModelSnapshot.rows(pool)
        #expect(rebuiltRows == rows)
        // The day the notification left holds 1,099 x 2^53 exactly, the day it moved to 2^53.
        #expect(incremental.map(\.bytes).sorted() == ["9007199254740992", "9898911980960350208"])
    }

    /// Each telemetry row's day and byte sum, in text (the exact number the column holds).
    func byteSums() async throws -> [Sums] {
        try await pool.withConnection { connection in
            try connection.query("SELECT day::text, bytes::text, delivered FROM extension_telemetry_daily ORDER BY day").rows.map {
                Sums(day: try $0.decode(0), bytes: try $0.decode(1), delivered: try $0.decode(2))
            }
        }
    }

    struct Sums: Equatable, CustomStringConvertible {
        var day: String, bytes: String, delivered: Int
        var description: String { "\(day): \(bytes) bytes of \(delivered)" }
    }
}
