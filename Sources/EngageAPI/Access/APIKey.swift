import Digest
import EngageCore

/// What a key may do. `admin` may do everything `read` and `ingest` may.
public enum Role: String, Sendable, CaseIterable, Equatable {
    case ingest, read, admin

    public func allows(_ needed: Role) -> Bool { self == needed || self == .admin }
}

/// A key as stored: never the key itself, only its id and the hash of the whole key.
public struct APIKey: Sendable, Equatable {
    public var keyID: String
    public var appID: String
    public var role: Role
    public var name: String
    public var createdAt: Timestamp
    public var revokedAt: Timestamp?

    public init(keyID: String, appID: String, role: Role, name: String, createdAt: Timestamp, revokedAt: Timestamp? = nil) {
        self.keyID = keyID
        self.appID = appID
        self.role = role
        self.name = name
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }

    public var isRevoked: Bool { revokedAt != nil }
}

/// The secret form handed out once: `egk_<key id>_<secret>`.
public struct IssuedKey: Sendable {
    public var key: APIKey
    public var secret: String

    /// A new key with a fresh secret, made as `KeyStore.create` makes one; storing it is the
    /// caller's business (a key lookup in memory, for route tests).
    public static func generate(app: String, role: Role, name: String = "", createdAt: Timestamp) -> IssuedKey {
        let (keyID, text) = KeyFormat.generate()
        return IssuedKey(key: APIKey(keyID: keyID, appID: app, role: role, name: name, createdAt: createdAt), secret: text)
    }
}

enum KeyFormat {
    static let prefix = "egk_"

    /// 8 hex digits of id, 40 of secret, from the system's random source.
    static func generate() -> (keyID: String, text: String) {
        var generator = SystemRandomNumberGenerator()
        let keyID = hex((0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let secret = hex((0..<20).map { _ in UInt8.random(in: 0...255, using: &generator) })
        return (keyID, prefix + keyID + "_" + secret)
    }

    /// The key id inside a presented key, if it has the right shape.
    static func keyID(of text: String) -> String? {
        guard text.hasPrefix(prefix), text.utf8.count == prefix.utf8.count + 8 + 1 + 40 else { return nil }
        let body = text.dropFirst(prefix.count)
        let keyID = body.prefix(8)
        guard body.dropFirst(8).first == "_", keyID.allSatisfy(\.isHexDigit) else { return nil }
        return String(keyID)
    }

    static func hash(_ text: String) -> String { SHA256.hexDigest(text) }

    /// Compares two equal-length hex digests without an early exit.
    static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let left = Array(a.utf8), right = Array(b.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }

    static func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }
}
