import EngageAPI
import Foundation
import Testing
import TestSupport

@Suite("Ingestion over HTTP")
struct IngestSmokeTests {
    static func displayed(_ id: String = UUID().uuidString.lowercased(), at time: String? = nil) -> String {
        let occurred = time ?? ISO8601DateFormatter().string(from: Date())
        return #"{"event_id":"\#(id)","type":"displayed","notification_id":"apns-1","device_id":"d1","category":"new_photo","occurred_at":"\#(occurred)","presentation":"rich","attachment_kind":"image"}"#
    }

    @Test func validEventsAreStoredAndRetriesAreDuplicates() async throws {
        let server = try TestServer()
        let key = try await server.key()
        let body = "[\(Self.displayed()),\(Self.displayed()),{\"event_id\":\"nope\"}]"
        let first = try await server.post(body, key: key)
        #expect(first.status == 200)
        #expect(first.text == #"{"accepted":2,"duplicates":0,"rejected":[{"index":2,"field":"event_id","problem":"must be a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e"}]}"#)
        let retry = try await server.post(body, key: key)
        #expect(retry.text.hasPrefix(#"{"accepted":0,"duplicates":2,"#))
        #expect(try await server.count("SELECT count(*) FROM events") == 2)
        await server.stop()
    }
}
