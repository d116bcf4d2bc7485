import EventStore
import Postgres
import Testing

/// Which refusals reject an event alone (its values: the same bytes fail on every resend) and
/// which fail its request for its device to keep (the schema's doing, which can refuse every row).
struct RefusalKindTests {
    static func refusal(_ sqlState: String, kind: PostgresError.Kind = .server) -> PostgresError {
        PostgresError(kind: kind, sqlState: sqlState, message: "refused")
    }

    @Test(arguments: ["22003", "22P05", "22021", "22008", "22P02"])
    func aDataExceptionRejectsTheEventAlone(sqlState: String) {
        #expect(Committer.refusesSomeRow(Self.refusal(sqlState)))
        #expect(Committer.refusesForItsValues(Self.refusal(sqlState)))
    }

    /// A constraint's refusal, and binary rows the columns no longer read (22P03: a column's type
    /// changed under a running server), fail the request: every event would meet them.
    @Test(arguments: ["23514", "23502", "23503", "22P03"])
    func theSchemasRefusalFailsTheRequest(sqlState: String) {
        #expect(Committer.refusesSomeRow(Self.refusal(sqlState)))
        #expect(!Committer.refusesForItsValues(Self.refusal(sqlState)))
    }

    @Test(arguments: ["08006", "57014", "40001", "53300"])
    func otherFailuresAreNoRefusal(sqlState: String) {
        #expect(!Committer.refusesSomeRow(Self.refusal(sqlState)))
        #expect(!Committer.refusesForItsValues(Self.refusal(sqlState)))
    }
}
