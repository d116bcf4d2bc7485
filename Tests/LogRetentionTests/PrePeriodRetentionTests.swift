import EngageCore
import EventStore
import Experiments
import Foundation
import Postgres
import Testing
import TestSupport

/// A running experiment reads the app's events of its CUPED pre-period at every look. Started
/// after the cut, it has no tagged events before it, and a prune took its pre-period's oldest
/// days: theta and the adjusted lift jumped between two looks of the same experiment. The
/// prune is refused as for its tagged events.
@Suite("Prune and a running experiment's pre-period")
struct PrePeriodRetentionTests {
    static let day: Int64 = 86_400_000_000

    @Test(.timeLimit(.minutes(1)), arguments: [
        // Started 20 days ago: the default 14-day pre-period reaches back to day 34, past the cut at day 31.
        (20, ExperimentAnalysisSettings.defaultCupedPrePeriodDays, true),
        (20, nil, false),
        // Started 10 days ago: its pre-period (days 24 to 10) is all after the cut.
        (10, ExperimentAnalysisSettings.defaultCupedPrePeriodDays, false),
        (10, 60, true),
    ] as [(Int, Int?, Bool)])
    func aPrePeriodBeforeTheCutHoldsThePruneBack(startedDaysAgo: Int, prePeriodDays: Int?, refused: Bool) async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let now = Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000))
        // Untagged traffic of the app that occurred and was recorded 33 days ago.
        let old = (0..<5).map { n in
            AppendItem(appID: "app-1", event: Event(
                eventID: EventID(UUID()), notificationID: "old-\(n)", deviceID: "device-\(n)", category: "new_photo", occurredAt: now,
                details: .displayed(DisplayedDetails(presentation: .plain, attachmentKind: .noAttachment))))
        }
        _ = try await EventStore(pool: pool).append(old)
        try await RecordedInThePast.move(old.map(\.event.eventID), daysAgo: 33, pool: pool)
        let ids = old.map(\.event.eventID.description)
        try await pool.withConnection { _ = try $0.execute("UPDATE events SET occurred_at = recorded_at WHERE event_id = ANY(\(ids)::uuid[])") }

        let store = ExperimentStore(pool: pool)
        _ = try await store.create(ExperimentDefinition(
            id: "exp-new", appID: "app-1",
            arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.5)],
            primaryMetric: .open, analysis: ExperimentAnalysisSettings(cupedPrePeriodDays: prePeriodDays)))
        _ = try await store.start("exp-new", now: now.adding(microseconds: -Int64(startedDaysAgo) * Self.day))

        let cut = now.adding(microseconds: -31 * Self.day)
        let running = try await pool.withConnection { try ExperimentRetention.runningExperiments(withEventsRecordedBefore: cut, on: $0) }
        #expect(running == (refused ? ["exp-new"] : []))
        await pool.close()
    }

    /// A device clock ahead: an event recorded just before the cut occurred just after it, in a
    /// pre-period that begins exactly at the cut (a midnight start, 14 days later).
    @Test(.timeLimit(.minutes(1)))
    func anEventRecordedBeforeItOccurredHoldsThePruneBack() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let now = Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000))
        let event = AppendItem(appID: "app-1", event: Event(
            eventID: EventID(UUID()), notificationID: "ahead", deviceID: "device-1", category: "new_photo", occurredAt: now,
            details: .displayed(DisplayedDetails(presentation: .plain, attachmentKind: .noAttachment))))
        _ = try await EventStore(pool: pool).append([event])
        try await RecordedInThePast.move([event.event.eventID], daysAgo: 40, pool: pool)
        let id = event.event.eventID.description
        let recorded = try await pool.withConnection { connection in
            _ = try connection.execute("UPDATE events SET occurred_at = recorded_at + interval '2 minutes' WHERE event_id = \(id)::uuid")
            return Timestamp(microsecondsSinceEpoch: try connection.query(
                "SELECT (extract(epoch FROM recorded_at) * 1000000)::int8 FROM events WHERE event_id = \(id)::uuid")[0].decode(0, as: Int64.self))
        }
        let cut = recorded.adding(microseconds: 60_000_000)

        let store = ExperimentStore(pool: pool)
        _ = try await store.create(ExperimentDefinition(
            id: "exp-new", appID: "app-1",
            arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.5)],
            primaryMetric: .open, analysis: ExperimentAnalysisSettings(cupedPrePeriodDays: 14)))
        _ = try await store.start("exp-new", now: cut.adding(microseconds: 14 * Self.day))

        let running = try await pool.withConnection { try ExperimentRetention.runningExperiments(withEventsRecordedBefore: cut, on: $0) }
        #expect(running == ["exp-new"])
        await pool.close()
    }
}
