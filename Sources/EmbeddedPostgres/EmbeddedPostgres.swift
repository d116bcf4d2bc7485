import Digest
import Foundation
import Postgres

/// A PostgreSQL cluster of engage's own, made from the installed server binaries: its data
/// directory, a Unix socket inside it and no TCP listener. Running as root, the server runs as the
/// `postgres` user, since PostgreSQL refuses to run as root.
public struct EmbeddedPostgres: Sendable {
    public struct Options: Sendable {
        public var dataDirectory: String
        /// PostgreSQL's own default.
        public static let defaultPort = 5432
        public var port: Int = Options.defaultPort
        public var database: String = "engage"
        /// Extra `postgresql.conf` settings passed as `-c name=value`.
        public var settings: [String: String] = [:]
        /// Directory holding initdb, pg_ctl and postgres; found automatically when nil.
        public var binaryDirectory: String?
        /// How long a start waits for the server to take connections. pg_ctl returns at once when
        /// the server fails; only crash recovery (replaying up to `max_wal_size` of WAL after a
        /// kill or a power cut) takes long, and with the 60 s it had a server still recovering
        /// was reported as failed and left running.
        public var startTimeoutSeconds = 900

        public init(dataDirectory: String, port: Int = Options.defaultPort, database: String = "engage",
                    settings: [String: String] = [:], binaryDirectory: String? = nil) {
            self.dataDirectory = dataDirectory
            self.port = port
            self.database = database
            self.settings = settings
            self.binaryDirectory = binaryDirectory
        }
    }

    public enum Status: Sendable, Equatable {
        case notInitialized
        case stopped
        case running
    }

    public enum StartOutcome: Sendable, Equatable {
        /// This process started the server and should stop it when done.
        case started
        /// Someone else's server was already running; leave it running.
        case alreadyRunning
    }

    public static let superuser = "engage"
    static let serverUser = "postgres"

    public let options: Options
    public let dataDirectory: String
    public let binaryDirectory: String

    public init(options: Options) throws {
        self.options = options
        dataDirectory = URL(fileURLWithPath: options.dataDirectory).standardizedFileURL.path
        binaryDirectory = try options.binaryDirectory ?? Self.findBinaryDirectory()
        if !Self.socketFits(in: dataDirectory, port: options.port) {
            throw EmbeddedPostgresError("the data directory path is too long for a Unix socket (\(dataDirectory)); choose a shorter --data-dir")
        }
    }

    /// The server's socket lives in the data directory.
    public var socketDirectory: String { dataDirectory }

    /// Whether the socket's path in `directory` stays within the 107 bytes a Unix socket's name
    /// may take (PostgreSQL refuses longer ones; with a margin).
    static func socketFits(in directory: String, port: Int) -> Bool {
        directory.utf8.count + "/.s.PGSQL.\(port)".utf8.count <= 100
    }

    /// How to reach `database` (the configured one by default).
    public func configuration(database: String? = nil) -> PostgresConfiguration {
        .unixSocket(directory: socketDirectory, port: options.port, user: Self.superuser, database: database ?? options.database)
    }

    /// The same as a `postgresql://` URL, for tools that take only URLs: the socket directory
    /// goes in the `host` parameter, percent-encoded (`postgresql://engage@/engage?host=%2Fsrv...`).
    public func connectionURL(database: String? = nil) -> String {
        var unreserved = CharacterSet.alphanumerics
        unreserved.insert(charactersIn: "-._~")
        func encoded(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text }
        return "postgresql://\(encoded(Self.superuser))@/\(encoded(database ?? options.database))"
            + "?host=\(encoded(socketDirectory))&port=\(options.port)"
    }

    public var logFile: String { dataDirectory + "/server.log" }

    /// Present while initdb runs on the empty data directory: a process or machine stopped
    /// during it leaves a directory that is no cluster (and never held data). A start that then
    /// fails says so and what to do; nothing removes the directory for the operator, since the
    /// marker cannot prove what was put there after it.
    var initializingMarker: String { dataDirectory + ".initializing" }

    private var runsAsServerUser: Bool { geteuid() == 0 }

    // MARK: Lifecycle

    public func status() throws -> Status {
        // A cluster another user runs (root's, whose server runs as postgres, seen by anyone else)
        // has a data directory this user cannot read: it read as "not initialized" (and `db start`
        // tried initdb there) or as "stopped" (and `db stop` stopped nothing).
        if access(dataDirectory, R_OK | X_OK) != 0, errno == EACCES {
            throw EmbeddedPostgresError("the local PostgreSQL in \(dataDirectory) belongs to another user: "
                + "run engage as that user (or as root, whose server runs as \(Self.serverUser))")
        }
        guard FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION") else { return .notInitialized }
        let outcome = try ProcessRunner.run([binaryDirectory + "/pg_ctl", "status", "-D", dataDirectory],
                                            asUser: Self.serverUser)
        // pg_ctl status: 0 running, 3 not running, 4 no accessible data directory.
        switch outcome.status {
        case 0: return .running
        case 4: throw EmbeddedPostgresError("pg_ctl status could not read \(dataDirectory)", output: outcome.output)
        default: return .stopped
        }
    }

    /// Creates the cluster if needed, starts it unless it already runs, and creates the database.
    /// Processes starting the same cluster at once (`engage serve` and `engage scheduler` on the
    /// default) take turns (`StartLock`): the second finds it running, where both ran initdb or
    /// pg_ctl start and one failed. A cluster this call started and could not make the database
    /// in is stopped again.
    @discardableResult
    public func start() throws -> StartOutcome {
        let parent = URL(fileURLWithPath: dataDirectory).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        let lock = try StartLock(path: dataDirectory + ".lock")
        defer { lock.release() }
        try prepareDirectory()
        let marked = FileManager.default.fileExists(atPath: initializingMarker)
        if try status() == .notInitialized {
            let empty = dataDirectoryIsEmpty
            // initdb stopped before it wrote PG_VERSION: it would refuse the directory it left.
            if marked && !empty { throw unfinishedInitdb(output: "") }
            // Only an empty directory is marked: initdb refuses any other.
            if empty { try markInitializing() }
            do {
                try initialize()
            } catch {
                // initdb that fails empties what it made: no unfinished cluster to speak of.
                if dataDirectoryIsEmpty {
                    try? FileManager.default.removeItem(atPath: initializingMarker)
                }
                throw error
            }
            try? FileManager.default.removeItem(atPath: initializingMarker)
        }
        let outcome: StartOutcome
        if try status() == .running {
            outcome = .alreadyRunning
        } else {
            do {
                try launch()
            } catch let error as EmbeddedPostgresError {
                // Marked, and nothing runs: most likely what an initdb that did not finish left.
                // Anything else (a server left running) is said as it is.
                guard marked, (try? status()) != .running else { throw error }
                throw unfinishedInitdb(output: error.description)
            }
            outcome = .started
        }
        do {
            try createDatabaseIfMissing(options.database)
        } catch {
            if outcome == .started { try? stop() }
            throw error
        }
        // A cluster that works (the marker outlived an initdb that did finish): nothing to say.
        try? FileManager.default.removeItem(atPath: initializingMarker)
        return outcome
    }

    public func stop(mode: String = "fast") throws {
        guard try status() == .running else { return }
        let outcome = try ProcessRunner.run(
            [binaryDirectory + "/pg_ctl", "stop", "-D", dataDirectory, "-m", mode, "-w", "-t", "60"],
            asUser: Self.serverUser)
        // Stopped meanwhile by someone else (another stop racing this one): stopped is stopped.
        guard outcome.status == 0 || (try? status()) == .stopped else {
            throw EmbeddedPostgresError("could not stop PostgreSQL in \(dataDirectory)", output: outcome.output)
        }
    }

    /// `pg_resetwal -e epoch` on the stopped cluster: gives its transaction counter a new epoch,
    /// the 32-bit counter unchanged (`TransactionIDRepair` explains why only the epoch). Refused by
    /// pg_resetwal unless the cluster was shut down cleanly.
    public func resetTransactionEpoch(_ epoch: UInt32) throws {
        guard try status() == .stopped else {
            throw EmbeddedPostgresError("stop the local PostgreSQL in \(dataDirectory) before resetting its transaction epoch")
        }
        let outcome = try ProcessRunner.run([binaryDirectory + "/pg_resetwal", "-e", String(epoch), "-D", dataDirectory],
                                            asUser: Self.serverUser)
        guard outcome.status == 0 else {
            throw EmbeddedPostgresError("pg_resetwal failed for \(dataDirectory)", output: outcome.output)
        }
    }

    public func createDatabaseIfMissing(_ name: String) throws {
        let connection = try connectWithRetry(database: "postgres")
        defer { connection.close() }
        let exists = try connection.query("SELECT 1 FROM pg_database WHERE datname = \(name)")
        if exists.isEmpty {
            do {
                try connection.execute("CREATE DATABASE \(identifier: name)")
            } catch let error as PostgresError where error.sqlState == "42P04" {
                // Another process created it first.
            }
        }
    }

    /// Number of other sessions connected to the cluster (this process's own connections included).
    public func clientSessionCount() throws -> Int {
        let connection = try Connection(configuration: configuration(database: "postgres"))
        defer { connection.close() }
        let rows = try connection.query("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
        return try rows[0].decode(0, as: Int.self)
    }

    // MARK: Steps

    private func prepareDirectory() throws {
        let manager = FileManager.default
        // Its parents (made by `start`, for the lock) stay traversable for the server user; only
        // the data directory itself is private.
        if !manager.fileExists(atPath: dataDirectory) {
            try manager.createDirectory(atPath: dataDirectory, withIntermediateDirectories: false,
                                        attributes: [.posixPermissions: 0o700])
        }
        guard runsAsServerUser else { return }
        try ProcessRunner.requireSuccess(["/bin/chown", "-R", "\(Self.serverUser):\(Self.serverUser)", dataDirectory],
                                         what: "give the data directory to the postgres user")
        let probe = try ProcessRunner.run(["/usr/bin/test", "-w", dataDirectory], asUser: Self.serverUser)
        guard probe.status == 0 else {
            throw EmbeddedPostgresError(
                "the postgres user cannot reach \(dataDirectory) (a parent directory is not traversable); "
                + "choose --data-dir under a directory it can reach, such as /var/tmp")
        }
    }

    /// False when it cannot be read.
    private var dataDirectoryIsEmpty: Bool {
        (try? FileManager.default.contentsOfDirectory(atPath: dataDirectory))?.isEmpty ?? false
    }

    private func unfinishedInitdb(output: String) -> EmbeddedPostgresError {
        EmbeddedPostgresError(
            "the local PostgreSQL in \(dataDirectory) does not start, and \(initializingMarker) says its initdb did not finish: "
                + "if no server ever ran there it holds no data; remove both (rm -rf \(dataDirectory) \(initializingMarker)) and run again",
            output: output)
    }

    private func markInitializing() throws {
        guard FileManager.default.createFile(atPath: initializingMarker, contents: Data()) else {
            throw EmbeddedPostgresError("could not write \(initializingMarker) before creating the cluster in \(dataDirectory)")
        }
    }

    private func initialize() throws {
        let outcome = try ProcessRunner.run(
            [binaryDirectory + "/initdb", "-D", dataDirectory, "--username=\(Self.superuser)", "--auth=trust",
             "--encoding=UTF8", "--locale=C", "--no-instructions"],
            asUser: Self.serverUser)
        guard outcome.status == 0 else {
            throw EmbeddedPostgresError("initdb failed for \(dataDirectory)", output: outcome.output)
        }
    }

    /// `text` as one word for /bin/sh, whatever it holds: `'o'\''brien'`.
    static func shellQuoted(_ text: String) -> String {
        var quoted = String.UnicodeScalarView("'".unicodeScalars)
        for scalar in text.unicodeScalars {
            if scalar == "'" { quoted.append(contentsOf: "'\\''".unicodeScalars) } else { quoted.append(scalar) }
        }
        quoted.append("'")
        return String(quoted)
    }

    private func launch() throws {
        var settings = [
            "listen_addresses": "''",
            // pg_ctl hands these options to /bin/sh: quoted for it, an apostrophe in the path too.
            "unix_socket_directories": Self.shellQuoted(socketDirectory),
            "port": String(options.port),
            "max_connections": "200",
            // Sustained ingestion writes tens of MB of WAL a second: with the stock 1 GB of WAL
            // between checkpoints they come every few seconds, and each one makes the next write
            // to every index page a full-page image; the random event ids touch pages all over
            // the idempotency index, so latency grows with the log. Checkpoints on time instead.
            "max_wal_size": "8GB",
            "shared_buffers": "256MB",
        ]
        settings.merge(options.settings) { _, new in new }
        let serverOptions = settings.keys.sorted().map { "-c \($0)=\(settings[$0]!)" }.joined(separator: " ")
        let outcome = try ProcessRunner.run(
            [binaryDirectory + "/pg_ctl", "start", "-D", dataDirectory, "-l", logFile, "-w", "-t", String(options.startTimeoutSeconds),
             "-o", serverOptions],
            asUser: Self.serverUser)
        guard outcome.status == 0 else {
            // A server still starting when the wait ended is this call's: stopped, not left to run
            // with nobody to stop it. (It may not have written its pid file yet; pg_ctl's own
            // words are translated, so its state is read rather than its message.)
            var stillRunning = false
            for _ in 0..<20 {
                stillRunning = (try? status()) == .running
                if stillRunning { break }
                Thread.sleep(forTimeInterval: 0.1)
            }
            let stopped = stillRunning && (try? stop()) != nil
            let log = (try? String(contentsOfFile: logFile, encoding: .utf8)).map { String($0.suffix(2000)) } ?? ""
            let problem = switch (stillRunning, stopped) {
            case (true, true): "PostgreSQL in \(dataDirectory) did not take connections within \(options.startTimeoutSeconds) s and was stopped"
            case (true, false): "PostgreSQL in \(dataDirectory) did not take connections within \(options.startTimeoutSeconds) s "
                + "and could not be stopped: stop it with engage db stop"
            default: "PostgreSQL did not start in \(dataDirectory)"
            }
            throw EmbeddedPostgresError(problem, output: outcome.output + "\n" + log)
        }
    }

    private func connectWithRetry(database: String) throws -> Connection {
        var lastError: Error?
        for _ in 0..<50 {
            do { return try Connection(configuration: configuration(database: database)) } catch {
                lastError = error
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        throw lastError!
    }

    /// `./.engage/postgres` under `workingDirectory`, unless its path is too long for the server's
    /// socket (a checkout deep in a tree), or this runs as root and the postgres user cannot reach
    /// that directory (a checkout under /root): then a directory of its own under /var/tmp, named
    /// after the working directory so each checkout keeps its own cluster.
    public static func defaultDataDirectory(workingDirectory: String = FileManager.default.currentDirectoryPath) -> String {
        let local = workingDirectory + "/.engage/postgres"
        let elsewhere = "/var/tmp/engage-\(SHA256.hexDigest(workingDirectory).prefix(12))/postgres"
        // The default port's socket: a checkout whose cluster ran there keeps it (a port given
        // with --port whose name is longer still meets init's check, with its message).
        guard socketFits(in: local, port: Options.defaultPort) else { return elsewhere }
        guard geteuid() == 0 else { return local }
        let reachable = (try? ProcessRunner.run(["/usr/bin/test", "-x", workingDirectory], asUser: serverUser))?.status == 0
        return reachable ? local : elsewhere
    }

    /// Installed PostgreSQL client program (psql) next to the server binaries, or on PATH.
    public func clientProgram(_ name: String) -> String {
        let beside = binaryDirectory + "/" + name
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        return "/usr/bin/" + name
    }

    /// The newest installed server: `$ENGAGE_POSTGRES_BIN`, Debian's `/usr/lib/postgresql/N/bin`, or PATH.
    static func findBinaryDirectory() throws -> String {
        let manager = FileManager.default
        if let explicit = ProcessInfo.processInfo.environment["ENGAGE_POSTGRES_BIN"] {
            return explicit
        }
        let debianRoot = "/usr/lib/postgresql"
        if let versions = try? manager.contentsOfDirectory(atPath: debianRoot) {
            let candidates = versions.compactMap(Int.init).sorted(by: >)
            for version in candidates where manager.isExecutableFile(atPath: "\(debianRoot)/\(version)/bin/initdb") {
                return "\(debianRoot)/\(version)/bin"
            }
        }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            if manager.isExecutableFile(atPath: "\(directory)/initdb") && manager.isExecutableFile(atPath: "\(directory)/pg_ctl") {
                return String(directory)
            }
        }
        throw EmbeddedPostgresError("no PostgreSQL server binaries found (install the postgresql package, or set ENGAGE_POSTGRES_BIN)")
    }
}

extension ProcessRunner {
    static func requireSuccess(_ arguments: [String], what: String) throws {
        let outcome = try run(arguments)
        guard outcome.status == 0 else { throw EmbeddedPostgresError("could not \(what)", output: outcome.output) }
    }
}
