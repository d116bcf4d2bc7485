import Foundation
import Testing

@testable import Runtime

private enum Tool {
    static let level = Option("log-level", value: "level", help: "Least severe level: it's logged.", default: LogLevel.info)
    static let config = Option<String?>("config", value: "file", help: "A file.")
    static let data = Option<String?>("data-dir", value: "dir", help: "A directory.")
    static let name = Option<String?>("name", value: "name", help: "Free text.")
    static let dry = Flag("dry-run", help: "Change nothing.")
    static let kind = Argument("kind", help: "What to make.", optional: true, choices: ["report", "export"])
    static let passed = Argument.remaining("argument", help: "Passed on.")

    static let root = Command(name: "tool", abstract: "A tool.", subcommands: [
        Command(name: "make", abstract: "Make: something.", options: [level, config, data, name], flags: [dry], arguments: [kind], run: { _ in }),
        Command(name: "db", abstract: "The database.", subcommands: [
            Command(name: "shell", abstract: "A shell.", options: [config], arguments: [passed], run: { _ in }),
            Command(name: "url", abstract: "The URL.", run: { _ in }),
        ]),
    ])
}

/// The generated scripts, run by the real shells: bash calls the completion function the way
/// readline does (COMP_WORDS split at '=' as bash splits them), zsh with its completion builtins
/// replaced by functions that print what they were given.
@Suite struct ShellCompletionTests {
    /// Runs `shell` with `script`; its standard output.
    static func run(_ shell: String, _ arguments: [String], script: String) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("completion-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("test.sh")
        try script.write(to: file, atomically: true, encoding: .utf8)
        try "".write(to: directory.appendingPathComponent("notes.txt"), atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("nested"), withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: shell)
        process.arguments = arguments + [file.path]
        process.currentDirectoryURL = directory
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    static func bash(_ cases: [[String]]) throws -> [String] {
        let generated = ShellCompletion.script(for: Tool.root, shell: .bash)
        var script = generated + """
            complete -p tool
            t() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _tool; echo "${COMPREPLY[*]}"; }

            """
        for words in cases {
            script += "t " + words.map(ShellCompletion.quoted).joined(separator: " ") + "\n"
        }
        return try run("/bin/bash", ["--norc", "--noprofile"], script: script).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    @Test func bashCompletesSubcommandsOptionsValuesAndArguments() throws {
        let cases: [([String], String)] = [
            (["tool", ""], "make db help"),
            (["tool", "d"], "db"),
            (["tool", "db", ""], "shell url help"),
            (["tool", "help", ""], "make db"),
            (["tool", "help", "db", ""], "shell url"),
            (["tool", "make", "--"], "--log-level --config --data-dir --name --dry-run --help"),
            (["tool", "make", "--log-level", ""], "trace debug info notice warning error"),
            (["tool", "make", "--log-level", "=", "w"], "warning"),
            (["tool", "make", "--log-level", "="], "trace debug info notice warning error"),
            (["tool", "make", "--config", "no"], "notes.txt"),
            (["tool", "make", "--data-dir", ""], "nested"),
            (["tool", "make", "--name", ""], ""),
            // A value is skipped while looking for the command: `--name db` does not enter `db`.
            (["tool", "make", "--name", "db", "--dry-run", ""], "report export --log-level --config --data-dir --name --dry-run --help"),
            (["tool", "make", "e"], "export"),
            (["tool", "db", "shell", "--", "-"], ""),
            (["tool", "db", "shell", "--", "no"], "notes.txt"),
            (["tool", "db", "url", ""], "--help"),
        ]
        let lines = try Self.bash(cases.map(\.0))
        #expect(lines.first == "complete -F _tool tool")
        for (index, (words, expected)) in cases.enumerated() {
            #expect(lines[index + 1] == expected, "\(words)")
        }
    }

    static let zshStubs = """
        compadd() { [[ $1 == -- ]] && shift; print -r -- "compadd: $*" }
        _describe() { shift 3; print -r -- "describe: ${(j:|:)${(P@)1}}" }
        _files() { print -r -- "files $*" }
        _message() { print -r -- "message" }
        compset() { : }
        t() { words=("$@"); CURRENT=${#words}; _tool; print -r -- "--" }

        """

    @Test func zshOffersDescribedSubcommandsAndOptionsAndTheirValues() throws {
        let cases: [([String], String)] = [
            (["tool", ""], "describe: make:Make: something.|db:The database.|help:Show help for a subcommand."),
            (["tool", "help", "db", ""], "describe: shell:A shell.|url:The URL."),
            (["tool", "make", "--"], "describe: --log-level:Least severe level: it's logged.|--config:A file.|--data-dir:A directory."
                + "|--name:Free text.|--dry-run:Change nothing.|--help:Show help information."),
            (["tool", "make", "--log-level", ""], "compadd: trace debug info notice warning error"),
            (["tool", "make", "--log-level=w"], "compadd: trace debug info notice warning error"),
            (["tool", "make", "--config", ""], "files "),
            (["tool", "make", "--data-dir", ""], "files -/"),
            (["tool", "make", "--name", ""], "message"),
            (["tool", "make", "--name", "db", ""], "compadd: report export\ndescribe: --log-level:Least severe level: it's logged.|--config:A file."
                + "|--data-dir:A directory.|--name:Free text.|--dry-run:Change nothing.|--help:Show help information."),
            (["tool", "db", "shell", "--", ""], "files "),
        ]
        var script = ShellCompletion.script(for: Tool.root, shell: .zsh) + Self.zshStubs
        for (words, _) in cases {
            script += "t " + words.map(ShellCompletion.quoted).joined(separator: " ") + "\n"
        }
        let outputs = try Self.run("/usr/bin/zsh", ["-f"], script: script).components(separatedBy: "--\n")
        for (index, (words, expected)) in cases.enumerated() {
            #expect(outputs[index] == expected + "\n", "\(words)")
        }
    }

    @Test func zshRegistersTheFunctionWhenSourcedAndWhenFoundOnFpath() throws {
        let generated = ShellCompletion.script(for: Tool.root, shell: .zsh)
        let sourced = try Self.run("/usr/bin/zsh", ["-f"], script: """
            autoload -U compinit && compinit -u -D
            source <(cat <<'SCRIPT'
            \(generated)
            SCRIPT
            )
            print -r -- "sourced: $_comps[tool]"
            mkdir -p functions && cat >functions/_tool <<'SCRIPT'
            \(generated)
            SCRIPT
            """)
        #expect(sourced == "sourced: _tool\n")
        let autoloaded = try Self.run("/usr/bin/zsh", ["-f"], script: """
            mkdir -p functions && cat >functions/_tool <<'SCRIPT'
            \(generated)
            SCRIPT
            fpath=($PWD/functions $fpath)
            autoload -U compinit && compinit -u -D
            print -r -- "autoloaded: $_comps[tool]"
            """)
        #expect(autoloaded == "autoloaded: _tool\n")
    }

    @Test func enumerationsListTheirChoices() {
        #expect(Tool.level.choices == ["trace", "debug", "info", "notice", "warning", "error"])
        #expect(Tool.config.choices == nil)
        #expect(Option<LogFormat?>("format", help: "Format.").choices == ["logfmt", "json"])
    }
}
