import Digest
import HTTPServer

/// The console's keys, as a browser keeps them: the API keys entered in the sign-in form, in one
/// cookie that pages cannot read (`HttpOnly`), that is never sent with a request from another site
/// (`SameSite=Strict`), and under HTTPS never over plain HTTP (`Secure`).
///
/// State-changing forms carry a token derived from those keys (HMAC-SHA256 keyed by them): a page
/// of another site cannot know it, so it cannot make the browser post a form that is accepted.
/// The sign-in form, before any key is held, carries instead the random value of a second cookie
/// (a double submit), so that another site cannot sign the browser in with a key of its own.
struct ConsoleSession: Sendable, Equatable {
    static let cookieName = "engage_console"
    static let loginCookieName = "engage_console_login"
    /// Apps a browser may hold keys for at once (a cookie stays far below 4 KiB).
    static let maxKeys = 8

    /// Presented keys, in the order they were added; distinct.
    let keys: [String]

    init(keys: [String]) {
        var distinct: [String] = []
        for key in keys where !key.isEmpty && !distinct.contains(key) { distinct.append(key) }
        self.keys = Array(distinct.suffix(Self.maxKeys))
    }

    /// The session of the request's cookie; nil without one. Values that cannot be keys are left out.
    init?(_ request: HTTPRequest) {
        guard let value = request.cookie(Self.cookieName) else { return nil }
        let keys = value.split(separator: ".").map(String.init).filter { SetCookie.isCookieValue($0) && $0.utf8.count <= 128 }
        guard !keys.isEmpty else { return nil }
        self.init(keys: keys)
    }

    /// This session with `key` added (the oldest dropped past `maxKeys`).
    func adding(_ key: String) -> ConsoleSession {
        ConsoleSession(keys: keys.filter { $0 != key } + [key])
    }

    func cookie(secure: Bool, lifetimeSeconds: Int) -> SetCookie {
        SetCookie(name: Self.cookieName, value: keys.joined(separator: "."), maxAge: lifetimeSeconds, secure: secure)
    }

    /// The CSRF token of this session's forms.
    var formToken: String {
        Hex.encode(HMACSHA256(key: Array(keys.joined(separator: ".").utf8)).authenticationCode(for: Array("engage console form".utf8)))
    }

    /// True when `presented` is this session's form token (compared without an early exit).
    func accepts(formToken presented: String?) -> Bool {
        guard let presented, !presented.isEmpty else { return false }
        return KeyFormat.constantTimeEquals(presented, formToken)
    }

    /// A fresh value for the sign-in form's cookie.
    static func newLoginToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return KeyFormat.hex((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}
