/// A complete request as handed to a responder: the body has been fully received.
public struct HTTPRequest: Sendable {
    public struct QueryItem: Sendable, Equatable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public var method: HTTPMethod
    /// The percent-decoded path, without the query string; an encoded slash (`%2F`) stays
    /// encoded, so that it never splits a segment (`/v1/experiments/abc%2Fstop` is one id, not the
    /// stop route of `abc`).
    public var path: String
    /// Percent-decoded query items in order (`+` decodes to a space).
    public var queryItems: [QueryItem]
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The peer's numeric IP address, or an empty string when unknown.
    public var remoteAddress: String
    /// Values of `:name` path segments, filled in by ``Router``.
    public var pathParameters: [String: String]

    public init(
        method: HTTPMethod,
        path: String,
        queryItems: [QueryItem] = [],
        headers: HTTPHeaders = [:],
        body: [UInt8] = [],
        remoteAddress: String = "",
        pathParameters: [String: String] = [:]
    ) {
        self.method = method
        self.path = path
        self.queryItems = queryItems
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
        self.pathParameters = pathParameters
    }

    /// The first query value named `name`, or nil.
    public func query(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }
}

/// Percent-decoding of URL components (RFC 3986); malformed escapes are kept literally.
enum PercentDecoding {
    /// A request's path: every escape decoded but the slash's.
    static func decodePath(_ text: some StringProtocol) -> String {
        decode(text, plusAsSpace: false, keepingSlashes: true)
    }

    static func decode(_ text: some StringProtocol, plusAsSpace: Bool, keepingSlashes: Bool = false) -> String {
        let bytes = Array(text.utf8)
        guard bytes.contains(where: { $0 == UInt8(ascii: "%") || (plusAsSpace && $0 == UInt8(ascii: "+")) }) else {
            return String(text)
        }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                if keepingSlashes && high << 4 | low == UInt8(ascii: "/") {
                    decoded += bytes[index...index + 2]
                } else {
                    decoded.append(high << 4 | low)
                }
                index += 3
            } else if plusAsSpace && byte == UInt8(ascii: "+") {
                decoded.append(UInt8(ascii: " "))
                index += 1
            } else {
                decoded.append(byte)
                index += 1
            }
        }
        return String(decoding: decoded, as: UTF8.self)
    }

    /// A query name or value as a client must have written it: every `%` begins two hex digits and
    /// the decoded bytes are UTF-8; nil otherwise. Read loosely, `%ff` and `%fe` were both U+FFFD
    /// (one device id for two) and `%4` stood for itself.
    static func decodeStrictly(_ bytes: some Collection<UInt8>, plusAsSpace: Bool) -> String? {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var rest = bytes[...]
        while let byte = rest.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard let high = rest.popFirst().flatMap(hexValue), let low = rest.popFirst().flatMap(hexValue) else { return nil }
                decoded.append(high << 4 | low)
            } else {
                decoded.append(plusAsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            }
        }
        return String(validating: decoded, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
