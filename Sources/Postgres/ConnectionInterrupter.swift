import Glibc
import Synchronization

/// Lets another thread end the blocking libpq call of a unit of work (a group commit, a pooled
/// job): it shuts the connection's socket down, so that libpq's wait ends at once with the
/// connection broken, and the owner sees `PostgresError.Kind.interrupted`.
///
/// Not `PQcancel`: a cancel request needs a new connection to the server, which is exactly what
/// fails when the server is unreachable; and a cancelled wait for synchronous replication leaves
/// the transaction committed on the primary alone. With the socket shut, the server finishes or
/// abandons the statement on its own (a commit waiting for a standby stays waiting, and keeps its
/// locks, until the standby answers or synchronous replication is turned off); the client only
/// stops waiting, and never reports an outcome it did not see.
///
/// The owner brackets each unit with `begin` and `end`; an interruption reaches only the unit it
/// names (or the one running, for `interruptIfRunning`), never a later one. The socket is a
/// duplicate the `Connection` owns (libpq closes its own when the connection breaks), attached once
/// connected and detached before it is closed, under the same lock as `shutdown(2)`, so a
/// descriptor reused by someone else is never touched.
public final class ConnectionInterrupter: Sendable {
    public enum Reason: Sendable, Equatable, CustomStringConvertible {
        /// The task waiting for the work was cancelled.
        case cancelled
        /// The work took longer than this.
        case timedOut(Duration)
        /// The server sent nothing for this long (since the work began or its last answer).
        case silent(Duration)

        public var description: String {
            switch self {
            case .cancelled: "cancelled"
            case .timedOut(let limit): "took longer than \(limit)"
            case .silent(let limit): "got no answer for \(limit)"
            }
        }
    }

    private struct State {
        var socket: Int32?
        var unit: UInt64 = 0
        var started: ContinuousClock.Instant?
        /// When the running unit last received a result.
        var lastAnswer: ContinuousClock.Instant?
        var reason: Reason?
    }

    private let state = Mutex(State())

    public init() {}

    /// Starts a unit of work begun at `instant`; returns its number for `end` and `interrupt`.
    public func begin(at instant: ContinuousClock.Instant) -> UInt64 {
        state.withLock { state in
            state.unit += 1
            state.started = instant
            state.lastAnswer = nil
            state.reason = nil
            return state.unit
        }
    }

    public func end(_ unit: UInt64) {
        state.withLock { state in
            guard state.unit == unit else { return }
            state.started = nil
            state.reason = nil
        }
    }

    /// Interrupts `unit` if it is still running.
    public func interrupt(_ unit: UInt64, because reason: Reason) {
        state.withLock { state in
            guard state.unit == unit, state.started != nil, state.reason == nil else { return }
            Self.interrupt(&state, because: reason)
        }
    }

    /// Interrupts the running unit if it began more than `limit` before `now` (because it timed
    /// out, unless told another reason); true if it did.
    @discardableResult
    public func interruptIfRunning(longerThan limit: Duration, now: ContinuousClock.Instant, because reason: Reason? = nil) -> Bool {
        state.withLock { state in
            guard let started = state.started, state.reason == nil, now - started > limit else { return false }
            Self.interrupt(&state, because: reason ?? .timedOut(limit))
            return true
        }
    }

    /// Interrupts `unit` if it is still running and the server has sent no result for more than
    /// `limit` (since the unit began, or since its last result); true if it did. Long work made
    /// of many statements (a replay's chunks) keeps going while the server answers each.
    @discardableResult
    public func interruptIfSilent(_ unit: UInt64, longerThan limit: Duration, now: ContinuousClock.Instant) -> Bool {
        state.withLock { state in
            guard state.unit == unit, let started = state.started, state.reason == nil,
                  now - (state.lastAnswer ?? started) > limit else { return false }
            Self.interrupt(&state, because: .silent(limit))
            return true
        }
    }

    /// Called by the connection as each result arrives: the server is answering.
    func answered(at instant: ContinuousClock.Instant) {
        state.withLock { state in
            if state.started != nil { state.lastAnswer = instant }
        }
    }

    /// Why the running unit was interrupted, if it was.
    public var reason: Reason? { state.withLock { $0.reason } }

    private static func interrupt(_ state: inout State, because reason: Reason) {
        state.reason = reason
        if let socket = state.socket { _ = shutdown(socket, Int32(SHUT_RDWR)) }
    }

    /// Called by a connection once connected. A unit interrupted while the connection was being
    /// made (which nothing interrupts) does not shut it: the connection is sound, and its owner
    /// keeps it for the next unit and starts nothing more in this one (`ReusableConnection.use`).
    /// Shut, every unit needing a new connection that takes longer than the interrupting limit
    /// (a frozen host first in a multi-host URL costs its whole connect timeout) would lose it,
    /// and the next unit would spend the same time again, for ever.
    func attach(socket: Int32) {
        state.withLock { state in
            state.socket = socket
        }
    }

    /// Called by a connection before it closes its socket.
    func detach(socket: Int32) {
        state.withLock { state in
            if state.socket == socket { state.socket = nil }
        }
    }
}
