import Foundation

/// Decoding and validation of v1 events, from the wire object and from the stored payload.
///
/// Checks run in a fixed order and the first problem wins:
/// 1. size and nesting of the event (wire only);
/// 2. field names unknown to every event type, in document order;
/// 3. `event_id`, then `type` (wire only; stored events get both from their columns);
/// 4. fields that exist but not for this type ("unknown field for displayed events");
/// 5. `notification_id`, `device_id`, `category`, `occurred_at` and its time window (wire only);
/// 6. `experiment`, then the type's own fields in schema order, then `properties`.
/// `null` counts as absent. Integers must be written as integers in 0...2^53.
extension Event {
    /// Decodes and validates one event object given as JSON text, as ingestion does.
    public static func decodeWire(_ bytes: [UInt8], limits: EventLimits = EventLimits(),
                                  now: Timestamp, correction: ClockCorrection = .none) throws(EventProblem) -> Event {
        let json: JSON
        do {
            // One level of slack so that too deep an event gets the same problem as in a batch.
            json = try JSON.parse(bytes, maxDepth: limits.maxDepth + 1)
        } catch {
            throw EventProblem(field: nil, problem: "malformed JSON at byte \(error.offset): \(error.reason)")
        }
        return try decodeWire(json, json.root, limits: limits, now: now, correction: correction)
    }

    /// Decodes and validates the event object at `node` of a parsed request body; `correction`
    /// moves its `occurred_at` (on the sending clock or not) before its window is checked.
    public static func decodeWire(_ json: JSON, _ node: JSON.Node, limits: EventLimits, now: Timestamp,
                                  correction: ClockCorrection = .none, onSendingClock: Bool = false) throws(EventProblem) -> Event {
        try EventReader(json: json, onTheWire: true).wireEvent(node, limits: limits, now: now, correction: correction,
                                                               onSendingClock: onSendingClock)
    }

    /// Rebuilds an event from its stored columns and its `payloadJSON` (any whitespace and key
    /// order, as PostgreSQL renders `jsonb`).
    public init(eventID: EventID, type: EventType, notificationID: String, deviceID: String,
                category: String, occurredAt: Timestamp, payloadJSON: [UInt8]) throws(EventProblem) {
        let (details, experiment, properties) = try EventReader.storedPayload(type: type, payloadJSON)
        self.init(eventID: eventID, notificationID: notificationID, deviceID: deviceID, category: category,
                  occurredAt: occurredAt, experiment: experiment, details: details, properties: properties)
    }
}

extension EventDetails {
    /// The details of a stored event from its type column and `payloadJSON`; `experiment` and
    /// `properties` are validated and ignored.
    public static func decode(type: EventType, payloadJSON: [UInt8]) throws(EventProblem) -> EventDetails {
        try EventReader.storedPayload(type: type, payloadJSON).details
    }
}

// MARK: - Field names

/// Every top-level field of the v1 schema.
enum WireField: Int, CaseIterable {
    case eventID, type, notificationID, deviceID, category, occurredAt, experiment, properties
    case media, strategy, payloadBytes
    case attachment, outcome, processingMS, timeWillExpire, network
    case presentation, attachmentKind
    case actionID, textInputLength

    var name: StaticString {
        switch self {
        case .eventID: "event_id"
        case .type: "type"
        case .notificationID: "notification_id"
        case .deviceID: "device_id"
        case .category: "category"
        case .occurredAt: "occurred_at"
        case .experiment: "experiment"
        case .properties: "properties"
        case .media: "media"
        case .strategy: "strategy"
        case .payloadBytes: "payload_bytes"
        case .attachment: "attachment"
        case .outcome: "outcome"
        case .processingMS: "processing_ms"
        case .timeWillExpire: "time_will_expire"
        case .network: "network"
        case .presentation: "presentation"
        case .attachmentKind: "attachment_kind"
        case .actionID: "action_id"
        case .textInputLength: "text_input_length"
        }
    }

    var text: String { name.description }
    var bit: UInt32 { 1 << UInt32(rawValue) }

    static func mask(_ fields: WireField...) -> UInt32 { fields.reduce(0) { $0 | $1.bit } }

    static let common = mask(.eventID, .type, .notificationID, .deviceID, .category, .occurredAt,
                             .experiment, .properties)
    /// Fields a stored payload may hold besides the type's own.
    static let storedCommon = mask(.experiment, .properties)

    static func own(_ type: EventType) -> UInt32 {
        switch type {
        case .sent: mask(.media, .strategy, .payloadBytes)
        case .delivered: mask(.attachment, .outcome, .processingMS, .timeWillExpire, .network, .strategy)
        case .displayed: mask(.presentation, .attachmentKind)
        case .expanded: 0
        case .action: mask(.actionID, .textInputLength)
        }
    }

    /// The field a key names, matching its unescaped text.
    static func lookup(_ json: JSON, _ key: JSON.Node) -> WireField? {
        for field in allCases where json.string(key, equals: field.name) { return field }
        return nil
    }
}

/// Tape positions of the top-level fields of one event (-1: absent).
struct FieldNodes {
    /// Inline, not an array: one allocation less for every event decoded (32 >= the fields).
    private var nodes = SIMD32<Int32>(repeating: -1)
    private(set) var present: UInt32 = 0

    init() {
        assert(WireField.allCases.count <= nodes.scalarCount, "a WireField beyond the inline positions and the 32-bit mask")
    }

    subscript(field: WireField) -> JSON.Node? {
        get {
            let i = nodes[field.rawValue]
            return i < 0 ? nil : JSON.Node(Int(i))
        }
        set {
            nodes[field.rawValue] = Int32(newValue?.index ?? -1)
            if newValue == nil { present &= ~field.bit } else { present |= field.bit }
        }
    }
}

// MARK: - Reader

struct EventReader {
    let json: JSON
    /// Reading an event as sent (true), or as stored: a stored payload keeps what the version
    /// that stored it accepted, and reads as the projector's trusted path reads it.
    var onTheWire = false

    static let maxInteger: Int64 = 1 << 53

    // MARK: Whole events

    func wireEvent(_ node: JSON.Node, limits: EventLimits, now: Timestamp, correction: ClockCorrection,
                   onSendingClock: Bool) throws(EventProblem) -> Event {
        guard json.kind(node) == .object else {
            throw EventProblem(field: nil, problem: "must be a JSON object")
        }
        let size = json.byteRange(node).count
        if size > limits.maxEventBytes {
            throw EventProblem(field: nil, problem: "event is \(size) bytes; the limit is \(limits.maxEventBytes)")
        }
        if json.nestingLevels(node) > limits.maxDepth {
            throw EventProblem(field: nil, problem: "nesting deeper than \(limits.maxDepth) levels")
        }
        let fields = try collectFields(node)
        guard let idNode = fields[.eventID] else { throw .required("event_id") }
        let eventID = try eventID(idNode)
        guard let typeNode = fields[.type] else { throw .required("type") }
        let type = try enumeration(typeNode, EventType.self, "type")
        try checkAllowed(node, fields, WireField.common | WireField.own(type), type)

        let notificationID = try text(fields[.notificationID], "notification_id", maxBytes: 200)
        let deviceID = try text(fields[.deviceID], "device_id", maxBytes: 200)
        let category = try text(fields[.category], "category", maxBytes: 100)
        guard let occurredNode = fields[.occurredAt], !json.isNull(occurredNode) else {
            throw .required("occurred_at")
        }
        let recorded = try timestamp(occurredNode, "occurred_at")
        let occurredAt = correction.applied(to: recorded, now: now, onSendingClock: onSendingClock)
        try checkWindow(occurredAt, limits: limits, now: now, explanation: correction.explanation(recorded: recorded, moved: occurredAt))

        let (details, experiment, properties) = try body(fields, type)
        // Checked on the wire only: a stored payload holds what PostgreSQL accepted.
        if let node = fields[.properties], !json.numbersFitDouble(within: node) {
            throw EventProblem(field: "properties", problem: "must hold only numbers a 64-bit float can hold (0, or 5e-324 to 1.7e308 in magnitude), with at most 16383 decimal places")
        }
        return Event(eventID: eventID, notificationID: notificationID, deviceID: deviceID, category: category,
                     occurredAt: occurredAt, experiment: experiment, details: details, properties: properties)
    }

    static func storedPayload(type: EventType, _ payload: [UInt8]) throws(EventProblem)
        -> (details: EventDetails, experiment: ExperimentTag?, properties: [UInt8]?)
    {
        let json: JSON
        do {
            json = try JSON.parse(payload, maxDepth: 64)
        } catch {
            throw EventProblem(field: nil, problem: "payload is not valid JSON: \(error)")
        }
        let reader = EventReader(json: json)
        guard json.kind(json.root) == .object else {
            throw EventProblem(field: nil, problem: "payload must be a JSON object")
        }
        let fields = try reader.collectFields(json.root)
        try reader.checkAllowed(json.root, fields, WireField.storedCommon | WireField.own(type), type)
        return try reader.body(fields, type)
    }

    /// Maps every key of the event object to its field; rejects names no event type has.
    func collectFields(_ node: JSON.Node) throws(EventProblem) -> FieldNodes {
        var fields = FieldNodes()
        for (key, value) in json.members(node) {
            guard let field = WireField.lookup(json, key) else {
                throw .unknownField(json.string(key) ?? "")
            }
            if !json.isNull(value) { fields[field] = value }
        }
        return fields
    }

    /// Rejects the first field, in document order, that exists but not for `type`.
    func checkAllowed(_ node: JSON.Node, _ fields: FieldNodes, _ allowed: UInt32, _ type: EventType) throws(EventProblem) {
        guard fields.present & ~allowed != 0 else { return }
        for (key, value) in json.members(node) where !json.isNull(value) {
            if let field = WireField.lookup(json, key), field.bit & allowed == 0 {
                throw EventProblem(field: field.text, problem: "unknown field for \(type.rawValue) events")
            }
        }
    }

    /// `explanation` follows the distance in a problem: why the time is not the one sent.
    func checkWindow(_ t: Timestamp, limits: EventLimits, now: Timestamp, explanation: String) throws(EventProblem) {
        let age = now.microsecondsSinceEpoch - t.microsecondsSinceEpoch
        let maxPast = limits.maxPastMicroseconds
        if age > maxPast {
            throw EventProblem(field: "occurred_at", problem: "is \(EventProblem.describe(microseconds: age)) in the past\(explanation); the limit is \(EventProblem.describe(microseconds: maxPast))")
        }
        let maxFuture = limits.maxFutureMicroseconds
        if -age > maxFuture {
            throw EventProblem(field: "occurred_at", problem: "is \(EventProblem.describe(microseconds: -age)) in the future\(explanation); the limit is \(EventProblem.describe(microseconds: maxFuture))")
        }
    }

    /// Experiment, type-specific details and properties: what the stored payload holds.
    func body(_ fields: FieldNodes, _ type: EventType) throws(EventProblem)
        -> (details: EventDetails, experiment: ExperimentTag?, properties: [UInt8]?)
    {
        let experiment = try fields[.experiment].map { (n) throws(EventProblem) in try experimentTag(n) }
        let details: EventDetails
        switch type {
        case .sent: details = .sent(try sent(fields))
        case .delivered: details = .delivered(try delivered(fields))
        case .displayed:
            details = .displayed(DisplayedDetails(
                presentation: try enumeration(required(fields, .presentation), Presentation.self, "presentation"),
                attachmentKind: try enumeration(required(fields, .attachmentKind), AttachmentKind.self, "attachment_kind")))
        case .expanded: details = .expanded
        case .action:
            let actionID = try text(fields[.actionID], "action_id", maxCharacters: 64)
            details = .action(ActionDetails(
                actionID: actionID,
                textInputLength: try optionalInteger(fields[.textInputLength], "text_input_length")))
        }
        var properties: [UInt8]?
        if let node = fields[.properties] {
            guard json.kind(node) == .object else {
                throw EventProblem(field: "properties", problem: "must be an object")
            }
            properties = json.rawBytes(node)
        }
        return (details, experiment, properties)
    }

    func required(_ fields: FieldNodes, _ field: WireField) throws(EventProblem) -> JSON.Node {
        guard let node = fields[field] else { throw .required(field.text) }
        return node
    }

    // MARK: Type-specific details

    func sent(_ fields: FieldNodes) throws(EventProblem) -> SentDetails {
        let list = try required(fields, .media)
        guard json.kind(list) == .array else { throw EventProblem(field: "media", problem: "must be an array") }
        var media: [MediaVariant] = []
        for (i, item) in json.elements(list).enumerated() {
            media.append(try mediaVariant(item, "media[\(i)]"))
        }
        return SentDetails(
            media: media,
            strategy: try optionalEnumeration(fields[.strategy], AttachmentStrategy.self, "strategy"),
            payloadBytes: try optionalInteger(fields[.payloadBytes], "payload_bytes"))
    }

    func mediaVariant(_ node: JSON.Node, _ path: String) throws(EventProblem) -> MediaVariant {
        guard json.kind(node) == .object else { throw EventProblem(field: path, problem: "must be an object") }
        var variant: String?, kind: AttachmentKind?, format: MediaFormat?, bytes: Int?
        var width: Int?, height: Int?, duration: Int?
        for (key, value) in json.members(node) where !json.isNull(value) {
            if json.string(key, equals: "variant") {
                variant = try text(value, path + ".variant", maxBytes: 100)
            } else if json.string(key, equals: "kind") {
                kind = try enumeration(value, AttachmentKind.self, path + ".kind")
            } else if json.string(key, equals: "format") {
                format = try enumeration(value, MediaFormat.self, path + ".format")
            } else if json.string(key, equals: "bytes") {
                bytes = try integer(value, path + ".bytes")
            } else if json.string(key, equals: "width") {
                width = try integer(value, path + ".width")
            } else if json.string(key, equals: "height") {
                height = try integer(value, path + ".height")
            } else if json.string(key, equals: "duration_ms") {
                duration = try integer(value, path + ".duration_ms")
            } else {
                throw .unknownField(path + "." + (json.string(key) ?? ""))
            }
        }
        guard let variant else { throw .required(path + ".variant") }
        guard let kind else { throw .required(path + ".kind") }
        guard let format else { throw .required(path + ".format") }
        guard let bytes else { throw .required(path + ".bytes") }
        return MediaVariant(variant: variant, kind: kind, format: format, bytes: bytes,
                            width: width, height: height, durationMS: duration)
    }

    func delivered(_ fields: FieldNodes) throws(EventProblem) -> DeliveredDetails {
        let attachment = try deliveredAttachment(try required(fields, .attachment))
        let outcome = try enumeration(try required(fields, .outcome), DeliveryOutcome.self, "outcome")
        let processing = try integer(try required(fields, .processingMS), "processing_ms")
        let expireNode = try required(fields, .timeWillExpire)
        guard let expire = json.bool(expireNode) else {
            throw EventProblem(field: "time_will_expire", problem: "must be true or false")
        }
        return DeliveredDetails(
            attachment: attachment, outcome: outcome, processingMS: processing, timeWillExpire: expire,
            network: try optionalEnumeration(fields[.network], NetworkType.self, "network"),
            strategy: try optionalEnumeration(fields[.strategy], AttachmentStrategy.self, "strategy"))
    }

    func deliveredAttachment(_ node: JSON.Node) throws(EventProblem) -> DeliveredAttachment {
        guard json.kind(node) == .object else { throw EventProblem(field: "attachment", problem: "must be an object") }
        var kind: AttachmentKind?
        var result = DeliveredAttachment(kind: .noAttachment)
        for (key, value) in json.members(node) where !json.isNull(value) {
            if json.string(key, equals: "kind") {
                kind = try enumeration(value, AttachmentKind.self, "attachment.kind")
            } else if json.string(key, equals: "format") {
                result.format = try enumeration(value, MediaFormat.self, "attachment.format")
            } else if json.string(key, equals: "bytes") {
                result.bytes = try integer(value, "attachment.bytes")
            } else if json.string(key, equals: "source") {
                result.source = try enumeration(value, MediaSource.self, "attachment.source")
            } else if json.string(key, equals: "download_ms") {
                result.downloadMS = try integer(value, "attachment.download_ms")
            } else if json.string(key, equals: "variant") {
                result.variant = try text(value, "attachment.variant", maxBytes: 100)
            } else if json.string(key, equals: "http_status") {
                let status = try integer(value, "attachment.http_status")
                guard (100...599).contains(status) else {
                    throw EventProblem(field: "attachment.http_status", problem: "must be an HTTP status, 100 to 599")
                }
                result.httpStatus = status
            } else {
                throw .unknownField("attachment." + (json.string(key) ?? ""))
            }
        }
        guard let kind else { throw .required("attachment.kind") }
        result.kind = kind
        return result
    }

    func experimentTag(_ node: JSON.Node) throws(EventProblem) -> ExperimentTag {
        guard json.kind(node) == .object else { throw EventProblem(field: "experiment", problem: "must be an object") }
        var id: String?, arm: String?, probability: Double?
        for (key, value) in json.members(node) where !json.isNull(value) {
            if json.string(key, equals: "id") {
                id = try text(value, "experiment.id", maxBytes: 100)
            } else if json.string(key, equals: "arm") {
                arm = try text(value, "experiment.arm", maxBytes: 100)
            } else if json.string(key, equals: "probability") {
                guard let p = json.double(value), p > 0, p <= 1 else {
                    throw EventProblem(field: "experiment.probability",
                                       problem: "must be a number greater than 0 and at most 1")
                }
                probability = p
            } else {
                throw .unknownField("experiment." + (json.string(key) ?? ""))
            }
        }
        guard let id else { throw .required("experiment.id") }
        guard let arm else { throw .required("experiment.arm") }
        return ExperimentTag(id: id, arm: arm, probability: probability)
    }

    // MARK: Scalars

    func eventID(_ node: JSON.Node) throws(EventProblem) -> EventID {
        let bad = EventProblem(field: "event_id", problem: "must be a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e")
        guard json.kind(node) == .string else { throw bad }
        let t = json.token(node)
        let id = json.hasEscapes(node)
            ? json.stringBytes(node).flatMap { EventID.parse($0, $0.indices) }
            : EventID.parse(json.bytes, json.contentRange(t))
        guard let id else { throw bad }
        return id
    }

    func timestamp(_ node: JSON.Node, _ field: String) throws(EventProblem) -> Timestamp {
        let bad = EventProblem(field: field, problem: EventProblem.timestampProblem)
        guard json.kind(node) == .string else { throw bad }
        let value = json.hasEscapes(node)
            ? json.stringBytes(node).flatMap { Timestamp.parse(rfc3339: $0, $0.indices) }
            : Timestamp.parse(rfc3339: json.bytes, json.contentRange(json.token(node)))
        guard let value else { throw bad }
        return value
    }

    /// A required string of 1...maxCharacters Unicode scalars without control characters.
    func text(_ node: JSON.Node?, _ field: @autoclosure () -> String, maxCharacters: Int) throws(EventProblem) -> String {
        let length = EventProblem(field: field(), problem: "must be 1 to \(maxCharacters) characters long")
        let (content, range) = try stringContent(node, field())
        // A scalar takes at most four bytes: more bytes are too many characters before decoding.
        guard range.count >= 1 && range.count <= 4 * maxCharacters else { throw length }
        let value = try controlFreeText(content, range, field())
        guard value.unicodeScalars.count <= maxCharacters else { throw length }
        return value
    }

    /// A required string of 1...maxBytes UTF-8 bytes (in NFC) without control characters.
    func text(_ node: JSON.Node?, _ field: @autoclosure () -> String, maxBytes: Int) throws(EventProblem) -> String {
        let (content, range) = try stringContent(node, field())
        let length = EventProblem(field: field(), problem: "must be 1 to \(maxBytes) bytes long")
        guard range.count >= 1 && range.count <= maxBytes else { throw length }
        let value = try controlFreeText(content, range, field())
        // A few characters grow when composed (U+0958 becomes two scalars).
        guard value.utf8.count <= maxBytes else { throw length }
        return value
    }

    /// The UTF-8 bytes of a required string node: unescaped, or in place in the document.
    private func stringContent(_ node: JSON.Node?, _ field: @autoclosure () -> String) throws(EventProblem) -> (content: [UInt8], range: Range<Int>) {
        guard let node else { throw .required(field()) }
        guard json.kind(node) == .string else { throw EventProblem(field: field(), problem: "must be a string") }
        if json.hasEscapes(node) {
            let content = json.stringBytes(node) ?? []
            return (content, content.indices)
        }
        return (json.bytes, json.contentRange(json.token(node)))
    }

    /// The text of `content[range]` in Unicode normalization form C, refused if it holds a
    /// control character.
    ///
    /// Identifiers are compared as bytes by PostgreSQL and as canonically equivalent text by
    /// Swift's `String`: "é" written precomposed and as "e" with a combining accent would be one
    /// key in the projector's memory and two rows in the read model. Composing every identifier
    /// as it is decoded (from the wire and from the stored payload) makes the two agree.
    private func controlFreeText(_ content: [UInt8], _ range: Range<Int>, _ field: @autoclosure () -> String) throws(EventProblem) -> String {
        var i = range.lowerBound
        var ascii = true
        while i < range.upperBound {
            let b = content[i]
            // C0 controls and DEL; C1 controls are U+0080...U+009F, encoded C2 80...C2 9F; the
            // bidirectional embeddings and overrides U+202A...U+202E (E2 80 AA...AE) and isolates
            // U+2066...U+2069 (E2 81 A6...A9), which would turn the text after a category's name
            // around wherever it is shown (a report's headline: its figures read backwards).
            // The latter on the wire only: events stored before they were refused stay readable.
            if b < 0x20 || b == 0x7F || (b == 0xC2 && content[i + 1] < 0xA0)
                || (onTheWire && b == 0xE2 && ((content[i + 1] == 0x80 && (0xAA...0xAE).contains(content[i + 2]))
                    || (content[i + 1] == 0x81 && (0xA6...0xA9).contains(content[i + 2])))) {
                throw EventProblem(field: field(), problem: "must not contain control characters")
            }
            if b >= 0x80 { ascii = false }
            i += 1
        }
        let text = String(decoding: content[range], as: UTF8.self)
        return ascii ? text : text.precomposedStringWithCanonicalMapping
    }

    func integer(_ node: JSON.Node, _ field: @autoclosure () -> String) throws(EventProblem) -> Int {
        guard let value = json.int64(node), value >= 0, value <= EventReader.maxInteger else {
            throw EventProblem(field: field(), problem: "must be an integer from 0 to 9007199254740992")
        }
        return Int(value)
    }

    func optionalInteger(_ node: JSON.Node?, _ field: @autoclosure () -> String) throws(EventProblem) -> Int? {
        guard let node else { return nil }
        return try integer(node, field())
    }

    func enumeration<E: RawRepresentable & CaseIterable>(
        _ node: JSON.Node, _ type: E.Type, _ field: @autoclosure () -> String
    ) throws(EventProblem) -> E where E.RawValue == String {
        guard let text = json.string(node), let value = E(rawValue: text) else {
            throw EventProblem(field: field(), problem: E.mustBeOneOf)
        }
        return value
    }

    func optionalEnumeration<E: RawRepresentable & CaseIterable>(
        _ node: JSON.Node?, _ type: E.Type, _ field: @autoclosure () -> String
    ) throws(EventProblem) -> E? where E.RawValue == String {
        guard let node else { return nil }
        return try enumeration(node, type, field())
    }
}
