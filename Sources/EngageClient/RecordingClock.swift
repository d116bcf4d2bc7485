import Foundation

/// Where the wall clock stood against the time since boot when an event was recorded, kept in
/// the queue beside the event, so that a send can put the event's time on the clock it sends with.
///
/// `occurred_at` is the device's wall clock, which the user or the network may set between
/// recording and sending. The server measures only the clock it is sent with (`Engage-Sent-At`):
/// an event recorded while the clock ran two hours ahead and sent after it was put right looked
/// two hours in the future and was refused, and one recorded while it ran behind was filed early.
/// Within one boot, the time since boot tells how far the wall clock was set in between, so the
/// send moves the event by that much and says its time is on the sending clock
/// (`Engage-Occurred-At-Clock`); the server then undoes the sending clock's error for it.
///
/// Only the times the client reads itself are kept this way (the `record...` calls made without
/// `occurredAt`, and `recordDisplayedNow`): a time the app gives (a notification's date, read
/// when it arrived, or one from its server) may be on another clock.
struct RecordingClock: Sendable, Equatable {
    var bootID: String
    /// Wall clock less time since boot, in milliseconds.
    var offsetMS: Int64

    /// The queue line's member that holds it, last in the line; never sent.
    static let member = "engage_recording_clock"
    /// The client's copy of the server's `ClockCorrection.largest`: a clock set further is a clock
    /// set by hand to another day, whose events the server judges as recorded.
    static let largestMS: Int64 = 12 * 3_600_000
    /// A clock set by less is not worth moving a time for (it is still on the sending clock).
    static let smallestMoveMS: Int64 = 1000

    init(bootID: String, offsetMS: Int64) {
        self.bootID = bootID
        self.offsetMS = offsetMS
    }

    /// The clock at `wall`; nil when the boot has no id to compare.
    init?(wall: Date, boot: BootClock) {
        guard let id = boot.bootID(), Self.isValidBootID(id), let sinceBoot = boot.sinceBoot() else { return nil }
        let offset = (wall.timeIntervalSince1970 - sinceBoot) * 1000
        guard offset.isFinite, abs(offset) < 1e15 else { return nil }
        self.init(bootID: id, offsetMS: Int64(offset.rounded()))
    }

    static func isValidBootID(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D
        }
    }

    /// The queue line of `eventJSON` (an object) with this clock as its last member.
    func stamp(_ eventJSON: String) -> String {
        guard eventJSON.hasSuffix("}") else { return eventJSON }
        return String(eventJSON.dropLast()) + ",\"\(Self.member)\":\"\(bootID)/\(offsetMS)\"}"
    }

    /// A queue line split into the event's JSON and the clock it was stamped with, if any.
    static func split(_ line: String) -> (event: String, clock: RecordingClock?) {
        let marker = ",\"\(member)\":\""
        guard line.hasSuffix("\"}"), let start = line.range(of: marker, options: .backwards) else { return (line, nil) }
        let value = line[start.upperBound..<line.index(line.endIndex, offsetBy: -2)]
        let parts = value.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, isValidBootID(String(parts[0])), let offset = Int64(parts[1]) else { return (line, nil) }
        return (String(line[..<start.lowerBound]) + "}", RecordingClock(bootID: String(parts[0]), offsetMS: offset))
    }
}
