import EngageAPI
import Foundation
import Postgres
import Testing
import TestSupport

/// `POST /v1/experiments/{id}/run` on a real server whose scheduler gives each database call 2 s
/// (`Scheduler.Configuration.databaseAnswerLimit`): on a primary waiting at the COMMIT for a
/// synchronous standby that is gone, the run's insert is made there but never answered, and the
/// request is answered 503 with Retry-After, saying the run may have been queued (list the runs;
/// a repeat only adds a run). A pair of this suite's own (`StreamingReplication`), since every
/// commit on it stops while it waits for `nobody`.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ManualRunTimeoutRouteTests {
    static let pair = Result { try StreamingReplication(label: "apirunbound") }

    @Test func aRunWhoseInsertWaitsForALostStandbyIsAnsweredMaybeQueued() async throws {
        let replication = try await offPool { try Self.pair.get() }
        let (database, _) = try await offPool { try replication.freshDatabase() }
        let server = try TestServer(database: database) { configuration in
            configuration.commitTimeout = .seconds(2)
            configuration.scheduler.databaseAnswerLimit = .seconds(2)
            // Only the requests under test use the database, and no scheduler claims the run.
            configuration.runProjector = false
            configuration.runScheduler = false
        }
        let change = try await ExperimentChangeTimeoutRouteTests.adminAndDefinition(server, name: "run")
        let (admin, id) = (change.headers, change.id)
        #expect(try await server.request("POST", "/v1/experiments", headers: admin, body: change.definition).status == 201)
        try await offPool { try replication.synchronousStandby("nobody") }
        defer { try? replication.synchronousStandby(nil) }

        let started = ContinuousClock.now
        let run = try await ExperimentChangeTimeoutRouteTests.request(server, "POST", "/v1/experiments/\(id)/run", headers: admin)
        let waited = ContinuousClock.now - started
        try await offPool { try replication.synchronousStandby(nil) }
        try expectProblem(run, Problem("database-unavailable", status: 503, title: "The event log is unreachable", detail:
            "the database did not answer once the run was sent: it may have been queued, and a scheduler analyses a queued run "
                + "later; list the runs (GET /v1/experiments/\(id)/runs) before repeating the request (a repeat adds another run)"),
            retryAfter: "5")
        #expect(waited < .seconds(12), "answered after \(waited)")
        // Queued: once the primary stops waiting for a standby, the runs list it, pending.
        try await pollUntil(every: .milliseconds(20)) {
            try await server.request("GET", "/v1/experiments/\(id)/runs", headers: admin).text.contains(#""manual":true"#)
        }
        let runs = try await server.request("GET", "/v1/experiments/\(id)/runs", headers: admin).text
        #expect(runs.contains(#""status":"pending""#), "\(runs)")
        await server.stop()
    }
}
