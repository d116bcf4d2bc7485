import CMicroHTTPD
import Synchronization

/// A `struct MHD_Connection *`, made sendable so a responder task can resume its connection.
///
/// Only `MHD_resume_connection` is called through it from other threads, and only once per
/// suspension, while the connection is suspended (``RequestContext`` guarantees both); a suspended
/// connection cannot be closed or freed by libmicrohttpd.
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    /// A key for per-connection bookkeeping; valid while the connection is open.
    var key: UInt { UInt(bitPattern: Int(bitPattern: pointer)) }
}

/// Per-request state, owned by libmicrohttpd's `*con_cls` (retained on the first access-handler
/// call, released in the request-completed callback). Everything mutable sits behind a mutex because
/// the connection's daemon thread and the responder task both touch it.
final class RequestContext: Sendable {
    enum Phase {
        /// Headers seen, the body (if any) is being accumulated.
        case receiving
        /// The body went over the limit: further upload data is discarded, then `response` is sent.
        case rejected(HTTPResponse)
        /// Offered to the responder; the connection is suspended on the next access-handler call
        /// (see `ServerCore.dispatch`) unless the response is there by then.
        case dispatching
        /// The connection is suspended until a response arrives.
        case suspended
        /// A response is ready to be queued on the next access-handler call.
        case ready(HTTPResponse)
        /// A response has been queued.
        case answered(status: Int)
    }

    private struct State {
        var phase: Phase = .receiving
        var body: [UInt8] = []
        /// Set while `finish` is between taking the answer of a suspended request and resuming it.
        var resumePending = false
    }

    let connection: ConnectionHandle
    /// The request without its body (method, path, query, headers), as read before the body.
    let head: HTTPRequest
    /// The URL path exactly as received (still percent-encoded).
    let rawPath: String
    let started: ContinuousClock.Instant
    /// Runs right before a responder resumes the connection (a test stalls it there).
    private let beforeResuming: (@Sendable () -> Void)?
    private let state = Mutex(State())

    init(connection: ConnectionHandle, head: HTTPRequest, rawPath: String, beforeResuming: (@Sendable () -> Void)?) {
        self.connection = connection
        self.head = head
        self.rawPath = rawPath
        self.started = .now
        self.beforeResuming = beforeResuming
    }

    var method: HTTPMethod { head.method }

    var phase: Phase { state.withLock { $0.phase } }

    /// The status queued for this request, if any (for the request log).
    var answeredStatus: Int? {
        if case .answered(let status) = phase { return status }
        return nil
    }

    func setPhase(_ phase: Phase) {
        state.withLock { $0.phase = phase }
    }

    /// Appends upload data unless that would exceed `limit`; returns false (and switches to
    /// `.rejected`) when it would.
    func appendBody(_ bytes: UnsafeRawBufferPointer, limit: Int, rejection: @autoclosure () -> HTTPResponse) -> Bool {
        state.withLock { state in
            guard case .receiving = state.phase else { return false }
            guard state.body.count + bytes.count <= limit else {
                state.phase = .rejected(rejection())
                state.body = []
                return false
            }
            state.body.append(contentsOf: bytes)
            return true
        }
    }

    func reserveBody(_ capacity: Int) {
        state.withLock { $0.body.reserveCapacity(capacity) }
    }

    /// The complete request: the head with the accumulated body (which the context then drops).
    func takeRequest() -> HTTPRequest {
        var request = head
        request.body = state.withLock { state in
            defer { state.body = [] }
            return state.body
        }
        return request
    }

    /// Called on the daemon thread right after `MHD_suspend_connection`. Returns true when a
    /// response arrived in the meantime, in which case the caller must resume the connection itself.
    func markSuspended() -> Bool {
        state.withLock { state in
            if case .ready = state.phase { return true }
            state.phase = .suspended
            return false
        }
    }

    /// Whether a response was taken for the suspended connection but the connection is not resumed
    /// yet (see ``ShutdownSettling``).
    var resumePending: Bool { state.withLock { $0.resumePending } }

    /// Delivers the response from any thread; resumes the connection if it is suspended.
    /// Only the first response counts.
    func finish(with response: HTTPResponse) {
        let resume = state.withLock { state -> Bool in
            switch state.phase {
            case .dispatching:
                state.phase = .ready(response)
                return false
            case .suspended:
                state.phase = .ready(response)
                state.resumePending = true
                return true
            case .receiving, .rejected, .ready, .answered:
                return false
            }
        }
        if resume {
            beforeResuming?()
            MHD_resume_connection(connection.pointer)
            state.withLock { $0.resumePending = false }
        }
    }
}
