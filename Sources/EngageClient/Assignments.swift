import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The arm of one experiment a device is in, from `GET` or `POST /v1/assignments`.
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

/// A request for assignments that did not get an answer.
public struct AssignmentsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status, or nil when no answer came (or it was not engage's).
    public var status: Int?
    public var detail: String

    public var description: String { "engage assignments: " + (status.map { "HTTP \($0): " } ?? "") + detail }
}

extension EngageClient {
    /// The most device ids one batch request carries (the server's limit).
    public static let assignmentsBatchLimit = 1000

    /// The device's arms in the app's running experiments, for the server that sends a push:
    /// it puts the arm into the payload (`PushPayload`) and into its `sent` event. `category`
    /// leaves out experiments that do not take that category's notifications. Needs an
    /// `ingest` or `read` key.
    public func assignments(for deviceID: String, category: String? = nil,
                            timeout: Duration = .seconds(10)) async throws -> [Assignment] {
        var components = URLComponents(url: configuration.endpoint.appendingPathComponent("v1/assignments"),
                                       resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "device_id", value: deviceID)]
            + (category.map { [URLQueryItem(name: "category", value: $0)] } ?? [])
        // Foundation leaves a '+' as it is in a query, and the server reads it as a space, as
        // forms send one: `ab+cd==` was bucketed as `ab cd==`, another device's arm.
        let query = components?.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        components?.percentEncodedQuery = query
        guard let url = components?.url else { throw AssignmentsError(status: nil, detail: "the device id makes no URL") }
        var request = URLRequest(url: url)
        request.setValue("Bearer \(configuration.ingestKey)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let body = try Self.answerBody(await transport.send(request, timeout: timeout))
        guard let assignments = AssignmentsDocument.parse(body) else {
            throw AssignmentsError(status: 200, detail: "the answer is not an assignments document")
        }
        return assignments
    }

    /// The arms of many devices at once, for a whole send: one `POST /v1/assignments` per 1,000
    /// devices. Devices in no experiment (or outside its coverage) have no entry.
    public func assignments(forDevices deviceIDs: [String], category: String? = nil,
                            timeout: Duration = .seconds(10)) async throws -> [String: [Assignment]] {
        var result: [String: [Assignment]] = [:]
        for start in stride(from: 0, to: deviceIDs.count, by: Self.assignmentsBatchLimit) {
            let chunk = Array(deviceIDs[start..<min(start + Self.assignmentsBatchLimit, deviceIDs.count)])
            var request = URLRequest(url: configuration.endpoint.appendingPathComponent("v1/assignments"))
            request.httpMethod = "POST"
            request.setValue("Bearer \(configuration.ingestKey)", forHTTPHeaderField: "Authorization")
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(AssignmentsDocument.batchRequest(deviceIDs: chunk, category: category).utf8)
            let body = try Self.answerBody(await transport.send(request, timeout: timeout))
            guard let entries = AssignmentsDocument.parseBatch(body) else {
                throw AssignmentsError(status: 200, detail: "the answer is not an assignments document")
            }
            for (device, assignment) in entries { result[device, default: []].append(assignment) }
        }
        return result
    }

    private static func answerBody(_ outcome: Transport.Outcome) throws -> Data {
        switch outcome {
        case let .response(200, _, body):
            return body
        case let .response(status, _, body):
            let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
            throw AssignmentsError(status: status, detail: object?["detail"] as? String ?? "refused")
        case let .failed(reason):
            throw AssignmentsError(status: nil, detail: reason)
        case .timedOut:
            throw AssignmentsError(status: nil, detail: "timed out")
        case .cancelled:
            throw AssignmentsError(status: nil, detail: "cancelled")
        }
    }
}

/// Reading and writing the assignments documents, tolerantly: unknown members are ignored and
/// an entry without `experiment` or `arm` is skipped, so a newer server cannot break an older
/// sender.
enum AssignmentsDocument {
    static func parse(_ data: Data) -> [Assignment]? {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let entries = object["assignments"] as? [Any]
        else { return nil }
        return entries.compactMap { ($0 as? [String: Any]).flatMap(assignment) }
    }

    /// `{"assignments": [{"device_id": ..., "experiment": ..., ...}]}`, as device and assignment.
    static func parseBatch(_ data: Data) -> [(String, Assignment)]? {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let entries = object["assignments"] as? [Any]
        else { return nil }
        return entries.compactMap { entry in
            guard let entry = entry as? [String: Any], let device = entry["device_id"] as? String,
                  let assignment = assignment(entry)
            else { return nil }
            return (device, assignment)
        }
    }

    static func assignment(_ entry: [String: Any]) -> Assignment? {
        guard let experiment = entry["experiment"] as? String, !experiment.isEmpty,
              let arm = entry["arm"] as? String, !arm.isEmpty
        else { return nil }
        return Assignment(experiment: experiment, arm: arm, strategy: entry["strategy"] as? String,
                          probability: FoundationNumber.probability(entry["probability"]))
    }

    static func batchRequest(deviceIDs: [String], category: String?) -> String {
        JSONWriter.object {
            $0.raw("device_ids", JSONWriter.encode(.array(deviceIDs.map(JSONValue.string))))
            $0.string("category", category)
        }
    }
}
