/// A complete response. `Content-Length` is computed by the server; do not set it.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: Int, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response whose body is already-encoded JSON.
    public static func json(_ body: [UInt8], status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: body)
    }

    /// A response whose body is an already-encoded JSON document given as text.
    public static func json(_ body: String, status: Int = 200) -> HTTPResponse {
        json(Array(body.utf8), status: status)
    }

    /// A UTF-8 `text/plain` response.
    public static func text(_ body: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Array(body.utf8))
    }

    /// A UTF-8 `text/html` page.
    public static func html(_ body: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "text/html; charset=utf-8"], body: Array(body.utf8))
    }

    /// `303 See Other` to `location`: after a form is posted, the browser loads `location` with GET.
    public static func seeOther(_ location: String) -> HTTPResponse {
        HTTPResponse(status: 303, headers: ["Location": location])
    }

    /// An `application/problem+json` response for `problem`.
    public static func problem(_ problem: HTTPProblem) -> HTTPResponse {
        problem.response
    }

    /// `204 No Content`.
    public static var noContent: HTTPResponse { HTTPResponse(status: 204) }
}
