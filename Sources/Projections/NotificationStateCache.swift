import EngageCore

/// The stored states the batcher needs without asking the table: the states its committed batches
/// wrote lately, and which notifications may have a stored state at all.
///
/// Safe for the same reason as the device rows' cache (`DeviceRowCache`): the batcher records a
/// batch only after it committed, and each batch proves under the checkpoint's row lock that
/// nobody else wrote the read model in between (a fenced batcher forgets everything).
struct NotificationStateCache: Sendable {
    let limit: Int
    private var states: [NotificationKey: NotificationState] = [:]
    /// Every notification with a stored state, or some more (`NotificationKeyFilter`): once
    /// `pendingScan` is nil, one it rules out is new. Nil when not kept (the table had more
    /// states than it holds, or it filled up): then every notification the cache does not hold
    /// is looked up.
    private var stored: NotificationKeyFilter?
    /// The stored states the filter has not taken yet, when the cache started on a table with
    /// states: read in key order, a chunk per batch (`recordScanned`), after this key (nil: from
    /// the first). Nil once the filter holds them all.
    private(set) var pendingScan: PendingScan?

    struct PendingScan: Sendable {
        var after: NotificationKey?
    }

    /// What the cache knows of the states table when it starts.
    enum Table: Sendable {
        /// No rows: the cache knows every stored state from the start.
        case empty
        /// About `estimatedStates` rows (negative: unknown) the cache has not seen.
        case stored(estimatedStates: Int)
    }

    /// A table that holds more than half the filter's capacity is not scanned: the filter would
    /// fill up soon after.
    init(limit: Int, table: Table, filter: NotificationKeyFilter = NotificationKeyFilter()) {
        self.limit = limit
        switch table {
        case .empty:
            stored = filter
        case .stored(let estimate) where estimate <= filter.capacity / 2:
            stored = filter
            pendingScan = PendingScan(after: nil)
        case .stored:
            break
        }
        states.reserveCapacity(min(limit, 400_000))
    }

    /// True while a notification it neither holds nor may have stored is known to be new.
    var knowsEveryStoredNotification: Bool { stored != nil && pendingScan == nil }

    /// The stored states of `keys`: from the cache where it holds them, from `read` (given the
    /// others that may have one) for the rest; a key with no stored state has no entry.
    func storedStates(of keys: some Collection<NotificationKey>,
                      read: (_ missing: [NotificationKey]) throws -> [NotificationKey: NotificationState])
        rethrows -> [NotificationKey: NotificationState] {
        let filter = knowsEveryStoredNotification ? stored : nil
        var known: [NotificationKey: NotificationState] = [:]
        known.reserveCapacity(keys.count)
        var missing: [NotificationKey] = []
        for key in keys {
            if let state = states[key] {
                known[key] = state
            } else if filter?.mightContain(key) ?? true {
                missing.append(key)
            }
        }
        if !missing.isEmpty { known.merge(try read(missing)) { cached, _ in cached } }
        return known
    }

    /// Records the states a committed batch wrote. The states are forgotten, and read again when
    /// needed, when they would outgrow `limit`; the filter keeps every key until it is full.
    mutating func record(_ written: [NotificationKey: NotificationState]) {
        if states.count + written.count > limit { states.removeAll(keepingCapacity: true) }
        states.merge(written) { _, new in new }
        insert(written.keys)
    }

    /// Records the next chunk of the table's keys, in key order, after `pendingScan`'s key;
    /// `isLast`: the table has no more.
    mutating func recordScanned(_ keys: [NotificationKey], isLast: Bool) {
        guard pendingScan != nil else { return }
        insert(keys)
        if stored == nil { return }
        pendingScan = isLast ? nil : PendingScan(after: keys.last ?? pendingScan?.after)
    }

    private mutating func insert(_ keys: some Sequence<NotificationKey>) {
        guard stored != nil else { return }
        for key in keys { stored?.insert(key) }
        if stored?.isFull == true {
            stored = nil
            pendingScan = nil
        }
    }
}
