import EngageCore
import Postgres

/// Feeds a `StrategyReplay` with one app's events from the log.
///
/// The events are read through a cursor in one REPEATABLE READ transaction, `chunkSize` rows at a
/// time, ordered by device and time as the replay needs (PostgreSQL sorts them: no index serves
/// that order, and the write path keeps its indexes few). Every category is read, since each
/// delivery informs its device's network estimate; events from before the counted window are
/// read as far back as the replay's warm-up.
public struct StrategyReplayReader: Sendable {
    public let pool: ConnectionPool
    public var chunkSize: Int

    public init(pool: ConnectionPool, chunkSize: Int = 10_000) {
        precondition(chunkSize > 0, "chunk size must be positive")
        self.pool = pool
        self.chunkSize = chunkSize
    }

    public struct Outcome: Sendable {
        public var result: StrategyReplayResult
        /// Rows read, undecodable ones included.
        public var rows: Int
        /// Stored events whose payload did not decode (never expected; skipped).
        public var undecodable: Int
    }

    /// Replays `app`'s events through `replay` and returns what it found.
    public func run(app: String, replay: StrategyReplay) async throws -> Outcome {
        let chunkSize = chunkSize
        return try await pool.withTransaction(isolation: "REPEATABLE READ") { connection in
            var replay = replay
            let (rows, undecodable) = try Self.feed(app: app, into: &replay, chunkSize: chunkSize, on: connection)
            // Arms without a counted delivery still share the propensities (`addDesignArm`).
            for id in replay.experimentIDs {
                if let record = try ExperimentStore.get(id, app: app, on: connection) { replay.addDesign(of: record.definition) }
            }
            return Outcome(result: replay.finish(), rows: rows, undecodable: undecodable)
        }
    }

    /// The first `occurred_at` read: the counted window's start less the warm-up, or everything.
    static func readFrom(_ settings: StrategyReplaySettings) -> Timestamp {
        // No event is older than 1970: ingestion accepts only recent `occurred_at` values.
        guard let countFrom = settings.countFrom else { return Timestamp(microsecondsSinceEpoch: 0) }
        return countFrom.adding(microseconds: -settings.warmUpMicroseconds)
    }

    /// Inside an open transaction.
    static func feed(app: String, into replay: inout StrategyReplay, chunkSize: Int,
                     on connection: Connection) throws -> (rows: Int, undecodable: Int) {
        try connection.execute("""
            DECLARE strategy_replay NO SCROLL CURSOR FOR
            SELECT event_id, notification_id, type, category, device_id, occurred_at, payload
            FROM events
            WHERE app_id = \(app) AND occurred_at >= \(readFrom(replay.settings).postgres)
              AND NOT starts_with(type, \(ExperimentLogEntry.typePrefix))
            ORDER BY device_id, occurred_at, event_id
            """)
        var rows = 0
        var undecodable = 0
        let fetch = SQL(unsafeSQL: "FETCH FORWARD \(chunkSize) FROM strategy_replay")
        while true {
            let chunk = try connection.query(fetch)
            if chunk.isEmpty { break }
            for row in chunk.rows {
                rows += 1
                guard let eventID = EventID(bytes: try row.cell(0).uuidBytes()),
                      let type = EventType(rawValue: try row.decode(2)),
                      let event = try? Event(eventID: eventID, type: type, notificationID: try row.decode(1),
                                             deviceID: try row.decode(4), category: try row.decode(3),
                                             occurredAt: Timestamp(microsecondsSinceEpoch: try row.cell(5).unixMicroseconds()),
                                             payloadJSON: try row.cell(6).utf8Bytes()) else {
                    undecodable += 1
                    continue
                }
                replay.feed(event)
            }
        }
        try connection.execute("CLOSE strategy_replay")
        return (rows, undecodable)
    }
}
