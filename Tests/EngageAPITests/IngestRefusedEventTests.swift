import EngageAPI
import Foundation
import HTTPServer
import Runtime
import Testing
import TestSupport

/// An event validation accepts and PostgreSQL refuses for its values (SQLSTATE class 22) is
/// rejected alone, in the 200 answer's `rejected`, and the rest of its request is stored: a
/// device resends a request that fails whole, oldest first, so one such event would hold back
/// every event recorded after it until the queue overflowed. The refusal comes from a test-only
/// trigger on this server's own database (`RefusingConstraint`). A constraint's refusal (class
/// 23) is the schema's, not the event's: that request fails whole and is kept by its device.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct IngestRefusedEventTests {
    static func refused(id: UUID = UUID()) -> WireEvent {
        WireEvent(id: id, json: #"{"event_id":"\#(id.uuidString.lowercased())","type":"expanded","notification_id":"apns-9","device_id":"d9","category":"\#(RefusingConstraint.category)","occurred_at":"\#(WireEvent.timestamp(ago: 0))"}"#)
    }

    static let problem = "not-storable: PostgreSQL refused this event (SQLSTATE 22003); "
        + "sent again it fails the same way: report it to the server's operators"

    @Test func oneRefusedEventAmongManyIsRejectedAloneAndTheRestStoredOnce() async throws {
        let server = try TestServer()
        try RefusingConstraint.add(to: server.database)
        let key = try await server.key()
        let valid = WireEvent.valid(7)
        let bad = Self.refused()
        // Its repeat in the request (index 5) is refused as it is; an invalid event (index 8) is
        // rejected by validation as before.
        let body = "[" + (Array(valid[..<3]) + [bad] + Array(valid[3...4]) + [bad] + Array(valid[5...])).map(\.json)
            .joined(separator: ",") + #",{"event_id":"x"}]"#
        let expected = Acceptance(accepted: 7, rejected: [
            RejectedEvent(3, nil, Self.problem),
            RejectedEvent(6, nil, Self.problem),
            RejectedEvent(9, "event_id", "must be a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e"),
        ])
        try expectAccepted(try await server.post(body, key: key), expected)
        #expect(try await server.storedCount(ids: valid.ids) == 7)
        #expect(try await server.storedCount(ids: [bad.id]) == 0)

        // Sent again (its answer lost): the same rejections, the rest duplicates, nothing stored twice.
        var again = expected
        again.accepted = 0
        again.duplicates = 7
        try expectAccepted(try await server.post(body, key: key), again)
        #expect(try await server.count("SELECT count(*) FROM events") == 7)

        // Counted with the rejections, under a reason of its own; the operators' log names the
        // event and the SQLSTATE.
        let samples = metricSamples(try await server.request("GET", "/metrics").text)
        #expect(samples["engage_events_accepted_total"] == "7")
        #expect(samples["engage_events_rejected_total"] == "6")
        #expect(samples[#"engage_events_rejected_by_field_total{field="not-storable"}"#] == "4")
        let refusals = server.logSink.lines.filter { $0.contains("ingest.event-refused") }
        #expect(refusals.count == 2)
        #expect(refusals.allSatisfy { $0.contains("sql.state=22003") && $0.contains(bad.id.uuidString.lowercased()) })
        // Never the value PostgreSQL refused (its messages may quote it).
        #expect(!server.logSink.lines.contains { $0.contains(RefusingConstraint.category) })
        await server.stop()
    }

    /// Every way an event can fail to be stored at once, each repeated in the request: refused
    /// by PostgreSQL, its id another app's, invalid; beside a valid event and its repeat. Each
    /// event sent is counted once: accepted + duplicates + rejected = events sent, the first time
    /// and on the resend.
    @Test func refusedRowsAnotherAppsIDsAndRepeatsAddUpToTheEventsSent() async throws {
        let server = try TestServer()
        try RefusingConstraint.add(to: server.database)
        let taken = WireEvent.displayed()
        try expectAccepted(try await server.post([taken].array, key: try await server.key(app: "theirs")), Acceptance(accepted: 1))
        let key = try await server.key()
        let bad = Self.refused(), good = WireEvent.expanded()
        let theirs = WireEvent.displayed(id: taken.id)
        let body = "[" + [bad, theirs, good, bad, theirs, good].map(\.json).joined(separator: ",") + #",{"event_id":"x"}]"#
        let otherApp = "is already the id of another app's event; give this event an id of its own"
        let rejected = [
            RejectedEvent(0, nil, Self.problem), RejectedEvent(1, "event_id", otherApp),
            RejectedEvent(3, nil, Self.problem), RejectedEvent(4, "event_id", otherApp),
            RejectedEvent(6, "event_id", "must be a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e"),
        ]
        try expectAccepted(try await server.post(body, key: key), Acceptance(accepted: 1, duplicates: 1, rejected: rejected))
        try expectAccepted(try await server.post(body, key: key), Acceptance(duplicates: 2, rejected: rejected))
        #expect(try await server.count("SELECT count(*) FROM events") == 2)
        await server.stop()
    }

    /// A request of refused events alone is answered as one with other rejected events only.
    @Test func aRequestOfRefusedEventsAloneStoresNothingAndSaysWhy() async throws {
        let server = try TestServer()
        try RefusingConstraint.add(to: server.database)
        let key = try await server.key()
        let events = [Self.refused(), Self.refused()]
        try expectAccepted(try await server.post(events.array, key: key), Acceptance(rejected: [
            RejectedEvent(0, nil, Self.problem), RejectedEvent(1, nil, Self.problem),
        ]))
        #expect(try await server.count("SELECT count(*) FROM events") == 0)
        await server.stop()
    }

    /// A CHECK constraint (class 23) refuses the event: a rule of the schema, which its operators
    /// can mend, not the event's values; rejecting would make the device drop every event it
    /// refuses meanwhile. The request fails whole with a 500 naming the SQLSTATE (no Retry-After:
    /// the client resends with its backoff), nothing of it is stored, and it is kept.
    @Test func aConstraintsRefusalFailsTheRequestWholeForItsDeviceToKeep() async throws {
        let server = try TestServer()
        try RefusingConstraint.addCheck(to: server.database)
        let key = try await server.key()
        let valid = WireEvent.valid(3)
        let body = "[" + (valid + [Self.refused()]).map(\.json).joined(separator: ",") + "]"
        let answer = try await server.post(body, key: key)
        try expectProblem(answer, Problem(
            "event-not-storable", status: 500, title: "A constraint of the database refused an event of this request",
            detail: "the request is not acknowledged (SQLSTATE 23514); engage's own schema has no constraint a valid "
                + "event breaks, so the server's operators must mend the database's; resend later, unchanged (any events of it "
                + "stored meanwhile are then reported as duplicates)"))
        #expect(try await server.count("SELECT count(*) FROM events") == 0)
        let samples = metricSamples(try await server.request("GET", "/metrics").text)
        #expect(samples[#"engage_events_rejected_by_field_total{field="not-storable"}"#] == nil)
        await server.stop()
    }
}
