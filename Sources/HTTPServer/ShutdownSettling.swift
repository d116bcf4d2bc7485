/// How long a shutdown waits, once it has answered every request still with a responder, before
/// it stops the daemons.
///
/// Up to 2 s for those answers to be queued and sent. Beyond that, for as long as a responder is
/// between taking an answer and resuming its suspended connection (``RequestContext/resumePending``;
/// a thread that lost the CPU between the two), and then up to 1 s more for that answer:
/// libmicrohttpd aborts the process when a daemon is stopped with a connection still suspended.
/// The unbounded part covers only code already running on some thread, so it ends as soon as that
/// thread runs again.
struct ShutdownSettling {
    static let bound = Duration.seconds(2)
    static let afterResuming = Duration.seconds(1)

    private let unfinished: [RequestContext]
    private var deadline: ContinuousClock.Instant

    init(unfinished: [RequestContext], now: ContinuousClock.Instant) {
        self.unfinished = unfinished
        deadline = now + Self.bound
    }

    /// Whether the shutdown should wait longer at `now`.
    mutating func keepsWaiting(for core: ServerCore, now: ContinuousClock.Instant) -> Bool {
        guard core.dispatchedCount > 0 || (!unfinished.isEmpty && core.inFlight > 0) else { return false }
        if unfinished.contains(where: \.resumePending) {
            deadline = max(deadline, now + Self.afterResuming)
            return true
        }
        return now < deadline
    }
}
