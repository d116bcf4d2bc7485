import EmbeddedPostgres
import Testing
import TestSupport

/// Two processes starting engage's local PostgreSQL on one data directory at once (`engage serve`
/// and `engage scheduler` on the default) take turns: one creates and starts the cluster, the
/// other finds it running. Both ran initdb, or pg_ctl start, and one of them failed.
@Suite("Local PostgreSQL: starts at once take turns")
struct EmbeddedStartTurnsTests {
    @Test(.timeLimit(.minutes(3)))
    func twoStartsOfOneNewClusterTakeTurns() async throws {
        let workspace = try FaultWorkspace("embedded-turns")
        defer { workspace.remove() }
        let options = EmbeddedPostgres.Options(dataDirectory: workspace.file("pg"), database: "turns", settings: ["fsync": "off"])
        let first = try EmbeddedPostgres(options: options), second = try EmbeddedPostgres(options: options)
        defer { try? first.stop(mode: "immediate") }

        async let firstOutcome = offPool { try first.start() }
        async let secondOutcome = offPool { try second.start() }
        let outcomes = try await [firstOutcome, secondOutcome]

        #expect(outcomes.sorted { "\($0)" < "\($1)" } == [.alreadyRunning, .started])
        #expect(try first.status() == .running)
    }
}
