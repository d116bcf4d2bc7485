import Foundation
import Runtime

/// `engage serve`: the ingestion API, projector and scheduler (filled in by the ingestion issue).
enum ServeCommand: EngageCommand {
    static let definition = Command(
        name: "serve",
        abstract: "Run engage: database (local unless --database), migrations, then serve until SIGTERM or SIGINT.",
        options: CommonOptions.database + CommonOptions.logging)

    static func run(_ arguments: ParsedArguments) async throws {
        let logger = try CommonOptions.logger(arguments)
        let setup = try DatabaseSetup.open(arguments, logger: logger)
        defer { setup.close() }
        logger.info("engage.ready")
        for await signal in UnixSignals.stream([.sigterm, .sigint]) {
            logger.info("engage.stopping", ["signal": "\(signal)"])
            break
        }
    }
}
