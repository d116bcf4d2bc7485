import EngageCore
import Foundation
import Postgres
import Synchronization

/// A replay split over several connections that read one snapshot of the log.
///
/// The first lane opens a REPEATABLE READ transaction, exports its snapshot
/// (`pg_export_snapshot()`) and cuts the experiment's notifications into ranges; every other lane
/// starts its transaction on that snapshot (`SET TRANSACTION SNAPSHOT`), so all lanes see exactly
/// the events one transaction would. Lanes claim ranges until none is left and their tallies
/// merge into those of a single replay (a notification's events all fall in one range).
///
/// The other lanes take pool connections only after the snapshot is exported, and a lane that
/// gets one late finds the ranges gone and reads nothing: the first lane never waits for another
/// lane to start, only for an import already under way, so a busy pool slows a replay down but
/// cannot deadlock it.
enum SplitReplay {
    /// `silenceLimit`: as `ExperimentRunner.silenceLimit`, for each lane: a lane runs to its end
    /// whatever is cancelled (below), and one on a connection to a frozen host would otherwise
    /// never end, nor would the replay.
    static func read(_ definition: ExperimentDefinition, lanes: Int, chunkSize: Int,
                     pool: ConnectionPool, silenceLimit: Duration? = nil) async throws -> ExperimentReplay {
        let shared = SharedRanges()
        return try await withThrowingTaskGroup(of: ExperimentReplay.self) { group in
            group.addTask {
                do {
                    // Not interrupted by the cancellation of lanes still waiting for a connection
                    // (below), which comes once the ranges are gone: this lane may still be committing.
                    return try await pool.withConnection(interruptingOnCancel: false, silenceLimit: silenceLimit) { connection in
                        try connection.transaction(isolation: "REPEATABLE READ") { connection in
                            // Closing waits for imports under way, so it must happen before COMMIT.
                            defer { shared.close() }
                            let snapshot: String = try connection.query("SELECT pg_export_snapshot()")[0].decode(0)
                            let ranges = try ExperimentReplay.ranges(definition, count: lanes * rangesPerLane, on: connection)
                            shared.publish(snapshot: snapshot, ranges: ranges)
                            return try readClaimed(definition, shared, chunkSize: chunkSize, on: connection)
                        }
                    }
                } catch {
                    // Failed before its transaction began (no connection to be had, or interrupted
                    // while connecting), nothing was published, and the wait for it below would
                    // never end; failed later, the ranges are closed already (closing is idempotent).
                    shared.close()
                    throw error
                }
            }
            if await shared.hasOtherLanesWork() {
                for _ in 1..<lanes {
                    group.addTask {
                        do {
                            // Cancelled once the ranges are gone, which must not cut short a
                            // lane that is reading one: only the wait for a connection ends.
                            return try await pool.withConnection(interruptingOnCancel: false, silenceLimit: silenceLimit) { connection in
                                try importAndRead(definition, shared, chunkSize: chunkSize, on: connection)
                            }
                        } catch is CancellationError where shared.isClosed {
                            return ExperimentReplay(definition: definition)
                        }
                    }
                }
            }
            var total = ExperimentReplay(definition: definition)
            do {
                while let part = try await group.next() {
                    total.merge(part)
                    // Lanes still waiting for a connection are not needed once the ranges are gone.
                    if shared.isClosed { group.cancelAll() }
                }
            } catch {
                // The replay has failed: the other lanes stop after the range they are reading.
                shared.abandon()
                throw error
            }
            return total
        }
    }

    /// Ranges per lane: more ranges than lanes let a lane that started late or runs slowly leave
    /// its share to the others.
    static let rangesPerLane = 4

    private static func importAndRead(_ definition: ExperimentDefinition, _ shared: SharedRanges, chunkSize: Int,
                                      on connection: Connection) throws -> ExperimentReplay {
        guard let snapshot = shared.beginImport() else { return ExperimentReplay(definition: definition) }
        return try connection.transaction(isolation: "REPEATABLE READ") { connection in
            do {
                defer { shared.endImport() }
                // The id comes from the server and is checked to be hex digits and dashes.
                try connection.execute(SQL(unsafeSQL: "SET TRANSACTION SNAPSHOT '\(snapshot)'"))
            }
            return try readClaimed(definition, shared, chunkSize: chunkSize, on: connection)
        }
    }

    private static func readClaimed(_ definition: ExperimentDefinition, _ shared: SharedRanges, chunkSize: Int,
                                    on connection: Connection) throws -> ExperimentReplay {
        var replay = ExperimentReplay(definition: definition)
        while let range = shared.claim() {
            try replay.read(definition, range: range, chunkSize: chunkSize, on: connection)
        }
        return replay
    }
}

/// The state the lanes of one split replay share: the snapshot, the ranges left, the imports
/// under way.
private final class SharedRanges: Sendable {
    private struct State {
        var snapshot: String?
        var ranges: [NotificationRange] = []
        var importing = 0
        var closed = false
    }

    private let state = Mutex(State())
    /// One value when the first lane has published (true: the other lanes have work) or failed.
    private let published: AsyncStream<Bool>
    private let publishing: AsyncStream<Bool>.Continuation

    init() {
        (published, publishing) = AsyncStream.makeStream(of: Bool.self)
    }

    /// Called by the first lane inside its transaction.
    func publish(snapshot: String, ranges: [NotificationRange]) {
        let valid = !snapshot.isEmpty && snapshot.allSatisfy { $0.isHexDigit || $0 == "-" }
        let shared = valid && ranges.count > 1
        state.withLock { state in
            state.ranges = ranges.reversed()
            if shared { state.snapshot = snapshot }
        }
        publishing.yield(shared)
        publishing.finish()
    }

    /// Waits for the first lane to publish; false when it read everything alone or failed first.
    func hasOtherLanesWork() async -> Bool {
        for await shared in published { return shared }
        return false
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// The snapshot to import, or nil when nothing is left to read (or the first lane is done).
    func beginImport() -> String? {
        state.withLock { state in
            guard !state.closed, !state.ranges.isEmpty, let snapshot = state.snapshot else { return nil }
            state.importing += 1
            return snapshot
        }
    }

    func endImport() {
        state.withLock { $0.importing -= 1 }
    }

    func claim() -> NotificationRange? {
        state.withLock { $0.ranges.popLast() }
    }

    /// Leaves no range to claim.
    func abandon() {
        state.withLock { $0.ranges.removeAll() }
    }

    /// Called by the first lane before its transaction ends: waits for imports under way (one
    /// short statement each) and refuses later ones, whose snapshot would be gone.
    func close() {
        while true {
            let idle = state.withLock { state in
                if state.importing == 0 { state.closed = true }
                return state.closed
            }
            if idle { break }
            usleep(1_000)
        }
        publishing.finish()
    }
}
