import EmbeddedPostgres
import EventStore
import Foundation
import Glibc
import Postgres
import Synchronization

/// A pg_auto_failover formation on this machine: a monitor and two PostgreSQL nodes, a primary and
/// a synchronous secondary, three clusters in a temporary directory, each under a `pg_autoctl`
/// process of its own (as the postgres user when this runs as root), on free loopback ports,
/// with `--auth trust --no-ssl`.
///
/// The formation takes a while to build (half a minute to a minute and a half), so a test process
/// builds it once (``shared()``) and its tests take turns: each leaves it settled, with a primary
/// and a synchronous secondary, whichever node is which. It is stopped and deleted when the test
/// process ends, even if it crashes.
public final class AutoFailoverFormation: Sendable {
    /// Monitor and keeper settings that shorten failure detection from the defaults (about 50 s
    /// from a lost primary to a writable secondary) to about 10 s; docs/high-availability.md
    /// explains each.
    public struct Settings: Sendable {
        /// `pgautofailover.*` settings of the monitor (milliseconds or counts).
        public var monitor: [String: Int] = [
            "health_check_period": 1000,
            "health_check_timeout": 1000,
            "health_check_max_retries": 1,
            "health_check_retry_delay": 500,
            "node_considered_unhealthy_timeout": 3000,
            "primary_demote_timeout": 5000,
        ]
        /// Keepers' `timeout.network_partition_timeout` (seconds): a primary that can reach neither
        /// the monitor nor its standby for this long demotes itself. It must stay below
        /// `primary_demote_timeout`, or a partitioned primary could still take writes when the
        /// secondary is promoted.
        public var networkPartitionTimeoutSeconds = 3

        public init() {}
    }

    public struct Node: Sendable, Hashable, CustomStringConvertible {
        public let name: String
        public let port: Int
        let dataDirectory: String

        public var description: String { "\(name) (127.0.0.1:\(port))" }
    }

    /// A node as the monitor sees it.
    public struct NodeState: Sendable, Equatable, CustomStringConvertible {
        public var name: String
        public var reported: String
        public var assigned: String
        /// The monitor's last health check of the node connected (`health = 1`).
        public var healthy: Bool
        /// When the monitor last checked the node's health, and when its keeper last reported
        /// (the monitor's clock, as text: only compared, never read as a time).
        var checkedAt: String
        var reportedAt: String

        public var description: String { "\(name) \(reported)/\(assigned)\(healthy ? "" : " (unhealthy)")" }

        /// Everything but the times: what must not change while the formation is stable.
        var role: [String] { [name, reported, assigned, String(healthy)] }
    }

    public static let databaseName = "engage"
    static let serverUser = "postgres"

    public let directory: String
    /// XDG_RUNTIME_DIR of every keeper, where each keeps its pid file; a machine's tmpfs, which
    /// its death empties. Its path in a process's environment marks the formation's processes.
    var runtimeDirectory: String { directory + "/run" }
    public let monitorPort: Int
    public let nodes: [Node]
    let settings: Settings
    let binaryDirectory: String
    private let keepers = Mutex<[String: ChildProcess]>([:])

    private static let instance = Mutex<(formation: Result<AutoFailoverFormation, Error>?, builds: Int)>((nil, 0))

    /// The formation of this test process, built on first use (blocking: call it off the pool).
    public static func shared() throws -> AutoFailoverFormation {
        try instance.withLock { instance in
            if instance.formation == nil { instance = (Result { try AutoFailoverFormation(settings: Settings()) }, 1) }
            return try instance.formation!.get()
        }
    }

    /// The formation of this test process, stable (``waitUntilStable(observations:timeout:)``),
    /// for a test to start from. One that does not get stable within `timeout` (a previous test
    /// left it stuck: a node that never converges to its assigned state) is torn down and a new
    /// one built in its place; the test log says which happened. Blocking.
    public static func stableShared(timeout: Duration = .seconds(120)) throws -> AutoFailoverFormation {
        let formation = try shared()
        do {
            try formation.waitUntilStable(timeout: timeout)
            return formation
        } catch {
            print("formation: not stable within \(timeout), rebuilding it; \(error)\n\(formation.diagnostics())")
        }
        return try instance.withLock { instance in
            if case .success(let current) = instance.formation, current === formation {
                formation.tearDown()
                let builds = instance.builds + 1
                instance = (Result { try AutoFailoverFormation(settings: Settings(), directory: "/tmp/engage-paf-\(getpid())-\(builds)") }, builds)
            }
            let rebuilt = try instance.formation!.get()
            print("formation: rebuilt in \(rebuilt.directory)")
            return rebuilt
        }
    }

    /// Builds and starts a formation in `directory` (deleted first); returns once its primary has
    /// a synchronous secondary and the engage database is migrated.
    public init(settings: Settings, directory: String = "/tmp/engage-paf-\(getpid())") throws {
        self.settings = settings
        binaryDirectory = try Self.serverWithExtension()
        self.directory = directory
        let ports = try LocalSystem.freePorts(3)
        monitorPort = ports[0]
        nodes = [Node(name: "node1", port: ports[1], dataDirectory: directory + "/node1"),
                 Node(name: "node2", port: ports[2], dataDirectory: directory + "/node2")]
        try prepareDirectory()
        watchForExit()

        try run(["create", "monitor", "--pgctl", binaryDirectory + "/pg_ctl", "--pgdata", directory + "/monitor",
                 "--pgport", String(monitorPort), "--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl"],
                what: "create the monitor")
        try startKeeper(name: "monitor", ["run", "--pgdata", directory + "/monitor"])
        try configureMonitor()

        try createNode(nodes[0])
        // The engage tests need a server, not crash safety of the machine: skip the disk flushes.
        // Set before the secondary copies the primary, so both nodes have it.
        try Self.retrying(for: .seconds(60), "turn fsync off on node1") {
            try withPrimaryConnection(nodes[0], database: "postgres") { connection in
                try connection.execute("ALTER SYSTEM SET fsync = off")
                try connection.execute("SELECT pg_reload_conf()")
            }
        }
        try createNode(nodes[1], forcingCheckpointsOn: nodes[0])
        let primary = try waitUntilSettled(timeout: .seconds(180))
        _ = try withPrimaryConnection(primary, database: Self.databaseName) { try Migrator.fromSQLDirectory().migrate($0) }
    }

    /// The engage database through both nodes: libpq connects to whichever accepts writes.
    public var database: PostgresConfiguration {
        let hosts = nodes.map { "127.0.0.1:\($0.port)" }.joined(separator: ",")
        return PostgresConfiguration(
            connectionString: "postgresql://\(Self.serverUser)@\(hosts)/\(Self.databaseName)?target_session_attrs=read-write&connect_timeout=2",
            connectTimeoutSeconds: 2)
    }

    /// One node's database, whatever its role.
    public func configuration(of node: Node, database: String = databaseName) -> PostgresConfiguration {
        PostgresConfiguration(connectionString: "postgresql://\(Self.serverUser)@127.0.0.1:\(node.port)/\(database)?connect_timeout=2",
                              connectTimeoutSeconds: 2)
    }

    public func node(named name: String) -> Node? { nodes.first { $0.name == name } }

    // MARK: State

    /// The nodes as the monitor sees them.
    public func states() throws -> [NodeState] {
        let connection = try Connection(configuration: monitorDatabase)
        defer { connection.close() }
        return try connection.query("""
            SELECT nodename, reportedstate::text, goalstate::text, health = 1, healthchecktime::text, reporttime::text
            FROM pgautofailover.node ORDER BY nodeid
            """).rows.map { row in
                NodeState(name: try row.decode(0), reported: try row.decode(1), assigned: try row.decode(2),
                          healthy: try row.decode(3), checkedAt: try row.decode(4), reportedAt: try row.decode(5))
            }
    }

    /// Waits until one node is primary and the other its synchronous secondary, both as reported
    /// and as assigned, and the primary counts the secondary in its quorum; returns the primary.
    /// Blocking.
    @discardableResult
    public func waitUntilSettled(primary expected: Node? = nil, timeout: Duration = .seconds(180)) throws -> Node {
        var primary: Node?
        try waitForStates(timeout: timeout) { states in
            guard let node = settledPrimary(states), expected == nil || expected == node,
                  (try? self.hasSynchronousStandby(node)) == true
            else { return false }
            primary = node
            return true
        }
        return primary!
    }

    /// Waits until the formation is settled (``waitUntilSettled(primary:timeout:)``) and has
    /// stayed so, every node healthy and in its assigned state, with no change at all, for
    /// `observations` health checks of every node by the monitor and at least one report of
    /// every keeper; returns the primary. Settled alone is a single look: on a starved machine
    /// the monitor may be about to act on a late health check or a silent keeper, and a planned
    /// operation (a switchover, a kill) started then meets a failover under way. Counting the
    /// monitor's own checks waits for its pace, whatever the machine's. Blocking.
    @discardableResult
    public func waitUntilStable(observations: Int = 3, timeout: Duration = .seconds(180)) throws -> Node {
        let started = ContinuousClock.now
        var quiet: (roles: [[String]], checks: [String: Set<String>], reports: [String: Set<String>])?
        var primary: Node?
        try waitForStates(timeout: timeout) { states in
            guard let node = settledPrimary(states), states.allSatisfy({ $0.healthy && $0.reported == $0.assigned }) else {
                quiet = nil
                return false
            }
            if quiet?.roles != states.map(\.role) { quiet = (states.map(\.role), [:], [:]) }
            for state in states {
                quiet!.checks[state.name, default: []].insert(state.checkedAt)
                quiet!.reports[state.name, default: []].insert(state.reportedAt)
            }
            // The first look's times were set before the quiet stretch began: one more of each.
            guard states.allSatisfy({ quiet!.checks[$0.name]!.count > observations && quiet!.reports[$0.name]!.count > 1 }) else {
                return false
            }
            guard (try? self.hasSynchronousStandby(node)) == true else {
                quiet = nil
                return false
            }
            primary = node
            return true
        }
        print("formation: stable with \(primary!) primary (\(observations) health checks unchanged) after \(ContinuousClock.now - started)")
        return primary!
    }

    /// The node that is primary, reported and assigned, beside a secondary, reported and assigned.
    private func settledPrimary(_ states: [NodeState]) -> Node? {
        guard let found = states.first(where: { $0.reported == "primary" && $0.assigned == "primary" }),
              states.contains(where: { $0.reported == "secondary" && $0.assigned == "secondary" })
        else { return nil }
        return node(named: found.name)
    }

    /// Waits until the monitor has made a node other than `previous` primary and the node says
    /// it is (a lost primary keeps its last reported state); returns it. Blocking.
    public func waitForNewPrimary(replacing previous: Node, timeout: Duration = .seconds(120)) throws -> Node {
        let writable: Set = ["primary", "wait_primary"]
        var primary: Node?
        try waitForStates(timeout: timeout) { states in
            primary = states.first { $0.name != previous.name && writable.contains($0.reported) && writable.contains($0.assigned) }
                .flatMap { self.node(named: $0.name) }
            return primary != nil
        }
        return primary!
    }

    private func hasSynchronousStandby(_ node: Node) throws -> Bool {
        try withPrimaryConnection(node, database: "postgres") { connection in
            let rows = try connection.query("""
                SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND sync_state IN ('sync', 'quorum')
                """)
            guard try rows[0].decode(0, as: Int.self) > 0,
                  !(try connection.query("SHOW synchronous_standby_names")[0].decode(0, as: String.self)).isEmpty
            else { return false }
            // Commits wait for the standby only once the checkpointer has taken the reloaded
            // setting (it publishes "synchronous standbys defined" to every backend); a backend's
            // SHOW sees the setting before that. A CHECKPOINT returns after the checkpointer
            // processed its pending reload, so from here on commits really wait.
            try connection.execute("CHECKPOINT")
            return true
        }
    }

    // MARK: Faults

    /// Loses `node` at once: its keeper and its postmaster, with every process they started,
    /// stopped together and killed with SIGKILL, as when a machine dies.
    public func kill(_ node: Node) throws {
        guard let keeper = keepers.withLock({ $0.removeValue(forKey: node.name) }) else {
            throw FormationError("\(node) has no keeper running")
        }
        let tree = LocalSystem.processTree(of: keeper.pid)
        for pid in tree { Glibc.kill(pid, SIGSTOP) }
        for pid in tree { Glibc.kill(pid, SIGKILL) }
        keeper.signal(SIGKILL)
        var collected = false
        for _ in 0..<500 where !collected {
            collected = keeper.exitStatus() != nil
            if !collected { usleep(10_000) }
        }
        // The postmaster's children are not the keeper's to reap: wait for them to be gone.
        for _ in 0..<500 where tree.contains(where: { Glibc.kill($0, 0) == 0 && !LocalSystem.isZombie($0) }) { usleep(10_000) }
        // A machine that dies loses its runtime directory (XDG_RUNTIME_DIR, a tmpfs), the keeper's
        // pid file with it. Left here, it names a pid that another process may hold by the time the
        // keeper starts again (pid_max is 32768 on the CI machines), and the keeper then refuses to
        // start ("An instance of pg_autoctl is already running with PID ...": CI, 2026-12-05, the
        // switchover test out of time while its secondary had no keeper for minutes).
        try? FileManager.default.removeItem(atPath: "\(runtimeDirectory)/pg_autoctl\(node.dataDirectory)/pg_autoctl.pid")
    }

    /// Starts `node`'s keeper again; it rejoins as a secondary (pg_rewind, or a new base backup).
    public func restart(_ node: Node) throws {
        try startKeeper(name: node.name, ["run", "--pgdata", node.dataDirectory])
    }

    /// `pg_autoctl perform switchover` from a stable formation: the monitor makes the secondary
    /// primary and the primary its secondary. Returns the new primary once the formation is
    /// stable again. Blocking.
    ///
    /// A switchover that fails is not the end: the monitor refuses one while it is busy with a
    /// failover (`pg_autoctl` 2.0 exits 6, `EXIT_CODE_MONITOR`), and `pg_autoctl` exits 12
    /// (`EXIT_CODE_INTERNAL_ERROR`) when its own wait fails (its `get_nodes` call with an empty
    /// group errors, and no notification of the new primary came within `--wait`), whether or
    /// not the monitor completes it (cli_perform.c). So it waits until the formation is stable
    /// again; the primary changed means done, the same primary means it is asked again, all
    /// within `timeout`.
    @discardableResult
    public func switchover(timeout: Duration = .seconds(300)) throws -> Node {
        let deadline = ContinuousClock.now + timeout
        func remaining() -> Duration { max(deadline - ContinuousClock.now, .zero) }
        let before = try waitUntilStable(timeout: remaining())
        var attempt = 0
        while true {
            attempt += 1
            let wait = max(1, min(120, Int(remaining().components.seconds)))
            let outcome = try ProcessRunner.run(["/usr/bin/timeout", String(wait + 30)]
                                                + command(["perform", "switchover", "--pgdata", directory + "/monitor", "--wait", String(wait)]))
            if outcome.status != 0 {
                let said = outcome.output.split(separator: "\n").filter { $0.contains("ERROR") }.suffix(3).joined(separator: " / ")
                // Anything but the monitor's refusal (6), pg_autoctl's failed wait (12) or
                // timeout's (124) is a mistake of the call itself: asking again cannot help.
                guard [6, 12, 124].contains(outcome.status) else {
                    throw FormationError("pg_autoctl perform switchover exited \(outcome.status) (\(said)):\n\(outcome.output.suffix(3000))")
                }
                print("formation: switchover attempt \(attempt) from \(before) exited \(outcome.status) (\(said)); waiting for it to be stable")
            }
            let after: Node
            do { after = try waitUntilStable(timeout: remaining()) } catch {
                throw FormationError("the switchover from \(before) did not leave a stable formation within \(timeout) "
                                     + "(attempt \(attempt), pg_autoctl exit \(outcome.status)):\n\(outcome.output.suffix(3000))\n"
                                     + "\(serverProcesses())\n\(error)")
            }
            if after != before { return after }
            guard remaining() > .zero else {
                throw FormationError("\(before) still primary after \(attempt) switchover attempts within \(timeout):\n\(outcome.output.suffix(3000))")
            }
            print("formation: \(before) still primary after switchover attempt \(attempt); asking again")
        }
    }

    // MARK: Split brain

    /// Starts a switchover and returns at once, as `pg_autoctl perform switchover` does before it
    /// waits: the monitor sets the primary to `draining` and the secondary to `prepare_promotion`.
    public func startSwitchover() throws {
        let connection = try Connection(configuration: monitorDatabase)
        defer { connection.close() }
        try connection.execute("SELECT pgautofailover.perform_failover()")
    }

    /// Freezes `node`'s keeper loop (its `pg_autoctl: node active` service, SIGSTOP), not its
    /// supervisor, its PostgreSQL controller or its server: the server goes on taking commits,
    /// but nothing stops it when the monitor demotes the node (a keeper that hangs, a machine too
    /// busy to run it). Returns what to `thaw`. (Freezing every pg_autoctl process of the node was
    /// tried first: its server then could not be stopped once thawed, `pg_ctl stop --mode fast`
    /// timing out, likely the controller's restart that `stopServerImmediately` describes.)
    public func freezeKeeper(_ node: Node) throws -> [Int32] {
        guard let keeper = keepers.withLock({ $0[node.name] }) else { throw FormationError("\(node) has no keeper running") }
        let frozen = LocalSystem.processTree(of: keeper.pid).filter { pid in
            guard LocalSystem.executable(of: pid)?.hasSuffix("/pg_autoctl") == true,
                  let command = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8) else { return false }
            return command.contains("node active") || command.contains("node-active")
        }
        guard !frozen.isEmpty else { throw FormationError("\(node)'s keeper has no node-active service to freeze") }
        for pid in frozen { Glibc.kill(pid, SIGSTOP) }
        return frozen
    }

    /// Freezes (SIGSTOP) every pg_autoctl process of `node`: its keeper and its services, the
    /// PostgreSQL controller included, so that nothing restarts a server that stops and nothing
    /// acts on the monitor's goals. Returns what to `thaw`.
    public func freezeServices(_ node: Node) throws -> [Int32] {
        guard let keeper = keepers.withLock({ $0[node.name] }) else { throw FormationError("\(node) has no keeper running") }
        let frozen = LocalSystem.processTree(of: keeper.pid).filter { LocalSystem.executable(of: $0)?.hasSuffix("/pg_autoctl") == true }
        guard !frozen.isEmpty else { throw FormationError("\(node)'s keeper has no pg_autoctl process to freeze") }
        for pid in frozen { Glibc.kill(pid, SIGSTOP) }
        return frozen
    }

    /// The process id of `node`'s keeper, nil when none runs.
    public func keeperPID(_ node: Node) -> Int32? {
        keepers.withLock { $0[node.name]?.pid }
    }

    public func thaw(_ pids: [Int32]) {
        for pid in pids { Glibc.kill(pid, SIGCONT) }
    }

    /// Makes `node`'s (the primary's) commits skip their wait for the synchronous standby while
    /// every session still reads the setting that names it, as after pg_auto_failover turns
    /// synchronous replication back on and before the checkpointer publishes it: the setting is
    /// emptied (and the checkpointer takes that), the checkpointer frozen (SIGSTOP), the setting
    /// restored. Returns the checkpointer, to `thaw` (it then takes the reload and commits wait
    /// again).
    public func skipSynchronousWaits(on node: Node) throws -> Int32 {
        try withPrimaryConnection(node, database: "postgres") { connection in
            let names: String = try connection.query("SHOW synchronous_standby_names")[0].decode(0)
            guard !names.isEmpty else { throw FormationError("\(node) has no synchronous standby to skip") }
            try setSynchronousStandbyNames("", on: node)
            try connection.execute("CHECKPOINT")
            let checkpointer: Int32 = try connection.query("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")[0].decode(0)
            Glibc.kill(checkpointer, SIGSTOP)
            try setSynchronousStandbyNames(names, on: node)
            return checkpointer
        }
    }

    /// Stops `node`'s server at once (`pg_ctl stop -m immediate`), as a keeper that demotes it
    /// would stop it, and returns once that postmaster has exited. `pg_ctl -w` is not what waits:
    /// it waits for `postmaster.pid` to go, and the node's PostgreSQL controller (not frozen)
    /// restarts a server that stopped while the node should be running, sometimes before
    /// `pg_ctl` looked again; `pg_ctl` then waited a minute for the new server and gave up (CI,
    /// once). The server the controller may start is the keeper's to demote once thawed.
    public func stopServerImmediately(_ node: Node) throws {
        let pidFile = node.dataDirectory + "/postmaster.pid"
        guard let postmaster = (try? String(contentsOfFile: pidFile, encoding: .utf8))?.split(separator: "\n").first.flatMap({ Int32($0) }) else {
            throw FormationError("\(node) has no running server (no readable \(pidFile))")
        }
        let stop = [binaryDirectory + "/pg_ctl", "stop", "-D", node.dataDirectory, "-m", "immediate", "-W"]
        let outcome = try ProcessRunner.run(stop, asUser: geteuid() == 0 ? Self.serverUser : nil)
        guard outcome.status == 0 else { throw FormationError("could not stop \(node)'s server: \(outcome.output.suffix(2000))") }
        try Self.retrying(for: .seconds(60), "see \(node)'s postmaster \(postmaster) exit") {
            guard !LocalSystem.isRunning(postmaster) else { throw FormationError("postmaster \(postmaster) still runs") }
        }
    }

    /// `CHECKPOINT` on `node`: returns once its checkpointer has taken every reload before it.
    public func checkpoint(_ node: Node) throws {
        try withPrimaryConnection(node, database: "postgres") { _ = try $0.execute("CHECKPOINT") }
    }

    /// `ALTER SYSTEM` and a reload; returns once a new session reads the value.
    private func setSynchronousStandbyNames(_ names: String, on node: Node) throws {
        try withPrimaryConnection(node, database: "postgres") { connection in
            let literal = "'" + names.replacingOccurrences(of: "'", with: "''") + "'"
            try connection.execute(SQL(unsafeSQL: "ALTER SYSTEM SET synchronous_standby_names = \(literal)"))
            try connection.execute("SELECT pg_reload_conf()")
        }
        try Self.retrying(for: .seconds(30), "reload synchronous_standby_names on \(node)") {
            let seen: String = try withPrimaryConnection(node, database: "postgres") { try $0.query("SHOW synchronous_standby_names")[0].decode(0) }
            guard seen == names else { throw FormationError("\(node) still reads '\(seen)'") }
        }
    }

    // MARK: Building

    /// The binaries of the newest installed PostgreSQL that has the monitor's extension.
    static func serverWithExtension() throws -> String {
        let manager = FileManager.default
        guard manager.isExecutableFile(atPath: "/usr/bin/pg_autoctl") else {
            throw FormationError("pg_autoctl is not installed (Debian package postgresql-15-auto-failover): run scripts/install-deps")
        }
        let versions = ((try? manager.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).compactMap(Int.init).sorted(by: >)
        for version in versions where manager.fileExists(atPath: "/usr/share/postgresql/\(version)/extension/pgautofailover.control") {
            return "/usr/lib/postgresql/\(version)/bin"
        }
        throw FormationError("no installed PostgreSQL has the pgautofailover extension (postgresql-N-auto-failover)")
    }

    private func prepareDirectory() throws {
        try? FileManager.default.removeItem(atPath: directory)
        // The keepers' pid files go in run/ (XDG_RUNTIME_DIR), which must exist.
        try FileManager.default.createDirectory(atPath: runtimeDirectory, withIntermediateDirectories: true)
        if geteuid() == 0 {
            let outcome = try ProcessRunner.run(["/bin/chown", "-R", "\(Self.serverUser):\(Self.serverUser)", directory])
            guard outcome.status == 0 else { throw FormationError("could not give \(directory) to \(Self.serverUser): \(outcome.output)") }
        }
    }

    private var monitorDatabase: PostgresConfiguration {
        PostgresConfiguration(connectionString: "postgresql://\(Self.serverUser)@127.0.0.1:\(monitorPort)/pg_auto_failover?connect_timeout=2",
                              connectTimeoutSeconds: 2)
    }

    private func configureMonitor() throws {
        let connection = try Self.retrying(for: .seconds(60), "connect to the monitor") { try Connection(configuration: monitorDatabase) }
        defer { connection.close() }
        for (name, value) in settings.monitor.sorted(by: { $0.key < $1.key }) {
            try connection.execute(SQL(unsafeSQL: "ALTER SYSTEM SET pgautofailover.\(name) = \(value)"))
        }
        try connection.execute("SELECT pg_reload_conf()")
    }

    /// `pg_autoctl create postgres` (which registers the node and, for a secondary, copies the
    /// primary), then the keeper settings, then the keeper.
    private func createNode(_ node: Node, forcingCheckpointsOn source: Node? = nil) throws {
        let create = try ChildProcess(command([
            "create", "postgres", "--pgctl", binaryDirectory + "/pg_ctl", "--pgdata", node.dataDirectory,
            "--pgport", String(node.port), "--hostname", "127.0.0.1", "--name", node.name, "--dbname", Self.databaseName,
            "--monitor", "postgres://autoctl_node@127.0.0.1:\(monitorPort)/pg_auto_failover", "--auth", "trust", "--no-ssl",
        ]), environment: ["PATH": "/usr/bin:/bin"], outputPath: "\(directory)/\(node.name)-create.log")
        let deadline = ContinuousClock.now + .seconds(300)
        while create.exitStatus() == nil && ContinuousClock.now < deadline {
            // pg_basebackup starts with a checkpoint at the primary's pace (minutes on an idle
            // server); asking for an immediate one makes the one in progress finish at once.
            if let source { _ = try? withPrimaryConnection(source, database: "postgres") { try $0.execute("CHECKPOINT") } }
            usleep(500_000)
        }
        guard let status = create.exitStatus(), status == 0 else {
            throw FormationError("could not create \(node.name) (exit \(create.exitStatus().map(String.init) ?? "none: still running")):\n"
                                 + keeperLogs())
        }
        try run(["config", "set", "--pgdata", node.dataDirectory, "timeout.network_partition_timeout",
                 String(settings.networkPartitionTimeoutSeconds)], what: "set \(node.name)'s network partition timeout")
        try startKeeper(name: node.name, ["run", "--pgdata", node.dataDirectory])
    }

    private func withPrimaryConnection<T>(_ node: Node, database: String, _ body: (Connection) throws -> T) throws -> T {
        let connection = try Connection(configuration: configuration(of: node, database: database))
        defer { connection.close() }
        return try body(connection)
    }

    private func waitForStates(timeout: Duration, _ condition: ([NodeState]) throws -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        var last: [NodeState] = []
        var hurried = ContinuousClock.now
        var idleRejoins: [String: (since: ContinuousClock.Instant, output: UInt64)] = [:]
        while ContinuousClock.now < deadline {
            if let states = try? states() {
                last = states
                if try condition(states) { return }
                if ContinuousClock.now - hurried >= .seconds(1) {
                    hurryBaseBackups(states)
                    restartIdleRejoins(states, idleSince: &idleRejoins)
                    hurried = ContinuousClock.now
                }
            }
            usleep(100_000)
        }
        throw FormationError("the formation did not reach the expected state within \(timeout); last seen: \(last)\n" + keeperLogs())
    }

    /// A `CHECKPOINT` on the node that takes writes while a keeper of this formation runs
    /// pg_basebackup, as an operator would do for a node that rejoins by a base backup.
    ///
    /// A demoted primary rejoins by pg_rewind, and by a base backup when pg_rewind fails
    /// (pg_autoctl 2.0's `fsm_rewind_or_init`). After a primary stopped at once (the split-brain
    /// test), pg_rewind fails now and then: pg_autoctl first runs the server through crash
    /// recovery, stops it with SIGTERM and, its wait loop testing a status never set, starts
    /// pg_rewind without waiting for the server to exit (`postgres_maybe_do_crash_recovery`,
    /// primary_standby.c; traced here: pg_rewind started 110 ms before the postmaster exited). A
    /// pg_rewind that reads pg_control before the shutdown restartpoint wrote it (state "in
    /// archive recovery") runs crash recovery itself in single-user mode, which the postmaster's
    /// lock file refuses: "postgres single-user mode in target cluster failed". The base backup
    /// then waits for a spread checkpoint on the primary, as pg_autoctl runs pg_basebackup
    /// without `--checkpoint=fast` (pgctl.c): paced to end at 0.9 × checkpoint_timeout (4.5
    /// minutes) once the load has dirtied enough buffers, the node down all along, longer than
    /// the waits here allow (56 s for a young formation here; in CI a node once stayed
    /// `demoted` past 180 s). An immediate checkpoint requested meanwhile makes the one in
    /// progress finish at once (1 s here); ``createNode`` does the same for the first copy.
    private func hurryBaseBackups(_ states: [NodeState]) {
        let keepers = keepers.withLock { Array($0.values) }
        let copying = keepers.contains { keeper in
            LocalSystem.processTree(of: keeper.pid).contains { LocalSystem.executable(of: $0)?.hasSuffix("/pg_basebackup") == true }
        }
        guard copying else { return }
        for state in states where ["primary", "wait_primary", "single"].contains(state.reported) {
            guard let node = node(named: state.name) else { continue }
            do {
                // Bounded: a server whose checkpointer a test stopped would never answer, and
                // this runs inside a wait that checks its deadline only between calls.
                try withPrimaryConnection(node, database: "postgres") { connection in
                    try connection.execute("SET statement_timeout = '5s'")
                    try connection.execute("CHECKPOINT")
                }
                print("formation: a keeper runs pg_basebackup; asked \(node) for a checkpoint")
            } catch {
                print("formation: a keeper runs pg_basebackup; \(node) refused a checkpoint: \(error)")
            }
        }
    }

    /// How long a node may be assigned `catchingup` while its keeper runs neither pg_rewind nor
    /// pg_basebackup and writes nothing or runs no server (and the node reports another state
    /// while unhealthy, or reports `catchingup` too), before its keeper is restarted.
    static let idleRejoinLimit = Duration.seconds(60)

    /// Restarts the keeper of a node that should be rejoining and does nothing, as an operator
    /// restarts the service. A demoted primary's pg_rewind can fail by the race described above
    /// (`hurryBaseBackups`); pg_autoctl 2.0 then falls back to a base backup and first stops the
    /// server, and once (CI, 2026-12-05, a switchover) its keeper logged "Target directory
    /// exists: stopping PostgreSQL" and nothing more for seven minutes while its own controller
    /// kept the server running: the formation never had its secondary back, and the test ran
    /// out of time. A keeper restarted there runs the rejoin again (rewind, or a base backup),
    /// and the node becomes secondary. Only nodes that are not primary are touched, and only
    /// when the keeper's output (its own lines and its server's, which logs crash recovery's
    /// progress every 10 s: `log_startup_progress_interval`) stood still all along: a slow
    /// recovery before pg_rewind is not idle.
    ///
    /// A node that reports `catchingup` and stands still is rescued too, healthy or not: once
    /// (CI, 2026-12-05, the split-brain test) the keeper's controller found the server not running
    /// while pg_rewind rewrote its directory and started it ("PostgreSQL was not running,
    /// restarted"), before pg_rewind wrote the standby's configuration; the server came up on the
    /// old timeline, read-only, streaming from no one and logging nothing, the monitor saw it
    /// answer (healthy), and the node stayed `catchingup` for 15 minutes. Its keeper and server
    /// stopped and the keeper started again, the server starts with the configuration pg_rewind
    /// left and streams. A node that really catches up streams in seconds here.
    private func restartIdleRejoins(_ states: [NodeState], idleSince: inout [String: (since: ContinuousClock.Instant, output: UInt64)]) {
        let now = ContinuousClock.now
        for state in states {
            guard state.assigned == "catchingup", state.reported == "catchingup" || !state.healthy,
                  let node = node(named: state.name), let keeper = keepers.withLock({ $0[state.name] })
            else {
                idleSince[state.name] = nil
                continue
            }
            let programs = LocalSystem.processTree(of: keeper.pid).map { LocalSystem.executable(of: $0) ?? "" }
            guard !programs.contains(where: { $0.hasSuffix("/pg_basebackup") || $0.hasSuffix("/pg_rewind") }) else {
                idleSince[state.name] = nil
                continue
            }
            // No server at all is idle however much the keeper writes: once (CI, 2026-12-05) a
            // keeper whose server could not start before pg_rewind (another postmaster's lock file)
            // logged "Is PostgreSQL up and running?" every 30 s for ten minutes and did nothing else.
            let serverDown = !programs.contains { $0.hasSuffix("/postgres") }
            let output = ((try? FileManager.default.attributesOfItem(atPath: keeper.outputPath))?[.size] as? NSNumber)?.uint64Value ?? 0
            guard let idle = idleSince[state.name], idle.output == output || serverDown else {
                idleSince[state.name] = (now, output)
                continue
            }
            guard now - idle.since >= Self.idleRejoinLimit else { continue }
            do {
                try kill(node)
                try restart(node)
                print("formation: \(node) assigned catchingup did nothing for \(now - idle.since) (reported \(state.reported)); its keeper restarted")
            } catch {
                print("formation: \(node) assigned catchingup did nothing for \(now - idle.since); restarting its keeper failed: \(error)")
            }
            idleSince[state.name] = nil
        }
    }

    // MARK: Processes

    /// `pg_autoctl` with everything it keeps (configuration, state, pid files) in the formation's
    /// directory, as the postgres user when this runs as root.
    private func command(_ arguments: [String]) -> [String] {
        let environment = ["HOME=\(directory)", "XDG_CONFIG_HOME=\(directory)/config", "XDG_DATA_HOME=\(directory)/data",
                           "XDG_RUNTIME_DIR=\(runtimeDirectory)", "PATH=\(binaryDirectory):/usr/bin:/bin"]
        let program = ["/usr/bin/env"] + environment + ["/usr/bin/pg_autoctl"] + arguments
        return geteuid() == 0 ? ["/usr/sbin/runuser", "-u", Self.serverUser, "--"] + program : program
    }

    /// Runs a `pg_autoctl` command to completion, for at most five minutes.
    private func run(_ arguments: [String], what: String) throws {
        let outcome = try ProcessRunner.run(["/usr/bin/timeout", "300"] + command(arguments))
        guard outcome.status == 0 else { throw FormationError("could not \(what) (exit \(outcome.status)):\n\(outcome.output.suffix(3000))") }
    }

    private func startKeeper(name: String, _ arguments: [String]) throws {
        let log = "\(directory)/\(name)-\(keeperLogCount(name)).log"
        let child = try ChildProcess(command(arguments), environment: ["PATH": "/usr/bin:/bin"], outputPath: log)
        keepers.withLock { $0[name] = child }
    }

    private func keeperLogCount(_ name: String) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix(name + "-") }.count
    }

    /// The last lines of every keeper's output, for failures.
    public func keeperLogs(lines: Int = 60) -> String {
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".log") }.sorted()
        return files.map { file in
            let text = (try? String(contentsOfFile: directory + "/" + file, encoding: .utf8)) ?? ""
            return "--- \(file)\n" + text.split(separator: "\n").suffix(lines).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// What explains a failure after the fact (the formation's directory is deleted with the test
    /// process): the monitor's last state changes, oldest first, with their times; the last lines
    /// of every keeper's output; and the last lines of each server's own log.
    public func diagnostics(lines: Int = 80) -> String {
        var parts: [String] = []
        do {
            let monitor = try Connection(configuration: monitorDatabase)
            defer { monitor.close() }
            let events = try monitor.query("""
                SELECT eventtime::text, nodename::text, reportedstate::text, goalstate::text, description::text
                FROM pgautofailover.event ORDER BY eventid DESC LIMIT \(lines)
                """).rows.reversed().map { row in
                    try (0..<5).map { try row.decode($0, as: String.self) }.joined(separator: " | ")
                }
            parts.append("--- monitor events\n" + events.joined(separator: "\n"))
        } catch {
            parts.append("--- monitor events unavailable: \(error)")
        }
        parts.append(keeperLogs(lines: lines))
        parts.append(keeperTransitions(lines: lines))
        parts.append(serverProcesses())
        parts.append(controlStates())
        for (name, dataDirectory) in [("monitor", directory + "/monitor")] + nodes.map({ ($0.name, $0.dataDirectory) }) {
            let logDirectory = dataDirectory + "/log"
            let newest = ((try? FileManager.default.contentsOfDirectory(atPath: logDirectory)) ?? []).sorted().last
            let path = newest.map { logDirectory + "/" + $0 } ?? dataDirectory + "/startup.log"
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? "(no log at \(path))"
            // Refused connections during a shutdown repeat every half second and hide the rest.
            let telling = text.split(separator: "\n").filter { !$0.hasSuffix("the database system is shutting down") }
            parts.append("--- \(name) server log \(path)\n" + telling.suffix(lines * 3).joined(separator: "\n"))
        }
        return parts.joined(separator: "\n")
    }

    /// Each node keeper's state changes and what it said about them, rewinds and base backups
    /// included (pg_rewind's own messages, which pg_autoctl logs one fragment a line), from the
    /// whole log: a keeper that retries a failing transition fills its last lines with the retries,
    /// and what failed first, and why, is further up.
    func keeperTransitions(lines: Int) -> String {
        let telling = ["FSM transition", "Transition complete", "Monitor assigned", "rewind", "basebackup", "crash recovery",
                       "single-user", "shut down", "checkpoint", "ERROR", "FATAL", "fatal", "error:", "WARN"]
        let noise = ["monitor database", "current version for extension", "goal state from the monitor", "Failed to connect to \"postgres"]
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasPrefix("node") && $0.hasSuffix(".log") && !$0.contains("-create") }.sorted()
        return files.map { file in
            let text = (try? String(contentsOfFile: directory + "/" + file, encoding: .utf8)) ?? ""
            let kept = text.split(separator: "\n").filter { line in
                telling.contains { line.contains($0) } && !noise.contains { line.contains($0) }
            }
            return "--- \(file): transitions, rewinds, base backups, errors\n" + kept.suffix(lines).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// Each node's `pg_controldata` cluster state and timeline: pg_rewind needs a target shut
    /// down cleanly ("shut down" or "shut down in recovery"), and says so only in the keeper's log.
    func controlStates() -> String {
        nodes.map { node in
            let outcome = try? ProcessRunner.run([binaryDirectory + "/pg_controldata", "-D", node.dataDirectory],
                                                asUser: geteuid() == 0 ? Self.serverUser : nil)
            let kept = (outcome?.output ?? "pg_controldata did not run").split(separator: "\n").filter {
                $0.hasPrefix("Database cluster state") || $0.contains("TimeLineID") || $0.hasPrefix("Latest checkpoint location")
                    || $0.hasPrefix("Minimum recovery ending location") || $0.hasPrefix("wal_log_hints") || $0.hasPrefix("Data page checksum")
            }
            return "--- \(node.name) pg_controldata\n" + kept.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// Each node's postmaster and its children with their state (R running, S sleeping, D
    /// uninterruptible, T stopped) and process title: what a server that does not shut down
    /// waits for.
    func serverProcesses() -> String {
        nodes.map { node in
            let pidFile = node.dataDirectory + "/postmaster.pid"
            guard let postmaster = (try? String(contentsOfFile: pidFile, encoding: .utf8))?.split(separator: "\n").first.flatMap({ Int32($0) }),
                  LocalSystem.isRunning(postmaster) else { return "--- \(node.name) processes: no running postmaster" }
            let lines = LocalSystem.processTree(of: postmaster).map { pid in
                let title = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8))?
                    .replacingOccurrences(of: "\0", with: " ") ?? "?"
                return "\(pid) \(LocalSystem.state(of: pid) ?? "gone") \(title)"
            }
            return "--- \(node.name) processes\n" + lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// The formation's processes: keepers, their services, the servers they started, recognised
    /// by the environment ``command(_:)`` gives them all, and every process descended from one
    /// (a server's children no longer show that environment: a monitor's logger and health-check
    /// worker, missed so, outlived their killed postmaster by minutes).
    private var marked: MarkedProcesses { MarkedProcesses(mark: "XDG_RUNTIME_DIR=\(runtimeDirectory)") }

    /// The running processes of the formation.
    public func processes() -> [Int32] {
        marked.running()
    }

    /// Stops every process of the formation now and deletes its directory.
    func tearDown() {
        keepers.withLock { $0.removeAll() }
        marked.killAll()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A detached shell that, once this process is gone, kills every process of the formation
    /// (``MarkedProcesses``) and deletes its directory. Neither command lines (pg_autoctl's
    /// services rename themselves) nor parenthood alone (a killed keeper's services live on under
    /// init and restart their servers) would find them all. Not `pg_autoctl stop` either: a
    /// keeper killed by a test leaves a pid file whose pid may belong to anyone by then.
    private func watchForExit() {
        let script = """
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            \(marked.stopScript)
            for round in 1 2 3 4 5 6 7 8 9 10; do
                stop_marked
                [ -z "$stopped" ] && break
                kill -KILL $stopped 2>/dev/null
                sleep 1
            done
            rm -rf '\(directory)'
            """
        _ = try? ProcessRunner.spawnDetached(["/bin/sh", "-c", script])
    }

    @discardableResult
    private static func retrying<T>(for timeout: Duration, _ what: String, _ body: () throws -> T) throws -> T {
        let deadline = ContinuousClock.now + timeout
        while true {
            do { return try body() } catch {
                guard ContinuousClock.now < deadline else { throw FormationError("could not \(what) within \(timeout): \(error)") }
                usleep(200_000)
            }
        }
    }
}

/// Why the formation could not be built or driven; the message carries what the tools said.
public struct FormationError: Error, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
