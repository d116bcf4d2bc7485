import EngageCore

/// The longest line an archive file engage wrote can hold, so that reading a damaged or hostile
/// file (a gzip stream inflating to gigabytes without a newline) stops at a bounded buffer
/// instead of taking every byte of memory.
enum ArchiveLine {
    /// Bytes of one line, its newline not counted, derived from the largest event the server
    /// accepts at all (`--max-event-bytes` at its maximum, `EventLimits.largestMaxEventBytes`):
    ///
    /// - the `payload` column is the event's JSON as `jsonb` prints it. `jsonb` prints a number
    ///   in full (`1e308`, 5 bytes sent, is 309 digits; `5e-324` is 326 characters), so with its
    ///   `, ` separator a number sent grows at most about 55-fold; COPY's text format then doubles
    ///   only backslashes, which a number has none of (an escaped backslash, 2 bytes sent, is 4
    ///   written). 64 times the event covers it.
    /// - the envelope: the event's other fields (ids, type, category, arm: part of its bytes,
    ///   doubled at most by COPY's escaping) and what the log adds (position, transaction id,
    ///   the two timestamps, the tabs), a few hundred bytes.
    static let maxBytes = 64 * EventLimits.largestMaxEventBytes + 2 * EventLimits.largestMaxEventBytes + 4096

    /// The corrupt-archive problem of a line longer than `limit`; `outcome` says what was left
    /// undone ("nothing was restored").
    static func tooLong(_ limit: Int, outcome: String) -> String {
        "a line is longer than \(limit) bytes, more than any archived event can be (damaged, or not written by engage); \(outcome)"
    }
}
