import Foundation
import Testing
@testable import EngageClient

/// What the queue keeps beside an event whose time the client read, and how a send puts that time
/// on the clock it sends with (no server: the lines and the header).
@Suite("EngageClient: the recording clock")
struct RecordingClockTests {
    static let boot = "5c1d0e1f-2a3b-4c5d-8e9f-0a1b2c3d4e5f"
    static let event = #"{"event_id":"0192f5a0-0000-7000-8000-000000000001","type":"expanded","notification_id":"n1","device_id":"d1","category":"c","occurred_at":"2026-12-06T10:00:00.250Z","properties":{"occurred_at":"x"}}"#

    static func clock(_ offsetMS: Int64, boot: String = boot) -> RecordingClock {
        RecordingClock(bootID: boot, offsetMS: offsetMS)
    }

    @Test func aStampedLineSplitsBackIntoTheEventAndItsClock() {
        let line = Self.clock(-1_700_000_000_123).stamp(Self.event)
        #expect(line.hasSuffix(#","engage_recording_clock":"\#(Self.boot)/-1700000000123"}"#))
        let (event, clock) = RecordingClock.split(line)
        #expect(event == Self.event)
        #expect(clock == Self.clock(-1_700_000_000_123))
        // A line without one (recorded by an earlier version, or given its time by the app) is left whole.
        #expect(RecordingClock.split(Self.event) == (Self.event, nil))
        for damaged in [#"{"a":1,"engage_recording_clock":"x y/1"}"#, #"{"a":1,"engage_recording_clock":"b/one"}"#,
                        #"{"a":1,"engage_recording_clock":"b/1/2"}"#] {
            #expect(RecordingClock.split(damaged) == (damaged, nil), "\(damaged)")
        }
    }

    @Test func theClockIsReadFromTheWallAndTheTimeSinceBoot() {
        let boot = BootClock(bootID: { Self.boot }, sinceBoot: { 1_000.5 })
        #expect(RecordingClock(wall: Date(timeIntervalSince1970: 1_800_000_000), boot: boot) == Self.clock(1_799_998_999_500))
        #expect(RecordingClock(wall: Date(), boot: BootClock(bootID: { nil }, sinceBoot: { 1 })) == nil)
        #expect(RecordingClock(wall: Date(), boot: BootClock(bootID: { "a b" }, sinceBoot: { 1 })) == nil)
        // This machine's own: the same boot, and no more than the time between the two reads apart.
        let first = RecordingClock(wall: Date(), boot: .system)
        let second = RecordingClock(wall: Date(), boot: .system)
        #expect(first != nil && first?.bootID == second?.bootID)
        #expect(abs((second?.offsetMS ?? 0) - (first?.offsetMS ?? .max)) < 1000)
    }

    /// The event moves by how far the clock was set, onto the sending clock; `occurred_at` in its
    /// properties stays as it is.
    @Test func aSendMovesTheTimeByHowFarTheClockWasSet() {
        let recorded = Self.clock(5_000_000)
        let back = EventsAsSent([recorded.stamp(Self.event)], now: Self.clock(5_000_000 - 7_200_000))
        #expect(back.lines == [Self.event.replacingOccurrences(of: "10:00:00.250Z", with: "08:00:00.250Z")])
        #expect(back.header == "sending")
        let forward = EventsAsSent([recorded.stamp(Self.event)], now: Self.clock(5_000_000 + 43_200_000))
        #expect(forward.lines == [Self.event.replacingOccurrences(of: "2026-12-06T10:00:00.250Z", with: "2026-12-06T22:00:00.250Z")])
        // Less than a second: on the sending clock as it is.
        let still = EventsAsSent([recorded.stamp(Self.event)], now: Self.clock(5_000_999))
        #expect(still.lines == [Self.event] && still.header == "sending")
    }

    /// Another boot, a clock set by more than half a day, no clock now, or a line without one: the
    /// event goes as recorded, without what the queue kept, and the header names it.
    @Test func whatCannotBeMovedGoesAsRecordedAndTheHeaderSaysWhich() {
        let recorded = Self.clock(5_000_000)
        let lines = [recorded.stamp(Self.event), Self.event, Self.clock(5_000_000, boot: "other").stamp(Self.event),
                     Self.clock(5_000_000 - 43_200_001).stamp(Self.event), recorded.stamp(Self.event)]
        let sent = EventsAsSent(lines, now: Self.clock(5_000_000 + 60_000))
        let moved = Self.event.replacingOccurrences(of: "10:00:00.250Z", with: "10:01:00.250Z")
        #expect(sent.lines == [moved, Self.event, Self.event, Self.event, moved])
        #expect(sent.onRecordingClock == [1, 2, 3])
        #expect(sent.header == "sending; except=1,2,3")
        let unread = EventsAsSent(lines, now: nil)
        #expect(unread.lines == Array(repeating: Self.event, count: 5))
        #expect(unread.header == nil)
        // A time beyond what RFC 3339 can write is not moved there.
        let late = #"{"event_id":"e","occurred_at":"9999-12-31T23:00:00.000Z"}"#
        #expect(EventsAsSent([recorded.stamp(late)], now: Self.clock(5_000_000 + 7_200_000)).lines == [late])
    }
}
