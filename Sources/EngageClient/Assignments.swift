import Foundation

/// The arm of one experiment this device is in, from `GET /v1/assignments`.
public struct Assignment: Sendable, Hashable {
    public var experiment: String
    public var arm: String
    /// The attachment strategy the arm asks for, as the server spelled it.
    public var strategy: String?
    public var probability: Double?

    public init(experiment: String, arm: String, strategy: String? = nil, probability: Double? = nil) {
        self.experiment = experiment
        self.arm = arm
        self.strategy = strategy
        self.probability = probability
    }

    /// The strategy when it is one this client knows; nil for a newer one (apply your default).
    public var attachmentStrategy: AttachmentStrategy? { strategy.flatMap(AttachmentStrategy.init(rawValue:)) }

    /// What to put in the `experiment` field of events caused by this assignment.
    public var experimentArm: ExperimentArm { ExperimentArm(id: experiment, arm: arm, probability: probability) }
}

/// Reading the assignments answer and the cache file, tolerantly: unknown members are ignored
/// and an entry without `experiment` or `arm` is skipped, so a newer server cannot break an
/// older app.
enum AssignmentsDocument {
    static func parse(_ data: Data) -> [Assignment]? {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return parse(object)
    }

    static func parse(_ object: [String: Any]) -> [Assignment]? {
        guard let entries = object["assignments"] as? [Any] else { return nil }
        return entries.compactMap { entry in
            guard let entry = entry as? [String: Any],
                  let experiment = entry["experiment"] as? String, !experiment.isEmpty,
                  let arm = entry["arm"] as? String, !arm.isEmpty
            else { return nil }
            let probability = (entry["probability"] as? NSNumber)?.doubleValue
            return Assignment(experiment: experiment, arm: arm, strategy: entry["strategy"] as? String,
                              probability: probability)
        }
    }

    static func json(_ assignments: [Assignment]) -> String {
        "[" + assignments.map { assignment in
            JSONWriter.object {
                $0.string("experiment", assignment.experiment)
                $0.string("arm", assignment.arm)
                $0.string("strategy", assignment.strategy)
                $0.number("probability", assignment.probability)
            }
        }.joined(separator: ",") + "]"
    }
}

/// `<container>/EngageClient/assignments.json`: the last answer for one device and when it came.
struct AssignmentCache: Sendable {
    struct Entry: Sendable, Equatable {
        var deviceID: String
        var fetchedAt: Date
        var assignments: [Assignment]
    }

    let url: URL

    func read() -> Entry? {
        guard let data = try? Data(contentsOf: url),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let deviceID = object["device_id"] as? String,
              let fetchedMS = (object["fetched_at_ms"] as? NSNumber)?.int64Value,
              let assignments = AssignmentsDocument.parse(object)
        else { return nil }
        return Entry(deviceID: deviceID, fetchedAt: Date(timeIntervalSince1970: Double(fetchedMS) / 1000),
                     assignments: assignments)
    }

    func write(_ entry: Entry) {
        let text = JSONWriter.object {
            $0.string("device_id", entry.deviceID)
            $0.integer("fetched_at_ms", Int(entry.fetchedAt.timeIntervalSince1970 * 1000))
            $0.raw("assignments", AssignmentsDocument.json(entry.assignments))
        }
        try? Data(text.utf8).write(to: url, options: .atomic)
    }
}
