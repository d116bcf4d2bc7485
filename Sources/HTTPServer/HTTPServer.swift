import Glibc
import Synchronization

/// Why the server could not start or run; `code` is stable.
public enum HTTPServerError: Error, Equatable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    case startFailed(reason: String)
    case alreadyStarted

    public var code: String {
        switch self {
        case .startFailed: "http.start_failed"
        case .alreadyStarted: "http.already_started"
        }
    }

    public var description: String {
        switch self {
        case .startFailed: "the HTTP server could not start"
        case .alreadyStarted: "run() was called more than once"
        }
    }

    public var debugDescription: String {
        switch self {
        case .startFailed(let reason): "the HTTP server could not start: \(reason)"
        case .alreadyStarted: description
        }
    }
}

/// An HTTP/1.1 server on libmicrohttpd.
///
/// It listens from `init` on (so `port` is known at once). Daemon threads read requests; each
/// complete request's connection is suspended, the request is offered to the responder's
/// `respondInline` on the daemon thread, and what that declines becomes a child task of `run()`,
/// so daemon threads never wait for a responder. Requests reaching a task are answered once
/// ``run()`` runs.
public final class HTTPServer: Sendable {
    public let configuration: Configuration
    /// The bound port (the ephemeral one when the configuration asked for port 0).
    public let port: Int

    private enum Lifecycle {
        case ready, running, finished
    }

    private let responder: any HTTPResponder
    let core: ServerCore
    private let daemon: Daemon
    private let jobs: AsyncStream<Job>
    private let shutdownRequests: AsyncStream<Never>
    private let shutdownContinuation: AsyncStream<Never>.Continuation
    private let lifecycle = Mutex(Lifecycle.ready)

    /// `log` gets one logfmt line per completed request and per libmicrohttpd message (for tests
    /// and debugging: it formats a line per request); `daemonLog` gets only libmicrohttpd's own
    /// messages (a refused connection, a failed accept), costs nothing per request and is meant
    /// for production logs.
    public convenience init(
        configuration: Configuration = Configuration(),
        responder: some HTTPResponder,
        log: (@Sendable (String) -> Void)? = nil,
        daemonLog: (@Sendable (String) -> Void)? = nil
    ) throws(HTTPServerError) {
        try self.init(configuration: configuration, responder: responder, log: log, daemonLog: daemonLog, beforeResuming: nil)
    }

    /// `beforeResuming` runs in a responder's thread right before it resumes a suspended
    /// connection: a test stalls it there to show that a shutdown waits for the resumption.
    init(
        configuration: Configuration,
        responder: some HTTPResponder,
        log: (@Sendable (String) -> Void)?,
        daemonLog: (@Sendable (String) -> Void)?,
        beforeResuming: (@Sendable () -> Void)?
    ) throws(HTTPServerError) {
        self.configuration = configuration
        self.responder = responder
        let (jobs, jobsContinuation) = AsyncStream.makeStream(of: Job.self)
        self.jobs = jobs
        (shutdownRequests, shutdownContinuation) = AsyncStream.makeStream(of: Never.self)
        let lingerer = LingeringCloser(limits: .init(
            time: configuration.lingeringClose.time, bytes: configuration.lingeringClose.bytes,
            sockets: max(1, configuration.maxConnections)))
        core = ServerCore(
            limits: ServerCore.Limits(
                maxBodyBytes: configuration.maxBodyBytes,
                maxHeaderBytes: configuration.maxHeaderBytes,
                keepAlive: configuration.keepAlive,
                edgeTriggered: configuration.eventLoop == .epoll),
            log: log,
            daemonLog: daemonLog,
            responder: responder,
            jobs: jobsContinuation,
            lingerer: lingerer,
            beforeResuming: beforeResuming)
        daemon = try Daemon(configuration: configuration, core: core)
        port = daemon.port
    }

    deinit {
        // Only reached when run() never ran (run() holds self): answer what was dispatched, stop.
        let unfinished = core.refuseNewWork()
        for context in unfinished {
            context.finish(with: HTTPProblem.shutdownResponse)
        }
        var settling = ShutdownSettling(unfinished: unfinished, now: .now)
        while settling.keepsWaiting(for: core, now: .now) {
            Self.pause()
        }
        daemon.stop()
        core.lingerer.stop()
        core.finishJobs()
    }

    public var statistics: Statistics { core.statistics }

    /// Serves until the calling task is cancelled, then shuts down gracefully: stops accepting
    /// connections, lets requests in flight finish for up to `shutdownGrace` (responders see
    /// cancellation only after that), answers any still running with 503, stops the daemons and
    /// returns. Throws ``HTTPServerError/alreadyStarted`` when called a second time.
    public func run() async throws {
        try lifecycle.withLock { (state: inout Lifecycle) throws(HTTPServerError) in
            guard case .ready = state else { throw .alreadyStarted }
            state = .running
        }
        defer { lifecycle.withLock { $0 = .finished } }
        // Handlers must outlive the cancellation of run() by up to the grace period, so their task
        // group lives in a task that run() creates and awaits (never abandons); cancelling run()
        // starts the drain, and the drain cancels the group once it is over.
        let serving = Task { await self.serve() }
        await withTaskCancellationHandler {
            await serving.value
        } onCancel: {
            shutdownContinuation.finish()
        }
    }

    private func serve() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.cutOffSlowRequests() }
            group.addTask { await self.drainWhenAsked() }
            for await job in jobs {
                group.addTask {
                    let response = await self.responder.respond(to: job.request)
                    job.context.finish(with: response)
                }
            }
            group.cancelAll()
        }
    }

    private func cutOffSlowRequests() async {
        let timeout = configuration.requestTimeout
        let tick = max(Duration.milliseconds(20), min(.seconds(1), timeout / 10))
        while !Task.isCancelled {
            try? await Task.sleep(for: tick)
            core.cutOffSlowRequests(olderThan: timeout)
        }
    }

    private func drainWhenAsked() async {
        for await _ in shutdownRequests {}
        core.beginDraining()
        daemon.quiesce()
        let clock = ContinuousClock()
        let deadline = clock.now + configuration.shutdownGrace
        while core.inFlight > 0 && clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        let unfinished = core.refuseNewWork()
        for context in unfinished {
            context.finish(with: HTTPProblem.shutdownResponse)
        }
        var settling = ShutdownSettling(unfinished: unfinished, now: clock.now)
        while settling.keepsWaiting(for: core, now: clock.now) {
            try? await Task.sleep(for: .milliseconds(5))
        }
        daemon.stop()
        core.lingerer.stop()
        core.finishJobs()
    }

    private static func pause() {
        var interval = timespec(tv_sec: 0, tv_nsec: 5_000_000)
        _ = nanosleep(&interval, nil)
    }
}

extension HTTPServer {
    public struct Configuration: Sendable {
        /// How daemon threads are arranged.
        public enum Threading: Sendable, Equatable {
            /// One daemon whose internal thread pool has this many threads.
            case threadPool(Int)
            /// This many single-threaded daemons bound to one port with SO_REUSEPORT; the
            /// kernel spreads new connections across them.
            case daemonsSharingPort(Int)

            /// Threads serving connections, in either arrangement.
            public var threads: Int {
                switch self {
                case .threadPool(let count), .daemonsSharingPort(let count): count
                }
            }
        }

        /// How each daemon thread waits for its connections.
        public enum EventLoop: String, Sendable, Equatable, CaseIterable {
            /// poll(2): suspending and resuming a connection (every request answered later, from a
            /// task or an ingest committer) costs no `epoll_ctl`, but each wait hands the kernel
            /// every connection of the thread, idle or not.
            case poll
            /// epoll(7): a wait costs the same however many connections sit idle, but suspending
            /// and resuming a connection costs an `epoll_ctl` call each (on top of the wake-up
            /// both loops need to resume).
            case epoll
        }

        /// A numeric IPv4 or IPv6 address.
        public var host = "127.0.0.1"
        /// 0 picks an ephemeral port (see ``HTTPServer/port``).
        public var port = 0
        public var threading = Threading.threadPool(2)
        public var eventLoop = EventLoop.poll
        /// HTTPS with these credentials (TLS 1.2 and 1.3 only); nil serves plain HTTP.
        public var tls: TLSCredentials?
        /// Open connections across all daemon threads.
        public var maxConnections = 1024
        /// Open connections per client address; 0 means no limit.
        public var maxConnectionsPerAddress = 0
        /// Listen backlog; 0 means the system default.
        public var listenBacklog = 0
        /// How long a connection may be idle (no bytes either way) before it is closed.
        public var connectionTimeout = Duration.seconds(15)
        /// How long a connection may take to deliver a complete request, counted from when it
        /// became ready for one (accepted, or previous response sent); then it is closed. This also
        /// bounds keep-alive idling, and cuts off clients that trickle bytes to defeat
        /// `connectionTimeout`. Checked about ten times per period, at most once per second.
        public var requestTimeout = Duration.seconds(30)
        /// Larger bodies get 413: at once when declared by Content-Length, otherwise (chunked)
        /// once the body ended (libmicrohttpd answers only before or after a body); the excess
        /// is discarded, never buffered.
        public var maxBodyBytes = 1 << 20
        /// Larger request headers get 431 (sum of "name: value" lines); far larger ones are cut
        /// off by libmicrohttpd's per-connection memory limit.
        public var maxHeaderBytes = 16 * 1024
        /// HTTP/1.1 persistent connections; when false every response carries `Connection: close`.
        public var keepAlive = true
        /// How long `run()` lets requests in flight finish after cancellation.
        public var shutdownGrace = Duration.seconds(10)
        /// How a connection answered before its request was read in full (413, 431, a refusal
        /// before the body) is closed; see ``LingeringClose``.
        public var lingeringClose = LingeringClose()

        public init() {}
    }

    /// After an early answer the server shuts its sending side and reads and discards what the
    /// client still sends, so that a client writing its whole body before reading (no
    /// `Expect: 100-continue`) reads the answer instead of a connection reset; the socket is closed
    /// when the client closes, or after `time` or `bytes`, whichever comes first. At most
    /// `maxConnections` sockets linger at once; past that one is closed at once. Stopping the
    /// server closes them all.
    public struct LingeringClose: Sendable, Equatable {
        public var time: Duration
        public var bytes: Int

        public init(time: Duration = .seconds(10), bytes: Int = 16 << 20) {
            self.time = time
            self.bytes = bytes
        }
    }

    /// Counters for metrics; a consistent snapshot.
    public struct Statistics: Sendable, Equatable {
        public var connectionsAccepted = 0
        public var connectionsOpen = 0
        public var requestsInFlight = 0
        public var requestsCompleted = 0
        /// Connections closed because a request was not complete within `requestTimeout`.
        public var requestsTimedOut = 0
        /// Requests the responder took on the daemon thread (`respondInline`) instead of in a task.
        public var requestsTakenInline = 0
        /// Closed connections whose client may still be sending, read and discarded until it stops.
        public var connectionsLingering = 0

        public init() {}
    }
}
