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
        readAhead.readAhead = (ServerIdentity(text: "1999-12-31 23:59:59+00 192.0.2.1:5432"), .start)
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

    /// After a batch was read again on the promoted server, it ended where that server's log
    /// allowed, while the projector's next read-ahead, on the promoted server too, had started
    /// after the old primary's last event: taken as it was, the events in between were never folded.
    @Test(.timeLimit(.minutes(1))) func aReadAheadAfterAnotherPositionIsReadAgainHere() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        let elsewhere = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        // Both databases are on one server, so their transaction ids interleave: the old
        // primary's last commit comes between this log's first events and its later ones.
        let first = ProjectionFixtures.events(notifications: 6, seed: 73)
        let unconfirmed = ProjectionFixtures.events(notifications: 2, seed: 74)
        let later = ProjectionFixtures.events(notifications: 4, seed: 75)
        _ = try await EventStore(pool: pool).append(first)
        _ = try await EventStore(pool: elsewhere).append(unconfirmed)
        _ = try await EventStore(pool: pool).append(later)
        func readAhead(on pool: ConnectionPool, after position: LogPosition, count: Int) async throws -> FoldedEvents {
            var events = FoldedEvents([FoldableEvent]())
            try await pollUntil(every: .milliseconds(20)) {
                events = try await pool.withConnection { connection in
                    FoldedEvents(try EventStore.readFoldable(after: position, limit: 1_000, on: connection))
                }
                return events.eventCount == count
            }
            return events
        }
        var onTheOldPrimary = try await readAhead(on: elsewhere, after: .start, count: unconfirmed.count)
        onTheOldPrimary.readAhead = (ServerIdentity(text: "1999-12-31 23:59:59+00 192.0.2.1:5432"), .start)
        let oldPrimaryLast = try #require(onTheOldPrimary.last)
        var next = try await readAhead(on: pool, after: oldPrimaryLast, count: later.count)
        next.readAhead = (try await pool.withConnection { try ServerIdentity.read(on: $0) }, oldPrimaryLast)
        let end = try #require(next.last)
        let (firstBatch, nextBatch) = (onTheOldPrimary, next)

        var batcher = EngagementBatcher(tables: .live, checkpointName: EngagementStore.projectionName, batchSize: 5, position: .start)
        func process(_ prefetched: FoldedEvents?) async throws -> Int {
            let batch = batcher
            let (count, after) = try await pool.withConnection { connection in
                var batcher = batch
                return (try batcher.process(prefetched: prefetched, on: connection), batcher)
            }
            batcher = after
            return count
        }
        // The first batch is read again here: five of the first events, ending before the old
        // primary's last one.
        var folded = try await process(firstBatch)
        #expect(folded == 5)
        #expect(batcher.position < oldPrimaryLast)
        folded += try await process(nextBatch)
        try await pollUntil(every: .milliseconds(20)) {
            folded += try await process(nil)
            return batcher.position == end
        }

        let notifications = try await pool.withConnection { connection in
            try connection.query("SELECT notification_id FROM notification_states ORDER BY 1").rows.map { try $0.decode(0, as: String.self) }
        }
        #expect(folded == first.count + later.count)
        #expect(notifications == Set((first + later).map(\.event.notificationID)).sorted())
        await pool.close()
        await elsewhere.close()
    }
}
