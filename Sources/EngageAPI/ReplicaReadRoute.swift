import EventStore
import HTTPServer
import Postgres
import Runtime

/// The shape of the routes that answer from the read model or the log (`/v1/report`,
/// `/v1/simulate`): a read key, answered for its own app only; the query parameters checked
/// before anything is read (400, problem+json); one read on the read replica while it is usable,
/// with `read_from` added to the JSON answer; 503 when the database does not answer, or not
/// within `limit` (`ReadAnswerLimits`).
struct ReplicaReadRoute: Sendable {
    let authenticator: Authenticator
    let reads: ReadDatabase
    let time: any TimeSource
    let limit: Duration

    /// `query` turns the key and the request's parameters into what `read` needs, or refuses them;
    /// `read` renders the answer as one JSON object.
    func handle<Query: Sendable>(
        _ request: HTTPRequest, query: (APIKey) throws(HTTPProblem) -> Query,
        read: @escaping @Sendable (Query, ConnectionPool) async throws -> [UInt8]
    ) async -> HTTPResponse {
        let parsed: Query
        switch await authenticator.authorize(request, as: .read) {
        case .success(let key):
            do { parsed = try query(key) } catch { return APIProblems.response(error) }
        case .failure(let problem): return problem.response
        }
        do {
            let reads = self.reads
            guard let answer = try await withTimeLimit(limit, { try await reads.read { pool in try await read(parsed, pool) } }) else {
                return APIProblems.response(APIProblems.unavailable, retryAfter: 5)
            }
            return .json(answer.source.addingMember(to: answer.value), status: 200)
        } catch {
            return APIProblems.response(APIProblems.unavailable, retryAfter: 5)
        }
    }

    /// A query parameter the route does not know.
    static func unknown(_ item: HTTPRequest.QueryItem, use known: String) -> HTTPProblem {
        APIProblems.badRequest("unknown query parameter \(item.name); use \(known)", slug: "bad-query")
    }
}
