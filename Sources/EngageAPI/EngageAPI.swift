import HTTPServer

/// Every route engage serves, wired to its handler.
public struct EngageAPI: Sendable {
    public let ingest: IngestRoute
    public let report: ReportRoute
    public let health: HealthRoutes
    public let experiments: ExperimentRoutes
    public let simulate: StrategyReplayRoute
    /// The web console's pages, when served.
    public let console: ConsoleRoutes?

    public init(ingest: IngestRoute, report: ReportRoute, health: HealthRoutes, experiments: ExperimentRoutes,
                simulate: StrategyReplayRoute, console: ConsoleRoutes? = nil) {
        self.ingest = ingest
        self.report = report
        self.health = health
        self.experiments = experiments
        self.simulate = simulate
        self.console = console
    }

    /// The API's paths, as openapi.yaml lists them (the console's are `ConsoleRoutes.routes`).
    /// Paths with parameters appear as in openapi.yaml (`/v1/experiments/{id}`).
    public static let routes: Set<String> = [
        "/v1/events", "/v1/report", "/healthz", "/readyz", "/metrics",
        "/v1/assignments", "/v1/experiments", "/v1/experiments/{id}", "/v1/experiments/{id}/start",
        "/v1/experiments/{id}/stop", "/v1/experiments/{id}/run", "/v1/experiments/{id}/runs",
        "/v1/experiments/{id}/history", "/v1/simulate",
    ]

    /// Paths counted by name in metrics, the API's and the console's; anything else is "unmatched".
    public static let meteredRoutes = routes.union(ConsoleRoutes.routes)

    /// True for a route of the console rather than of the API.
    public static func isConsole(_ route: Router.Pattern) -> Bool { ConsoleRoutes.serves(route.pattern) }

    /// The metric label of a request path: the route it matches (`/v1/experiments/{id}/runs` for
    /// `/v1/experiments/abc/runs`), or "unmatched".
    public static func routeLabel(for path: String, routes: Set<String> = routes) -> String {
        if routes.contains(path) { return path }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        for route in routes where route.contains("{") {
            let pattern = route.split(separator: "/", omittingEmptySubsequences: false)
            guard pattern.count == parts.count else { continue }
            let matches = zip(pattern, parts).allSatisfy { p, part in
                p.hasPrefix("{") && p.hasSuffix("}") ? !part.isEmpty : p == part
            }
            if matches { return route }
        }
        return "unmatched"
    }

    public var router: Router {
        var router = Router()
        router.post("/v1/events", beforeBody: { [ingest] in ingest.refusalBeforeBody($0) },
                    inline: { [ingest] in ingest.handleInline($0, reply: $1) }) { [ingest] in await ingest.handle($0) }
        router.get("/v1/report") { [report] in await report.handle($0) }
        router.get("/healthz") { [health] in await health.healthz($0) }
        router.get("/readyz") { [health] in await health.readyz($0) }
        router.get("/metrics") { [health] in await health.metrics($0) }
        router.get("/v1/assignments") { [experiments] in await experiments.assignments($0) }
        router.post("/v1/assignments") { [experiments] in await experiments.batchAssignments($0) }
        router.get("/v1/experiments") { [experiments] in await experiments.list($0) }
        router.post("/v1/experiments") { [experiments] in await experiments.create($0) }
        router.get("/v1/experiments/:id") { [experiments] in await experiments.show($0) }
        router.post("/v1/experiments/:id/start") { [experiments] in await experiments.start($0) }
        router.post("/v1/experiments/:id/stop") { [experiments] in await experiments.stop($0) }
        router.post("/v1/experiments/:id/run") { [experiments] in await experiments.runNow($0) }
        router.get("/v1/experiments/:id/runs") { [experiments] in await experiments.runs($0) }
        router.get("/v1/experiments/:id/history") { [experiments] in await experiments.history($0) }
        router.get("/v1/simulate") { [simulate] in await simulate.handle($0) }
        console?.add(to: &router)
        return router
    }
}
