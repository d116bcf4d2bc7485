import CProcess
import Foundation
import Postgres
import Runtime

// Parses the command line and hands over to one subcommand; nothing else happens here.

// Lines reach a pipe or a file as they are printed (the demo prints its keys, then serves for
// hours), not when a block fills or the process exits.
CProcess_line_buffer_stdout()

/// No connection to PostgreSQL could be made: nothing was done and nothing refused, so a script
/// can try again later, where exit 1 means a refusal or an error (a connection that broke during
/// a change among them: whether the change was made is unknown). EX_UNAVAILABLE of sysexits.h.
let databaseUnreachableExitStatus: Int32 = 69

/// Writes a message to standard error with its control characters made visible (`TerminalText`).
func printError(_ message: String) {
    FileHandle.standardError.write(Data((TerminalText.visible(message) + "\n").utf8))
}

let exitCode: Int32
do {
    switch try EngageCommand.root.parse(Array(CommandLine.arguments.dropFirst())) {
    case .help(let text):
        print(text)
    case .run(let arguments):
        try await arguments.run()
    }
    exitCode = 0
} catch let error as UsageError {
    printError(error.description)
    exitCode = UsageError.exitCode
} catch let stopped as StoppedDuringStartUp {
    printError("engage: \(stopped)")
    exitCode = stopped.exitStatus
} catch let error as ExperimentCommandError {
    printError("error: \(error)")
    exitCode = error.exitStatus
} catch let error as PostgresError where error.failedToConnect {
    // The description is safe to print: libpq's message, and the connection string with its password hidden.
    printError("error: the database could not be reached: \(error)")
    exitCode = databaseUnreachableExitStatus
} catch {
    printError("error: \(error)")
    exitCode = 1
}
exit(exitCode)
