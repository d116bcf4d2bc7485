import EngageCore
import Foundation
import Postgres
import Runtime
import Synchronization

/// API keys in PostgreSQL, with a short-lived cache in front so that authenticating a request
/// costs no query in the common case. Revocation takes effect within `cacheLifetime`.
public final class KeyStore: KeyLookup {
    public let pool: ConnectionPool
    private let cacheLifetime: Duration
    /// How long authenticating waits for the database: a database that does not answer (a frozen
    /// host, a pool whose every connection is stuck) gets the request its 503 and `Retry-After`
    /// in time, instead of holding it until the client gives up.
    private let lookupLimit: Duration
    private let time: any TimeSource
    private let cache = Mutex<[String: CacheEntry]>([:])
    /// Entries the cache holds at most; past it, expired entries go first, then those of ids no
    /// key has (which anyone can make up by the thousand), and only then every entry.
    private let cacheLimit: Int

    private struct CacheEntry {
        var key: APIKey?
        var hash: String?
        var expires: ContinuousClock.Instant
        /// The secret that last matched `hash`, so that its next requests skip SHA-256 (about a
        /// tenth of the CPU of a single-event request). In memory only, and gone with the entry.
        var verifiedSecret: String?
    }

    public init(pool: ConnectionPool, cacheLifetime: Duration = .seconds(5), lookupLimit: Duration = .seconds(5),
                cacheLimit: Int = 10_000, time: any TimeSource = SystemTime()) {
        self.pool = pool
        self.cacheLimit = max(1, cacheLimit)
        self.cacheLifetime = cacheLifetime
        self.lookupLimit = lookupLimit
        self.time = time
    }

    // MARK: Administration

    public func create(app: String, role: Role, name: String = "") async throws -> IssuedKey {
        let (keyID, text) = KeyFormat.generate()
        let hash = KeyFormat.hash(text)
        let row = try await pool.withConnection { connection in
            try connection.query("""
                INSERT INTO api_keys (key_id, app_id, role, key_hash, name)
                VALUES (\(keyID), \(app), \(role.rawValue), \(hash), \(name))
                RETURNING created_at
                """)[0].cell(0).unixMicroseconds()
        }
        let key = APIKey(keyID: keyID, appID: app, role: role, name: name,
                         createdAt: Timestamp(microsecondsSinceEpoch: row), revokedAt: nil)
        return IssuedKey(key: key, secret: text)
    }

    public func list(app: String? = nil) async throws -> [APIKey] {
        try await pool.withConnection { connection in
            let rows = try connection.query("""
                SELECT key_id, app_id, role, name, created_at, revoked_at FROM api_keys
                WHERE \(app)::text IS NULL OR app_id = \(app)
                ORDER BY app_id, created_at, key_id
                """)
            return try rows.rows.map { row in
                APIKey(keyID: try row.decode(0), appID: try row.decode(1),
                       role: Role(rawValue: try row.decode(2)) ?? .read, name: try row.decode(3),
                       createdAt: Timestamp(microsecondsSinceEpoch: try row.cell(4).unixMicroseconds()),
                       revokedAt: row.isNull(5) ? nil : Timestamp(microsecondsSinceEpoch: try row.cell(5).unixMicroseconds()))
            }
        }
    }

    /// Returns false when no such key exists or it was already revoked.
    public func revoke(keyID: String) async throws -> Bool {
        let changed = try await pool.withConnection { connection in
            try connection.execute("UPDATE api_keys SET revoked_at = now() WHERE key_id = \(keyID) AND revoked_at IS NULL")
        }
        cache.withLock { $0.removeAll() }
        return changed == 1
    }

    // MARK: Authentication

    /// The active key matching a presented secret, or nil.
    public func authenticate(_ presented: String) async throws -> APIKey? {
        switch authenticateFromCache(presented) {
        case .key(let key): return key
        case .refused: return nil
        case .notCached: break
        }
        guard let keyID = KeyFormat.keyID(of: presented) else { return nil }
        let now = time.now
        let hash = KeyFormat.hash(presented)
        let pool = self.pool
        let answer = try await withTimeLimit(lookupLimit) {
            try await pool.withConnection { connection -> (APIKey, String)? in
                let rows = try connection.query("""
                    SELECT key_id, app_id, role, name, created_at, key_hash FROM api_keys
                    WHERE key_id = \(keyID) AND revoked_at IS NULL
                    """)
                guard let row = rows.rows.first else { return nil }
                let key = APIKey(keyID: try row.decode(0), appID: try row.decode(1),
                                 role: Role(rawValue: try row.decode(2)) ?? .read, name: try row.decode(3),
                                 createdAt: Timestamp(microsecondsSinceEpoch: try row.cell(4).unixMicroseconds()), revokedAt: nil)
                return (key, try row.decode(5))
            }
        }
        guard let found = answer else { throw KeyLookupTimedOut(limit: lookupLimit) }
        let verified = Self.verified(found?.0, storedHash: found?.1, presentedHash: hash)
        let limit = cacheLimit
        cache.withLock { cache in
            if cache.count >= limit { cache = cache.filter { $0.value.expires > now } }
            if cache.count >= limit { cache = cache.filter { $0.value.key != nil } }
            if cache.count >= limit { cache.removeAll() }
            cache[keyID] = CacheEntry(key: found?.0, hash: found?.1, expires: now.advanced(by: cacheLifetime),
                                      verifiedSecret: verified != nil ? presented : nil)
        }
        return verified
    }

    /// The database gave no answer within the lookup limit.
    struct KeyLookupTimedOut: Error, CustomStringConvertible {
        let limit: Duration
        var description: String { "the API keys could not be read within \(limit)" }
    }

    /// The answer of `authenticate` when the cache has it, without waiting for anything (for
    /// requests answered on the HTTP daemon thread).
    public func authenticateFromCache(_ presented: String) -> CachedAuthentication {
        guard let keyID = KeyFormat.keyID(of: presented) else { return .refused }
        guard let entry = cache.withLock({ $0[keyID] }), entry.expires > time.now else { return .notCached }
        if let key = entry.key, let secret = entry.verifiedSecret, KeyFormat.constantTimeEquals(secret, presented) {
            return .key(key)
        }
        guard let key = Self.verified(entry.key, storedHash: entry.hash, presentedHash: KeyFormat.hash(presented)) else {
            return .refused
        }
        cache.withLock { cache in
            if cache[keyID]?.hash == entry.hash { cache[keyID]?.verifiedSecret = presented }
        }
        return .key(key)
    }

    private static func verified(_ key: APIKey?, storedHash: String?, presentedHash: String) -> APIKey? {
        guard let key, let storedHash, KeyFormat.constantTimeEquals(storedHash, presentedHash) else { return nil }
        return key
    }
}
