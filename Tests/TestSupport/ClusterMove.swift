import EmbeddedPostgres
import EventStore
import Foundation
import Postgres

/// Two PostgreSQL clusters of their own in a temporary directory: `old`, migrated, where a test
/// writes a log, and `new`, freshly initialized, into which `dumpOldIntoNew` moves the database
/// with pg_dump and psql, as an operator moving engage to another server does. The new cluster's
/// transaction counter starts where initdb and the restore leave it, far below the old one's
/// once `burnTransactionIDs` has run there: the state docs/reliability.md, "Transaction ids
/// behind the log", describes.
public final class ClusterMove: Sendable {
    public let directory: String
    public let old: EmbeddedPostgres
    public let new: EmbeddedPostgres
    /// engage's own default, so that `engage db ... --data-dir` finds it on the new cluster.
    public static let database = "engage"

    public init() throws {
        // Short: each cluster's socket lives in its data directory, and socket paths are limited.
        directory = "/tmp/engage-move-\(getpid())-\(UUID().uuidString.prefix(6).lowercased())"
        // Tests need servers, not crash safety of the machine.
        let settings = ["fsync": "off", "full_page_writes": "off"]
        old = try EmbeddedPostgres(options: .init(dataDirectory: directory + "/old", database: Self.database, settings: settings))
        new = try EmbeddedPostgres(options: .init(dataDirectory: directory + "/new", database: Self.database, settings: settings))
        // As the other test clusters: a test process that dies (a crash, a CI timeout) or an
        // init that fails below, before its caller can remove them, leaves no server running.
        ClusterExitWatcher.watch([old, new], removing: directory)
        do {
            try old.start()
            try new.start()
            let connection = try Connection(configuration: old.configuration())
            defer { connection.close() }
            try Migrator.fromSQLDirectory().migrate(connection)
        } catch {
            remove()
            throw error
        }
    }

    /// Commits `count` empty transactions on the old cluster, each taking an id, so that its
    /// counter is well ahead of what a new cluster reaches by initdb and a restore.
    public func burnTransactionIDs(_ count: Int) throws {
        let connection = try Connection(configuration: old.configuration())
        defer { connection.close() }
        for _ in 0..<count { try connection.execute("SELECT pg_current_xact_id()") }
    }

    /// `pg_dump` of the old cluster's database into the new cluster's (empty) one, through psql,
    /// stopping at the first error.
    public func dumpOldIntoNew() throws {
        let dump = old.clientProgram("pg_dump"), psql = new.clientProgram("psql")
        let script = "set -o pipefail; '\(dump)' --dbname '\(old.connectionURL())' | "
            + "'\(psql)' -X -q -v ON_ERROR_STOP=1 --dbname '\(new.connectionURL())' >/dev/null"
        let outcome = try ProcessRunner.run(["/bin/bash", "-c", script])
        guard outcome.status == 0 else { throw EmbeddedPostgresError("pg_dump | psql failed", output: outcome.output) }
    }

    /// Stops both clusters (immediately: nothing in them is kept) and deletes the directory.
    public func remove() {
        try? old.stop(mode: "immediate")
        try? new.stop(mode: "immediate")
        try? FileManager.default.removeItem(atPath: directory)
    }
}
