import EngageCore
import Foundation
import Testing
import TestSupport

/// A device whose clock runs ahead says so (`Engage-Sent-At`); its events are moved back rather
/// than rejected as in the future. With no database: what the route answers.
@Suite("POST /v1/events: a device clock running ahead")
struct ClockCorrectionRouteTests {
    static func sentAt(aheadBy seconds: TimeInterval) -> String {
        ISO8601DateFormatter().string(from: Date().addingTimeInterval(seconds))
    }

    @Test func eventsOfAClockTwoHoursAheadAreAcceptedWhenItSaysSo() async throws {
        try await IngestRouteTests.withServer(cached: true) { server in
            let key = server.keys.issue(app: "app-1")
            // Recorded just now by a clock two and a half hours ahead (the figures keep clear of
            // whole hours: the header's time has whole seconds).
            let event = WireEvent.displayed(age: -9000)
            try expectProblem(try await server.post([event].array, key: key), Problem(
                "no-valid-events", status: 400, title: "No event in the request is valid",
                detail: "1 event(s) rejected; see rejected",
                rejected: [RejectedEvent(0, "occurred_at", "is 2 hours in the future; the limit is 10 minutes")]))
            #expect(server.events.storedIDs.isEmpty)

            let sent = [(ClockCorrection.header, Self.sentAt(aheadBy: 9000))]
            try expectAccepted(try await server.post([event].array, key: key, extraHeaders: sent), Acceptance(accepted: 1))
            #expect(server.events.storedIDs == [EventID(event.id)])
            // Ahead of even that clock: still in the future once moved back, and said so.
            let further = WireEvent.displayed(age: -20_700)
            try expectProblem(try await server.post([further].array, key: key, extraHeaders: sent), Problem(
                "no-valid-events", status: 400, title: "No event in the request is valid",
                detail: "1 event(s) rejected; see rejected",
                rejected: [RejectedEvent(0, "occurred_at", "is 3 hours in the future (after moving it back 2 hours, "
                    + "the device clock's error that Engage-Sent-At showed); the limit is 10 minutes")]))
            let metrics = try await server.request("GET", "/metrics")
            #expect(metrics.text.contains("engage_ingest_clock_corrected_requests_total 2"), "\(metrics.text)")
        }
    }

    @Test func aSentAtThatIsNotATimeIsRefusedNamingTheHeader() async throws {
        try await IngestRouteTests.withServer(cached: true) { server in
            let key = server.keys.issue(app: "app-1")
            for value in ["yesterday", "2026-12-05 22:40:00", "2026-12-05T22:40:00", "2026-12-05T25:40:00Z"] {
                try expectProblem(try await server.post(WireEvent.valid(1).array, key: key, extraHeaders: [(ClockCorrection.header, value)]),
                                  .badRequest("bad-sent-at", "Engage-Sent-At must be an RFC 3339 time with a zone, the device's clock "
                                      + "as it sent the request (such as 2026-12-05T22:40:00.120Z)"))
            }
            #expect(server.events.storedIDs.isEmpty)
        }
    }
}
