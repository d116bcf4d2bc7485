import EngageCore
import EventStore
import Experiments
import HTTPServer

/// Every whole-request problem the API answers with, as RFC 9457 problem details.
enum APIProblems {
    static func unauthorized(_ detail: String) -> HTTPProblem {
        HTTPProblem(status: 401, slug: "unauthorized", title: "Missing or invalid API key", detail: detail)
    }

    static func forbidden(_ detail: String) -> HTTPProblem {
        HTTPProblem(status: 403, slug: "forbidden", title: "This key may not do that", detail: detail)
    }

    static func unsupportedMediaType(_ detail: String) -> HTTPProblem {
        HTTPProblem(status: 415, slug: "unsupported-media-type", title: "Unsupported media type", detail: detail)
    }

    static func malformed(_ error: JSONError) -> HTTPProblem {
        HTTPProblem(status: 400, slug: "malformed-json", title: "The body is not valid JSON",
                    detail: "\(error.reason) at byte \(error.offset)",
                    members: [.init(name: "offset", json: String(error.offset))])
    }

    static func badRequest(_ detail: String, slug: String = "bad-request") -> HTTPProblem {
        HTTPProblem(status: 400, slug: slug, title: "Bad request", detail: detail)
    }

    static func tooLarge(_ detail: String) -> HTTPProblem {
        HTTPProblem(status: 413, slug: "payload-too-large", title: "The request is too large", detail: detail)
    }

    static func noValidEvents(_ rejected: [Rejection]) -> HTTPProblem {
        HTTPProblem(status: 400, slug: "no-valid-events", title: "No event in the request is valid",
                    detail: "\(rejected.count) event(s) rejected; see rejected",
                    members: [.init(name: "rejected", json: renderRejections(rejected))])
    }

    static func rateLimited(_ limit: RateLimit) -> HTTPProblem {
        HTTPProblem(status: 429, slug: "rate-limited", title: "This key is over its request rate",
                    detail: "a key may make \(limit.requests) request(s) per \(limit.period == .seconds(60) ? "minute" : "second"), "
                        + "\(limit.burst) at once; retry after the number of seconds in Retry-After")
    }

    static let queueFull = HTTPProblem(status: 429, slug: "ingest-queue-full", title: "Too many events are waiting to be stored",
                                       detail: "retry after the number of seconds in Retry-After")
    static let unavailable = HTTPProblem(status: 503, slug: "database-unavailable", title: "The event log is unreachable",
                                         detail: "nothing from this request was stored; retry after the number of seconds in Retry-After")
    /// `/readyz` on a server in recovery (a standby: a demoted primary the pool reached again):
    /// every read answers, no write can succeed. One title with `databaseTakesNoWrites`, whose
    /// type it shares (RFC 9457: a type's title does not change); the detail says which.
    static let databaseReadOnly = HTTPProblem(
        status: 503, slug: "database-read-only", title: "The database takes no writes",
        detail: "the server engage is connected to is in recovery and takes no writes; point --database at the primary "
            + "(with several hosts, engage asks for the one that takes writes unless the URL sets target_session_attrs)")
    /// Not in recovery, yet every transaction is read-only (`default_transaction_read_only`).
    static let databaseTakesNoWrites = HTTPProblem(
        status: 503, slug: "database-read-only", title: "The database takes no writes",
        detail: "the server engage is connected to is not a standby but makes every transaction read-only "
            + "(default_transaction_read_only: an old primary fenced, or a managed server out of disk); nothing can be stored "
            + "until it takes writes again, or --database names the server that does")
    /// An append that failed for want of the database (`unavailable` for ingestion, once the
    /// request reached the committer): a commit cut short by the commit timeout or a lost
    /// connection may have been made on the primary, so "nothing was stored" would not be known.
    static let eventsNotAcknowledged = HTTPProblem(
        status: 503, slug: unavailable.code, title: unavailable.title,
        detail: "the events are not acknowledged, and some may be stored (the database stopped answering while they were committed, "
            + "or never answered); resend them unchanged after the number of seconds in Retry-After: any stored are then reported as duplicates")
    /// A manual run whose database did not answer once its insert was sent (`ManualRunUnanswered`):
    /// queued, or maybe queued (an insert interrupted while its COMMIT waits for a lost synchronous
    /// standby is made on the primary), and a scheduler analyses a queued run later. An outage
    /// like any other (`database-unavailable`, Retry-After), since a repeated run is harmless (an
    /// analysis only reads, a second run adds a row), but the detail says the runs may already
    /// hold it, and where to list them.
    static func runUnanswered(_ error: ManualRunUnanswered) -> HTTPProblem {
        let queued = error.runID.map { "the database did not answer after run \($0) was queued: a scheduler analyses it later" }
            ?? "the database did not answer once the run was sent: it may have been queued, and a scheduler analyses a queued run later"
        return HTTPProblem(status: 503, slug: "database-unavailable", title: unavailable.title,
                           detail: queued + "; list the runs (GET /v1/experiments/\(error.experimentID)/runs) before repeating the "
                               + "request (a repeat adds another run)")
    }

    /// A constraint of the database refused an event of the request (SQLSTATE class 23,
    /// `Committer.refusesForItsValues` says why it is not rejected alone): the database answered,
    /// so this is no outage, and the schema is the operators' to mend. 500 without Retry-After: a
    /// client resends with its backoff, and loses nothing meanwhile.
    static func eventNotStorable(sqlState: String) -> HTTPProblem {
        HTTPProblem(status: 500, slug: "event-not-storable", title: "A constraint of the database refused an event of this request",
                    detail: "the request is not acknowledged (SQLSTATE \(sqlState)); engage's own schema has no constraint a valid "
                        + "event breaks, so the server's operators must mend the database's; resend later, unchanged (any events of it "
                        + "stored meanwhile are then reported as duplicates)")
    }

    /// A commit the synchronous standbys were not seen to have (`PostgresError.Kind.unconfirmedCommit`):
    /// stored on the primary, not acknowledged; the resend with the same ids is reported once
    /// they have it.
    static func unconfirmedCommit(roleCannotSeeStandbys: Bool) -> HTTPProblem {
        HTTPProblem(status: 503, slug: "commit-unconfirmed", title: "The commit is not confirmed on the synchronous standbys",
                    detail: roleCannotSeeStandbys
                        ? "committed but not confirmed on the synchronous standbys: the database role cannot read their positions "
                            + "(GRANT pg_read_all_stats TO the role engage connects as); resend with the same event ids"
                        : "committed but not confirmed on the synchronous standbys; resend with the same event ids")
    }

    /// An experiment's change (created, started, stopped) committed on the primary but not seen
    /// on the synchronous standbys required: made, not acknowledged. Repeating it blindly may find
    /// it made (409), so the detail says to read the experiment back first.
    static func changeUnconfirmed(roleCannotSeeStandbys: Bool) -> HTTPProblem {
        HTTPProblem(status: 503, slug: "change-unconfirmed", title: "The change is not confirmed on the synchronous standbys",
                    detail: "the change was committed on the primary but not confirmed on the synchronous standbys"
                        + (roleCannotSeeStandbys ? " (the database role cannot read their positions: GRANT pg_read_all_stats TO it)" : "")
                        + "; a failover now could undo it: read the experiment back before repeating the request (a repeat may answer 409)")
    }

    static let standbysUnverifiable = HTTPProblem(
        status: 503, slug: "standbys-unverifiable", title: "Commits cannot be confirmed on the synchronous standbys",
        detail: "synchronous replication is configured (synchronous_standby_names, or --synchronous-standbys) but the database role "
            + "cannot read the standbys' positions, so every ingest request and experiment change is refused (an experiment's change "
            + "is made on the primary, not acknowledged): GRANT pg_read_all_stats TO the role engage connects as")

    /// Fewer synchronous standbys stream than `--synchronous-standbys` requires (a pg_auto_failover
    /// primary in `wait_primary` has none): every commit is refused until they are back.
    static func requiredStandbysMissing(_ missing: Int) -> HTTPProblem {
        HTTPProblem(status: 503, slug: "synchronous-standbys-missing", title: "Fewer synchronous standbys than required are streaming",
                    detail: "\(missing) more synchronous standby\(missing == 1 ? "" : "s") must stream from the primary before a commit "
                        + "can be confirmed (--synchronous-standbys); until then every ingest request and experiment change is refused "
                        + "(devices keep their events; an experiment's change is made on the primary, not acknowledged)")
    }

    static func transactionIDsBehindLog(_ error: TransactionIDsBehindLog) -> HTTPProblem {
        HTTPProblem(status: 503, slug: TransactionIDsBehindLog.code, title: "The database's transaction ids are behind the event log",
                    detail: error.description)
    }

    static let shuttingDown = HTTPProblem(status: 503, slug: "shutting-down", title: "The server is shutting down",
                                          detail: "nothing from this request was stored; retry on another instance or later")

    /// The problem as a response, with Retry-After where retrying is the remedy.
    static func response(_ problem: HTTPProblem, retryAfter seconds: Int? = nil) -> HTTPResponse {
        var response = problem.response
        if let seconds { response.headers.set("Retry-After", String(seconds)) }
        if problem.status == 401 { response.headers.set("WWW-Authenticate", "Bearer") }
        return response
    }

    static func renderRejections(_ rejected: [Rejection]) -> String {
        var writer = JSONWriter(capacity: 64 + rejected.count * 64)
        writer.beginArray()
        for rejection in rejected {
            writer.beginObject()
            writer.key("index"); writer.int(rejection.index)
            writer.key("field")
            if let field = rejection.field { writer.string(field) } else { writer.null() }
            writer.key("problem"); writer.string(rejection.problem)
            writer.endObject()
        }
        writer.endArray()
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
