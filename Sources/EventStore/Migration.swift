import Digest
import Foundation

/// One numbered file of `sql/migrations`: `NNN_name.sql`.
public struct Migration: Sendable, Equatable {
    public var version: Int
    public var name: String
    public var script: String

    /// SHA-256 of the file's text: an applied migration must never change.
    public var checksum: String { SHA256.hexDigest(script) }

    public var fileName: String {
        let digits = String(version)
        return String(repeating: "0", count: max(0, 3 - digits.count)) + digits + "_" + name + ".sql"
    }

    public init(version: Int, name: String, script: String) {
        self.version = version
        self.name = name
        self.script = script
    }

    /// Reads every `NNN_name.sql` in `directory`, ordered by number; numbers must be unique.
    public static func load(from directory: URL) throws -> [Migration] {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".sql") }
        var migrations: [Migration] = []
        for file in files {
            let stem = file.dropLast(4)
            guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]) else {
                throw MigrationError.badFileName(file)
            }
            let script = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            migrations.append(Migration(version: version, name: String(stem[stem.index(after: underscore)...]), script: script))
        }
        migrations.sort { $0.version < $1.version }
        for (previous, next) in zip(migrations, migrations.dropFirst()) where previous.version == next.version {
            throw MigrationError.duplicateVersion(next.version)
        }
        return migrations
    }
}

public enum MigrationError: Error, Sendable, Equatable, CustomStringConvertible {
    case sqlDirectoryNotFound(searched: [String])
    case badFileName(String)
    case duplicateVersion(Int)
    case changedAfterApplied(file: String, applied: String, current: String)
    case unknownApplied(version: Int, name: String)
    case failed(file: String, reason: String)
    /// Every attempt at a step waited `lockTimeoutMilliseconds` for a lock and gave up; `heldBy`
    /// names the sessions holding table locks since before the last wait.
    case lockWaitGaveUp(file: String, attempts: Int, lockTimeoutMilliseconds: Int64, heldBy: String)

    public var description: String {
        switch self {
        case .sqlDirectoryNotFound(let searched):
            return "cannot find the sql/ directory with migrations (set ENGAGE_SQL_DIR); looked in: \(searched.joined(separator: ", "))"
        case .badFileName(let file):
            return "migration file \(file) is not named NNN_name.sql"
        case .duplicateVersion(let version):
            return "two migration files share the number \(version)"
        case .changedAfterApplied(let file, let applied, let current):
            return "migration \(file) was edited after it was applied (checksum \(applied.prefix(12)) in the database, \(current.prefix(12)) on disk); "
                + "restore it and put the change in a new migration"
        case .unknownApplied(let version, let name):
            return "the database has migration \(version) (\(name)) that is not on disk: this engage is older than the database"
        case .failed(let file, let reason):
            return "migration \(file) failed and was rolled back: \(reason)"
        case .lockWaitGaveUp(let file, let attempts, let milliseconds, let heldBy):
            let gaveUp = BoundedLockWait.GaveUp(step: "migration \(file)", attempts: attempts, lockTimeoutMilliseconds: milliseconds, heldBy: heldBy)
            return "\(gaveUp). End that transaction, or migrate again later"
        }
    }

    init(_ gaveUp: BoundedLockWait.GaveUp) {
        self = .lockWaitGaveUp(file: gaveUp.step, attempts: gaveUp.attempts, lockTimeoutMilliseconds: gaveUp.lockTimeoutMilliseconds,
                               heldBy: gaveUp.heldBy)
    }
}
