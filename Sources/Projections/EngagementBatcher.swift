import EngageCore
import EventStore
import Postgres

/// Reads the log after a checkpoint in batches and folds each batch into a set of read-model
/// tables, in one transaction with the checkpoint. Keeps the states it wrote in memory, which is
/// safe because it checks, under a row lock, that nobody else moved the checkpoint.
struct EngagementBatcher: Sendable {
    let tables: ReadModelTables
    let checkpointName: String
    let batchSize: Int
    let cacheLimit: Int
    private(set) var position: LogPosition
    /// The states written lately and which notifications have one (nil until the table was
    /// checked for rows).
    private(set) var stateCache: NotificationStateCache?
    /// How many stored keys a batch reads into the state cache's filter while it has not seen
    /// them all (a batcher that starts on a table with states).
    let scanChunk: Int
    /// The device rows and telemetry histograms written lately (nil until their tables were
    /// checked for rows).
    private var caches: EngagementStore.Caches?
    /// The states table's oid when the caches were filled: a rebuild swaps in new tables, at the
    /// projector's own position when it was caught up, so the checkpoint alone cannot tell.
    private var model: Int64?

    /// Someone else moved the checkpoint (another projector), or a rebuild swapped the model in.
    struct Fenced: Error {}

    init(tables: ReadModelTables, checkpointName: String, batchSize: Int, cacheLimit: Int = 300_000,
         scanChunk: Int = 50_000, position: LogPosition) {
        self.tables = tables
        self.checkpointName = checkpointName
        self.batchSize = batchSize
        self.cacheLimit = cacheLimit
        self.scanChunk = scanChunk
        self.position = position
    }

    /// Processes one batch in its own transaction; returns how many events it folded (0: caught up).
    mutating func processBatch(on connection: Connection, failpoints: Failpoints = .none) throws -> Int {
        try process(prefetched: nil, on: connection, failpoints: failpoints)
    }

    /// Processes one batch in its own transaction: `prefetched`, the events after `position` read
    /// and folded per notification beforehand, on another connection and task (any read below the
    /// visibility horizon stays the log's next events, and the fence proves the checkpoint is
    /// still `position`) of the same server, after the checkpoint (else they are read again here:
    /// `FoldedEvents.readAhead`), or, when nil, the events read here. Returns how many events it folded (0: caught up).
    mutating func process(prefetched: FoldedEvents?, on connection: Connection, failpoints: Failpoints = .none) throws -> Int {
        let batchSize = self.batchSize
        let (count, newPosition, states, written) = try connection.transaction { connection in
            let checkpoint = try EngagementStore.beginBatch(checkpointName, waitsForFlush: false, on: connection)
            guard checkpoint == position else { throw Fenced() }
            // After the lock: a swap commits with the checkpoint's update, which the lock waited for.
            let model = try EngagementStore.tableIdentity(tables.states, on: connection)
            guard self.model == nil || self.model == model else { throw Fenced() }
            self.model = model
            let readHere = { try FoldedEvents(EventStore.readFoldable(after: checkpoint, limit: batchSize, on: connection)) }
            // A read ahead from another position (the batch before it was read again here, and
            // ended elsewhere) would skip or repeat events.
            let events = try prefetched.map { prefetched in
                guard let origin = prefetched.readAhead, origin.after == checkpoint,
                      origin.server == (try ServerIdentity.read(on: connection)) else { return try readHere() }
                return prefetched
            } ?? readHere()
            guard let last = events.last else { return (0, checkpoint, [NotificationKey: NotificationState](), EngagementStore.Written()) }
            try failpoints.hit("projector.after-read")
            let changes = try fold(events, on: connection)
            try failpoints.hit("projector.after-fold")
            if caches == nil {
                caches = (DeviceRowCache(limit: cacheLimit, isComplete: try EngagementStore.isEmpty(tables.devices, on: connection)),
                          TelemetryHistogramCache(limit: cacheLimit, isComplete: try EngagementStore.isEmpty(tables.telemetry, on: connection)))
            }
            let written = try EngagementStore.apply(changes, tables: tables, caches: caches, on: connection)
            try failpoints.hit("projector.after-apply")
            try EngagementStore.moveCheckpoint(checkpointName, to: last, events: events.eventCount, on: connection)
            try failpoints.hit("projector.before-commit")
            return (events.eventCount, last, changes.states, written)
        }
        try failpoints.hit("projector.after-commit")
        position = newPosition
        caches?.devices.record(written.devices)
        caches?.histograms.record(written.histograms)
        stateCache?.record(states)
        return count
    }

    /// Re-reads the checkpoint and forgets cached states (after being fenced or reconnecting).
    mutating func resynchronize(on connection: Connection) throws {
        position = try EngagementStore.checkpoint(checkpointName, on: connection)
        stateCache = nil
        caches = nil
        model = nil
    }

    private mutating func fold(_ events: FoldedEvents, on connection: Connection) throws -> EngagementChanges {
        // Taken out while in use, so that changing it never copies it; a batch that fails leaves
        // none, and the next one starts a new cache.
        var cache = try stateCache.take() ?? NotificationStateCache(limit: cacheLimit, table: try statesTable(on: connection))
        if let scan = cache.pendingScan {
            let keys = try EngagementStore.storedKeys(after: scan.after, limit: scanChunk, tables: tables, on: connection)
            cache.recordScanned(keys, isLast: keys.count < scanChunk)
        }
        let known = try cache.storedStates(of: events.states.keys) { missing in
            try EngagementStore.loadStates(missing, tables: tables, on: connection)
        }
        stateCache = cache
        return EngagementChanges.compute(events, known: known)
    }

    /// What a new state cache needs to know of the states table: empty, or about how many rows.
    private func statesTable(on connection: Connection) throws -> NotificationStateCache.Table {
        if try EngagementStore.statesAreEmpty(tables: tables, on: connection) { return .empty }
        return .stored(estimatedStates: try EngagementStore.estimatedStates(tables: tables, on: connection))
    }
}
