import EngageCore
import EventStore
import Synchronization

/// A reader tailing the log as the projector does, `batch` events at a time from `start`, while
/// writers append: what a test of gapless reading compares with the log afterwards. It stops at
/// the first empty read begun after `finish()` (call it once every write it must see is
/// visible to it); it records any event read twice and any step back in log order.
public final class LogTail: Sendable {
    public struct Outcome: Sendable {
        /// The events read, in the order read, by position.
        public var events: [LogPosition: EventID] = [:]
        public var order: [LogPosition] = []
        /// Positions read more than once.
        public var repeated: [LogPosition] = []
        public var isInLogOrder: Bool { order == order.sorted() }
    }

    private let finished = Atomic(false)

    public init() {}

    /// Everything the reader needs has become visible to it.
    public func finish() { finished.store(true, ordering: .releasing) }

    /// Reads until finished; `keep` chooses the events recorded (all by default).
    public func run(_ store: EventStore, from start: LogPosition = .start, batch: Int = 37,
                    keep: (StoredEvent) -> Bool = { _ in true }) async throws -> Outcome {
        var outcome = Outcome()
        var position = start
        while true {
            // Looked at before the read: a read begun after `finish()` that finds nothing is the end.
            let done = finished.load(ordering: .acquiring)
            let events = try await store.read(after: position, limit: batch)
            if events.isEmpty {
                if done { return outcome }
                try await Task.sleep(for: .milliseconds(5))
                continue
            }
            for event in events where keep(event) {
                if outcome.events[event.position] != nil { outcome.repeated.append(event.position) }
                outcome.events[event.position] = event.eventID
                outcome.order.append(event.position)
            }
            position = events.last!.position
        }
    }
}
