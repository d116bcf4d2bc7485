import EngageCore
import EventStore
import Experiments
import Foundation
import Postgres
import Projections
import Runtime
import Testing
import TestSupport

/// The Grafana dashboards under `dashboards/` against a real read model: every panel's SQL and
/// every template variable's query is rendered the way Grafana renders it, run on a migrated
/// database holding simulated traffic, and must return the columns its panel shows, with rows,
/// sane values, and (for the panels that count) exactly what the simulator realized.
@Suite("Dashboard queries run on simulated data")
struct DashboardQueryTests {
    static let app = "sim-app"
    /// Another app in the same log: a panel that forgets `$app` counts its notifications too.
    static let otherApp = "other-app"
    static let datasourceUID = "engage-postgres"

    /// The columns each query panel returns, in order, by dashboard uid and panel title. Every
    /// query panel needs an entry and every entry a panel, so this table is the panels' contract.
    static let expectedColumns: [String: [String: [String]]] = [
        "engage-rich-vs-plain": [
            "Adjusted for category: rich / plain (Mantel-Haenszel), the answer":
                ["metric", "categories", "excluded", "ratio", "ratio_lower", "ratio_upper", "significant",
                 "crude_ratio", "crude_ratio_lower", "crude_ratio_upper", "crude_vs_adjusted"],
            "Rates by category, rich vs plain (selected range)":
                ["category", "presentation", "displayed"] + intervals("expansion_rate", "action_rate", "open_rate", "dismiss_rate", "reply_rate"),
            "Rates by category, rich vs plain (all time, engagement_rates_by_category)":
                ["category", "presentation", "displayed"] + intervals("expansion_rate", "action_rate", "open_rate") + ["dismiss_rate", "reply_rate"],
            "Expansion rate per day: $category": ["time"] + intervals("rich", "plain"),
            "Action rate per day: $category": ["time"] + intervals("rich", "plain"),
            "Open rate per day: $category": ["time"] + intervals("rich", "plain"),
            "Dismiss rate per day: $category": ["time"] + intervals("rich", "plain"),
            "Reply rate per day: $category": ["time"] + intervals("rich", "plain"),
            "Funnel: delivered → displayed → expanded → actioned / opened": ["stage", "rich", "plain", "not_displayed"],
            "Funnel conversion (share of notifications)":
                ["presentation", "notifications", "delivered_share", "displayed_share", "expanded_share", "actioned_share", "opened_share"],
            "App-defined actions, rich vs plain": ["action_id", "rich", "plain"],
        ],
        "engage-extension": [
            "Outcomes per category and attachment kind":
                ["category", "attachment_kind", "delivered", "attached", "timeout", "too_large", "unsupported_format",
                 "download_failed", "not_requested", "time_will_expire", "cache_hit_rate", "bytes"],
            "Outcomes per day": ["time", "attached", "timeout", "too_large", "unsupported_format", "download_failed", "not_requested"],
            "Timeout and too-large rates per day": ["time", "timeout_rate", "too_large_rate", "download_failed_rate"],
            "serviceExtensionTimeWillExpire per day": ["time", "time_will_expire", "time_will_expire_rate"],
            "Media cache hit rate per day": ["time", "cache_hit_rate"],
            "Attachment bytes per day": ["time", "bytes", "mean_bytes"],
            "Attachment download latency percentiles per day": ["time", "p50", "p90", "p99"],
            "Extension processing time percentiles per day": ["time", "p50", "p90", "p99"],
            "Attachment download latency distribution": ["range", "downloads"],
        ],
        "engage-ingestion": [
            "Events recorded per minute by type": ["time", "metric", "value"],
            "Projector lag": ["projection", "lag_seconds", "events_processed", "unprojected_events", "updated_at"],
            "Projection checkpoints": ["projection", "lag_seconds", "events_processed", "unprojected_events", "updated_at"],
            "Recording delay per minute (recorded_at − occurred_at)": ["time", "p50_seconds", "p99_seconds"],
        ],
        "engage-experiments": [
            "Experiments of $app": ["experiment", "status", "arms", "primary_metric", "start_at", "stop_at", "stopped_at",
                                    "stop_reason", "looks", "latest_decision", "latest_decision_arm", "latest_look_at"],
            "Arms of $experiment in its latest analysis":
                ["arm", "strategy", "role", "weight", "devices", "notifications", "delivered", "displayed", "rich_display_rate",
                 "primary_metric", "successes", "trials", "primary_rate", "processing_ms_p50", "processing_ms_p95"],
            "Relative lift of the primary metric per look: sequential and fixed intervals":
                ["time", "metric", "lift", "sequential_lower", "sequential_upper", "fixed_lower", "fixed_upper"],
            "Sequential p-value of the primary metric per look": ["time", "metric", "sequential_p_value", "fixed_p_value", "alpha"],
            "Primary and guardrail metrics in the latest analysis":
                ["arm", "metric", "role", "direction", "control_rate", "variant_rate", "lift", "sequential_lower", "sequential_upper",
                 "sequential_p_value", "fixed_lower", "fixed_upper", "fixed_p_value", "p_value_correction", "chance_to_win",
                 "decision_sequential_lower", "decision_sequential_upper", "decision_sequential_p_value", "cuped_variance_reduction",
                 "guardrail", "unavailable"],
            "Decisions of $experiment (event log)":
                ["run_id", "look", "scheduled_for", "analysed_at", "trigger", "decision", "arm", "reason", "rationale"],
            "Sample ratio mismatch p-value per look": ["time", "srm_p_value", "srm_threshold"],
            "Lifecycle of $experiment (event log)": ["at", "action", "status", "reason"],
            "Analysis runs by status (scheduled in the range)": ["status", "runs"],
            "Analysis runs needing attention":
                ["run_id", "experiment", "scheduled_for", "status", "attempts", "problem", "error", "lease_owner", "lease_until"],
            "Analysis duration per run": ["time", "metric", "duration_seconds"],
        ],
    ]

    /// The intervals of a lift are named by their kind (`sequential_lower`, `fixed_upper`) and
    /// surround the column `lift`; unlike a rate's, they may leave [0, 1].
    /// Intervals around the relative lift `lift` (the decision's, from the log ratio, has the same estimate).
    static let liftIntervals: Set<String> = ["sequential", "fixed", "decision_sequential"]

    /// The intervals of a ratio of rates surround the ratio itself and live on (0, inf), not [0, 1].
    static let ratioIntervals: Set<String> = ["ratio", "crude_ratio"]

    /// `x` followed by its Wilson bounds: `expansion_rate` → expansion_rate, expansion_lower,
    /// expansion_upper; `rich` → rich, rich_lower, rich_upper.
    static func intervals(_ names: String...) -> [String] {
        names.flatMap { name -> [String] in
            let base = name.hasSuffix("_rate") ? String(name.dropLast(5)) : name
            return [name, base + "_lower", base + "_upper"]
        }
    }

    // MARK: - Loading the dashboards

    struct Variable {
        var name: String
        var query: String
        /// Multi-value or "All": Grafana's SQL data sources quote each value and join them with
        /// commas; a single-value variable is inserted with quotes doubled but not quoted.
        var quotesValues: Bool
    }

    struct PanelQuery {
        var dashboard: String
        var title: String
        var type: String
        var format: String
        var sql: String
        /// The panel's JSON, for checking its field config against the columns.
        var panel: [String: Any]
        var name: String { "\(dashboard) / \(title)" }
    }

    struct Dashboard {
        var file: String
        var uid: String
        var json: [String: Any]
        var variables: [Variable]
        var panels: [[String: Any]]
        var queries: [PanelQuery]
    }

    struct LoadError: Error, CustomStringConvertible {
        var description: String
    }

    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func loadDashboards() throws -> [Dashboard] {
        let directory = repositoryRoot.appendingPathComponent("dashboards")
        guard let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else {
            throw LoadError(description: "cannot list \(directory.path)")
        }
        var files: [URL] = []
        for case let url as URL in walker where url.pathExtension == "json" { files.append(url) }
        return try files.sorted { $0.path < $1.path }.map(loadDashboard)
    }

    static func loadDashboard(_ url: URL) throws -> Dashboard {
        let file = url.lastPathComponent
        guard let json = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any],
              let uid = json["uid"] as? String else {
            throw LoadError(description: "\(file): not a dashboard object with a uid")
        }
        var variables: [Variable] = []
        let templating = (json["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        for variable in templating {
            guard let name = variable["name"] as? String else { throw LoadError(description: "\(file): a variable without a name") }
            let query = (variable["query"] as? String) ?? ((variable["query"] as? [String: Any])?["rawSql"] as? String) ?? ""
            variables.append(Variable(name: name, query: query,
                                      quotesValues: (variable["multi"] as? Bool ?? false) || (variable["includeAll"] as? Bool ?? false)))
        }
        // Panels, including those folded into collapsed rows.
        var panels: [[String: Any]] = []
        for panel in json["panels"] as? [[String: Any]] ?? [] {
            panels.append(panel)
            panels += panel["panels"] as? [[String: Any]] ?? []
        }
        var queries: [PanelQuery] = []
        for panel in panels {
            let title = panel["title"] as? String ?? "(untitled)"
            for target in panel["targets"] as? [[String: Any]] ?? [] {
                queries.append(PanelQuery(dashboard: uid, title: title, type: panel["type"] as? String ?? "",
                                          format: target["format"] as? String ?? "", sql: target["rawSql"] as? String ?? "",
                                          panel: panel))
            }
        }
        return Dashboard(file: file, uid: uid, json: json, variables: variables, panels: panels, queries: queries)
    }

    // MARK: - Rendering the macros as Grafana would

    /// The time range `$__timeFilter(column)` expands to.
    enum TimeRange: CaseIterable, CustomStringConvertible {
        /// `column BETWEEN now() - interval '30 days' AND now() + interval '1 day'`.
        case relative
        /// What Grafana sends: `column BETWEEN '2026-10-30T20:00:00.000Z' AND '...'`.
        case literal

        func filter(_ column: String) -> String {
            switch self {
            case .relative:
                return "\(column) BETWEEN now() - interval '30 days' AND now() + interval '1 day'"
            case .literal:
                let format = ISO8601DateFormatter()
                format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                let now = Date()
                return "\(column) BETWEEN '\(format.string(from: now.addingTimeInterval(-30 * 86_400)))'"
                    + " AND '\(format.string(from: now.addingTimeInterval(86_400)))'"
            }
        }

        var description: String { self == .relative ? "now()-relative range" : "ISO literal range" }
    }

    struct RenderError: Error, CustomStringConvertible {
        var description: String
    }

    /// Expands `$__timeFilter(x)` and the dashboard's variables. Any other `$` macro is an error:
    /// the dashboards keep to what both Grafana and this test understand.
    static func render(_ sql: String, range: TimeRange, variables: [Variable], values: [String: [String]]) throws -> String {
        var output = ""
        var rest = Substring(sql)
        while let dollar = rest.firstIndex(of: "$") {
            output += rest[..<dollar]
            let after = rest[rest.index(after: dollar)...]
            if after.hasPrefix("__timeFilter(") {
                let open = after.firstIndex(of: "(")!
                var depth = 0
                var close: Substring.Index?
                for index in after[open...].indices {
                    if after[index] == "(" { depth += 1 }
                    if after[index] == ")" { depth -= 1; if depth == 0 { close = index; break } }
                }
                guard let close else { throw RenderError(description: "unbalanced $__timeFilter(") }
                let column = after[after.index(after: open)..<close].trimmingCharacters(in: .whitespaces)
                guard !column.isEmpty else { throw RenderError(description: "$__timeFilter() without a column") }
                output += range.filter(column)
                rest = after[after.index(after: close)...]
                continue
            }
            let name = String(after.prefix { $0.isLetter || $0.isNumber || $0 == "_" })
            guard let variable = variables.first(where: { $0.name == name }), let chosen = values[name], !chosen.isEmpty else {
                throw RenderError(description: "unsupported macro or variable $\(after.prefix(24))")
            }
            if variable.quotesValues {
                output += chosen.map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" }.joined(separator: ",")
            } else {
                output += chosen[0].replacingOccurrences(of: "'", with: "''")
            }
            rest = after.dropFirst(name.count)
        }
        output += rest
        return output
    }

    @Test func renderingFollowsGrafanasQuotingRules() throws {
        let variables = [Variable(name: "app", query: "", quotesValues: false),
                         Variable(name: "category", query: "", quotesValues: true)]
        let rendered = try Self.render(
            "WHERE app_id = '$app' AND category IN ($category) AND $__timeFilter(day) AND x = 1",
            range: .relative, variables: variables, values: ["app": ["o'app"], "category": ["a", "b'c"]])
        #expect(rendered == "WHERE app_id = 'o''app' AND category IN ('a','b''c') AND "
            + "day BETWEEN now() - interval '30 days' AND now() + interval '1 day' AND x = 1")
        #expect(try Self.render("$__timeFilter(coalesce(a, b))", range: .relative, variables: [], values: [:])
            == "coalesce(a, b) BETWEEN now() - interval '30 days' AND now() + interval '1 day'")
        #expect(throws: RenderError.self) { try Self.render("$__timeGroupAlias(day, 1d)", range: .relative, variables: [], values: [:]) }
        #expect(throws: RenderError.self) { try Self.render("$app", range: .relative, variables: variables, values: [:]) }
        #expect(throws: RenderError.self) { try Self.render("${app}", range: .relative, variables: variables, values: ["app": ["x"]]) }
    }

    // MARK: - The dashboards' shape

    @Test func dashboardsAreWellFormedAndEveryPanelHasItsContract() throws {
        let dashboards = try Self.loadDashboards()
        #expect(Set(dashboards.map(\.uid)) == Set(Self.expectedColumns.keys), "one dashboard per expected uid")
        #expect(Set(dashboards.map(\.uid)).count == dashboards.count, "dashboard uids are unique")
        for dashboard in dashboards {
            let file = dashboard.file
            #expect(dashboard.json["schemaVersion"] as? Int == 39, "\(file) schemaVersion")
            #expect(!(dashboard.json["title"] as? String ?? "").isEmpty, "\(file) has a title")
            let variableNames = dashboard.variables.map(\.name)
            #expect(variableNames.first == "app", "\(file): $app comes first (others depend on it)")
            #expect(Set(variableNames).isSubset(of: ["app", "category", "experiment"]), "\(file) variables \(variableNames)")
            let templating = (dashboard.json["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
            for variable in templating {
                #expect(Self.datasourceUID(variable["datasource"]) == Self.datasourceUID, "\(file) variable \(variable["name"] ?? "")")
            }
            #expect(dashboard.variables.first { $0.name == "app" }?.quotesValues == false, "\(file): $app is single-valued")
            #expect(dashboard.variables.first { $0.name == "experiment" }?.quotesValues != true, "\(file): $experiment is single-valued")

            let ids = dashboard.panels.compactMap { $0["id"] as? Int }
            #expect(ids.count == dashboard.panels.count && Set(ids).count == ids.count, "\(file): every panel has a unique id")
            var titles: Set<String> = []
            for panel in dashboard.panels {
                let type = panel["type"] as? String ?? ""
                let title = panel["title"] as? String ?? ""
                #expect(panel["gridPos"] is [String: Any], "\(file) \(title) has a position")
                if type == "text" {
                    let content = (panel["options"] as? [String: Any])?["content"] as? String
                    #expect(content?.isEmpty == false, "\(file) \(title) has text")
                    continue
                }
                if type == "row" { continue }
                #expect(titles.insert(title).inserted, "\(file): panel titles are unique (\(title))")
                #expect(Self.datasourceUID(panel["datasource"]) == Self.datasourceUID, "\(file) \(title) datasource")
                let targets = panel["targets"] as? [[String: Any]] ?? []
                #expect(targets.count == 1, "\(file) \(title): one query per panel")
                for target in targets {
                    #expect(Self.datasourceUID(target["datasource"]) == Self.datasourceUID, "\(file) \(title) target datasource")
                    #expect(target["rawQuery"] as? Bool == true && target["editorMode"] as? String == "code", "\(file) \(title) raw SQL")
                    #expect(["table", "time_series"].contains(target["format"] as? String ?? ""), "\(file) \(title) format")
                }
                #expect(Self.expectedColumns[dashboard.uid]?[title] != nil, "\(file): no expected columns declared for '\(title)'")
            }
            for title in Self.expectedColumns[dashboard.uid]?.keys.sorted() ?? [] {
                #expect(dashboard.queries.contains { $0.title == title }, "\(file): expected panel '\(title)' is missing")
            }
            for query in dashboard.queries {
                // Variables are used as Grafana interpolates them: '$app' quoted by the query,
                // $category (quoted by Grafana) inside IN (...).
                for variable in dashboard.variables where query.sql.contains("$" + variable.name) {
                    let pattern = variable.quotesValues ? "IN ($\(variable.name))" : "'$\(variable.name)'"
                    #expect(query.sql.components(separatedBy: "$" + variable.name).count
                            == query.sql.components(separatedBy: pattern).count,
                            "\(query.name): use $\(variable.name) only as \(pattern)")
                }
                #expect(query.sql.contains("'$app'") || query.title.hasPrefix("Projector") || query.title.hasPrefix("Projection"),
                        "\(query.name) filters by app")
                let values = Dictionary(uniqueKeysWithValues: dashboard.variables.map { ($0.name, ["v"]) })
                do {
                    _ = try Self.render(query.sql, range: .relative, variables: dashboard.variables, values: values)
                } catch {
                    Issue.record("\(query.name): \(error)")
                }
            }
        }
    }

    static func datasourceUID(_ reference: Any?) -> String? {
        (reference as? [String: Any])?["uid"] as? String
    }

    // MARK: - The queries on simulated data

    struct Result {
        var columns: [String]
        var types: [UInt32]
        var rows: [[Value]]

        func column(_ name: String) -> Int? { columns.firstIndex(of: name) }
        func values(_ name: String) -> [Value] { column(name).map { index in rows.map { $0[index] } } ?? [] }
    }

    enum Value: Equatable {
        case null, number(Double), text(String), time(Date)
        var number: Double? { if case .number(let value) = self { value } else { nil } }
        var text: String? { if case .text(let value) = self { value } else { nil } }
        var time: Date? { if case .time(let value) = self { value } else { nil } }
    }

    static let numericTypes: Set<UInt32> = [PostgresType.int2, PostgresType.int4, PostgresType.int8,
                                            PostgresType.float4, PostgresType.float8, PostgresType.numeric]
    static let textTypes: Set<UInt32> = [PostgresType.text, PostgresType.varchar, PostgresType.name]

    static func run(_ sql: String, on pool: ConnectionPool) async throws -> Result {
        try await pool.withConnection { connection in
            // Dashboard SQL is repository content run as Grafana runs it; values went in quoted.
            let result = try connection.query(SQL(unsafeSQL: sql))
            var rows: [[Value]] = []
            for row in result.rows {
                var values: [Value] = []
                for (index, type) in result.columnTypes.enumerated() {
                    if row.isNull(index) {
                        values.append(.null)
                    } else if numericTypes.contains(type) {
                        values.append(.number(try row.decode(index, as: Double.self)))
                    } else if type == PostgresType.timestamptz {
                        values.append(.time(try row.decode(index, as: Date.self)))
                    } else {
                        values.append(.text(try row.decode(index, as: String.self)))
                    }
                }
                rows.append(values)
            }
            return Result(columns: result.columnNames, types: result.columnTypes, rows: rows)
        }
    }

    /// What the database holds for `app`, to check the panels against.
    struct Population {
        var truth: SimulationGroundTruth
        /// The app's experiments, newest first: the `$experiment` options.
        var experiments: [String]
        /// Experiment entries (lifecycle and analyses) the app's log holds besides the traffic.
        var experimentLogEntries: Int
    }

    /// Simulated traffic for two apps, folded by the projector, and the experiments of
    /// `DashboardExperimentData.swift` analysed on it; returns what `app` holds.
    static func populate(_ pool: ConnectionPool) async throws -> Population {
        let store = EventStore(pool: pool)
        let now = Timestamp(microsecondsSinceEpoch: Timestamp.nowMicros())
        let start = now.adding(microseconds: -2 * Timestamp.microsecondsPerDay)
        var scenario = SimulationScenario.standard
        scenario.notificationCount = 2_000
        scenario.deviceCount = 300
        // Some media prefetched, so the cache panels have hits to show.
        scenario.prefetchProbability = 0.3
        let options = SimulationOptions(outOfOrderFraction: 0.1, duplicateFraction: 0.02)
        var simulator = try TrafficSimulator(scenario: scenario, seed: 20_261_130, start: start, options: options)
        var otherScenario = SimulationScenario.standard
        otherScenario.notificationCount = 300
        var other = try TrafficSimulator(scenario: otherScenario, seed: 20_261_131, start: start, options: options)

        var configuration = Projector.Configuration()
        configuration.pollInterval = .milliseconds(100)
        let projector = Projector(pool: pool, configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()),
                                  metrics: ProjectorMetrics(registry: MetricsRegistry()))
        let running = Task { try await projector.run() }
        defer { running.cancel() }
        let truth = try await appendAnalysing(&simulator, app: app, to: store, pool: pool)
        _ = try await ReportRecoveryTests.appendSimulation(&other, app: otherApp, to: store)
        try await ReportRecoveryTests.waitUntilCaughtUp(pool)
        running.cancel()
        _ = try? await running.value
        let experiments = try await ExperimentStore(pool: pool).list(app: app).records.map(\.id)
        var entries = 0
        for id in experiments { entries += try await ExperimentStore(pool: pool).history(id).count }
        return Population(truth: truth, experiments: experiments, experimentLogEntries: entries)
    }

    @Test(.timeLimit(.minutes(5)))
    func everyQueryReturnsTheColumnsItsPanelShowsAndTheSimulatedCounts() async throws {
        let dashboards = try Self.loadDashboards()
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        do {
            let population = try await Self.populate(pool)
            let categories = population.truth.categories.map(\.name).sorted()
            for dashboard in dashboards {
                let values = try await Self.checkVariables(dashboard, on: pool, categories: categories,
                                                           experiments: population.experiments)
                // "All" categories and a single one (as a panel repeated per category sees it),
                // under both renderings of the time range.
                var selections = [values]
                if values["category"] != nil { selections.append(values.merging(["category": [categories[0]]]) { $1 }) }
                for query in dashboard.queries {
                    for range in TimeRange.allCases {
                        for selection in selections {
                            let context = "\(query.name) [\(range), category \(selection["category"]?.joined(separator: ",") ?? "-")]"
                            let sql = try Self.render(query.sql, range: range, variables: dashboard.variables, values: selection)
                            let result: Result
                            do {
                                result = try await Self.run(sql, on: pool)
                            } catch {
                                Issue.record("\(context) failed: \(error)\n\(sql)")
                                continue
                            }
                            Self.checkShape(result, of: query, context: context)
                            if selection["category"] == nil || selection["category"]!.count == categories.count {
                                try await Self.checkTruth(result, of: query, population: population, pool: pool, context: context)
                            }
                        }
                    }
                }
            }
        } catch {
            await pool.close()
            throw error
        }
        await pool.close()
    }

    /// Runs the template variables' queries in order and returns the values chosen: `$app` is
    /// the simulated app, `$category` every category ("All"), `$experiment` the simulated one.
    static func checkVariables(_ dashboard: Dashboard, on pool: ConnectionPool, categories: [String],
                               experiments: [String]) async throws -> [String: [String]]
    {
        var values: [String: [String]] = [:]
        for variable in dashboard.variables {
            let sql = try render(variable.query, range: .relative, variables: dashboard.variables, values: values)
            let result = try await run(sql, on: pool)
            #expect(result.columns.count == 1, "\(dashboard.uid) $\(variable.name) returns one column")
            let options = result.rows.compactMap { $0.first?.text }
            switch variable.name {
            case "app":
                #expect(options == [otherApp, app], "\(dashboard.uid) $app options")
                values["app"] = [app]
            case "category":
                #expect(options == categories, "\(dashboard.uid) $category options for \(app)")
                values["category"] = options
            case "experiment":
                #expect(options == experiments, "\(dashboard.uid) $experiment options for \(app), newest first")
                values["experiment"] = [experimentID]
            default:
                Issue.record("\(dashboard.uid): unexpected variable \(variable.name)")
            }
        }
        return values
    }

    /// Columns as declared, rows present, time series ordered by a `time` column with numeric
    /// values, rates within [0, 1] and inside their Wilson bounds, field config naming real columns.
    static func checkShape(_ result: Result, of query: PanelQuery, context: String) {
        let expected = expectedColumns[query.dashboard]?[query.title]
        #expect(result.columns == expected, "\(context) columns")
        #expect(!result.rows.isEmpty, "\(context) returns rows")
        if query.format == "time_series" {
            #expect(result.columns.first == "time" && result.types.first == PostgresType.timestamptz, "\(context): time first, timestamptz")
            let times = result.values("time").compactMap(\.time)
            #expect(times.count == result.rows.count, "\(context): no null time")
            #expect(times == times.sorted(), "\(context): ordered by time")
            for (name, type) in zip(result.columns, result.types).dropFirst() {
                let ok = name == "metric" ? textTypes.contains(type) : numericTypes.contains(type)
                #expect(ok, "\(context): column \(name) has type oid \(type)")
            }
        }
        for name in result.columns where name.hasSuffix("_rate") || name.hasSuffix("_share") || name.hasSuffix("p_value")
            || name.hasSuffix("_lower") || name.hasSuffix("_upper") {
            if liftIntervals.contains(String(name.dropLast(6))) || ratioIntervals.contains(String(name.dropLast(6))) { continue }
            for value in result.values(name) {
                if case .number(let x) = value { #expect((0...1).contains(x), "\(context): \(name) = \(x) outside [0, 1]") }
            }
        }
        for lowerName in result.columns where lowerName.hasSuffix("_lower") {
            let base = String(lowerName.dropLast(6))
            let estimateName = liftIntervals.contains(base) ? "lift" : result.column(base) != nil ? base : base + "_rate"
            guard let lower = result.column(lowerName), let upper = result.column(base + "_upper"),
                  let estimate = result.column(estimateName) else {
                Issue.record("\(context): \(lowerName) without its estimate and upper bound")
                continue
            }
            for row in result.rows {
                guard let l = row[lower].number, let u = row[upper].number, let x = row[estimate].number else {
                    #expect(row[lower] == .null && row[upper] == .null && row[estimate] == .null, "\(context): \(base) partly null")
                    continue
                }
                #expect(l <= x + 1e-9 && x <= u + 1e-9 && l < u, "\(context): \(estimateName) \(x) not in [\(l), \(u)]")
            }
        }
        // Field config, overrides and options that name a column must name one the query returns.
        var referenced: [String] = []
        let fieldConfig = query.panel["fieldConfig"] as? [String: Any] ?? [:]
        for override in fieldConfig["overrides"] as? [[String: Any]] ?? [] {
            if let matcher = override["matcher"] as? [String: Any], matcher["id"] as? String == "byName",
               let name = matcher["options"] as? String { referenced.append(name) }
            for property in override["properties"] as? [[String: Any]] ?? [] where property["id"] as? String == "custom.fillBelowTo" {
                if let name = property["value"] as? String { referenced.append(name) }
            }
        }
        let options = query.panel["options"] as? [String: Any] ?? [:]
        if let xField = options["xField"] as? String { referenced.append(xField) }
        if let fields = (options["reduceOptions"] as? [String: Any])?["fields"] as? String,
           fields.hasPrefix("/^"), fields.hasSuffix("$/") {
            referenced.append(String(fields.dropFirst(2).dropLast(2)))
        }
        for name in referenced {
            #expect(result.columns.contains(name), "\(context): the panel's config names column \(name), which the query does not return")
        }
    }

    // MARK: - Against the simulated truth

    static func rows(_ result: Result, where column: String, is value: String) -> [[Value]] {
        guard let index = result.column(column) else { return [] }
        return result.rows.filter { $0[index].text == value }
    }

    static func number(_ row: [Value], _ result: Result, _ name: String) -> Double? {
        result.column(name).flatMap { row[$0].number }
    }

    static func checkTruth(_ result: Result, of query: PanelQuery, population: Population, pool: ConnectionPool,
                           context: String) async throws {
        let truth = population.truth
        switch query.title {
        case "Funnel: delivered → displayed → expanded → actioned / opened":
            // Every simulated notification is delivered and displayed; presentation is known for all.
            for presentation in Presentation.allCases {
                let realized = truth.realized(presentation: presentation)
                let expected: [String: Int] = ["delivered": realized[.displayed], "displayed": realized[.displayed],
                                               "expanded": realized[.expanded], "actioned": realized[.actioned], "opened": realized[.opened]]
                #expect(result.values("stage").compactMap(\.text) == ["delivered", "displayed", "expanded", "actioned", "opened"],
                        "\(context) stages in funnel order")
                for (stage, count) in expected {
                    let row = rows(result, where: "stage", is: stage).first
                    #expect(row.flatMap { number($0, result, presentation.rawValue) } == Double(count),
                            "\(context) \(stage) \(presentation.rawValue)")
                    #expect(row.flatMap { number($0, result, "not_displayed") } == 0, "\(context) \(stage) not displayed")
                }
            }
        case "Rates by category, rich vs plain (selected range)", "Rates by category, rich vs plain (all time, engagement_rates_by_category)":
            #expect(result.rows.count == truth.categories.count * 2, "\(context): a row per category and presentation")
            for category in truth.categories {
                for presentation in Presentation.allCases {
                    let realized = truth.realized(category: category.name, presentation: presentation)
                    let row = rows(result, where: "category", is: category.name)
                        .first { $0[result.column("presentation")!].text == presentation.rawValue }
                    let cell = "\(context) \(category.name)/\(presentation.rawValue)"
                    #expect(row.flatMap { number($0, result, "displayed") } == Double(realized[.displayed]), "\(cell) displayed")
                    // A view column per engagement rate, named after the metric.
                    for metric in EngagementMetric.perDisplayed {
                        let name = metric.rawValue + "_rate"
                        let rate = row.flatMap { number($0, result, name) }
                        #expect(rate.map { abs($0 - realized.rate(metric.numerator)) < 1e-12 } == true, "\(cell) \(name) \(rate ?? -1)")
                    }
                }
            }
        case "Adjusted for category: rich / plain (Mantel-Haenszel), the answer":
            try checkAdjustedAnswer(result, truth: truth, context: context)
        case "Outcomes per category and attachment kind":
            for category in truth.categories {
                let categoryRows = rows(result, where: "category", is: category.name)
                let realized = truth.outcomesByCategory[category.name]?.counts ?? [:]
                for outcome in DeliveryOutcome.allCases {
                    let total = categoryRows.compactMap { number($0, result, outcome.rawValue) }.reduce(0, +)
                    #expect(total == Double(realized[outcome] ?? 0), "\(context) \(category.name) \(outcome.rawValue)")
                }
                let delivered = categoryRows.compactMap { number($0, result, "delivered") }.reduce(0, +)
                #expect(delivered == Double(realized.values.reduce(0, +)), "\(context) \(category.name) delivered")
            }
            #expect(result.values("cache_hit_rate").contains { ($0.number ?? 0) > 0 }, "\(context): prefetched media hit the cache")
        case "Attachment download latency percentiles per day", "Extension processing time percentiles per day":
            let column = query.title.hasPrefix("Attachment") ? "download_ms_histogram" : "processing_ms_histogram"
            try await checkPercentiles(result, histogramColumn: column, pool: pool, context: context)
        case "Attachment download latency distribution":
            let histograms = try await mergedHistograms(column: "download_ms_histogram", pool: pool)
            let downloads = histograms.values.reduce(Int64(0)) { $0 + $1.totalCount }
            #expect(downloads > 0, "\(context): the simulation recorded downloads")
            #expect(result.values("downloads").compactMap(\.number).reduce(0, +) == Double(downloads),
                    "\(context): every download falls in exactly one range")
        case "Events recorded per minute by type":
            #expect(result.values("value").compactMap(\.number).reduce(0, +)
                    == Double(truth.events + population.experimentLogEntries),
                    "\(context): every stored event of the app, experiment entries included, each once")
            #expect(Set(result.values("metric").compactMap(\.text)).isSuperset(of: ["delivered", "displayed"]), "\(context) types")
        case "Projector lag", "Projection checkpoints":
            let stored = try await pool.withConnection { try $0.query("SELECT count(*) FROM events")[0].decode(0, as: Int.self) }
            let row = rows(result, where: "projection", is: EngagementStore.projectionName).first
            #expect(row.flatMap { number($0, result, "events_processed") } == Double(stored), "\(context) events processed")
            #expect(row.flatMap { number($0, result, "unprojected_events") } == 0, "\(context): caught up")
            #expect(row.flatMap { number($0, result, "lag_seconds") } == 0, "\(context): no lag once caught up")
        default:
            try await checkExperimentTruth(result, of: query, population: population, pool: pool, context: context)
        }
    }

    /// The panel's SQL gives the report's headline: the Mantel-Haenszel ratio and Greenland-Robins
    /// interval of the simulator's own per-category counts, and the crude ratio of the pooled ones.
    static func checkAdjustedAnswer(_ result: Result, truth: SimulationGroundTruth, context: String) throws {
        #expect(result.values("metric").compactMap(\.text) == EngagementMetric.reported.map(\.label), "\(context) metrics")
        for metric in EngagementMetric.reported {
            let strata = try truth.categories.map { category in
                let rich = truth.realized(category: category.name, presentation: .rich)
                let plain = truth.realized(category: category.name, presentation: .plain)
                return Stratum(name: category.name,
                               variant: try Proportion(successes: rich[metric.numerator], trials: rich[.displayed]),
                               control: try Proportion(successes: plain[metric.numerator], trials: plain[.displayed]))
            }
            let comparison = StratifiedComparison(strata: strata)
            let cell = "\(context) \(metric.label)"
            guard let row = rows(result, where: "metric", is: metric.label).first else {
                Issue.record("\(cell): no row")
                continue
            }
            #expect(number(row, result, "categories") == Double(comparison.included.count), "\(cell) categories")
            #expect(number(row, result, "excluded") == Double(comparison.excluded.count), "\(cell) excluded")
            guard let expected = try? comparison.mantelHaenszelRiskRatio().greenlandRobinsEstimate() else {
                #expect(number(row, result, "ratio_lower") == nil, "\(cell): no interval where the report has none")
                continue
            }
            func close(_ name: String, _ value: Double) -> Bool {
                number(row, result, name).map { abs($0 - value) <= 1e-9 * value } == true
            }
            #expect(close("ratio", expected.estimate), "\(cell) ratio")
            #expect(close("ratio_lower", expected.interval.lower), "\(cell) ratio_lower")
            #expect(close("ratio_upper", expected.interval.upper), "\(cell) ratio_upper")
            #expect(row[result.column("significant")!].text == (expected.isSignificant ? "yes" : "no"), "\(cell) significant")
            let crude = comparison.crude
            #expect(close("crude_ratio", crude.variant.rate / crude.control.rate), "\(cell) crude ratio")
            if let katz = try? crude.ratioEstimate(.katzLog) {
                #expect(close("crude_ratio_lower", katz.interval.lower), "\(cell) crude ratio lower")
                let disagreement = CrudeAdjustedDisagreement(crude: katz, adjusted: expected)
                let words = row[result.column("crude_vs_adjusted")!].text ?? ""
                #expect(words.hasPrefix("DIRECTION") == (disagreement?.direction ?? false), "\(cell) \(words)")
                #expect(words.contains("SIGNIFICANCE") == (disagreement?.significance ?? false), "\(cell) \(words)")
            }
        }
    }

    /// Each day's merged histogram of `app`, read and merged in Swift.
    static func mergedHistograms(column: String, pool: ConnectionPool) async throws -> [String: LatencyHistogram] {
        let rows = try await pool.withConnection { connection -> [(String, String)] in
            let result = try connection.query("""
                SELECT day::text, \(unsafeSQL: column)::text FROM extension_telemetry_daily
                WHERE app_id = \(Self.app) AND cardinality(\(unsafeSQL: column)) > 0
                """)
            return try result.rows.map { (try $0.decode(0, as: String.self), try $0.decode(1, as: String.self)) }
        }
        var days: [String: LatencyHistogram] = [:]
        for (day, text) in rows {
            // Stored counts are trimmed after the last non-zero bucket: pad them to the layout.
            var counts = text.trimmingCharacters(in: CharacterSet(charactersIn: "{}")).split(separator: ",").compactMap { Int64($0) }
            counts += [Int64](repeating: 0, count: max(0, LatencyHistogram.Layout.standard.countsLength - counts.count))
            days[day, default: LatencyHistogram()].merge(try LatencyHistogram(counts: counts))
        }
        return days
    }

    /// The SQL percentiles are LatencyHistogram's quantiles of each day's merged counts.
    static func checkPercentiles(_ result: Result, histogramColumn: String, pool: ConnectionPool, context: String) async throws {
        let days = try await mergedHistograms(column: histogramColumn, pool: pool)
        let format = DateFormatter()
        format.locale = Locale(identifier: "en_US_POSIX")
        format.timeZone = TimeZone(identifier: "UTC")
        format.dateFormat = "yyyy-MM-dd"
        let nonEmpty = days.filter { !$0.value.isEmpty }
        #expect(result.rows.count == nonEmpty.count, "\(context): a row per day with data")
        for row in result.rows {
            guard let time = row[0].time, let histogram = nonEmpty[format.string(from: time)] else {
                Issue.record("\(context): a row for a day without data")
                continue
            }
            for (name, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99)] {
                let sql = number(row, result, name)
                let swift = histogram.quantile(q)
                #expect(sql != nil && swift != nil && abs(sql! - swift!) <= 1e-9 * swift!,
                        "\(context) \(format.string(from: time)) \(name): SQL \(sql ?? -1), LatencyHistogram \(swift ?? -1)")
            }
        }
    }
}
