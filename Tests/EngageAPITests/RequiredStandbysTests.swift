import EngageAPI
import Foundation
import Testing
import TestSupport

/// `engage serve --synchronous-standbys 1` on a primary that runs alone (here the test cluster,
/// which has no standby at all; a pg_auto_failover primary in `wait_primary` is one too): readiness
/// says why nothing is acknowledged, and each ingest request is answered 503 with Retry-After
/// although its events are committed on the primary, so the device keeps them and resends.
@Suite("Ingestion when a synchronous standby is required")
struct RequiredStandbysTests {
    @Test func aPrimaryWithoutTheRequiredStandbyIsNotReadyAndAcknowledgesNothing() async throws {
        let server = try TestServer { $0.requiredSynchronousStandbys = 1 }
        let key = try await server.key(app: uniqueApp("alone"))

        try expectProblem(try await server.request("GET", "/readyz"), Self.missingOneStandby, retryAfter: "5")
        let events = WireEvent.valid(3)
        try expectProblem(try await server.post(events.array, key: key), .unconfirmedCommit, retryAfter: "5")
        // Stored on the primary, answered as not stored: the resend is refused the same way.
        #expect(try await server.storedCount(ids: events.ids) == 3)
        try expectProblem(try await server.post(events.array, key: key), .unconfirmedCommit, retryAfter: "5")
        #expect(try await server.request("GET", "/healthz").status == 200)
        await server.stop()

        // The default trusts the server's setting, which asks for no standby here.
        let trusting = try TestServer()
        #expect(try await trusting.request("GET", "/readyz").status == 200)
        try expectAccepted(try await trusting.post(events.array, key: try await trusting.key(app: uniqueApp("trusting"))),
                           Acceptance(accepted: 3))
        await trusting.stop()
    }

    static let missingOneStandby = Problem(
        "synchronous-standbys-missing", status: 503, title: "Fewer synchronous standbys than required are streaming",
        detail: "1 more synchronous standby must stream from the primary before a commit can be confirmed (--synchronous-standbys); "
            + "until then every ingest request is refused, and devices keep their events")
}
