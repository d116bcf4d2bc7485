import Foundation
import Testing
import TestSupport

/// engage serve writes the occurred_at window it accepts to `ingest_windows`, where engage log
/// prune finds it (LogPruneTests).
@Suite("The ingest window a server records")
struct IngestWindowRecordTests {
    @Test(.timeLimit(.minutes(2)))
    func aServerRecordsTheWindowItAccepts() async throws {
        let server = try TestServer { $0.ingest.limits.event.maxPast = .seconds(45 * 86_400) }
        // (The time limit catches a server that never writes it.)
        try await pollUntil(every: .milliseconds(20)) {
            try await server.count("SELECT count(*) FROM ingest_windows WHERE max_past_seconds = 3888000 AND max_future_seconds = 600") == 1
        }
        await server.stop()
    }
}
