import Postgres

/// Whether an append's commit reached the synchronous standbys the primary is configured to wait
/// for, checked in the commit's own round trip.
///
/// A commit on a primary with `synchronous_standby_names` set normally returns only once enough
/// standbys have flushed it. It returns at once, though, while the checkpointer has not yet taken
/// a reload that turned synchronous replication on (commits read its shared flag; a session's
/// `SHOW` sees the new setting earlier): pg_auto_failover turns it on when a standby comes back
/// (`wait_primary` to `primary`) and may start a switchover or failover right after. If the
/// standby is then promoted, the old primary's commits it never received are lost, although
/// they were committed "as configured" on the primary. So before a commit is acknowledged the
/// session records where the transaction's WAL ends before its commit record, and after the
/// COMMIT asks whether as many standbys as the setting requires (`ANY n`/`FIRST n`, 1 for a plain
/// list) report themselves synchronous and flushed past that point (written, or replayed, under
/// `synchronous_commit = remote_write` or `remote_apply`); if not, it asks again for a few
/// seconds (`awaitingStandbys`) before refusing. A commit that really waited normally passes
/// (the standby's reported position released it), not always: docs/design.md, "Durability". Reading the standbys' positions
/// needs `pg_read_all_stats` (or `pg_monitor`, or a superuser); without it nothing can be
/// confirmed, and commits are refused while synchronous replication is configured.
///
/// An operator can require more than the setting asks for (`requiredSynchronousStandbys` of the
/// connection's configuration, `engage serve --synchronous-standbys`): a keeper that empties the
/// setting to let its primary run alone then gets no commit acknowledged on it, instead of commits
/// a standby being promoted may never receive (docs/high-availability.md).
///
/// Not checked: the commit record itself, after the recorded point (a standby promoted in the
/// instant between receiving a transaction's rows and its commit record, while that commit
/// skipped its wait, is not noticed); commits of `appendInOpenTransaction`, which its caller
/// makes.
public enum StandbyConfirmation {
    /// Why a commit is not acknowledged.
    public enum Verdict: String, Sendable, Equatable {
        /// No synchronous standby is configured (or commits do not wait for one): nothing to check.
        case notRequired = "not required"
        /// Enough synchronous standbys flushed the transaction.
        case confirmed
        /// Fewer synchronous standbys than required have the transaction.
        case unconfirmed
        /// This database role cannot see the standbys' positions.
        case unverifiable
    }

    /// The statements of the check for one floor (`PostgresConfiguration.requiredSynchronousStandbys`):
    /// at least that many synchronous standbys must have the commit, even when the setting asks
    /// for fewer or none. 0, the default, trusts the setting.
    struct Statements: Sendable {
        /// Runs just before the COMMIT, in its round trip: where the transaction's WAL ends so far,
        /// or '' when nothing will be checked. Only then is the WAL function called: managed
        /// servers that restrict WAL functions (Aurora) reject `pg_current_wal_insert_lsn()`, and
        /// every commit would fail there.
        let beforeCommit: SQL
        /// Runs just after the COMMIT, in its round trip; answers one of `Verdict`'s raw values.
        let afterCommit: SQL
        /// The COMMIT between the two, as one text for one round trip.
        let commit: SQL
        /// The check again after a short pause, on the session that committed (its recorded point).
        let recheck: SQL

        init(requiring floor: Int) {
            precondition(floor >= 0, "a number of standbys is never negative")
            let floor = String(floor)
            beforeCommit = SQL(unsafeSQL: """
                SELECT set_config('engage.pre_commit_lsn',
                    CASE WHEN \(floor) > 0
                           OR (current_setting('synchronous_standby_names') <> ''
                               AND current_setting('synchronous_commit') IN ('on', 'remote_write', 'remote_apply'))
                         THEN pg_current_wal_insert_lsn()::text
                         ELSE '' END,
                    false)
                """)
            afterCommit = SQL(unsafeSQL: """
                SELECT CASE
                    WHEN required = 0 THEN 'not required'
                    WHEN NOT pg_has_role('pg_read_all_stats', 'USAGE') THEN 'unverifiable'
                    WHEN (SELECT count(*) FROM pg_stat_get_wal_senders() s
                          WHERE s.sync_state IN ('sync', 'quorum')
                            AND CASE current_setting('synchronous_commit')
                                    WHEN 'remote_write' THEN s.write_lsn
                                    WHEN 'remote_apply' THEN s.replay_lsn
                                    ELSE s.flush_lsn END >= nullif(current_setting('engage.pre_commit_lsn', true), '')::pg_lsn)
                         >= required
                      THEN 'confirmed'
                    ELSE 'unconfirmed'
                END::text
                FROM (SELECT \(Self.required(floor: floor)) AS required) r
                """)
            commit = SQL(unsafeSQL: "\(beforeCommit.text);\nCOMMIT;\n\(afterCommit.text)")
            recheck = SQL(unsafeSQL: "SELECT pg_sleep(0.02);\n\(afterCommit.text)")
        }

        /// How many synchronous standbys a commit needs: the setting's `ANY n (...)` or
        /// `FIRST n (...)` or `n (...)`, else 1, when commits wait for standbys at all (0 when the
        /// setting is empty, `synchronous_commit` is `local` or `off`, or no WAL sender may run),
        /// and never fewer than `floor`. No point recorded before the COMMIT (synchronous
        /// replication was off then, and a reload turned it on in between) confirms nothing: no
        /// standby counts ('unconfirmed'), and '' is never cast. No backslash: a server with
        /// standard_conforming_strings off would warn about one, and a warning fails the commit.
        static func required(floor: String) -> String {
            """
            greatest(\(floor),
                     CASE WHEN current_setting('synchronous_standby_names') = ''
                            OR current_setting('synchronous_commit') NOT IN ('on', 'remote_write', 'remote_apply')
                            OR current_setting('max_wal_senders')::int = 0 THEN 0
                          ELSE coalesce((regexp_match(current_setting('synchronous_standby_names'),
                                                      '^[[:space:]]*(?:any[[:space:]]+|first[[:space:]]+)?([0-9]+)[[:space:]]*[(]', 'i'))[1]::int, 1)
                     END)
            """
        }

        /// The texts of every floor the commands accept, made once, not for every commit.
        private static let made = PostgresConfiguration.acceptedSynchronousStandbys.map(Statements.init(requiring:))

        static func requiring(_ floor: Int) -> Statements {
            made.indices.contains(floor) ? made[floor] : Statements(requiring: floor)
        }

        /// `statement` (a transaction's last work), then `commit`, as one text. `statement` takes
        /// no `$n` parameters: the text is sent as a script, which has none.
        func commit(after statement: SQL) -> SQL {
            precondition(statement.parameters.isEmpty, "a statement committed with the standby check takes no parameters")
            return SQL(unsafeSQL: "\(statement.text);\n\(commit.text)")
        }
    }

    /// The statements for the floor `connection` was configured with.
    static func statements(on connection: Connection) -> Statements {
        .requiring(connection.configuration.requiredSynchronousStandbys)
    }

    /// Whether this role cannot read the standbys' positions while a commit needs them (synchronous
    /// replication is configured, or the connection requires standbys): then every commit is
    /// refused (`.unverifiable`), which readiness reports.
    public static func roleCannotConfirm(on connection: Connection) throws -> Bool {
        let required = Statements.required(floor: String(connection.configuration.requiredSynchronousStandbys))
        return try connection.query(SQL(unsafeSQL: "SELECT \(required) > 0 AND NOT pg_has_role('pg_read_all_stats', 'USAGE')"))[0]
            .decode(0, as: Bool.self)
    }

    /// How many more synchronous standbys must stream before a commit on `connection` can be
    /// confirmed, counting only its floor (`requiredSynchronousStandbys`): a primary that runs
    /// alone (its setting emptied) while engage requires a standby refuses every commit, which
    /// readiness reports. 0 without a floor: what the setting asks for, commits wait for.
    public static func missingRequiredStandbys(on connection: Connection) throws -> Int {
        let floor = connection.configuration.requiredSynchronousStandbys
        guard floor > 0 else { return 0 }
        return try connection.query("""
            SELECT greatest(0, \(floor) - (SELECT count(*) FROM pg_stat_get_wal_senders() WHERE sync_state IN ('sync', 'quorum'))::int)
            """)[0].decode(0, as: Int.self)
    }

    /// How long `recheck` runs again at most before an unconfirmed commit is refused, within the
    /// ingest commit timeout (10 s by default) whose interrupter cancels the pause like any
    /// statement. Counted on the clock, not in rechecks: on a busy server each recheck's round
    /// trip adds to its 20 ms pause, and a fixed 150 of them stretch with the load (refusals on a
    /// loaded machine were seen to outlast a test client's 10 s).
    static let recheckWindow = Duration.seconds(3)

    /// `verdict`, or, when it is `.unconfirmed`, the check's answer once the standbys caught up
    /// or `recheckWindow` passed: the wait for the standbys that PostgreSQL skipped for this
    /// commit. Refusing at once would make the whole window an ingest outage: the check runs
    /// just after a COMMIT that did not wait, and a resend is checked the same way.
    public static func awaitingStandbys(_ verdict: Verdict, on connection: Connection) throws -> Verdict {
        var verdict = verdict
        let recheck = statements(on: connection).recheck
        let deadline = ContinuousClock.now.advanced(by: recheckWindow)
        while verdict == .unconfirmed && ContinuousClock.now < deadline {
            verdict = try self.verdict(from: connection.queryScript(recheck))
        }
        return verdict
    }

    /// What a commit that got no verdict is reported as: a connection that ends during the
    /// commit's round trip without an answer (interrupted past a time limit, or lost), or a
    /// failure once the COMMIT ran (an error of the check after it). The COMMIT may have been
    /// made (a primary waiting for a lost standby has made it).
    enum UnansweredCommit {
        /// The error as it came: an append's resend finds its events if they were stored and
        /// reports them as duplicates.
        case leftToTheResend
        /// `.unconfirmedCommit`, never a failure that changed nothing: a change that cannot be
        /// repeated blindly (an experiment created, started or stopped).
        case unconfirmed
    }

    /// `body` in a transaction committed with the check, and the check's verdict, not yet
    /// acknowledged: what follows the COMMIT is the caller's to answer. Rolls back when `body`
    /// or the commit fails, leaving the connection outside any transaction; a commit without a
    /// verdict is reported as `unanswered` says.
    static func checkedTransaction<T>(on connection: Connection, unanswered: UnansweredCommit,
                                      _ body: (Connection) throws -> T) throws -> (value: T, verdict: Verdict) {
        try connection.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        do {
            let value = try body(connection)
            do {
                let verdict = try committing(on: connection) { connection in
                    try self.verdict(from: connection.queryScript(statements(on: connection).commit))
                }
                return (value, verdict)
            } catch let error as PostgresError
                where unanswered == .unconfirmed && error.kind != .unconfirmedCommit && !(connection.isHealthy && !connection.isIdle) {
                // Only a session still inside its (aborted) transaction shows that the script
                // stopped before its COMMIT. Outside it, the COMMIT ran, and an error of the check
                // after it (the server's, with an SQLSTATE) may follow a change made; a session
                // that ended leaves it unknown.
                throw PostgresError(kind: .unconfirmedCommit, sqlState: nil,
                                    message: "the commit was sent but no verdict on it came (\(error.description)); it may be made "
                                        + "on the primary, and the synchronous standbys were not seen to have it")
            }
        } catch {
            if !connection.isIdle && connection.isHealthy { _ = try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    /// `body` in a transaction whose commit is checked like an append's: throws
    /// `.unconfirmedCommit` when the standbys required do not have it (it is then committed on
    /// the primary alone, and the caller must say so: a change repeated blindly may find itself
    /// already made). For writes that are acknowledged to someone (an experiment created,
    /// started or stopped), not only events. Unlike an append, which a retry resolves (a resend
    /// finds its events and reports them as duplicates), a change cannot be retried blindly, so
    /// any failure after the COMMIT is reported as the commit unconfirmed.
    ///
    /// A commit interrupted by engage (the change's time limit, `ExperimentStore.commitTimeout`)
    /// while its COMMIT waits for the standbys is `.unconfirmedCommit` too (its connection ended
    /// before the answer: `checkedTransaction`), which the pool passes on as it is
    /// (`ReusableConnection.use`); interrupted before the COMMIT was sent, the transaction is
    /// rolled back, and the pool throws `DatabaseDidNotAnswer`: nothing changed.
    public static func confirmedTransaction<T>(on connection: Connection, _ body: (Connection) throws -> T) throws -> T {
        let (value, verdict) = try checkedTransaction(on: connection, unanswered: .unconfirmed, body)
        do {
            try acknowledge(verdict, on: connection)
        } catch let error as PostgresError where error.kind != .unconfirmedCommit {
            // Committed: a session lost while the standbys are awaited (the server restarted, the
            // session was terminated, engage interrupted it past the time limit) leaves the change
            // made and unconfirmed, never "nothing stored".
            throw PostgresError(kind: .unconfirmedCommit, sqlState: nil,
                                message: "committed, but the check on the synchronous standbys did not finish (\(error.description))")
        }
        return value
    }

    /// `commit` (what sends the COMMIT and its check) with `failingOnWarnings`: a warning during it
    /// is `.unconfirmedCommit`, and so is a session the server closes after one. PostgreSQL warns
    /// "The transaction has already committed locally" and then closes a session terminated (or
    /// shut down) while its COMMIT waits for the standbys: the change is made on the primary, not
    /// "nothing stored". A session lost without such a warning, or interrupted by engage itself
    /// (`.interrupted`, the commit timeout), keeps its own error.
    static func committing<T>(on connection: Connection, _ commit: (Connection) throws -> T) throws -> T {
        let warned = connection.warningsReceived.count
        do {
            return try connection.failingOnWarnings(commit)
        } catch let error as PostgresError
            where error.kind == .connection && !connection.isHealthy && connection.warningsReceived.count > warned {
            let warning = connection.warningsReceived.last
            throw PostgresError(kind: .unconfirmedCommit, sqlState: warning?.sqlState,
                                message: "committed on the primary, but the session ended while its commit waited for the "
                                    + "synchronous standbys (\(error.description))",
                                detail: [warning?.message, warning?.detail].compactMap { $0 }.joined(separator: " "))
        }
    }

    /// The check's answer, from the rows the committing text returned.
    public static func verdict(from rows: QueryResult?) throws -> Verdict {
        guard let rows, rows.rowCount == 1, rows.columnCount == 1,
              let verdict = Verdict(rawValue: try rows[0].decode(0, as: String.self))
        else {
            throw PostgresError(kind: .protocolViolation, message: "the commit's standby check returned no verdict")
        }
        return verdict
    }

    /// The SQLSTATE (insufficient_privilege) of the `.unconfirmedCommit` thrown for `.unverifiable`:
    /// the role lacks `pg_read_all_stats`.
    public static let insufficientPrivilege = "42501"

    /// What a commit's verdict comes to: waits for the standbys when they are behind
    /// (`awaitingStandbys`), then throws `.unconfirmedCommit` unless the commit may be acknowledged.
    static func acknowledge(_ verdict: Verdict, on connection: Connection) throws {
        try requireAcknowledgeable(awaitingStandbys(verdict, on: connection))
    }

    /// Throws `.unconfirmedCommit` unless the verdict lets the commit be acknowledged.
    public static func requireAcknowledgeable(_ verdict: Verdict) throws {
        switch verdict {
        case .notRequired, .confirmed: return
        case .unconfirmed:
            throw PostgresError(kind: .unconfirmedCommit, sqlState: nil,
                                message: "committed, but fewer synchronous standbys than configured have the transaction")
        case .unverifiable:
            throw PostgresError(kind: .unconfirmedCommit, sqlState: insufficientPrivilege,
                                message: "committed, but the database role cannot see whether the synchronous standbys have it "
                                    + "(grant it pg_read_all_stats or pg_monitor)")
        }
    }
}
