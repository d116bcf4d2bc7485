import EngageCore
import Postgres

/// A batch encoded for appending, ready before any connection is taken: encoding runs on the
/// caller's task, in parallel with whatever the database is doing for other batches.
public struct PreparedBatch: Sendable {
    /// Each item's fate within its own batch: the index of its row, or nil for a repeat of an
    /// earlier item's id.
    let rowOfItem: [Int?]
    /// Event ids of the rows, in row order (unique within the batch).
    let ids: [EventID]
    /// The app of each row, in row order.
    let appIDs: [String]
    /// Each item's app and the row of its event id (its own, or the earlier item's it repeats).
    let appIDOfItem: [String]
    let idRowOfItem: [Int]
    /// Binary COPY tuples of the rows for `events`, without header or trailer.
    let rows: [UInt8]
    /// Where each row's tuple lies in `rows`.
    let rowRanges: [Range<Int>]

    public var itemCount: Int { rowOfItem.count }
    public var rowCount: Int { ids.count }
    /// Each item's event id; nil for an item repeating an earlier item's id in the batch.
    public var itemEventIDs: [EventID?] { rowOfItem.map { $0.map { ids[$0] } } }

    public init(_ items: [AppendItem]) {
        var rowOfID: [EventID: Int] = [:]
        rowOfID.reserveCapacity(items.count)
        var rowOfItem: [Int?] = []
        rowOfItem.reserveCapacity(items.count)
        var ids: [EventID] = []
        ids.reserveCapacity(items.count)
        var appIDs: [String] = []
        appIDs.reserveCapacity(items.count)
        var idRowOfItem: [Int] = []
        idRowOfItem.reserveCapacity(items.count)
        var encoder = BinaryCopyEncoder.tuplesOnly(reservingCapacity: items.count * 360)
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(items.count)
        for item in items {
            let id = item.event.eventID
            if let row = rowOfID[id] {
                rowOfItem.append(nil)
                idRowOfItem.append(row)
                continue
            }
            idRowOfItem.append(ids.count)
            rowOfID[id] = ids.count
            rowOfItem.append(ids.count)
            ids.append(id)
            appIDs.append(item.appID)
            let start = encoder.bytes.count
            Self.encode(item, into: &encoder)
            ranges.append(start..<encoder.bytes.count)
        }
        self.rowOfItem = rowOfItem
        self.ids = ids
        self.appIDs = appIDs
        self.appIDOfItem = items.map(\.appID)
        self.idRowOfItem = idRowOfItem
        self.rows = encoder.bytes
        self.rowRanges = ranges
    }

    /// A batch of some of this one's rows (in the order given) and of every item carrying their
    /// ids, repeats included (so that `append` answers each item as it would in this batch: a
    /// repeat's fate depends on which app holds the id), with a copy of their encoded tuples
    /// (nothing is encoded again): the parts `EventStore.appendIsolatingRefusedRows` tries.
    /// Also returns, for each item of the part, its index in this batch.
    func keepingRows(_ selected: [Int]) -> (part: PreparedBatch, items: [Int]) {
        var partRow = [Int?](repeating: nil, count: rowCount)
        for (position, row) in selected.enumerated() { partRow[row] = position }
        var tuples: [UInt8] = []
        tuples.reserveCapacity(selected.reduce(0) { $0 + rowRanges[$1].count })
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(selected.count)
        for row in selected {
            let start = tuples.count
            tuples += rows[rowRanges[row]]
            ranges.append(start..<tuples.count)
        }
        var items: [Int] = [], rowOfPartItem: [Int?] = [], idRowOfPartItem: [Int] = []
        for item in rowOfItem.indices {
            guard let row = partRow[idRowOfItem[item]] else { continue }
            items.append(item)
            rowOfPartItem.append(rowOfItem[item] == nil ? nil : row)
            idRowOfPartItem.append(row)
        }
        let part = PreparedBatch(rowOfItem: rowOfPartItem, ids: selected.map { ids[$0] }, appIDs: selected.map { appIDs[$0] },
                                 appIDOfItem: items.map { appIDOfItem[$0] }, idRowOfItem: idRowOfPartItem,
                                 rows: tuples, rowRanges: ranges)
        return (part, items)
    }

    private init(rowOfItem: [Int?], ids: [EventID], appIDs: [String], appIDOfItem: [String], idRowOfItem: [Int],
                 rows: [UInt8], rowRanges: [Range<Int>]) {
        self.rowOfItem = rowOfItem
        self.ids = ids
        self.appIDs = appIDs
        self.appIDOfItem = appIDOfItem
        self.idRowOfItem = idRowOfItem
        self.rows = rows
        self.rowRanges = rowRanges
    }

    /// The items carrying the id of `row` (its own, and any repeating it).
    func items(ofRow row: Int) -> [Int] {
        idRowOfItem.indices.filter { idRowOfItem[$0] == row }
    }

    /// Each item's outcome: stored when its row is (`stored`); otherwise a duplicate, unless the
    /// app holding its id (`holder`; nil when unknown, as for ids stored before migration 018)
    /// is another than the item's.
    func outcomes(storedRow stored: (Int) -> Bool, holder: (_ row: Int) -> String?) -> AppendResult {
        AppendResult(outcomes: rowOfItem.indices.map { item in
            if let row = rowOfItem[item], stored(row) { return .stored }
            guard let holder = holder(idRowOfItem[item]), holder != appIDOfItem[item] else { return .duplicate }
            return .idOfAnotherApp
        })
    }

    static func encode(_ item: AppendItem, into copy: inout BinaryCopyEncoder) {
        let event = item.event
        copy.beginRow(columnCount: 10)
        copy.appendUUID(event.eventID.bytes)
        copy.appendText(item.appID)
        copy.appendText(event.notificationID)
        copy.appendText(event.type.rawValue)
        copy.appendText(event.category)
        copy.appendText(event.deviceID)
        copy.appendTimestamp(unixMicroseconds: event.occurredAt.microsecondsSinceEpoch)
        if let experiment = event.experiment {
            copy.appendText(experiment.id)
            copy.appendText(experiment.arm)
        } else {
            copy.appendNull()
            copy.appendNull()
        }
        copy.appendJSONB(event.payloadJSON)
    }
}
