import Runtime
import Synchronization
import Testing

@Suite("Operations with a time limit")
struct TimeLimitTests {
    struct Refused: Error, Equatable {}

    @Test func anOperationWithinTheLimitGivesItsValue() async throws {
        #expect(try await withTimeLimit(.seconds(60)) { 42 } == 42)
    }

    @Test func anErrorOfTheOperationIsThrown() async {
        await #expect(throws: Refused.self) {
            _ = try await withTimeLimit(.seconds(60)) { () async throws -> Int in throw Refused() }
        }
    }

    /// An operation that would never end by itself: past the limit it is cancelled, and the
    /// caller gets nil once the operation has seen the cancellation and ended.
    @Test(.timeLimit(.minutes(1)))
    func pastTheLimitTheOperationIsCancelledAndAwaited() async throws {
        let ended = Mutex(false)
        let value = try await withTimeLimit(.milliseconds(20)) { () async throws -> Int in
            defer { ended.withLock { $0 = true } }
            while !Task.isCancelled { await Task.yield() }
            return 1
        }
        #expect(value == nil)
        #expect(ended.withLock { $0 })
    }
}
