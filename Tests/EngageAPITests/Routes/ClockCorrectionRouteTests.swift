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

    /// Events on the sending clock (`Engage-Occurred-At-Clock`) move by the clock's whole error,
    /// here a clock behind, and the others only when they cannot be right.
    @Test func theOccurredAtClockHeaderPicksEachEventsClock() async throws {
        try await IngestRouteTests.withServer(cached: true) { server in
            let key = server.keys.issue(app: "app-1")
            // Both read 45.5 minutes ahead of the server's clock, sent by a clock 2.5 hours behind
            // (the figures keep clear of whole units: the header's time has whole seconds).
            let events = [WireEvent.displayed(age: -2730), WireEvent.displayed(age: -2730)]
            let headers = [(ClockCorrection.header, Self.sentAt(aheadBy: -9000)), (ClockCorrection.clockHeader, "sending; except=1")]
            try expectProblem(try await server.post(events.array, key: key, extraHeaders: headers), Problem(
                "no-valid-events", status: 400, title: "No event in the request is valid",
                detail: "2 event(s) rejected; see rejected",
                rejected: [RejectedEvent(0, "occurred_at", "is 3 hours in the future (after moving it forward 2 hours, "
                               + "the device clock's error that Engage-Sent-At showed); the limit is 10 minutes"),
                           RejectedEvent(1, "occurred_at", "is 45 minutes in the future; the limit is 10 minutes")]))
            // Recorded just now by that clock, on the sending clock: accepted, as it is without the header.
            try expectAccepted(try await server.post([WireEvent.displayed(age: 9000)].array, key: key, extraHeaders: headers),
                               Acceptance(accepted: 1))
            let metrics = try await server.request("GET", "/metrics")
            #expect(metrics.text.contains("engage_ingest_clock_corrected_requests_total 2"), "\(metrics.text)")
        }
    }

    @Test func anOccurredAtClockThatIsNotOneIsRefusedNamingTheHeader() async throws {
        try await IngestRouteTests.withServer(cached: true) { server in
            let key = server.keys.issue(app: "app-1")
            for value in ["sent", "sending; except=first", "sending; except=1,,2"] {
                try expectProblem(try await server.post(WireEvent.valid(1).array, key: key, extraHeaders: [(ClockCorrection.clockHeader, value)]),
                                  .badRequest("bad-occurred-at-clock", "Engage-Occurred-At-Clock must be recording, sending, or sending; except= "
                                      + "and the indices of the events on the recording clock (such as sending; except=0,3)"))
            }
            #expect(server.events.storedIDs.isEmpty)
        }
    }
}

