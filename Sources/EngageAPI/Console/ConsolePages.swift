import EngageConsole
import EngageCore
import EventStore
import Experiments
import HTTPServer
import Postgres
import Projections
import Runtime

extension ConsoleRoutes {
    /// A page of one of the sections, for a signed-in browser.
    func page(_ request: HTTPRequest, _ section: ConsolePage.Section) async -> HTTPResponse {
        let access: ConsoleAccess
        switch await signedIn(request) {
        case .granted(let found): access = found
        case .refused(let response): return response
        }
        let viewer = access.viewer
        let response: HTTPResponse
        do {
            switch section {
            case .report, .telemetry:
                switch Self.reportQuery(request) {
                case .failure(let problem):
                    response = Self.respond(ProblemView(title: "Bad filter", detail: problem.detail, viewer: viewer, section: section).page(), status: 400)
                case .success(let query):
                    response = try await reportPage(section, query: query, viewer: viewer)
                }
            case .experiments:
                response = Self.respond(try await experimentList(viewer).page())
            case .health:
                response = Self.respond(await healthView(viewer).page())
            }
        } catch {
            response = unavailable(viewer, section: section)
        }
        return refreshingCookie(response, request: request, access: access)
    }

    func unavailable(_ viewer: ConsoleViewer, section: ConsolePage.Section?) -> HTTPResponse {
        var response = Self.respond(ProblemView(title: "The database is unreachable", detail: "Nothing could be read; "
                                                + "reload the page in a few seconds.", viewer: viewer, section: section).page(), status: 503)
        response.headers.set("Retry-After", "5")
        return response
    }

    /// The filters of the report and extension pages; a message naming the field when one is wrong.
    static func reportQuery(_ request: HTTPRequest) -> Result<ReportView.Query, FilterProblem> {
        var query = ReportView.Query()
        // A filter given twice is refused as the API's routes refuse it (empty ones, which the
        // filter form sends for "any", do not count).
        var repeated = RepeatedQueryParameter()
        for item in request.queryItems where !item.value.isEmpty {
            if ["category", "since", "until", "by"].contains(item.name) {
                do { try repeated.note(item) } catch { return .failure(FilterProblem(detail: RepeatedQueryParameter.detail(item.name))) }
            }
            switch item.name {
            case "category":
                guard let category = CategoryFilter.normalized(item.value) else {
                    return .failure(FilterProblem(detail: "category must name a notification category, without control characters"))
                }
                query.category = category
            case "since", "until":
                guard let day = UTCDay(parsing: item.value) else { return .failure(FilterProblem(detail: "\(item.name) must be a date such as 2026-11-29")) }
                if item.name == "since" { query.since = day } else { query.until = day }
            case "by":
                guard let grouping = ReportGrouping(rawValue: item.value) else {
                    return .failure(FilterProblem(detail: "by must be one of \(ReportGrouping.allCases.map(\.rawValue).joined(separator: ", "))"))
                }
                query.grouping = grouping
            default: continue
            }
        }
        // As GET /v1/report and engage report refuse it: no day lies between, and the page would
        // show an empty report without saying why.
        if let since = query.since, let until = query.until, since > until {
            return .failure(FilterProblem(detail: "since \(since) is after until \(until): no day lies between them"))
        }
        return .success(query)
    }

    private func reportPage(_ section: ConsolePage.Section, query: ReportView.Query, viewer: ConsoleViewer) async throws -> HTTPResponse {
        let reportQuery = ReportQuery(appID: viewer.app.id, category: query.category, from: query.since, through: query.until,
                                      grouping: section == .report ? query.grouping : .category)
        async let categories = reads.categories(viewer.app.id)
        let report = try await reads.report(reportQuery)
        if section == .report {
            return Self.respond(ReportView(report: report, query: query, categories: try await categories, viewer: viewer).page())
        }
        return Self.respond(TelemetryView(report: report, query: query, categories: try await categories, viewer: viewer).page())
    }

    private func experimentList(_ viewer: ConsoleViewer) async throws -> ExperimentListView {
        var entries: [ExperimentListView.Entry] = []
        let listing = try await store.list(app: viewer.app.id)
        for record in listing.records {
            let latest = try await store.runs(record.id, limit: 20, analysedOnly: true).lazy.compactMap(Self.summary).first { $0.look != nil }?.look
            entries.append(.init(definition: record.definition, createdAt: record.createdAt, latest: latest))
        }
        return ExperimentListView(entries: entries, unreadable: listing.unreadable, viewer: viewer)
    }

    static func summary(_ run: ExperimentRun) -> ExperimentRunSummary {
        ExperimentRunSummary(id: run.id, scheduledFor: run.scheduledFor, isManual: run.isManual, status: run.status.rawValue,
                             error: run.error, result: run.status == .done ? run.result : nil)
    }

    /// `GET /console/experiments/{id}`.
    func experimentPage(_ request: HTTPRequest) async -> HTTPResponse {
        let access: ConsoleAccess
        switch await signedIn(request) {
        case .granted(let found): access = found
        case .refused(let response): return response
        }
        let notice: ConsolePage.Notice? = switch request.query("done") {
        case "started": .init(.ok, "The experiment was started.")
        case "stopped": .init(.ok, "The experiment was stopped.")
        default: nil
        }
        let response = await experimentResponse(request.pathParameters["id"] ?? "", viewer: access.viewer, notice: notice, status: 200)
        return refreshingCookie(response, request: request, access: access)
    }

    private func experimentResponse(_ id: String, viewer: ConsoleViewer, notice: ConsolePage.Notice?, status: Int) async -> HTTPResponse {
        do {
            guard let record = try await store.get(id, app: viewer.app.id) else {
                return Self.respond(ProblemView(title: "No such experiment", detail: "App \(viewer.app.id) has no experiment \(id).",
                                                viewer: viewer, section: .experiments).page(), status: 404)
            }
            let runs = try await store.runs(id).map(Self.summary)
            let lifecycle = try await store.history(of: record.definition).filter { $0.action != .analysed }.map {
                ExperimentSummaryText.LifecycleLine(action: $0.action.rawValue, at: $0.occurredAt, payload: $0.payload)
            }
            let view = ExperimentView(definition: record.definition, runs: runs, lifecycle: lifecycle, viewer: viewer)
            return Self.respond(view.page(notice: notice), status: status)
        } catch {
            return unavailable(viewer, section: .experiments)
        }
    }

    /// `POST /console/experiments/{id}/start|stop` with the session's `csrf`: for an admin key of
    /// the app only; then back to the experiment's page (303).
    func changeExperiment(_ request: HTTPRequest, start: Bool) async -> HTTPResponse {
        switch await signedIn(request) {
        case .granted(let access):
            // Every answer, refusals too, shows a sign-out form with the token of the keys kept.
            return refreshingCookie(await changeExperiment(request, start: start, access: access), request: request, access: access)
        case .refused(let response): return response
        }
    }

    private func changeExperiment(_ request: HTTPRequest, start: Bool, access: ConsoleAccess) async -> HTTPResponse {
        let viewer = access.viewer
        let id = request.pathParameters["id"] ?? ""
        guard access.session.accepts(formToken: request.formValue("csrf")) else {
            return Self.respond(ProblemView(title: "Nothing was changed", detail: "The form had expired or came from another page; "
                                            + "reload the experiment's page and try again.", viewer: viewer,
                                            section: .experiments).page(), status: 403)
        }
        // The experiment's app is the one in the form's address (`?app=`), which the viewer shows.
        guard access.adminKey(of: viewer.app.id) != nil else {
            return Self.respond(ProblemView(title: "This key may not do that", detail: "A read key cannot \(start ? "start" : "stop") "
                                            + "experiments: add an admin key of app \(viewer.app.id).", viewer: viewer,
                                            section: .experiments).page(), status: 403)
        }
        do {
            if start {
                _ = try await store.start(id, app: viewer.app.id, now: time.wallClock)
            } else {
                _ = try await store.stop(id, app: viewer.app.id)
            }
        } catch let error as ExperimentStoreError {
            switch error.code {
            case .notFound:
                return Self.respond(ProblemView(title: "No such experiment", detail: "App \(viewer.app.id) has no experiment \(id).",
                                                viewer: viewer, section: .experiments).page(), status: 404)
            default:
                return await experimentResponse(id, viewer: viewer, notice: .init(.error, error.detail), status: 409)
            }
        } catch let error as PostgresError where error.kind == .unconfirmedCommit {
            let roleCannotSeeStandbys = error.sqlState == StandbyConfirmation.insufficientPrivilege
            return await experimentResponse(id, viewer: viewer, notice: .init(.error, Self.unconfirmedChange(
                start: start, roleCannotSeeStandbys: roleCannotSeeStandbys)), status: 503)
        } catch {
            // Unreachable, or rolled back (no answer before the COMMIT was sent within the commit
            // timeout): nothing changed, so trying again is safe.
            var response = Self.respond(ProblemView(title: "The database is unreachable", detail: "Nothing was changed: the "
                                                    + "experiment was not \(start ? "started" : "stopped"). Try again in a few seconds.",
                                                    viewer: viewer, section: .experiments).page(), status: 503)
            response.headers.set("Retry-After", "5")
            return response
        }
        return Self.secured(.seeOther(viewer.link(ConsolePath.experiment(id), [("done", start ? "started" : "stopped")])))
    }

    /// What the page says when the start or stop committed on the primary alone; when the role
    /// cannot read the standbys' positions, which no standby coming back mends, the grant too
    /// (as the API's `change-unconfirmed` does).
    static func unconfirmedChange(start: Bool, roleCannotSeeStandbys: Bool) -> String {
        "The experiment was \(start ? "started" : "stopped") on the primary database, but its synchronous standbys were not seen to have "
            + "the change: a failover now could undo it. Reload this page to see its status before trying again."
            + (roleCannotSeeStandbys
                ? " The database role engage connects as cannot read the standbys' positions: GRANT pg_read_all_stats TO it." : "")
    }

    // MARK: Ingestion

    private func healthView(_ viewer: ConsoleViewer) async -> HealthView {
        func gauge(_ name: String) -> Double? { registry.samples(name).first?.value }
        let statuses = registry.samples("engage_http_requests_total").filter { $0.labels["route"] == "/v1/events" }
            .compactMap { sample in sample.labels["status"].flatMap(Int.init).map { (status: $0, count: Int(sample.value)) } }
            .sorted { $0.status < $1.status }
        let fields = registry.samples("engage_events_rejected_by_field_total")
            .map { (field: $0.labels["field"] ?? "", count: Int($0.value)) }
            .sorted { $0.count != $1.count ? $0.count > $1.count : $0.field < $1.field }
        var projector: IngestionHealth.Projector?
        if let lag = try? await reads.projector() {
            projector = IngestionHealth.Projector(
                activeHere: gauge("engage_projector_active").map { $0 > 0 }, eventsProcessed: lag.eventsProcessed,
                checkpointUpdatedAt: lag.checkpointAt, lagEvents: lag.events, lagSeconds: lag.seconds)
        }
        let metrics = sampler.metrics
        let health = IngestionHealth(
            rates: [sampler.rates(over: 60), sampler.rates(over: 300)], acceptedHistory: sampler.acceptedHistory(),
            sampleSeconds: Int(sampler.interval.components.seconds), accepted: metrics.accepted.value,
            duplicates: metrics.duplicates.value, rejected: metrics.rejected.value, requestsByStatus: statuses,
            rejectedByField: fields, queueEvents: Int(gauge("engage_ingest_queue_events") ?? 0),
            poolInUse: Int(gauge("engage_postgres_pool_in_use") ?? 0), poolWaiting: Int(gauge("engage_postgres_pool_waiting") ?? 0),
            connectionsOpen: Int(gauge("engage_http_connections_open") ?? 0), projector: projector)
        return HealthView(health: health, viewer: viewer)
    }
}

/// A filter of the report or extension page that cannot be read, named in `detail`.
struct FilterProblem: Error {
    var detail: String
}
