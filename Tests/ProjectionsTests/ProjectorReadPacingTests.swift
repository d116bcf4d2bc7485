import EventStore
import Postgres
@testable import Projections
import Runtime
import Testing
import TestSupport

/// `Projector.Configuration.readInterval`: at the log's end the projector waits the interval
/// from one read to the next, so that steady load makes few large batches; behind, it reads on.
/// Time is a `ManualTime`: the projector's wait is a sleeper the test sees and ends.
@Suite("Projector read pacing")
struct ProjectorReadPacingTests {
    let pool: ConnectionPool
    let store: EventStore
    let time = ManualTime()

    init() throws {
        pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 6)
        store = EventStore(pool: pool)
    }

    /// Runs `body` beside a projector on `time`, stopping the projector and closing the pool
    /// however `body` ends.
    func withProjector(batchSize: Int, readInterval: Duration, _ body: () async throws -> Void) async throws {
        var configuration = Projector.Configuration()
        configuration.batchSize = batchSize
        configuration.readInterval = readInterval
        configuration.pollInterval = .milliseconds(50)
        let projector = Projector(pool: pool, configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()),
                                  metrics: ProjectorMetrics(registry: MetricsRegistry()), time: time)
        let running = Task { try await projector.run() }
        var failure: (any Error)?
        do { try await body() } catch { failure = error }
        running.cancel()
        _ = try? await running.value
        await pool.close()
        if let failure { throw failure }
    }

    func folded() async throws -> Int {
        try await pool.withConnection { connection in
            try connection.query("""
                SELECT coalesce(max(events_processed), 0)::int8 FROM projection_checkpoints WHERE projection = \(EngagementStore.projectionName)
                """)[0].decode(0, as: Int.self)
        }
    }

    /// Advances the time by `interval` whenever the projector waits, until it has folded
    /// `count` events; returns how many times it advanced. A read may find fewer events than were
    /// appended: those of a transaction newer than one still running anywhere in the cluster
    /// (another test's) are not below the log's visibility horizon yet, so the projector, at the
    /// end it can see, waits again.
    @discardableResult
    func advance(by interval: Duration, untilFolded count: Int) async throws -> Int {
        var advances = 0
        try await pollUntil(every: .milliseconds(20)) {
            if try await folded() == count, time.sleepers == 1 { return true }
            if time.sleepers == 1 {
                time.advance(by: interval)
                advances += 1
            }
            return false
        }
        return advances
    }

    @Test(.timeLimit(.minutes(2)))
    func atTheLogsEndTheNextReadWaitsForTheInterval() async throws {
        let first = ProjectionFixtures.events(notifications: 5, seed: 61)
        let second = ProjectionFixtures.events(notifications: 7, seed: 62)
        _ = try await store.append(first)
        try await withProjector(batchSize: 1_000, readInterval: .seconds(60)) {
            // The last read found fewer events than a batch: its batch committed, and the next
            // read waits on the time.
            try await advance(by: .seconds(60), untilFolded: first.count)

            _ = try await store.append(second)
            time.advance(by: .seconds(59))
            #expect(time.sleepers == 1, "the read waits for the whole interval")
            #expect(try await folded() == first.count)

            time.advance(by: .seconds(1))
            try await advance(by: .seconds(60), untilFolded: first.count + second.count)
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func aProjectorBehindReadsOnWithoutWaiting() async throws {
        let items = ProjectionFixtures.events(notifications: 30, seed: 63)
        _ = try await store.append(items)
        // At least ten full batches of 8 before the last: paced after each, they would each wait
        // for an advance of the time. Read on at once, only a read held back by the visibility
        // horizon (above) waits; allow a few of those.
        #expect(items.count >= 88)
        try await withProjector(batchSize: 8, readInterval: .seconds(3_600)) {
            let advances = try await advance(by: .seconds(3_600), untilFolded: items.count)
            #expect(advances <= 3, "\(advances) waits for \(items.count) events in batches of 8")
        }
    }
}

@Suite("Projector read pacing rule")
struct ReadPacingTests {
    @Test func aReadOfAFullBatchIsFollowedAtOnceAndAnyOtherAfterTheInterval() {
        let pacing = ReadPacing(interval: .milliseconds(250), batchSize: 20_000)
        let started = ContinuousClock.now
        #expect(pacing.nextRead(afterReadStartedAt: started, eventsRead: 20_000) == started)
        #expect(pacing.nextRead(afterReadStartedAt: started, eventsRead: 19_999) == started + .milliseconds(250))
        #expect(pacing.nextRead(afterReadStartedAt: started, eventsRead: 0) == started + .milliseconds(250))
        let unpaced = ReadPacing(interval: .zero, batchSize: 20_000)
        #expect(unpaced.nextRead(afterReadStartedAt: started, eventsRead: 1) == started)
    }
}
