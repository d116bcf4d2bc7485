import EngageAPI
import EngageCore
import EventStore
import Foundation
import Postgres
import Testing
import TestSupport

/// A database moved with pg_dump into a new cluster, as an operator meets it: `engage serve`
/// refuses to start and says what to do, `engage db transaction-ids` prints the repair and, on
/// engage's local PostgreSQL, makes it (docs/reliability.md, "Transaction ids behind the log").
@Suite("engage on a log moved into a new cluster")
struct MovedClusterCommandTests {
    @Test(.timeLimit(.minutes(3)))
    func serveRefusesToStartAndTransactionIDsRepairsTheLocalCluster() async throws {
        let workspace = try FaultWorkspace("moved")
        defer { workspace.remove() }
        let move = try ClusterMove()
        defer { move.remove() }
        try move.burnTransactionIDs(3_000)
        let oldPool = ConnectionPool(configuration: move.old.configuration(), size: 1)
        _ = try await EventStore(pool: oldPool).append(LogCommandTests.events(10, tag: "before"))
        await oldPool.close()
        try move.dumpOldIntoNew()
        try move.old.stop()
        func health() throws -> TransactionIDHealth {
            let connection = try Connection(configuration: move.new.configuration())
            defer { connection.close() }
            return try TransactionIDHealth.read(on: connection)
        }
        let behind = try health()
        let logNewest = try #require(behind.logNewest)
        #expect(behind.problem == TransactionIDsBehindLog(holder: .log, held: logNewest, next: behind.next))
        #expect(behind.repair.epoch == 1)

        let url = move.new.connectionURL()
        func engage(_ arguments: [String]) async throws -> (status: Int32, output: String) {
            try await CommandLineOptionsTests.engage(arguments, environment: ["ENGAGE_LOG_LEVEL": "error"], in: workspace)
        }
        let serve = try await engage(["serve", "--database", url, "--listen", "127.0.0.1:0"])
        #expect(serve.status == 1)
        #expect(serve.output.contains("error: PostgreSQL's transaction ids are behind the event log: the newest event in the log is at transaction \(logNewest)"),
                "\(serve.output)")
        #expect(serve.output.contains("engage db transaction-ids prints the command"), "\(serve.output)")
        #expect(serve.output.contains("msg=engage.transaction-ids-behind-log"), "\(serve.output)")

        let printed = try await engage(["db", "transaction-ids", "--database", url])
        #expect(printed.status == 1)
        #expect(printed.output.contains("log's newest transaction id      \(logNewest)"), "\(printed.output)")
        #expect(printed.output.contains("pg_resetwal -e 1 -D "), "\(printed.output)")
        let refused = try await engage(["db", "transaction-ids", "--database", url, "--repair"])
        #expect(refused.status == 64, "\(refused.output)")

        let repaired = try await engage(["db", "transaction-ids", "--data-dir", move.new.dataDirectory, "--repair"])
        #expect(repaired.status == 0, "\(repaired.output)")
        #expect(repaired.output.contains("ok: repaired"), "\(repaired.output)")
        let after = try health()
        #expect(after.problem == nil)
        #expect(after.next >> 32 == 1 && after.next > logNewest)
        let checked = try await engage(["db", "transaction-ids", "--database", url])
        #expect(checked.status == 0, "\(checked.output)")
        #expect(checked.output.contains("ok: the database's transaction ids are ahead of the log's"), "\(checked.output)")
    }
}
