import EngageCore
@testable import EventStore
import Foundation
import Postgres
import Runtime
import Synchronization
import Testing
import TestSupport

/// The committers' threads against a real PostgreSQL: what they store, when they answer, how
/// they stop.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct CommitterTests {
    static let logger = Logger(label: "test", level: .error, sink: MemoryLogSink())

    static func committer(_ queue: IngestQueue, database: PostgresConfiguration) -> Committer {
        Committer(queue: queue, database: database, metrics: CommitterMetrics(registry: MetricsRegistry()),
                  committers: 2, logger: logger)
    }

    static func storedEvents(_ database: PostgresConfiguration) throws -> Int {
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        return try connection.query("SELECT count(*) FROM events").rows[0].decode(0)
    }

    @Test func storesEveryBatchAndDrainsWhatIsQueuedWhenCancelled() async throws {
        let database = try TestPostgres.freshDatabase()
        let queue = IngestQueue()
        let running = Task { try await Self.committer(queue, database: database).run() }

        let answered = try await withThrowingTaskGroup(of: Int.self) { group in
            for size in 1...40 { group.addTask { try await queue.submit(IngestQueueTests.batch(size)).storedCount } }
            return try await group.reduce(0, +)
        }
        #expect(answered == (1...40).reduce(0, +))
        #expect(try Self.storedEvents(database) == answered)

        // Queued, then the committers are asked to stop: each batch is still stored and answered.
        let results = Results()
        for _ in 0..<20 { queue.submit(IngestQueueTests.batch(5)) { results.append($0) } }
        running.cancel()
        try await running.value
        #expect(results.all.count == 20)
        #expect(results.all.allSatisfy { (try? $0.get().storedCount) == 5 })
        #expect(try Self.storedEvents(database) == answered + 100)
        await #expect(throws: IngestQueue.Refusal.closed) { try await queue.submit(IngestQueueTests.batch(1)) }
    }

    @Test func aCommitterCancelledBeforeItRunsStopsAtOnce() async throws {
        let database = try TestPostgres.freshDatabase()
        let queue = IngestQueue()
        let running = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await Self.committer(queue, database: database).run()
        }
        try await running.value
        await #expect(throws: IngestQueue.Refusal.closed) { try await queue.submit(IngestQueueTests.batch(1)) }
    }

    /// A group holds many clients' requests: a row PostgreSQL refuses (here a `properties` number
    /// beyond `numeric`'s range, which validation now rejects, standing for any such row) must
    /// be refused alone, not fail every request that happened to share its commit (each resent,
    /// and failed again, as long as the bad one keeps coming back), nor its own request whole.
    @Test func aRowPostgreSQLRefusesIsRefusedAlone() async throws {
        let database = try TestPostgres.freshDatabase()
        let queue = IngestQueue()
        var poisoned = EventFactory.event(notification: "n-poison")
        poisoned.properties = Array(#"{"score":1e1000000}"#.utf8)
        let before = Results(), bad = Results(), after = Results()
        // Queued before any committer runs: the first committer takes all three as one group.
        queue.submit(IngestQueueTests.batch(3)) { before.append($0) }
        queue.submit(PreparedBatch([AppendItem(appID: "app-1", event: poisoned)])) { bad.append($0) }
        queue.submit(IngestQueueTests.batch(2)) { after.append($0) }
        let running = Task { try await Self.committer(queue, database: database).run() }
        try await pollUntil { before.all.count == 1 && bad.all.count == 1 && after.all.count == 1 }

        #expect(before.all.map { try? $0.get().storedCount } == [3])
        #expect(after.all.map { try? $0.get().storedCount } == [2])
        #expect(bad.all.map { try? $0.get().outcomes } == [[.refused(sqlState: "22003")]])
        #expect(try Self.storedEvents(database) == 5)
        running.cancel()
        try await running.value
    }

    /// A committer started on `database` after two requests were queued (so the first committer
    /// takes both as one group): an innocent one of 3 events and one of 5 whose third event has
    /// the category `RefusingConstraint` refuses; returns once both are answered.
    private static func commitInnocentBesideGuilty(
        _ database: PostgresConfiguration
    ) async throws -> (queue: IngestQueue, guiltyItems: [AppendItem], innocent: Results, guilty: Results, running: Task<Void, Error>) {
        let queue = IngestQueue()
        var items = (0..<5).map { AppendItem(appID: "app-1", event: EventFactory.event(notification: "n-guilty-\($0)")) }
        items[2].event.category = RefusingConstraint.category
        let innocent = Results(), guilty = Results()
        queue.submit(IngestQueueTests.batch(3)) { innocent.append($0) }
        queue.submit(PreparedBatch(items)) { guilty.append($0) }
        let running = Task { try await Self.committer(queue, database: database).run() }
        try await pollUntil { innocent.all.count == 1 && guilty.all.count == 1 }
        return (queue, items, innocent, guilty, running)
    }

    /// Two requests in one commit, one holding an event PostgreSQL refuses for its values (here
    /// a test-only trigger raising 22003, `RefusingConstraint`): the innocent request is stored
    /// whole and answered as stored, and the other is stored but for that event, which comes
    /// back refused (failing the request whole made its device resend it, and hold back its
    /// queue, for ever).
    @Test func aRefusedEventIsLeftOutOfItsRequestAndTheRestOfTheGroupIsStored() async throws {
        let database = try TestPostgres.freshDatabase()
        try RefusingConstraint.add(to: database)
        let (_, _, innocent, guilty, running) = try await Self.commitInnocentBesideGuilty(database)

        #expect(innocent.all.map { try? $0.get().storedCount } == [3])
        #expect(guilty.all.map { try? $0.get().outcomes } == [[.stored, .stored, .refused(sqlState: RefusingConstraint.sqlState), .stored, .stored]])
        #expect(try Self.storedEvents(database) == 7)
        running.cancel()
        try await running.value
    }

    /// Two requests in one commit, one holding an event a CHECK constraint refuses (class 23, a
    /// rule of the schema, `RefusingConstraint.addCheck`): the innocent request is stored whole,
    /// and the other fails whole with the constraint's error, for its device to keep and resend
    /// once the operators mend the schema (rejected alone, it would be dropped).
    @Test func aConstraintsRefusalFailsItsRequestWholeAndTheRestOfTheGroupIsStored() async throws {
        let database = try TestPostgres.freshDatabase()
        try RefusingConstraint.addCheck(to: database)
        let (queue, items, innocent, guilty, running) = try await Self.commitInnocentBesideGuilty(database)

        #expect(innocent.all.map { try? $0.get().storedCount } == [3])
        let failure = try #require(guilty.all.first.flatMap { result -> PostgresError? in
            if case .failure(let error) = result { return error as? PostgresError } else { return nil }
        })
        #expect(failure.sqlState == RefusingConstraint.checkSQLState)
        #expect(try Self.storedEvents(database) == 3)

        // Alone in its group, the same: failed whole, nothing of it stored.
        let alone = Results()
        queue.submit(PreparedBatch(items)) { alone.append($0) }
        try await pollUntil { alone.all.count == 1 }
        #expect((try? alone.all[0].get()) == nil)
        #expect(try Self.storedEvents(database) == 3)
        running.cancel()
        try await running.value
    }

    @Test func anUnreachableDatabaseFailsTheGroupWithAConnectionProblem() async throws {
        let unreachable = PostgresConfiguration(connectionString: "host=127.0.0.1 port=1 user=engage dbname=engage",
                                                connectTimeoutSeconds: 2)
        let queue = IngestQueue()
        let running = Task { try await Self.committer(queue, database: unreachable).run() }
        let error = await #expect(throws: PostgresError.self) { try await queue.submit(IngestQueueTests.batch(3)) }
        #expect(error?.isConnectionProblem == true)
        running.cancel()
        try await running.value
    }
}

/// Results handed to completions from the committers' threads.
/// What completions a test collected, in the order they came.
final class Results: Sendable {
    private let results = Mutex<[Result<AppendResult, Error>]>([])

    func append(_ result: Result<AppendResult, Error>) { results.withLock { $0.append(result) } }
    var all: [Result<AppendResult, Error>] { results.withLock { $0 } }
}
