import EngageCore
import EventStore
import Experiments
import Foundation
import Postgres
@testable import Projections
import Testing
import TestSupport

/// A dashboard panel and the report answer the same question with the same figure, also where
/// the data has what the simulated population of `DashboardQueryTests` never has: a category
/// nothing was displayed in, and a log the projector has not started on.
@Suite("Dashboards agree with the report")
struct DashboardAgreesWithReportTests {
    static let app = "dash-agree"

    static func query(titled prefix: String) throws -> (DashboardQueryTests.PanelQuery, DashboardQueryTests.Dashboard) {
        for dashboard in try DashboardQueryTests.loadDashboards() {
            if let query = dashboard.queries.first(where: { $0.title.hasPrefix(prefix) }) { return (query, dashboard) }
        }
        throw DashboardQueryTests.LoadError(description: "no panel titled \(prefix)…")
    }

    @Test func aCategoryWithNothingDisplayedIsExcludedByThePanelAsByTheReport() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        let store = EventStore(pool: pool)
        var items = ProjectionFixtures.events(notifications: 240, seed: 81, app: Self.app)
        // Delivered, never displayed: the report lists the category as excluded ("no displays").
        for n in 0..<4 {
            items.append(AppendItem(appID: Self.app, event: Event(
                eventID: ProjectionFixtures.id(82, UInt64(n)), notificationID: "silent-\(n)", deviceID: "device-\(n)",
                category: "silent_sync", occurredAt: ProjectionFixtures.start,
                details: .delivered(DeliveredDetails(attachment: DeliveredAttachment(kind: .noAttachment), outcome: .attached,
                                                     processingMS: 10, timeWillExpire: false, network: .wifi, strategy: .full)))))
        }
        _ = try await store.append(items)
        try await HistogramTrimTests.catchUp(pool)

        let (panel, dashboard) = try Self.query(titled: "Adjusted for category")
        let categories = try await pool.withConnection { connection in
            try connection.query("SELECT DISTINCT category FROM engagement_daily WHERE app_id = \(Self.app) ORDER BY 1")
                .rows.map { try $0.decode(0, as: String.self) }
        }
        #expect(categories.contains("silent_sync"), "the dashboard's category variable offers it")
        let sql = try DashboardQueryTests.render(panel.sql, range: .relative, variables: dashboard.variables,
                                                 values: ["app": [Self.app], "category": categories])
        let result = try await DashboardQueryTests.run(sql, on: pool)

        // The report over the same days as the panel's range (so notifications are the unit in both).
        let now = Timestamp(microsecondsSinceEpoch: Timestamp.nowMicros())
        let report = try await ReportQuery(appID: Self.app, from: UTCDay(now.adding(microseconds: -30 * Timestamp.microsecondsPerDay)),
                                           through: UTCDay(now.adding(microseconds: Timestamp.microsecondsPerDay)))
            .run(on: pool, now: now)
        #expect(report.stratified.count == EngagementMetric.reported.count)
        for summary in report.stratified {
            let cell = "panel against report, \(summary.metric.label)"
            guard let row = DashboardQueryTests.rows(result, where: "metric", is: summary.metric.label).first else {
                Issue.record("\(cell): no row")
                continue
            }
            #expect(summary.excluded.map(\.name).contains("silent_sync"), "\(cell): the report excludes it")
            #expect(DashboardQueryTests.number(row, result, "excluded") == Double(summary.excluded.count), "\(cell) excluded")
            #expect(DashboardQueryTests.number(row, result, "categories") == Double(summary.categories.count), "\(cell) categories")
            if let ratio = summary.riskRatio?.estimate {
                #expect(DashboardQueryTests.number(row, result, "ratio").map { abs($0 - ratio) <= 1e-9 * ratio } == true,
                        "\(cell) ratio")
            }
        }
        await pool.close()
    }

    /// A guardrail no test could read, on its forbidden side, blocks the ship as a violated one
    /// does: the experiments dashboard showed it as a green "ok" beside the blocked decision.
    @Test func aGuardrailThatBlockedTheShipIsNotShownAsPassed() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        let now = Timestamp(microsecondsSinceEpoch: Timestamp.nowMicros())
        let definition = ExperimentDefinition(
            id: "guardrail-untestable", appID: Self.app,
            arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "treatment", strategy: .thumbnail, weight: 0.5)],
            primaryMetric: .open, guardrails: [ExperimentGuardrail(.dismiss)], startAt: now.adding(microseconds: -86_400_000_000))
        _ = try await ExperimentStore(pool: pool).create(definition)
        // Opened more in the treatment; dismissed by 30 of its devices and by none of the control's.
        var tallies = ExperimentTallies(definition: definition)
        for (arm, opened, dismissed) in [("control", 1_000, 0), ("treatment", 1_300, 30)] {
            for i in 0..<10_000 {
                tallies.record(arm: arm, device: "\(arm)-\(i)", FunnelCounts([
                    .notifications: 1, .delivered: 1, .displayed: 1, .richDisplayed: 1,
                    .opened: i < opened ? 1 : 0, .dismissed: i < dismissed ? 1 : 0]))
            }
        }
        let result = ExperimentAnalysis.run(definition: definition, tallies: tallies, now: now)
        #expect(result.decision == .continue, "\(result.rationale)")
        let json = String(decoding: result.canonicalJSON, as: UTF8.self)
        try await pool.withConnection { connection in
            try connection.execute("""
                INSERT INTO experiment_runs (experiment_id, scheduled_for, status, finished_at, decision, result)
                VALUES (\(definition.id), now(), 'done', now(), 'continue', \(json)::jsonb)
                """)
        }

        let (panel, dashboard) = try Self.query(titled: "Primary and guardrail metrics in the latest analysis")
        let sql = try DashboardQueryTests.render(panel.sql, range: .relative, variables: dashboard.variables,
                                                 values: ["app": [Self.app], "experiment": [definition.id]])
        let rows = try await DashboardQueryTests.run(sql, on: pool)
        let dismiss = try #require(DashboardQueryTests.rows(rows, where: "metric", is: "dismiss").first)
        #expect(dismiss[rows.column("guardrail")!].text == "worse, untestable")

        // A run stored before results said so: the view reads it from the rates and direction.
        let legacy = json.replacingOccurrences(of: #","guardrail_untested_and_worse":true"#, with: "")
            .replacingOccurrences(of: #","guardrail_untested_and_worse":false"#, with: "")
        #expect(!legacy.contains("guardrail_untested_and_worse"))
        try await pool.withConnection { connection in
            try connection.execute("""
                INSERT INTO experiment_runs (experiment_id, scheduled_for, status, finished_at, decision, result)
                VALUES (\(definition.id), now() + interval '1 hour', 'done', now(), 'continue', \(legacy)::jsonb)
                """)
        }
        let again = try await DashboardQueryTests.run(sql, on: pool)
        let legacyDismiss = try #require(DashboardQueryTests.rows(again, where: "metric", is: "dismiss").first)
        #expect(legacyDismiss[again.column("guardrail")!].text == "worse, untestable")
        await pool.close()
    }

    @Test func theLagPanelShowsALogTheProjectorHasNotStartedOn() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        _ = try await EventStore(pool: pool).append(ProjectionFixtures.events(notifications: 20, seed: 83, app: Self.app))
        let stored = try await pool.withConnection { try $0.query("SELECT count(*) FROM events")[0].decode(0, as: Int.self) }
        // What /metrics and the report say: every event behind.
        let lag = try await pool.withConnection { try ProjectorLag.read(on: $0) }
        #expect(lag.events == stored)

        for title in ["Projector lag", "Projection checkpoints"] {
            let (panel, dashboard) = try Self.query(titled: title)
            let sql = try DashboardQueryTests.render(panel.sql, range: .relative, variables: dashboard.variables,
                                                     values: ["app": [Self.app]])
            let result = try await DashboardQueryTests.run(sql, on: pool)
            let row = DashboardQueryTests.rows(result, where: "projection", is: EngagementStore.projectionName).first
            #expect(row.flatMap { DashboardQueryTests.number($0, result, "unprojected_events") } == Double(stored), "\(title) behind")
            #expect(row.flatMap { DashboardQueryTests.number($0, result, "lag_seconds") }.map { $0 > 0 } == true, "\(title) lag")
            #expect(row.flatMap { DashboardQueryTests.number($0, result, "events_processed") } == 0, "\(title) processed")
        }
        // Once the projector has a checkpoint, its row is the one shown, and only it.
        try await HistogramTrimTests.catchUp(pool)
        let (panel, dashboard) = try Self.query(titled: "Projector lag")
        let result = try await DashboardQueryTests.run(
            try DashboardQueryTests.render(panel.sql, range: .relative, variables: dashboard.variables, values: ["app": [Self.app]]),
            on: pool)
        let rows = DashboardQueryTests.rows(result, where: "projection", is: EngagementStore.projectionName)
        #expect(rows.count == 1)
        #expect(rows.first.flatMap { DashboardQueryTests.number($0, result, "events_processed") } == Double(stored))
        #expect(rows.first.flatMap { DashboardQueryTests.number($0, result, "unprojected_events") } == 0)
        await pool.close()
    }
}
