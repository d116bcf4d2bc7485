/// A pooled unit of work got no answer from the database within its limit, counted from when it
/// had its connection (`ConnectionPool.withConnection(answerLimit:)`): its connection was closed
/// under it (`ConnectionInterrupter`), and whether the server finished the work is unknown.
///
/// One type for every service that bounds its calls so (the projector, the scheduler, partition
/// maintenance, the replica's lag reading): they log `description` as it is, and operators search
/// the log for those words.
public struct DatabaseDidNotAnswer: Error, Sendable, Equatable, CustomStringConvertible {
    /// The limit that passed.
    public var limit: Duration

    public init(limit: Duration) {
        self.limit = limit
    }

    /// Safe to log: it holds no value of the work, only the limit.
    public var description: String { "the database did not answer within \(limit)" }
}
