import Foundation
import JSONText
import Testing
@testable import EngageCore

/// The projector's trusted decoding of stored payloads against the full decoder: the same event
/// for every payload ingestion can store, the same problem (never a trap) for damaged ones.
@Suite struct TrustedPayloadReaderTests {
    /// One event through both stored decoders.
    static func decodeBoth(_ event: Event, _ payload: [UInt8]) -> (full: Result<Event, EventProblem>, trusted: Result<Event, EventProblem>) {
        let full = Result { () throws(EventProblem) in
            try Event(eventID: event.eventID, type: event.type, notificationID: event.notificationID, deviceID: event.deviceID,
                      category: event.category, occurredAt: event.occurredAt, payloadJSON: payload)
        }
        let trusted = Result { () throws(EventProblem) in
            try Event(eventID: event.eventID, type: event.type, notificationID: event.notificationID, deviceID: event.deviceID,
                      category: event.category, occurredAt: event.occurredAt, trustedPayloadJSON: payload)
        }
        return (full, trusted)
    }

    /// Random events that ingestion accepted, each in the three forms a stored payload takes:
    /// the encoder's, PostgreSQL's `jsonb` rendering, and an escaped reordering.
    @Test func givesWhatTheFullDecoderGivesForEveryEventIngestionAccepts() throws {
        var random = StreamRandom(seed: 19)
        var accepted = 0, fastPath = 0
        var types = Set<EventType>()
        for _ in 0..<3000 {
            let candidate = RandomEvent.make(&random)
            // What ingestion would store: the event as `decodeWire` gives it back (NFC and all).
            guard case .success(let event) = Result(catching: { () throws(EventProblem) in
                try Event.decodeWire(candidate.encodeWireJSON(), now: candidate.occurredAt.adding(microseconds: 60_000_000))
            }) else { continue }
            accepted += 1
            types.insert(event.type)
            let compact = event.payloadJSON
            let parsed = try JSON.parse(compact)
            for payload in [compact, Array(JSONBRendering.render(parsed, parsed.root).utf8), Array(reformat(parsed, parsed.root).utf8)] {
                let (full, trusted) = Self.decodeBoth(event, payload)
                #expect(trusted == full, "\(String(decoding: payload, as: UTF8.self))")
                #expect(full.isSuccess, "\(String(decoding: payload, as: UTF8.self))")
                // `String`'s == is canonical equivalence; the read model compares bytes.
                #expect((try? trusted.get().payloadJSON) == (try? full.get().payloadJSON))
            }
            // A payload stored before identifiers were composed at ingestion (not in NFC): both
            // decoders compose it to the same bytes.
            let (full, trusted) = Self.decodeBoth(event, candidate.payloadJSON)
            #expect(full.isSuccess, "\(String(decoding: candidate.payloadJSON, as: UTF8.self))")
            #expect((try? trusted.get().payloadJSON) == (try? full.get().payloadJSON), "\(String(decoding: candidate.payloadJSON, as: UTF8.self))")
            if TrustedPayloadReader.read(type: event.type, Array(JSONBRendering.render(parsed, parsed.root).utf8)) != nil {
                fastPath += 1
            }
        }
        #expect(types == Set(EventType.allCases))
        #expect(accepted > 2000)
        // The fast path itself must carry the jsonb form, or the test compares the full decoder with itself.
        #expect(fastPath == accepted)
    }

    /// Payloads that are not what ingestion stores: the trusted path gives the full decoder's
    /// problem, and never traps.
    @Test(arguments: [
        "", " ", "{", "}", "[]", "null", "\"x\"", "{\"outcome\"", "{\"outcome\":", "{\"outcome\": \"attached\"",
        "{\"attachment\": {\"kind\": \"image\"}, \"outcome\": \"bogus\", \"processing_ms\": 1, \"time_will_expire\": true}",
        "{\"attachment\": {\"kind\": \"image\"}, \"outcome\": \"attached\", \"processing_ms\": -1, \"time_will_expire\": true}",
        "{\"attachment\": {\"kind\": \"image\"}, \"outcome\": \"attached\", \"processing_ms\": 1.5, \"time_will_expire\": true}",
        "{\"attachment\": {\"kind\": \"image\"}, \"outcome\": \"attached\", \"processing_ms\": 99999999999999999999, \"time_will_expire\": true}",
        "{\"attachment\": {\"kind\": \"image\"}, \"outcome\": \"attached\", \"processing_ms\": 1, \"time_will_expire\": 1}",
        "{\"attachment\": {\"kind\": \"image\"}, \"outcome\": \"attached\", \"processing_ms\": 1}",
        "{\"attachment\": {\"kind\": \"image\", \"http_status\": 700}, \"outcome\": \"attached\", \"processing_ms\": 1, \"time_will_expire\": true}",
        "{\"attachment\": {\"kind\": \"image\"}, \"outcome\": \"attached\", \"processing_ms\": 1, \"time_will_expire\": true, \"media\": []}",
        "{\"attachment\": {\"kind\": \"image\"}, \"outcome\": \"attached\", \"processing_ms\": 1, \"time_will_expire\": true, \"bogus\": null}",
        "{\"attachment\": {\"kind\": \"image\"}, \"outcome\": \"attached\", \"processing_ms\": 1, \"time_will_expire\": true, \"properties\": [1]}",
        "{\"attachment\": {\"kind\": \"image\"}, \"outcome\": \"attached\", \"processing_ms\": 1, \"time_will_expire\": true, \"properties\": {\"a\": \"\\u12\"}}",
        "{\"attachment\": {\"kind\": \"image\"}, \"outcome\": \"attached\", \"processing_ms\": 1, \"time_will_expire\": true, \"properties\": {\"a\": \"\\ud800\"}}",
        "{\"attachment\": {\"kind\": \"image\"}, \"outcome\": \"attached\", \"processing_ms\": 1, \"time_will_expire\": true, \"properties\": {\"a\": [1, 2}}",
        "{\"attachment\": {\"kind\": \"image\"}, \"outcome\": \"attached\", \"processing_ms\": 1, \"time_will_expire\": true, \"experiment\": {\"id\": \"x\", \"arm\": \"a\", \"probability\": 1.5}}",
        "{\"attachment\": {\"kind\": \"image\"}, \"outcome\": \"attached\", \"processing_ms\": 1, \"time_will_expire\": true, \"experiment\": {\"id\": \"x\\",
        "{\"attachment\": {\"kind\": \"image\"}, \"outcome\": \"attached\", \"processing_ms\": 1, \"time_will_expire\": true} x",
    ])
    func malformedPayloadIsTheFullDecodersProblem(_ text: String) {
        let event = Fixture.deliveredEvent
        let (full, trusted) = Self.decodeBoth(event, Array(text.utf8))
        #expect(!full.isSuccess)
        #expect(trusted == full)
    }

    /// A payload stored before ingestion composed text to NFC, whose text grows when composed
    /// (U+0958 is excluded from composition: 3 bytes stored, 6 once normalized) past a limit the
    /// full decoder checks after composing: the trusted path must not accept what it refuses.
    @Test func textThatGrowsWhenComposedIsTheFullDecodersCall() {
        let event = Fixture.deliveredEvent
        let grown = String(repeating: "\u{0958}", count: 33)
        let delivered = #"{"attachment": {"kind": "image"}, "outcome": "attached", "processing_ms": 1, "time_will_expire": true, "#
        let payload = Array((delivered + #""experiment": {"id": "\#(grown)", "arm": "a", "probability": 0.5}}"#).utf8)
        #expect(grown.utf8.count <= 100 && grown.precomposedStringWithCanonicalMapping.utf8.count > 100)
        let (full, trusted) = Self.decodeBoth(event, payload)
        #expect(!full.isSuccess, "the full decoder takes the experiment id once composed (198 bytes)")
        #expect(trusted == full)
        #expect(TrustedPayloadReader.read(type: event.type, payload) == nil)
    }

    /// Every truncation and a few thousand random damages of stored payloads: a damaged payload
    /// is an error (the full decoder's) or, where only a skipped check would refuse it, an event;
    /// whenever the full decoder accepts one, both agree.
    @Test func damagedPayloadsAreErrorsNotTraps() throws {
        var random = StreamRandom(seed: 1902)
        var damaged = 0
        for _ in 0..<300 {
            let event = RandomEvent.make(&random)
            guard case .success(let stored) = Result(catching: { () throws(EventProblem) in
                try Event.decodeWire(event.encodeWireJSON(), now: event.occurredAt.adding(microseconds: 60_000_000))
            }) else { continue }
            let parsed = try JSON.parse(stored.payloadJSON)
            let payload = Array(JSONBRendering.render(parsed, parsed.root).utf8)
            var variants = (0..<payload.count).map { Array(payload[..<$0]) }
            for _ in 0..<20 {
                var bytes = payload
                let at = random.below(bytes.count)
                switch random.below(3) {
                case 0: bytes[at] = random.pick(Array("{}[]\",:\\u0 -.e9nt".utf8) + [0x00, 0x80, 0xC3, 0xFF])
                case 1: bytes.remove(at: at)
                default: bytes.insert(random.pick(Array("{}[]\",:\\ 1".utf8)), at: at)
                }
                variants.append(bytes)
            }
            for bytes in variants {
                let (full, trusted) = Self.decodeBoth(stored, bytes)
                damaged += 1
                if full.isSuccess || !trusted.isSuccess {
                    #expect(trusted == full, "\(String(decoding: bytes, as: UTF8.self))")
                }
            }
        }
        #expect(damaged > 10_000)
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}

/// `jsonb`'s text output: `", "` and `": "` separators, keys ordered by length and then bytes,
/// strings escaped as PostgreSQL's `escape_json` does (only `"`, `\` and control characters).
enum JSONBRendering {
    static func render(_ json: JSON, _ node: JSON.Node) -> String {
        switch json.kind(node) {
        case .object:
            let members = json.members(node).map { (key: json.stringBytes($0.key)!, value: $0.value) }
                .sorted { $0.key.count != $1.key.count ? $0.key.count < $1.key.count : $0.key.lexicographicallyPrecedes($1.key) }
            return "{" + members.map { quoted($0.key) + ": " + render(json, $0.value) }.joined(separator: ", ") + "}"
        case .array:
            return "[" + json.elements(node).map { render(json, $0) }.joined(separator: ", ") + "]"
        case .string:
            return quoted(json.stringBytes(node)!)
        default:
            return String(decoding: json.rawBytes(node), as: UTF8.self)
        }
    }

    static func quoted(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = [UInt8(ascii: "\"")]
        for b in bytes {
            switch b {
            case UInt8(ascii: "\""): out += Array(#"\""#.utf8)
            case UInt8(ascii: "\\"): out += Array(#"\\"#.utf8)
            case 0x08: out += Array(#"\b"#.utf8)
            case 0x0C: out += Array(#"\f"#.utf8)
            case 0x0A: out += Array(#"\n"#.utf8)
            case 0x0D: out += Array(#"\r"#.utf8)
            case 0x09: out += Array(#"\t"#.utf8)
            case ..<0x20: out += Array(String(format: "\\u%04x", b).utf8)
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
        return String(decoding: out, as: UTF8.self)
    }
}

/// Events of every type with every optional field present or not, and text drawn from ASCII,
/// precomposed and decomposed accents, emoji, CJK, quotes and backslashes.
enum RandomEvent {
    static let pieces = ["a", "thumb", "v1", "é", "e\u{301}", "Å", "A\u{30A}", "👍🏽", "通知", "\"", "\\", "/", "'",
                         " ", "क़", "ﬁ", "\u{FEFF}", "-", "_", "é\"\\"]

    static func text(_ random: inout StreamRandom) -> String {
        (0..<(1 + random.below(4))).map { _ in random.pick(pieces) }.joined()
    }

    static func int(_ random: inout StreamRandom) -> Int {
        random.pick([0, 1, 9, 10, 404, 182_034, 9_007_199_254_740_991, 1 << 53, random.below(1_000_000)])
    }

    static func maybe<T>(_ random: inout StreamRandom, _ make: (inout StreamRandom) -> T) -> T? {
        random.oneIn(2) ? make(&random) : nil
    }

    static func properties(_ random: inout StreamRandom, depth: Int = 0) -> String {
        let count = random.below(4)
        let members = (0..<count).map { i -> String in
            let key = JSONString.render(text(&random) + "\(i)")
            let value: String
            switch random.below(depth < 2 ? 8 : 6) {
            case 0: value = JSONString.render(text(&random) + random.pick(["", "\n", "\t", "\u{1}", "\u{7F}"]))
            case 1: value = random.pick(["0", "-1", "2.5", "1e3", "-0.25E-2", "12345678901234567890"])
            case 2: value = random.pick(["true", "false", "null"])
            case 3: value = #""\u00e9\ud83d\ude00\/""#
            case 4: value = #""a\/b\u0041\"\\ \u00E9""#
            case 5: value = "[]"
            case 6: value = "[" + (0..<random.below(3)).map { _ in properties(&random, depth: depth + 1) }.joined(separator: ",") + "]"
            default: value = properties(&random, depth: depth + 1)
            }
            return key + ":" + value
        }
        return "{" + members.joined(separator: ",") + "}"
    }

    static func make(_ random: inout StreamRandom) -> Event {
        let details: EventDetails
        switch random.pick(EventType.allCases) {
        case .sent:
            let media = (0..<random.below(4)).map { _ in
                MediaVariant(variant: text(&random), kind: random.pick(AttachmentKind.allCases),
                             format: random.pick(MediaFormat.allCases), bytes: int(&random),
                             width: maybe(&random, int), height: maybe(&random, int), durationMS: maybe(&random, int))
            }
            details = .sent(SentDetails(media: media, strategy: maybe(&random) { $0.pick(AttachmentStrategy.allCases) },
                                        payloadBytes: maybe(&random, int)))
        case .delivered:
            let attachment = DeliveredAttachment(
                kind: random.pick(AttachmentKind.allCases), format: maybe(&random) { $0.pick(MediaFormat.allCases) },
                bytes: maybe(&random, int), source: maybe(&random) { $0.pick(MediaSource.allCases) },
                downloadMS: maybe(&random, int), variant: maybe(&random, text),
                httpStatus: maybe(&random) { 100 + $0.below(500) })
            details = .delivered(DeliveredDetails(
                attachment: attachment, outcome: random.pick(DeliveryOutcome.allCases), processingMS: int(&random),
                timeWillExpire: random.oneIn(2), network: maybe(&random) { $0.pick(NetworkType.allCases) },
                strategy: maybe(&random) { $0.pick(AttachmentStrategy.allCases) }))
        case .displayed:
            details = .displayed(DisplayedDetails(presentation: random.pick(Presentation.allCases),
                                                  attachmentKind: random.pick(AttachmentKind.allCases)))
        case .expanded:
            details = .expanded
        case .action:
            let id = random.pick([ActionDetails.openIdentifier, ActionDetails.dismissIdentifier, "reply", text(&random)])
            details = .action(ActionDetails(actionID: id, textInputLength: maybe(&random, int)))
        }
        let experiment = maybe(&random) { r in
            ExperimentTag(id: text(&r), arm: text(&r),
                          probability: maybe(&r) { $0.pick([0.5, 1, 0.125, 1e-3, 0.3333333333333333, 2.5e-7]) })
        }
        let props = maybe(&random) { Array(properties(&$0).utf8) }
        return Event(eventID: EventID(bytes: (0..<16).map { _ in UInt8(truncatingIfNeeded: random.next()) }) ?? Fixture.id,
                     notificationID: "apns-\(random.below(1000))", deviceID: "dev-\(random.below(100))",
                     category: random.pick(["new_photo", "reply", "é"]), occurredAt: Fixture.occurred,
                     experiment: experiment, details: details, properties: props)
    }
}
