import Foundation

extension Event {
    /// An event read back from the log: its stored columns and the `payload` that ingestion
    /// validated before appending it. Equal to `init(eventID:type:...:payloadJSON:)`, which it
    /// falls back on (with the same `EventProblem` for a payload that does not decode), at a
    /// fraction of the CPU: see `TrustedPayloadReader`.
    package init(eventID: EventID, type: EventType, notificationID: String, deviceID: String,
                 category: String, occurredAt: Timestamp, trustedPayloadJSON payload: [UInt8]) throws(EventProblem) {
        guard let (details, experiment, properties) = TrustedPayloadReader.read(type: type, payload) else {
            try self.init(eventID: eventID, type: type, notificationID: notificationID, deviceID: deviceID,
                          category: category, occurredAt: occurredAt, payloadJSON: payload)
            return
        }
        self.init(eventID: eventID, notificationID: notificationID, deviceID: deviceID, category: category,
                  occurredAt: occurredAt, experiment: experiment, details: details, properties: properties)
    }
}

/// The projector's fast path for stored payloads: one pass over the bytes, no tape, and none of
/// the checks ingestion made before the event was appended.
///
/// Every payload in the log was written by `Event.payloadJSON` from an event that passed
/// `decodeWire`, into a `jsonb` column (so PostgreSQL checked it as JSON too: valid UTF-8, no
/// duplicate keys). Decoding it again with every check (UTF-8 validation, duplicate keys, lengths,
/// control characters, the field-per-type table) costs the projector a tenth of its CPU for
/// answers known in advance. This reader skips the checks whose answer cannot change the decoded
/// value and keeps what decides it: the schema's keys for the type, required fields, enumeration
/// values, integers in 0...2^53, the probability's range.
///
/// Anything it does not expect (an unknown key, a missing field, a wrong value, a `null`, which
/// the encoder never writes, an escaped key, truncated JSON, most malformed JSON) makes it give up, and
/// `Event.init(trustedPayloadJSON:)` decodes the payload again with the full decoder, which throws
/// the same `EventProblem` as before. Every byte read is bounds-checked: damaged input gives up,
/// it never traps.
///
/// Not checked here, on the grounds above: strings' lengths and control characters, UTF-8
/// validity (`String(decoding:)` repairs, it does not trap), duplicate keys (the last wins), and
/// the number grammar beyond what reading the value needs, and the grammar of `properties`, which
/// is kept as bytes. So only what `jsonb` renders is guaranteed to decode as the full decoder
/// decodes it: bytes from anywhere else (an import, a restore) must take the full decoder. Text
/// that is not ASCII must already be in Unicode normalization form C, as ingestion stores it, or
/// the reader gives up (see `composed`).
struct TrustedPayloadReader {
    /// The reader met something a payload written by ingestion would not hold.
    struct Unexpected: Error {}

    private let bytes: [UInt8]
    private let end: Int
    private var pos = 0

    private init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.end = bytes.count
    }

    /// The payload's parts, or nil when the payload is not one this reader accepts as is.
    static func read(type: EventType, _ payload: [UInt8])
        -> (details: EventDetails, experiment: ExperimentTag?, properties: [UInt8]?)?
    {
        var reader = TrustedPayloadReader(payload)
        return try? reader.payload(type)
    }

    // MARK: The event object

    private mutating func payload(_ type: EventType) throws(Unexpected)
        -> (details: EventDetails, experiment: ExperimentTag?, properties: [UInt8]?)
    {
        var experiment: ExperimentTag?
        var properties: [UInt8]?
        // The type's own fields; which ones a key may name depends on `type`.
        var media: [MediaVariant]?, strategy: AttachmentStrategy?, payloadBytes: Int?
        var attachment: DeliveredAttachment?, outcome: DeliveryOutcome?, processingMS: Int?
        var timeWillExpire: Bool?, network: NetworkType?
        var presentation: Presentation?, attachmentKind: AttachmentKind?
        var actionID: String?, textInputLength: Int?

        try open(UInt8(ascii: "{"))
        var first = true
        while let key = try nextKey(&first) {
            if equal(key, "experiment") {
                experiment = try experimentTag()
            } else if equal(key, "properties") {
                properties = try rawObject()
            } else {
                switch type {
                case .sent:
                    if equal(key, "media") {
                        media = try mediaList()
                    } else if equal(key, "strategy") {
                        strategy = try enumeration()
                    } else if equal(key, "payload_bytes") {
                        payloadBytes = try integer()
                    } else {
                        throw Unexpected()
                    }
                case .delivered:
                    if equal(key, "attachment") {
                        attachment = try deliveredAttachment()
                    } else if equal(key, "outcome") {
                        outcome = try enumeration()
                    } else if equal(key, "processing_ms") {
                        processingMS = try integer()
                    } else if equal(key, "time_will_expire") {
                        timeWillExpire = try bool()
                    } else if equal(key, "network") {
                        network = try enumeration()
                    } else if equal(key, "strategy") {
                        strategy = try enumeration()
                    } else {
                        throw Unexpected()
                    }
                case .displayed:
                    if equal(key, "presentation") {
                        presentation = try enumeration()
                    } else if equal(key, "attachment_kind") {
                        attachmentKind = try enumeration()
                    } else {
                        throw Unexpected()
                    }
                case .expanded:
                    throw Unexpected()
                case .action:
                    if equal(key, "action_id") {
                        actionID = try text()
                    } else if equal(key, "text_input_length") {
                        textInputLength = try integer()
                    } else {
                        throw Unexpected()
                    }
                }
            }
        }
        skipWhitespace()
        guard pos == end else { throw Unexpected() }

        let details: EventDetails
        switch type {
        case .sent:
            details = .sent(SentDetails(media: try present(media), strategy: strategy, payloadBytes: payloadBytes))
        case .delivered:
            details = .delivered(DeliveredDetails(
                attachment: try present(attachment), outcome: try present(outcome),
                processingMS: try present(processingMS), timeWillExpire: try present(timeWillExpire),
                network: network, strategy: strategy))
        case .displayed:
            details = .displayed(DisplayedDetails(presentation: try present(presentation),
                                                  attachmentKind: try present(attachmentKind)))
        case .expanded:
            details = .expanded
        case .action:
            details = .action(ActionDetails(actionID: try present(actionID), textInputLength: textInputLength))
        }
        return (details, experiment, properties)
    }

    private func present<T>(_ value: T?) throws(Unexpected) -> T {
        guard let value else { throw Unexpected() }
        return value
    }

    // MARK: Nested objects

    private mutating func mediaList() throws(Unexpected) -> [MediaVariant] {
        try open(UInt8(ascii: "["))
        var media: [MediaVariant] = []
        skipWhitespace()
        if try peek() == UInt8(ascii: "]") {
            pos += 1
            return media
        }
        while true {
            media.append(try mediaVariant())
            skipWhitespace()
            let b = try peek()
            pos += 1
            if b == UInt8(ascii: "]") { return media }
            guard b == UInt8(ascii: ",") else { throw Unexpected() }
        }
    }

    private mutating func mediaVariant() throws(Unexpected) -> MediaVariant {
        var variant: String?, kind: AttachmentKind?, format: MediaFormat?, bytes: Int?
        var width: Int?, height: Int?, duration: Int?
        try open(UInt8(ascii: "{"))
        var first = true
        while let key = try nextKey(&first) {
            if equal(key, "variant") {
                variant = try text()
            } else if equal(key, "kind") {
                kind = try enumeration()
            } else if equal(key, "format") {
                format = try enumeration()
            } else if equal(key, "bytes") {
                bytes = try integer()
            } else if equal(key, "width") {
                width = try integer()
            } else if equal(key, "height") {
                height = try integer()
            } else if equal(key, "duration_ms") {
                duration = try integer()
            } else {
                throw Unexpected()
            }
        }
        return MediaVariant(variant: try present(variant), kind: try present(kind), format: try present(format),
                            bytes: try present(bytes), width: width, height: height, durationMS: duration)
    }

    private mutating func deliveredAttachment() throws(Unexpected) -> DeliveredAttachment {
        var kind: AttachmentKind?
        var result = DeliveredAttachment(kind: .noAttachment)
        try open(UInt8(ascii: "{"))
        var first = true
        while let key = try nextKey(&first) {
            if equal(key, "kind") {
                kind = try enumeration()
            } else if equal(key, "format") {
                result.format = try enumeration()
            } else if equal(key, "bytes") {
                result.bytes = try integer()
            } else if equal(key, "source") {
                result.source = try enumeration()
            } else if equal(key, "download_ms") {
                result.downloadMS = try integer()
            } else if equal(key, "variant") {
                result.variant = try text()
            } else if equal(key, "http_status") {
                let status = try integer()
                guard (100...599).contains(status) else { throw Unexpected() }
                result.httpStatus = status
            } else {
                throw Unexpected()
            }
        }
        result.kind = try present(kind)
        return result
    }

    private mutating func experimentTag() throws(Unexpected) -> ExperimentTag {
        var id: String?, arm: String?, probability: Double?
        try open(UInt8(ascii: "{"))
        var first = true
        while let key = try nextKey(&first) {
            if equal(key, "id") {
                id = try text()
            } else if equal(key, "arm") {
                arm = try text()
            } else if equal(key, "probability") {
                let p = try double()
                guard p > 0, p <= 1 else { throw Unexpected() }
                probability = p
            } else {
                throw Unexpected()
            }
        }
        return ExperimentTag(id: try present(id), arm: try present(arm), probability: probability)
    }

    /// The `properties` object's source text, verbatim (as the full decoder keeps it).
    private mutating func rawObject() throws(Unexpected) -> [UInt8] {
        skipWhitespace()
        let start = pos
        guard try peek() == UInt8(ascii: "{") else { throw Unexpected() }
        try skipValue()
        return Array(bytes[start..<pos])
    }

    // MARK: Structure

    private mutating func open(_ bracket: UInt8) throws(Unexpected) {
        skipWhitespace()
        guard try peek() == bracket else { throw Unexpected() }
        pos += 1
    }

    /// Consumes `"key":` of the next member of the open object and returns the key's content, or
    /// consumes the `}` and returns nil. `first` says whether a comma must come first.
    private mutating func nextKey(_ first: inout Bool) throws(Unexpected) -> Range<Int>? {
        skipWhitespace()
        if try peek() == UInt8(ascii: "}") {
            pos += 1
            return nil
        }
        if !first {
            guard try peek() == UInt8(ascii: ",") else { throw Unexpected() }
            pos += 1
            skipWhitespace()
        }
        first = false
        let key = try stringToken()
        // The schema's keys need no escapes; an escaped one is left to the full decoder.
        guard !key.escaped else { throw Unexpected() }
        skipWhitespace()
        guard try peek() == UInt8(ascii: ":") else { throw Unexpected() }
        pos += 1
        return key.content
    }

    private func equal(_ range: Range<Int>, _ text: StaticString) -> Bool {
        JSON.equal(bytes, range, text)
    }

    @inline(__always)
    private func peek() throws(Unexpected) -> UInt8 {
        guard pos < end else { throw Unexpected() }
        return bytes[pos]
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        pos = JSON.skippingWhitespace(bytes, from: pos, end: end)
    }

    private mutating func literal(_ text: StaticString) throws(Unexpected) {
        let ok = text.withUTF8Buffer { expected in
            guard pos + expected.count <= end else { return false }
            for (k, b) in expected.enumerated() where bytes[pos + k] != b { return false }
            return true
        }
        guard ok else { throw Unexpected() }
        pos += text.utf8CodeUnitCount
    }

    /// Skips one value of any kind, containers included (for `properties`).
    private mutating func skipValue() throws(Unexpected) {
        var depth = 0
        repeat {
            skipWhitespace()
            let b = try peek()
            switch b {
            case UInt8(ascii: "\""):
                _ = try stringToken()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                pos += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard depth > 0 else { throw Unexpected() }
                depth -= 1
                pos += 1
            default:
                // Commas, colons, numbers and literals: no structure to follow inside them.
                pos += 1
            }
        } while depth > 0
    }

    // MARK: Scalars

    /// The string at `pos`: its content's range, whether it has escapes (each one checked, so
    /// that `JSON.unescape` reads only within it) and whether it is all ASCII.
    private mutating func stringToken() throws(Unexpected) -> (content: Range<Int>, escaped: Bool, ascii: Bool) {
        guard try peek() == UInt8(ascii: "\"") else { throw Unexpected() }
        pos += 1
        let start = pos
        var escaped = false
        var high: UInt8 = 0
        while true {
            let b = try peek()
            if b == UInt8(ascii: "\"") { break }
            high |= b
            if b == UInt8(ascii: "\\") {
                escaped = true
                try skipEscape()
            } else {
                pos += 1
            }
        }
        let content = start..<pos
        pos += 1
        return (content, escaped, high < 0x80)
    }

    /// Consumes one escape, refusing what `JSON.unescape` would misread (it expects the parser's
    /// checks): unknown letters, short `\u` escapes, `\u0000` and surrogates not in a pair.
    private mutating func skipEscape() throws(Unexpected) {
        pos += 1
        switch try peek() {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
             UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            pos += 1
        case UInt8(ascii: "u"):
            let unit = try hex4(at: pos + 1)
            pos += 5
            if unit == 0 || (unit >= 0xDC00 && unit < 0xE000) { throw Unexpected() }
            if unit >= 0xD800 && unit < 0xDC00 {
                guard pos + 1 < end, bytes[pos] == UInt8(ascii: "\\"), bytes[pos + 1] == UInt8(ascii: "u") else {
                    throw Unexpected()
                }
                let low = try hex4(at: pos + 2)
                guard low >= 0xDC00 && low < 0xE000 else { throw Unexpected() }
                pos += 6
            }
        default:
            throw Unexpected()
        }
    }

    private func hex4(at start: Int) throws(Unexpected) -> UInt16 {
        guard start + 4 <= end else { throw Unexpected() }
        var value: UInt16 = 0
        for k in start..<start + 4 {
            let d = JSON.hexDigit(bytes[k])
            guard d != 0xFF else { throw Unexpected() }
            value = value << 4 | UInt16(d)
        }
        return value
    }

    /// A string value as the full decoder makes it: unescaped, in NFC when not ASCII.
    private mutating func text() throws(Unexpected) -> String {
        skipWhitespace()
        let token = try stringToken()
        if token.escaped {
            let text = String(decoding: JSON.unescape(bytes, token.content), as: UTF8.self)
            return text.utf8.allSatisfy { $0 < 0x80 } ? text : try composed(text)
        }
        let text = String(decoding: bytes[token.content], as: UTF8.self)
        return token.ascii ? text : try composed(text)
    }

    /// Text ingestion stored is in NFC already. A payload stored before ingestion composed its
    /// text may grow when composed (U+0958 takes 3 bytes decomposed, 6 composed) past a length
    /// the full decoder checks after composing: it decides, so this reader gives up.
    private func composed(_ text: String) throws(Unexpected) -> String {
        let composed = text.precomposedStringWithCanonicalMapping
        guard composed.utf8.elementsEqual(text.utf8) else { throw Unexpected() }
        return composed
    }

    private mutating func enumeration<E: RawRepresentable>() throws(Unexpected) -> E where E.RawValue == String {
        skipWhitespace()
        let token = try stringToken()
        let raw = token.escaped
            ? String(decoding: JSON.unescape(bytes, token.content), as: UTF8.self)
            : String(decoding: bytes[token.content], as: UTF8.self)
        guard let value = E(rawValue: raw) else { throw Unexpected() }
        return value
    }

    private mutating func bool() throws(Unexpected) -> Bool {
        skipWhitespace()
        if try peek() == UInt8(ascii: "t") {
            try literal("true")
            return true
        }
        try literal("false")
        return false
    }

    /// An integer written as one, in 0...2^53 (`EventReader.integer`); anything else gives up.
    private mutating func integer() throws(Unexpected) -> Int {
        skipWhitespace()
        let start = pos
        var value = 0
        while pos < end, bytes[pos] &- UInt8(ascii: "0") < 10 {
            // 17 digits cannot overflow Int; more are beyond 2^53 anyway (or leading zeros).
            guard pos - start < 17 else { throw Unexpected() }
            value = value * 10 + Int(bytes[pos] &- UInt8(ascii: "0"))
            pos += 1
        }
        guard pos > start, pos - start == 1 || bytes[start] != UInt8(ascii: "0"),
              value <= Int(EventReader.maxInteger) else { throw Unexpected() }
        // A fraction or an exponent makes it no integer: the full decoder says why.
        if pos < end {
            switch bytes[pos] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): throw Unexpected()
            default: break
            }
        }
        return value
    }

    /// A finite number as `JSON.double` reads it.
    private mutating func double() throws(Unexpected) -> Double {
        skipWhitespace()
        let start = pos
        var integral = true
        while pos < end {
            let b = bytes[pos]
            if b &- UInt8(ascii: "0") < 10 || b == UInt8(ascii: "-") || b == UInt8(ascii: "+") {
                pos += 1
            } else if b == UInt8(ascii: ".") || b | 0x20 == UInt8(ascii: "e") {
                integral = false
                pos += 1
            } else {
                break
            }
        }
        guard pos > start else { throw Unexpected() }
        let text = String(decoding: bytes[start..<pos], as: UTF8.self)
        if integral, let exact = Int64(text), exact.magnitude < (1 << 53) { return Double(exact) }
        guard let value = Double(text), value.isFinite else { throw Unexpected() }
        return value
    }
}
