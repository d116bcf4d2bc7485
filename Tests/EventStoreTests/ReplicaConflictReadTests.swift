@testable import EventStore
import Postgres
import Runtime
import Testing
import TestSupport

/// A standby cancels a read that holds up its replay ("canceling statement due to conflict with
/// recovery"): with 40001, or with 40P01 when the read's buffer pin deadlocks with the replay
/// (PostgreSQL's `CheckRecoveryConflictDeadlock`). Either way the read is made again on the
/// primary; 40P01 failed the read. Any other error of the read is the caller's.
@Suite struct ReplicaConflictReadTests {
    @Test(arguments: ["40001", "40P01"])
    func aReadTheReplicaCancelsIsMadeAgainOnThePrimary(sqlState: String) async throws {
        let (reads, primary, replica) = try Self.readDatabase()
        let read = try await reads.read { pool -> Int in
            try await pool.withConnection { connection in
                if pool === replica { try Self.raise(sqlState, on: connection) }
                return try connection.query("SELECT 7")[0].decode(0, as: Int.self)
            }
        }
        #expect(read.value == 7)
        #expect(read.source == ReadSource(database: .primary, lag: .zero, fallback: .replicaConflict))
        await primary.close()
        await replica.close()
    }

    @Test func anotherErrorOfTheReadIsThrown() async throws {
        let (reads, primary, replica) = try Self.readDatabase()
        await #expect(throws: PostgresError.self) {
            try await reads.read { pool -> Int in
                try await pool.withConnection { connection in
                    try Self.raise("22012", on: connection)
                    return 0
                }
            }
        }
        await primary.close()
        await replica.close()
    }

    /// Two pools on one server, which is no standby: its lag reads as none, so the replica is read.
    static func readDatabase() throws -> (ReadDatabase, primary: ConnectionPool, replica: ConnectionPool) {
        let database = try TestPostgres.freshDatabase()
        let primary = ConnectionPool(configuration: database, size: 1)
        let replica = ConnectionPool(configuration: database, size: 1)
        let reads = ReadDatabase(primary: primary, replica: replica, logger: Logger(label: "test", sink: MemoryLogSink()),
                                 metrics: ReadReplicaMetrics(registry: MetricsRegistry()))
        return (reads, primary, replica)
    }

    /// The server raises `sqlState`, as a standby does when it cancels a read.
    static func raise(_ sqlState: String, on connection: Connection) throws {
        let statement: SQL = switch sqlState {
        case "40001": "DO $$ BEGIN RAISE EXCEPTION 'conflict with recovery' USING ERRCODE = '40001'; END $$"
        case "40P01": "DO $$ BEGIN RAISE EXCEPTION 'conflict with recovery' USING ERRCODE = '40P01'; END $$"
        default: "SELECT 1 / 0"
        }
        _ = try connection.query(statement)
    }
}
