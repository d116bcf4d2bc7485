import Runtime

/// `engage migrate`: applies sql/migrations and sql/views.
enum MigrateCommand {
    static let definition = Command(
        name: "migrate",
        abstract: "Apply pending database migrations and refresh views.",
        options: CommonOptions.databaseAndLogging,
        run: run)

    static func run(_ arguments: ParsedArguments) async throws {
        let logger = CommonOptions.logger(arguments)
        let setup = try DatabaseSetup.open(arguments, logger: logger, migrate: false)
        defer { setup.close() }
        let report = try setup.migrate()
        print(report.applied.isEmpty
              ? "database is current (\(report.alreadyApplied) migrations applied earlier)"
              : "applied \(report.applied.count) migration(s): \(report.applied.joined(separator: ", "))")
    }
}
