/// Dense numbers 0, 1, 2, ... for device ids, in the order they are first seen.
///
/// An experiment's tallies (each arm, rich and plain) count the same devices. Numbering each id
/// once lets them keep per-device counts in arrays: a notification costs one hash of its device
/// id instead of one per tally it counts in, and merging the tallies of two replay lanes
/// renumbers each device once instead of once per tally. Ids match as Swift strings match
/// (canonically equivalent ids are one device), as the dictionaries keyed by id did before.
struct DeviceIndex: Sendable {
    /// By number.
    private(set) var ids: [String] = []
    private var numbers: [String: Int] = [:]

    init() {}

    /// Devices numbered.
    var count: Int { ids.count }

    /// The number of `id`, the next free one if it is new.
    mutating func number(of id: String) -> Int {
        let next = ids.count
        // One hash lookup: the `default:` accessor stores `next` when the id is new.
        let number = Self.read(&numbers[id, default: next])
        if number == next { ids.append(id) }
        return number
    }

    /// The number of `id`; nil if it has none.
    func existingNumber(of id: String) -> Int? {
        numbers[id]
    }

    /// The numbers `other`'s devices have here, by their number there; new ones numbered.
    mutating func renumber(_ other: DeviceIndex) -> [Int] {
        other.ids.map { number(of: $0) }
    }

    private static func read(_ value: inout Int) -> Int { value }
}
