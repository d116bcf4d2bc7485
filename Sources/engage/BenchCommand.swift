import Postgres
import Runtime

/// `engage bench ...`: measurements of engage's hot paths; each benchmark lives in a file of its own.
enum BenchCommand {
    static let definition = Command(
        name: "bench",
        abstract: "Measure engage's hot paths on this machine.",
        subcommands: [
            AppendBenchmark.definition,
            IngestLoadBenchmark.definition,
            ProjectorBenchmark.definition,
            PipelineBenchmark.definition,
            ReplayBenchmark.definition,
            DecodeBenchmark.definition,
            ReportBenchmark.definition,
            ExperimentBenchmark.definition,
            CalibrationBenchmark.definition,
            ReportCoverageBenchmark.definition,
            CupedBenchmark.definition,
        ])

    /// A database of a benchmark's own on the server of `setup`, created when missing and
    /// migrated: benchmarks truncate and refill their tables.
    static func database(named name: String, beside setup: DatabaseSetup) throws -> PostgresConfiguration {
        let connection = try Connection(configuration: setup.configuration)
        defer { connection.close() }
        if try connection.query("SELECT 1 FROM pg_database WHERE datname = \(name)").isEmpty {
            try connection.execute("CREATE DATABASE \(identifier: name)")
        }
        let configuration = setup.configuration.withDatabase(name)
        try DatabaseSetup(configuration: configuration, embedded: nil, startedHere: false, logger: setup.logger).migrate()
        return configuration
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    struct BenchError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
