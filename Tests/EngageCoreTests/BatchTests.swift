import Testing
@testable import EngageCore

private func decode(_ body: String, _ format: BodyFormat = .json,
                    limits: IngestLimits = IngestLimits()) -> Result<DecodedBatch, BatchError> {
    Result { () throws(BatchError) in try decodeBatch(Array(body.utf8), format: format, limits: limits, now: Fixture.now) }
}

/// The displayed fixture with another event ID.
private func displayed(_ n: Int) -> String {
    Fixture.displayed.replacingOccurrences(of: "70867728950e", with: "00000000000\(n)")
}

private func id(_ n: Int) -> EventID { EventID("0f8fad5b-d9cb-469f-a165-00000000000\(n)")! }

@Suite struct BatchTests {
    @Test func acceptsAnArrayAndAnEnvelope() throws {
        let array = "[" + Fixture.delivered + "," + Fixture.sent + "]"
        let expected = DecodedBatch(events: [Fixture.deliveredEvent], indices: [0], rejected: [],
                                    repeats: [RepeatedEvent(index: 1, event: 0)])
        #expect(decode(array) == .success(expected))
        #expect(decode(" {\"events\": " + array + "}\n") == .success(expected))
    }

    @Test func rejectsEventsIndividually() throws {
        let body = "[" + [displayed(1), "42", displayed(2).replacingOccurrences(of: "\"rich\"", with: "\"bold\""),
                          "[]", displayed(3), displayed(1)].joined(separator: ",") + "]"
        var first = Fixture.displayedEvent
        first.eventID = id(1)
        var third = Fixture.displayedEvent
        third.eventID = id(3)
        let expected = DecodedBatch(
            events: [first, third], indices: [0, 4],
            rejected: [
                Rejection(index: 1, field: nil, problem: "must be a JSON object"),
                Rejection(index: 2, field: "presentation", problem: "must be one of rich, plain"),
                Rejection(index: 3, field: nil, problem: "must be a JSON object"),
            ],
            repeats: [RepeatedEvent(index: 5, event: 0)])
        #expect(decode(body) == .success(expected))
    }

    @Test func aRejectedFirstCopyDoesNotShadowAValidSecond() {
        let bad = displayed(1).replacingOccurrences(of: "\"rich\"", with: "\"bold\"")
        guard case .success(let batch) = decode("[" + bad + "," + displayed(1) + "]") else {
            Issue.record("expected a batch")
            return
        }
        #expect(batch.indices == [1])
        #expect(batch.rejected.map(\.index) == [0])
        #expect(batch.duplicatesInRequest == 0)
    }

    @Test(arguments: [
        ("[1,", BatchError.malformed(JSONError(offset: 3, reason: "unexpected end of input"))),
        (#"[{"a":1,"a":2}]"#, .malformed(JSONError(offset: 8, reason: "duplicate key \"a\""))),
        ("", .malformed(JSONError(offset: 0, reason: "unexpected end of input"))),
        ("[]", .empty),
        (#"{"events":[]}"#, .empty),
        (#"{"events":[],"meta":1}"#, .wrongShape("unknown top-level key \"meta\"; expected only \"events\"")),
        (#"{"batch":[]}"#, .wrongShape("unknown top-level key \"batch\"; expected only \"events\"")),
        ("{}", .wrongShape("the object has no \"events\" array")),
        (#"{"events":{}}"#, .wrongShape("\"events\" must be an array")),
        ("\"events\"", .wrongShape("the body must be an array of events or an object with an \"events\" array")),
        ("[1,2,3]", .tooManyEvents(count: 3, limit: 2)),
    ])
    func wholeRequestErrors(_ body: String, _ error: BatchError) {
        var limits = IngestLimits()
        limits.maxEvents = 2
        #expect(decode(body, limits: limits) == .failure(error))
    }

    /// An event nested too deep is rejected alone in either JSON form, as in NDJSON, however deep
    /// an event within the size limit can be (the object form refused the whole request at 33).
    @Test(arguments: [32, 4_000], ["[%@]", #"{"events":[%@]}"#])
    func aDeepEventIsRejectedAlone(levels: Int, form: String) {
        let nested = String(repeating: #"{"a":"#, count: levels) + "1" + String(repeating: "}", count: levels)
        let deep = String(displayed(2).dropLast()) + #","properties":"# + nested + "}"
        let body = form.replacingOccurrences(of: "%@", with: displayed(1) + "," + deep)
        guard case .success(let batch) = decode(body) else {
            Issue.record("refused whole: \(decode(body))")
            return
        }
        #expect(batch.events.map(\.eventID) == [id(1)])
        let problem = levels == 32 ? "nesting deeper than 32 levels" : "event is \(deep.utf8.count) bytes; the limit is 8192"
        #expect(batch.rejected == [Rejection(index: 1, field: nil, problem: problem)])
    }

    @Test func hostileNestingFailsCleanly() {
        let body = String(repeating: "[", count: 10_000)
        #expect(decode(body) == .failure(.malformed(JSONError(offset: 4_098, reason: "nesting deeper than 4098 levels"))))
    }

    @Test func eventSizeLimitUsesTheEventText() {
        var limits = IngestLimits()
        limits.event.maxEventBytes = 200
        let size = Fixture.displayed.utf8.count
        #expect(decode("[" + Fixture.displayed + "]", limits: limits) == .success(DecodedBatch(
            rejected: [Rejection(index: 0, field: nil, problem: "event is \(size) bytes; the limit is 200")])))
    }

    @Test func ndjson() {
        let body = displayed(1) + "\r\n\n   \n" + "{\"event_id\": tru}\n" + "[1]\n" + displayed(1) + "\n"
            + displayed(2) + "\n" + Fixture.displayed.replacingOccurrences(of: "\"gif\"", with: "\"png\"")
        var first = Fixture.displayedEvent
        first.eventID = id(1)
        var second = Fixture.displayedEvent
        second.eventID = id(2)
        let expected = DecodedBatch(
            events: [first, second], indices: [0, 4],
            rejected: [
                Rejection(index: 1, field: nil, problem: "malformed JSON at byte 16 of the line: unexpected character '}'"),
                Rejection(index: 2, field: nil, problem: "must be a JSON object"),
                Rejection(index: 5, field: "attachment_kind", problem: "must be one of image, gif, video, audio, none"),
            ],
            repeats: [RepeatedEvent(index: 3, event: 0)])
        #expect(decode(body, .ndjson) == .success(expected))
    }

    /// A UTF-8 byte order mark before the body is ignored (it made a JSON body malformed, and the
    /// first line of NDJSON a rejected event).
    @Test(arguments: [BodyFormat.json, .ndjson])
    func aByteOrderMarkFirstIsIgnored(format: BodyFormat) {
        let body = format == .json ? "[" + displayed(1) + "," + displayed(2) + "]" : displayed(1) + "\n" + displayed(2) + "\n"
        guard case .success(let batch) = decode("\u{FEFF}" + body, format) else {
            Issue.record("refused: \(decode("\u{FEFF}" + body, format))")
            return
        }
        #expect(batch.events.map(\.eventID) == [id(1), id(2)] && batch.rejected.isEmpty)
    }

    /// Only one mark is a writer's: a body of marks (a gzip of a kilobyte inflates to a megabyte
    /// of them) is malformed, read once, never stripped mark by mark.
    @Test func aBodyOfByteOrderMarksIsMalformed() {
        let marks = String(repeating: "\u{FEFF}", count: 300_000)
        guard case .failure(.malformed) = decode(marks + "[]") else {
            Issue.record("not refused as malformed")
            return
        }
        guard case .success(let lines) = decode(marks + "\n" + displayed(1) + "\n", .ndjson) else {
            Issue.record("refused whole")
            return
        }
        #expect(lines.events.map(\.eventID) == [id(1)] && lines.rejected.map(\.index) == [0])
    }

    @Test func ndjsonWholeRequestErrors() {
        #expect(decode("", .ndjson) == .failure(.empty))
        #expect(decode("\n \r\n\t\n", .ndjson) == .failure(.empty))
        var limits = IngestLimits()
        limits.maxEvents = 1
        #expect(decode("{}\n{}\n", .ndjson, limits: limits) == .failure(.tooManyEvents(count: 2, limit: 1)))
    }

    @Test func ndjsonLineLimits() {
        var limits = IngestLimits()
        limits.event.maxEventBytes = 100
        limits.event.maxDepth = 2
        let long = "{\"pad\":\"" + String(repeating: "x", count: 100) + "\"}"
        let expected = DecodedBatch(rejected: [
            Rejection(index: 0, field: nil, problem: "event is 110 bytes; the limit is 100"),
            Rejection(index: 1, field: nil, problem: "nesting deeper than 2 levels"),
            Rejection(index: 2, field: nil, problem: "malformed JSON at byte 7 of the line: nesting deeper than 3 levels"),
        ])
        #expect(decode(long + "\n{\"a\":[[1]]}\n{\"a\":[[[1]]]}", .ndjson, limits: limits) == .success(expected))
    }

    @Test func rejectionEncodesAsJSON() throws {
        let data = try JSONEncoderShim.encode(Rejection(index: 3, field: "attachment.kind", problem: "is required"))
        #expect(data == #"{"field":"attachment.kind","index":3,"problem":"is required"}"#)
    }
}

import Foundation

private enum JSONEncoderShim {
    static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
