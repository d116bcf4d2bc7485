import EngageAPI
import Foundation
import HTTPServer
import Testing
import TestSupport

/// A browser's side of the console for route tests: requests with the console's cookie and
/// forms, and what the answers carry (cookies set, the page's CSRF token, the sign-in form).
struct ConsoleClient {
    let server: any LoopbackServer
    /// The value of the `engage_console` cookie sent with every request, if any.
    var keys: [String] = []

    static let loginFormMarker = #"<form method="post" action="/console/login">"#

    var cookieHeader: [(String, String)] {
        keys.isEmpty ? [] : [("Cookie", "engage_console=" + keys.joined(separator: "."))]
    }

    func get(_ target: String, extraCookies: [String] = []) async throws -> RawHTTPClient.Response {
        var headers = cookieHeader
        if !extraCookies.isEmpty {
            headers = [("Cookie", (headers.map(\.1) + extraCookies).joined(separator: "; "))]
        }
        return try await server.request("GET", target, headers: headers)
    }

    /// Posts a form: `fields` URL-encoded, with the cookies given besides the session's.
    func post(_ target: String, _ fields: [(String, String)], extraCookies: [String] = []) async throws -> RawHTTPClient.Response {
        let cookies = cookieHeader.map(\.1) + extraCookies
        var headers = [("Content-Type", "application/x-www-form-urlencoded")]
        if !cookies.isEmpty { headers.append(("Cookie", cookies.joined(separator: "; "))) }
        let body = fields.map { ConsoleClient.encode($0.0) + "=" + ConsoleClient.encode($0.1) }.joined(separator: "&")
        return try await server.request("POST", target, headers: headers, body: Array(body.utf8))
    }

    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }

    /// The `csrf` value of the first form of a page.
    static func formToken(_ response: RawHTTPClient.Response) -> String? {
        guard let range = response.text.range(of: #"name="csrf" value=""#) else { return nil }
        return String(response.text[range.upperBound...].prefix { $0 != "\"" })
    }

    /// The `Set-Cookie` values of a response, by cookie name.
    static func setCookies(_ response: RawHTTPClient.Response) -> [String: String] {
        var cookies: [String: String] = [:]
        for value in response.headers.values(for: "Set-Cookie") {
            cookies[String(value.prefix { $0 != "=" })] = value
        }
        return cookies
    }

    /// The value a `Set-Cookie` header sets.
    static func value(_ setCookie: String?) -> String? {
        setCookie.map { String($0.drop { $0 != "=" }.dropFirst().prefix { $0 != ";" }) }
    }

    /// Checks that `response` is the sign-in form with `status`, and holds nothing of a page's data.
    static func expectSignInForm(_ response: RawHTTPClient.Response, status: Int = 401, _ comment: String = "",
                                 sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == status, "\(comment): \(response.text.prefix(300))", sourceLocation: sourceLocation)
        #expect(response.headers["Content-Type"] == "text/html; charset=utf-8", sourceLocation: sourceLocation)
        #expect(response.text.contains(loginFormMarker), "\(comment)", sourceLocation: sourceLocation)
        expectSecured(response, comment, sourceLocation: sourceLocation)
        for marker in ["<nav", "data-metric", "data-experiment", "data-status", "data-delivered", "Sign out"] {
            #expect(!response.text.contains(marker), "\(comment) shows \(marker)", sourceLocation: sourceLocation)
        }
    }

    /// The headers every console response carries.
    static func expectSecured(_ response: RawHTTPClient.Response, _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        let policy = response.headers["Content-Security-Policy"] ?? ""
        #expect(policy.hasPrefix("default-src 'none'; style-src 'sha256-"), "\(comment)", sourceLocation: sourceLocation)
        #expect(!policy.contains("script-src"), sourceLocation: sourceLocation)
        #expect(response.headers["Cache-Control"] == "no-store", "\(comment)", sourceLocation: sourceLocation)
        #expect(response.headers["X-Frame-Options"] == "DENY", sourceLocation: sourceLocation)
        #expect(response.headers["X-Content-Type-Options"] == "nosniff", sourceLocation: sourceLocation)
    }
}
