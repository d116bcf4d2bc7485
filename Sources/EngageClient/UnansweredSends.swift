import Foundation

/// The events this queue sent without learning what became of them (no answer, a 5xx, a 429,
/// a request cut off by its budget, a claim whose sender died): the server may have stored them.
/// When their resend is answered, the server's duplicates among them are this queue's own
/// earlier sends arriving, so the flush counts them as delivered, not as duplicates.
/// Kept in `<container>/EngageClient/unanswered-ids`, one id a line, shared by every process.
extension DiskQueue {
    /// Ids kept at most, the oldest forgotten first: more than a full queue holds in practice
    /// (5 MB of events of about 200 bytes). A forgotten id only makes a resend's duplicate count
    /// as a duplicate.
    static let mostUnansweredIDs = 30_000

    private var unansweredPath: String { root.appendingPathComponent("unanswered-ids").path }

    /// Records that these events were sent and no answer told their fate.
    func markUnanswered(_ ids: [String]) {
        guard !ids.isEmpty else { return }
        _ = try? QueueFiles.withExclusiveLock(lockPath, protection: options.protection) { _ in
            var known = unansweredIDs()
            let present = Set(known)
            let new = ids.filter { !present.contains($0) }
            // A long outage resends the same oldest segment again and again: nothing to write.
            guard !new.isEmpty else { return }
            known += new
            try QueueFiles.replace(unansweredPath, with: Self.lines(known.suffix(Self.mostUnansweredIDs)),
                                   protection: options.protection)
        }
    }

    /// How many of `ids` were sent before without an answer; they are forgotten, as the answer
    /// now in hand (or the drop) is their last.
    func takeUnanswered(_ ids: [String]) -> Int {
        takeUnansweredIDs(ids).count
    }

    /// Those of `ids` that were sent before without an answer, forgotten as `takeUnanswered`.
    func takeUnansweredIDs(_ ids: [String]) -> Set<String> {
        // The common case, nothing ever unanswered, costs one failed access(2).
        guard !ids.isEmpty, access(unansweredPath, F_OK) == 0 else { return [] }
        let taken = try? QueueFiles.withExclusiveLock(lockPath, protection: options.protection) { _ -> Set<String> in
            let known = unansweredIDs()
            let wanted = Set(ids)
            let kept = known.filter { !wanted.contains($0) }
            guard kept.count < known.count else { return [] }
            if kept.isEmpty {
                unlink(unansweredPath)
            } else {
                try QueueFiles.replace(unansweredPath, with: Self.lines(kept), protection: options.protection)
            }
            return Set(known.filter { wanted.contains($0) })
        }
        return taken ?? []
    }

    /// Called with the lock held.
    private func unansweredIDs() -> [String] {
        guard case let .content(data) = QueueFiles.readFile(unansweredPath) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    private static func lines<S: Sequence<String>>(_ ids: S) -> [UInt8] {
        Array(ids.map { $0 + "\n" }.joined().utf8)
    }
}
