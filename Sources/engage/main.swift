import CProcess
import Foundation
import Runtime

// Parses the command line and hands over to one subcommand; nothing else happens here.

// Lines reach a pipe or a file as they are printed (the demo prints its keys, then serves for
// hours), not when a block fills or the process exits.
CProcess_line_buffer_stdout()

let commands: [Subcommand] = [
    Subcommand(ServeCommand.self),
    Subcommand(DemoCommand.self),
    Subcommand(MigrateCommand.self),
    Subcommand(DatabaseCommand.self),
    Subcommand(KeysCommand.self),
    Subcommand(ReportCommand.self),
    Subcommand(SimulateCommand.self),
    Subcommand(ProjectCommand.self),
    Subcommand(ProjectionsCommand.self),
    Subcommand(ExperimentCommand.self),
    Subcommand(SchedulerCommand.self),
    Subcommand(BenchCommand.self),
]

let root = Command(
    name: "engage",
    abstract: "Engagement analytics and experiments for rich iOS push notifications.",
    subcommands: commands.map(\.definition))

let exitCode: Int32
do {
    switch try root.parse(Array(CommandLine.arguments.dropFirst())) {
    case .help(let text):
        print(text)
        exitCode = 0
    case .run(let arguments):
        let name = arguments.commandPath.dropFirst().first ?? ""
        guard let command = commands.first(where: { $0.definition.name == name }) else {
            throw UsageError(code: .unknownSubcommand, message: "unknown subcommand '\(name)'", usage: root.usage(path: ["engage"]))
        }
        try await command.run(arguments)
        exitCode = 0
    }
} catch let error as UsageError {
    FileHandle.standardError.write(Data((error.description + "\n").utf8))
    exitCode = UsageError.exitCode
} catch {
    FileHandle.standardError.write(Data(("error: \(error)\n").utf8))
    exitCode = 1
}
exit(exitCode)
