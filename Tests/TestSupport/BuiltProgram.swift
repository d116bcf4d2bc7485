import Foundation

/// A program built by this package, found next to the test bundle (`.build/debug/`): tests run
/// `engage` and the client probe as real processes.
public enum BuiltProgram {
    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    public static func path(_ name: String) throws -> String {
        let directory = Bundle.main.executableURL?.deletingLastPathComponent()
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let path = directory.appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Missing(description: "\(path) is missing: build the package first (swift build) so that tests can start it")
        }
        return path
    }
}
