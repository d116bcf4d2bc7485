/// Why a prune or a restore did not run or stopped; `code` is stable, `description` is safe to
/// show (paths and names only, never event data).
public enum LogRetentionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The cut lies inside the window in which retries must still be found duplicates.
    case insideIdempotencyWindow(requested: String, minimum: String, reason: String)
    /// The cut lies further back than `LogPruner.longestOlderThan`: before any log, and beyond
    /// what the arithmetic of timestamps holds.
    case olderThanTooLong(requested: String, longest: String)
    /// Something that reads the log still needs events the prune would remove.
    case refused(reasons: [String])
    /// Another prune or restore holds the log's retention lock.
    case busy
    /// Another prune or restore, of this database or another, is using the archive directory.
    case archiveBusy(directory: String)
    /// The archive directory or one of its files cannot be read or written.
    case io(path: String, problem: String)
    /// The archive is not one engage wrote, or a file does not match the manifest.
    case corruptArchive(file: String, problem: String)

    public var code: String {
        switch self {
        case .insideIdempotencyWindow: "retention.inside_idempotency_window"
        case .olderThanTooLong: "retention.older_than_too_long"
        case .refused: "retention.refused"
        case .busy: "retention.busy"
        case .archiveBusy: "retention.archive_busy"
        case .io: "retention.io"
        case .corruptArchive: "retention.corrupt_archive"
        }
    }

    public var description: String {
        switch self {
        case .insideIdempotencyWindow(let requested, let minimum, let reason):
            "refusing to prune events recorded less than \(minimum) ago (asked: older than \(requested)): \(reason)"
        case .olderThanTooLong(let requested, let longest):
            "refusing to prune events older than \(requested): at most \(longest) back (100 years)"
        case .refused(let reasons):
            "refusing to prune: " + reasons.joined(separator: "; ")
        case .busy:
            "another engage log prune or restore is running on this database; try again when it has finished"
        case .archiveBusy(let directory):
            "another engage log prune or restore is using the archive \(directory); try again when it has finished"
        case .io(let path, let problem):
            "\(path): \(problem)"
        case .corruptArchive(let file, let problem):
            "archive file \(file): \(problem)"
        }
    }
}
