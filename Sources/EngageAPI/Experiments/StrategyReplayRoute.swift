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
    let authenticator: Authenticator
    let reads: ReadDatabase
    let time: any TimeSource

    public init(authenticator: Authenticator, reads: ReadDatabase, time: any TimeSource = SystemTime()) {
        self.authenticator = authenticator
        self.reads = reads
        self.time = time
    }

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let key: APIKey
        switch await authenticator.authorize(request, as: .read) {
        case .success(let found): key = found
        case .failure(let problem): return problem.response
        }
        var strategyName: String?
        var categories: [String] = []
        var settings = StrategyReplaySettings()
        let strategy: any AttachmentStrategyModel
        do {
            for item in request.queryItems {
                switch item.name {
                case "strategy": strategyName = item.value
                case "since": settings.countFrom = try StrategyReplayOptions.since(item.value, now: time.wallClock)
                case "category": categories.append(item.value)
                default:
                    return APIProblems.response(APIProblems.badRequest(
                        "unknown query parameter \(item.name); use strategy, since or category", slug: "bad-query"))
                }
            }
            guard let strategyName else {
                return APIProblems.response(APIProblems.badRequest(
                    "strategy is required: one of \(StrategyCatalog.standard.names.joined(separator: ", "))", slug: "bad-query"))
            }
            strategy = try StrategyReplayOptions.strategy(strategyName)
            settings.categories = try StrategyReplayOptions.categories(categories)
        } catch {
            // The command line's option names are the query's parameter names.
            return APIProblems.response(APIProblems.badRequest(
                "invalid value '\(error.value)' for parameter '\(error.option)': expected \(error.expected)", slug: "bad-query"))
        }
        do {
            let replay = StrategyReplay(strategy: strategy, settings: settings)
            let outcome = try await reads.read { pool in try await StrategyReplayReader(pool: pool).run(app: key.appID, replay: replay) }
            return .json(outcome.source.addingMember(to: outcome.value.result.renderJSON()))
        } catch {
            return APIProblems.response(APIProblems.unavailable, retryAfter: 5)
        }
    }
}
