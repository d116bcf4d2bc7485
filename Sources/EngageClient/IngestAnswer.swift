import Foundation

/// The server's answer to `POST /v1/events`, and what the client makes of an exchange.
struct IngestAnswer: Equatable {
    struct Rejection: Equatable {
        var index: Int
        var field: String?
        var problem: String
    }

    var accepted = 0
    var duplicates = 0
    var rejected: [Rejection] = []

    enum Verdict: Equatable {
        /// 200 with engage's answer: everything not rejected is stored.
        case stored(IngestAnswer)
        /// 429 or 503 with `Retry-After`.
        case retryAfter(TimeInterval)
        /// No answer, a 5xx, 408, a redirect, a 200 that is not engage's answer, a 4xx that is
        /// not engage's problem, or 429/503 without `Retry-After`: back off and retry.
        case transient
        /// A 4xx that is engage's own problem (its `type` under `problemBase`): retrying
        /// unchanged cannot help.
        case refused(status: Int, problemType: String?)
        /// 413, from engage (its problem type) or from anything on the way (nil): fewer events
        /// per request may pass.
        case tooLarge(problemType: String?)
        /// The budget ran out or the task was cancelled mid-request.
        case interrupted
    }

    /// Where the type of every problem engage answers with begins (the server's
    /// `HTTPProblem.problemBase`; `LiveServerTests` sees the server's refusals classified).
    static let problemBase = "https://engage.dev/problems/"

    /// What the exchange of a request of `sent` events means for them.
    static func classify(_ outcome: Transport.Outcome, sent: Int) -> Verdict {
        switch outcome {
        case .timedOut, .cancelled:
            return .interrupted
        case .failed:
            return .transient
        case let .response(status, headers, body):
            switch status {
            case 200:
                // A captive portal or a proxy answers 200 with its own page: only engage's
                // answer means the events are stored.
                guard let answer = parse(body, sent: sent) else { return .transient }
                return .stored(answer)
            case 429, 503:
                if let seconds = RetryPolicy.parseRetryAfter(headers["retry-after"]) { return .retryAfter(seconds) }
                return .transient
            case 408, 500...599:
                return .transient
            case 413:
                return .tooLarge(problemType: engageProblemType(body))
            case 401, 403:
                // The key, not the events: unknown, revoked or of another role. An app update
                // that ships a new key finds them still queued (the queue outlives updates in the
                // app group) and sends them; until then they wait with the backoff, within
                // `maxQueueBytes`.
                return .transient
            case 400...499:
                // A firewall's or captive portal's page, a proxy's 407, a CDN's 421 or 425 say
                // nothing about the events: only engage's own refusal drops them.
                guard let type = engageProblemType(body) else { return .transient }
                return .refused(status: status, problemType: type)
            default:
                return .transient
            }
        }
    }

    /// The problem document's `type` when it is one of engage's.
    private static func engageProblemType(_ body: Data) -> String? {
        let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
        guard let type = object?["type"] as? String, type.hasPrefix(problemBase) else { return nil }
        return type
    }

    /// engage's 200 body for a request of `sent` events: an object with integer `accepted` and
    /// `duplicates` and an array `rejected` of objects with an integer `index`, every count and
    /// index within the request, each index once; nil for anything else (it is not engage's
    /// answer to this request, and a count it made up must not reach the client's sums).
    static func parse(_ body: Data, sent: Int) -> IngestAnswer? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let accepted = count(object["accepted"], below: sent + 1),
              let duplicates = count(object["duplicates"], below: sent + 1),
              let rejected = object["rejected"] as? [Any], accepted + duplicates + rejected.count <= sent
        else { return nil }
        var answer = IngestAnswer(accepted: accepted, duplicates: duplicates)
        var indices = Set<Int>()
        for entry in rejected {
            guard let entry = entry as? [String: Any], let index = count(entry["index"], below: sent),
                  indices.insert(index).inserted
            else { return nil }
            answer.rejected.append(.init(index: index, field: entry["field"] as? String,
                                         problem: entry["problem"] as? String ?? ""))
        }
        return answer
    }

    /// A JSON number that is a whole count under `limit`.
    private static func count(_ value: Any?, below limit: Int) -> Int? {
        guard let number = value as? NSNumber, number.doubleValue >= 0, number.doubleValue < Double(limit),
              number.doubleValue == number.doubleValue.rounded()
        else { return nil }
        return Int(number.doubleValue)
    }
}
