import Runtime

/// engage's command tree: what `main.swift` parses and what shell completion is generated from.
enum EngageCommand {
    static let root = Command(
        name: "engage",
        abstract: "Engagement analytics and experiments for rich iOS push notifications.",
        subcommands: [
            ServeCommand.definition,
            DemoCommand.definition,
            MigrateCommand.definition,
            DatabaseCommand.definition,
            KeysCommand.definition,
            ReportCommand.definition,
            SimulateCommand.definition,
            ProjectCommand.definition,
            ProjectionsCommand.definition,
            LogCommand.definition,
            ExperimentCommand.definition,
            SchedulerCommand.definition,
            BenchCommand.definition,
            CompletionCommand.definition,
        ])
}
