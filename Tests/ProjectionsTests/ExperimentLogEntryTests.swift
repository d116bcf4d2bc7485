import EngageCore
import EventStore
import Projections
import Testing

@Suite("Experiment entries in the log")
struct ExperimentLogEntryTests {
    static func stored(_ entry: ExperimentLogEntry) -> StoredEvent {
        StoredEvent(position: .start, eventID: EventID(high: 1, low: 2), appID: entry.appID, notificationID: entry.streamID,
                    type: entry.type, category: "", deviceID: "", occurredAt: entry.occurredAt, recordedAt: entry.occurredAt,
                    experimentID: nil, experimentArm: nil, payload: entry.payload)
    }

    @Test func theProjectionSkipsThemWithoutCallingThemUndecodable() throws {
        let definition = ExperimentDefinition(
            id: "exp-1", appID: "app-1",
            arms: [ExperimentArmDefinition(name: "a", strategy: .full, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "b", strategy: .noAttachment, weight: 0.5)],
            primaryMetric: .open)
        let time = Timestamp(rfc3339: "2026-03-01T00:00:00Z")!
        let entries = ExperimentLogEntry.Action.allCases.filter { $0 != .analysed }.map {
            Self.stored(.lifecycle($0, definition: definition, reason: nil, at: time))
        }
        let changes = EngagementChanges.compute(entries, known: [:])
        #expect(changes.eventCount == 3)
        #expect(changes.undecodable == 0)
        #expect(changes.states.isEmpty)
    }

    @Test func typesAreRecognisedAndNoClientTypeIsOne() {
        for action in ExperimentLogEntry.Action.allCases {
            #expect(ExperimentLogEntry.action(ofType: "experiment_" + action.rawValue) == action)
        }
        #expect(ExperimentLogEntry.action(ofType: "experiment_") == nil)
        #expect(ExperimentLogEntry.action(ofType: "experiment_paused") == nil)
        for type in EventType.allCases {
            #expect(ExperimentLogEntry.action(ofType: type.rawValue) == nil)
        }
    }
}
