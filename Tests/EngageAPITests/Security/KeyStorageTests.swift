import Digest
import EngageCore
import Foundation
import Postgres
import Testing
import TestSupport
@testable import EngageAPI

/// Keys exist in clear text only in the creator's hands: the database holds their SHA-256.
@Suite("Key storage")
struct KeyStorageTests {
    @Test(.timeLimit(.minutes(1)))
    func noTableHoldsAKeyOrItsSecretPart() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp("keys")
        var issued: [IssuedKey] = []
        for role in Role.allCases { issued.append(try await server.keys.create(app: app, role: role, name: "\(role)")) }
        // Use them, so that every path that sees a key has run.
        try expectAccepted(try await server.post(WireEvent.valid(1).array, key: issued[0].secret), Acceptance(accepted: 1))
        _ = try await server.request("GET", "/v1/report", headers: [("Authorization", "Bearer \(issued[1].secret)")])
        #expect(try await server.keys.revoke(keyID: issued[2].key.keyID))

        for key in issued {
            let secretPart = String(key.secret.split(separator: "_").last!)
            #expect(secretPart.count == 40)
            #expect(try await server.tablesContaining(secretPart) == [], "the secret of a \(key.key.role) key is stored")
            let stored = try await server.pool.withConnection { connection in
                try connection.query("SELECT key_hash FROM api_keys WHERE key_id = \(key.key.keyID)")[0].decode(0, as: String.self)
            }
            #expect(stored == SHA256.hexDigest(key.secret))
        }
    }

    @Test func digestComparisonFindsADifferenceAnywhere() {
        let digest = SHA256.hexDigest("egk_00000000_" + String(repeating: "0", count: 40))
        #expect(KeyFormat.constantTimeEquals(digest, digest))
        // A difference anywhere, first or last byte included, is a difference.
        for index in digest.utf8.indices {
            var bytes = Array(digest.utf8)
            let offset = digest.utf8.distance(from: digest.utf8.startIndex, to: index)
            bytes[offset] = bytes[offset] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            #expect(!KeyFormat.constantTimeEquals(digest, String(decoding: bytes, as: UTF8.self)))
        }
        #expect(!KeyFormat.constantTimeEquals(digest, String(digest.dropLast())))
        #expect(!KeyFormat.constantTimeEquals(digest, ""))
    }

    /// The cache remembers the secret that last matched, so that its requests skip SHA-256; a
    /// different secret under the same key id must still be checked against the stored hash.
    @Test(.timeLimit(.minutes(1)))
    func aCachedKeyStillRefusesAnotherSecretWithItsID() async throws {
        let server = try SharedServer.get()
        // A store of its own whose cache outlives the test, so every check below is the cache's.
        let keys = KeyStore(pool: server.pool, cacheLifetime: .seconds(600))
        let issued = try await keys.create(app: uniqueApp("cache"), role: .ingest)
        #expect(keys.authenticateFromCache(issued.secret) == .notCached)
        #expect(try await keys.authenticate(issued.secret)?.keyID == issued.key.keyID)
        #expect(keys.authenticateFromCache(issued.secret) == .key(issued.key))
        let secretPart = issued.secret.split(separator: "_").last!
        let prefix = issued.secret.dropLast(secretPart.count)
        let last = secretPart.last!
        let forged = String(prefix + secretPart.dropLast() + (last == "a" ? "b" : "a"))
        #expect(forged != issued.secret)
        #expect(keys.authenticateFromCache(forged) == .refused)
        #expect(keys.authenticateFromCache(String(prefix) + String(repeating: "0", count: secretPart.count)) == .refused)
        #expect(try await keys.authenticate(forged) == nil)
        // The right secret still passes after the refusals; revocation empties the cache.
        #expect(keys.authenticateFromCache(issued.secret) == .key(issued.key))
        #expect(try await keys.revoke(keyID: issued.key.keyID))
        #expect(keys.authenticateFromCache(issued.secret) == .notCached)
        #expect(try await keys.authenticate(issued.secret) == nil)
        #expect(keys.authenticateFromCache(issued.secret) == .refused)
    }

    /// Made-up keys of the right shape (anyone can make thousands) fill the cache with ids no key
    /// has; when it is full they go, not the real keys cached beside them, whose requests would
    /// otherwise all wait for the database again.
    @Test(.timeLimit(.minutes(1)))
    func madeUpKeysDoNotPushRealOnesOutOfTheCache() async throws {
        let server = try SharedServer.get()
        let keys = KeyStore(pool: server.pool, cacheLifetime: .seconds(600), cacheLimit: 20)
        let issued = try await keys.create(app: uniqueApp("flood"), role: .ingest)
        #expect(try await keys.authenticate(issued.secret)?.keyID == issued.key.keyID)
        for _ in 0..<50 {
            let madeUp = KeyFormat.generate().text
            #expect(try await keys.authenticate(madeUp) == nil)
            #expect(keys.authenticateFromCache(issued.secret) == .key(issued.key))
        }
    }
}
