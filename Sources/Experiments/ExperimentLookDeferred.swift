import EventStore

/// Why an incremental look stored no analysis: a prune or a restore changed, or is changing, the
/// log under the tallies' checkpoint (`LogRewrite`), so the fold may not be the log's. Not a
/// failure of the run: the scheduler gives it back without counting the attempt, and runs it
/// again after the command's reset, when the look folds the log from the start.
/// `code` is stable; `description` is safe to show.
public struct ExperimentLookDeferred: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, Equatable {
        /// A prune or restore was under way when the look began: it folded nothing.
        case rewriteUnderWay = "log_rewrite_under_way"
        /// A prune or restore began after the look read the marker and before it stored.
        case rewrittenDuringLook = "log_rewritten_during_look"
    }

    public var reason: Reason
    /// The command under way (`prune`, `restore`), when one is.
    public var command: String?

    public init(reason: Reason, command: String?) {
        self.reason = reason
        self.command = command
    }

    public var code: String { reason.rawValue }

    public var description: String {
        let command = command.map { "engage log \($0)" } ?? "a prune or restore of the log"
        return switch reason {
        case .rewriteUnderWay:
            "\(command) is under way: the incremental look waits for its reset (a command that died is finished by the scheduler once no prune or restore holds the log)"
        case .rewrittenDuringLook:
            "\(command) changed the log while the incremental look ran: its analysis is not stored, and the run is repeated after the reset"
        }
    }

    /// Before a fold (`generation` nil) or before storing what a fold that read `generation` made:
    /// throws when a rewrite is under way, or, for a fold, began since it read the marker.
    static func check(_ now: LogRewrite.State, since generation: Int64?) throws(ExperimentLookDeferred) {
        guard let generation else {
            if now.isUnderWay { throw ExperimentLookDeferred(reason: .rewriteUnderWay, command: now.command) }
            return
        }
        if now.isUnderWay || now.generation != generation {
            throw ExperimentLookDeferred(reason: .rewrittenDuringLook, command: now.command)
        }
    }
}
