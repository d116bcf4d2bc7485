import Foundation
import Postgres
import Runtime

/// Applies `sql/migrations` in order, each in its own transaction, recording version and checksum;
/// then (re)creates `sql/views`. Safe to run from several processes at once: an advisory lock
/// serializes them, and the later ones find nothing to do.
public struct Migrator: Sendable {
    public var migrations: [Migration]
    /// `CREATE OR REPLACE VIEW` scripts, applied after every migration run, in file-name order.
    public var viewScripts: [(name: String, script: String)]
    /// How long one attempt at a migration or a views script waits for a lock (`lock_timeout`).
    /// A migration waiting for a table's ACCESS EXCLUSIVE lock behind a long transaction (a
    /// `pg_dump`, a prune or a restore in progress) holds up every statement that queues behind
    /// it: for `event_ids`, every append; a view replaced while a long query holds a table it
    /// reads waits as well, and holds up the view's readers. So each step waits a moment, rolls
    /// back, pauses while they pass, and tries again (`BoundedLockWait`), logging what it waits for.
    public var lockTimeout: Duration = .seconds(1)
    /// The pause between attempts.
    public var lockRetryPause: Duration = .milliseconds(500)
    /// Attempts at one step before it fails with `MigrationError.lockWaitGaveUp` (about 25
    /// minutes with the defaults).
    public var lockAttempts = 1000

    public init(migrations: [Migration], viewScripts: [(name: String, script: String)] = []) {
        self.migrations = migrations
        self.viewScripts = viewScripts
    }

    /// Loads migrations and views from the repository's `sql/` directory.
    public static func fromSQLDirectory(_ directory: URL? = nil) throws -> Migrator {
        let root = try directory ?? SQLDirectory.locate()
        let migrations = try Migration.load(from: root.appendingPathComponent("migrations"))
        let viewsDirectory = root.appendingPathComponent("views")
        let viewFiles = ((try? FileManager.default.contentsOfDirectory(atPath: viewsDirectory.path)) ?? [])
            .filter { $0.hasSuffix(".sql") }.sorted()
        let views = try viewFiles.map { file in
            (name: file, script: try String(contentsOf: viewsDirectory.appendingPathComponent(file), encoding: .utf8))
        }
        return Migrator(migrations: migrations, viewScripts: views)
    }

    public struct Report: Sendable, Equatable {
        public var applied: [String]
        public var alreadyApplied: Int
    }

    /// Key of the advisory lock that serializes migration runs ("engage" in ASCII).
    static let lockKey: Int64 = 0x656E_6761_6765

    /// Applies what is missing. Throws before applying anything if an applied migration changed.
    /// `logger` hears of each wait for a lock (`migration.lock_wait`).
    @discardableResult
    public func migrate(_ connection: Connection, logger: Logger? = nil) throws -> Report {
        let lockWait = BoundedLockWait(lockTimeout: lockTimeout, retryPause: lockRetryPause, attempts: lockAttempts,
                                       logging: ("migration", "file"), to: logger)
        try connection.execute("SELECT pg_advisory_lock(\(Self.lockKey))")
        defer { _ = try? connection.execute("SELECT pg_advisory_unlock(\(Self.lockKey))") }
        try connection.execute("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    integer     PRIMARY KEY,
                name       text        NOT NULL,
                checksum   text        NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        let applied = try appliedChecksums(connection)
        try verify(applied: applied)
        var report = Report(applied: [], alreadyApplied: 0)
        for migration in migrations {
            if applied[migration.version] != nil {
                report.alreadyApplied += 1
                continue
            }
            do {
                try lockWait.run(migration.fileName, on: connection) { connection in
                    try connection.executeScript(unsafeSQL: migration.script)
                    try connection.execute("""
                        INSERT INTO schema_migrations (version, name, checksum)
                        VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                        """)
                }
            } catch {
                // A migration this run applied may have dropped a view for the views to recreate
                // (019 drops `extension_outcomes_daily` to change a column's type): put back what
                // the schema as it now stands allows, so the dashboards do not fail until some
                // later run gets through. Each script in its own transaction, waiting briefly.
                if !report.applied.isEmpty {
                    let briefly = BoundedLockWait(lockTimeout: lockTimeout, retryPause: lockRetryPause, attempts: min(3, lockAttempts),
                                                  logging: ("migration", "file"), to: logger)
                    for view in viewScripts { try? applyView(view, lockWait: briefly, on: connection) }
                }
                switch error {
                case let error as PostgresError: throw MigrationError.failed(file: migration.fileName, reason: error.debugDescription)
                case let error as BoundedLockWait.GaveUp: throw MigrationError(error)
                default: throw error
                }
            }
            report.applied.append(migration.fileName)
        }
        for view in viewScripts {
            try applyView(view, lockWait: lockWait, on: connection)
        }
        return report
    }

    private func applyView(_ view: (name: String, script: String), lockWait: BoundedLockWait, on connection: Connection) throws {
        do {
            try lockWait.run("views/" + view.name, on: connection) { connection in
                // Re-applied by every migrating command, changed or not: a COMMIT that waits
                // for a synchronous standby the primary lost would hold each of them (engage
                // experiment run, say) before its own bounds begin. A view lost in a failover
                // is re-applied by the next migration, so the primary's own commit will do.
                try connection.execute("SET LOCAL synchronous_commit = local")
                try connection.executeScript(unsafeSQL: view.script)
            }
        } catch let error as PostgresError {
            throw MigrationError.failed(file: "views/" + view.name, reason: error.debugDescription)
        } catch let error as BoundedLockWait.GaveUp {
            throw MigrationError(error)
        }
    }

    /// Nil when the database holds exactly these migrations; otherwise what is wrong or missing.
    public func pendingProblem(_ connection: Connection) throws -> String? {
        let exists = try connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL")
        guard try exists[0].decode(0, as: Bool.self) else { return "no migrations applied" }
        let applied = try appliedChecksums(connection)
        do { try verify(applied: applied) } catch let error as MigrationError { return error.description }
        let missing = migrations.filter { applied[$0.version] == nil }
        return missing.isEmpty ? nil : "\(missing.count) migration(s) not applied: \(missing.map(\.fileName).joined(separator: ", "))"
    }

    private func appliedChecksums(_ connection: Connection) throws -> [Int: (name: String, checksum: String)] {
        var applied: [Int: (name: String, checksum: String)] = [:]
        for row in try connection.query("SELECT version, name, checksum FROM schema_migrations ORDER BY version").rows {
            applied[try row.decode(0, as: Int.self)] = (try row.decode(1), try row.decode(2))
        }
        return applied
    }

    /// Within the caller's transaction: waits for a migration run under way to end, keeps the next
    /// from starting until the transaction ends, and throws `MigrationError.unknownApplied` when
    /// the database has a migration this engage does not know (one applied since this process
    /// started, by a newer engage). For a step that writes what a migration may have changed (the
    /// rebuild's swap, whose copies were made with the schema of the rebuild's start).
    public func holdSchema(on connection: Connection) throws {
        try connection.execute("SELECT pg_advisory_xact_lock(\(Self.lockKey))")
        try verify(applied: try appliedChecksums(connection))
    }

    private func verify(applied: [Int: (name: String, checksum: String)]) throws {
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for (version, record) in applied.sorted(by: { $0.key < $1.key }) {
            guard let migration = known[version] else {
                throw MigrationError.unknownApplied(version: version, name: record.name)
            }
            if migration.checksum != record.checksum {
                throw MigrationError.changedAfterApplied(file: migration.fileName, applied: record.checksum, current: migration.checksum)
            }
        }
    }
}
