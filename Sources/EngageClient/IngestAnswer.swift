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
        /// 200 with engage's answer: everything not rejected is stored. Also engage's 400
        /// `no-valid-events`, whose `rejected` lists every event: none is stored.
        case stored(IngestAnswer)
        /// 429 or 503 with `Retry-After`.
        case retryAfter(TimeInterval)
        /// No answer, a 5xx, 408, a redirect, a 200 that is not engage's answer, a 4xx that is
        /// not engage's problem, a refusal of the key, the address or the body's type (401, 403,
        /// 404, 405, 415), or 429/503 without `Retry-After`: back off and retry.
        case transient
        /// Any other 4xx that is engage's own problem (its `type` under `problemBase`): the
        /// events themselves are refused, and retrying them unchanged cannot help.
        case refused(status: Int, problemType: String?)
        /// engage's 400 for the request's form, not its events (`formProblems`): a body that
        /// does not inflate, or a clock header it does not read. Nothing was stored.
        case formRefused(problemType: String)
        /// 413, from engage (its problem type) or from anything on the way (nil), or 431 (nil:
        /// the headers, never the events, are refused): fewer events per request may pass.
        case tooLarge(problemType: String?)
        /// No answer in the request's time (its timeout or the flush's budget): the events may be
        /// stored; they wait, backed off when the request had time enough for an answer.
        case timedOut
        /// The task was cancelled mid-request.
        case interrupted
    }

    /// Where the type of every problem engage answers with begins (the server's
    /// `HTTPProblem.problemBase`; `LiveServerTests` sees the server's refusals classified).
    static let problemBase = "https://engage.dev/problems/"

    /// engage's 400s that refuse how the request was made rather than any event of it: the
    /// client makes all three well formed, so one means something on the way changed the request
    /// (a proxy that inflated the body and kept its `Content-Encoding`) or a server that reads
    /// them otherwise. Retrying differently, or later, can fix them; dropping the events cannot.
    static let formProblems = Set(["bad-gzip", "bad-sent-at", "bad-occurred-at-clock"].map { problemBase + $0 })
    static let badGzip = problemBase + "bad-gzip"
    static let noValidEvents = problemBase + "no-valid-events"

    /// What the exchange of a request of `sent` events means for them.
    static func classify(_ outcome: Transport.Outcome, sent: Int) -> Verdict {
        switch outcome {
        case .timedOut:
            return .timedOut
        case .cancelled:
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
            case 431:
                // The headers grow with the request (`Engage-Occurred-At-Clock` lists events by
                // index): fewer events may pass. One event's are the configuration's fault, not
                // the event's, so nothing is dropped for it, whoever answered.
                return .tooLarge(problemType: nil)
            case 401, 403, 404, 405, 415:
                // The key, not the events: unknown, revoked or of another role. Nor are they the
                // fault of an endpoint whose path the server (or a proxy before it) does not
                // serve, or of a server older than this client, which does not take its body's
                // type or encoding. An app update or a server's fix finds them still queued (the
                // queue outlives updates in the app group) and sends them; until then they wait
                // with the backoff, within `maxQueueBytes`.
                return .transient
            case 400...499:
                // A firewall's or captive portal's page, a proxy's 407, a CDN's 421 or 425 say
                // nothing about the events: only engage's own refusal drops them.
                guard let type = engageProblemType(body) else { return .transient }
                if status == 400, formProblems.contains(type) { return .formRefused(problemType: type) }
                // Every event rejected: the problem lists them as a 200 would, each with its field
                // and problem, and each is dropped as rejected. A list that does not account for
                // every event sent is not taken: the request is refused whole, as before.
                if status == 400, type == noValidEvents, let answer = parseAllRejected(body, sent: sent) { return .stored(answer) }
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
    /// `duplicates` and an array `rejected` of objects with an integer `index`, every index within
    /// the request and once, the three accounting for every event sent (the server's always do);
    /// nil for anything else (it is not engage's answer to this request: a count it made up must
    /// not reach the client's sums, and an event it leaves out must not be deleted as stored).
    static func parse(_ body: Data, sent: Int) -> IngestAnswer? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return nil }
        return parse(object, sent: sent)
    }

    /// engage's 400 `no-valid-events` for a request of `sent` events, as the answer of a 200
    /// that stored none: nil unless its `rejected` lists every event once.
    static func parseAllRejected(_ body: Data, sent: Int) -> IngestAnswer? {
        guard var object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              object["accepted"] == nil, object["duplicates"] == nil else { return nil }
        object["accepted"] = 0
        object["duplicates"] = 0
        return parse(object, sent: sent)
    }

    private static func parse(_ object: [String: Any], sent: Int) -> IngestAnswer? {
        guard let accepted = FoundationNumber.whole(object["accepted"], atMost: sent),
              let duplicates = FoundationNumber.whole(object["duplicates"], atMost: sent),
              let rejected = object["rejected"] as? [Any], accepted + duplicates + rejected.count == sent
        else { return nil }
        var answer = IngestAnswer(accepted: accepted, duplicates: duplicates)
        var indices = Set<Int>()
        for entry in rejected {
            guard let entry = entry as? [String: Any], let index = FoundationNumber.whole(entry["index"], atMost: sent - 1),
                  indices.insert(index).inserted
            else { return nil }
            answer.rejected.append(.init(index: index, field: entry["field"] as? String,
                                         problem: entry["problem"] as? String ?? ""))
        }
        return answer
    }
}
