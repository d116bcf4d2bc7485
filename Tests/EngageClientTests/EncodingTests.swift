import Foundation
import SeededRandom
import Testing
@testable import EngageClient

@Suite("Wire encoding")
struct EncodingTests {
    static let id = UUID(uuidString: "C84F0D3E-1A29-4B7C-9F56-3E8D2A1B7C64")!
    static let at = Date(timeIntervalSince1970: 1_795_979_783.12)  // 2026-11-29T19:16:23.120Z
    static let arm = ExperimentArm(id: "rich-media-2026-11", arm: "thumbnail", probability: 0.5)

    static func event(_ body: EngageEvent.Body, experiment: ExperimentArm? = arm,
                      properties: [String: JSONValue]? = nil) -> EngageEvent {
        EngageEvent(eventID: id, notificationID: "9E3B6F1A", deviceID: "dev-7c41a9e2", category: "new_photo",
                    occurredAt: at, experiment: experiment, properties: properties, body: body)
    }

    static let common = #""event_id":"c84f0d3e-1a29-4b7c-9f56-3e8d2a1b7c64","#
        + #""notification_id":"9E3B6F1A","device_id":"dev-7c41a9e2","category":"new_photo","#
        + #""occurred_at":"2026-11-29T19:16:23.120Z","experiment":{"id":"rich-media-2026-11","arm":"thumbnail","probability":0.5}"#

    @Test func delivered() {
        let json = Self.event(.delivered(
            attachment: AttachmentTelemetry(kind: .image, format: .jpeg, bytes: 48210, source: .network,
                                            downloadMS: 412, variant: "thumbnail"),
            outcome: .attached, processingMS: 587, timeWillExpire: false, network: .wifi, strategy: .thumbnail)).json
        #expect(json == #"{"event_id":"c84f0d3e-1a29-4b7c-9f56-3e8d2a1b7c64","type":"delivered","#
            + #""notification_id":"9E3B6F1A","device_id":"dev-7c41a9e2","category":"new_photo","#
            + #""occurred_at":"2026-11-29T19:16:23.120Z","experiment":{"id":"rich-media-2026-11","arm":"thumbnail","probability":0.5},"#
            + #""attachment":{"kind":"image","format":"jpeg","bytes":48210,"source":"network","download_ms":412,"variant":"thumbnail"},"#
            + #""outcome":"attached","processing_ms":587,"time_will_expire":false,"network":"wifi","strategy":"thumbnail"}"#)
    }

    @Test func deliveredAfterTimeWillExpireLeavesOutWhatIsUnknown() {
        let json = Self.event(.delivered(attachment: .none, outcome: .timeout, processingMS: 29_500,
                                         timeWillExpire: true, network: nil, strategy: nil), experiment: nil).json
        #expect(json == #"{"event_id":"c84f0d3e-1a29-4b7c-9f56-3e8d2a1b7c64","type":"delivered","#
            + #""notification_id":"9E3B6F1A","device_id":"dev-7c41a9e2","category":"new_photo","#
            + #""occurred_at":"2026-11-29T19:16:23.120Z","#
            + #""attachment":{"kind":"none"},"outcome":"timeout","processing_ms":29500,"time_will_expire":true}"#)
    }

    @Test func sent() {
        let json = Self.event(.sent(media: [
            MediaVariant(variant: "original", kind: .image, format: .jpeg, bytes: 2_483_112, width: 3024, height: 4032),
            MediaVariant(variant: "clip", kind: .video, format: .mp4, bytes: 900_000, durationMS: 4000),
        ], strategy: .thumbnail, payloadBytes: 1893), properties: ["campaign": "weekly-digest"]).json
        #expect(json == "{" + Self.common.replacingOccurrences(of: #""notification_id""#, with: #""type":"sent","notification_id""#)
            + #","media":[{"variant":"original","kind":"image","format":"jpeg","bytes":2483112,"width":3024,"height":4032},"#
            + #"{"variant":"clip","kind":"video","format":"mp4","bytes":900000,"duration_ms":4000}],"#
            + #""strategy":"thumbnail","payload_bytes":1893,"properties":{"campaign":"weekly-digest"}}"#)
    }

    @Test func displayedExpandedAndActions() {
        func typed(_ type: String) -> String {
            "{" + Self.common.replacingOccurrences(of: #""notification_id""#, with: #""type":"\#(type)","notification_id""#)
        }
        #expect(Self.event(.displayed(presentation: .plain, attachmentKind: .none)).json
            == typed("displayed") + #","presentation":"plain","attachment_kind":"none"}"#)
        #expect(Self.event(.expanded).json == typed("expanded") + "}")
        #expect(Self.event(.action(actionID: "REPLY", textInputLength: 42)).json
            == typed("action") + #","action_id":"REPLY","text_input_length":42}"#)
        #expect(Self.event(.action(actionID: AppleActionIdentifier.dismiss, textInputLength: nil)).json
            == typed("action") + #","action_id":"com.apple.UNNotificationDismissActionIdentifier"}"#)
    }

    @Test func stringsAreEscapedAndPropertiesSorted() {
        let json = JSONWriter.encode(.object(["b": .array([.null, true, 1.5, 3]), "a": "quote \" slash \\ tab \t bell \u{07} é"]))
        #expect(json == #"{"a":"quote \" slash \\ tab \t bell \u0007 é","b":[null,true,1.5,3]}"#)
        #expect(JSONWriter.encode(.number(2)) == "2")
        #expect(JSONWriter.encode(.number(.nan)) == "null")
    }

    @Test func timestamps() {
        #expect(Timestamp.rfc3339(Self.at) == "2026-11-29T19:16:23.120Z")
        #expect(Timestamp.rfc3339(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00.000Z")
        #expect(Timestamp.rfc3339(Date(timeIntervalSince1970: -0.001)) == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp.rfc3339(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.rfc3339(Date(timeIntervalSince1970: 4_107_542_399.9994)) == "2100-02-28T23:59:59.999Z")
    }
}

@Suite("Retry policy and answers")
struct RetryPolicyTests {
    @Test func retryAfterForms() {
        let now = Date(timeIntervalSince1970: 1_445_412_480)  // Wed, 21 Oct 2015 07:28:00 GMT
        #expect(RetryPolicy.parseRetryAfter("1") == 1)
        #expect(RetryPolicy.parseRetryAfter(" 120 ") == 120)
        #expect(RetryPolicy.parseRetryAfter("Wed, 21 Oct 2015 07:28:30 GMT", now: now) == 30)
        #expect(RetryPolicy.parseRetryAfter("-3") == nil)
        #expect(RetryPolicy.parseRetryAfter("soon") == nil)
        #expect(RetryPolicy.parseRetryAfter(nil) == nil)
    }

    @Test func backoffDoublesWithEqualJitterUpToTheCap() {
        let policy = RetryPolicy(initialDelay: .seconds(1), maxDelay: .seconds(60), retryAfterJitter: .seconds(2))
        #expect(policy.backoff(failures: 1, random: 0) == 0.5)
        #expect(policy.backoff(failures: 1, random: 1) == 1)
        #expect(policy.backoff(failures: 4, random: 0) == 4)
        #expect(policy.backoff(failures: 4, random: 1) == 8)
        #expect(policy.backoff(failures: 40, random: 1) == 60)
        #expect(policy.afterRetryAfter(5, random: 0) == 5)
        #expect(policy.afterRetryAfter(5, random: 0.5) == 6)
    }

    @Test func ingestAnswer() {
        let body = #"{"accepted":2,"duplicates":1,"rejected":[{"index":3,"field":"attachment.kind","problem":"must be one of image"},{"index":0,"field":null,"problem":"must be a JSON object"}]}"#
        #expect(IngestAnswer.parse(Data(body.utf8), sent: 5) == .init(accepted: 2, duplicates: 1, rejected: [
            .init(index: 3, field: "attachment.kind", problem: "must be one of image"),
            .init(index: 0, field: nil, problem: "must be a JSON object"),
        ]))
    }

    /// A 200 that is not engage's answer (a captive portal's page, a proxy's JSON) stores
    /// nothing: the events stay and are sent again later.
    @Test(arguments: [
        "<html><body>Sign in to Airport WiFi</body></html>", "", "{}", "[]", #"{"accepted":"2","duplicates":3,"rejected":[]}"#,
        #"{"accepted":2,"duplicates":3}"#, #"{"accepted":2,"duplicates":2,"rejected":[{"problem":"x"}]}"#,
        #"{"accepted":-1,"duplicates":5,"rejected":[{"index":0}]}"#,
        #"{"accepted":1.5,"duplicates":3,"rejected":[{"index":0}]}"#,
    ])
    func aTwoHundredWithoutEngagesAnswerIsNotStored(body: String) {
        #expect(IngestAnswer.parse(Data(body.utf8), sent: 5) == nil)
        #expect(IngestAnswer.classify(.response(status: 200, headers: [:], body: Data(body.utf8)), sent: 5) == .transient)
    }

    /// A count or index beyond the request (a proxy's made-up answer, or numbers that would overflow
    /// the flush's sums or index past its events), or counts that leave some of its events
    /// unaccounted for, are not engage's answer: nothing is taken as stored.
    @Test(arguments: [
        #"{"accepted":3,"duplicates":0,"rejected":[]}"#, #"{"accepted":0,"duplicates":3,"rejected":[]}"#,
        #"{"accepted":9223372036854775807,"duplicates":0,"rejected":[]}"#, #"{"accepted":1e300,"duplicates":0,"rejected":[]}"#,
        #"{"accepted":1,"duplicates":1,"rejected":[{"index":0}]}"#, #"{"accepted":1,"duplicates":0,"rejected":[{"index":2}]}"#,
        #"{"accepted":0,"duplicates":0,"rejected":[{"index":1},{"index":1}]}"#,
        #"{"accepted":1,"duplicates":0,"rejected":[{"index":18446744073709551615}]}"#,
        // Foundation reads `true` as the number 1: taken as an index, it would drop the second event.
        #"{"accepted":1,"duplicates":0,"rejected":[{"index":true}]}"#, #"{"accepted":true,"duplicates":1,"rejected":[]}"#,
        #"{"accepted":2,"duplicates":false,"rejected":[]}"#,
        // Fewer events than were sent: the rest would be deleted unaccounted for.
        #"{"accepted":1,"duplicates":0,"rejected":[]}"#, #"{"accepted":0,"duplicates":0,"rejected":[]}"#,
        #"{"accepted":0,"duplicates":0,"rejected":[{"index":1}]}"#,
    ])
    func anAnswerBeyondTheRequestIsNotStored(body: String) {
        #expect(IngestAnswer.parse(Data(body.utf8), sent: 2) == nil)
        #expect(IngestAnswer.classify(.response(status: 200, headers: [:], body: Data(body.utf8)), sent: 2) == .transient)
    }

    @Test func anAnswerWithinTheRequestIsStored() {
        let body = #"{"accepted":1,"duplicates":0,"rejected":[{"index":1,"problem":"p"}]}"#
        #expect(IngestAnswer.parse(Data(body.utf8), sent: 2) == .init(accepted: 1, duplicates: 0, rejected: [.init(index: 1, problem: "p")]))
    }

    /// engage's 400 `no-valid-events` lists every event as a 200 would: each is dropped as
    /// rejected. A list that leaves one out, or adds counts of its own, refuses the request whole.
    @Test func noValidEventsRejectsEachListedEventOrRefusesTheRequest() {
        let type = "https://engage.dev/problems/no-valid-events"
        func classify(_ rejected: String, extra: String = "") -> IngestAnswer.Verdict {
            let body = #"{"type":"\#(type)","status":400,\#(extra)"rejected":[\#(rejected)]}"#
            return IngestAnswer.classify(.response(status: 400, headers: [:], body: Data(body.utf8)), sent: 2)
        }
        #expect(classify(#"{"index":1,"field":"action_id","problem":"p"},{"index":0,"field":null,"problem":"q"}"#)
                == .stored(.init(accepted: 0, duplicates: 0, rejected: [.init(index: 1, field: "action_id", problem: "p"),
                                                                         .init(index: 0, field: nil, problem: "q")])))
        #expect(classify(#"{"index":1,"problem":"p"}"#) == .refused(status: 400, problemType: type))
        #expect(classify(#"{"index":1,"problem":"p"},{"index":1,"problem":"p"}"#) == .refused(status: 400, problemType: type))
        #expect(classify(#"{"index":0,"problem":"p"}"#, extra: #""accepted":1,"duplicates":0,"#) == .refused(status: 400, problemType: type))
    }

    /// engage's 400s for the request's form, not its events, drop nothing.
    @Test func aRefusalOfTheRequestsFormIsNotOneOfItsEvents() {
        for slug in ["bad-gzip", "bad-sent-at", "bad-occurred-at-clock"] {
            let type = "https://engage.dev/problems/\(slug)"
            #expect(IngestAnswer.classify(.response(status: 400, headers: [:], body: Data(#"{"type":"\#(type)"}"#.utf8)), sent: 3)
                    == .formRefused(problemType: type))
        }
    }

    @Test func redirectsAndServerErrorsAreRetriedAndEngagesOwn4xxRefused() {
        for status in [301, 302, 303, 307, 308, 408, 500, 502] {
            #expect(IngestAnswer.classify(.response(status: status, headers: ["location": "http://portal"], body: Data()), sent: 1) == .transient)
        }
        #expect(IngestAnswer.classify(.response(status: 429, headers: ["retry-after": "7"], body: Data()), sent: 1) == .retryAfter(7))
        let malformed = "https://engage.dev/problems/malformed-json"
        #expect(IngestAnswer.classify(.response(status: 400, headers: [:], body: Data(#"{"type":"\#(malformed)"}"#.utf8)), sent: 1)
                == .refused(status: 400, problemType: malformed))
        // engage's refusal of the key, the address or the request's form, not of the events: they
        // wait for a key it takes or a mended configuration (an app update, a server's fix).
        for (status, type) in [(401, "unauthorized"), (403, "forbidden"), (404, "not-found"), (405, "method-not-allowed"),
                               (415, "unsupported-media-type")] {
            let problem = Data(#"{"type":"https://engage.dev/problems/\#(type)"}"#.utf8)
            #expect(IngestAnswer.classify(.response(status: status, headers: [:], body: problem), sent: 1) == .transient)
        }
        // Not engage's problem: a firewall's page, another service's problem type, no type.
        for body in ["<html>Blocked by network policy</html>", #"{"type":"t"}"#, #"{"type":"https://example.com/problems/x"}"#,
                     #"{"title":"Forbidden"}"#, ""] {
            for status in [400, 401, 403, 404, 407, 421, 425] {
                #expect(IngestAnswer.classify(.response(status: status, headers: [:], body: Data(body.utf8)), sent: 1) == .transient)
            }
            // A proxy's body limit: fewer events may pass, and nothing is dropped for it.
            #expect(IngestAnswer.classify(.response(status: 413, headers: [:], body: Data(body.utf8)), sent: 1) == .tooLarge(problemType: nil))
        }
        // Headers too large (engage's or a proxy's): they grow with the request, so fewer events
        // may pass; one event is never dropped for it.
        for body in [#"{"type":"https://engage.dev/problems/headers-too-large"}"#, ""] {
            #expect(IngestAnswer.classify(.response(status: 431, headers: [:], body: Data(body.utf8)), sent: 1) == .tooLarge(problemType: nil))
        }
        let tooLarge = "https://engage.dev/problems/payload-too-large"
        #expect(IngestAnswer.classify(.response(status: 413, headers: [:], body: Data(#"{"type":"\#(tooLarge)"}"#.utf8)), sent: 1)
                == .tooLarge(problemType: tooLarge))
        #expect(IngestAnswer.classify(.timedOut, sent: 1) == .timedOut)
        #expect(IngestAnswer.classify(.cancelled, sent: 1) == .interrupted)
        #expect(IngestAnswer.classify(.failed("refused"), sent: 1) == .transient)
    }

    /// Retry-After is honoured up to the cap, and a recorded wait longer than any the policy
    /// gives is recognised (it means the clock was set back).
    @Test func retryAfterIsCapped() {
        let policy = RetryPolicy(initialDelay: .seconds(1), maxDelay: .seconds(60), retryAfterJitter: .seconds(2))
        #expect(policy.afterRetryAfter(3600, random: 0) == 60)
        #expect(policy.afterRetryAfter(3600, random: 1) == 62)
        #expect(policy.longestWait == 62)
    }

    @Test func assignmentsAreReadTolerantly() {
        let body = #"{"assignments":[{"experiment":"e1","arm":"thumbnail","strategy":"thumbnail","probability":0.5,"new":1},"#
            + #"{"experiment":"e2","arm":"b","strategy":"hologram"},{"arm":"orphan"},7],"next":"ignored"}"#
        let parsed = AssignmentsDocument.parse(Data(body.utf8))
        #expect(parsed == [
            Assignment(experiment: "e1", arm: "thumbnail", strategy: "thumbnail", probability: 0.5),
            Assignment(experiment: "e2", arm: "b", strategy: "hologram"),
        ])
        #expect(parsed?.map(\.attachmentStrategy) == [.thumbnail, nil])
        #expect(AssignmentsDocument.parse(Data("[]".utf8)) == nil)
        let batch = #"{"assignments":[{"device_id":"d1","experiment":"e1","arm":"a","strategy":"full","probability":0.5},{"experiment":"e1","arm":"a"}]}"#
        let entries = AssignmentsDocument.parseBatch(Data(batch.utf8))
        #expect(entries?.map(\.0) == ["d1"])
        #expect(entries?.first?.1 == Assignment(experiment: "e1", arm: "a", strategy: "full", probability: 0.5))
        #expect(AssignmentsDocument.batchRequest(deviceIDs: ["a", "b\"c"], category: "new_photo")
                == #"{"device_ids":["a","b\"c"],"category":"new_photo"}"#)
    }

    /// The sender writes the payload from an assignment; the extension and the app read back
    /// the same arm and strategy, and ignore what they do not know.
    @Test func pushPayloadRoundTrips() throws {
        let assignment = Assignment(experiment: "thumbnail-vs-full", arm: "thumbnail", strategy: "thumbnail", probability: 0.5)
        let media = [PushPayload.Media(variant: "original", url: URL(string: "https://cdn.example.com/p/1.jpg")!, kind: .image, bytes: 2_483_112),
                     PushPayload.Media(variant: "thumbnail", url: URL(string: "https://cdn.example.com/p/1-small.jpg")!)]
        let sent = PushPayload(notificationID: "n-1", assignment: assignment, media: media)
        #expect(sent.json == #"{"notification_id":"n-1","experiment":"thumbnail-vs-full","arm":"thumbnail","strategy":"thumbnail","probability":0.5,"#
            + #""media":[{"variant":"original","url":"https://cdn.example.com/p/1.jpg","kind":"image","bytes":2483112},"#
            + #"{"variant":"thumbnail","url":"https://cdn.example.com/p/1-small.jpg"}]}"#)
        var fragment = try #require(try JSONSerialization.jsonObject(with: Data(sent.json.utf8)) as? [String: Any])
        fragment["unknown"] = ["x": 1]
        var userInfo: [AnyHashable: Any] = ["aps": ["mutable-content": 1], PushPayload.key: fragment]
        let received = PushPayload(userInfo: userInfo)
        #expect(received == sent)
        #expect(received.experiment == assignment.experimentArm)
        #expect(received.attachmentStrategy == .thumbnail)

        userInfo[PushPayload.key] = ["experiment": "e", "probability": 2, "media": [["variant": "x", "url": "not a url"], 7]]
        #expect(PushPayload(userInfo: userInfo) == PushPayload())
        #expect(PushPayload(userInfo: [:]) == PushPayload())
        let plain = PushPayload(notificationID: "n-2", assignment: nil, strategy: .poster, media: [])
        #expect(plain.experiment == nil)
        #expect(plain.strategy == "poster")
    }

    /// An extension that changes the content's category (`prepareRichContent`) must not move the
    /// app's events of the notification to another category than the extension's `delivered`:
    /// both read the category the push was sent with. A push sent without one is `uncategorized`
    /// on both sides (the extension sees an empty category, the app the one the extension gave);
    /// a local notification has the content's, and none is ever empty (the server refuses that).
    @Test func eventsTakeTheCategoryThePushWasSentWith() {
        let sent: [AnyHashable: Any] = ["aps": ["mutable-content": 1, "category": "new_photo"]]
        #expect(PushPayload.category(userInfo: sent, shown: "new_photo") == "new_photo")
        #expect(PushPayload.category(userInfo: sent, shown: "new_photo_rich") == "new_photo")
        let without: [AnyHashable: Any] = ["aps": ["mutable-content": 1, "alert": "hi"]]
        #expect(PushPayload.category(userInfo: without, shown: "") == "uncategorized", "in the extension")
        #expect(PushPayload.category(userInfo: without, shown: "photo_preview") == "uncategorized", "in the app")
        #expect(PushPayload.category(userInfo: ["aps": ["category": ""]], shown: "local") == "uncategorized")
        #expect(PushPayload.category(userInfo: ["aps": ["category": 7]], shown: "local") == "uncategorized")
        #expect(PushPayload.category(userInfo: [:], shown: "reminder") == "reminder")
        #expect(PushPayload.category(userInfo: [:], shown: "") == "uncategorized")
    }

    /// Reference values from Python's `uuid.uuid5` (RFC 9562's algorithm): the DNS namespace
    /// example, and engage's namespace with an event name.
    @Test func nameBasedUUIDsMatchTheReference() {
        let dns = UUID(uuidString: "6ba7b810-9dad-11d1-80b4-00c04fd430c8")!
        #expect(UUID.nameBased("python.org", namespace: dns) == UUID(uuidString: "886313e1-3b8a-5372-9b90-0c9aee199e5d"))
        #expect(UUID.nameBased("", namespace: dns) == UUID(uuidString: "4ebd0208-8328-5d69-8c44-ec50939c0967"))
        #expect(EngageEvent.onceID(deviceID: "dev-1", notificationID: "n-1", type: "displayed")
                == UUID(uuidString: Self.referenceDisplayedID))
        #expect(EngageEvent.onceID(deviceID: "dev-1", notificationID: "n-1", type: "action", detail: "like")
                == UUID(uuidString: Self.referenceLikeID))
        // 200 bytes of name, over three SHA-1 blocks.
        #expect(UUID.nameBased(String(repeating: "ü", count: 100), namespace: dns) == UUID(uuidString: Self.referenceLongID))
        #expect(EngageEvent.onceID(deviceID: "dev-1", notificationID: "n-1", type: "action", detail: "like")
                != EngageEvent.onceID(deviceID: "dev-1", notificationID: "n-1", type: "action", detail: "reply"))
    }

    /// With a queue's name, the name begins `engage-queue-event-v1` and the queue's name
    /// (Python's `uuid.uuid5` of those lines); two apps' queues give two ids.
    @Test func aNamedQueueGivesItsOwnOnceIDs() {
        #expect(EngageEvent.onceID(deviceID: "dev-1", notificationID: "n-1", type: "displayed", queueName: "com.example.photos")
                == UUID(uuidString: "71a54afc-061e-5bee-8c32-6edf72433755"))
        #expect(EngageEvent.onceID(deviceID: "dev-1", notificationID: "n-1", type: "action", detail: "like",
                                   queueName: "com.example.photos")
                == UUID(uuidString: "455472bf-da7d-5332-8882-cecfc18e3b00"))
        #expect(EngageEvent.onceID(deviceID: "dev-1", notificationID: "n-1", type: "displayed", queueName: "com.example.notes")
                != EngageEvent.onceID(deviceID: "dev-1", notificationID: "n-1", type: "displayed", queueName: "com.example.photos"))
    }

    static let referenceDisplayedID = "10c713dc-aa65-5773-b3d1-d53791e87e70"
    static let referenceLikeID = "3c5f1013-0cef-5f35-8701-60ac5da7927e"
    static let referenceLongID = "03cd28bd-ea54-5c3d-bd4c-110e254c314f"

    @Test func timestampsParseBack() {
        for seconds in [0.0, 1_764_443_783.12, 951_782_400.999, -86_400.5, 4_102_444_800.001] {
            let date = Date(timeIntervalSince1970: seconds)
            let parsed = Timestamp.parse(Timestamp.rfc3339(date))
            #expect(parsed.map { abs($0.timeIntervalSince1970 - seconds) < 0.0006 } == true, "\(seconds)")
        }
        #expect(Timestamp.parse("2026-11-29T19:16:23Z") == Date(timeIntervalSince1970: 1_795_979_783))
        #expect(Timestamp.parse("2026-11-29T19:16:23+01:00") == nil)
        #expect(Timestamp.parse("2026-13-29T19:16:23.000Z") == nil)
        #expect(Timestamp.parse("yesterday") == nil)
        // A damaged queue line's fraction: up to 18 digits are read, more are refused, none traps.
        #expect(Timestamp.parse("2026-11-29T19:16:23.123456789012345678Z") == Date(timeIntervalSince1970: 1_795_979_783.123_456_789))
        #expect(Timestamp.parse("2026-11-29T19:16:23." + String(repeating: "9", count: 19) + "Z") == nil)
        #expect(Timestamp.parse("2026-11-29T19:16:23." + String(repeating: "9", count: 40) + "Z") == nil)
    }
}

@Suite("Gzip encoder")
struct GzipTests {
    /// Decompresses with the system's gzip, an implementation independent of this one.
    static func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gzip")
        process.arguments = ["-dc"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(bytes))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return Array(data)
    }

    @Test func crc32KnownValues() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([]) == 0)
    }

    @Test(arguments: [0, 1, 2, 3, 100, 5000, 70_000])
    func roundTripsThroughSystemGzip(size: Int) throws {
        var generator = SplitMix64(seed: UInt64(size))
        let events = (0..<(size / 300 + 1)).map { index in
            EncodingTests.event(.displayed(presentation: index % 2 == 0 ? .rich : .plain, attachmentKind: .image)).json
        }
        // JSON (repetitive), then noise (incompressible), then a long run (maximal matches).
        var input = Array(events.joined(separator: ",").utf8.prefix(size / 2))
        input += (0..<(size / 4)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        input += [UInt8](repeating: 0x61, count: size - input.count)
        let compressed = Gzip.compress(input)
        #expect(try Self.gunzip(compressed) == input)
    }

    @Test func eventBatchesShrink() {
        let batch = (0..<50).map { _ in
            EngageEvent(notificationID: UUID().uuidString, deviceID: "dev-7c41a9e2", category: "new_photo",
                        body: .displayed(presentation: .rich, attachmentKind: .image)).json
        }.joined(separator: ",")
        let compressed = Gzip.compress(Array(batch.utf8))
        #expect(compressed.count * 3 < batch.utf8.count)
    }
}
