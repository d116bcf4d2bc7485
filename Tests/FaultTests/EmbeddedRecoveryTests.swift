import EmbeddedPostgres
import Foundation
import Postgres
import Testing
import TestSupport

/// What a start of engage's local PostgreSQL finds after something went wrong before it: an initdb
/// that never finished, a directory of someone else's, a server slower to start than the wait.
@Suite("Local PostgreSQL: starting after an interrupted one")
struct EmbeddedRecoveryTests {
    /// The machine stopped during initdb: the directory has `PG_VERSION` but is no cluster, and
    /// every later start failed ("did not start") with nothing saying what to do. The marker
    /// written before initdb makes the failure say what it is and what to run; nothing is
    /// removed for the operator. Done as it says, the next start creates the cluster.
    @Test(.timeLimit(.minutes(3)))
    func anInitdbThatDidNotFinishIsNamedWithWhatToDo() async throws {
        let workspace = try FaultWorkspace("embedded-unfinished")
        defer { workspace.remove() }
        let directory = workspace.file("pg")
        let postgres = try EmbeddedPostgres(options: EmbeddedPostgres.Options(dataDirectory: directory, database: "again",
                                                                             settings: ["fsync": "off"]))
        defer { try? postgres.stop(mode: "immediate") }
        try FileManager.default.createDirectory(atPath: directory + "/base/1", withIntermediateDirectories: true)
        try Data("15\n".utf8).write(to: URL(fileURLWithPath: directory + "/PG_VERSION"))
        #expect(FileManager.default.createFile(atPath: directory + ".initializing", contents: Data()))

        let error = await #expect(throws: EmbeddedPostgresError.self) { try await offPool { try postgres.start() } }
        #expect(error?.message.contains("says its initdb did not finish") == true, "\(String(describing: error))")
        #expect(error?.message.contains("rm -rf \(directory) \(directory).initializing") == true, "\(String(describing: error))")
        #expect(FileManager.default.fileExists(atPath: directory + "/PG_VERSION"))
        #expect(try postgres.status() != .running)

        try FileManager.default.removeItem(atPath: directory)
        try FileManager.default.removeItem(atPath: directory + ".initializing")
        #expect(try await offPool { try postgres.start() } == .started)
        let connection = try Connection(configuration: postgres.configuration())
        defer { connection.close() }
        #expect(try connection.query("SELECT current_database()")[0].decode(0, as: String.self) == "again")
    }

    /// A data directory with an apostrophe in its path (`/srv/o'brien/pg`): initdb made the
    /// cluster, and every start failed, since the socket directory's quotes, which pg_ctl hands to
    /// /bin/sh, ended at the apostrophe. The path is quoted for the shell, whatever it holds.
    @Test(.timeLimit(.minutes(2)))
    func aDataDirectoryWithAnApostropheStarts() async throws {
        let workspace = try FaultWorkspace("embedded-apostrophe")
        defer { workspace.remove() }
        let parent = workspace.file("o'brien")
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        let postgres = try EmbeddedPostgres(options: EmbeddedPostgres.Options(dataDirectory: parent + "/pg", database: "quoted",
                                                                             settings: ["fsync": "off"]))
        defer { try? postgres.stop(mode: "immediate") }
        #expect(try await offPool { try postgres.start() } == .started)
        let connection = try Connection(configuration: postgres.configuration())
        defer { connection.close() }
        #expect(try connection.query("SELECT current_setting('unix_socket_directories')")[0].decode(0, as: String.self) == parent + "/pg")
    }

    /// initdb stopped before it wrote `PG_VERSION`: a start ran initdb again, which refused the
    /// directory it had left, and said only "initdb failed".
    @Test(.timeLimit(.minutes(2)))
    func anInitdbStoppedBeforeItsVersionFileIsNamedToo() async throws {
        let workspace = try FaultWorkspace("embedded-early-stop")
        defer { workspace.remove() }
        let directory = workspace.file("pg")
        let postgres = try EmbeddedPostgres(options: EmbeddedPostgres.Options(dataDirectory: directory))
        try FileManager.default.createDirectory(atPath: directory + "/global", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: directory + ".initializing", contents: Data()))
        let error = await #expect(throws: EmbeddedPostgresError.self) { try await offPool { try postgres.start() } }
        #expect(error?.message.contains("says its initdb did not finish") == true, "\(String(describing: error))")
        #expect(FileManager.default.fileExists(atPath: directory + "/global"))
    }

    /// A marker left beside a cluster that works (an initdb that finished before its process was
    /// stopped) changes nothing: the start goes on and the marker goes.
    @Test(.timeLimit(.minutes(3)))
    func aMarkerBesideAWorkingClusterIsDropped() async throws {
        let workspace = try FaultWorkspace("embedded-finished")
        defer { workspace.remove() }
        let directory = workspace.file("pg")
        let postgres = try EmbeddedPostgres(options: EmbeddedPostgres.Options(dataDirectory: directory, database: "kept",
                                                                             settings: ["fsync": "off"]))
        defer { try? postgres.stop(mode: "immediate") }
        #expect(try await offPool { try postgres.start() } == .started)
        try postgres.stop()
        #expect(FileManager.default.createFile(atPath: directory + ".initializing", contents: Data()))
        #expect(try await offPool { try postgres.start() } == .started)
        #expect(!FileManager.default.fileExists(atPath: directory + ".initializing"))
    }

    /// A data directory holding someone's files: initdb refuses it, the files stay, and no marker
    /// is left that would call it an unfinished cluster.
    @Test(.timeLimit(.minutes(2)))
    func aDirectoryOfOtherFilesIsNeverMarked() async throws {
        let workspace = try FaultWorkspace("embedded-other-files")
        defer { workspace.remove() }
        let directory = workspace.file("pg")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: directory + "/keep.txt"))
        let postgres = try EmbeddedPostgres(options: EmbeddedPostgres.Options(dataDirectory: directory))
        for _ in 0..<2 {
            await #expect(throws: EmbeddedPostgresError.self) { try await offPool { try postgres.start() } }
            #expect(FileManager.default.fileExists(atPath: directory + "/keep.txt"))
            #expect(!FileManager.default.fileExists(atPath: directory + ".initializing"))
        }
    }

    /// A server that does not take connections within the wait (crash recovery, here a wait of
    /// 0 s) is stopped by the start that launched it, not left running with nobody to stop it;
    /// the next start with time enough starts it.
    @Test(.timeLimit(.minutes(3)))
    func aServerNotReadyInTimeIsStoppedByTheStartThatLaunchedIt() async throws {
        let workspace = try FaultWorkspace("embedded-slow-start")
        defer { workspace.remove() }
        var options = EmbeddedPostgres.Options(dataDirectory: workspace.file("pg"), database: "slow", settings: ["fsync": "off"])
        options.startTimeoutSeconds = 0
        let hurried = try EmbeddedPostgres(options: options)
        defer { try? hurried.stop(mode: "immediate") }
        let error = await #expect(throws: EmbeddedPostgresError.self) { try await offPool { try hurried.start() } }
        #expect("\(error.map { "\($0)" } ?? "")".contains("did not take connections within 0 s and was stopped"), "\(String(describing: error))")
        #expect(try hurried.status() == .stopped)
        options.startTimeoutSeconds = 60
        let patient = try EmbeddedPostgres(options: options)
        #expect(try await offPool { try patient.start() } == .started)
    }
}
