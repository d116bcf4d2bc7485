/// Where an answer was read, and so how stale it may be.
public struct ReadSource: Sendable, Equatable {
    public enum Database: String, Sendable {
        case primary, replica
    }

    /// Why the primary was read although a replica is configured.
    public enum Fallback: String, Sendable, CaseIterable {
        /// The replica could not be reached (or was given up on a moment ago).
        case replicaUnreachable = "replica_unreachable"
        /// The replica was further behind than the configured bound, or could not tell.
        case replicaLagging = "replica_lagging"
        /// The replica cancelled the read to go on replaying (a conflict with recovery).
        case replicaConflict = "replica_conflict"
    }

    public var database: Database
    /// How far behind the primary what was read may be: the replica's replay lag when read,
    /// zero on the primary.
    public var lag: Duration
    public var fallback: Fallback?

    public init(database: Database, lag: Duration, fallback: Fallback? = nil) {
        self.database = database
        self.lag = lag
        self.fallback = fallback
    }

    /// Read on the primary, no replica configured.
    public static let primary = ReadSource(database: .primary, lag: .zero)

    /// The lag in seconds, to the millisecond: `0.042`.
    public var lagSeconds: String {
        let milliseconds = lag / .milliseconds(1)
        let whole = Int64(milliseconds.rounded(.down))
        let fraction = String(whole % 1000)
        return "\(whole / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    /// The `read_from` member answers read for clients carry:
    /// `"read_from":{"database":"replica","lag_seconds":0.042,"fallback":null}`.
    public var jsonMember: String {
        let fallback = self.fallback.map { "\"\($0.rawValue)\"" } ?? "null"
        return "\"read_from\":{\"database\":\"\(database.rawValue)\",\"lag_seconds\":\(lagSeconds),\"fallback\":\(fallback)}"
    }

    /// The JSON text of an object with `read_from` added as its last member (the object's own
    /// members unchanged).
    public func addingMember(to object: [UInt8]) -> [UInt8] {
        var end = object.endIndex
        while end > object.startIndex, [0x20, 0x0A, 0x0D, 0x09].contains(object[end - 1]) { end -= 1 }
        guard end > object.startIndex, object[end - 1] == UInt8(ascii: "}") else { return object }
        let closing = end - 1
        var before = closing
        while before > object.startIndex, [0x20, 0x0A, 0x0D, 0x09].contains(object[before - 1]) { before -= 1 }
        let separator = object[before - 1] == UInt8(ascii: "{") ? "" : ","
        return Array(object[..<closing]) + Array((separator + jsonMember).utf8) + Array(object[closing...])
    }

    /// One sentence for people, under a table or in a page.
    public var sentence: String {
        switch (database, fallback) {
        case (.replica, _): "Read from the read replica, \(lagSeconds) s behind the primary when read."
        case (.primary, .replicaUnreachable?): "Read from the primary: the read replica could not be reached."
        case (.primary, .replicaLagging?): "Read from the primary: the read replica was too far behind."
        case (.primary, .replicaConflict?): "Read from the primary: the read replica cancelled the read to go on replaying."
        case (.primary, nil): "Read from the primary."
        }
    }
}
