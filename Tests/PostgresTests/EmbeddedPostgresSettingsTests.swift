import EmbeddedPostgres
import Foundation
import Postgres
import Testing

/// The settings engage's own cluster starts with, and that a caller's settings replace them.
@Suite struct EmbeddedPostgresSettingsTests {
    @Test(.timeLimit(.minutes(2)))
    func startsWithEngagesSettingsUnlessTheCallerGivesItsOwn() throws {
        let directory = "/tmp/engage-settings-\(getpid())-\(UUID().uuidString.prefix(6))"
        let cluster = try EmbeddedPostgres(options: .init(dataDirectory: directory, database: "settings",
                                                          settings: ["fsync": "off", "max_wal_size": "1GB"]))
        #expect(try cluster.start() == .started)
        defer {
            try? cluster.stop(mode: "immediate")
            try? FileManager.default.removeItem(atPath: directory)
        }
        let connection = try Connection(configuration: cluster.configuration())
        defer { connection.close() }
        func setting(_ name: String) throws -> String {
            try connection.query("SELECT current_setting(\(name))")[0].decode(0, as: String.self)
        }
        // Autovacuum gentler than the stock 2 ms (docs/scaling.md, "Autovacuum's pace").
        #expect(try setting("autovacuum_vacuum_cost_delay") == "10ms")
        #expect(try setting("shared_buffers") == "256MB")
        #expect(try setting("max_wal_size") == "1GB")
        #expect(try setting("fsync") == "off")
    }
}
