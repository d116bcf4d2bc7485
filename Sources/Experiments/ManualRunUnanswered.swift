import Postgres

/// A manual run (`Scheduler.runNow`) whose database went without an answer (past the scheduler's
/// `databaseAnswerLimit`, or the connection lost) once its insert was sent, or failed in any way
/// once its insert was answered: the run is queued, or may be (an insert interrupted while its COMMIT waits for a lost synchronous standby is made on
/// the primary), and a scheduler claims a queued run and analyses it later. Listing the runs
/// shows it; repeating the request is harmless (an analysis only reads, a second run adds a row).
public struct ManualRunUnanswered: Error, Sendable, Equatable, CustomStringConvertible {
    public var experimentID: String
    /// The run's id when its insert was answered (it is queued); nil when the insert itself got
    /// no answer (it may be queued).
    public var runID: Int64?
    /// What ended the wait, or the failure (`DatabaseDidNotAnswer`'s or `PostgresError`'s safe
    /// description; a lost connection's carries libpq's message, which names no values).
    public var cause: String

    public init(experimentID: String, runID: Int64?, cause: String) {
        self.experimentID = experimentID
        self.runID = runID
        self.cause = cause
    }

    /// Safe to show: ids and the cause's safe description, no values of the analysis.
    public var description: String {
        let queued = runID.map { "run \($0) of \(experimentID) was queued" } ?? "a run of \(experimentID) may have been queued"
        return "\(queued) but not answered (\(cause)); a scheduler analyses a queued run later: list the runs before repeating it"
    }
}
