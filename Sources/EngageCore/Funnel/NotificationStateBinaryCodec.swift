/// The compact binary form of `NotificationState` the projector stores (`notification_states.state`,
/// bytea since migration 014). About a third of the JSON form's size and no text to parse: event
/// ids are 16 raw bytes, a fact's event id is its index among the state's ids, numbers are
/// variable-length integers. Deterministic (equal states encode to equal bytes), so a model kept
/// up incrementally still equals a rebuild row for row.
///
/// Layout: the format byte, the ids (count, then 16 bytes each), a presence mask, then each
/// present part in mask order. Enumerations are written as their raw values, so adding a case
/// never changes what an old row means.
///
/// Decoding accepts only what encoding writes (every state decoded re-encodes to the same bytes):
/// ids in ascending order, no mask bit this version does not know, numbers in their shortest
/// form, valid UTF-8, a fact's id by its index whenever the ids hold it. Anything else is a
/// damaged row and is refused rather than read as some other state.
extension NotificationState {
    /// First byte of the binary form; the JSON form starts with `{`.
    static let binaryFormat: UInt8 = 1

    func encodedBinary() -> [UInt8] {
        var w = StateByteWriter(capacity: 64 + eventIDs.count * 17 + (sent?.media.count ?? 0) * 24)
        w.byte(Self.binaryFormat)
        w.unsigned(UInt64(eventIDs.count))
        for id in eventIDs { w.eventID(id) }
        var mask: UInt64 = 0
        for (bit, present) in [origin != nil, sent != nil, delivered != nil, displayed != nil, tagged != nil,
                               expandedAt != nil, customActionAt != nil, openedAt != nil, dismissedAt != nil,
                               repliedAt != nil, !customActionIDs.isEmpty].enumerated() where present {
            mask |= 1 << UInt64(bit)
        }
        w.unsigned(mask)
        if let origin {
            stamp(origin.at, origin.eventID, &w)
            w.string(origin.category)
            w.string(origin.deviceID)
        }
        if let sent {
            stamp(sent.at, sent.eventID, &w)
            w.optionals([sent.strategy != nil, sent.payloadBytes != nil])
            if let strategy = sent.strategy { w.string(strategy.rawValue) }
            if let payloadBytes = sent.payloadBytes { w.signed(payloadBytes) }
            w.unsigned(UInt64(sent.media.count))
            for media in sent.media {
                w.string(media.variant)
                w.string(media.kind.rawValue)
                w.string(media.format.rawValue)
                w.signed(media.bytes)
                w.optionals([media.width != nil, media.height != nil, media.durationMS != nil])
                for value in [media.width, media.height, media.durationMS] { if let value { w.signed(value) } }
            }
        }
        if let d = delivered {
            stamp(d.at, d.eventID, &w)
            w.string(d.attachmentKind.rawValue)
            w.optionals([d.format != nil, d.bytes != nil, d.source != nil, d.downloadMS != nil, d.variant != nil,
                         d.network != nil, d.strategy != nil, d.timeWillExpire])
            if let format = d.format { w.string(format.rawValue) }
            if let bytes = d.bytes { w.signed(bytes) }
            if let source = d.source { w.string(source.rawValue) }
            if let download = d.downloadMS { w.signed(download) }
            if let variant = d.variant { w.string(variant) }
            if let network = d.network { w.string(network.rawValue) }
            if let strategy = d.strategy { w.string(strategy.rawValue) }
            w.string(d.outcome.rawValue)
            w.signed(d.processingMS)
        }
        if let displayed {
            stamp(displayed.at, displayed.eventID, &w)
            w.string(displayed.presentation.rawValue)
            w.string(displayed.attachmentKind.rawValue)
        }
        if let tagged {
            stamp(tagged.at, tagged.eventID, &w)
            w.string(tagged.tag.id)
            w.string(tagged.tag.arm)
            w.optionals([tagged.tag.probability != nil])
            if let probability = tagged.tag.probability { w.fixed64(probability.bitPattern) }
        }
        for time in [expandedAt, customActionAt, openedAt, dismissedAt, repliedAt] {
            if let time { w.signed(time.microsecondsSinceEpoch) }
        }
        if !customActionIDs.isEmpty {
            w.unsigned(UInt64(customActionIDs.count))
            for id in customActionIDs { w.string(id) }
        }
        return w.bytes
    }

    /// The parts the presence mask can name (origin ... custom action ids).
    static let binaryParts = 11

    /// A fact's time and event: the event as its index among the state's ids plus one, or 0 and
    /// the id itself (a state folded from events always holds its facts' ids).
    private func stamp(_ at: Timestamp, _ id: EventID, _ w: inout StateByteWriter) {
        w.signed(at.microsecondsSinceEpoch)
        if let index = binarySearch(eventIDs, id) {
            w.unsigned(UInt64(index) + 1)
        } else {
            w.unsigned(0)
            w.eventID(id)
        }
    }

    init(binary bytes: [UInt8]) throws(DecodingError) {
        var r = StateByteReader(bytes: bytes)
        guard try r.byte() == Self.binaryFormat else { throw DecodingError(description: "unknown state format") }
        self.init()
        let count = try r.count()
        var ids: [EventID] = []
        ids.reserveCapacity(count)
        for _ in 0..<count {
            let id = try r.eventID()
            guard ids.last.map({ $0 < id }) ?? true else { throw DecodingError(description: "state's event ids are not in order") }
            ids.append(id)
        }
        eventIDs = ids
        let mask = try r.mask(bits: Self.binaryParts)
        func has(_ bit: Int) -> Bool { mask & (1 << UInt64(bit)) != 0 }
        if has(0) {
            let (at, id) = try r.stamp(ids)
            origin = Origin(at: at, eventID: id, category: try r.string(), deviceID: try r.string())
        }
        if has(1) {
            let (at, id) = try r.stamp(ids)
            let present = try r.optionals(2)
            let strategy: AttachmentStrategy? = present[0] ? try r.value() : nil
            let payloadBytes = present[1] ? try r.signed() : nil
            var media: [MediaVariant] = []
            for _ in 0..<(try r.count()) {
                let variant = try r.string()
                let kind: AttachmentKind = try r.value()
                let format: MediaFormat = try r.value()
                let size = try r.signed()
                let sizes = try r.optionals(3)
                media.append(MediaVariant(variant: variant, kind: kind, format: format, bytes: size,
                                          width: sizes[0] ? try r.signed() : nil, height: sizes[1] ? try r.signed() : nil,
                                          durationMS: sizes[2] ? try r.signed() : nil))
            }
            sent = SentFacts(at: at, eventID: id, strategy: strategy, media: media, payloadBytes: payloadBytes)
        }
        if has(2) {
            let (at, id) = try r.stamp(ids)
            let kind: AttachmentKind = try r.value()
            let present = try r.optionals(8)
            let format: MediaFormat? = present[0] ? try r.value() : nil
            let size = present[1] ? try r.signed() : nil
            let source: MediaSource? = present[2] ? try r.value() : nil
            let download = present[3] ? try r.signed() : nil
            let variant = present[4] ? try r.string() : nil
            let network: NetworkType? = present[5] ? try r.value() : nil
            let strategy: AttachmentStrategy? = present[6] ? try r.value() : nil
            delivered = DeliveredFacts(at: at, eventID: id, attachmentKind: kind, format: format, bytes: size, source: source,
                                       downloadMS: download, variant: variant, outcome: try r.value(), processingMS: try r.signed(),
                                       timeWillExpire: present[7], network: network, strategy: strategy)
        }
        if has(3) {
            let (at, id) = try r.stamp(ids)
            displayed = DisplayedFacts(at: at, eventID: id, presentation: try r.value(), attachmentKind: try r.value())
        }
        if has(4) {
            let (at, id) = try r.stamp(ids)
            let experiment = try r.string(), arm = try r.string()
            let probability = try r.optionals(1)[0] ? Double(bitPattern: try r.fixed64()) : nil
            tagged = TaggedExperiment(at: at, eventID: id, tag: ExperimentTag(id: experiment, arm: arm, probability: probability))
        }
        func time(_ bit: Int) throws(DecodingError) -> Timestamp? {
            has(bit) ? Timestamp(microsecondsSinceEpoch: Int64(try r.signed())) : nil
        }
        expandedAt = try time(5)
        customActionAt = try time(6)
        openedAt = try time(7)
        dismissedAt = try time(8)
        repliedAt = try time(9)
        if has(10) {
            var actionIDs: [String] = []
            for _ in 0..<(try r.count()) {
                let id = try r.string()
                guard actionIDs.last.map({ $0 < id }) ?? true else { throw DecodingError(description: "state's action ids are not in order") }
                actionIDs.append(id)
            }
            guard !actionIDs.isEmpty else { throw DecodingError(description: "state holds an empty part") }
            customActionIDs = actionIDs
        }
        guard r.isAtEnd else { throw DecodingError(description: "state has trailing bytes") }
    }
}

private func binarySearch(_ sorted: [EventID], _ id: EventID) -> Int? {
    var low = 0, high = sorted.count
    while low < high {
        let middle = (low + high) / 2
        if sorted[middle] < id { low = middle + 1 } else { high = middle }
    }
    return low < sorted.count && sorted[low] == id ? low : nil
}

private struct StateByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    /// LEB128: seven bits a byte, least significant first.
    mutating func unsigned(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Zigzag, so small negative numbers stay short too.
    mutating func signed<Value: BinaryInteger>(_ value: Value) {
        let value = Int64(value)
        unsigned(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func fixed64(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func eventID(_ id: EventID) {
        fixed64(id.high)
        fixed64(id.low)
    }

    mutating func string(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            unsigned(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// Which of a part's optional values follow, one bit each.
    mutating func optionals(_ present: [Bool]) {
        var mask: UInt64 = 0
        for (bit, isPresent) in present.enumerated() where isPresent { mask |= 1 << UInt64(bit) }
        unsigned(mask)
    }
}

/// The bits `StateByteWriter.optionals` wrote.
private struct PresentValues {
    let mask: UInt64
    subscript(bit: Int) -> Bool { mask & (1 << UInt64(bit)) != 0 }
}

private struct StateByteReader {
    typealias Failure = NotificationState.DecodingError
    let bytes: [UInt8]
    var offset = 0

    var isAtEnd: Bool { offset == bytes.count }

    mutating func byte() throws(Failure) -> UInt8 {
        guard offset < bytes.count else { throw Failure(description: "state ends early") }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// LEB128 in its shortest form: no final zero byte after the first, nothing past 64 bits.
    mutating func unsigned() throws(Failure) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let next = try byte()
            guard shift < 64, shift < 63 || next <= 1 else { throw Failure(description: "state holds an oversized number") }
            value |= UInt64(next & 0x7F) << shift
            if next & 0x80 == 0 {
                guard next != 0 || shift == 0 else { throw Failure(description: "state holds a number in a longer form than written") }
                return value
            }
            shift += 7
        }
    }

    mutating func signed() throws(Failure) -> Int {
        let raw = try unsigned()
        return Int(Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1))))
    }

    /// A count of items that each take at least one byte, so a corrupt count fails fast.
    mutating func count() throws(Failure) -> Int {
        let value = try unsigned()
        guard value <= UInt64(bytes.count - offset) else { throw Failure(description: "state holds an impossible count") }
        return Int(value)
    }

    mutating func fixed64() throws(Failure) -> UInt64 {
        guard bytes.count - offset >= 8 else { throw Failure(description: "state ends early") }
        var value: UInt64 = 0
        for index in offset..<(offset + 8) { value = value << 8 | UInt64(bytes[index]) }
        offset += 8
        return value
    }

    mutating func eventID() throws(Failure) -> EventID {
        EventID(high: try fixed64(), low: try fixed64())
    }

    mutating func string() throws(Failure) -> String {
        let length = try count()
        defer { offset += length }
        guard let text = String(validating: bytes[offset..<(offset + length)], as: UTF8.self) else {
            throw Failure(description: "state holds text that is not UTF-8")
        }
        return text
    }

    mutating func value<Value: RawRepresentable>() throws(Failure) -> Value where Value.RawValue == String {
        let text = try string()
        guard let value = Value(rawValue: text) else { throw Failure(description: "state holds an unknown value \(text)") }
        return value
    }

    /// A mask of `bits` bits (more set is a part this version does not know).
    mutating func mask(bits: Int) throws(Failure) -> UInt64 {
        let mask = try unsigned()
        guard mask >> UInt64(bits) == 0 else { throw Failure(description: "state names parts this version does not know") }
        return mask
    }

    mutating func optionals(_ count: Int) throws(Failure) -> PresentValues {
        PresentValues(mask: try mask(bits: count))
    }

    mutating func stamp(_ ids: [EventID]) throws(Failure) -> (Timestamp, EventID) {
        let at = Timestamp(microsecondsSinceEpoch: Int64(try signed()))
        let index = try unsigned()
        if index == 0 {
            let id = try eventID()
            guard binarySearch(ids, id) == nil else { throw Failure(description: "state names an event by id that it holds") }
            return (at, id)
        }
        guard index <= UInt64(ids.count) else { throw Failure(description: "state names a missing event") }
        return (at, ids[Int(index) - 1])
    }
}
