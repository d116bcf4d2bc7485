import HTTPServer

/// Every route engage serves, wired to its handler.
public struct EngageAPI: Sendable {
    public let ingest: IngestRoute
    public let report: ReportRoute
    public let health: HealthRoutes

    public init(ingest: IngestRoute, report: ReportRoute, health: HealthRoutes) {
        self.ingest = ingest
        self.report = report
        self.health = health
    }

    /// Paths counted by name in metrics; anything else is "unmatched".
    public static let routes: Set<String> = ["/v1/events", "/v1/report", "/healthz", "/readyz", "/metrics"]

    public var router: Router {
        var router = Router()
        router.post("/v1/events") { [ingest] in await ingest.handle($0) }
        router.get("/v1/report") { [report] in await report.handle($0) }
        router.get("/healthz") { [health] in await health.healthz($0) }
        router.get("/readyz") { [health] in await health.readyz($0) }
        router.get("/metrics") { [health] in await health.metrics($0) }
        return router
    }
}
