import EngageCore
import Foundation
import Postgres
import Projections
import Testing
import TestSupport

/// A report read while a rebuild swaps its copies in (one transaction: the live tables dropped,
/// the copies renamed into their place, the tail folded into them) waits for the swap and reads
/// the new model whole. Its snapshot used to be fixed by its first SELECT, before that SELECT
/// waited for the swap's lock: it then read the renamed copy without what the swap had added.
@Suite("A report during a rebuild's swap")
struct ReportDuringSwapTests {
    @Test(.timeLimit(.minutes(2)))
    func aReportWaitsForTheSwapAndReadsTheNewModelWhole() async throws {
        let database = try TestPostgres.freshDatabase()
        let swap = try Connection(configuration: database)
        defer { swap.close() }
        // The swap, as far as a reader sees it: the copy renamed into place and filled, not committed.
        try swap.execute("BEGIN")
        try swap.execute("ALTER TABLE engagement_daily RENAME TO engagement_daily_before_swap")
        try swap.execute("CREATE TABLE engagement_daily (LIKE engagement_daily_before_swap INCLUDING ALL)")
        try swap.execute("""
            INSERT INTO engagement_daily (app_id, category, presentation, attachment_kind, day, notifications, delivered, displayed, opened)
            VALUES ('swap-app', 'news', 'rich', 'image', '2026-12-01', 10, 10, 10, 4)
            """)

        let reader = ConnectionPool(configuration: database, size: 1)
        let report = Task { try await ReportQuery(appID: "swap-app").run(on: reader, now: Timestamp(rfc3339: "2026-12-02T00:00:00Z")!) }
        // The report waits for the swap's lock...
        let watcher = try Connection(configuration: database)
        defer { watcher.close() }
        try await pollUntil(every: .milliseconds(10)) {
            try watcher.query("""
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()
                """)[0].decode(0, as: Int.self) > 0
        }
        // ... which it gets once the swap commits: then it reads the new table whole.
        try swap.execute("COMMIT")
        let read = try await report.value
        let opened = read.total.metrics.first { $0.metric == .engagement(.open) }
        #expect(opened?.rich.trials == 10 && opened?.rich.successes == 4, "\(read.total.metrics)")
        await reader.close()
    }
}
