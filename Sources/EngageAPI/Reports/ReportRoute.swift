import EngageCore
import EventStore
import HTTPServer
import Postgres
import Projections
import Runtime

/// `GET /v1/report`: the engagement report as JSON, for read keys, always for the key's own app.
/// Read on the read replica when one is usable; `read_from` says where, and how stale it may be.
public struct ReportRoute: Sendable {
    /// Today, for the report's default range, is the day of its wall clock.
    let route: ReplicaReadRoute

    public init(authenticator: Authenticator, reads: ReadDatabase, time: any TimeSource = SystemTime()) {
        route = ReplicaReadRoute(authenticator: authenticator, reads: reads, time: time, limit: ReadAnswerLimits.reads)
    }

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let now = route.time.wallClock
        return await route.handle(request) { key throws(HTTPProblem) in
            try Self.query(request, app: key.appID)
        } read: { query, pool in
            try await query.run(on: pool, now: now).renderJSON()
        }
    }

    static func query(_ request: HTTPRequest, app: String) throws(HTTPProblem) -> ReportQuery {
        var query = ReportQuery(appID: app)
        var repeated = RepeatedQueryParameter()
        for item in request.queryItems {
            try repeated.note(item)
            switch item.name {
            case "category":
                // An empty name, or one with a control character, would filter every row out and
                // answer an empty report (a NUL, which PostgreSQL cannot take, a 503 as if the
                // database were gone).
                guard let category = CategoryFilter.normalized(item.value) else {
                    throw APIProblems.badRequest(
                        CategoryFilter.requirement, slug: "bad-query")
                }
                query.category = category
            case "since", "until":
                guard let day = UTCDay(parsing: item.value) else {
                    throw APIProblems.badRequest("\(item.name) must be a date such as 2026-11-29", slug: "bad-query")
                }
                if item.name == "since" { query.from = day } else { query.through = day }
            case "by":
                guard let grouping = ReportGrouping(rawValue: item.value) else {
                    throw APIProblems.badRequest(
                        "by must be one of \(ReportGrouping.allCases.map(\.rawValue).joined(separator: ", "))", slug: "bad-query")
                }
                query.grouping = grouping
            default:
                throw ReplicaReadRoute.unknown(item, use: "category, since, until or by")
            }
        }
        if let from = query.from, let through = query.through, from > through {
            throw APIProblems.badRequest("since \(from) is after until \(through): no day lies between them", slug: "bad-query")
        }
        return query
    }
}

extension UTCDay {
    /// `YYYY-MM-DD`, digits only, years 0001 to 9999: PostgreSQL has no year 0 (its date input
    /// refuses `0000-01-01`, which a read would answer as a database failure).
    public init?(parsing text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
              let year = Int(parts[0]), year >= 1, let month = Int(parts[1]), let day = Int(parts[2]) else { return nil }
        self.init(year: year, month: month, day: day)
    }
}
