import EngageCore
import HTTPServer

/// The body of `POST /v1/assignments`: `{"device_ids": ["...", ...], "category": "new_photo"}`,
/// `category` optional. Every problem names its field.
struct AssignmentsQuery: Equatable {
    var deviceIDs: [String]
    var category: String?

    static func parse(_ request: HTTPRequest) -> Result<AssignmentsQuery, HTTPProblem> {
        if let problem = JSONRequestBody.problem(request, sending: "the device ids") { return .failure(problem) }
        return parse(body: request.body)
    }

    static func parse(body: [UInt8]) -> Result<AssignmentsQuery, HTTPProblem> {
        let json: JSON
        do {
            json = try JSON.parse(body, maxDepth: 3)
        } catch {
            return .failure(APIProblems.malformed(error))
        }
        guard json.kind(json.root) == .object else { return .failure(invalid(nil, "the body must be a JSON object")) }
        var deviceIDs: [String]?
        var category: String?
        for (key, value) in json.members(json.root) {
            if json.string(key, equals: "device_ids") {
                guard json.kind(value) == .array else { return .failure(invalid("device_ids", "must be an array of strings")) }
                var ids: [String] = []
                for (index, element) in json.elements(value).enumerated() {
                    guard let id = json.string(element), IdentifierText.storable(id, maxBytes: 200) != nil else {
                        return .failure(invalid("device_ids[\(index)]", "must be a string of 1 to 200 bytes (in NFC) without control characters"))
                    }
                    ids.append(id)
                }
                guard (1...ExperimentRoutes.assignmentsBatchLimit).contains(ids.count) else {
                    return .failure(invalid("device_ids", "must hold 1 to \(ExperimentRoutes.assignmentsBatchLimit) ids"))
                }
                deviceIDs = ids
            } else if json.string(key, equals: "category") {
                if json.isNull(value) { continue }
                guard let text = json.string(value), IdentifierText.storable(text, maxBytes: 100) != nil else {
                    return .failure(invalid("category", "must be a string of 1 to 100 bytes (in NFC) without control characters"))
                }
                category = text
            } else {
                return .failure(invalid(json.string(key) ?? "", "is not a field of this request"))
            }
        }
        guard let deviceIDs else { return .failure(invalid("device_ids", "is required")) }
        return .success(AssignmentsQuery(deviceIDs: deviceIDs, category: category))
    }

    private static func invalid(_ field: String?, _ problem: String) -> HTTPProblem {
        let detail = field.map { "\($0): \(problem)" } ?? problem
        var members: [HTTPProblem.Member] = []
        if let field { members.append(.init(name: "field", json: quoted(field))) }
        return HTTPProblem(status: 400, slug: "bad-request", title: "Bad request", detail: detail, members: members)
    }

    private static func quoted(_ text: String) -> String {
        var w = JSONWriter(capacity: text.utf8.count + 2)
        w.string(text)
        return String(decoding: w.bytes, as: UTF8.self)
    }
}
