import Synchronization

/// A fixed number of connections, each with its own thread, shared by many tasks.
///
/// `withConnection` waits for a free connection, runs the blocking body on that connection's
/// thread and hands the connection back. Connections open lazily and reopen after the server
/// restarts; a connection found broken (or left inside a transaction) is closed, never handed out again.
///
/// Cancelling the waiting task interrupts the body's blocking call (the connection is closed,
/// see `ConnectionInterrupter`) and throws `CancellationError`: a service asked to stop while a
/// query waits for a server that stopped answering, or a commit waits for a standby, stops at
/// once instead of when the server answers.
public final class ConnectionPool: Sendable {
    public let configuration: PostgresConfiguration
    public let size: Int
    private let slots: [Slot]
    private let state: Mutex<State>

    private struct State {
        var free: [Int]
        var waiters: [(id: Int, continuation: CheckedContinuation<Int, Error>)] = []
        var nextWaiterID = 0
        var closed = false
    }

    public struct Statistics: Sendable, Equatable {
        public var size: Int
        public var inUse: Int
        public var waiting: Int

        public init(size: Int, inUse: Int, waiting: Int) {
            self.size = size
            self.inUse = inUse
            self.waiting = waiting
        }
    }

    public init(configuration: PostgresConfiguration, size: Int) {
        precondition(size > 0, "a pool needs at least one connection")
        self.configuration = configuration
        self.size = size
        slots = (0..<size).map { Slot(index: $0, configuration: configuration) }
        state = Mutex(State(free: Array((0..<size).reversed())))
    }

    public var statistics: Statistics {
        state.withLock { Statistics(size: size, inUse: size - $0.free.count, waiting: $0.waiters.count) }
    }

    /// Runs `body` with a healthy connection on that connection's own thread. Cancellation
    /// interrupts it unless `interruptingOnCancel` is false (then only a wait for a free
    /// connection is cancelled, and a body that started runs to its end or its limit). With
    /// `answerLimit`, a body still running that long after it got its connection is interrupted
    /// (whether or not cancellation interrupts it), and this throws `DatabaseDidNotAnswer`: the
    /// wait for a free connection does not count, since a busy pool is not a database that does
    /// not answer. With `silenceLimit`, a body is interrupted (`DatabaseDidNotAnswer` too) once the
    /// server has sent no result for that long: long work of many statements (a replay's chunks)
    /// runs on while each is answered, and still ends when a frozen host stops answering.
    public func withConnection<T: Sendable>(interruptingOnCancel: Bool = true, answerLimit: Duration? = nil,
                                            silenceLimit: Duration? = nil,
                                            _ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        let index = try await acquire()
        defer { release(index) }
        let slot = slots[index]
        // Without a limit nothing can interrupt the body: no unit to bracket.
        guard interruptingOnCancel || answerLimit != nil || silenceLimit != nil else {
            return try await slot.thread.run { try slot.use(body) }
        }
        // Cancelled while the slot was handed over: a healthy connection is not shut for a body
        // that never ran.
        if interruptingOnCancel { try Task.checkCancellation() }
        let unit = slot.interrupter.begin(at: .now)
        defer { slot.interrupter.end(unit) }
        let interrupter = slot.interrupter
        let watchdog = answerLimit.map { limit in
            Task {
                try await Task.sleep(for: limit)
                interrupter.interrupt(unit, because: .timedOut(limit))
            }
        }
        defer { watchdog?.cancel() }
        let listener = silenceLimit.map { limit in
            Task {
                while true {
                    try await Task.sleep(for: limit / 4)
                    if interrupter.interruptIfSilent(unit, longerThan: limit, now: .now) { return }
                }
            }
        }
        defer { listener?.cancel() }
        do {
            // A body that cancellation must not interrupt still gets no more than its limit: a
            // database that does not answer is no reason to let it run on.
            guard interruptingOnCancel else { return try await slot.thread.run { try slot.use(body) } }
            return try await withTaskCancellationHandler {
                try await slot.thread.run { try slot.use(body) }
            } onCancel: {
                slot.interrupter.interrupt(unit, because: .cancelled)
            }
        } catch let interrupted as PostgresError where interrupted.kind == .interrupted {
            switch slot.interrupter.reason {
            case .timedOut(let limit)?, .silent(let limit)?: throw DatabaseDidNotAnswer(limit: limit)
            default: break
            }
            throw CancellationError()
        }
    }

    /// Runs `body` inside a transaction (READ COMMITTED unless told otherwise), bounded by
    /// `answerLimit` as `withConnection` is.
    public func withTransaction<T: Sendable>(
        isolation: TransactionIsolation = .readCommitted,
        answerLimit: Duration? = nil,
        silenceLimit: Duration? = nil,
        _ body: @escaping @Sendable (Connection) throws -> T
    ) async throws -> T {
        try await withConnection(answerLimit: answerLimit, silenceLimit: silenceLimit) { connection in
            try connection.transaction(isolation: isolation, body)
        }
    }

    /// Closes every connection and ends their threads; waiting and later callers get `.poolClosed`.
    public func close() async {
        let waiters = state.withLock { state -> [CheckedContinuation<Int, Error>] in
            state.closed = true
            defer { state.waiters.removeAll() }
            return state.waiters.map(\.continuation)
        }
        for waiter in waiters { waiter.resume(throwing: Self.closedError) }
        for slot in slots {
            slot.thread.submit { slot.disconnect() }
            slot.thread.stop()
        }
    }

    private static let closedError = PostgresError(kind: .poolClosed, message: "the connection pool is closed")

    private func acquire() async throws -> Int {
        try Task.checkCancellation()
        enum Immediate { case slot(Int), wait(Int), closed, cancelled }
        let waiterID = state.withLock { state -> Int in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, Error>) in
                let immediate = state.withLock { state -> Immediate in
                    if state.closed { return .closed }
                    if let index = state.free.popLast() { return .slot(index) }
                    // Cancelled before the waiter is listed, the handler found nothing to remove:
                    // listed now, it would wait for a connection however long that takes.
                    if Task.isCancelled { return .cancelled }
                    state.waiters.append((waiterID, continuation))
                    return .wait(waiterID)
                }
                switch immediate {
                case .slot(let index): continuation.resume(returning: index)
                case .closed: continuation.resume(throwing: Self.closedError)
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .wait: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Int, Error>? in
                guard let position = state.waiters.firstIndex(where: { $0.id == waiterID }) else { return nil }
                return state.waiters.remove(at: position).continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    private func release(_ index: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Int, Error>? in
            if !state.waiters.isEmpty { return state.waiters.removeFirst().continuation }
            state.free.append(index)
            return nil
        }
        // Hand the connection straight to the next waiter, first come first served.
        waiter?.resume(returning: index)
    }
}

/// One pooled connection and the thread that owns it.
///
/// `@unchecked Sendable`: `connection` is only touched from `thread`.
private final class Slot: @unchecked Sendable {
    let thread: WorkerThread
    private let connection: ReusableConnection
    /// Usable from any thread (see `ConnectionInterrupter`).
    var interrupter: ConnectionInterrupter { connection.interrupter }

    init(index: Int, configuration: PostgresConfiguration) {
        connection = ReusableConnection(configuration: configuration)
        thread = WorkerThread(name: "postgres-\(index)")
    }

    /// Runs on `thread`.
    func use<T>(_ body: (Connection) throws -> T) throws -> T {
        try connection.use(body)
    }

    /// Runs on `thread`.
    func disconnect() {
        connection.close()
    }
}
