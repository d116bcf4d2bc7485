import EngageCore
import Foundation
import Testing
import TestSupport

/// Ingestion stores a device id in Unicode normalization form C; the assignment routes bucket the
/// same form, so a device whose app writes its id decomposed gets the arm the log reproduces.
@Suite("Assignments bucket the device id as it is stored")
struct AssignmentDeviceIDFormTests {
    @Test(.timeLimit(.minutes(2)))
    func aDecomposedDeviceIDIsBucketedAsTheLogStoresIt() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp("nfd")
        let admin = try await server.key(app: app, role: .admin)
        let ingest = try await server.key(app: app, role: .ingest)
        let id = Fixture.newExperimentID()
        let json = Fixture.definition(id: id, app: app)
        let auth = [("Authorization", "Bearer \(admin)")]
        #expect(try await server.request("POST", "/v1/experiments", headers: auth + [("Content-Type", "application/json")],
                                         body: Array(json.utf8)).status == 201)
        #expect(try await server.request("POST", "/v1/experiments/\(id)/start", headers: auth).status == 200)
        let definition = try ExperimentDefinition(json: Array(json.utf8))
        func arm(_ device: String) -> String? { ExperimentAssignment.arm(forDevice: device, definition: definition)?.arm.name }
        // "café-N" with the accent as a combining character, for an N whose two forms fall in
        // different arms.
        let decomposed = try #require((0..<500).lazy.map { "cafe\u{301}-\($0)" }.first {
            arm($0) != arm($0.precomposedStringWithCanonicalMapping)
        })

        let encoded = try #require(decomposed.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let got = try await server.request("GET", "/v1/assignments?device_id=\(encoded)", headers: [("Authorization", "Bearer \(ingest)")])
        try #require(got.status == 200, "\(got.text)")
        let posted = try await server.request("POST", "/v1/assignments", headers: [("Authorization", "Bearer \(ingest)"), ("Content-Type", "application/json")],
                                              body: Array(#"{"device_ids":["cafe\u0301-\#(decomposed.split(separator: "-").last!)"]}"#.utf8))
        try #require(posted.status == 200, "\(posted.text)")

        // The event the device sends with the same id, and the id the log holds.
        let event = WireEvent.displayed()
        let body = "[" + event.json.replacingOccurrences(of: #""device_id":"d1""#, with: #""device_id":"\#(decomposed)""#)
            .replacingOccurrences(of: #""notification_id":"apns-1""#, with: #""notification_id":"n-\#(UUID().uuidString)""#) + "]"
        let accepted = try await server.post(body, key: ingest)
        try #require(accepted.status == 200 && accepted.text.hasPrefix(#"{"accepted":1,"#), "\(accepted.text)")
        let stored = try await server.pool.withConnection { connection in
            // (The experiment's own changes are in the log too, without a device.)
            try connection.query("SELECT device_id FROM events WHERE app_id = \(app) AND type = 'displayed'")[0].decode(0, as: String.self)
        }
        #expect(Array(stored.utf8) == Array(decomposed.precomposedStringWithCanonicalMapping.utf8))
        let logged = try #require(arm(stored))
        #expect(got.text.contains(#""arm":"\#(logged)""#), "\(got.text)")
        #expect(posted.text.contains(#""arm":"\#(logged)""#), "\(posted.text)")
    }
}
