/// Finds the API key behind a presented secret: the seam under authentication. `KeyStore` looks
/// in PostgreSQL (with a cache in front); route tests pass one that keeps keys in memory, so that
/// everything the `Authenticator` and the routes decide runs without a database.
public protocol KeyLookup: Sendable {
    /// The active key matching a presented secret, or nil. Throws when the keys cannot be read
    /// (the request is then answered 503).
    func authenticate(_ presented: String) async throws -> APIKey?

    /// What can be said without waiting for anything (for requests answered on the HTTP daemon
    /// thread): `.notCached` sends the request the way that may wait.
    func authenticateFromCache(_ presented: String) -> CachedAuthentication
}

/// What a key lookup can say about a presented secret without waiting.
public enum CachedAuthentication: Sendable, Equatable {
    case key(APIKey)
    /// Malformed, unknown, revoked, or not the key's secret.
    case refused
    /// Only the database can tell.
    case notCached
}
