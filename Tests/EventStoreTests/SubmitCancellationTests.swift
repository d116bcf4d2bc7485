import Synchronization
import Testing
@testable import EventStore

/// A waiting `submit` ends when its task is cancelled (the HTTP server cancels its handlers once
/// its shutdown grace is over), whatever becomes of the batch; it waited for the commit's end,
/// up to `--commit-timeout`, holding the server's shutdown past its bound.
@Suite("Group commit: a cancelled wait", .timeLimit(.minutes(1)))
struct SubmitCancellationTests {
    @Test func aCancelledWaitEndsAtOnceAndTheBatchsLaterOutcomeIsDropped() async throws {
        let appender = HeldAppender()
        let waiting = Task { try await appender.submit(PreparedBatch(EventFactory.items(2))) }
        try await appender.waitUntilHolding(1)

        waiting.cancel()

        await #expect(throws: CancellationError.self) { try await waiting.value }
        // The commit ends later: its outcome has no one to go to, and resumes nothing twice.
        appender.completeAll(.success(AppendResult(outcomes: [])))
    }

    @Test func aWaitCancelledBeforeItBeginsQueuesNothing() async throws {
        let appender = HeldAppender()
        let (gate, opening) = AsyncStream<Void>.makeStream()
        let waiting = Task {
            for await _ in gate {}
            return try await appender.submit(PreparedBatch(EventFactory.items(1)))
        }
        waiting.cancel()
        opening.finish()

        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(appender.held == 0)
    }

    @Test func anUncancelledWaitGetsTheOutcome() async throws {
        let appender = HeldAppender()
        let waiting = Task { try await appender.submit(PreparedBatch(EventFactory.items(3))) }
        try await appender.waitUntilHolding(1)

        appender.completeAll(.success(AppendResult(outcomes: [])))

        #expect(try await waiting.value.outcomes.isEmpty)
    }
}

/// Holds every batch submitted until the test completes them.
private final class HeldAppender: BatchAppending {
    private let completions = Mutex<[@Sendable (Result<AppendResult, Error>) -> Void]>([])
    var isFull: Bool { false }
    var held: Int { completions.withLock { $0.count } }

    func submit(_ batch: PreparedBatch, complete: @escaping @Sendable (Result<AppendResult, Error>) -> Void) {
        completions.withLock { $0.append(complete) }
    }

    func completeAll(_ result: Result<AppendResult, Error>) {
        let all = completions.withLock { completions in
            defer { completions = [] }
            return completions
        }
        for complete in all { complete(result) }
    }

    func waitUntilHolding(_ count: Int) async throws {
        while held < count { try await Task.sleep(for: .milliseconds(1)) }
    }
}
