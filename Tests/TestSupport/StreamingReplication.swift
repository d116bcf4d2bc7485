import EmbeddedPostgres
import EventStore
import Foundation
import Postgres
import Synchronization

/// A PostgreSQL primary and a hot standby streaming from it, made as an operator makes one: the
/// standby is a `pg_basebackup -R` of the primary. Two clusters of their own in a temporary
/// directory, each on a Unix socket in its data directory; both are stopped and deleted when the
/// test process ends, even if it crashes.
///
/// A suite that pauses replay, stops the standby or makes it synchronous builds its own pair and
/// runs serialized, so that no other test sees those states.
public final class StreamingReplication: Sendable {
    public let directory: String
    public let primary: EmbeddedPostgres
    public let replica: EmbeddedPostgres
    /// The standby's `application_name`, as `synchronous_standby_names` names it.
    public static let standbyName = "engage_test_replica"
    private let template = Mutex(false)

    /// Builds the pair; `label` keeps the directories of several pairs apart.
    public init(label: String) throws {
        // Short: the sockets live in the data directories and socket paths are limited.
        directory = "/tmp/engage-repl-\(getpid())-\(label)"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Tests need servers, not crash safety of the machine: no disk flushes.
        let settings = ["fsync": "off", "max_connections": "100"]
        primary = try EmbeddedPostgres(options: .init(dataDirectory: directory + "/primary", database: "postgres", settings: settings))
        replica = try EmbeddedPostgres(options: .init(dataDirectory: directory + "/replica", database: "postgres", settings: settings))
        Self.watchForExit(of: [primary, replica], directory: directory)
        try primary.start()
        // pg_basebackup, run as the server's user, fills an empty directory that user owns.
        try FileManager.default.createDirectory(atPath: replica.dataDirectory, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        if geteuid() == 0 {
            let given = try ProcessRunner.run(["/bin/chown", "postgres:postgres", replica.dataDirectory])
            guard given.status == 0 else { throw ReplicationError("could not give \(replica.dataDirectory) to postgres: \(given.output)") }
        }
        // An immediate checkpoint starts the copy at once, instead of at the primary's pace.
        let backup = try ProcessRunner.run(
            [primary.clientProgram("pg_basebackup"), "-d",
             "host=\(primary.socketDirectory) port=\(primary.options.port) user=\(EmbeddedPostgres.superuser) application_name=\(Self.standbyName)",
             "-D", replica.dataDirectory, "-R", "-c", "fast", "-X", "stream"],
            asUser: "postgres")
        guard backup.status == 0 else { throw ReplicationError("pg_basebackup failed: \(backup.output)") }
        // The copy holds the primary's socket lock file (the socket lives in the data directory).
        try? FileManager.default.removeItem(atPath: replica.dataDirectory + "/.s.PGSQL.\(primary.options.port).lock")
        try startReplica()
    }

    /// A fresh database with engage's schema on the primary, once the standby has it too: how to
    /// reach it on each.
    public func freshDatabase() throws -> (primary: PostgresConfiguration, replica: PostgresConfiguration) {
        let name = "test_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try Connection(configuration: primary.configuration(database: "postgres"))
        defer { admin.close() }
        try template.withLock { ready in
            if !ready {
                try admin.execute("CREATE DATABASE engage_replication_template")
                let connection = try Connection(configuration: primary.configuration(database: "engage_replication_template"))
                defer { connection.close() }
                try Migrator.fromSQLDirectory().migrate(connection)
                ready = true
            }
            try admin.execute("CREATE DATABASE \(identifier: name) TEMPLATE engage_replication_template")
        }
        try waitForReplay()
        return (primary.configuration(database: name), replica.configuration(database: name))
    }

    // MARK: Replay

    /// Blocks until the standby has replayed everything the primary had committed when called.
    public func waitForReplay(timeout: Duration = .seconds(120)) throws {
        // A standby receives only flushed WAL, and the projector commits without waiting for the
        // flush (`synchronous_commit = off`): a durable commit of our own flushes all before it.
        // It must write WAL, or PostgreSQL commits it without waiting too; it waits for the local
        // flush only, never for a synchronous standby (which a test may have made absent).
        let target: String = try withPrimary { connection in
            try connection.transaction { connection in
                _ = try connection.query("SELECT set_config('synchronous_commit', 'local', true)")
                _ = try connection.query("SELECT pg_logical_emit_message(true, 'engage-test', 'flush')")
            }
            return try connection.query("SELECT pg_current_wal_flush_lsn()::text")[0].decode(0)
        }
        try waitUntil(timeout: timeout, "the standby to replay up to \(target)") {
            try withReplica { connection in
                try connection.query("SELECT pg_last_wal_replay_lsn() >= \(target)::pg_lsn")[0].decode(0, as: Bool.self)
            }
        }
    }

    /// Stops replaying (the standby still receives): what it shows stops moving.
    public func pauseReplay() throws {
        try withReplica { _ = try $0.query("SELECT pg_wal_replay_pause()") }
    }

    public func resumeReplay() throws {
        try withReplica { _ = try $0.query("SELECT pg_wal_replay_resume()") }
    }

    /// Blocks until the standby has received WAL it has not replayed (replay being paused).
    public func waitUntilBehind(timeout: Duration = .seconds(60)) throws {
        try waitUntil(timeout: timeout, "the standby to receive WAL it has not replayed") {
            try withReplica { connection in
                try connection.query("SELECT pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()")[0].decode(0, as: Bool.self)
            }
        }
    }

    // MARK: Faults

    public func stopReplica() throws {
        try replica.stop(mode: "immediate")
    }

    /// Starts the standby and returns once it streams from the primary again.
    public func startReplica() throws {
        try replica.start()
        try waitUntil(timeout: .seconds(60), "the standby to stream from the primary") {
            try withPrimary { connection in
                try connection.query("""
                    SELECT count(*) FROM pg_stat_replication WHERE application_name = \(Self.standbyName) AND state = 'streaming'
                    """)[0].decode(0, as: Int.self) == 1
            }
        }
    }

    /// Makes the primary wait for the standby at each commit (`synchronous_standby_names`), or
    /// for a standby that does not exist (`nobody`: every commit waits until this is undone);
    /// nil undoes it. Returns once the primary runs with the setting: a new session shows it, and,
    /// when it names this pair's standby, the standby reports itself synchronous and (unless
    /// `checkpoint` is false, for a test that froze the checkpointer) a CHECKPOINT made sure the
    /// checkpointer took the reload, so commits really wait for the standby.
    public func synchronousStandby(_ name: String?, checkpoint: Bool = true) throws {
        try withPrimary { connection in
            if let name {
                try connection.execute(SQL(unsafeSQL: "ALTER SYSTEM SET synchronous_standby_names = '\(name)'"))
            } else {
                try connection.execute("ALTER SYSTEM RESET synchronous_standby_names")
            }
            try connection.execute("SELECT pg_reload_conf()")
        }
        try waitUntil(timeout: .seconds(30), "the primary to reload synchronous_standby_names") {
            try withPrimary { try $0.query("SHOW synchronous_standby_names")[0].decode(0, as: String.self) == (name ?? "") }
        }
        guard let name, name.contains(Self.standbyName) else { return }
        try waitUntil(timeout: .seconds(30), "the standby to report itself synchronous") {
            try withPrimary { connection in
                try connection.query("""
                    SELECT count(*) FROM pg_stat_replication
                    WHERE application_name = \(Self.standbyName) AND sync_state IN ('sync', 'quorum')
                    """)[0].decode(0, as: Int.self) == 1
            }
        }
        if checkpoint { try withPrimary { _ = try $0.execute("CHECKPOINT") } }
    }

    /// Backends of the primary waiting for a synchronous standby to confirm their commit.
    public func commitsWaitingForStandby() throws -> Int {
        try withPrimary { try $0.query("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")[0].decode(0) }
    }

    // MARK: Helpers

    public func withPrimary<T>(_ body: (Connection) throws -> T) throws -> T {
        let connection = try Connection(configuration: primary.configuration(database: "postgres"))
        defer { connection.close() }
        return try body(connection)
    }

    public func withReplica<T>(_ body: (Connection) throws -> T) throws -> T {
        let connection = try Connection(configuration: replica.configuration(database: "postgres"))
        defer { connection.close() }
        return try body(connection)
    }

    private func waitUntil(timeout: Duration, _ what: String, _ condition: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        while (try? condition()) != true {
            guard ContinuousClock.now < deadline else { throw ReplicationError("no \(what) within \(timeout)") }
            usleep(20_000)
        }
    }

    /// A detached shell that stops both clusters and deletes the directory once this process is gone.
    private static func watchForExit(of clusters: [EmbeddedPostgres], directory: String) {
        ClusterExitWatcher.watch(clusters, removing: directory)
    }
}

/// Why the pair could not be built or driven.
public struct ReplicationError: Error, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
