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
