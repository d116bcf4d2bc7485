import EngageAPI
import EngageCore
import Foundation
import Testing
import TestSupport

/// `--hash-device-ids`: the log, the read model and every other table hold the keyed hash of a
/// device id, never the id; assignments bucket the same hash, so they agree with the log.
@Suite("Device id hashing", .serialized)
struct DeviceIDHashingTests {
    static let salt = "a-test-salt-of-more-than-16-bytes"

    @Test(.timeLimit(.minutes(2)))
    func rawDeviceIDsNeverReachTheDatabaseAndAssignmentsFollowTheHash() async throws {
        let hasher = try DeviceIDHasher(salt: Self.salt)
        try await TestServer.withServer(configure: { $0.ingest.deviceIDHasher = hasher }) { server in
            let app = uniqueApp("hashed")
            let ingest = try await server.key(app: app)
            let admin = try await server.key(app: app, role: .admin)
            let devices = (0..<12).map { "raw-device-\($0)-\(UUID().uuidString)" }

            // Two events per device, in one JSON batch and one NDJSON batch.
            let first = devices.map { Self.displayed(device: $0) }
            let second = devices.map { Self.displayed(device: $0) }
            try expectAccepted(try await server.post(first.array, key: ingest), Acceptance(accepted: devices.count))
            try expectAccepted(try await server.post(second.ndjson, key: ingest, contentType: "application/x-ndjson"),
                               Acceptance(accepted: devices.count))

            let stored = try await server.pool.withConnection { connection in
                try connection.query("SELECT event_id::text, device_id FROM events WHERE app_id = \(app)").rows.map {
                    (UUID(uuidString: try $0.decode(0, as: String.self))!, try $0.decode(1, as: String.self))
                }
            }
            let deviceOf = Dictionary(uniqueKeysWithValues: stored)
            #expect(deviceOf.count == 2 * devices.count)
            for (index, device) in devices.enumerated() {
                // The same device maps to the same stored id, in every request.
                #expect(deviceOf[first[index].id] == hasher.hash(device))
                #expect(deviceOf[second[index].id] == hasher.hash(device))
            }
            #expect(Set(deviceOf.values).count == devices.count)

            // Once the projector has folded the events, no table anywhere holds a raw id.
            try await waitUntil("the projector caught up") {
                try await server.count("SELECT count(*) FROM notification_states WHERE app_id = \(app)") == 2 * devices.count
            }
            for device in devices {
                #expect(try await server.tablesContaining(device) == [], "\(device) is stored")
            }

            // Assignments bucket the stored id: the log alone reproduces them.
            let id = "hashed-\(UUID().uuidString.prefix(8).lowercased())"
            let definitionJSON = Fixture.definition(id: id, app: app)
            let auth = [("Authorization", "Bearer \(admin)")]
            #expect(try await server.request("POST", "/v1/experiments", headers: auth + [("Content-Type", "application/json")],
                                             body: Array(definitionJSON.utf8)).status == 201)
            #expect(try await server.request("POST", "/v1/experiments/\(id)/start", headers: auth).status == 200)
            let definition = try ExperimentDefinition(json: Array(definitionJSON.utf8))
            var differsFromTheRawID = false
            for device in devices {
                let expected = try #require(ExperimentAssignment.arm(forDevice: hasher.hash(device), definition: definition))
                let raw = try #require(ExperimentAssignment.arm(forDevice: device, definition: definition))
                differsFromTheRawID = differsFromTheRawID || raw.arm.name != expected.arm.name
                for _ in 0..<2 {
                    let response = try await server.request("GET", "/v1/assignments?device_id=\(device)",
                                                            headers: [("Authorization", "Bearer \(ingest)")])
                    #expect(response.text == #"{"assignments":[{"experiment":"\#(id)","arm":"\#(expected.arm.name)","strategy":"\#(expected.arm.strategy.rawValue)","probability":0.5}]}"#)
                }
            }
            // These ids and this salt put some device in another arm than its raw id would: the
            // route really hashes.
            #expect(differsFromTheRawID)
        }
    }

    static func displayed(device: String) -> WireEvent {
        let event = WireEvent.displayed()
        return WireEvent(id: event.id, json: event.json.replacingOccurrences(of: #""device_id":"d1""#, with: #""device_id":"\#(device)""#)
            .replacingOccurrences(of: #""notification_id":"apns-1""#, with: #""notification_id":"n-\#(UUID().uuidString)""#))
    }
}
