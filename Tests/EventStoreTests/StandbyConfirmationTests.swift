import EngageCore
@testable import EventStore
import Foundation
import Glibc
import Postgres
import Testing
import TestSupport

/// An append is acknowledged only when the synchronous standbys the primary is configured to wait
/// for have its commit (`StandbyConfirmation`), on a primary and a real streaming standby of this
/// suite's own: commits that waited are confirmed, however many race; a commit that returned
/// without waiting while the setting asked for a standby (the checkpointer had not taken the
/// reload yet, as after pg_auto_failover turns synchronous replication back on) is refused,
/// although the primary holds it; a role that cannot see the standbys cannot confirm anything.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct StandbyConfirmationTests {
    static let pair = Result { try StreamingReplication(label: "confirm") }

    static func replication() async throws -> StreamingReplication {
        try await offPool { try pair.get() }
    }

    @Test func verdictsThatLetACommitBeAcknowledged() throws {
        try StandbyConfirmation.requireAcknowledgeable(.notRequired)
        try StandbyConfirmation.requireAcknowledgeable(.confirmed)
        for verdict in [StandbyConfirmation.Verdict.unconfirmed, .unverifiable] {
            #expect((#expect(throws: PostgresError.self) { try StandbyConfirmation.requireAcknowledgeable(verdict) })?.kind
                == .unconfirmedCommit)
        }
    }

    @Test func commitsTheStandbyFlushedAreAcknowledgedHoweverManyRace() async throws {
        let replication = try await Self.replication()
        let (database, _) = try await offPool { try replication.freshDatabase() }
        // In pg_auto_failover's form: ANY 1 of the list.
        try await offPool { try replication.synchronousStandby("ANY 1 (\(StreamingReplication.standbyName))") }
        defer { try? replication.synchronousStandby(nil) }
        let appenders = 8, rounds = 25
        // Each appender its own connection, fast path (new ids) and careful path (a resend) in turn.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for appender in 0..<appenders {
                group.addTask {
                    try await offPool {
                        let connection = try Connection(configuration: database)
                        defer { connection.close() }
                        for round in 0..<rounds {
                            let items = EventFactory.items(3, notificationPrefix: "race-\(appender)-\(round)")
                            #expect(try EventStore.append(items, on: connection).storedCount == 3)
                            #expect(try EventStore.append(items, on: connection).duplicateCount == 3)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try Self.storedCount(database) == appenders * rounds * 3)
        // The check ran with a standby to confirm (not "not required").
        try await pollUntil(every: .milliseconds(20)) { try Self.verdictNow(database) == .confirmed }
    }

    @Test func aCommitThatSkippedItsWaitForTheStandbyIsRefusedThenItsResendConfirmedOnceTheStandbyHasIt() async throws {
        let replication = try await Self.replication()
        let (database, replicaDatabase) = try await offPool { try replication.freshDatabase() }
        // The checkpointer publishes "synchronous standbys defined" to commits; frozen before the
        // reload that names the standby, it leaves commits not waiting while every session's
        // setting says they do: the window after pg_auto_failover turns synchronous replication on.
        let checkpointer = try replication.withPrimary { connection in
            try connection.query("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")[0].decode(0, as: Int32.self)
        }
        kill(checkpointer, SIGSTOP)
        var checkpointerStopped = true
        defer { if checkpointerStopped { kill(checkpointer, SIGCONT) } }
        try await offPool { try replication.synchronousStandby(StreamingReplication.standbyName, checkpoint: false) }
        defer { try? replication.synchronousStandby(nil) }
        // A commit that did not wait is acknowledged once the streaming standby has it: the check
        // waits for the standby as the commit did not.
        let unwaited = EventFactory.items(2, notificationPrefix: "unwaited")
        #expect(try Self.append(unwaited, database).storedCount == 2)
        #expect(try replication.commitsWaitingForStandby() == 0)
        try await pollUntil(every: .milliseconds(20)) { try Self.storedCount(replicaDatabase) == 2 }
        // The standby still counts as synchronous and streaming, but receives nothing more.
        let receiver = try replication.withReplica { connection in
            try connection.query("SELECT pid FROM pg_stat_wal_receiver")[0].decode(0, as: Int32.self)
        }
        kill(receiver, SIGSTOP)
        var receiverStopped = true
        defer { if receiverStopped { kill(receiver, SIGCONT) } }

        let items = EventFactory.items(4, notificationPrefix: "skipped")
        let refused = #expect(throws: PostgresError.self) { try Self.append(items, database) }
        #expect(refused?.kind == .unconfirmedCommit, "\(String(describing: refused))")
        // The commit did not wait, nor did the check get it confirmed: the primary holds the
        // events, the standby does not.
        #expect(try Self.storedCount(database) == 6)
        #expect(try Self.storedCount(replicaDatabase) == 2)
        #expect(try replication.commitsWaitingForStandby() == 0)
        // The resend finds them and is refused too while the standby lacks them...
        #expect((#expect(throws: PostgresError.self) { try Self.append(items, database) })?.kind == .unconfirmedCommit)

        // ...and is acknowledged, as duplicates, once the standby streams again and commits wait
        // for it (the checkpointer took the reload): the resend's commit waits for the standby
        // to have everything up to it, the first attempt included.
        kill(receiver, SIGCONT)
        receiverStopped = false
        kill(checkpointer, SIGCONT)
        checkpointerStopped = false
        var outcome: AppendResult?
        try await pollUntil(every: .milliseconds(20)) {
            outcome = try? Self.append(items, database)
            return outcome != nil
        }
        #expect(outcome?.outcomes == [.duplicate, .duplicate, .duplicate, .duplicate])
        #expect(try Self.storedCount(database) == 6)
    }

    @Test func aRoleThatCannotSeeTheStandbysGetsNoCommitAcknowledgedUntilGranted() async throws {
        let replication = try await Self.replication()
        let (database, _) = try await offPool { try replication.freshDatabase() }
        let role = "engage_unprivileged_\(UUID().uuidString.prefix(6).lowercased())"
        let name = try Self.databaseName(database)
        let admin = try Connection(configuration: database)
        defer { admin.close() }
        try UnprivilegedRole.create(role, on: admin)
        try admin.execute("GRANT TEMPORARY ON DATABASE \(identifier: name) TO \(identifier: role)")
        let asRole = PostgresConfiguration.unixSocket(directory: replication.primary.socketDirectory, port: replication.primary.options.port,
                                                      user: role, database: name)
        // Without synchronous replication there is nothing to see (and no point is recorded
        // before the commit).
        let alone = EventFactory.items(1, notificationPrefix: "alone")
        #expect(try Self.append(alone, asRole).storedCount == 1)
        // The resend takes the careful path's commit.
        #expect(try Self.append(alone, asRole).duplicateCount == 1)
        let beforeReplication = try Connection(configuration: asRole)
        #expect(try !StandbyConfirmation.roleCannotConfirm(on: beforeReplication))
        beforeReplication.close()
        // Unless a standby is required of every commit: then it must see them.
        var requiring = asRole
        requiring.requiredSynchronousStandbys = 1
        let requiringConnection = try Connection(configuration: requiring)
        #expect(try StandbyConfirmation.roleCannotConfirm(on: requiringConnection))
        requiringConnection.close()
        let unseen = #expect(throws: PostgresError.self) { try Self.append(EventFactory.items(1, notificationPrefix: "unseen"), requiring) }
        #expect(unseen?.message.contains("pg_read_all_stats") == true, "\(String(describing: unseen))")

        try await offPool { try replication.synchronousStandby(StreamingReplication.standbyName) }
        defer { try? replication.synchronousStandby(nil) }
        // Readiness sees it: synchronous replication configured, the standbys unreadable.
        let roleConnection = try Connection(configuration: asRole)
        defer { roleConnection.close() }
        #expect(try StandbyConfirmation.roleCannotConfirm(on: roleConnection))
        #expect(try !StandbyConfirmation.roleCannotConfirm(on: admin))
        let blind = EventFactory.items(2, notificationPrefix: "blind")
        let refused = #expect(throws: PostgresError.self) { try Self.append(blind, asRole) }
        #expect(refused?.kind == .unconfirmedCommit)
        #expect(refused?.message.contains("pg_read_all_stats") == true)

        try admin.execute("GRANT pg_read_all_stats TO \(identifier: role)")
        #expect(try !StandbyConfirmation.roleCannotConfirm(on: roleConnection))
        // The resend finds both (the refused commit had stored them) and reports them.
        #expect(try Self.append(blind, asRole).duplicateCount == 2)
    }

    /// The state a pg_auto_failover keeper leaves its primary in when it gives up on the standby
    /// (`wait_primary`, and once, during a switchover on a loaded machine, while the standby was
    /// being promoted): `synchronous_standby_names` emptied, commits acknowledged by the primary
    /// alone although a standby still streams. Trusting the setting acknowledges them; a
    /// connection that requires a synchronous standby gets none acknowledged until one is named
    /// again, and readiness sees the shortfall.
    @Test func aPrimaryRunningAloneGetsNoCommitAcknowledgedWhileAStandbyIsRequired() async throws {
        let replication = try await Self.replication()
        let (database, _) = try await offPool { try replication.freshDatabase() }
        try await offPool { try replication.synchronousStandby(nil) }
        var oneRequired = database
        oneRequired.requiredSynchronousStandbys = 1
        var twoRequired = database
        twoRequired.requiredSynchronousStandbys = 2

        #expect(try Self.verdictNow(database) == .notRequired)
        #expect(try Self.append(EventFactory.items(1, notificationPrefix: "trusted"), database).storedCount == 1)
        #expect(try Self.missingRequiredStandbys(database) == 0)

        let items = EventFactory.items(3, notificationPrefix: "alone")
        let refused = #expect(throws: PostgresError.self) { try Self.append(items, oneRequired) }
        #expect(refused?.kind == .unconfirmedCommit, "\(String(describing: refused))")
        #expect(try Self.verdictNow(oneRequired) == .unconfirmed)
        // Committed on the primary, not acknowledged: the device resends them.
        #expect(try Self.storedCount(database) == 4)
        #expect(try Self.missingRequiredStandbys(oneRequired) == 1)
        #expect(try Self.missingRequiredStandbys(twoRequired) == 2)

        try await offPool { try replication.synchronousStandby("ANY 1 (\(StreamingReplication.standbyName))") }
        defer { try? replication.synchronousStandby(nil) }
        #expect(try Self.append(items, oneRequired).outcomes == [.duplicate, .duplicate, .duplicate])
        #expect(try Self.missingRequiredStandbys(oneRequired) == 0)
        // More than the setting asks for: the one streaming standby is not enough for two.
        #expect(try Self.missingRequiredStandbys(twoRequired) == 1)
        let beyond = #expect(throws: PostgresError.self) { try Self.append(EventFactory.items(2, notificationPrefix: "two"), twoRequired) }
        #expect(beyond?.kind == .unconfirmedCommit, "\(String(describing: beyond))")
        #expect(try Self.storedCount(database) == 6)
    }

    /// A server with `standard_conforming_strings` off warns about a backslash in a string
    /// literal, and a warning during the commit fails it: the check's texts hold none, for any
    /// floor; and every engage session sets it on whatever the connection string asks
    /// (`Connection`), so a commit checked against a floor is acknowledged there, on the fast and
    /// the careful path.
    @Test func theCheckWithAFloorRunsWithoutWarningsWhereStringsAreNotStandardConforming() async throws {
        for floor in 0...16 {
            let statements = StandbyConfirmation.Statements.requiring(floor)
            #expect(![statements.commit.text, statements.recheck.text].contains { $0.contains("\\") }, "floor \(floor)")
        }
        let replication = try await Self.replication()
        let (database, _) = try await offPool { try replication.freshDatabase() }
        var oneRequired = database
        oneRequired.connectionString += " options='-c standard_conforming_strings=off -c escape_string_warning=on'"
        oneRequired.requiredSynchronousStandbys = 1
        let setting = try { () throws -> String in
            let connection = try Connection(configuration: oneRequired)
            defer { connection.close() }
            return try connection.query("SHOW standard_conforming_strings")[0].decode(0, as: String.self)
        }()
        #expect(setting == "on", "engage's own setting comes after the connection string's")
        try await offPool { try replication.synchronousStandby("ANY 1 (\(StreamingReplication.standbyName))") }
        defer { try? replication.synchronousStandby(nil) }
        let items = EventFactory.items(3, notificationPrefix: "nonstandard")
        #expect(try Self.append(items, oneRequired).storedCount == 3)
        #expect(try Self.append(items, oneRequired).duplicateCount == 3)
    }

    /// With a floor the check runs whatever `synchronous_commit` the session has: a commit that
    /// did not wait for the standby (`local`, `off`) is acknowledged once the standby has it,
    /// one that waited for its write or replay (`remote_write`, `remote_apply`) at once; with
    /// the setting emptied (the standby streams asynchronously) none is.
    @Test func aFloorIsCheckedUnderEverySynchronousCommitLevel() async throws {
        let replication = try await Self.replication()
        let (database, _) = try await offPool { try replication.freshDatabase() }
        try await offPool { try replication.synchronousStandby("ANY 1 (\(StreamingReplication.standbyName))") }
        defer { try? replication.synchronousStandby(nil) }
        var stored = 0
        for level in ["local", "off", "remote_write", "remote_apply", "on"] {
            var oneRequired = database
            oneRequired.connectionString += " options='-c synchronous_commit=\(level)'"
            oneRequired.requiredSynchronousStandbys = 1
            #expect(try Self.append(EventFactory.items(2, notificationPrefix: "level-\(level)"), oneRequired).storedCount == 2, "\(level)")
            stored += 2
        }
        try await offPool { try replication.synchronousStandby(nil) }
        for level in ["local", "remote_write", "remote_apply"] {
            var oneRequired = database
            oneRequired.connectionString += " options='-c synchronous_commit=\(level)'"
            oneRequired.requiredSynchronousStandbys = 1
            let refused = #expect(throws: PostgresError.self) { try Self.append(EventFactory.items(1, notificationPrefix: "alone-\(level)"), oneRequired) }
            #expect(refused?.kind == .unconfirmedCommit && refused?.sqlState == nil, "\(level): \(String(describing: refused))")
            stored += 1
        }
        #expect(try Self.storedCount(database) == stored)
    }

    // MARK: Helpers

    static func missingRequiredStandbys(_ database: PostgresConfiguration) throws -> Int {
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        return try StandbyConfirmation.missingRequiredStandbys(on: connection)
    }

    // One connection per call, as UnconfirmedCommitTests use them.
    static func append(_ items: [AppendItem], _ database: PostgresConfiguration) throws -> AppendResult {
        try UnconfirmedCommitTests.appendOnce(items, database)
    }

    static func storedCount(_ database: PostgresConfiguration) throws -> Int {
        try UnconfirmedCommitTests.storedCount(database)
    }

    /// The check's verdict for a commit that wrote nothing, on a new session.
    static func verdictNow(_ database: PostgresConfiguration) throws -> StandbyConfirmation.Verdict {
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        try connection.execute("BEGIN")
        return try StandbyConfirmation.verdict(from: connection.queryScript(StandbyConfirmation.statements(on: connection).commit))
    }

    static func databaseName(_ database: PostgresConfiguration) throws -> String {
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        return try connection.query("SELECT current_database()::text")[0].decode(0)
    }
}
