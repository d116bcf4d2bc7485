import HTTPServer
import Postgres

/// Finds the key behind `Authorization: Bearer ...` and checks its role.
public struct Authenticator: Sendable {
    public let keys: KeyStore

    public init(keys: KeyStore) {
        self.keys = keys
    }

    /// The request's key if it may act as `role`; otherwise a 401, 403 or 503 problem response.
    func authorize(_ request: HTTPRequest, as role: Role) async -> Result<APIKey, ProblemResponse> {
        guard let header = request.headers["Authorization"] else {
            return .failure(ProblemResponse(APIProblems.unauthorized("send the key as Authorization: Bearer <key>")))
        }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            return .failure(ProblemResponse(APIProblems.unauthorized("the Authorization header must be: Bearer <key>")))
        }
        let key: APIKey?
        do {
            key = try await keys.authenticate(String(parts[1].filter { $0 != " " && $0 != "\t" }))
        } catch {
            return .failure(ProblemResponse(APIProblems.unavailable, retryAfter: 5))
        }
        guard let key else {
            return .failure(ProblemResponse(APIProblems.unauthorized("the key is unknown or revoked")))
        }
        guard key.role.allows(role) else {
            return .failure(ProblemResponse(APIProblems.forbidden("\(key.role.article) \(key.role.rawValue) key cannot \(role.verb)")))
        }
        return .success(key)
    }
}

/// A problem ready to send, with its Retry-After if any.
struct ProblemResponse: Error {
    var response: HTTPResponse
    init(_ problem: HTTPProblem, retryAfter: Int? = nil) {
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
