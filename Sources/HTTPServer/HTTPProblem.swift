import JSONText

/// An error that knows how it is reported over HTTP.
public protocol HTTPProblemConvertible: Error {
    var problem: HTTPProblem { get }
}

/// RFC 9457 problem details, rendered as `application/problem+json`.
///
/// `type` is `about:blank` or a stable identifier such as
/// `https://engage.dev/problems/payload-too-large`; `title` is constant for a type, `detail` explains
/// this occurrence. Extension members are given pre-rendered (`name` plus a JSON value text).
public struct HTTPProblem: Error, HTTPProblemConvertible, Sendable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible
{
    public struct Member: Sendable, Equatable {
        public var name: String
        /// Already-valid JSON text, e.g. `42`, `"text"` (see ``JSONString``) or `[...]`.
        public var json: String

        public init(name: String, json: String) {
            self.name = name
            self.json = json
        }
    }

    public static let problemBase = "https://engage.dev/problems/"

    public var status: Int
    public var type: String
    public var title: String
    public var detail: String?
    public var instance: String?
    public var members: [Member]

    public init(
        status: Int,
        type: String = "about:blank",
        title: String,
        detail: String? = nil,
        instance: String? = nil,
        members: [Member] = []
    ) {
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.instance = instance
        self.members = members
    }

    /// A problem with type `https://engage.dev/problems/<slug>`.
    public init(status: Int, slug: String, title: String, detail: String? = nil, members: [Member] = []) {
        self.init(status: status, type: Self.problemBase + slug, title: title, detail: detail, members: members)
    }

    public var problem: HTTPProblem { self }

    /// The stable code of this problem: the slug of its type, or the status for `about:blank`.
    public var code: String {
        type.hasPrefix(Self.problemBase) ? String(type.dropFirst(Self.problemBase.count)) : "http-\(status)"
    }

    public var description: String { "HTTPProblem(\(status) \(code))" }

    public var debugDescription: String {
        "HTTPProblem(status: \(status), type: \(type), title: \(title), detail: \(detail ?? "-"))"
    }

    /// The problem document; members named like the standard ones are skipped.
    public var json: String {
        var parts = [
            "\"type\":" + JSONString.render(type),
            "\"title\":" + JSONString.render(title),
            "\"status\":\(status)",
        ]
        if let detail { parts.append("\"detail\":" + JSONString.render(detail)) }
        if let instance { parts.append("\"instance\":" + JSONString.render(instance)) }
        let reserved: Set = ["type", "title", "status", "detail", "instance"]
        for member in members where !reserved.contains(member.name) {
            parts.append(JSONString.render(member.name) + ":" + member.json)
        }
        return "{" + parts.joined(separator: ",") + "}"
    }

    public var response: HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/problem+json"], body: Array(json.utf8))
    }
}

extension HTTPProblem {
    public static func badRequest(_ detail: String? = nil) -> HTTPProblem {
        HTTPProblem(status: 400, slug: "bad-request", title: "Bad request", detail: detail)
    }

    /// A query string whose names or values are not percent-encoded UTF-8.
    public static let malformedQuery = HTTPProblem(
        status: 400, slug: "malformed-query", title: "Malformed query string",
        detail: "Every query name and value must be UTF-8, percent-encoded: a % begins two hex digits (%25 for % itself).")

    public static func notFound(path: String) -> HTTPProblem {
        HTTPProblem(status: 404, slug: "not-found", title: "Not found", detail: "No resource at \(path).")
    }

    public static func methodNotAllowed(_ method: HTTPMethod, allowed: [HTTPMethod]) -> HTTPProblem {
        HTTPProblem(
            status: 405, slug: "method-not-allowed", title: "Method not allowed",
            detail: "\(method.rawValue) is not allowed here; use \(allowed.map(\.rawValue).joined(separator: ", ")).")
    }

    public static func payloadTooLarge(limit: Int) -> HTTPProblem {
        HTTPProblem(
            status: 413, slug: "payload-too-large", title: "Payload too large",
            detail: "The request body exceeds \(limit) bytes.",
            members: [Member(name: "limit", json: String(limit))])
    }

    public static func headersTooLarge(limit: Int) -> HTTPProblem {
        HTTPProblem(
            status: 431, slug: "headers-too-large", title: "Request header fields too large",
            detail: "The request headers exceed \(limit) bytes.",
            members: [Member(name: "limit", json: String(limit))])
    }

    public static let serviceUnavailable = HTTPProblem(
        status: 503, slug: "unavailable", title: "Service unavailable", detail: "The server is shutting down.")

    /// The answer to a request the server will not finish because it is stopping: 503, to be
    /// retried in 5 s (at another instance, or at this one restarted).
    public static var shutdownResponse: HTTPResponse {
        var response = serviceUnavailable.response
        response.headers.set("Retry-After", "5")
        return response
    }

    public static let internalError = HTTPProblem(status: 500, slug: "internal", title: "Internal server error")
}
