import EmbeddedPostgres
import EngageAPI
import EventStore
import Postgres
import Runtime

/// `engage db transaction-ids [--repair]`: the database's transaction counter against the log's
/// transaction ids, and the repair when the counter is behind (a database moved with pg_dump into
/// a new cluster; docs/reliability.md, "Transaction ids behind the log").
enum TransactionIDsCommand {
    static let repair = Flag(
        "repair", help: "Repair the local PostgreSQL when behind: stop it, give its counter a new epoch with pg_resetwal -e, start it.")

    static let definition = Command(
        name: "transaction-ids",
        abstract: "Check that the database's transaction ids are ahead of the event log's, and print (or, locally, make) the repair when not.",
        options: CommonOptions.databaseAndLogging, flags: [repair], run: run)

    static func run(_ arguments: ParsedArguments) async throws {
        if arguments[repair] && CommonOptions.externalDatabase(arguments) != nil {
            throw arguments.usageError(
                .invalidValue,
                "\(repair.longName) repairs the local PostgreSQL only; for \(CommonOptions.database.longName), run the printed commands on the database's host")
        }
        let logger = CommonOptions.logger(arguments)
        // Migrated like every command's database: a dump of an older engage lacks the newer readers' tables.
        let setup = try DatabaseSetup.open(arguments, logger: logger)
        defer { setup.close() }
        var health = try read(setup.configuration)
        printTable(health)
        guard let problem = health.problem else {
            print("state                            ok: the database's transaction ids are ahead of the log's")
            return
        }
        print("state                            behind: \(problem.holder.rawValue) is at a transaction id the database has not assigned")
        let plan = health.repair
        if arguments[repair], let cluster = setup.embedded {
            print("repairing: stopping PostgreSQL, pg_resetwal -e \(plan.epoch), starting it")
            try cluster.stop()
            try cluster.resetTransactionEpoch(plan.epoch)
            try cluster.start()
            health = try read(setup.configuration)
            printTable(health)
            if let problem = health.problem { throw problem }
            print("state                            ok: repaired")
            return
        }
        let directory = setup.embedded?.dataDirectory ?? (try? dataDirectory(setup.configuration)) ?? "<data directory>"
        let binaries = setup.embedded.map { $0.binaryDirectory + "/" } ?? ""
        print("""

            repair: stop every engage process, then on the database's host, as the user owning its data directory:
            """)
        for command in plan.commands(dataDirectory: directory) { print("  " + binaries + command) }
        print("""
            the database's next transaction id becomes \(plan.nextAfterRepair) (epoch \(plan.epoch)), above the log's \(plan.highest).
            pg_resetwal starts a new WAL: take a new base backup and re-create standbys afterwards.
            """)
        if setup.embedded != nil { print("this is engage's local PostgreSQL: engage db transaction-ids --repair does all three") }
        throw problem
    }

    private static func read(_ configuration: PostgresConfiguration) throws -> TransactionIDHealth {
        let connection = try Connection(configuration: configuration)
        defer { connection.close() }
        return try TransactionIDHealth.read(on: connection)
    }

    /// The server's data directory, when the role may read it (superuser or pg_read_all_settings).
    private static func dataDirectory(_ configuration: PostgresConfiguration) throws -> String {
        let connection = try Connection(configuration: configuration)
        defer { connection.close() }
        return try connection.query("SELECT current_setting('data_directory')")[0].decode(0)
    }

    private static func printTable(_ health: TransactionIDHealth) {
        func id(_ value: UInt64?) -> String { value.map { String($0) } ?? "-" }
        print("""
            database's next transaction id   \(health.next)
            log's newest transaction id      \(id(health.logNewest))
            projector checkpoint             \(id(health.projectionCheckpoint))
            experiment looks folded below    \(id(health.lookFoldedBelow))
            """)
    }
}
