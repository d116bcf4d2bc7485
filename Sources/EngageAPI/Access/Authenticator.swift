import HTTPServer

/// Finds the key behind `Authorization: Bearer ...`, checks its role and, when a rate limit is
/// set, takes a token from its bucket. Every authenticated route goes through here.
public struct Authenticator: Sendable {
    public let keys: any KeyLookup
    public let rateLimiter: KeyRateLimiter?

    public init(keys: any KeyLookup, rateLimiter: KeyRateLimiter? = nil) {
        self.keys = keys
        self.rateLimiter = rateLimiter
    }

    /// The request's key if it may act as `role`; otherwise a 401, 403, 429 or 503 problem response.
    func authorize(_ request: HTTPRequest, as role: Role) async -> Result<APIKey, ProblemResponse> {
        await authorize(request, asAnyOf: [role])
    }

    /// The request's key if it may act as one of `roles` (in the order given, for the 403 detail).
    /// Checks run in this order: key present and well formed, known and active (401), role (403),
    /// rate (429); a request refused at any step takes no token.
    func authorize(_ request: HTTPRequest, asAnyOf roles: [Role]) async -> Result<APIKey, ProblemResponse> {
        switch Self.presentedKey(request) {
        case .success(let presented): return await authorize(presented: presented, asAnyOf: roles)
        case .failure(let problem): return .failure(problem)
        }
    }

    /// The same for a key presented some other way (the console's cookie).
    func authorize(presented: String, asAnyOf roles: [Role]) async -> Result<APIKey, ProblemResponse> {
        await lookUp(presented).flatMap { admit($0, asAnyOf: roles) }
    }

    /// `authorize` with the key's rate left alone: the console checks every key its cookie holds,
    /// and takes a token (`charge`) only from the key of the app its page shows.
    func identify(presented: String, asAnyOf roles: [Role]) async -> Result<APIKey, ProblemResponse> {
        await lookUp(presented).flatMap { admit($0, asAnyOf: roles, checkingRate: false) }
    }

    /// The active key of a presented secret (nil when none is), or the 503 of a key store that
    /// did not answer.
    private func lookUp(_ presented: String) async -> Result<APIKey?, ProblemResponse> {
        do {
            return .success(try await keys.authenticate(presented))
        } catch {
            return .failure(ProblemResponse(APIProblems.unavailable, retryAfter: 5))
        }
    }

    /// Takes a token of a key `identify` found; the 429 when it has none.
    func charge(_ key: APIKey) -> ProblemResponse? {
        guard case .failure(let refusal) = admit(key, asAnyOf: [key.role]) else { return nil }
        return refusal
    }

    /// `authorize` without waiting: nil when only the database knows the key (the caller then
    /// goes the way that may wait). Without `takingToken`, the rate is only looked at: for a
    /// refusal before the body, whose request is authorized again once complete.
    func authorizeWithoutWaiting(_ request: HTTPRequest, as role: Role, takingToken: Bool = true) -> Result<APIKey, ProblemResponse>? {
        let presented: String
        switch Self.presentedKey(request) {
        case .success(let found): presented = found
        case .failure(let problem): return .failure(problem)
        }
        switch keys.authenticateFromCache(presented) {
        case .key(let key): return admit(key, asAnyOf: [role], takingToken: takingToken)
        case .refused: return admit(nil, asAnyOf: [role], takingToken: takingToken)
        case .notCached: return nil
        }
    }

    private static func presentedKey(_ request: HTTPRequest) -> Result<String, ProblemResponse> {
        let headers = request.headers.values(for: "Authorization")
        guard let header = headers.first else {
            return .failure(ProblemResponse(APIProblems.unauthorized("send the key as Authorization: Bearer <key>")))
        }
        // A single-valued field: sent twice, which key the client meant is unknown.
        guard headers.count == 1 else {
            return .failure(ProblemResponse(APIProblems.unauthorized("send one Authorization header, not \(headers.count)")))
        }
        guard let presented = bearerToken(header) else {
            return .failure(ProblemResponse(APIProblems.unauthorized("the Authorization header must be: Bearer <key>")))
        }
        return .success(presented)
    }

    private func admit(_ key: APIKey?, asAnyOf roles: [Role], takingToken: Bool = true,
                       checkingRate: Bool = true) -> Result<APIKey, ProblemResponse> {
        guard let key else {
            return .failure(ProblemResponse(APIProblems.unauthorized("the key is unknown or revoked")))
        }
        guard roles.contains(where: key.role.allows) else {
            let role = roles[0]
            return .failure(ProblemResponse(APIProblems.forbidden("\(key.role.article) \(key.role.rawValue) key cannot \(role.verb)")))
        }
        if checkingRate, let rateLimiter,
           case .refused(let wait) = takingToken ? rateLimiter.admit(keyID: key.keyID) : rateLimiter.peek(keyID: key.keyID) {
            return .failure(ProblemResponse(APIProblems.rateLimited(rateLimiter.limit),
                                            retryAfter: KeyRateLimiter.retryAfterSeconds(wait)))
        }
        return .success(key)
    }
}

extension Authenticator {
    /// The key of `Bearer <key>` (scheme in any case), spaces and tabs around and inside it
    /// dropped; nil without the scheme or a key. Works on bytes: it runs for every request.
    static func bearerToken(_ header: String) -> String? {
        var bytes = Array(header.utf8)[...]
        while bytes.first == 0x20 { bytes = bytes.dropFirst() }
        let scheme = Array("bearer".utf8)
        guard bytes.count > scheme.count,
            zip(bytes.prefix(scheme.count), scheme).allSatisfy({ $0 | 0x20 == $1 }),
            bytes[bytes.startIndex + scheme.count] == 0x20
        else { return nil }
        let token = bytes.dropFirst(scheme.count).filter { $0 != 0x20 && $0 != 0x09 }
        return token.isEmpty ? nil : String(decoding: token, as: UTF8.self)
    }
}

/// A problem ready to send, with its Retry-After if any.
struct ProblemResponse: Error {
    var problem: HTTPProblem
    var response: HTTPResponse
    init(_ problem: HTTPProblem, retryAfter: Int? = nil) {
        self.problem = problem
        response = APIProblems.response(problem, retryAfter: retryAfter)
    }
}

extension Role {
    var article: String { self == .ingest || self == .admin ? "an" : "a" }

    var verb: String {
        switch self {
        case .ingest: "send events"
        case .read: "read reports"
        case .admin: "administer"
        }
    }
}

import Foundation
