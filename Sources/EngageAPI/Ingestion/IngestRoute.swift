import EngageCore
import EventStore
import HTTPServer
import Postgres
import Runtime

/// `POST /v1/events`: validates each event on its own, stores the valid ones durably through
/// group commit, and reports what was accepted, what was already there and what was rejected.
public struct IngestRoute: Sendable {
    public struct Configuration: Sendable {
        public var limits = IngestLimits()
        /// Largest body after gzip decompression.
        public var maxDecompressedBytes = 1 << 20
        /// When set, events are stored with the keyed hash of their device id, never the id itself.
        public var deviceIDHasher: DeviceIDHasher?

        public init(limits: IngestLimits = IngestLimits(), maxDecompressedBytes: Int = 1 << 20,
                    deviceIDHasher: DeviceIDHasher? = nil) {
            self.limits = limits
            self.maxDecompressedBytes = maxDecompressedBytes
            self.deviceIDHasher = deviceIDHasher
        }
    }

    let authenticator: Authenticator
    /// The group-commit queue (EventStore's `IngestQueue`) in the server.
    let appender: any BatchAppending
    let configuration: Configuration
    let metrics: IngestMetrics
    /// `occurred_at` is checked against its wall clock.
    let time: any TimeSource

    public init(authenticator: Authenticator, appender: any BatchAppending, configuration: Configuration, metrics: IngestMetrics,
                time: any TimeSource = SystemTime()) {
        self.authenticator = authenticator
        self.appender = appender
        self.configuration = configuration
        self.metrics = metrics
        self.time = time
    }

    /// Uncompressed bodies up to this size (about 25 events) are handled on the HTTP daemon thread
    /// that read them when the key is in the key cache: decoding them takes microseconds, less than handing
    /// them to a task. Larger ones are decoded in tasks, on all cores, without holding up the
    /// daemon thread's other connections (libmicrohttpd does not spread connections evenly over
    /// its threads).
    public static let inlineBodyLimit = 8 * 1024

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let key: APIKey
        switch await authenticator.authorize(request, as: .ingest) {
        case .success(let found): key = found
        case .failure(let problem): return problem.response
        }
        switch prepare(request, key: key) {
        case .answered(let response):
            return response
        case .store(let batch, let pending):
            do {
                return answer(try await appender.submit(batch), pending)
            } catch {
                return Self.refusal(error)
            }
        }
    }

    /// The inline way (see `HTTPResponder.respondInline`): takes small requests whose key is
    /// cached, and answers each once its events are durable, from the committer.
    public func handleInline(_ request: HTTPRequest, reply: HTTPReply) -> Bool {
        // A compressed body's size says nothing of what it inflates to (up to the 1 MiB limit):
        // those go to a task too.
        guard request.body.count <= Self.inlineBodyLimit,
            Self.contentEncoding(request.headers).map({ ["", "identity"].contains(Self.trimmedLowercase($0)) }) ?? true,
            let authorized = authenticator.authorizeWithoutWaiting(request, as: .ingest)
        else { return false }
        let key: APIKey
        switch authorized {
        case .success(let found): key = found
        case .failure(let problem):
            reply.send(problem.response)
            return true
        }
        switch prepare(request, key: key) {
        case .answered(let response):
            reply.send(response)
        case .store(let batch, let pending):
            appender.submit(batch) { [self] outcome in
                switch outcome {
                case .success(let result): reply.send(answer(result, pending))
                case .failure(let error): reply.send(Self.refusal(error))
                }
            }
        }
        return true
    }

    /// A refusal known from the head (see `HTTPResponder.refusalBeforeBody`): a missing, malformed
    /// or cached-bad key, a key over its rate (no token taken), a full queue.
    public func refusalBeforeBody(_ request: HTTPRequest) -> HTTPResponse? {
        if case .failure(let problem) = authenticator.authorizeWithoutWaiting(request, as: .ingest, takingToken: false) {
            return problem.response
        }
        return appender.isFull ? Self.refusal(IngestQueue.Refusal.full) : nil
    }

    /// What a request's answer needs besides the append result.
    struct Pending: Sendable {
        var rejected: [Rejection]
        /// Events repeating an earlier one's id in the request: each answered as that one is.
        var repeats: [RepeatedEvent]
        /// The request index of each item of the batch.
        var indices: [Int]
    }

    enum Preparation {
        case answered(HTTPResponse)
        case store(PreparedBatch, Pending)
    }

    /// Decodes and validates; either the answer (nothing valid, or a whole-request problem) or
    /// the batch to store.
    private func prepare(_ request: HTTPRequest, key: APIKey) -> Preparation {
        var decoded: DecodedBatch
        switch decode(request) {
        case .success(let batch): decoded = batch
        case .failure(let problem): return .answered(problem.response)
        }
        if let hasher = configuration.deviceIDHasher {
            for index in decoded.events.indices {
                decoded.events[index].deviceID = hasher.hash(decoded.events[index].deviceID)
            }
        }
        metrics.requestEvents.observe(Double(decoded.events.count + decoded.rejected.count + decoded.duplicatesInRequest))
        metrics.countRejections(decoded.rejected)
        if decoded.events.isEmpty {
            return .answered(APIProblems.response(APIProblems.noValidEvents(decoded.rejected)))
        }
        let batch = PreparedBatch(decoded.events.map { AppendItem(appID: key.appID, event: $0) })
        return .store(batch, Pending(rejected: decoded.rejected, repeats: decoded.repeats, indices: decoded.indices))
    }

    private func answer(_ result: AppendResult, _ pending: Pending) -> HTTPResponse {
        // Valid, but its id is another app's event's: not stored, and not this app's duplicate;
        // nor is a repeat of it in the request.
        let ofAnotherApp = result.itemsOfAnotherAppsID
        let repeatsTaken = ofAnotherApp.isEmpty ? [] : pending.repeats.filter { result.outcomes[$0.event] == .idOfAnotherApp }
        let taken = (ofAnotherApp.map { pending.indices[$0] } + repeatsTaken.map(\.index)).map { index in
            Rejection(index: index, field: "event_id", problem: Self.idOfAnotherAppProblem)
        }
        // Valid, but PostgreSQL refused its row's values (the rest of the request is stored):
        // rejected for good, as sent again it fails the same way; so is a repeat of it.
        let refused = result.refusedItems
        var refusals = refused.map { Rejection(index: pending.indices[$0.item], field: nil, problem: Self.notStorableProblem($0.sqlState)) }
        if !refused.isEmpty {
            for repeated in pending.repeats {
                if case .refused(let sqlState) = result.outcomes[repeated.event] {
                    refusals.append(Rejection(index: repeated.index, field: nil, problem: Self.notStorableProblem(sqlState)))
                }
            }
        }
        let repeatsRefused = refusals.count - refused.count
        let duplicates = result.duplicateCount + pending.repeats.count - repeatsTaken.count - repeatsRefused
        metrics.accepted.increment(by: result.storedCount)
        metrics.duplicates.increment(by: duplicates)
        metrics.countRejections(taken + refusals)
        let late = taken + refusals
        let rejected = late.isEmpty ? pending.rejected : (pending.rejected + late).sorted { $0.index < $1.index }
        return .json(Self.render(accepted: result.storedCount, duplicates: duplicates, rejected: rejected), status: 200)
    }

    /// The problem of an event PostgreSQL refused: the SQLSTATE, never the value (the database's
    /// message may quote it). Its first word is the rejection's reason in the metrics.
    static func notStorableProblem(_ sqlState: String) -> String {
        "\(IngestMetrics.notStorable): PostgreSQL refused this event (SQLSTATE \(sqlState)); "
            + "sent again it fails the same way: report it to the server's operators"
    }

    static let idOfAnotherAppProblem = "is already the id of another app's event; give this event an id of its own"

    private static func refusal(_ error: any Error) -> HTTPResponse {
        switch error {
        case IngestQueue.Refusal.full: APIProblems.response(APIProblems.queueFull, retryAfter: 1)
        case IngestQueue.Refusal.closed: APIProblems.response(APIProblems.shuttingDown, retryAfter: 5)
        case let error as PostgresError where error.kind == .unconfirmedCommit:
            APIProblems.response(APIProblems.unconfirmedCommit(
                roleCannotSeeStandbys: error.sqlState == StandbyConfirmation.insufficientPrivilege), retryAfter: 5)
        case let error as PostgresError where Committer.refusesSomeRow(error):
            APIProblems.response(APIProblems.eventNotStorable(sqlState: error.sqlState ?? ""))
        default: APIProblems.response(APIProblems.eventsNotAcknowledged, retryAfter: 5)
        }
    }

    /// Every Content-Encoding line as one list: in HTTP, repeated lines mean their values joined
    /// by commas (`identity` then `gzip` is `identity, gzip`, which is refused, not taken as the
    /// first line alone). Nil without the header.
    static func contentEncoding(_ headers: HTTPHeaders) -> String? {
        let lines = headers.values(for: "Content-Encoding")
        return lines.isEmpty ? nil : lines.joined(separator: ", ")
    }

    private func decode(_ request: HTTPRequest) -> Result<DecodedBatch, ProblemResponse> {
        let format: BodyFormat
        // A single-valued field: sent twice, which one the client meant is unknown.
        let contentTypes = request.headers.values(for: "Content-Type")
        switch Self.bodyFormat(contentType: contentTypes.count == 1 ? contentTypes[0] : nil) {
        case .some(let found): format = found
        case .none:
            return .failure(ProblemResponse(APIProblems.unsupportedMediaType(
                "send Content-Type: application/json (an array or {\"events\": [...]}) or application/x-ndjson")))
        }
        var body = request.body
        switch Self.contentEncoding(request.headers).map(Self.trimmedLowercase) {
        case nil, "", "identity": break
        case "gzip", "x-gzip":
            do {
                body = try Gzip.inflate(body, limit: configuration.maxDecompressedBytes)
            } catch .tooLarge {
                return .failure(ProblemResponse(APIProblems.tooLarge(
                    "the body decompresses to more than \(configuration.maxDecompressedBytes) bytes")))
            } catch {
                return .failure(ProblemResponse(APIProblems.badRequest("the gzip body is corrupt or truncated", slug: "bad-gzip")))
            }
        case let other?:
            return .failure(ProblemResponse(APIProblems.unsupportedMediaType("Content-Encoding \(other) is not supported; use gzip")))
        }
        if body.count > configuration.maxDecompressedBytes {
            return .failure(ProblemResponse(APIProblems.tooLarge("the body is \(body.count) bytes; the limit is \(configuration.maxDecompressedBytes)")))
        }
        let now = time.wallClock
        guard let measured = ClockCorrection.requested(by: request.headers[ClockCorrection.header], receivedAt: now) else {
            return .failure(ProblemResponse(APIProblems.badRequest(
                "\(ClockCorrection.header) must be an RFC 3339 time with a zone, the device's clock as it sent the request "
                    + "(such as 2026-12-05T22:40:00.120Z)", slug: "bad-sent-at")))
        }
        guard let onSendingClock = ClockCorrection.eventsOnSendingClock(header: request.headers[ClockCorrection.clockHeader]) else {
            return .failure(ProblemResponse(APIProblems.badRequest(
                "\(ClockCorrection.clockHeader) must be recording, sending, or sending; except= and the indices of the events "
                    + "on the recording clock (such as sending; except=0,3)", slug: "bad-occurred-at-clock")))
        }
        let correction = measured.with(eventsOnSendingClock: onSendingClock)
        do {
            let decoded = try decodeBatch(body, format: format, limits: configuration.limits, now: now, correction: correction)
            if correction.movesTimes { metrics.clockCorrected.increment() }
            return .success(decoded)
        } catch {
            switch error {
            case .malformed(let json): return .failure(ProblemResponse(APIProblems.malformed(json)))
            case .wrongShape(let detail): return .failure(ProblemResponse(APIProblems.badRequest(detail, slug: "wrong-shape")))
            case .tooManyEvents(let count, let limit):
                return .failure(ProblemResponse(APIProblems.tooLarge("the request holds \(count) events; the limit is \(limit)")))
            case .empty: return .failure(ProblemResponse(APIProblems.badRequest("the request holds no events", slug: "empty")))
            }
        }
    }

    static func bodyFormat(contentType: String?) -> BodyFormat? {
        guard let contentType else { return nil }
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map { trimmedLowercase(String($0)) } ?? ""
        switch mediaType {
        case "application/json": return .json
        case "application/x-ndjson", "application/ndjson", "application/jsonl": return .ndjson
        default: return mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json") ? .json : nil
        }
    }

    /// Header values are ASCII: trimming spaces and tabs needs no Unicode machinery.
    static func trimmedLowercase(_ value: String) -> String {
        var bytes = Array(value.utf8)
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
        let start = bytes.firstIndex { $0 != 0x20 && $0 != 0x09 } ?? bytes.endIndex
        return String(decoding: bytes[start...].map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    static func render(accepted: Int, duplicates: Int, rejected: [Rejection]) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + rejected.count * 64)
        writer.beginObject()
        writer.key("accepted"); writer.int(accepted)
        writer.key("duplicates"); writer.int(duplicates)
        writer.key("rejected"); writer.raw(Array(APIProblems.renderRejections(rejected).utf8))
        writer.endObject()
        return writer.bytes
    }
}
