import Synchronization

/// The stored definitions a scheduler found it cannot decode, and why, so that each is logged
/// when found (or when its reason changes), not at every poll: one such experiment at a 5 s poll
/// interval was 17,280 identical lines a day.
final class UndecodableDefinitions: Sendable {
    private let reasons = Mutex<[String: String]>([:])

    /// Whether the experiment `id`'s undecodable definition, for `reason`, is news to tell.
    func isNews(_ id: String, reason: String) -> Bool {
        reasons.withLock { reasons in
            guard reasons[id] != reason else { return false }
            reasons[id] = reason
            return true
        }
    }

    /// Forgets every experiment but `ids` (the ones still undecodable at this poll): one mended and
    /// broken again is told again.
    func keepOnly(_ ids: Set<String>) {
        reasons.withLock { reasons in reasons = reasons.filter { ids.contains($0.key) } }
    }
}
