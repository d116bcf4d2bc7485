import EngageCore
import EventStore
import Experiments
import HTTPServer
import Postgres
import Runtime

/// `GET /v1/simulate?strategy=NAME[&since=T][&category=C...]`: the offline replay of the key's
/// app's logged deliveries under a strategy (`engage experiment simulate` over HTTP), for read and
/// admin keys. Every estimate in the answer is labelled model-based. Read on the read replica
/// when one is usable; `read_from` says where, and how stale the log read may be.
public struct StrategyReplayRoute: Sendable {
    let route: ReplicaReadRoute

    public init(authenticator: Authenticator, reads: ReadDatabase, time: any TimeSource = SystemTime()) {
        route = ReplicaReadRoute(authenticator: authenticator, reads: reads, time: time, limit: ReadAnswerLimits.replay)
    }

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        await route.handle(request) { key throws(HTTPProblem) in
            (key.appID, try replay(request))
        } read: { query, pool in
            try await StrategyReplayReader(pool: pool).run(app: query.0, replay: query.1).result.renderJSON()
        }
    }

    func replay(_ request: HTTPRequest) throws(HTTPProblem) -> StrategyReplay {
        var strategyName: String?
        var categories: [String] = []
        var settings = StrategyReplaySettings()
        let now = route.time.wallClock
        var repeated = RepeatedQueryParameter()
        for item in request.queryItems {
            // `category` is repeatable: each one a category to count.
            if item.name != "category" { try repeated.note(item) }
            switch item.name {
            case "strategy": strategyName = item.value
            case "since":
                settings.countFrom = try Self.option { () throws(ReplayOptionProblem) in
                    try StrategyReplayOptions.since(item.value, now: now)
                }
            case "category":
                guard let category = CategoryFilter.normalized(item.value) else {
                    throw APIProblems.badRequest(
                        CategoryFilter.requirement, slug: "bad-query")
                }
                categories.append(category)
            default: throw ReplicaReadRoute.unknown(item, use: "strategy, since or category")
            }
        }
        guard let strategyName else {
            throw APIProblems.badRequest(
                "strategy is required: one of \(StrategyCatalog.standard.names.joined(separator: ", "))", slug: "bad-query")
        }
        let strategy = try Self.option { () throws(ReplayOptionProblem) in
            try StrategyReplayOptions.strategy(strategyName)
        }
        settings.categories = try Self.option { () throws(ReplayOptionProblem) in
            try StrategyReplayOptions.categories(categories)
        }
        return StrategyReplay(strategy: strategy, settings: settings)
    }

    /// A value read as `engage experiment simulate` reads it: the command line's option names are
    /// the query's parameter names.
    private static func option<Value>(_ parse: () throws(ReplayOptionProblem) -> Value) throws(HTTPProblem) -> Value {
        do {
            return try parse()
        } catch {
            throw APIProblems.badRequest(
                "invalid value '\(error.value)' for parameter '\(error.option)': expected \(error.expected)", slug: "bad-query")
        }
    }
}
