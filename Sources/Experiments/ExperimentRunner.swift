import EngageCore
import EventStore
import Postgres

/// One analysis of one experiment: replays the experiment's events from the log, folds them per
/// notification, tallies the notifications by assigned arm and runs `ExperimentAnalysis`.
///
/// The events are read through a cursor in one REPEATABLE READ transaction, `chunkSize` rows at
/// a time, ordered by notification so that only one notification's state is in memory besides
/// the tallies; the replay sees one consistent snapshot of the log.
public struct ExperimentRunner: Sendable {
    public let pool: ConnectionPool
    public var chunkSize: Int

    public init(pool: ConnectionPool, chunkSize: Int = 5_000) {
        precondition(chunkSize > 0, "chunk size must be positive")
        self.pool = pool
        self.chunkSize = chunkSize
    }

    /// What a replay found besides the analysis.
    public struct Outcome: Sendable {
        public var result: ExperimentRunResult
        public var tallies: ExperimentTallies
        /// Events replayed, undecodable ones included.
        public var events: Int
        public var notifications: Int
        /// Stored events whose payload did not decode (never expected; skipped).
        public var undecodable: Int
    }

    /// Replays and analyses. `previousRuns` is the number of completed analyses before this one
    /// (it numbers the look); `now` is the analysis time.
    public func analyse(_ definition: ExperimentDefinition, previousRuns: Int, now: Timestamp) async throws -> Outcome {
        let chunkSize = chunkSize
        let replay = try await pool.withTransaction(isolation: "REPEATABLE READ") { connection in
            try Self.replay(definition, chunkSize: chunkSize, on: connection)
        }
        var result = ExperimentAnalysis.run(definition: definition, tallies: replay.tallies, now: now)
        // The analysis needs no memory of earlier runs: their number only names the look.
        result.look = previousRuns + 1
        return Outcome(result: result, tallies: replay.tallies, events: replay.events,
                       notifications: replay.notifications, undecodable: replay.undecodable)
    }

    struct Replay: Sendable {
        var tallies: ExperimentTallies
        var events = 0
        var notifications = 0
        var undecodable = 0
    }

    /// Inside an open transaction.
    static func replay(_ definition: ExperimentDefinition, chunkSize: Int, on connection: Connection) throws -> Replay {
        try connection.execute("""
            DECLARE experiment_replay NO SCROLL CURSOR FOR
            SELECT event_id, notification_id, type, category, device_id, occurred_at, payload
            FROM events
            WHERE app_id = \(definition.appID) AND experiment_id = \(definition.id)
            ORDER BY app_id, notification_id
            """)
        var replay = Replay(tallies: ExperimentTallies(definition: definition))
        var current: String?
        var state = NotificationState()
        let fetch = SQL(unsafeSQL: "FETCH FORWARD \(chunkSize) FROM experiment_replay")
        while true {
            let rows = try connection.query(fetch)
            if rows.isEmpty { break }
            for row in rows.rows {
                replay.events += 1
                let notificationID: String = try row.decode(1)
                if notificationID != current {
                    if current != nil { replay.add(state) }
                    current = notificationID
                    state = NotificationState()
                }
                guard let eventID = EventID(bytes: try row.cell(0).uuidBytes()),
                      let type = EventType(rawValue: try row.decode(2)),
                      let event = try? Event(eventID: eventID, type: type, notificationID: notificationID,
                                             deviceID: try row.decode(4), category: try row.decode(3),
                                             occurredAt: Timestamp(microsecondsSinceEpoch: try row.cell(5).unixMicroseconds()),
                                             payloadJSON: try row.cell(6).utf8Bytes()) else {
                    replay.undecodable += 1
                    continue
                }
                state.apply(event)
            }
        }
        if current != nil { replay.add(state) }
        try connection.execute("CLOSE experiment_replay")
        return replay
    }
}

extension ExperimentRunner.Replay {
    mutating func add(_ state: NotificationState) {
        guard !state.isEmpty else { return }
        notifications += 1
        tallies.add(state)
    }
}
