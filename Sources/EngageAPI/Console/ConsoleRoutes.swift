import EngageConsole
import EngageCore
import Experiments
import HTTPServer
import Runtime

/// The web console: the report, the extension's telemetry, the experiments and ingestion health
/// as server-rendered pages at `/` and under `/console/`, for a browser holding an app's read key
/// (an admin key to start and stop experiments). Keys are entered in a sign-in form and kept in a
/// cookie (`ConsoleSession`); without a valid one every page answers 401 with the form, and no data.
public struct ConsoleRoutes: Sendable {
    public struct Configuration: Sendable {
        /// Cookies are marked `Secure`: set when the server speaks HTTPS.
        public var secureCookies = false
        /// How long a browser keeps the keys (the cookie's Max-Age); signing out ends it sooner.
        public var sessionLifetime = Duration.seconds(7 * 86_400)

        public init(secureCookies: Bool = false) {
            self.secureCookies = secureCookies
        }
    }

    let authenticator: Authenticator
    let reads: ConsoleReads
    let store: ExperimentStore
    let registry: MetricsRegistry
    /// Feeds the ingestion page's rates; a service of the server.
    public let sampler: IngestionRateSampler
    let configuration: Configuration
    let time: any TimeSource

    public init(authenticator: Authenticator, reads: ConsoleReads, store: ExperimentStore, registry: MetricsRegistry,
                sampler: IngestionRateSampler, configuration: Configuration, time: any TimeSource = SystemTime()) {
        self.authenticator = authenticator
        self.reads = reads
        self.store = store
        self.registry = registry
        self.sampler = sampler
        self.configuration = configuration
        self.time = time
    }

    /// Every console route as metrics name it.
    public static let routes: Set<String> = [
        "/", "/console", "/console/", "/console/report", "/console/extension", "/console/experiments",
        "/console/experiments/{id}", "/console/experiments/{id}/start", "/console/experiments/{id}/stop",
        "/console/ingestion", "/console/login", "/console/logout",
    ]

    /// True for a pattern of the console (as the router lists it).
    public static func serves(_ pattern: String) -> Bool {
        pattern == "/" || pattern == "/console" || pattern.hasPrefix("/console/")
    }

    func add(to router: inout Router) {
        for home in ["/", "/console", "/console/"] {
            router.get(home) { [self] in await page($0, .report) }
        }
        router.get("/console/report") { [self] in await page($0, .report) }
        router.get("/console/extension") { [self] in await page($0, .telemetry) }
        router.get("/console/experiments") { [self] in await page($0, .experiments) }
        router.get("/console/experiments/:id") { [self] in await experimentPage($0) }
        router.post("/console/experiments/:id/start") { [self] in await changeExperiment($0, start: true) }
        router.post("/console/experiments/:id/stop") { [self] in await changeExperiment($0, start: false) }
        router.get("/console/ingestion") { [self] in await page($0, .health) }
        router.get("/console/login") { [self] in loginForm($0) }
        router.post("/console/login") { [self] in await signIn($0) }
        router.post("/console/logout") { [self] in signOut($0) }
    }

    // MARK: Responses

    /// A console page with the headers every console response carries.
    static func respond(_ page: ConsolePage, status: Int = 200) -> HTTPResponse {
        secured(.html(page.render(), status: status))
    }

    /// No caching of pages that show data, no framing, no script, no sniffing.
    static func secured(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        response.headers.set("Content-Security-Policy", ConsolePage.contentSecurityPolicy)
        response.headers.set("Cache-Control", "no-store")
        response.headers.set("X-Content-Type-Options", "nosniff")
        response.headers.set("X-Frame-Options", "DENY")
        response.headers.set("Referrer-Policy", "no-referrer")
        return response
    }

    var lifetimeSeconds: Int { Int(configuration.sessionLifetime.components.seconds) }
}
