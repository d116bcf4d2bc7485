/// Anything that turns a complete request into a response.
public protocol HTTPResponder: Sendable {
    func respond(to request: HTTPRequest) async -> HTTPResponse
}

/// Routes by method and path. A pattern is `/`-separated segments, each literal or `:name`.
///
/// When several patterns match, the one with more literal segments wins, then the one added first.
/// A path that matches no pattern gets a 404 problem; a path matched only for other methods gets a
/// 405 problem with `Allow`. `HEAD` is served by the `GET` route when no `HEAD` route exists.
/// Handlers may throw: an ``HTTPProblemConvertible`` error becomes its problem, anything else a
/// generic 500 problem (its description is not sent to the client).
public struct Router: HTTPResponder {
    public typealias Handler = @Sendable (HTTPRequest) async throws -> HTTPResponse

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    /// A route as added: its method and pattern.
    public struct Pattern: Sendable, Hashable {
        public let method: HTTPMethod
        public let pattern: String
    }

    private struct Route: Sendable {
        let method: HTTPMethod
        let pattern: String
        let segments: [Segment]
        let literalCount: Int
        let handler: Handler
    }

    private var routes: [Route] = []

    public init() {}

    public mutating func add(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping Handler) {
        let segments = Self.split(pattern).map { part -> Segment in
            part.hasPrefix(":") && part.count > 1 ? .parameter(String(part.dropFirst())) : .literal(part)
        }
        let literalCount = segments.filter { if case .literal = $0 { true } else { false } }.count
        routes.append(Route(method: method, pattern: pattern, segments: segments, literalCount: literalCount, handler: handler))
    }

    /// Every route, in the order added.
    public var patterns: [Pattern] { routes.map { Pattern(method: $0.method, pattern: $0.pattern) } }

    public mutating func get(_ pattern: String, _ handler: @escaping Handler) { add(.GET, pattern, handler) }
    public mutating func post(_ pattern: String, _ handler: @escaping Handler) { add(.POST, pattern, handler) }
    public mutating func put(_ pattern: String, _ handler: @escaping Handler) { add(.PUT, pattern, handler) }
    public mutating func delete(_ pattern: String, _ handler: @escaping Handler) { add(.DELETE, pattern, handler) }

    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        let path = Self.split(request.path)
        var best: (route: Route, parameters: [String: String])?
        var fallbackGET: (route: Route, parameters: [String: String])?
        var allowed: [HTTPMethod] = []
        for route in routes {
            guard let parameters = Self.match(route.segments, path) else { continue }
            if !allowed.contains(route.method) { allowed.append(route.method) }
            if route.method == request.method {
                if best == nil || route.literalCount > best!.route.literalCount { best = (route, parameters) }
            } else if request.method == .HEAD && route.method == .GET {
                if fallbackGET == nil || route.literalCount > fallbackGET!.route.literalCount {
                    fallbackGET = (route, parameters)
                }
            }
        }
        guard let (route, parameters) = best ?? fallbackGET else {
            if allowed.isEmpty { return HTTPProblem.notFound(path: request.path).response }
            if allowed.contains(.GET) && !allowed.contains(.HEAD) { allowed.append(.HEAD) }
            allowed.sort { $0.rawValue < $1.rawValue }
            var response = HTTPProblem.methodNotAllowed(request.method, allowed: allowed).response
            response.headers.set("Allow", allowed.map(\.rawValue).joined(separator: ", "))
            return response
        }
        var routed = request
        routed.pathParameters = parameters
        do {
            return try await route.handler(routed)
        } catch let error as any HTTPProblemConvertible {
            return error.problem.response
        } catch {
            return HTTPProblem.internalError.response
        }
    }

    private static func split(_ path: String) -> [String] {
        var parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.first == "" { parts.removeFirst() }
        return parts
    }

    private static func match(_ pattern: [Segment], _ path: [String]) -> [String: String]? {
        guard pattern.count == path.count else { return nil }
        var parameters: [String: String] = [:]
        for (segment, part) in zip(pattern, path) {
            switch segment {
            case .literal(let literal):
                guard literal == part else { return nil }
            case .parameter(let name):
                guard !part.isEmpty else { return nil }
                parameters[name] = part
            }
        }
        return parameters
    }
}
