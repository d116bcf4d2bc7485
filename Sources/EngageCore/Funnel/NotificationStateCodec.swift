/// The stored form of `NotificationState`, so a projector can keep each notification's state
/// between batches and across restarts. Decoding what `encoded()` wrote gives an equal state.
///
/// `encoded()` writes the binary form (`NotificationStateBinaryCodec`); `init(encoded:)` also
/// reads the JSON form below, which engage stored before migration 014, so the states of an
/// existing database stay readable and turn binary as their notifications are next written.
extension NotificationState {
    public struct DecodingError: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    public func encoded() -> [UInt8] {
        encodedBinary()
    }

    public init(encoded bytes: [UInt8]) throws {
        if bytes.first == UInt8(ascii: "{") {
            try self.init(json: bytes)
        } else {
            try self.init(binary: bytes)
        }
    }

    /// The JSON form stored before migration 014.
    func encodedJSON() -> [UInt8] {
        var w = JSONWriter(capacity: 256 + eventIDs.count * 40)
        w.beginObject()
        w.key("ids"); w.beginArray(); for id in eventIDs { w.eventID(id) }; w.endArray()
        if let origin {
            w.key("o"); w.beginObject()
            Self.writeStamp(origin.at, origin.eventID, into: &w)
            w.key("c"); w.string(origin.category)
            w.key("d"); w.string(origin.deviceID)
            w.endObject()
        }
        if let sent {
            w.key("s"); w.beginObject()
            Self.writeStamp(sent.at, sent.eventID, into: &w)
            if let strategy = sent.strategy { w.key("st"); w.string(strategy.rawValue) }
            if let payloadBytes = sent.payloadBytes { w.key("pb"); w.int(payloadBytes) }
            w.key("m"); w.beginArray()
            for media in sent.media {
                w.beginObject()
                w.key("v"); w.string(media.variant)
                w.key("k"); w.string(media.kind.rawValue)
                w.key("f"); w.string(media.format.rawValue)
                w.key("b"); w.int(media.bytes)
                if let width = media.width { w.key("w"); w.int(width) }
                if let height = media.height { w.key("h"); w.int(height) }
                if let duration = media.durationMS { w.key("du"); w.int(duration) }
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
        if let d = delivered {
            w.key("dl"); w.beginObject()
            Self.writeStamp(d.at, d.eventID, into: &w)
            w.key("k"); w.string(d.attachmentKind.rawValue)
            if let format = d.format { w.key("f"); w.string(format.rawValue) }
            if let bytes = d.bytes { w.key("b"); w.int(bytes) }
            if let source = d.source { w.key("src"); w.string(source.rawValue) }
            if let download = d.downloadMS { w.key("dm"); w.int(download) }
            if let variant = d.variant { w.key("v"); w.string(variant) }
            w.key("out"); w.string(d.outcome.rawValue)
            w.key("pm"); w.int(d.processingMS)
            w.key("tw"); w.bool(d.timeWillExpire)
            if let network = d.network { w.key("n"); w.string(network.rawValue) }
            if let strategy = d.strategy { w.key("st"); w.string(strategy.rawValue) }
            w.endObject()
        }
        if let displayed {
            w.key("ds"); w.beginObject()
            Self.writeStamp(displayed.at, displayed.eventID, into: &w)
            w.key("p"); w.string(displayed.presentation.rawValue)
            w.key("k"); w.string(displayed.attachmentKind.rawValue)
            w.endObject()
        }
        if let tagged {
            w.key("x"); w.beginObject()
            Self.writeStamp(tagged.at, tagged.eventID, into: &w)
            w.key("e"); w.string(tagged.tag.id)
            w.key("a"); w.string(tagged.tag.arm)
            if let probability = tagged.tag.probability { w.key("pr"); w.double(probability) }
            w.endObject()
        }
        for (key, value) in [("ex", expandedAt), ("ca", customActionAt), ("op", openedAt), ("dm", dismissedAt), ("rp", repliedAt)] {
            if let value { w.key(key); w.int(Int(value.microsecondsSinceEpoch)) }
        }
        if !customActionIDs.isEmpty {
            w.key("cids"); w.beginArray(); for id in customActionIDs { w.string(id) }; w.endArray()
        }
        w.endObject()
        return w.bytes
    }

    init(json bytes: [UInt8]) throws {
        let json: JSON
        do { json = try JSON.parse(bytes, maxDepth: 8) } catch { throw DecodingError(description: "state is not JSON: \(error.reason)") }
        let reader = StateReader(json: json)
        self.init()
        let root = json.root
        eventIDs = try reader.array(root, "ids").map { try reader.eventID($0) }
        if let o = json.member(root, "o") {
            origin = Origin(at: try reader.at(o), eventID: try reader.stampID(o),
                            category: try reader.string(o, "c"), deviceID: try reader.string(o, "d"))
        }
        if let s = json.member(root, "s") {
            let media = try reader.array(s, "m").map { m in
                MediaVariant(variant: try reader.string(m, "v"), kind: try reader.value(m, "k"),
                             format: try reader.value(m, "f"), bytes: try reader.int(m, "b"),
                             width: reader.optionalInt(m, "w"), height: reader.optionalInt(m, "h"),
                             durationMS: reader.optionalInt(m, "du"))
            }
            sent = SentFacts(at: try reader.at(s), eventID: try reader.stampID(s),
                             strategy: try reader.optionalValue(s, "st"), media: media, payloadBytes: reader.optionalInt(s, "pb"))
        }
        if let d = json.member(root, "dl") {
            delivered = DeliveredFacts(
                at: try reader.at(d), eventID: try reader.stampID(d), attachmentKind: try reader.value(d, "k"),
                format: try reader.optionalValue(d, "f"), bytes: reader.optionalInt(d, "b"),
                source: try reader.optionalValue(d, "src"), downloadMS: reader.optionalInt(d, "dm"),
                variant: reader.optionalString(d, "v"), outcome: try reader.value(d, "out"),
                processingMS: try reader.int(d, "pm"), timeWillExpire: json.member(d, "tw").flatMap(json.bool) ?? false,
                network: try reader.optionalValue(d, "n"), strategy: try reader.optionalValue(d, "st"))
        }
        if let p = json.member(root, "ds") {
            displayed = DisplayedFacts(at: try reader.at(p), eventID: try reader.stampID(p),
                                       presentation: try reader.value(p, "p"), attachmentKind: try reader.value(p, "k"))
        }
        if let x = json.member(root, "x") {
            let probability = json.member(x, "pr").flatMap(json.double)
            tagged = TaggedExperiment(at: try reader.at(x), eventID: try reader.stampID(x),
                                      tag: ExperimentTag(id: try reader.string(x, "e"), arm: try reader.string(x, "a"), probability: probability))
        }
        expandedAt = reader.optionalTime(root, "ex")
        customActionAt = reader.optionalTime(root, "ca")
        openedAt = reader.optionalTime(root, "op")
        dismissedAt = reader.optionalTime(root, "dm")
        repliedAt = reader.optionalTime(root, "rp")
        if json.member(root, "cids") != nil {
            customActionIDs = try reader.array(root, "cids").map { node in
                guard let text = json.string(node) else { throw DecodingError(description: "action id is not a string") }
                return text
            }
        }
    }

    private static func writeStamp(_ at: Timestamp, _ id: EventID, into w: inout JSONWriter) {
        w.key("at"); w.int(Int(at.microsecondsSinceEpoch))
        w.key("id"); w.eventID(id)
    }
}

/// Typed reads of the encoded state, failing with a `DecodingError` naming the key.
private struct StateReader {
    let json: JSON
    typealias Failure = NotificationState.DecodingError

    func node(_ object: JSON.Node, _ key: String) throws(Failure) -> JSON.Node {
        for (name, value) in json.members(object) where json.string(name) == key { return value }
        throw Failure(description: "state lacks \(key)")
    }

    func optionalNode(_ object: JSON.Node, _ key: String) -> JSON.Node? {
        for (name, value) in json.members(object) where json.string(name) == key { return json.isNull(value) ? nil : value }
        return nil
    }

    func array(_ object: JSON.Node, _ key: String) throws(Failure) -> [JSON.Node] {
        Array(json.elements(try node(object, key)))
    }

    func string(_ object: JSON.Node, _ key: String) throws(Failure) -> String {
        guard let text = json.string(try node(object, key)) else { throw Failure(description: "\(key) is not a string") }
        return text
    }

    func optionalString(_ object: JSON.Node, _ key: String) -> String? {
        optionalNode(object, key).flatMap { json.string($0) }
    }

    func int(_ object: JSON.Node, _ key: String) throws(Failure) -> Int {
        guard let value = json.int64(try node(object, key)) else { throw Failure(description: "\(key) is not an integer") }
        return Int(value)
    }

    func optionalInt(_ object: JSON.Node, _ key: String) -> Int? {
        optionalNode(object, key).flatMap { json.int64($0) }.map(Int.init)
    }

    func optionalTime(_ object: JSON.Node, _ key: String) -> Timestamp? {
        optionalNode(object, key).flatMap { json.int64($0) }.map(Timestamp.init(microsecondsSinceEpoch:))
    }

    func at(_ object: JSON.Node) throws(Failure) -> Timestamp {
        Timestamp(microsecondsSinceEpoch: Int64(try int(object, "at")))
    }

    func stampID(_ object: JSON.Node) throws(Failure) -> EventID {
        try eventID(try node(object, "id"))
    }

    func eventID(_ node: JSON.Node) throws(Failure) -> EventID {
        guard let bytes = json.stringBytes(node), let id = EventID.parse(bytes, bytes.indices) else { throw Failure(description: "bad event id") }
        return id
    }

    func value<T: RawRepresentable>(_ object: JSON.Node, _ key: String) throws(Failure) -> T where T.RawValue == String {
        guard let value = T(rawValue: try string(object, key)) else { throw Failure(description: "\(key) has an unknown value") }
        return value
    }

    func optionalValue<T: RawRepresentable>(_ object: JSON.Node, _ key: String) throws(Failure) -> T? where T.RawValue == String {
        guard let text = optionalString(object, key) else { return nil }
        guard let value = T(rawValue: text) else { throw Failure(description: "\(key) has an unknown value") }
        return value
    }
}
