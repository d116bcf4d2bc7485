import EventStore
import Foundation
import Postgres
@testable import Projections
import Runtime
import Testing
import TestSupport

/// `engage serve`'s projector shares its pool with the read routes: a report or a simulation may
/// hold every connection for longer than `databaseAnswerLimit`. That wait is a busy pool, not a
/// database that does not answer: the projector must not count it as one, drop its batch and
/// start again from its checkpoint.
@Suite("Engagement projector: waiting for a busy pool")
struct ProjectorBusyPoolTests {
    @Test(.timeLimit(.minutes(2)))
    func aWaitForABusyPoolIsNotADatabaseThatDoesNotAnswer() async throws {
        let configuration = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: configuration, size: 1)
        let appending = ConnectionPool(configuration: configuration, size: 1)
        let store = EventStore(pool: appending)
        let sink = MemoryLogSink()
        var settings = Projector.Configuration()
        settings.pollInterval = .milliseconds(100)
        settings.databaseAnswerLimit = .seconds(1)
        let projector = Projector(pool: pool, configuration: settings, logger: Logger(label: "test", sink: sink),
                                  metrics: ProjectorMetrics(registry: MetricsRegistry()))
        let running = Task { try await projector.run() }
        defer { running.cancel() }
        _ = try await store.append(ProjectionFixtures.events(notifications: 10, seed: 21))
        try await pollUntil(every: .milliseconds(20)) { try await ReadModelSnapshot.isCaughtUp(appending) }

        // A long read holds the pool's only connection for three times the limit while events
        // arrive; the database answers all along.
        let longRead = Task { try await pool.withConnection { _ = try $0.query("SELECT pg_sleep(3)") } }
        try await pollUntil { pool.statistics.inUse == 1 }
        _ = try await store.append(ProjectionFixtures.events(notifications: 10, seed: 22))
        try await longRead.value
        try await pollUntil(every: .milliseconds(20)) { try await ReadModelSnapshot.isCaughtUp(appending) }
        let interruptions = sink.lines.filter { $0.contains("projector.error") }
        #expect(interruptions.isEmpty, "\(interruptions)")
        running.cancel()
        _ = try? await running.value
        await pool.close()
        await appending.close()
    }
}
