import EngageCore
import EventStore
import Foundation
import Postgres
import Projections
import Runtime
import Testing
import TestSupport

/// End to end without HTTP: simulated traffic with a known truth goes straight into the log
/// (duplicates and shuffled notifications included), the projector folds it, and the report read
/// back from the read model must count exactly what the simulator realized and recover the rates
/// and lifts it was configured with.
@Suite("Report recovers the simulated truth")
struct ReportRecoveryTests {
    static let seed: UInt64 = 20_261_129
    static let app = "sim-app"
    /// Another app's traffic in the same log, which the report for `app` must leave out.
    static let otherApp = "other-app"

    /// The report's rates, each counting one engagement stage of the simulator.
    static let kinds: [(metric: ReportMetric, kind: FunnelStage)] = EngagementMetric.reported.map {
        (ReportMetric.engagement($0), $0.numerator)
    }

    /// The most misses a correct report could plausibly show among `cells` intervals that each
    /// miss the truth with probability `missRate`: the smallest m with P(Binomial(cells, missRate) > m)
    /// at most `falseAlarm`. A 95% interval misses 5% of the time, so demanding that all of
    /// about 35 intervals cover their true value would fail a correct report for 4 seeds in 5;
    /// with a 1% false-alarm rate 35 cells allow 5 misses (86% coverage). The seed is fixed, so
    /// the test is deterministic; the bound says how lucky the seed had to be. (The cells share
    /// notifications, so misses are not quite independent; the bound is a guide, not exact.)
    /// Intervals that are too narrow or off centre miss far more often: 80% intervals would miss
    /// 7 of 35, a rate computed over the wrong denominator nearly all.
    static func allowedMisses(cells: Int, missRate: Double = 0.05, falseAlarm: Double = 0.01) -> Int {
        var probabilityAtMost = 0.0
        var term = pow(1 - missRate, Double(cells))  // P(X = 0)
        for misses in 0...cells {
            probabilityAtMost += term
            if 1 - probabilityAtMost <= falseAlarm { return misses }
            // P(X = k + 1) = P(X = k) · (n − k) / (k + 1) · p / (1 − p)
            term *= Double(cells - misses) / Double(misses + 1) * missRate / (1 - missRate)
        }
        return cells
    }

    @Test func allowedMissesFollowTheBinomialTail() {
        // P(Binomial(34, 0.05) > 4) = 0.0259 and > 5 = 0.0063 (computed independently).
        #expect(Self.allowedMisses(cells: 34) == 5)
        // P(Binomial(18, 0.05) > 3) = 0.0109 and > 4 = 0.0016.
        #expect(Self.allowedMisses(cells: 18) == 4)
        #expect(Self.allowedMisses(cells: 0) == 0)
    }

    /// Appends a simulation's events in batches as a client would send them, and returns its truth.
    static func appendSimulation(_ simulator: inout TrafficSimulator, app: String, to store: EventStore) async throws
        -> SimulationGroundTruth
    {
        while let batch = simulator.next(batchSize: 2_000) {
            _ = try await store.append(batch.map { AppendItem(appID: app, event: $0) })
        }
        return simulator.groundTruth
    }

    /// Waits until the projector has folded every event of the log. Compares the checkpoint's
    /// event count with the log's, not with the readable head, which other tests' transactions
    /// in the same cluster can hold back.
    static func waitUntilCaughtUp(_ pool: ConnectionPool, timeout: Duration = .seconds(90)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while clock.now < deadline {
            let (processed, stored) = try await pool.withConnection { connection -> (Int, Int) in
                let processed = try connection.query("""
                    SELECT coalesce((SELECT events_processed FROM projection_checkpoints WHERE projection = 'engagement'), 0)
                    """)[0].decode(0, as: Int.self)
                let stored = try connection.query("SELECT count(*) FROM events")[0].decode(0, as: Int.self)
                return (processed, stored)
            }
            if processed == stored { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("the projector did not catch up within \(timeout)")
        throw CancellationError()
    }

    @Test(.timeLimit(.minutes(3)))
    func reportCountsTheRealizedTruthAndItsIntervalsCoverTheConfiguredRates() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 4)
        let store = EventStore(pool: pool)
        let now = Timestamp(microsecondsSinceEpoch: Timestamp.nowMicros())
        // One day of traffic that ended a day ago: within the 30 days the server would accept.
        let start = now.adding(microseconds: -2 * Timestamp.microsecondsPerDay)
        var scenario = SimulationScenario.standard
        scenario.notificationCount = 20_000
        let options = SimulationOptions(outOfOrderFraction: 0.2, duplicateFraction: 0.03)
        var simulator = try TrafficSimulator(scenario: scenario, seed: Self.seed, start: start, options: options)
        var otherScenario = SimulationScenario.standard
        otherScenario.notificationCount = 500
        var other = try TrafficSimulator(scenario: otherScenario, seed: Self.seed + 1, start: start, options: options)

        var configuration = Projector.Configuration()
        configuration.pollInterval = .milliseconds(100)
        let projector = Projector(pool: pool, configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()),
                                  metrics: ProjectorMetrics(registry: MetricsRegistry()))
        let running = Task { try await projector.run() }
        let truth: SimulationGroundTruth
        let stored: Int
        let report: EngagementReport
        let actionReport: EngagementReport
        let dayReport: EngagementReport
        let rebuiltReport: EngagementReport
        do {
            // The projector folds while the events arrive, so late events meet existing states.
            truth = try await Self.appendSimulation(&simulator, app: Self.app, to: store)
            _ = try await Self.appendSimulation(&other, app: Self.otherApp, to: store)
            try await Self.waitUntilCaughtUp(pool)
            stored = try await pool.withConnection { connection in
                try connection.query("SELECT count(*) FROM events WHERE app_id = \(Self.app)")[0].decode(0, as: Int.self)
            }
            report = try await ReportQuery(appID: Self.app).run(on: pool, now: now)
            actionReport = try await ReportQuery(appID: Self.app, grouping: .action).run(on: pool, now: now)
            dayReport = try await ReportQuery(appID: Self.app, grouping: .day).run(on: pool, now: now)
            // A rebuild from the log, with the projector still running, gives the same report.
            try await EngagementRebuild(pool: pool).run()
            try await Self.waitUntilCaughtUp(pool)
            rebuiltReport = try await ReportQuery(appID: Self.app).run(on: pool, now: now)
        } catch {
            running.cancel()
            _ = try? await running.value
            await pool.close()
            throw error
        }
        running.cancel()
        _ = try? await running.value
        await pool.close()

        // The simulation did produce the disorder this test is about.
        #expect(truth.notifications == 20_000)
        #expect(truth.duplicatesEmitted > 1_000)
        #expect(truth.shuffledNotifications > 3_000)
        #expect(stored == truth.events, "every distinct event stored once, no duplicate")

        // Both read a caught-up model; only the checkpoint's time differs after the rebuild.
        #expect(report.currentAsOf?.lagEvents == 0 && rebuiltReport.currentAsOf?.lagEvents == 0)
        var rebuiltNumbers = rebuiltReport, numbers = report
        rebuiltNumbers.currentAsOf = nil
        numbers.currentAsOf = nil
        #expect(rebuiltNumbers == numbers, "the rebuilt read model reports the same")
        try Self.checkExactCounts(report, truth: truth)
        try Self.checkActionsAndTelemetry(actionReport: actionReport, report: report, truth: truth)
        Self.checkDaysAddUp(dayReport, report: report)
        try Self.checkIntervalsCoverTheConfiguredTruth(report, truth: truth)
        try Self.checkRenderings(report, truth: truth)
    }

    // MARK: - Exact counts

    static func checkExactCounts(_ report: EngagementReport, truth: SimulationGroundTruth) throws {
        #expect(report.groups.map(\.key.category) == truth.categories.map(\.name).sorted())
        #expect(report.filters.appIDs == [app])
        var notifications = 0
        for category in truth.categories {
            let group = try #require(report.groups.first { $0.key.category == category.name })
            for presentation in [Presentation.rich, .plain] {
                let counts = presentation == .rich ? group.rich : group.plain
                let realized = truth.realized(category: category.name, presentation: presentation)
                let cell = "\(category.name)/\(presentation.rawValue)"
                for stage in [.displayed] + FunnelStage.engagements {
                    #expect(counts[stage] == realized[stage], "\(stage.name) \(cell)")
                }
                // Every simulated notification is delivered and displayed.
                #expect(counts[.notifications] == realized[.displayed], "notifications \(cell)")
                #expect(counts[.delivered] == realized[.displayed], "delivered \(cell)")
                notifications += counts[.notifications]
                // The rates' numerators and denominators are those counts.
                for (metric, kind) in kinds {
                    let comparison = try #require(group.metrics.first { $0.metric == metric })
                    let estimate = presentation == .rich ? comparison.rich : comparison.plain
                    #expect(estimate.successes == realized[kind] && estimate.trials == realized[.displayed], "\(metric.key) \(cell)")
                }
            }
            #expect(group.notDisplayed == PresentationCounts(), "\(category.name): every notification was displayed")
        }
        #expect(notifications == truth.notifications)
        #expect(report.total.rich[.displayed] == truth.realized(presentation: .rich)[.displayed])
        #expect(report.total.plain[.displayed] == truth.realized(presentation: .plain)[.displayed])
        #expect(report.total.rich[.expanded] == truth.realized(presentation: .rich)[.expanded])
        #expect(report.total.plain[.opened] == truth.realized(presentation: .plain)[.opened])
    }

    static func checkActionsAndTelemetry(actionReport: EngagementReport, report: EngagementReport,
                                         truth: SimulationGroundTruth) throws {
        for category in truth.categories {
            let group = try #require(actionReport.groups.first { $0.key.category == category.name })
            for presentation in [Presentation.rich, .plain] {
                let counts = presentation == .rich ? group.rich : group.plain
                let realized = truth.realized(category: category.name, presentation: presentation)
                #expect(counts.actions == realized.actions, "\(category.name)/\(presentation.rawValue) actions")
            }
            #expect(group.metrics.map(\.metric.key).allSatisfy { $0.hasPrefix("action:") })

            // The extension's outcomes per category, summed over attachment kinds.
            var outcomes: [DeliveryOutcome: Int] = [:]
            for summary in report.telemetry where summary.category == category.name {
                for (outcome, count) in summary.outcomes where count > 0 { outcomes[outcome, default: 0] += count }
            }
            #expect(outcomes == truth.outcomesByCategory[category.name]?.counts, "\(category.name) outcomes")
        }
        #expect(report.telemetryTotal.delivered == truth.notifications)
        #expect(report.telemetryByAttachment.reduce(0) { $0 + $1.delivered } == truth.notifications)
    }

    /// The day grouping splits the same counts by day; the simulated day spans two UTC days at most.
    static func checkDaysAddUp(_ dayReport: EngagementReport, report: EngagementReport) {
        #expect(dayReport.total.rich == report.total.rich)
        #expect(dayReport.total.plain == report.total.plain)
        let days = Set(dayReport.groups.compactMap(\.key.day))
        #expect((1...2).contains(days.count))
        for group in report.groups {
            let parts = dayReport.groups.filter { $0.key.category == group.key.category }
            #expect(parts.allSatisfy { $0.key.day != nil })
            #expect(parts.reduce(0) { $0 + $1.rich[.displayed] } == group.rich[.displayed])
            #expect(parts.reduce(0) { $0 + $1.plain[.expanded] } == group.plain[.expanded])
        }
    }

    // MARK: - Intervals against the configured truth

    static func checkIntervalsCoverTheConfiguredTruth(_ report: EngagementReport, truth: SimulationGroundTruth) throws {
        var rateCells = 0, liftCells = 0
        var rateMisses: [String] = [], liftMisses: [String] = []
        for category in truth.categories {
            let group = try #require(report.groups.first { $0.key.category == category.name })
            for (metric, kind) in kinds {
                let comparison = try #require(group.metrics.first { $0.metric == metric })
                let richRate = try #require(truth.configuredRates(category: category.name, presentation: .rich))[kind]
                let plainRate = try #require(truth.configuredRates(category: category.name, presentation: .plain))[kind]
                for (estimate, rate, name) in [(comparison.rich, richRate, "rich"), (comparison.plain, plainRate, "plain")] {
                    let cell = "\(category.name)/\(name) \(metric.key) \(rate)"
                    guard rate > 0 else {
                        // Nothing can happen that was configured never to happen.
                        #expect(estimate.successes == 0, "\(cell)")
                        continue
                    }
                    // Enough data: at least 10 expected successes and failures, so the interval is informative.
                    let trials = Double(estimate.trials)
                    guard trials * rate >= 10, trials * (1 - rate) >= 10 else { continue }
                    let interval = try #require(estimate.interval, "\(cell)")
                    rateCells += 1
                    if !interval.contains(rate) { rateMisses.append("\(cell) not in \(interval)") }
                }
                guard richRate > 0 || plainRate > 0, !comparison.smallSample else { continue }
                let lift = richRate - plainRate
                let interval = try #require(comparison.absoluteInterval, "\(category.name) \(metric.key)")
                liftCells += 1
                if !interval.contains(lift) { liftMisses.append("\(category.name) \(metric.key) lift \(lift) not in \(interval)") }
            }
        }
        // Most cells have data: 4 categories × 2 presentations × 5 rates, less the replies configured to 0.
        #expect(rateCells >= 30)
        #expect(liftCells >= 15)
        #expect(rateMisses.count <= allowedMisses(cells: rateCells),
                "Wilson intervals missed \(rateMisses.count) of \(rateCells) configured rates: \(rateMisses)")
        #expect(liftMisses.count <= allowedMisses(cells: liftCells),
                "Newcombe intervals missed \(liftMisses.count) of \(liftCells) configured lifts: \(liftMisses)")

        // The strongest configured effect is found, in the right direction: new_photo's 1.6×
        // expansion rate (10% → 16%). promo_sale, configured with no lift, shows no large one.
        let photo = try #require(report.groups.first { $0.key.category == "new_photo" }?
            .metrics.first { $0.metric == .engagement(.expansion) })
        #expect(photo.significant == true && (photo.absoluteLift ?? 0) > 0)
        #expect(try #require(photo.absoluteInterval).lower > 0)
        let promo = try #require(report.groups.first { $0.key.category == "promo_sale" })
        for comparison in promo.metrics where comparison.absoluteLift != nil {
            #expect(abs(comparison.absoluteLift!) < 0.06, "promo_sale \(comparison.metric.key)")
        }
    }

    // MARK: - Renderings

    static func checkRenderings(_ report: EngagementReport, truth: SimulationGroundTruth) throws {
        // Table: every category has its block, the caveat (wrapped at 100 columns) is all there.
        let table = report.renderTable()
        for category in truth.categories {
            #expect(table.contains("== \(category.name) =="), "table block of \(category.name)")
        }
        #expect(table.contains("== all categories (crude) =="))
        #expect(table.contains("== ADJUSTED FOR CATEGORY"))
        #expect(report.stratified.count == ReportMetric.standard.count)
        #expect(report.stratified.allSatisfy { $0.categories.count == truth.categories.count && $0.riskRatio != nil })
        let lines = table.split(separator: "\n", omittingEmptySubsequences: false)
        let caveatStart = try #require(lines.firstIndex { $0.hasPrefix("CAVEAT: ") })
        let caveatLines = lines[caveatStart...].prefix { !$0.isEmpty }
        #expect(caveatLines.joined(separator: " ") == "CAVEAT: " + EngagementReport.caveat)
        #expect(lines.allSatisfy { $0.count <= 200 })
        #expect(!table.contains("nan") && !table.contains("inf"))

        // JSON: parses with the strict parser; its total is the report's.
        let json = try JSON.parse(report.renderJSON())
        func member(_ node: JSON.Node, _ key: StaticString) throws -> JSON.Node { try #require(json.member(node, key)) }
        #expect(json.string(try member(json.root, "caveat")) == EngagementReport.caveat)
        #expect(json.string(try member(json.root, "rate_denominator")) == "displayed")
        #expect(json.count(try member(json.root, "groups")) == truth.categories.count)
        let total = try member(json.root, "total")
        #expect(json.isNull(try member(total, "category")))
        for (side, counts) in [("rich", report.total.rich), ("plain", report.total.plain)] {
            let node = try #require(side == "rich" ? json.member(total, "rich") : json.member(total, "plain"))
            #expect(json.int64(try member(node, "notifications")) == Int64(counts[.notifications]), "\(side)")
            #expect(json.int64(try member(node, "displayed")) == Int64(counts[.displayed]), "\(side)")
            #expect(json.int64(try member(node, "expanded")) == Int64(counts[.expanded]), "\(side)")
            #expect(json.int64(try member(node, "actioned")) == Int64(counts[.actioned]), "\(side)")
            #expect(json.int64(try member(node, "opened")) == Int64(counts[.opened]), "\(side)")
            #expect(json.int64(try member(node, "dismissed")) == Int64(counts[.dismissed]), "\(side)")
            #expect(json.int64(try member(node, "replied")) == Int64(counts[.replied]), "\(side)")
        }
        let metrics = Array(json.elements(try member(total, "metrics")))
        #expect(metrics.count == report.total.metrics.count)
        for (node, comparison) in zip(metrics, report.total.metrics) {
            #expect(json.string(try member(node, "metric")) == comparison.metric.key)
            let rich = try member(node, "rich")
            #expect(json.double(try member(rich, "rate")) == comparison.rich.rate)
            #expect(json.double(try member(rich, "lower")) == comparison.rich.interval?.lower)
            #expect(json.double(try member(node, "absolute_lift")) == comparison.absoluteLift)
        }
        let telemetryTotal = try member(json.root, "telemetry_total")
        #expect(json.int64(try member(telemetryTotal, "delivered")) == Int64(truth.notifications))

        // CSV: the header, exactly one caveat row with the caveat in the value field.
        let records = RFC4180.parse(report.renderCSV())
        let value = try #require(records.first?.firstIndex(of: "value"))
        #expect(records.first?.first == "section" && records.first == EngagementReport.csvHeader)
        let width = try #require(records.first?.count)
        #expect(records.allSatisfy { $0.count == width }, "every record has the header's number of fields")
        let caveats = records.filter { $0.first == "meta" && $0.count > 4 && $0[4] == "caveat" }
        #expect(caveats.count == 1)
        #expect(caveats.first?[value] == EngagementReport.caveat)
        #expect(records.filter { $0.first == "group" }.count == truth.categories.count * ReportMetric.standard.count)

        // HTML: a page with charts and the caveat (which has nothing to escape).
        let html = report.renderHTML()
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.contains("<svg"))
        #expect(html.contains(EngagementReport.caveat))
        for category in truth.categories { #expect(html.contains(category.name)) }
    }
}

/// A small RFC 4180 reader for checking the CSV rendering: quoted fields may hold commas,
/// doubled quotes and line breaks; records end with CRLF.
enum RFC4180 {
    static func parse(_ text: String) -> [[String]] {
        var records: [[String]] = []
        var record: [String] = []
        var field = ""
        var quoted = false
        var characters = Array(text.unicodeScalars)[...]
        while let character = characters.popFirst() {
            if quoted {
                if character == "\"" {
                    if characters.first == "\"" {
                        field.unicodeScalars.append("\"")
                        characters.removeFirst()
                    } else {
                        quoted = false
                    }
                } else {
                    field.unicodeScalars.append(character)
                }
            } else if character == "\"" && field.isEmpty {
                quoted = true
            } else if character == "," {
                record.append(field)
                field = ""
            } else if character == "\r" && characters.first == "\n" {
                characters.removeFirst()
                record.append(field)
                records.append(record)
                record = []
                field = ""
            } else {
                field.unicodeScalars.append(character)
            }
        }
        if !field.isEmpty || !record.isEmpty {
            record.append(field)
            records.append(record)
        }
        return records
    }
}
