import Foundation
import JSONText
import Testing
@testable import EngageCore

/// Fixtures shared by the event and batch tests.
enum Fixture {
    static let now = Timestamp(microsecondsSinceEpoch: 1_795_982_400_000_000)  // 2026-11-29T20:00:00Z
    static let occurred = Timestamp(microsecondsSinceEpoch: 1_795_979_783_120_000)  // 19:16:23.120Z
    static let id = EventID("0f8fad5b-d9cb-469f-a165-70867728950e")!

    static let common = #""event_id":"0f8fad5b-d9cb-469f-a165-70867728950e","notification_id":"apns-7C2E","device_id":"dev-42","category":"new_photo","occurred_at":"2026-11-29T19:16:23.120Z""#

    static let delivered = #"{"event_id":"0f8fad5b-d9cb-469f-a165-70867728950e","type":"delivered","notification_id":"apns-7C2E","device_id":"dev-42","category":"new_photo","occurred_at":"2026-11-29T19:16:23.120Z","experiment":{"id":"thumbs-v1","arm":"thumbnail","probability":0.5},"attachment":{"kind":"image","format":"jpeg","bytes":182034,"source":"network","download_ms":840,"variant":"thumbnail"},"outcome":"attached","processing_ms":910,"time_will_expire":false,"network":"wifi","strategy":"thumbnail","properties":{"campaign":"winter"}}"#

    static let sent = #"{"#  + common + #","type":"sent","media":[{"variant":"original","kind":"image","format":"jpeg","bytes":2400000,"width":4032,"height":3024},{"variant":"thumbnail","kind":"image","format":"jpeg","bytes":48000,"width":400,"height":300},{"variant":"poster","kind":"video","format":"mp4","bytes":9000000,"duration_ms":15000}],"strategy":"adaptive","payload_bytes":2890}"#
    static let displayed = #"{"# + common + #","type":"displayed","presentation":"rich","attachment_kind":"gif"}"#
    static let expanded = #"{"# + common + #","type":"expanded","properties":{"nested":{"list":[1,2.5,"x",null,true]}}}"#
    static let action = #"{"# + common + #","type":"action","action_id":"com.apple.UNNotificationDefaultActionIdentifier","text_input_length":12,"experiment":{"id":"copy-v2","arm":"short"}}"#

    static func base(_ type: EventType, _ details: EventDetails, experiment: ExperimentTag? = nil,
                     properties: String? = nil) -> Event {
        Event(eventID: id, notificationID: "apns-7C2E", deviceID: "dev-42", category: "new_photo",
              occurredAt: occurred, experiment: experiment, details: details,
              properties: properties.map { Array($0.utf8) })
    }

    static let deliveredEvent = base(.delivered, .delivered(DeliveredDetails(
        attachment: DeliveredAttachment(kind: .image, format: .jpeg, bytes: 182_034, source: .network,
                                        downloadMS: 840, variant: "thumbnail"),
        outcome: .attached, processingMS: 910, timeWillExpire: false, network: .wifi, strategy: .thumbnail)),
        experiment: ExperimentTag(id: "thumbs-v1", arm: "thumbnail", probability: 0.5),
        properties: #"{"campaign":"winter"}"#)

    static let sentEvent = base(.sent, .sent(SentDetails(media: [
        MediaVariant(variant: "original", kind: .image, format: .jpeg, bytes: 2_400_000, width: 4032, height: 3024),
        MediaVariant(variant: "thumbnail", kind: .image, format: .jpeg, bytes: 48_000, width: 400, height: 300),
        MediaVariant(variant: "poster", kind: .video, format: .mp4, bytes: 9_000_000, durationMS: 15_000),
    ], strategy: .adaptive, payloadBytes: 2890)))

    static let displayedEvent = base(.displayed, .displayed(DisplayedDetails(presentation: .rich, attachmentKind: .gif)))
    static let expandedEvent = base(.expanded, .expanded, properties: #"{"nested":{"list":[1,2.5,"x",null,true]}}"#)
    static let actionEvent = base(.action, .action(ActionDetails(
        actionID: "com.apple.UNNotificationDefaultActionIdentifier", textInputLength: 12)),
        experiment: ExperimentTag(id: "copy-v2", arm: "short"))

    static let all: [(String, Event)] = [
        (sent, sentEvent), (delivered, deliveredEvent), (displayed, displayedEvent),
        (expanded, expandedEvent), (action, actionEvent),
    ]

    static func decode(_ text: String, limits: EventLimits = EventLimits()) -> Result<Event, EventProblem> {
        Result { () throws(EventProblem) in try Event.decodeWire(Array(text.utf8), limits: limits, now: now) }
    }

    /// `delivered` with `old` replaced by `new` (which must occur exactly once).
    static func delivered(replacing old: String, with new: String) -> String {
        precondition(delivered.components(separatedBy: old).count == 2, old)
        return delivered.replacingOccurrences(of: old, with: new)
    }
}

/// Re-renders JSON the way PostgreSQL's jsonb text output can differ from ours: members in
/// reverse order, spaces after separators, and escapes for some characters.
func reformat(_ json: JSON, _ node: JSON.Node) -> String {
    switch json.kind(node) {
    case .object:
        let members = json.members(node).reversed().map { key, value in
            "\(JSONString.render(json.string(key)!)): \(reformat(json, value))"
        }
        return "{" + members.joined(separator: ", ") + "}"
    case .array:
        return "[" + json.elements(node).map { reformat(json, $0) }.joined(separator: ", ") + "]"
    case .string:
        return JSONString.render(json.string(node)!)
            .replacingOccurrences(of: "e", with: "\\u0065")
    default:
        return String(decoding: json.rawBytes(node), as: UTF8.self)
    }
}

@Suite struct EventDecoderTests {
    /// The decoder keeps each field's position inline and its presence in a 32-bit mask: a field
    /// beyond 32 would overflow both.
    @Test func everyWireFieldHasAnInlinePositionAndABit() {
        #expect(WireField.allCases.count <= 32)
        #expect(Set(WireField.allCases.map(\.bit)).count == WireField.allCases.count)
    }

    @Test(arguments: Fixture.all.indices)
    func decodesACompleteExampleOfEachType(_ i: Int) throws {
        let (text, expected) = Fixture.all[i]
        #expect(Fixture.decode(text) == .success(expected))
    }

    @Test func deliveredPayloadIsCanonical() {
        let payload = String(decoding: Fixture.deliveredEvent.payloadJSON, as: UTF8.self)
        #expect(payload == #"{"attachment":{"kind":"image","format":"jpeg","bytes":182034,"source":"network","download_ms":840,"variant":"thumbnail"},"outcome":"attached","processing_ms":910,"time_will_expire":false,"network":"wifi","strategy":"thumbnail","experiment":{"id":"thumbs-v1","arm":"thumbnail","probability":0.5},"properties":{"campaign":"winter"}}"#)
        #expect(String(decoding: Fixture.displayedEvent.payloadJSON, as: UTF8.self)
                == #"{"presentation":"rich","attachment_kind":"gif"}"#)
        #expect(String(decoding: Fixture.base(.expanded, .expanded).payloadJSON, as: UTF8.self) == "{}")
    }

    @Test(arguments: Fixture.all.indices)
    func payloadRoundTripsThroughStoredDecoder(_ i: Int) throws {
        let event = Fixture.all[i].1
        let stored = try Event(eventID: event.eventID, type: event.type, notificationID: event.notificationID,
                               deviceID: event.deviceID, category: event.category, occurredAt: event.occurredAt,
                               payloadJSON: event.payloadJSON)
        #expect(stored == event)

        // As PostgreSQL might render it: other key order, whitespace and escapes.
        let parsed = try JSON.parse(event.payloadJSON)
        let rendered = Array(reformat(parsed, parsed.root).utf8)
        #expect(rendered != event.payloadJSON)
        let reread = try Event(eventID: event.eventID, type: event.type, notificationID: event.notificationID,
                               deviceID: event.deviceID, category: event.category, occurredAt: event.occurredAt,
                               payloadJSON: rendered)
        var expected = event
        if let properties = event.properties {
            let p = try JSON.parse(properties)
            expected.properties = Array(reformat(p, p.root).utf8)
        }
        #expect(reread == expected)
        #expect(try EventDetails.decode(type: event.type, payloadJSON: rendered) == event.details)
    }

    /// Refused on the wire now, a bidirectional control in an event stored before stays readable:
    /// the replays read what the projector (which does not check it) counted.
    @Test func aBidirectionalControlInAStoredPayloadStillReads() throws {
        let details = try EventDetails.decode(type: .action, payloadJSON: Array(#"{"action_id":"like\u202E"}"#.utf8))
        guard case .action(let action) = details else {
            Issue.record("not an action: \(details)")
            return
        }
        #expect(action.actionID == "like\u{202E}")
    }

    @Test(arguments: Fixture.all.indices)
    func wireEncodingRoundTrips(_ i: Int) throws {
        let event = Fixture.all[i].1
        let wire = String(decoding: event.encodeWireJSON(), as: UTF8.self)
        #expect(Fixture.decode(wire) == .success(event))
    }

    /// A failed download's HTTP status is kept, stored and encoded again.
    @Test func httpStatusOfAFailedDownloadIsKept() throws {
        let text = Fixture.delivered(replacing: #""outcome":"attached""#, with: #""outcome":"download_failed""#)
            .replacingOccurrences(of: #""variant":"thumbnail"}"#, with: #""variant":"thumbnail","http_status":404}"#)
        guard case let .success(event) = Fixture.decode(text), case let .delivered(details) = event.details else {
            Issue.record("expected a delivered event")
            return
        }
        #expect(details.attachment.httpStatus == 404)
        #expect(String(decoding: event.payloadJSON, as: UTF8.self).contains(#""variant":"thumbnail","http_status":404},"outcome":"download_failed""#))
        #expect(try EventDetails.decode(type: .delivered, payloadJSON: event.payloadJSON) == event.details)
    }

    @Test func wireEncodingIsCanonical() {
        let wire = String(decoding: Fixture.displayedEvent.encodeWireJSON(), as: UTF8.self)
        #expect(wire == #"{"event_id":"0f8fad5b-d9cb-469f-a165-70867728950e","type":"displayed","notification_id":"apns-7C2E","device_id":"dev-42","category":"new_photo","occurred_at":"2026-11-29T19:16:23.120000Z","presentation":"rich","attachment_kind":"gif"}"#)
    }

    @Test func storedPayloadForTheWrongTypeIsRejected() {
        let payload = Fixture.deliveredEvent.payloadJSON
        #expect(throws: EventProblem(field: "attachment", problem: "unknown field for displayed events")) {
            try EventDetails.decode(type: .displayed, payloadJSON: payload)
        }
        #expect(throws: EventProblem(field: "type", problem: "unknown field for expanded events")) {
            try EventDetails.decode(type: .expanded, payloadJSON: Array(#"{"type":"expanded"}"#.utf8))
        }
        #expect(throws: EventProblem(field: nil, problem: "payload is not valid JSON: invalid JSON at byte 1: unexpected end of input")) {
            try EventDetails.decode(type: .expanded, payloadJSON: Array("{".utf8))
        }
    }

    @Test func actionKinds() {
        let open = ActionDetails(actionID: ActionDetails.openIdentifier)
        let dismiss = ActionDetails(actionID: "com.apple.UNNotificationDismissActionIdentifier")
        let custom = ActionDetails(actionID: "reply")
        #expect([open.isOpen, open.isDismiss, open.isCustom] == [true, false, false])
        #expect([dismiss.isOpen, dismiss.isDismiss, dismiss.isCustom] == [false, true, false])
        #expect([custom.isOpen, custom.isDismiss, custom.isCustom] == [false, false, true])
    }

    @Test func nullCountsAsAbsent() {
        let text = Fixture.delivered(replacing: #","network":"wifi""#, with: #","network":null"#)
        guard case .success(let event) = Fixture.decode(text), case .delivered(let d) = event.details else {
            Issue.record("expected a delivered event")
            return
        }
        #expect(d.network == nil)
    }

    @Test func escapedKeysAndValuesAreUnderstood() {
        let text = Fixture.delivered(replacing: #""outcome":"attached""#, with: #""\u006futcome":"att\u0061ched""#)
        #expect(Fixture.decode(text) == .success(Fixture.deliveredEvent))
    }

    /// PostgreSQL compares identifiers as bytes, Swift's `String` as canonically equivalent text:
    /// a decomposed "é" (escaped or not) is composed as it is decoded, so the two agree.
    @Test func identifiersAreComposedToTheSameBytes() throws {
        let precomposed = "caf\u{E9}-\u{212B}"            // é, and the Angstrom sign (a singleton)
        let expected = Array("caf\u{E9}-\u{C5}".utf8)
        for written in [#""caf\u0065\u0301-\u212b""#, "\"cafe\u{301}-\u{212B}\"", "\"\(precomposed)\""] {
            var text = Fixture.delivered(replacing: #""category":"new_photo""#, with: #""category":"# + written)
            text = text.replacingOccurrences(of: #""device_id":"dev-42""#, with: #""device_id":"# + written)
            guard case .success(let event) = Fixture.decode(text) else {
                Issue.record("expected \(written) to decode")
                continue
            }
            #expect(Array(event.category.utf8) == expected, "category \(written)")
            #expect(Array(event.deviceID.utf8) == expected, "device_id \(written)")
        }
        // U+0958 composes to two scalars (six bytes): the limit applies to what is kept.
        let grown = String(repeating: "\u{958}", count: 30)  // 90 bytes as sent, 180 composed
        let text = Fixture.delivered(replacing: #""category":"new_photo""#, with: "\"category\":\"\(grown)\"")
        #expect(Fixture.decode(text) == .failure(EventProblem(field: "category", problem: "must be 1 to 100 bytes long")))
        let short = String(repeating: "\u{958}", count: 16)   // 48 bytes sent, 96 composed
        let fits = Fixture.delivered(replacing: #""category":"new_photo""#, with: "\"category\":\"\(short)\"")
        #expect(try Fixture.decode(fits).get().category.utf8.count == 96)
    }

    @Test func integersUpToTwoToThe53AreAccepted() {
        let text = Fixture.delivered(replacing: #""processing_ms":910"#, with: #""processing_ms":9007199254740992"#)
        guard case .success(let event) = Fixture.decode(text), case .delivered(let d) = event.details else {
            Issue.record("expected a delivered event")
            return
        }
        #expect(d.processingMS == 9_007_199_254_740_992)
    }

    static let integerProblem = "must be an integer from 0 to 9007199254740992"
    static let kinds = "must be one of image, gif, video, audio, none"

    @Test(arguments: [
        // Fields and names.
        (#""network":"wifi""#, #""network":"wifi","colour":"red""#, "colour", "unknown field"),
        (#""network":"wifi""#, #""network":"wifi","text":"hi""#, "text", "unknown field"),
        (#""network":"wifi""#, #""network":"wifi","presentation":"rich""#, "presentation", "unknown field for delivered events"),
        (#""type":"delivered","#, "", "type", "is required"),
        (#""event_id":"0f8fad5b-d9cb-469f-a165-70867728950e","#, "", "event_id", "is required"),
        (#""device_id":"dev-42","#, "", "device_id", "is required"),
        (#""device_id":"dev-42","#, #""device_id":null,"#, "device_id", "is required"),
        (#""outcome":"attached","#, "", "outcome", "is required"),
        (#""time_will_expire":false,"#, "", "time_will_expire", "is required"),
        (#""kind":"image","#, "", "attachment.kind", "is required"),
        // Values.
        (#""type":"delivered""#, #""type":"opened""#, "type", "must be one of sent, delivered, displayed, expanded, action"),
        (#""0f8fad5b-d9cb-469f-a165-70867728950e""#, #""0f8fad5b""#, "event_id", "must be a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e"),
        (#""0f8fad5b-d9cb-469f-a165-70867728950e""#, "42", "event_id", "must be a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e"),
        (#""apns-7C2E""#, #""""#, "notification_id", "must be 1 to 200 bytes long"),
        (#""apns-7C2E""#, "\"" + String(repeating: "n", count: 201) + "\"", "notification_id", "must be 1 to 200 bytes long"),
        (#""new_photo""#, "\"" + String(repeating: "c", count: 101) + "\"", "category", "must be 1 to 100 bytes long"),
        (#""new_photo""#, #""new\nphoto""#, "category", "must not contain control characters"),
        (#""new_photo""#, #""new\u0085photo""#, "category", "must not contain control characters"),
        // Bidirectional overrides and isolates turn a headline's figures around after the name.
        (#""new_photo""#, #""promo\u202E""#, "category", "must not contain control characters"),
        (#""new_photo""#, "\"promo\u{202A}\"", "category", "must not contain control characters"),
        (#""new_photo""#, #""iso\u2069late""#, "category", "must not contain control characters"),
        (#""new_photo""#, "7", "category", "must be a string"),
        (#""2026-11-29T19:16:23.120Z""#, #""2026-11-29T19:16:23""#, "occurred_at", "must be an RFC 3339 timestamp with a time zone"),
        (#""2026-11-29T19:16:23.120Z""#, "1795979783", "occurred_at", "must be an RFC 3339 timestamp with a time zone"),
        (#""2026-11-29T19:16:23.120Z""#, #""2026-10-15T20:00:00Z""#, "occurred_at", "is 45 days in the past; the limit is 30 days"),
        (#""2026-11-29T19:16:23.120Z""#, #""2026-11-29T20:15:00Z""#, "occurred_at", "is 15 minutes in the future; the limit is 10 minutes"),
        (#""kind":"image""#, #""kind":"photo""#, "attachment.kind", kinds),
        (#""format":"jpeg""#, #""format":"webp""#, "attachment.format", "must be one of jpeg, png, gif, tiff, mpeg, mp4, mov, mp3, aac, wav, caf, aiff, avi, m4a"),
        (#""source":"network""#, #""source":"disk""#, "attachment.source", "must be one of network, cache"),
        (#""variant":"thumbnail""#, #""variant":"thumbnail","url":"x""#, "attachment.url", "unknown field"),
        (#""variant":"thumbnail""#, #""variant":"thumbnail","http_status":99"#, "attachment.http_status", "must be an HTTP status, 100 to 599"),
        (#""variant":"thumbnail""#, #""variant":"thumbnail","http_status":600"#, "attachment.http_status", "must be an HTTP status, 100 to 599"),
        (#""variant":"thumbnail""#, #""variant":"thumbnail","http_status":"404""#, "attachment.http_status", integerProblem),
        (#""bytes":182034"#, #""bytes":-1"#, "attachment.bytes", integerProblem),
        (#""bytes":182034"#, #""bytes":1.5"#, "attachment.bytes", integerProblem),
        (#""bytes":182034"#, #""bytes":1e3"#, "attachment.bytes", integerProblem),
        (#""bytes":182034"#, #""bytes":"182034""#, "attachment.bytes", integerProblem),
        (#""processing_ms":910"#, #""processing_ms":9007199254740993"#, "processing_ms", integerProblem),
        (#""processing_ms":910"#, #""processing_ms":99999999999999999999"#, "processing_ms", integerProblem),
        (#""outcome":"attached""#, #""outcome":"ok""#, "outcome", "must be one of attached, timeout, too_large, unsupported_format, download_failed, not_requested"),
        (#""time_will_expire":false"#, #""time_will_expire":0"#, "time_will_expire", "must be true or false"),
        (#""network":"wifi""#, #""network":"5g""#, "network", "must be one of wifi, cellular, ethernet, offline, unknown"),
        (#""strategy":"thumbnail""#, #""strategy":"tiny""#, "strategy", "must be one of none, full, thumbnail, cached, adaptive, poster"),
        (#""attachment":{"#, #""attachment":7,"x":{"#, "x", "unknown field"),
        (#""probability":0.5"#, #""probability":0"#, "experiment.probability", "must be a number greater than 0 and at most 1"),
        (#""probability":0.5"#, #""probability":1.01"#, "experiment.probability", "must be a number greater than 0 and at most 1"),
        (#""probability":0.5"#, #""probability":"0.5""#, "experiment.probability", "must be a number greater than 0 and at most 1"),
        (#""arm":"thumbnail","#, "", "experiment.arm", "is required"),
        (#""arm":"thumbnail""#, #""arm":"""#, "experiment.arm", "must be 1 to 100 bytes long"),
        (#""id":"thumbs-v1","#, #""id":"thumbs-v1","weight":2,"#, "experiment.weight", "unknown field"),
        (#""experiment":{"id":"thumbs-v1","arm":"thumbnail","probability":0.5}"#, #""experiment":"thumbs-v1""#, "experiment", "must be an object"),
        (#""properties":{"campaign":"winter"}"#, #""properties":["winter"]"#, "properties", "must be an object"),
    ])
    func rejectsDeliveredVariants(_ old: String, _ new: String, _ field: String, _ problem: String) {
        let text = Fixture.delivered(replacing: old, with: new)
        #expect(Fixture.decode(text) == .failure(EventProblem(field: field, problem: problem)))
    }

    @Test func attachmentMustBeAnObject() {
        let text = Fixture.delivered.replacingOccurrences(
            of: #""attachment":{"kind":"image","format":"jpeg","bytes":182034,"source":"network","download_ms":840,"variant":"thumbnail"}"#,
            with: #""attachment":"image""#)
        #expect(Fixture.decode(text) == .failure(EventProblem(field: "attachment", problem: "must be an object")))
    }

    @Test(arguments: [
        // sent
        (Fixture.sent, #""media":[{"#, #""media":[{"colour":1,"#, "media[0].colour", "unknown field"),
        (Fixture.sent, #""variant":"poster","kind":"video""#, #""variant":"poster","kind":"film""#, "media[2].kind", EventDecoderTests.kinds),
        (Fixture.sent, #""variant":"thumbnail","kind":"image","format":"jpeg","bytes":48000,"#, #""variant":"thumbnail","kind":"image","format":"jpeg","#, "media[1].bytes", "is required"),
        (Fixture.sent, #""duration_ms":15000"#, #""duration_ms":-5"#, "media[2].duration_ms", EventDecoderTests.integerProblem),
        (Fixture.sent, #""media":["#, #""media":[7,"#, "media[0]", "must be an object"),
        (Fixture.sent, #""payload_bytes":2890"#, #""payload_bytes":2890,"outcome":"attached""#, "outcome", "unknown field for sent events"),
        // displayed
        (Fixture.displayed, #""presentation":"rich","#, "", "presentation", "is required"),
        (Fixture.displayed, #""presentation":"rich""#, #""presentation":"fancy""#, "presentation", "must be one of rich, plain"),
        (Fixture.displayed, #""attachment_kind":"gif""#, #""attachment_kind":"none","outcome":"attached""#, "outcome", "unknown field for displayed events"),
        (Fixture.displayed, #""attachment_kind":"gif""#, #""attachment_kind":"jpeg""#, "attachment_kind", EventDecoderTests.kinds),
        // expanded
        (Fixture.expanded, #""type":"expanded""#, #""type":"expanded","action_id":"x""#, "action_id", "unknown field for expanded events"),
        // action
        (Fixture.action, #""action_id":"com.apple.UNNotificationDefaultActionIdentifier","#, "", "action_id", "is required"),
        (Fixture.action, #""com.apple.UNNotificationDefaultActionIdentifier""#, #""""#, "action_id", "must be 1 to 64 characters long"),
        (Fixture.action, #""com.apple.UNNotificationDefaultActionIdentifier""#, "\"" + String(repeating: "a", count: 65) + "\"", "action_id", "must be 1 to 64 characters long"),
        // More bytes than 64 scalars can take is too many characters, not too many bytes.
        (Fixture.action, #""com.apple.UNNotificationDefaultActionIdentifier""#, "\"" + String(repeating: "a", count: 257) + "\"", "action_id", "must be 1 to 64 characters long"),
        (Fixture.action, #""com.apple.UNNotificationDefaultActionIdentifier""#, "\"" + String(repeating: "😀", count: 65) + "\"", "action_id", "must be 1 to 64 characters long"),
        (Fixture.action, #""com.apple.UNNotificationDefaultActionIdentifier""#, #""reply\tnow""#, "action_id", "must not contain control characters"),
        (Fixture.action, #""text_input_length":12"#, #""text_input_length":12,"text":"see you at 8""#, "text", "unknown field"),
        (Fixture.action, #""text_input_length":12"#, #""text_input_length":12,"reply_text":"ok""#, "reply_text", "unknown field"),
        (Fixture.action, #""text_input_length":12"#, #""text_input_length":-1"#, "text_input_length", EventDecoderTests.integerProblem),
    ])
    func rejectsOtherTypes(_ base: String, _ old: String, _ new: String, _ field: String, _ problem: String) {
        precondition(base.components(separatedBy: old).count == 2, old)
        let text = base.replacingOccurrences(of: old, with: new)
        #expect(Fixture.decode(text) == .failure(EventProblem(field: field, problem: problem)))
    }

    @Test func actionIDOf64CharactersIsAccepted() {
        let id = String(repeating: "é", count: 64)
        let text = Fixture.action.replacingOccurrences(of: "com.apple.UNNotificationDefaultActionIdentifier", with: id)
        guard case .success(let event) = Fixture.decode(text), case .action(let a) = event.details else {
            Issue.record("expected an action event")
            return
        }
        #expect(a.actionID == id)
        #expect(a.isCustom)
    }

    @Test func sizeAndDepthLimits() {
        var limits = EventLimits()
        limits.maxEventBytes = 400
        let size = Fixture.delivered.utf8.count
        #expect(Fixture.decode(Fixture.delivered, limits: limits)
                == .failure(EventProblem(field: nil, problem: "event is \(size) bytes; the limit is 400")))

        limits = EventLimits()
        limits.maxDepth = 3
        #expect(Fixture.decode(Fixture.expanded, limits: limits)
                == .failure(EventProblem(field: nil, problem: "nesting deeper than 3 levels")))
        limits.maxDepth = 4
        #expect(Fixture.decode(Fixture.expanded, limits: limits) == .success(Fixture.expandedEvent))
    }

    @Test func timeWindowBoundariesAreInclusive() {
        let limits = EventLimits()
        let thirtyDays: Int64 = 30 * Timestamp.microsecondsPerDay
        for (offset, ok) in [(-thirtyDays, true), (-thirtyDays - 1, false), (600_000_000, true), (600_000_001, false)] {
            var event = Fixture.displayedEvent
            event.occurredAt = Fixture.now.adding(microseconds: offset)
            let result = Fixture.decode(String(decoding: event.encodeWireJSON(), as: UTF8.self), limits: limits)
            #expect(((try? result.get()) != nil) == ok, "offset \(offset)")
        }
    }
}
