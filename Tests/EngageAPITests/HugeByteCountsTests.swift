import EngageAPI
import Foundation
import Testing
import TestSupport

/// Ingestion accepts byte counts up to 2^53 per event; a bucket's sum of many such counts passes
/// what 64 bits hold. The projector and the report must go on rather than trap and take the
/// server down, again after every restart: the read model keeps the exact sum (numeric), the
/// report holds what it shows at Int64.max.
@Suite("Byte counts that add up past 64 bits")
struct HugeByteCountsTests {
    static let largestAccepted = "9007199254740992"

    /// A delivered event of its own notification, all in one bucket (category, kind, day).
    static func delivered(_ n: Int, at time: String) -> String {
        #"{"event_id":"\#(UUID().uuidString.lowercased())","type":"delivered","notification_id":"huge-\#(n)","device_id":"d\#(n % 9)","#
            + #""category":"new_photo","occurred_at":"\#(time)","attachment":{"kind":"image","format":"jpeg","bytes":\#(largestAccepted),"#
            + #""source":"network","download_ms":40},"outcome":"attached","processing_ms":90,"time_will_expire":false}"#
    }

    /// `telemetry_total.bytes_mean` of a JSON report.
    static func meanBytes(_ json: String) throws -> Double? {
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        let total = object?["telemetry_total"] as? [String: Any]
        return (total?["bytes_mean"] as? NSNumber)?.doubleValue
    }

    @Test(.timeLimit(.minutes(3)))
    func theProjectorAndTheReportGoOnWhenABucketsBytesPassInt64() async throws {
        // One request, so that the projector folds every event in one batch.
        let server = try TestServer {
            $0.ingest.limits.maxEvents = 2_000
            $0.ingest.maxDecompressedBytes = 4 << 20
        }
        let ingest = try await server.key()
        let read = try await server.key(role: .read)
        let now = ISO8601DateFormatter().string(from: Date())
        // 1,100 events of 2^53 bytes: about 9.9e18 bytes in one bucket, Int64.max is about 9.2e18.
        let body = "[" + (0..<1_100).map { Self.delivered($0, at: now) }.joined(separator: ",") + "]"
        let answer = try await server.post(body, key: ingest)
        #expect(answer.status == 200)
        #expect(answer.text == #"{"accepted":1100,"duplicates":0,"rejected":[]}"#)

        try await ReportRouteTests.waitForProjector(server)
        // 1,100 x 2^53, exactly.
        let stored = try await server.count("SELECT count(*) FROM extension_telemetry_daily WHERE bytes = 9907919180215091200")
        #expect(stored == 1)
        let report = try await ReportRouteTests.getReport(server, "?by=attachment", key: read)
        #expect(report.status == 200)
        #expect(report.text.contains(#""bytes_total":9223372036854775807"#), "\(report.text.prefix(600))")
        // The mean is of the exact sum: every event reported 2^53 bytes, so the mean is 2^53, not
        // the shown total over 1,100 (about 8.4e15, below every value averaged).
        let mean = try Self.meanBytes(report.text)
        #expect(mean == 9_007_199_254_740_992)

        // A later batch adds to the stored sum in SQL, exactly: not "bigint out of range" stopping
        // the projector.
        let more = "[" + (1_100..<1_110).map { Self.delivered($0, at: now) }.joined(separator: ",") + "]"
        #expect(try await server.post(more, key: ingest).status == 200)
        try await ReportRouteTests.waitForProjector(server)
        #expect(try await server.count("SELECT delivered FROM extension_telemetry_daily WHERE bytes = 9997991172762501120") == 1_110)
        let later = try await ReportRouteTests.getReport(server, "?by=attachment", key: read)
        #expect(later.text.contains(#""bytes_total":9223372036854775807"#), "\(later.text.prefix(600))")
        await server.stop()
    }
}
