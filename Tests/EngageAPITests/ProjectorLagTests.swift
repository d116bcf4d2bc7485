import EngageAPI
import EngageCore
import Foundation
import Projections
import Runtime
import Testing
import TestSupport

/// The projector's lag as `/metrics` and `GET /v1/report` show it, on a real server and
/// PostgreSQL: it grows while events arrive with no projector folding them and returns to 0 once
/// one has folded them.
@Suite("Projector lag")
struct ProjectorLagTests {
    /// A display of `notification` (a second one of the same notification changes nothing counted).
    static func event(notification: String) -> String {
        let occurred = ISO8601DateFormatter().string(from: Date())
        return #"{"event_id":"\#(UUID().uuidString.lowercased())","type":"displayed","notification_id":"\#(notification)","device_id":"d1","category":"new_photo","occurred_at":"\#(occurred)","presentation":"rich","attachment_kind":"image"}"#
    }

    static func batch(_ notifications: [String]) -> String {
        "[" + notifications.map(event(notification:)).joined(separator: ",") + "]"
    }

    /// The lag gauges of one scrape.
    static func lag(_ server: TestServer) async throws -> (events: Double, seconds: Double) {
        let response = try await server.request("GET", "/metrics")
        try #require(response.status == 200)
        var values: [String: Double] = [:]
        for line in response.text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = Double(parts[1]) { values[String(parts[0])] = value }
        }
        return (try #require(values["engage_projector_lag_events"]), try #require(values["engage_projector_lag_seconds"]))
    }

    static func currentAsOf(_ server: TestServer, key: String) async throws -> ReportBody.CurrentAsOf {
        try ReportRouteTests.decodeReport(try await ReportRouteTests.getReport(server, key: key)).current_as_of
    }

    @Test(.timeLimit(.minutes(2)))
    func lagGrowsWhileNothingFoldsAndReturnsToZeroOnceTheProjectorHasFolded() async throws {
        // No projector in the server: the test starts one when the lag has been seen.
        let server = try TestServer { $0.runProjector = false }
        let projecting: Task<Void, Error>
        do {
            let ingest = try await server.key(role: .ingest)
            let read = try await server.key(role: .read)

            let empty = try await Self.lag(server)
            #expect(empty.events == 0 && empty.seconds == 0)
            // No read replica configured: no replica series either (its lag would read 0, "in sync").
            #expect(!(try await server.request("GET", "/metrics")).text.contains("engage_read_replica"))
            let before = try await Self.currentAsOf(server, key: read)
            #expect(before.checkpoint_at == nil && before.lag_events == 0 && before.lag_seconds == 0)

            // An acknowledged event is committed, so the next scrape counts it.
            let first = try await server.post(Self.batch(["n1", "n1", "n2"]), key: ingest)
            try #require(first.status == 200 && first.text.hasPrefix(#"{"accepted":3,"#), "\(first.text)")
            let afterFirst = try await Self.lag(server)
            #expect(afterFirst.events == 3)
            #expect(afterFirst.seconds > 0)
            // The oldest waiting event only gets older while nothing folds it.
            try await pollUntil(every: .milliseconds(20)) { try await Self.lag(server).seconds > afterFirst.seconds + 0.05 }

            let second = try await server.post(Self.batch(["n3", "n3"]), key: ingest)
            try #require(second.status == 200 && second.text.hasPrefix(#"{"accepted":2,"#), "\(second.text)")
            let afterSecond = try await Self.lag(server)
            #expect(afterSecond.events == 5)
            #expect(afterSecond.seconds > afterFirst.seconds)
            let behind = try await Self.currentAsOf(server, key: read)
            #expect(behind.checkpoint_at == nil && behind.lag_events == 5 && behind.lag_seconds > 0)

            var configuration = Projector.Configuration()
            configuration.pollInterval = .milliseconds(50)
            let projector = Projector(pool: server.pool, configuration: configuration, logger: Logger(label: "test", level: .error),
                                      metrics: ProjectorMetrics(registry: MetricsRegistry()))
            projecting = Task { try await projector.run() }
        } catch {
            await server.stop()
            throw error
        }
        do {
            try await pollUntil(every: .milliseconds(20)) {
                let lag = try await Self.lag(server)
                return lag.events == 0 && lag.seconds == 0
            }
            let read = try await server.key(role: .read)
            let caughtUp = try await Self.currentAsOf(server, key: read)
            #expect(caughtUp.lag_events == 0 && caughtUp.lag_seconds == 0)
            let checkpointAt = try #require(caughtUp.checkpoint_at)
            #expect(Timestamp(rfc3339: checkpointAt) != nil)
            // Folded after the scrape that saw 5 events waiting, so with all of them in the report.
            let report = try ReportRouteTests.decodeReport(try await ReportRouteTests.getReport(server, key: read))
            #expect(report.total.plain.notifications + report.total.rich.notifications + report.total.not_displayed.notifications == 3)
        } catch {
            projecting.cancel()
            _ = try? await projecting.value
            await server.stop()
            throw error
        }
        projecting.cancel()
        _ = try? await projecting.value
        await server.stop()
    }
}
