import Runtime

/// `engage completion bash|zsh`: the shell's completion script, generated from the command tree.
enum CompletionCommand {
    static let shell = Argument("shell", help: "bash or zsh.", choices: ShellCompletion.Shell.allCases.map(\.rawValue))

    static let definition = Command(
        name: "completion",
        abstract: "Print the bash or zsh completion script for engage's commands and options (docs: README, Commands).",
        arguments: [shell],
        run: run)

    static func run(_ arguments: ParsedArguments) async throws {
        let name = try arguments.required(shell)
        guard let shell = ShellCompletion.Shell(rawValue: name) else {
            throw arguments.usageError(.invalidValue, "unknown shell '\(name)' for argument '<shell>': expected bash or zsh")
        }
        print(ShellCompletion.script(for: EngageCommand.root, shell: shell), terminator: "")
    }
}
