import Foundation

/// Finds the repository's `sql/` directory (migrations and views) at run time:
/// `$ENGAGE_SQL_DIR`, `share/engage/sql` beside the executable's prefix, a `sql/` in a parent of
/// the executable (a SwiftPM build inside the checkout), or the checkout this file was compiled in.
public enum SQLDirectory {
    public static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> URL {
        var candidates: [URL] = []
        if let explicit = environment["ENGAGE_SQL_DIR"] { candidates.append(URL(fileURLWithPath: explicit)) }
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        candidates.append(directory.appendingPathComponent("../share/engage/sql").standardizedFileURL)
        for _ in 0..<6 {
            candidates.append(directory.appendingPathComponent("sql"))
            directory = directory.deletingLastPathComponent()
        }
        // Sources/EventStore/SQLDirectory.swift -> repository root.
        let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(checkout.appendingPathComponent("sql"))
        for candidate in candidates {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("migrations").path, isDirectory: &isDirectory),
               isDirectory.boolValue {
                return candidate
            }
        }
        throw MigrationError.sqlDirectoryNotFound(searched: candidates.map(\.path))
    }
}
