import EngageAPI
import Foundation
import Runtime

/// `engage demo`: the quick start's main job. Runs engage on its local PostgreSQL with a demo
/// app and keys, and shows how to send an event.
enum DemoCommand: EngageCommand {
    static let definition = Command(
        name: "demo",
        abstract: "Run engage on its local PostgreSQL with a demo app and keys, until Ctrl-C.",
        options: CommonOptions.database + CommonOptions.logging + ServerOptions.options)

    static func run(_ arguments: ParsedArguments) async throws {
        let logger = try CommonOptions.logger(arguments)
        let options = try ServerOptions(arguments)
        let setup = try DatabaseSetup.open(arguments, logger: logger)
        defer { setup.close() }
        let engage = try EngageServer(configuration: options.server, database: setup.configuration, logger: logger)
        let ingestKey = try await engage.keys.create(app: "demo", role: .ingest, name: "demo ingest key").secret
        let address = "http://\(options.host):\(engage.port)"
        let now = Timestamp.now.rfc3339
        print("""

            engage is running at \(address) on its own PostgreSQL (\(setup.embedded?.dataDirectory ?? setup.configuration.description)).
            A demo app has an ingest key: \(ingestKey)

            Send an event:
              curl -s \(address)/v1/events -H 'Authorization: Bearer \(ingestKey)' -H 'Content-Type: application/json' \\
                -d '[{"event_id":"\(UUID().uuidString.lowercased())","type":"displayed","notification_id":"apns-1","device_id":"device-1","category":"new_photo","occurred_at":"\(now)","presentation":"rich","attachment_kind":"image"}]'

            Health: \(address)/readyz   Metrics: \(address)/metrics   Press Ctrl-C to stop.

            """)
        try await engage.run()
        await engage.pool.close()
    }
}

import EngageCore
