import EngageCore
import EventStore
import Postgres
@testable import Projections
import Testing
import TestSupport

/// The projector reads a batch ahead on one pooled connection and folds it on another; across a
/// failover the pool may have reconnected one of them to another server. A batch read on another
/// server is not folded (its events may not be in this server's log): the batcher reads its batch
/// again on its own connection.
@Suite("Projector read-ahead from another server")
struct ReadAheadServerTests {
    @Test(.timeLimit(.minutes(1))) func aBatchReadAheadOnAnotherServerIsReadAgainHere() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        let elsewhere = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let logged = ProjectionFixtures.events(notifications: 5, seed: 71)
        let foreign = ProjectionFixtures.events(notifications: 7, seed: 72)
        _ = try await EventStore(pool: pool).append(logged)
        _ = try await EventStore(pool: elsewhere).append(foreign)
        // What the old primary would have handed over: its own events, read ahead there.
        var readAhead = FoldedEvents([FoldableEvent]())
        try await pollUntil(every: .milliseconds(20)) {
            readAhead = try await elsewhere.withConnection { connection in
                FoldedEvents(try EventStore.readFoldable(after: .start, limit: 1_000, on: connection))
            }
            return readAhead.eventCount == foreign.count
        }
        readAhead.server = ServerIdentity(text: "1999-12-31 23:59:59+00 192.0.2.1:5432")
        let fromElsewhere = readAhead

        var batcher = EngagementBatcher(tables: .live, checkpointName: EngagementStore.projectionName, batchSize: 1_000, position: .start)
        var folded = 0
        try await pollUntil(every: .milliseconds(20)) {
            let batch = batcher
            let (count, after) = try await pool.withConnection { connection in
                var batcher = batch
                return (try batcher.process(prefetched: fromElsewhere, on: connection), batcher)
            }
            batcher = after
            folded += count
            return folded >= logged.count
        }

        let notifications = try await pool.withConnection { connection in
            try connection.query("SELECT notification_id FROM notification_states ORDER BY 1").rows.map { try $0.decode(0, as: String.self) }
        }
        #expect(folded == logged.count)
        #expect(notifications == Set(logged.map(\.event.notificationID)).sorted())
        #expect(batcher.position == (try await pool.withConnection { try EngagementStore.checkpoint(EngagementStore.projectionName, on: $0) }))
        // Two connections to one server say the same; the other database's server is this one too.
        let identities = try await withThrowingTaskGroup(of: ServerIdentity.self) { group in
            for pool in [pool, elsewhere] { group.addTask { try await pool.withConnection { try ServerIdentity.read(on: $0) } } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(identities.map(\.text)).count == 1)
        await pool.close()
        await elsewhere.close()
    }
}
