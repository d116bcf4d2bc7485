/// A change in an experiment's life, as it is appended to the event log: created, started,
/// stopped, and every analysis with its decision.
///
/// Entries share the `events` table with device events so the log alone tells the whole story
/// of an experiment, in order. They are told apart by their type (`experiment_created`, ...),
/// which the ingestion API never accepts from clients, and they live in a stream of their own,
/// `experiment:<id>`, with no device and no experiment tag, so neither the engagement
/// projection nor an analysis replay ever folds them.
public struct ExperimentLogEntry: Sendable, Equatable {
    public enum Action: String, Sendable, CaseIterable {
        case created
        case started
        case stopped
        case analysed
    }

    public var action: Action
    public var experimentID: String
    public var appID: String
    public var occurredAt: Timestamp
    /// The payload: see the initialisers.
    public var payload: [UInt8]

    /// The event type this entry has in the log.
    public var type: String { Self.type(of: action) }

    /// The event type of entries of `action`.
    public static func type(of action: Action) -> String { typePrefix + action.rawValue }

    /// The log stream (the `notification_id` column) holding this experiment's entries.
    public var streamID: String { Self.streamID(experimentID: experimentID) }

    public static let typePrefix = "experiment_"

    public static func streamID(experimentID: String) -> String { "experiment:" + experimentID }

    /// The action of a stored event type, or nil when it is not an experiment entry.
    public static func action(ofType type: String) -> Action? {
        guard type.hasPrefix(typePrefix) else { return nil }
        return Action(rawValue: String(type.dropFirst(typePrefix.count)))
    }

    /// A lifecycle change: `{"action": s, "reason": s | null, "definition": DEFINITION}` with the
    /// definition after the change.
    public static func lifecycle(_ action: Action, definition: ExperimentDefinition, reason: String?,
                                 at time: Timestamp) -> ExperimentLogEntry {
        precondition(action != .analysed, "an analysis is logged with analysed(_:runID:scheduledFor:)")
        var w = JSONWriter(capacity: 1024)
        w.beginObject()
        w.key("action"); w.string(action.rawValue)
        w.key("reason")
        if let reason { w.string(reason) } else { w.null() }
        w.key("definition"); w.raw(definition.canonicalJSON)
        w.endObject()
        return ExperimentLogEntry(action: action, experimentID: definition.id, appID: definition.appID,
                                  occurredAt: time, payload: w.bytes)
    }

    /// An analysis run and its decision:
    /// `{"action": "analysed", "run_id": n, "scheduled_for": rfc3339, "manual": bool, "decision": s,
    /// "result": RESULT}` with the result's canonical JSON.
    public static func analysed(_ result: ExperimentRunResult, appID: String, runID: Int64, scheduledFor: Timestamp,
                                isManual: Bool) -> ExperimentLogEntry {
        var w = JSONWriter(capacity: 4096)
        w.beginObject()
        w.key("action"); w.string(Action.analysed.rawValue)
        w.key("run_id"); w.int(Int(runID))
        w.key("scheduled_for"); w.string(scheduledFor.rfc3339)
        w.key("manual"); w.bool(isManual)
        w.key("decision"); w.string(result.decision.code)
        w.key("result"); w.raw(result.canonicalJSON)
        w.endObject()
        return ExperimentLogEntry(action: .analysed, experimentID: result.experimentID, appID: appID,
                                  occurredAt: result.analyzedAt, payload: w.bytes)
    }
}
