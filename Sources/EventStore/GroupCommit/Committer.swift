import EngageCore
import Foundation
import Postgres
import Runtime
import Synchronization

/// Takes groups from the ingest queue and stores each in one transaction. Several run side by
/// side when there is backlog enough (see `IngestQueue`), so that one group's commit (and fsync)
/// overlaps the next group's COPY.
///
/// Each committer is a thread of its own with its own PostgreSQL connection (besides the pool's),
/// because a group commit is a serial step every small request waits for: through a task and the
/// pool, each commit would also wait for two thread hand-offs (the pool's thread to wake, then a
/// task thread to resume), a large share of a small commit (BENCHMARKS.md, "Group commit").
///
/// A request waits at most `commitTimeout` for its commit (a primary waiting for a synchronous
/// standby it lost, a server that stopped answering): a watchdog thread interrupts a commit whose
/// oldest request was queued longer ago (its connection is closed and its requests fail: 503,
/// retried by the clients with the same ids, never acknowledged), and refuses batches that waited
/// that long in the queue behind such commits. The server may still commit it; a retry then
/// finds the events and waits until they are as durable as configured (`EventStore`).
///
/// A group shares one transaction, but not one fate: when PostgreSQL refuses a row for its data
/// (`refusesSomeRow`), each request of the group is stored on its own, and the one holding that
/// row is stored without it: the row comes back `.refused` (`EventStore.appendIsolatingRefusedRows`),
/// so a request is never failed whole for one event, which its device would resend forever.
public struct Committer: Service {
    public let queue: IngestQueue
    public let database: PostgresConfiguration
    public let metrics: CommitterMetrics
    public let committers: Int
    public let commitTimeout: Duration
    public let time: any TimeSource
    public let logger: Logger

    public init(queue: IngestQueue, database: PostgresConfiguration, metrics: CommitterMetrics, committers: Int = 2,
                commitTimeout: Duration = .seconds(10), time: any TimeSource = SystemTime(), logger: Logger) {
        precondition(committers > 0, "ingestion needs at least one committer")
        precondition(commitTimeout > .zero, "a commit timeout must be positive")
        self.queue = queue
        self.database = database
        self.metrics = metrics
        self.committers = committers
        self.commitTimeout = commitTimeout
        self.time = time
        self.logger = logger
    }

    /// Runs until cancelled, then drains: everything already queued is still committed and
    /// answered before the threads end and this returns, for at most `drainTimeout`; then a
    /// commit still running is interrupted. A commit that fails while draining (the database is
    /// gone, or that timeout) makes the rest be refused at once rather than tried in turn. (The
    /// HTTP server stops first, having answered every request, so nobody waits for these.)
    public func run() async throws {
        let interrupters = (0..<committers).map { _ in ConnectionInterrupter() }
        let watchdog = CommitWatchdog(queue: queue, interrupters: interrupters, timeout: commitTimeout,
                                      drainTimeout: min(commitTimeout, Self.drainTimeout), time: time)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (ended: CheckedContinuation<Void, Never>) in
                let running = Countdown(committers) {
                    watchdog.stop()
                    ended.resume()
                }
                watchdog.start()
                for index in 0..<committers {
                    let thread = Thread { [self] in
                        commitLoop(interrupter: interrupters[index])
                        running.countDown()
                    }
                    thread.name = "committer-\(index)"
                    thread.stackSize = 1 << 20
                    thread.start()
                }
            }
        } onCancel: {
            queue.close()
            watchdog.draining()
        }
    }

    /// The longest a drain lets a commit run once the committers are asked to stop.
    public static let drainTimeout = Duration.seconds(5)

    private func commitLoop(interrupter: ConnectionInterrupter) {
        let connection = ReusableConnection(configuration: database, interrupter: interrupter)
        defer { connection.close() }
        let parker = IngestQueue.Parker()
        while let group = queue.takeGroup(parkingOn: parker) {
            let stopwatch = Stopwatch()
            // The timeout counts from when the group's oldest request was queued: a request that
            // waited behind a stuck commit does not wait a whole timeout more for its own.
            let unit = interrupter.begin(at: group.lazy.map(\.queuedAt).min() ?? time.now)
            let outcome = Result { try EventStore.append(group.map(\.batch), using: connection) }
            if case .failure(let error as PostgresError) = outcome, Self.refusesSomeRow(error) {
                // A row failed the transaction, and with it every request that shared it (resent,
                // they would keep meeting it): each request is stored on its own, and the one
                // holding the row without it, in what is left of the same timeout. Nothing of the
                // group was committed.
                logger.warning("ingest.commit-split", ["error": "\(error)", "requests": String(group.count)])
                let results = group.map { entry in
                    Result {
                        // A lone request refused by a constraint is failed as it is: resent alone
                        // it would meet the same constraint.
                        if group.count == 1, !Self.refusesForItsValues(error) { throw error }
                        return try EventStore.appendIsolatingRefusedRows(entry.batch, using: connection,
                                                                         knownRefused: group.count == 1 ? error : nil)
                    }
                }
                interrupter.end(unit)
                queue.groupFinished()
                metrics.commitSeconds.observe(stopwatch.elapsed)
                var failure: (any Error)?
                var failed = 0
                for (entry, result) in zip(group, results) {
                    switch result {
                    case .failure(let error):
                        metrics.commitFailures.increment()
                        failure = failure ?? error
                        failed += 1
                    case .success(let appended): logRefusals(appended, of: entry.batch)
                    }
                    entry.complete(result)
                }
                // A half's commit fails as a group's does (a timeout, an unconfirmed commit, the
                // database gone): told and counted the same way, and while draining, what is still
                // queued is refused rather than tried in turn.
                if let failure {
                    reportFailure(failure, requests: failed)
                    queue.refuseQueued()
                }
                continue
            }
            interrupter.end(unit)
            queue.groupFinished()
            switch outcome {
            case .success(let results):
                metrics.commitSeconds.observe(stopwatch.elapsed)
                metrics.groupEvents.observe(Double(group.reduce(0) { $0 + $1.batch.rowCount }))
                for (entry, result) in zip(group, results) { entry.complete(.success(result)) }
            case .failure(let error):
                metrics.commitFailures.increment()
                reportFailure(error, requests: group.count)
                for entry in group { entry.complete(.failure(error)) }
                queue.refuseQueued()
            }
        }
    }
}

extension Committer {
    /// Counts and logs why a commit of `requests` requests failed: interrupted after the commit
    /// timeout, not confirmed by the synchronous standbys, or otherwise.
    private func reportFailure(_ error: any Error, requests: Int) {
        if let error = error as? PostgresError, error.kind == .interrupted, !queue.isClosed {
            metrics.commitTimeouts.increment()
            logger.warning("ingest.commit-timeout", ["timeout.s": "\(commitTimeout.components.seconds)", "requests": String(requests)])
        } else if let error = error as? PostgresError, error.kind == .unconfirmedCommit {
            metrics.commitsUnconfirmed.increment()
            logger.warning("ingest.commit-unconfirmed", ["error": "\(error)", "requests": String(requests)])
        } else {
            logger.warning("ingest.commit-failed", ["error": "\(error)", "requests": String(requests)])
        }
    }

    /// Tells the operators which events PostgreSQL refused (their ids and SQLSTATE, never their
    /// values): validation let them through, so each is a gap in validation to close.
    private func logRefusals(_ result: AppendResult, of batch: PreparedBatch) {
        let ids = batch.itemEventIDs
        for (item, sqlState) in result.refusedItems {
            logger.warning("ingest.event-refused", ["sql.state": sqlState, "app.id": batch.appIDOfItem[item],
                                                    "event.id": ids[item].map { "\($0)" } ?? "repeat"])
        }
    }

    /// PostgreSQL refused some row (SQLSTATE class 22, data exception, or 23, integrity
    /// constraint violation; an id already stored is no such failure, the append handles it): the
    /// fault of one request's events, or of a rule of the schema, not of the database's
    /// availability or the connection; the requests sharing the group are stored without it.
    public static func refusesSomeRow(_ error: any Error) -> Bool {
        guard let error = error as? PostgresError, error.kind == .server, let state = error.sqlState else { return false }
        return state.hasPrefix("22") || state.hasPrefix("23")
    }

    /// PostgreSQL refused a row for its values alone (class 22, data exception: a number out of
    /// range, a character the encoding lacks): the event fails the same way on every server and
    /// every resend, so it is rejected alone (`EventStore.appendIsolatingRefusedRows`) and its
    /// device drops it. A constraint's refusal (class 23) is not: engage's own schema has none a
    /// valid event can break, so it comes from the schema (an operator's constraint or trigger,
    /// another version's migration during an upgrade), which its operators can mend; dropping
    /// the events it refuses would lose every one of them meanwhile, so the request fails and
    /// its device keeps it.
    ///
    /// One class-22 code is left out: 22P03, invalid_binary_representation, says the binary rows
    /// engage writes and the table's column types disagree (a column changed under a running
    /// server), which would refuse every event, not one.
    public static func refusesForItsValues(_ error: any Error) -> Bool {
        guard let error = error as? PostgresError, error.kind == .server, let state = error.sqlState else { return false }
        return state.hasPrefix("22") && state != invalidBinaryRepresentation
    }

    static let invalidBinaryRepresentation = "22P03"
}

/// A thread that interrupts commits running longer than the timeout, and refuses batches that
/// waited in the queue that long (behind stuck commits): it looks every quarter of the timeout
/// (at most every second), so a request is answered between one timeout and about a quarter more
/// after it was queued. Once draining, it also interrupts whatever still runs `drainTimeout`
/// after the stop request.
private final class CommitWatchdog: Sendable {
    private let queue: IngestQueue
    private let interrupters: [ConnectionInterrupter]
    private let timeout: Duration
    private let drainTimeout: Duration
    private let time: any TimeSource
    private let wakeUp = DispatchSemaphore(value: 0)
    private let stopped = Atomic(false)
    private let drainingSince = Mutex<ContinuousClock.Instant?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    init(queue: IngestQueue, interrupters: [ConnectionInterrupter], timeout: Duration, drainTimeout: Duration, time: any TimeSource) {
        self.queue = queue
        self.interrupters = interrupters
        self.timeout = timeout
        self.drainTimeout = drainTimeout
        self.time = time
    }

    func start() {
        let thread = Thread { [self] in
            let period = min(min(timeout, drainTimeout) / 4, .seconds(1))
            while !stopped.load(ordering: .acquiring) {
                _ = time.wait(for: wakeUp, until: time.now + period)
                let now = time.now
                // Past the drain's end, every commit has run too long.
                let drainOver = drainingSince.withLock { $0 }.map { now - $0 > drainTimeout } ?? false
                for interrupter in interrupters {
                    if drainOver {
                        interrupter.interruptIfRunning(longerThan: .zero, now: now, because: .cancelled)
                    } else {
                        interrupter.interruptIfRunning(longerThan: timeout, now: now)
                    }
                }
                queue.expire(queuedBefore: now - timeout)
            }
            finished.signal()
        }
        thread.name = "commit-watchdog"
        thread.stackSize = 1 << 18
        thread.start()
    }

    /// The committers were asked to stop.
    func draining() {
        let now = time.now
        drainingSince.withLock { $0 = $0 ?? now }
    }

    /// Ends the thread and waits for it.
    func stop() {
        stopped.store(true, ordering: .releasing)
        wakeUp.signal()
        finished.wait()
    }
}

/// Calls `whenZero` once, when the last of `count` threads has counted down.
private final class Countdown: Sendable {
    private let remaining: Atomic<Int>
    private let whenZero: @Sendable () -> Void

    init(_ count: Int, whenZero: @escaping @Sendable () -> Void) {
        remaining = Atomic(count)
        self.whenZero = whenZero
    }

    func countDown() {
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { whenZero() }
    }
}
