/// How many events the client gave up on, by reason, counted by every process of the app
/// together (the extensions' drops included). Kept in `<container>/EngageClient/dropped.json`.
public struct DropCounts: Sendable, Equatable {
    /// The server refused them one by one: in a 200 answer's `rejected`, or in its 400
    /// `no-valid-events`, which lists them the same way.
    public var rejected = 0
    /// The server refused a whole request with a 4xx that retrying cannot fix.
    public var refused = 0
    /// The queue went over `maxQueueBytes`: the oldest waiting were dropped.
    public var overflow = 0
    /// The disk was full: the oldest waiting were dropped to make room for new ones.
    public var diskFull = 0
    /// Judged too old by the device's clock and dropped unsent, by versions before the server
    /// became the only judge of age (a clock set ahead made them drop what the server takes).
    /// No longer counted; kept so that counts recorded then still read and add up. The server's
    /// refusals of old events are `rejected`.
    public var expired = 0
    /// Lines or files of the queue that could not be read; they are kept in `quarantine/`.
    public var unreadable = 0

    public init() {}

    public var total: Int { Self.keys.reduce(0) { Self.saturating($0, self[$1]) } }

    static let keys = ["rejected", "refused", "overflow", "disk_full", "expired", "unreadable"]

    subscript(key: String) -> Int {
        get {
            switch key {
            case "rejected": rejected
            case "refused": refused
            case "overflow": overflow
            case "disk_full": diskFull
            case "expired": expired
            case "unreadable": unreadable
            default: 0
            }
        }
        set {
            switch key {
            case "rejected": rejected = newValue
            case "refused": refused = newValue
            case "overflow": overflow = newValue
            case "disk_full": diskFull = newValue
            case "expired": expired = newValue
            case "unreadable": unreadable = newValue
            default: break
            }
        }
    }

    /// Saturating: the counts come back from `dropped.json`, which a damaged file can fill with
    /// any integer; counting more drops must not trap the app at every launch.
    static func + (left: DropCounts, right: DropCounts) -> DropCounts {
        var sum = left
        for key in keys { sum[key] = saturating(left[key], right[key]) }
        return sum
    }

    private static func saturating(_ a: Int, _ b: Int) -> Int {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : sum
    }
}
