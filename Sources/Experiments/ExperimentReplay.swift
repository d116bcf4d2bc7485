import EngageCore
import Postgres

/// Reads one experiment's events in notification order and folds each notification into an
/// `ExperimentObservation` for the tallies.
///
/// The query reads the columns and the three payload fields the analysis uses
/// (`ExperimentEventFacts`); PostgreSQL extracts them from the `jsonb`, so payloads are neither
/// rendered as text nor parsed here, which was most of the replay's cost. The log holds only
/// events validated at ingestion; a row whose fields do not read as such is counted undecodable
/// and skipped, as a payload that failed to decode was before.
struct ExperimentReplay: Sendable {
    var tallies: ExperimentTallies
    /// Rows read, undecodable ones included.
    var events = 0
    /// Events this replay itself read from the log: all of them, or for an incremental look only
    /// the new events it folded (`events` counts those of earlier looks too).
    var eventsRead = 0
    var notifications = 0
    var undecodable = 0
    /// Ranges of notifications read (and merged) to make this replay.
    var ranges = 0
    /// For an incremental look, the `LogRewrite` generation it folded under; nil for a replay,
    /// whose one snapshot is the log's whatever a prune or restore does.
    var logGeneration: Int64?

    init(definition: ExperimentDefinition) {
        tallies = ExperimentTallies(definition: definition)
    }

    /// The replay of notifications `range` of the experiment, in an open transaction.
    static func read(_ definition: ExperimentDefinition, range: NotificationRange = .all, chunkSize: Int,
                     on connection: Connection) throws -> ExperimentReplay {
        var replay = ExperimentReplay(definition: definition)
        try replay.read(definition, range: range, chunkSize: chunkSize, on: connection)
        return replay
    }

    /// Adds the replay of notifications `range` of the experiment, in an open transaction: a lane
    /// of `SplitReplay` reads all its ranges into one replay, which is cheaper than merging a
    /// replay per range (no range overlaps another, so none of its notifications is here yet).
    mutating func read(_ definition: ExperimentDefinition, range: NotificationRange, chunkSize: Int,
                       on connection: Connection) throws {
        try connection.execute(Self.cursor(definition, range: range))
        ranges += 1
        let eventsBefore = events
        let reader = ReplayRowReader(arms: tallies.armIndex)
        var fold = ExperimentObservation.Fold()
        // The current notification's first row, kept (with its chunk) to compare ids in place.
        var current: PostgresRow?
        try connection.repeatUntilEmpty(Self.fetch(chunkSize: chunkSize)) { rows in
            for index in 0..<rows.rowCount {
                let row = rows[index]
                events += 1
                if current.map({ !row.cell(1).hasSameBytes(as: $0.cell(1)) }) ?? true {
                    add(fold)
                    fold = ExperimentObservation.Fold()
                    current = row
                }
                guard let facts = try reader.facts(row) else {
                    undecodable += 1
                    continue
                }
                try fold.apply(facts) { (try row.decode(7), try row.decode(8)) }
            }
        }
        add(fold)
        eventsRead += events - eventsBefore
        try connection.execute("CLOSE experiment_replay")
    }

    /// Declares the cursor `experiment_replay` over the rows of notifications `range`: the columns
    /// `ReplayRowReader` reads, in notification order.
    static func cursor(_ definition: ExperimentDefinition, range: NotificationRange) -> SQL {
        var sql: SQL = """
            DECLARE experiment_replay NO SCROLL CURSOR FOR
            SELECT \(unsafeSQL: columns)
            FROM events
            WHERE app_id = \(definition.appID) AND experiment_id = \(definition.id)
            """
        if let lower = range.lower { sql.append(" AND notification_id >= \(lower)") }
        if let upper = range.upper { sql.append(" AND notification_id < \(upper)") }
        sql.append(" ORDER BY app_id, experiment_id, notification_id")
        return sql
    }

    /// The columns `ReplayRowReader` reads (0...8): the event's columns and the payload fields the
    /// fold uses, extracted by PostgreSQL.
    static let columns = """
        event_id, notification_id, type, occurred_at, experiment_arm,
        CASE type WHEN 'delivered' THEN payload ->> 'processing_ms'
                  WHEN 'displayed' THEN payload ->> 'presentation'
                  WHEN 'action' THEN payload ->> 'action_id' END,
        type = 'action' AND payload ->> 'text_input_length' IS NOT NULL,
        category, device_id
        """

    static func fetch(chunkSize: Int) -> SQL {
        SQL(unsafeSQL: "FETCH FORWARD \(chunkSize) FROM experiment_replay")
    }

    /// About `count` ranges of the experiment's notifications with similar numbers of events,
    /// from a sample of the log's pages: `[.all]` when the sample is too small to split on (a
    /// small experiment, which one connection reads quickly anyway). Any boundaries give the same
    /// replay; good ones only balance the work.
    static func ranges(_ definition: ExperimentDefinition, count: Int, on connection: Connection) throws -> [NotificationRange] {
        guard count > 1 else { return [.all] }
        let pages = try connection.query("""
            SELECT coalesce(sum(pg_relation_size(inhrelid)), 0) / current_setting('block_size')::int8
            FROM pg_inherits WHERE inhparent = 'events'::regclass
            """)[0].decode(0, as: Int.self)
        // About `sampledPages` pages, however large the log.
        let percent = min(100, 100 * Double(sampledPages) / Double(max(pages, 1)))
        let sample = try connection.query("""
            SELECT notification_id FROM events TABLESAMPLE SYSTEM (\(percent)) REPEATABLE (0)
            WHERE app_id = \(definition.appID) AND experiment_id = \(definition.id)
            ORDER BY notification_id
            """)
        guard sample.rowCount >= minimumSamplesPerRange * count else { return [.all] }
        var boundaries: [String] = []
        for k in 1..<count {
            let boundary: String = try sample[k * sample.rowCount / count].decode(0)
            if boundaries.last != boundary { boundaries.append(boundary) }
        }
        let lowers: [String?] = [nil] + boundaries
        let uppers: [String?] = boundaries + [nil]
        return zip(lowers, uppers).map { NotificationRange(lower: $0, upper: $1) }
    }

    static let sampledPages = 1_000
    static let minimumSamplesPerRange = 100

    mutating func add(_ fold: ExperimentObservation.Fold) {
        guard let observation = fold.observation else { return }
        notifications += 1
        tallies.add(observation)
    }

    /// Adds another range's replay of the same experiment.
    mutating func merge(_ other: ExperimentReplay) {
        tallies.merge(other.tallies)
        events += other.events
        eventsRead += other.eventsRead
        notifications += other.notifications
        undecodable += other.undecodable
        ranges += other.ranges
    }
}

/// Notification ids from `lower` (included) to `upper` (excluded); nil: unbounded.
struct NotificationRange: Sendable, Equatable {
    var lower: String?
    var upper: String?

    static let all = NotificationRange(lower: nil, upper: nil)
}

/// Turns a replay row (`ExperimentReplay.columns`) into `ExperimentEventFacts`, matching texts as
/// bytes.
struct ReplayRowReader {
    private let armNames: [[UInt8]]
    private let typeCases = EventType.allCases
    private let types = EventType.allCases.map { Array($0.rawValue.utf8) }
    private let presentationCases = Presentation.allCases
    private let presentations = Presentation.allCases.map { Array($0.rawValue.utf8) }
    private let actions = [ActionDetails.openIdentifier, ActionDetails.dismissIdentifier].map { Array($0.utf8) }

    init(arms: ExperimentArmIndex) {
        armNames = arms.names.map { Array($0.utf8) }
    }

    /// Nil when a field the analysis needs is missing or not what validation would have allowed.
    func facts(_ row: PostgresRow) throws -> ExperimentEventFacts? {
        guard let type = row.cell(2).position(in: types).map({ typeCases[$0] }) else { return nil }
        let detail = row.cell(5)
        let kind: ExperimentEventFacts.Kind
        switch type {
        case .sent:
            kind = .sent
        case .delivered:
            guard let processing = detail.decimalInteger(upTo: 1 << 53) else { return nil }
            kind = .delivered(processingMS: Int(processing))
        case .displayed:
            guard let presentation = detail.position(in: presentations).map({ presentationCases[$0] }) else { return nil }
            kind = .displayed(presentation)
        case .expanded:
            kind = .expanded
        case .action:
            guard !detail.isNull else { return nil }
            let action: ExperimentEventFacts.ActionKind = switch detail.position(in: actions) {
            case 0: .open
            case 1: .dismiss
            default: .custom
            }
            kind = .action(action, replied: try row.cell(6).bool())
        }
        let (high, low) = try row.cell(0).uuidHalves()
        // Every row has this experiment's id (the query filters on it): only the arm can differ.
        let armCell = row.cell(4)
        let arm: ObservedArm? = armCell.isNull ? nil : armCell.position(in: armNames).map(ObservedArm.arm) ?? .unknownArm
        return ExperimentEventFacts(eventID: EventID(high: high, low: low),
                                    occurredAt: Timestamp(microsecondsSinceEpoch: try row.cell(3).unixMicroseconds()),
                                    arm: arm, kind: kind)
    }
}
