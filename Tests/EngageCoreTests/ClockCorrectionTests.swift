import EngageCore
import Foundation
import Testing

@Suite("Clock correction: a device clock running ahead")
struct ClockCorrectionTests {
    static let now = Timestamp(rfc3339: "2026-12-05T22:00:00Z")!

    static func sent(aheadBy seconds: Int64) -> Timestamp {
        now.adding(microseconds: seconds * 1_000_000)
    }

    /// Seconds the device's clock is ahead, and seconds its events move.
    static let cases: [(ahead: Int64, moved: Int64)] = [
        (0, 0), (60, 0), (-3_600, 0), (-86_400, 0),
        (61, -61), (7_200, -7_200), (12 * 3_600, -12 * 3_600),
        (12 * 3_600 + 1, 0), (40 * 86_400, 0),
    ]

    @Test func onlyAClockAheadByMoreThanAMinuteAndAtMostHalfADayIsCorrected() {
        for (ahead, moved) in Self.cases {
            #expect(ClockCorrection(sentAt: Self.sent(aheadBy: ahead), receivedAt: Self.now).microseconds == moved * 1_000_000, "\(ahead) s ahead")
        }
    }

    @Test func theHeaderIsReadOrRefused() {
        #expect(ClockCorrection.requested(by: nil, receivedAt: Self.now) == ClockCorrection.none)
        #expect(ClockCorrection.requested(by: "2026-12-06T00:00:00.5+00:00", receivedAt: Self.now)?.microseconds == -7_200_500_000)
        #expect(ClockCorrection.requested(by: "2026-12-06T02:00:00+02:00", receivedAt: Self.now)?.microseconds == -7_200_000_000)
        for bad in ["", "tomorrow", "2026-12-06T00:00:00", "2026-12-06 00:00:00Z", "2026-13-06T00:00:00Z"] {
            #expect(ClockCorrection.requested(by: bad, receivedAt: Self.now) == nil, "\(bad)")
        }
    }

    static func displayed(at time: String, id: String = "0192f5a0-0000-7000-8000-000000000001") -> [UInt8] {
        Array(#"[{"event_id":"\#(id)","type":"displayed","notification_id":"n1","device_id":"d1","category":"c","occurred_at":"\#(time)","presentation":"plain","attachment_kind":"none"}]"#.utf8)
    }

    /// The events' times move back by the correction, and only then is the window checked.
    @Test func aBatchIsMovedBeforeItsWindowIsChecked() throws {
        let correction = ClockCorrection(sentAt: Self.sent(aheadBy: 7_200), receivedAt: Self.now)
        let body = Self.displayed(at: "2026-12-06T00:00:00Z")
        let uncorrected = try decodeBatch(body, format: .json, now: Self.now)
        #expect(uncorrected.events.isEmpty)
        #expect(uncorrected.rejected == [Rejection(index: 0, field: "occurred_at", problem: "is 2 hours in the future; the limit is 10 minutes")])

        for format in [BodyFormat.json, .ndjson] {
            let text = format == .json ? body : Array(String(decoding: body.dropFirst().dropLast(), as: UTF8.self).utf8)
            let corrected = try decodeBatch(text, format: format, now: Self.now, correction: correction)
            #expect(corrected.rejected.isEmpty)
            #expect(corrected.events.map(\.occurredAt) == [Self.now])
        }

        let ahead = try decodeBatch(Self.displayed(at: "2026-12-06T03:30:00Z"), format: .json, now: Self.now, correction: correction)
        #expect(ahead.rejected == [Rejection(index: 0, field: "occurred_at", problem:
            "is 3 hours in the future (after moving it back 2 hours, the device clock's error that Engage-Sent-At showed); the limit is 10 minutes")])
        // A time that could be right is not moved, so a correction never makes an event too old.
        let old = try decodeBatch(Self.displayed(at: "2026-11-05T21:00:00Z"), format: .json, now: Self.now, correction: correction)
        #expect(old.rejected == [Rejection(index: 0, field: "occurred_at", problem: "is 30 days in the past; the limit is 30 days")])
        let recent = try decodeBatch(Self.displayed(at: "2026-11-05T23:00:00Z"), format: .json, now: Self.now, correction: correction)
        #expect(recent.events.map(\.occurredAt) == [Timestamp(rfc3339: "2026-11-05T23:00:00Z")!])
    }

    /// Only a time more than the tolerance ahead of the server's clock cannot be right: it alone moves.
    @Test func onlyATimeAheadOfTheServersClockMoves() {
        let correction = ClockCorrection(sentAt: Self.sent(aheadBy: 7_200), receivedAt: Self.now)
        for (ahead, moved) in [(Int64(-86_400), Int64(0)), (0, 0), (60, 0), (61, -7_200), (3_600, -7_200), (7_200, -7_200), (9_000, -7_200)] {
            let recorded = Self.sent(aheadBy: ahead)
            #expect(correction.applied(to: recorded, now: Self.now) == recorded.adding(microseconds: moved * 1_000_000), "\(ahead) s ahead")
            #expect(ClockCorrection.none.applied(to: recorded, now: Self.now) == recorded)
        }
    }

    /// Seconds the device's clock is off, and seconds its events on the sending clock move: either
    /// way, by the whole error, within the same bounds.
    static let sendingClockCases: [(ahead: Int64, moved: Int64)] = [
        (0, 0), (60, 0), (-60, 0), (61, -61), (-61, 61), (7_200, -7_200), (-7_200, 7_200),
        (12 * 3_600, -12 * 3_600), (-12 * 3_600, 12 * 3_600), (12 * 3_600 + 1, 0), (-12 * 3_600 - 1, 0), (-40 * 86_400, 0),
    ]

    @Test func anEventOnTheSendingClockMovesByTheWholeErrorEitherWay() {
        for (ahead, moved) in Self.sendingClockCases {
            let correction = ClockCorrection(sentAt: Self.sent(aheadBy: ahead), receivedAt: Self.now)
            #expect(correction.sendingClockMicroseconds == moved * 1_000_000, "\(ahead) s ahead")
            // Wherever the time lies: three hours ago, now, or ahead.
            for offset in [Int64(-10_800), 0, 3_600] {
                let recorded = Self.sent(aheadBy: offset)
                #expect(correction.applied(to: recorded, now: Self.now, onSendingClock: true) == recorded.adding(microseconds: moved * 1_000_000),
                        "\(ahead) s ahead, recorded \(offset) s from now")
            }
        }
        // On the recording clock, a clock behind still moves nothing, and a time that could be right stays.
        let behind = ClockCorrection(sentAt: Self.sent(aheadBy: -7_200), receivedAt: Self.now)
        #expect(behind.applied(to: Self.sent(aheadBy: 3_600), now: Self.now) == Self.sent(aheadBy: 3_600))
        let ahead = ClockCorrection(sentAt: Self.sent(aheadBy: 7_200), receivedAt: Self.now)
        #expect(ahead.applied(to: Self.sent(aheadBy: -10_800), now: Self.now) == Self.sent(aheadBy: -10_800))
    }

    @Test func theOccurredAtClockHeaderIsReadOrRefused() {
        #expect(ClockCorrection.eventsOnSendingClock(header: nil) == .noEvent)
        #expect(ClockCorrection.eventsOnSendingClock(header: "recording") == .noEvent)
        #expect(ClockCorrection.eventsOnSendingClock(header: "sending") == .everyEvent(except: []))
        #expect(ClockCorrection.eventsOnSendingClock(header: " Sending ; EXCEPT=0, 3,3 ") == .everyEvent(except: [0, 3]))
        for bad in ["", "send", "recording; except=1", "sending;", "sending; except=", "sending; except=1,", "sending; except=a",
                    "sending; except=-1", "sending; except=+1", "sending; except=12345678", "sending; only=1", "sending, recording"] {
            #expect(ClockCorrection.eventsOnSendingClock(header: bad) == nil, "\(bad)")
        }
    }

    /// The header picks each event's clock by its index in the request, in both body formats.
    @Test func eachEventOfABatchIsMovedOnItsOwnClock() throws {
        // A clock two hours behind; both events read 30 minutes ahead of the server's clock.
        let correction = ClockCorrection(sentAt: Self.sent(aheadBy: -7_200), receivedAt: Self.now)
            .with(eventsOnSendingClock: .everyEvent(except: [1]))
        #expect(correction.movesTimes)
        #expect(!ClockCorrection(sentAt: Self.sent(aheadBy: -7_200), receivedAt: Self.now).movesTimes)
        let line0 = Self.displayed(at: "2026-12-05T22:30:00Z", id: "0192f5a0-0000-7000-8000-000000000001").dropFirst().dropLast()
        let line1 = Self.displayed(at: "2026-12-05T22:30:00Z", id: "0192f5a0-0000-7000-8000-000000000002").dropFirst().dropLast()
        let bodies: [(BodyFormat, [UInt8])] = [(.json, [UInt8(ascii: "[")] + line0 + [UInt8(ascii: ",")] + line1 + [UInt8(ascii: "]")]),
                                               (.ndjson, Array(line0) + [0x0A] + Array(line1))]
        for (format, body) in bodies {
            let batch = try decodeBatch(body, format: format, now: Self.now, correction: correction)
            #expect(batch.events.isEmpty)
            #expect(batch.rejected == [
                Rejection(index: 0, field: "occurred_at", problem:
                    "is 2 hours in the future (after moving it forward 2 hours, the device clock's error that Engage-Sent-At showed); the limit is 10 minutes"),
                Rejection(index: 1, field: "occurred_at", problem: "is 30 minutes in the future; the limit is 10 minutes"),
            ], "\(format)")
        }
        // Recorded just now by that clock: the event on the sending clock lands at the server's time.
        let recent = Self.displayed(at: "2026-12-05T20:00:00Z")
        let moved = try decodeBatch(recent, format: .json, now: Self.now, correction: correction.with(eventsOnSendingClock: .everyEvent(except: [])))
        #expect(moved.events.map(\.occurredAt) == [Self.now])
        let kept = try decodeBatch(recent, format: .json, now: Self.now, correction: correction.with(eventsOnSendingClock: .noEvent))
        #expect(kept.events.map(\.occurredAt) == [Timestamp(rfc3339: "2026-12-05T20:00:00Z")!])
    }
}
