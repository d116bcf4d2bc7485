/// Anything that turns a complete request into a response.
public protocol HTTPResponder: Sendable {
    func respond(to request: HTTPRequest) async -> HTTPResponse

    /// A way around the task that `respond(to:)` runs in, for requests whose work is short and
    /// never blocks: called first, on the daemon thread that read the request. Returns true when
    /// it took the request, which it then answers through `reply` (now or later, from any
    /// thread); false, without touching `reply`, to have `respond(to:)` called as usual.
    ///
    /// A request taken here costs no task and no thread hand-off, which is most of the cost of
    /// a small request (single ingest events) beyond the network itself.
    func respondInline(to request: HTTPRequest, reply: HTTPReply) -> Bool

    /// A refusal known from the request's head alone (a missing key, a full queue), so that a
    /// client is not made to send a body only to have it refused. Called on the daemon thread as
    /// soon as the head of a request that announces a body is in (`request.body` is empty); must
    /// answer at once, without waiting. Nil reads the body, and the request goes on as usual.
    ///
    /// A refused request's connection is closed after the response, lingeringly: what the client
    /// still sends is read and discarded for a bounded time, so that it reads the refusal.
    func refusalBeforeBody(to request: HTTPRequest) -> HTTPResponse?

    /// The server answered `request` itself, never asking the responder: headers or a body over
    /// their limits (431, 413), or a request that came in as the server stopped (503). Called
    /// on the daemon thread, for counting; must not wait.
    func didRefuse(_ request: HTTPRequest, with response: HTTPResponse)
}

extension HTTPResponder {
    public func respondInline(to request: HTTPRequest, reply: HTTPReply) -> Bool { false }
    public func refusalBeforeBody(to request: HTTPRequest) -> HTTPResponse? { nil }
    public func didRefuse(_ request: HTTPRequest, with response: HTTPResponse) {}
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
    /// See ``HTTPResponder/respondInline(to:reply:)``.
    public typealias InlineHandler = @Sendable (HTTPRequest, HTTPReply) -> Bool
    /// See ``HTTPResponder/refusalBeforeBody(to:)``.
    public typealias BeforeBodyCheck = @Sendable (HTTPRequest) -> HTTPResponse?

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
        let inlineHandler: InlineHandler?
        let beforeBody: BeforeBodyCheck?
    }

    private var routes: [Route] = []
    /// Methods that some route answers inline: other requests skip `respondInline`'s routing.
    private var inlineMethods: Set<HTTPMethod> = []

    public init() {}

    /// Adds a route; `beforeBody`, when given, may refuse a request from its head (see
    /// ``HTTPResponder/refusalBeforeBody(to:)``); `inline`, when given, is tried before `handler`
    /// (see ``HTTPResponder/respondInline(to:reply:)``).
    public mutating func add(_ method: HTTPMethod, _ pattern: String, beforeBody: BeforeBodyCheck? = nil,
                             inline: InlineHandler? = nil, _ handler: @escaping Handler) {
        let segments = Self.split(pattern).map { part -> Segment in
            part.hasPrefix(":") && part.count > 1 ? .parameter(String(part.dropFirst())) : .literal(part)
        }
        let literalCount = segments.filter { if case .literal = $0 { true } else { false } }.count
        routes.append(Route(method: method, pattern: pattern, segments: segments, literalCount: literalCount, handler: handler,
                            inlineHandler: inline, beforeBody: beforeBody))
        if inline != nil { inlineMethods.insert(method) }
    }

    /// Every route, in the order added.
    public var patterns: [Pattern] { routes.map { Pattern(method: $0.method, pattern: $0.pattern) } }

    public mutating func get(_ pattern: String, _ handler: @escaping Handler) { add(.GET, pattern, handler) }
    public mutating func post(_ pattern: String, beforeBody: BeforeBodyCheck? = nil, inline: InlineHandler? = nil,
                              _ handler: @escaping Handler) {
        add(.POST, pattern, beforeBody: beforeBody, inline: inline, handler)
    }
    public mutating func put(_ pattern: String, _ handler: @escaping Handler) { add(.PUT, pattern, handler) }
    public mutating func delete(_ pattern: String, _ handler: @escaping Handler) { add(.DELETE, pattern, handler) }

    public func respondInline(to request: HTTPRequest, reply: HTTPReply) -> Bool {
        guard inlineMethods.contains(request.method), case .route(let route, let parameters) = resolve(request), let inline = route.inlineHandler else { return false }
        var routed = request
        routed.pathParameters = parameters
        return inline(routed, reply)
    }

    /// An unknown path or method is refused before the body; a route's own check decides otherwise.
    public func refusalBeforeBody(to request: HTTPRequest) -> HTTPResponse? {
        switch resolve(request) {
        case .refused(let response):
            return response
        case .route(let route, let parameters):
            guard let check = route.beforeBody else { return nil }
            var routed = request
            routed.pathParameters = parameters
            return check(routed)
        }
    }

    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        let route: Route, parameters: [String: String]
        switch resolve(request) {
        case .route(let found, let foundParameters): (route, parameters) = (found, foundParameters)
        case .refused(let response): return response
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

    private enum Resolution {
        case route(Route, [String: String])
        case refused(HTTPResponse)
    }

    private func resolve(_ request: HTTPRequest) -> Resolution {
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
            if allowed.isEmpty { return .refused(HTTPProblem.notFound(path: request.path).response) }
            if allowed.contains(.GET) && !allowed.contains(.HEAD) { allowed.append(.HEAD) }
            allowed.sort { $0.rawValue < $1.rawValue }
            var response = HTTPProblem.methodNotAllowed(request.method, allowed: allowed).response
            response.headers.set("Allow", allowed.map(\.rawValue).joined(separator: ", "))
            return .refused(response)
        }
        return .route(route, parameters)
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
