import EngageAPI
import EngageCore
import Synchronization

/// API keys in memory: the key lookup of route tests, which run without a database. Answers as
/// the PostgreSQL store does (unknown or revoked: nil), and can be made to fail (the store
/// unreachable) or to answer only the way that waits (a key not in the store's cache yet).
public final class InMemoryKeys: KeyLookup {
    private struct State {
        var bySecret: [String: APIKey] = [:]
        var unavailable = false
        var cached = true
    }

    private let state = Mutex(State())

    public init() {}

    /// A new active key's secret.
    public func issue(app: String, role: Role = .ingest) -> String {
        let issued = IssuedKey.generate(app: app, role: role, createdAt: Timestamp(microsecondsSinceEpoch: 0))
        state.withLock { $0.bySecret[issued.secret] = issued.key }
        return issued.secret
    }

    public func revoke(_ secret: String) {
        state.withLock { $0.bySecret[secret]?.revokedAt = Timestamp(microsecondsSinceEpoch: 0) }
    }

    /// While true, every lookup throws, as the PostgreSQL store does when it cannot be reached.
    public func setUnavailable(_ unavailable: Bool) {
        state.withLock { $0.unavailable = unavailable }
    }

    /// While false, `authenticateFromCache` answers `.notCached`: every request goes the way that
    /// may wait (a task), as on a server that has not seen the key yet.
    public func setCached(_ cached: Bool) {
        state.withLock { $0.cached = cached }
    }

    public func authenticate(_ presented: String) async throws -> APIKey? {
        let (key, unavailable) = state.withLock { ($0.bySecret[presented], $0.unavailable) }
        if unavailable { throw KeysUnavailable() }
        return key.flatMap { $0.isRevoked ? nil : $0 }
    }

    public func authenticateFromCache(_ presented: String) -> CachedAuthentication {
        let (key, cached, unavailable) = state.withLock { ($0.bySecret[presented], $0.cached, $0.unavailable) }
        guard cached, !unavailable else { return .notCached }
        guard let key, !key.isRevoked else { return .refused }
        return .key(key)
    }

    /// The failure of an unreachable key store.
    public struct KeysUnavailable: Error {}
}
