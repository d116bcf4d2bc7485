import Dispatch
import EngageCore
import Runtime
import Synchronization

/// Time that moves only when a test moves it. Sleeping tasks and waiting threads wake when an
/// `advance` passes their deadline, so a test of a timeout or a stall runs the path it names, at
/// once, however busy the machine is. `sleepers` tells the test when a component has begun to
/// wait (a state to wait for, instead of a sleep that hopes it has).
public final class ManualTime: TimeSource {
    private struct Sleeper {
        var id: Int
        var deadline: ContinuousClock.Instant
        var wake: Wake
    }

    private enum Wake {
        case task(CheckedContinuation<Void, Error>)
        case thread(DispatchSemaphore)
    }

    private struct State {
        var now: ContinuousClock.Instant
        var wallClockMicroseconds: Int64
        var sleepers: [Sleeper] = []
        var nextID = 0
    }

    private let state: Mutex<State>

    /// Starts at the system's monotonic and wall clocks, or at `wallClock`.
    public init(wallClock: Timestamp? = nil) {
        state = Mutex(State(now: .now, wallClockMicroseconds: wallClock?.microsecondsSinceEpoch ?? SystemTime().wallClockMicroseconds))
    }

    public var now: ContinuousClock.Instant { state.withLock { $0.now } }

    public var wallClockMicroseconds: Int64 { state.withLock { $0.wallClockMicroseconds } }

    /// Tasks sleeping and threads waiting on this time.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    /// Moves both clocks on and wakes every sleeper whose deadline has passed.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "monotonic time does not go back")
        let due = state.withLock { state -> [Wake] in
            state.now += duration
            state.wallClockMicroseconds += Int64(duration / .microseconds(1))
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due.map(\.wake)
        }
        for wake in due {
            switch wake {
            case .task(let continuation): continuation.resume()
            case .thread(let semaphore): semaphore.signal()
            }
        }
    }

    /// Sets the wall clock alone, as when the system's clock is set; monotonic time stays.
    public func setWallClock(_ time: Timestamp) {
        state.withLock { $0.wallClockMicroseconds = time.microsecondsSinceEpoch }
    }

    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        let id = state.withLock { state -> Int in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                let outcome = state.withLock { state -> Result<Void, Error>? in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, wake: .task(continuation)))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            if case .task(let continuation) = sleeper?.wake { continuation.resume(throwing: CancellationError()) }
        }
    }

    public func wait(for semaphore: DispatchSemaphore, until deadline: ContinuousClock.Instant) -> Bool {
        // An `advance` past the deadline signals the same semaphore and removes the sleeper: a
        // sleeper still listed after the wait was woken by someone else. When both happen, one
        // signal is left over, as with a real timed wait that races a signal.
        let id = state.withLock { state -> Int? in
            guard deadline > state.now else { return nil }
            defer { state.nextID += 1 }
            state.sleepers.append(Sleeper(id: state.nextID, deadline: deadline, wake: .thread(semaphore)))
            return state.nextID
        }
        guard let id else { return semaphore.wait(timeout: .now()) == .success }
        semaphore.wait()
        return state.withLock { state in
            guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return false }
            state.sleepers.remove(at: index)
            return true
        }
    }
}
