import HTTPServer
import Runtime
import Synchronization

/// Counts every response by route and status, and logs one debug line per request (method,
/// route, status, duration; never headers, keys or bodies).
public struct MeteredResponder: HTTPResponder {
    let inner: any HTTPResponder
    let registry: MetricsRegistry
    let logger: Logger
    let knownRoutes: Set<String>
    /// Counters by route and status, looked up in the registry once each (label rendering is not free).
    private let counters = CounterCache()

    public init(_ inner: any HTTPResponder, routes: Set<String>, registry: MetricsRegistry, logger: Logger) {
        self.inner = inner
        self.registry = registry
        self.logger = logger
        self.knownRoutes = routes
    }

    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        let stopwatch = Stopwatch()
        let response = await inner.respond(to: request)
        record(response, for: request, after: stopwatch)
        return response
    }

    public func respondInline(to request: HTTPRequest, reply: HTTPReply) -> Bool {
        let stopwatch = Stopwatch()
        return inner.respondInline(to: request, reply: HTTPReply { [self] response in
            record(response, for: request, after: stopwatch)
            reply.send(response)
        })
    }

    public func refusalBeforeBody(to request: HTTPRequest) -> HTTPResponse? {
        let stopwatch = Stopwatch()
        guard let response = inner.refusalBeforeBody(to: request) else { return nil }
        record(response, for: request, after: stopwatch)
        return response
    }

    public func didRefuse(_ request: HTTPRequest, with response: HTTPResponse) {
        record(response, for: request, after: Stopwatch())
    }

    private func record(_ response: HTTPResponse, for request: HTTPRequest, after stopwatch: Stopwatch) {
        let route = EngageAPI.routeLabel(for: request.path, routes: knownRoutes)
        counters.counter(route: route, status: response.status) {
            registry.counter("engage_http_requests_total", help: "HTTP requests answered, by route and status.",
                             labels: ["route": route, "status": String(response.status)])
        }.increment()
        if logger.isEnabled(.debug) {
            logger.debug("http.request", ["method": request.method.rawValue, "route": route,
                                          "status": String(response.status), "duration.ms": stopwatch.millisecondsText])
        }
    }
}

extension HTTPServer: Service {}

final class CounterCache: Sendable {
    private struct Key: Hashable {
        var route: String
        var status: Int
    }

    private let counters = Mutex<[Key: Counter]>([:])

    func counter(route: String, status: Int, make: () -> Counter) -> Counter {
        let key = Key(route: route, status: status)
        if let counter = counters.withLock({ $0[key] }) { return counter }
        let counter = make()
        counters.withLock { $0[key] = counter }
        return counter
    }
}
