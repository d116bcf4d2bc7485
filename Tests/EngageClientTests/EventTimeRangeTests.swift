import Foundation
import Testing
@testable import EngageClient

/// A time the app passes that no RFC 3339 timestamp can carry (beyond the years 0000-9999, or not
/// finite) is refused when recorded, with the field named; nothing traps and nothing is queued.
@Suite("EngageClient: times outside the writable years")
struct EventTimeRangeTests {
    /// Seconds since 1970 (a `Date` argument would be described with Foundation's
    /// `Date.description`, which traps on some of these).
    @Test(arguments: [1e13, -1e13, .infinity, -.infinity, .nan, 253_402_300_800, -62_167_219_200.001])
    func recordingRefusesTheEventAndQueuesNothing(secondsSince1970: Double) throws {
        let date = Date(timeIntervalSince1970: secondsSince1970)
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: 9, key: "unused")

        let error = #expect(throws: EventFieldError.self) {
            try client.recordDisplayed(notificationID: "n1", category: "new_photo", presentation: .rich, attachmentKind: .image,
                                       occurredAt: date)
        }
        #expect(error?.field == "occurred_at")
        #expect(throws: EventFieldError.self) {
            try client.record(EngageEvent(notificationID: "n2", deviceID: "dev-test-1", category: "new_photo", occurredAt: date,
                                          body: .expanded))
        }
        #expect(client.pending == (0, 0, 0))
        // The first and last instants that can be written are recorded.
        for (notification, seconds) in [("n3", -62_167_219_200), ("n4", 253_402_300_799.999)] {
            try client.recordDisplayed(notificationID: notification, category: "new_photo", presentation: .plain, attachmentKind: .none,
                                       occurredAt: Date(timeIntervalSince1970: seconds))
        }
        #expect(client.pending.events == 2)
    }

    @Test func anEventsWireFormWritesTheNearestWritableTime() {
        #expect(Timestamp.rfc3339(Date(timeIntervalSince1970: 1e13)) == "9999-12-31T23:59:59.999Z")
        #expect(Timestamp.rfc3339(Date(timeIntervalSince1970: .infinity)) == "9999-12-31T23:59:59.999Z")
        #expect(Timestamp.rfc3339(Date(timeIntervalSince1970: 253_402_300_799.9996)) == "9999-12-31T23:59:59.999Z")
        #expect(Timestamp.rfc3339(Date(timeIntervalSince1970: -1e13)) == "0000-01-01T00:00:00.000Z")
        #expect(Timestamp.rfc3339(Date(timeIntervalSince1970: .nan)) == "0000-01-01T00:00:00.000Z")
        #expect(Timestamp.rfc3339(Date(timeIntervalSince1970: -62_167_219_200)) == "0000-01-01T00:00:00.000Z")
    }
}
