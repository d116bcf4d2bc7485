import Dispatch
import Foundation
import Synchronization

/// A thread of our own that runs submitted jobs one at a time. libpq calls block, so they run
/// here instead of on Swift's cooperative pool.
final class WorkerThread: Sendable {
    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        var stopping = false
    }

    private let queue = Mutex(Queue())
    private let wakeUp = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(name: String) {
        let thread = Thread { [self] in loop() }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    func submit(_ job: @escaping @Sendable () -> Void) {
        queue.withLock { $0.jobs.append(job) }
        wakeUp.signal()
    }

    /// Runs `body` on this thread and suspends the caller until it returns.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            submit {
                do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
            }
        }
    }

    /// Lets queued jobs finish, then ends the thread and waits for it.
    func stop() {
        queue.withLock { $0.stopping = true }
        wakeUp.signal()
        finished.wait()
    }

    private func loop() {
        while true {
            wakeUp.wait()
            let (job, stop): ((@Sendable () -> Void)?, Bool) = queue.withLock { queue in
                if !queue.jobs.isEmpty { return (queue.jobs.removeFirst(), false) }
                return (nil, queue.stopping)
            }
            if let job { job() }
            if stop { break }
        }
        finished.signal()
    }
}
