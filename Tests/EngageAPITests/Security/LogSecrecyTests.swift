import EngageAPI
import EngageCore
import Foundation
import Testing
import TestSupport

/// Everything the server logs (at debug, its most talkative level) while it handles keys, events
/// whose properties look like reply text, refusals of every kind and the projector's work: no
/// line holds a key, its secret part, a property value or a device id.
@Suite("Log secrecy", .serialized)
struct LogSecrecyTests {
    @Test(.timeLimit(.minutes(2)))
    func noLogLineHoldsAKeyOrEventText() async throws {
        let clock = ManualTime()
        try await TestServer.withServer(configure: clock.limiting(RateLimit(requests: 1, burst: 20))) { server in
            let app = uniqueApp("logs")
            let ingest = try await server.key(app: app)
            let read = try await server.key(app: app, role: .read)
            let admin = try await server.key(app: app, role: .admin)
            let revoked = try await server.keys.create(app: app, role: .ingest)
            #expect(try await server.keys.revoke(keyID: revoked.key.keyID))
            let unknown = "egk_0badc0de_" + String(repeating: "cd", count: 20)
            let reply = "SECRET-REPLY-\(UUID().uuidString)"
            let device = "DEVICE-\(UUID().uuidString)"
            let notification = "NOTIFICATION-\(UUID().uuidString)"
            let secrets = [ingest, read, admin, revoked.secret, unknown, reply, device]
                + [ingest, read, admin, revoked.secret].map { String($0.split(separator: "_").last!) }

            let action = Self.action(device: device, notification: notification, properties: #"{"reply":"\#(reply)","draft":"\#(reply)"}"#)
            let cases: [(key: String?, method: String, target: String, body: String)] = [
                (ingest, "POST", "/v1/events", "[\(action)]"),
                (ingest, "POST", "/v1/events", "[\(Self.action(device: device, notification: notification, properties: "{}"))]"),
                (ingest, "POST", "/v1/events", #"[{"reply_text":"\#(reply)"}]"#),
                (ingest, "POST", "/v1/events", #"[{"event_id":"\#(reply)"}"#),
                (ingest, "POST", "/v1/events?key=\(ingest)&text=\(reply)", "[\(action)]"),
                (read, "POST", "/v1/events", "[\(action)]"),
                (revoked.secret, "POST", "/v1/events", "[\(action)]"),
                (unknown, "POST", "/v1/events", "[\(action)]"),
                (nil, "POST", "/v1/events", "[\(action)]"),
                (read, "GET", "/v1/report?category=\(reply)", ""),
                (ingest, "GET", "/v1/assignments?device_id=\(device)", ""),
                (admin, "GET", "/v1/experiments/\(reply)", ""),
                (admin, "POST", "/v1/experiments", #"{"id":"\#(reply)"}"#),
                (nil, "GET", "/\(ingest)/\(reply)", ""),
                (nil, "GET", "/metrics", ""),
            ]
            for request in cases {
                var headers = [("Content-Type", "application/json")]
                if let key = request.key { headers.append(("Authorization", "Bearer \(key)")) }
                _ = try await server.request(request.method, request.target, headers: headers, body: Array(request.body.utf8))
            }
            // Over the rate limit.
            for _ in 0..<25 { _ = try await server.request("GET", "/v1/assignments?device_id=\(device)", headers: [("Authorization", "Bearer \(ingest)")]) }
            // Let the projector fold the action.
            try await waitUntil("the projector folded the action") {
                try await server.count("SELECT count(*) FROM notification_states WHERE notification_id = \(notification)") == 1
            }

            let lines = server.logSink.lines
            // The server did log these requests: one debug line each.
            #expect(lines.filter { $0.contains("msg=http.request") }.count >= cases.count + 25)
            #expect(lines.contains { $0.contains("status=429") })
            #expect(lines.contains { $0.contains("status=401") })
            for secret in secrets {
                let leaking = lines.filter { $0.contains(secret) }
                #expect(leaking.isEmpty, "\(leaking.count) line(s) hold \(secret.prefix(16))...: \(leaking.first ?? "")")
            }
            // Nor do the metrics.
            let metrics = try await server.request("GET", "/metrics").text
            for secret in secrets { #expect(!metrics.contains(secret)) }
        }
    }

    static func action(device: String, notification: String, properties: String) -> String {
        #"{"event_id":"\#(UUID().uuidString.lowercased())","type":"action","notification_id":"\#(notification)","device_id":"\#(device)","category":"chat","occurred_at":"\#(WireEvent.timestamp(ago: 0))","action_id":"REPLY","text_input_length":42,"properties":\#(properties)}"#
    }
}
