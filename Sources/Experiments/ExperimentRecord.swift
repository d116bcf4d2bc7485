import EngageCore

/// An experiment as stored: its definition (whose status is the stored status) and timestamps.
public struct ExperimentRecord: Sendable, Equatable {
    public var definition: ExperimentDefinition
    public var createdAt: Timestamp
    public var updatedAt: Timestamp

    public var id: String { definition.id }
    public var status: ExperimentStatus { definition.status }
}

/// One analysis run of an experiment, as `experiment_runs` holds it.
public struct ExperimentRun: Sendable, Equatable {
    public enum Status: String, Sendable, Equatable, CaseIterable {
        case pending, running, done, failed
    }

    public var id: Int64
    public var experimentID: String
    public var scheduledFor: Timestamp
    public var isManual: Bool
    public var status: Status
    public var leaseOwner: String?
    public var leaseUntil: Timestamp?
    public var attempts: Int
    public var startedAt: Timestamp?
    public var finishedAt: Timestamp?
    /// `ExperimentDecision.code` once done.
    public var decision: String?
    /// `ExperimentRunResult.canonicalJSON` (as PostgreSQL renders jsonb) once done.
    public var result: [UInt8]?
    public var error: String?
}
