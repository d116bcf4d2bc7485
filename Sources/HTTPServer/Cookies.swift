/// Cookies as a browser sends them (`Cookie: a=1; b=2`, RFC 6265 section 5.4) and as a server
/// sets them (`Set-Cookie`, section 4.1).
extension HTTPRequest {
    /// The value of the first cookie named `name`, or nil. Values are returned as sent (no
    /// decoding); a quoted value loses its quotes.
    public func cookie(_ name: String) -> String? {
        for header in headers.values(for: "Cookie") {
            for pair in header.split(separator: ";") {
                let trimmed = pair.drop { $0 == " " || $0 == "\t" }
                guard let equals = trimmed.firstIndex(of: "=") else { continue }
                guard trimmed[..<equals].trimmingTrailingSpaces == name else { continue }
                var value = trimmed[trimmed.index(after: equals)...].drop { $0 == " " || $0 == "\t" }.trimmingTrailingSpaces
                if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = value.dropFirst().dropLast() }
                return String(value)
            }
        }
        return nil
    }
}

/// One `Set-Cookie` header value.
public struct SetCookie: Sendable, Equatable {
    public enum SameSite: String, Sendable {
        case strict = "Strict", lax = "Lax"
    }

    public var name: String
    /// Must consist of cookie-octets (no spaces, quotes, commas, semicolons or backslashes).
    public var value: String
    public var path = "/"
    /// nil: a session cookie, gone when the browser closes.
    public var maxAge: Int?
    public var httpOnly = true
    public var secure = false
    public var sameSite: SameSite = .strict

    public init(name: String, value: String, path: String = "/", maxAge: Int? = nil, httpOnly: Bool = true,
                secure: Bool = false, sameSite: SameSite = .strict) {
        self.name = name
        self.value = value
        self.path = path
        self.maxAge = maxAge
        self.httpOnly = httpOnly
        self.secure = secure
        self.sameSite = sameSite
    }

    /// The cookie removed: empty, expired now.
    public static func removal(of name: String, path: String = "/", secure: Bool = false) -> SetCookie {
        SetCookie(name: name, value: "", path: path, maxAge: 0, secure: secure)
    }

    /// `name=value; Path=/; Max-Age=n; HttpOnly; Secure; SameSite=Strict`.
    public var headerValue: String {
        var parts = ["\(name)=\(value)", "Path=\(path)"]
        if let maxAge { parts.append("Max-Age=\(maxAge)") }
        if httpOnly { parts.append("HttpOnly") }
        if secure { parts.append("Secure") }
        parts.append("SameSite=\(sameSite.rawValue)")
        return parts.joined(separator: "; ")
    }

    /// True when `text` may be a cookie's value as it is (RFC 6265 cookie-octets).
    public static func isCookieValue(_ text: String) -> Bool {
        text.utf8.allSatisfy { byte in
            byte == 0x21 || (0x23...0x2B).contains(byte) || (0x2D...0x3A).contains(byte) || (0x3C...0x5B).contains(byte)
                || (0x5D...0x7E).contains(byte)
        }
    }
}

extension HTTPResponse {
    /// Adds a `Set-Cookie` header (several may be set on one response).
    public mutating func setCookie(_ cookie: SetCookie) {
        headers.add("Set-Cookie", cookie.headerValue)
    }
}

private extension Substring {
    var trimmingTrailingSpaces: Substring {
        var text = self
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }
}
