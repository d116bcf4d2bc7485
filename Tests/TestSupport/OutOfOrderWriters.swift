import EngageCore
import EventStore
import Postgres

/// Writers committing out of log order, what a test of gapless reading (`LogTail`) runs against:
/// each on a connection of its own appends `batches` batches, one transaction each, taking its
/// positions early and committing after a random pause of up to 20 ms.
public enum OutOfOrderWriters {
    /// Returns once every writer has committed every batch; `items` makes a writer's batch.
    public static func run(_ writers: Int, batches: Int, on database: PostgresConfiguration,
                           items: @escaping @Sendable (_ writer: Int, _ batch: Int) -> [AppendItem]) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    let connection = try Connection(configuration: database)
                    defer { connection.close() }
                    for batch in 0..<batches {
                        let batchItems = items(writer, batch)
                        try connection.transaction { connection in
                            _ = try EventStore.appendInOpenTransaction(batchItems, on: connection)
                            _ = try connection.query("SELECT pg_sleep(\(Double.random(in: 0...0.02)))")
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
