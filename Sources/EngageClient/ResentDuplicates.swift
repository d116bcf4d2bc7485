/// How many of an answer's duplicates are this queue's own earlier sends arriving (sends that got
/// no answer, `unanswered-ids`), and so delivered by this flush rather than duplicates.
///
/// The answer gives counts, not which events were the duplicates. A duplicate among the events
/// this queue never sent before (a name-based id another process recorded and sent first) is
/// someone else's delivery, and must never be counted as this flush's: so only the duplicates the
/// counts prove to be among the unanswered events count, those beyond what the other events could
/// account for. A resend of exactly what went unanswered, the common case, has every duplicate
/// counted; a mixed request may leave one of its own as a duplicate, never the reverse.
enum ResentDuplicates {
    /// - Parameters:
    ///   - duplicates: the answer's `duplicates`.
    ///   - eventIDs: the request's events' ids, in request order.
    ///   - unanswered: those of them sent before without an answer.
    ///   - rejected: the request indices the answer rejected (neither stored nor duplicates).
    ///
    /// An id the request carries twice (one display recorded again once its id left the recent
    /// ids) makes its second copy a duplicate of the first, never an earlier arrival.
    static func arrivedEarlier(duplicates: Int, eventIDs: [String], unanswered: Set<String>, rejected: Set<Int>) -> Int {
        var unansweredCount = 0, others = 0, repeats = 0
        var seen = Set<String>()
        for (index, id) in eventIDs.enumerated() where !rejected.contains(index) {
            if !seen.insert(id).inserted {
                repeats += 1
            } else if unanswered.contains(id) {
                unansweredCount += 1
            } else {
                others += 1
            }
        }
        return max(0, min(duplicates - repeats - others, unansweredCount))
    }
}
