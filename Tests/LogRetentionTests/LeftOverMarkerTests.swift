import EngageCore
import EventStore
import Experiments
import Foundation
import LogRetention
import Postgres
import Synchronization
import Testing
import TestSupport

/// A prune or restore that died between its first change of the log and its reset leaves the
/// `log_rewrite` marker set, and every incremental look is deferred until it is cleared.
/// docs/experiments.md and docs/retention.md promise that the next `engage log prune` or
/// `engage log restore` "finds the marker, drops the tallies even if it changes nothing itself,
/// and clears it".
@Suite("A marker a dead prune or restore left")
struct LeftOverMarkerTests {
    /// The natural rerun of a prune that died (`--include-running-experiments` forgotten, or the
    /// projector not caught up yet) is refused by its checks: it must still finish the dead
    /// command's reset, or looks stay deferred with nothing that will ever clear them.
    @Test(.timeLimit(.minutes(2)))
    func aPruneRefusedByItsChecksStillClearsALeftOverMarker() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 10, tag: "old"), daysAgo: 52)
        // The dead prune: the marker set, its reset never run.
        _ = try await fixtures.pool.withConnection { connection in try LogRewrite.begin(.prune, on: connection) }
        let resets = Counter()
        let refused: LogPruner.Check = { _, _ in ["running experiment(s) exp have events recorded before the cut"] }
        let pruner = fixtures.pruner(olderThan: 31, checks: [refused], resetReaders: { _ in resets.increment(); return 1 })
        await #expect(throws: LogRetentionError.refused(reasons: ["running experiment(s) exp have events recorded before the cut"])) {
            try await pruner.run()
        }
        let state = try await fixtures.pool.withConnection { connection in try LogRewrite.state(on: connection) }
        #expect(!state.isUnderWay, "the marker the dead prune left is still set (\(state)): every incremental look stays deferred")
        #expect(resets.value == 1, "the tallies the dead prune left were not dropped")
        await fixtures.pool.close()
    }

    final class Counter: Sendable {
        private let count = Mutex(0)
        func increment() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }
}

/// A prune that dies mid-way (Ctrl-C: `engage log prune` installs no SIGINT handler; its
/// connection lost; its backend terminated) cannot run its catch's `LogRewrite.end`, so the marker
/// stays set although no prune or restore is running any more (the retention lock is free).
/// Without more, every incremental look from then on would be deferred, poll after poll, until an
/// operator thought of running another prune or restore; the scheduler finishes such a rewrite.
@Suite("Looks after a prune that died")
struct LooksAfterADeadPruneTests {
    @Test(.timeLimit(.minutes(5)))
    func looksAreNotDeferredForeverOnceThePruneThatSetTheMarkerIsGone() async throws {
        let setup = try await LookDuringRewriteTests.Setup()
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await setup.look()
        let gate = LookDuringRewriteTests.Gate()
        let pruning = Task {
            try await setup.prune(archive: directory) { _ in
                gate.hold { (try? setup.oldEventsInTheLog()).map { $0 > 0 && $0 < 2 * LookDuringRewriteTests.Setup.oldNotifications } ?? false }
            }
        }
        try await pollUntil(every: .milliseconds(10)) { gate.isHeld }
        // The prune dies: its backend goes (as when the process is killed or its connection lost).
        let killed = try await setup.fixtures.pool.withConnection { connection in
            try connection.query("""
                SELECT count(pg_terminate_backend(pid))::int8 FROM pg_stat_activity WHERE application_name = 'engage log prune' AND datname = current_database()
                """)[0].decode(0, as: Int.self)
        }
        #expect(killed == 1)
        gate.open()
        _ = await pruning.result
        // No prune or restore runs any more: the retention lock is free.
        let lockFree = try await setup.fixtures.pool.withConnection { connection in
            let free = try connection.query("SELECT pg_try_advisory_lock(\(LogRewrite.commandLockKey))")[0].decode(0, as: Bool.self)
            if free { _ = try connection.execute("SELECT pg_advisory_unlock(\(LogRewrite.commandLockKey))") }
            return free
        }
        #expect(lockFree)
        // The first look finds the marker and is deferred; its scheduler finds no command behind
        // the marker and finishes it (the tallies dropped, the marker cleared).
        let beforeLooks = try await setup.lastRunID()
        let first = try await setup.look()
        setup.expectDeferred(first, "prune", deferrals: 1)
        let state = try await setup.fixtures.pool.withConnection { connection in try LogRewrite.state(on: connection) }
        #expect(!state.isUnderWay, "the dead prune's marker is still set (\(state)) with no prune or restore running")
        // The next poll stores the deferred run, and later looks are stored: each equal to a full
        // replay of the log as the dead prune left it.
        _ = try await setup.scheduler.tick()
        var runs: [ExperimentRun] = []
        for _ in 0..<2 { runs.append(try await setup.look()) }
        #expect(runs.allSatisfy { $0.status == .done },
                "looks deferred (\(runs.map { "\($0.status)" })), deferrals \(setup.metrics.deferred.value), with no prune or restore running")
        let stored = try await setup.storedRunsAgainstTheReplay(after: beforeLooks)
        #expect(stored.count == 3 && stored.allSatisfy(\.equal), "\(stored)")
        #expect(stored.first?.run == first.id)
        await setup.close()
    }
}
