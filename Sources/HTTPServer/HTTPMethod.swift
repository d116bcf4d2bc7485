/// An HTTP request method such as `GET`; any token the client sent is representable.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    public static let GET = HTTPMethod(rawValue: "GET")
    public static let HEAD = HTTPMethod(rawValue: "HEAD")
    public static let POST = HTTPMethod(rawValue: "POST")
    public static let PUT = HTTPMethod(rawValue: "PUT")
    public static let PATCH = HTTPMethod(rawValue: "PATCH")
    public static let DELETE = HTTPMethod(rawValue: "DELETE")
    public static let OPTIONS = HTTPMethod(rawValue: "OPTIONS")
}
