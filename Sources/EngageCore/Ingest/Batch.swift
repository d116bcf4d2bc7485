/// How an ingestion request body is framed.
public enum BodyFormat: Sendable, Equatable {
    /// A JSON array of event objects, or `{"events": [...]}` with no other key.
    case json
    /// One event object per line; blank lines are skipped; `\r\n` line ends are accepted.
    case ndjson
}

/// One event the request carried but the service refused.
public struct Rejection: Sendable, Equatable, Hashable, Codable {
    /// Position of the event in the request: the array index, or for NDJSON the number of
    /// non-blank lines before it.
    public var index: Int
    /// Wire path of the offending field, nil for the event as a whole.
    public var field: String?
    public var problem: String

    public init(index: Int, field: String?, problem: String) {
        self.index = index
        self.field = field
        self.problem = problem
    }
}

/// The outcome of decoding one request: the valid events and a rejection for each invalid one.
public struct DecodedBatch: Sendable, Equatable {
    /// Accepted events in request order, each `event_id` once.
    public var events: [Event]
    /// The request index of each accepted event (parallel to `events`).
    public var indices: [Int]
    public var rejected: [Rejection]
    /// Valid events dropped because an earlier event of the request had the same `event_id`:
    /// each with its request index and the accepted event (index into `events`) it repeats,
    /// whose fate it shares (a duplicate when that one is stored, rejected when it is).
    public var repeats: [RepeatedEvent]

    /// How many valid events repeat an earlier one's `event_id`: derived, so that it cannot
    /// disagree with `repeats`.
    public var duplicatesInRequest: Int { repeats.count }

    public init(events: [Event] = [], indices: [Int] = [], rejected: [Rejection] = [], repeats: [RepeatedEvent] = []) {
        self.events = events
        self.indices = indices
        self.rejected = rejected
        self.repeats = repeats
    }
}

/// A valid event whose `event_id` an earlier event of the same request has.
public struct RepeatedEvent: Sendable, Equatable {
    /// Its index in the request.
    public var index: Int
    /// The accepted event it repeats, as an index into `DecodedBatch.events`.
    public var event: Int

    public init(index: Int, event: Int) {
        self.index = index
        self.event = event
    }
}

/// Why a whole request was refused (individual bad events are `Rejection`s instead).
public enum BatchError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The body (JSON format) is not valid JSON.
    case malformed(JSONError)
    /// Valid JSON, but not an array of events nor `{"events": [...]}`.
    case wrongShape(String)
    case tooManyEvents(count: Int, limit: Int)
    /// No event at all.
    case empty

    public var description: String {
        switch self {
        case .malformed(let error): "the body is not valid JSON: \(error.reason) at byte \(error.offset)"
        case .wrongShape(let why): why
        case .tooManyEvents(let count, let limit): "the request has \(count) events; the limit is \(limit)"
        case .empty: "the request has no events"
        }
    }
}

/// Decodes and validates an ingestion request body.
///
/// Whole-request failures throw: malformed JSON (JSON format only; in NDJSON a malformed line
/// rejects just that line), a wrong shape, no events, or more than `limits.maxEvents`. Each event
/// is then validated on its own (`Event.decodeWire`) against `now`, its `occurred_at` moved by
/// `correction` (which also says which events are on the sending clock); the second and later
/// events with an `event_id` already accepted in this request are dropped and counted.
public func decodeBatch(_ body: [UInt8], format: BodyFormat, limits: IngestLimits = IngestLimits(),
                        now: Timestamp, correction: ClockCorrection = .none) throws(BatchError) -> DecodedBatch {
    // A UTF-8 byte order mark some writers put first (RFC 8259 lets a parser ignore it): it made
    // a JSON body malformed, and the first line of NDJSON a rejected event, dropped for good. One
    // only: a second is no writer's.
    let markBytes = body.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
    let body = markBytes > 0 ? Array(body.dropFirst(markBytes)) : body
    switch format {
    case .json:
        do {
            return try decodeJSONBatch(body, limits: limits, now: now, correction: correction)
        } catch .malformed(var error) {
            // The offset a client is told counts the body as it sent it, mark included.
            error.offset += markBytes
            throw .malformed(error)
        }
    case .ndjson: return try decodeNDJSONBatch(body, limits: limits, now: now, correction: correction)
    }
}

/// Collects accepted events, dropping repeated event IDs.
private struct BatchBuilder {
    var batch = DecodedBatch()
    /// Each accepted id and its index in `batch.events`.
    var seen: [EventID: Int] = [:]

    init(capacity: Int) {
        batch.events.reserveCapacity(capacity)
        batch.indices.reserveCapacity(capacity)
        seen.reserveCapacity(capacity)
    }

    mutating func add(_ result: Result<Event, EventProblem>, index: Int) {
        switch result {
        case .success(let event):
            if let first = seen[event.eventID] {
                batch.repeats.append(RepeatedEvent(index: index, event: first))
                return
            }
            seen[event.eventID] = batch.events.count
            batch.events.append(event)
            batch.indices.append(index)
        case .failure(let problem):
            batch.rejected.append(Rejection(index: index, field: problem.field, problem: problem.problem))
        }
    }
}

private func decodeJSONBatch(_ body: [UInt8], limits: IngestLimits, now: Timestamp, correction: ClockCorrection) throws(BatchError) -> DecodedBatch {
    let json: JSON
    do {
        // Two envelope levels ({"events": [...]}) above the events, whose own depth is checked per
        // event, as deep as an event within the size limit can be (two bytes a level), so that
        // such an event is rejected alone (`JSON.parse` goes no deeper than 65,535 levels).
        json = try JSON.parse(body, maxDepth: 2 + max(limits.event.maxDepth, limits.event.maxEventBytes / 2))
    } catch {
        throw .malformed(error)
    }
    let list: JSON.Node
    switch json.kind(json.root) {
    case .array:
        list = json.root
    case .object:
        var events: JSON.Node?
        for (key, value) in json.members(json.root) {
            guard json.string(key, equals: "events") else {
                throw .wrongShape("unknown top-level key \"\(json.string(key) ?? "")\"; expected only \"events\"")
            }
            events = value
        }
        guard let events else { throw .wrongShape("the object has no \"events\" array") }
        guard json.kind(events) == .array else { throw .wrongShape("\"events\" must be an array") }
        list = events
    default:
        throw .wrongShape("the body must be an array of events or an object with an \"events\" array")
    }
    let count = json.count(list)
    guard count > 0 else { throw .empty }
    guard count <= limits.maxEvents else { throw .tooManyEvents(count: count, limit: limits.maxEvents) }

    var builder = BatchBuilder(capacity: count)
    for (index, node) in json.elements(list).enumerated() {
        let result = Result { () throws(EventProblem) in
            try Event.decodeWire(json, node, limits: limits.event, now: now, correction: correction,
                                 onSendingClock: correction.isOnSendingClock(eventAt: index))
        }
        builder.add(result, index: index)
    }
    return builder.batch
}

private func decodeNDJSONBatch(_ body: [UInt8], limits: IngestLimits, now: Timestamp, correction: ClockCorrection) throws(BatchError) -> DecodedBatch {
    var lines: [Range<Int>] = []
    var start = 0
    while start < body.count {
        var end = start
        while end < body.count && body[end] != UInt8(ascii: "\n") { end += 1 }
        var contentEnd = end
        if contentEnd > start && body[contentEnd - 1] == UInt8(ascii: "\r") { contentEnd -= 1 }
        if body[start..<contentEnd].contains(where: { $0 != 0x20 && $0 != 0x09 }) {
            lines.append(start..<contentEnd)
        }
        start = end + 1
    }
    guard !lines.isEmpty else { throw .empty }
    guard lines.count <= limits.maxEvents else { throw .tooManyEvents(count: lines.count, limit: limits.maxEvents) }

    var builder = BatchBuilder(capacity: lines.count)
    for (index, line) in lines.enumerated() {
        let result = Result { () throws(EventProblem) in
            try decodeLine(body, line, limits: limits, now: now, correction: correction, onSendingClock: correction.isOnSendingClock(eventAt: index))
        }
        builder.add(result, index: index)
    }
    return builder.batch
}

private func decodeLine(_ body: [UInt8], _ line: Range<Int>, limits: IngestLimits, now: Timestamp, correction: ClockCorrection,
                        onSendingClock: Bool) throws(EventProblem) -> Event {
    if line.count > limits.event.maxEventBytes {
        throw EventProblem(field: nil, problem: "event is \(line.count) bytes; the limit is \(limits.event.maxEventBytes)")
    }
    let json: JSON
    do {
        // One level of slack: the event's own depth check gives the clearer problem.
        json = try JSON.parse(body, range: line, maxDepth: limits.event.maxDepth + 1)
    } catch {
        throw EventProblem(field: nil, problem: "malformed JSON at byte \(error.offset - line.lowerBound) of the line: \(error.reason)")
    }
    return try Event.decodeWire(json, json.root, limits: limits.event, now: now, correction: correction, onSendingClock: onSendingClock)
}
