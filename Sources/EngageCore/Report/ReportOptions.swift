/// How a report splits its rows into groups. Every grouping also has a total over all rows.
public enum ReportGrouping: String, Sendable, Hashable, CaseIterable {
    /// One group per category (the default).
    case category
    /// One group per category and attachment kind.
    case attachment
    /// One group per category and UTC day.
    case day
    /// One group per category whose metrics are the app-defined actions, one rate per action ID.
    case action
}

/// Which rows a report keeps. Empty sets and nil days keep everything; filters apply alike to
/// engagement, action and telemetry rows.
public struct ReportFilters: Sendable, Hashable {
    public var appIDs: Set<String>
    public var categories: Set<String>
    public var attachmentKinds: Set<String>
    /// First and last UTC day kept, inclusive.
    public var from: UTCDay?
    public var through: UTCDay?

    public init(appIDs: Set<String> = [], categories: Set<String> = [], attachmentKinds: Set<String> = [],
                from: UTCDay? = nil, through: UTCDay? = nil) {
        self.appIDs = appIDs
        self.categories = categories
        self.attachmentKinds = attachmentKinds
        self.from = from
        self.through = through
    }

    /// True when nothing is filtered out.
    public var isEmpty: Bool {
        appIDs.isEmpty && categories.isEmpty && attachmentKinds.isEmpty && from == nil && through == nil
    }

    public func admits(appID: String, category: String, attachmentKind: String, day: UTCDay) -> Bool {
        (appIDs.isEmpty || appIDs.contains(appID))
            && (categories.isEmpty || categories.contains(category))
            && (attachmentKinds.isEmpty || attachmentKinds.contains(attachmentKind))
            && (from.map { day >= $0 } ?? true)
            && (through.map { day <= $0 } ?? true)
    }

    /// The filters in force as (name, value) pairs for people, in a fixed order; empty when none.
    /// Set members are sorted and joined with ", ".
    public var summary: [(name: String, value: String)] {
        var lines: [(name: String, value: String)] = []
        if !appIDs.isEmpty { lines.append(("apps", appIDs.sorted().joined(separator: ", "))) }
        if !categories.isEmpty { lines.append(("categories", categories.sorted().joined(separator: ", "))) }
        if !attachmentKinds.isEmpty {
            lines.append(("attachment kinds", attachmentKinds.sorted(by: AttachmentOrder.precedes).joined(separator: ", ")))
        }
        if from != nil || through != nil {
            lines.append(("days", "\(from.map(\.description) ?? "…") to \(through.map(\.description) ?? "…")"))
        }
        return lines
    }
}

/// The display order of attachment kinds: image, gif, video, audio, none, unknown, then any other
/// spelling alphabetically.
enum AttachmentOrder {
    static let known = ["image", "gif", "video", "audio", "none", "unknown"]

    static func precedes(_ a: String, _ b: String) -> Bool {
        let rankA = known.firstIndex(of: a) ?? known.count
        let rankB = known.firstIndex(of: b) ?? known.count
        return rankA != rankB ? rankA < rankB : a < b
    }
}
