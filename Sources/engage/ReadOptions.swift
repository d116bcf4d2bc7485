import EventStore
import Foundation
import Postgres
import Runtime

/// `--read-database` and `--read-max-lag`: a read replica for the commands and routes that only
/// read (reports, analysis replays, strategy replays), with the bound past which the primary is
/// read instead.
enum ReadOptions {
    static let readDatabase = Option<String?>(
        "read-database", value: "url",
        help: "A read replica (hot standby) for what only reads: reports, analysis and strategy replays; the primary is read while it is unreachable or too far behind.",
        environment: "ENGAGE_READ_DATABASE_URL", secret: true, validate: CommonOptions.connectionString)
    static let readMaxLag = Option(
        "read-max-lag", value: "seconds", help: "Replay lag past which the read replica is not read.", environment: "ENGAGE_READ_MAX_LAG",
        default: Int(ReadDatabase.Configuration().maxLag.components.seconds), validate: .range(1...86_400))

    static let all: [any CommandOption] = [readDatabase, readMaxLag]

    /// The read replica's connection, nil when none is given (an empty variable counts as none).
    static func replica(_ arguments: ParsedArguments) -> PostgresConfiguration? {
        guard let url = arguments[readDatabase], !url.isEmpty else { return nil }
        var configuration = PostgresConfiguration(connectionString: url)
        configuration.writes = false
        return configuration
    }

    static func configuration(_ arguments: ParsedArguments) -> ReadDatabase.Configuration {
        ReadDatabase.Configuration(maxLag: .seconds(arguments[readMaxLag]))
    }

    /// Runs `body` with reads on the replica of the command line (`size` connections), falling
    /// back to `primary`; the replica's pool is closed after.
    static func withReads<T: Sendable>(_ arguments: ParsedArguments, primary: ConnectionPool, size: Int, logger: Logger,
                                       _ body: (ReadDatabase) async throws -> T) async throws -> T {
        let reads = ReadDatabase(primary: primary, replica: replica(arguments).map { ConnectionPool(configuration: $0, size: size) },
                                 configuration: configuration(arguments), logger: logger,
                                 metrics: ReadReplicaMetrics(registry: MetricsRegistry()))
        do {
            let value = try await body(reads)
            await reads.closeReplica()
            return value
        } catch {
            await reads.closeReplica()
            throw error
        }
    }

    /// The line that tells people where an answer was read, when a replica is configured (without
    /// one, everything is read on the primary and human outputs stay as they were).
    static func sentence(_ source: ReadSource, _ arguments: ParsedArguments) -> String? {
        replica(arguments) == nil ? nil : source.sentence
    }
}
