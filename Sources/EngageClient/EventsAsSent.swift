import Foundation

/// A request's events as sent: each on the sending clock where its queue line says how the clock
/// moved since, else as recorded.
struct EventsAsSent: Equatable {
    var lines: [String] = []
    /// Indices of the events left on the recording clock.
    var onRecordingClock: [Int] = []

    /// `Engage-Occurred-At-Clock`'s value; nil when no event is on the sending clock.
    var header: String? {
        guard onRecordingClock.count < lines.count else { return nil }
        return onRecordingClock.isEmpty ? "sending" : "sending; except=" + onRecordingClock.map(String.init).joined(separator: ",")
    }

    /// `now` is the clock as the request is sent; nil when it cannot be read (nothing moves).
    init(_ queued: [String], now: RecordingClock?) {
        for (index, line) in queued.enumerated() {
            let (event, recorded) = RecordingClock.split(line)
            if let recorded, let now, let moved = Self.moved(event, from: recorded, to: now) {
                lines.append(moved)
            } else {
                lines.append(event)
                onRecordingClock.append(index)
            }
        }
    }

    /// The event with its time on the clock `now`, or nil: another boot, a clock set by more than
    /// half a day, or a time the client cannot read or write.
    static func moved(_ event: String, from recorded: RecordingClock, to now: RecordingClock) -> String? {
        guard recorded.bootID == now.bootID else { return nil }
        let (change, overflow) = now.offsetMS.subtractingReportingOverflow(recorded.offsetMS)
        guard !overflow, abs(change) <= RecordingClock.largestMS else { return nil }
        if abs(change) < RecordingClock.smallestMoveMS { return event }
        // The client's own writer puts `occurred_at` among the first members, before any object
        // (EngageEvent.json), and a string value can only hold the quote escaped.
        let key = "\"occurred_at\":\""
        guard let start = event.range(of: key), let end = event[start.upperBound...].firstIndex(of: "\""),
              let time = Timestamp.parse(String(event[start.upperBound..<end]))
        else { return nil }
        let shifted = time.addingTimeInterval(Double(change) / 1000)
        guard EngageClient.writableYears.contains(shifted.timeIntervalSince1970) else { return nil }
        return String(event[..<start.upperBound]) + Timestamp.rfc3339(shifted) + String(event[end...])
    }
}
