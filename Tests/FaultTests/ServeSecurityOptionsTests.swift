import EngageAPI
import EngageCore
import Foundation
import Postgres
import Testing
import TestSupport

/// The security options of `engage serve` (and others refused before it starts) as an operator
/// sets them: in the environment of a real process. Refusals exit 64 with a message that never
/// repeats the salt.
@Suite("engage serve: security options")
struct ServeSecurityOptionsTests {
    static let salt = "a-salt-from-the-environment-0123456789"

    @Test(.timeLimit(.minutes(2)), arguments: [
        ([:], ["--hash-device-ids", "on"], "--hash-device-ids on needs a secret salt: set ENGAGE_DEVICE_ID_SALT"),
        (["ENGAGE_HASH_DEVICE_IDS": "on", "ENGAGE_DEVICE_ID_SALT": "short-salt"], [],
         "the device id salt must be at least 16 bytes"),
        ([:], ["--rate-limit", "10/h"], "invalid value '10/h' for option '--rate-limit'"),
        (["ENGAGE_RATE_LIMIT": "100/s", "ENGAGE_RATE_BURST": "0"], [], "invalid value '0' for option '--rate-burst' (from ENGAGE_RATE_BURST)"),
        (["ENGAGE_HTTP_EVENT_LOOP": "kqueue"], [], "invalid value 'kqueue' for option '--http-event-loop' (from ENGAGE_HTTP_EVENT_LOOP)"),
        ([:], ["--pool-size", "190", "--committers", "12"], "open 202 PostgreSQL connections together; at most 200"),
    ] as [([String: String], [String], String)])
    func badSettingsStopTheServerBeforeItStarts(environment: [String: String], arguments: [String], message: String) async throws {
        let workspace = try FaultWorkspace("serve-options")
        defer { workspace.remove() }
        let database = try TestPostgres.freshDatabase()
        let process = try EngageProcess(["serve", "--listen", "127.0.0.1:0"] + arguments, database: database,
                                        environment: environment, workspace: workspace, name: "serve")
        #expect(try await process.exitStatus(within: .seconds(30)) == 64)
        #expect(process.log.contains(message), "\(process.log)")
        #expect(!process.log.contains("short-salt"))
        #expect(!process.log.contains("engage.listening"))
    }

    @Test(.timeLimit(.minutes(2)))
    func hashingAndRateLimitsFromTheEnvironmentReachTheServer() async throws {
        let workspace = try FaultWorkspace("serve-options")
        defer { workspace.remove() }
        let database = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: database, size: 2)
        let key = try await KeyStore(pool: pool).create(app: "options", role: .ingest).secret
        let process = try EngageProcess(["serve", "--listen", "127.0.0.1:0", "--projector", "off", "--scheduler", "off"], database: database,
                                        environment: ["ENGAGE_HASH_DEVICE_IDS": "on", "ENGAGE_DEVICE_ID_SALT": Self.salt,
                                                      "ENGAGE_RATE_LIMIT": "1/m", "ENGAGE_RATE_BURST": "2"],
                                        workspace: workspace, name: "serve")
        let port = try await process.listeningPort()
        try await process.waitUntilReady(port: port)

        let device = "raw-device-\(UUID().uuidString)"
        var statuses: [Int] = []
        var retryAfter: String?
        for _ in 0..<3 {
            let id = UUID().uuidString.lowercased()
            let now = ISO8601DateFormatter().string(from: Date())
            let body = #"[{"event_id":"\#(id)","type":"expanded","notification_id":"n-\#(id)","device_id":"\#(device)","category":"c","occurred_at":"\#(now)"}]"#
            let response = try await offPool {
                try RawHTTPClient(port: port).request("POST", "/v1/events", headers: [
                    ("Authorization", "Bearer \(key)"), ("Content-Type", "application/json"),
                ], body: Array(body.utf8))
            }
            statuses.append(response.status)
            retryAfter = response.headers["Retry-After"]
        }
        // A burst of two, then one request a minute: the third waits most of a minute.
        #expect(statuses == [200, 200, 429])
        #expect((50...60).contains(Int(retryAfter ?? "") ?? 0), "Retry-After: \(retryAfter ?? "none")")
        let stored = try await pool.withConnection { connection in
            try connection.query("SELECT DISTINCT device_id FROM events").rows.map { try $0.decode(0, as: String.self) }
        }
        #expect(stored == [try DeviceIDHasher(salt: Self.salt).hash(device)])
        #expect(!process.log.contains(Self.salt))
        #expect(try await process.terminate() == 0)
        await pool.close()
    }
}
