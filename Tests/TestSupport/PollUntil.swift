/// Polls `condition` until it holds: how a test waits for a state (a committer parked, a lease
/// renewed) instead of sleeping and hoping it was reached. There is no deadline of its own: the
/// calling test's `.timeLimit` catches a state that never comes, so a busy machine only makes the
/// test slower, never wrong.
public func pollUntil(every interval: Duration = .milliseconds(2), _ condition: () async throws -> Bool) async throws {
    while try await !condition() { try await Task.sleep(for: interval) }
}
