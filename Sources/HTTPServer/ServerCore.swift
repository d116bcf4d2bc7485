import CMicroHTTPD
import Glibc
import JSONText
import Synchronization

/// A request ready for the responder, travelling from a daemon thread into `HTTPServer.run()`.
struct Job: Sendable {
    let context: RequestContext
    let request: HTTPRequest
}

/// The state libmicrohttpd's callbacks reach through their `cls` pointer.
///
/// Owned by ``Daemon``, which passes it retained to libmicrohttpd and releases it after the last
/// daemon stopped. Immutable apart from `state`, which is mutex-protected.
final class ServerCore: Sendable {
    struct Limits: Sendable {
        var maxBodyBytes: Int
        var maxHeaderBytes: Int
        var keepAlive: Bool
        /// The daemons wait with epoll, edge-triggered (see ``requestCompleted(requestSlot:termination:)``).
        var edgeTriggered = false
    }

    private struct Connection {
        let fd: Int32
        let remoteAddress: String
        /// When the connection became ready for its next request; nil while one is being handled.
        var waitingSince: ContinuousClock.Instant?
        /// The request handed to a responder, if any.
        var dispatched: RequestContext?
        var timedOut = false
        /// Answered before its request was read in full: closed lingeringly (see ``LingeringCloser``).
        var refusedEarly = false
    }

    private struct State {
        var connections: [UInt: Connection] = [:]
        var statistics = HTTPServer.Statistics()
        var refusingWork = false
        var dispatchedCount = 0
    }

    let limits: Limits
    let log: (@Sendable (String) -> Void)?
    /// libmicrohttpd's own messages, as it wrote them.
    let daemonLog: (@Sendable (String) -> Void)?
    /// Offered each request first, on the daemon thread (`respondInline`); what it declines becomes a job.
    private let responder: any HTTPResponder
    private let jobs: AsyncStream<Job>.Continuation
    let lingerer: LingeringCloser
    /// Handed to each request (see ``RequestContext/resumePending``); nil but in a test.
    private let beforeResuming: (@Sendable () -> Void)?
    private let state = Mutex(State())
    /// Kept apart from `state`: counted on every inline request, which otherwise takes no lock here.
    private let takenInline = Atomic(0)
    /// Read on every accepted connection (the daemons' accept policy) and every response.
    private let draining = Atomic(false)

    init(limits: Limits, log: (@Sendable (String) -> Void)?, daemonLog: (@Sendable (String) -> Void)?, responder: any HTTPResponder,
         jobs: AsyncStream<Job>.Continuation, lingerer: LingeringCloser, beforeResuming: (@Sendable () -> Void)?) {
        self.limits = limits
        self.log = log
        self.daemonLog = daemonLog
        self.responder = responder
        self.jobs = jobs
        self.lingerer = lingerer
        self.beforeResuming = beforeResuming
    }

    static func from(_ cls: UnsafeMutableRawPointer?) -> ServerCore {
        Unmanaged<ServerCore>.fromOpaque(cls!).takeUnretainedValue()
    }

    // MARK: Queries for the server

    var statistics: HTTPServer.Statistics {
        var statistics = state.withLock { $0.statistics }
        statistics.requestsTakenInline = takenInline.load(ordering: .relaxed)
        statistics.connectionsLingering = lingerer.count
        return statistics
    }
    var inFlight: Int { state.withLock { $0.statistics.requestsInFlight } }
    var dispatchedCount: Int { state.withLock { $0.dispatchedCount } }
    /// Requests whose connection waits suspended for the responder's answer (a test waits for one).
    var suspendedCount: Int {
        // Phases are read outside the server's lock: a request's lock is never taken inside it.
        let dispatched = state.withLock { $0.connections.values.compactMap(\.dispatched) }
        return dispatched.count { context in
            guard case .suspended = context.phase else { return false }
            return true
        }
    }

    /// From now on responses carry `Connection: close` and new connections are closed unserved.
    func beginDraining() {
        draining.store(true, ordering: .releasing)
    }

    /// False while draining: a daemon that still accepts (epoll; see ``Daemon/quiesce()``) closes
    /// the connection before reading anything from it.
    var acceptsConnections: Bool { !draining.load(ordering: .acquiring) }

    /// Stops handing requests to responders; returns the requests that are still with one.
    func refuseNewWork() -> [RequestContext] {
        state.withLock { state in
            state.refusingWork = true
            return state.connections.values.compactMap(\.dispatched)
        }
    }

    func finishJobs() {
        jobs.finish()
    }

    /// Shuts down connections that have waited longer than `timeout` for a complete request.
    func cutOffSlowRequests(olderThan timeout: Duration) {
        let now = ContinuousClock.now
        state.withLock { state in
            for (key, connection) in state.connections {
                guard !connection.timedOut, let since = connection.waitingSince, now - since > timeout else { continue }
                // Holding the lock keeps the descriptor open: the connection-closed notification,
                // which precedes close(2), needs the same lock.
                _ = shutdown(connection.fd, Int32(SHUT_RDWR))
                state.connections[key]?.timedOut = true
                state.statistics.requestsTimedOut += 1
            }
        }
    }

    // MARK: libmicrohttpd callbacks (daemon threads)

    func connectionStarted(_ connection: ConnectionHandle) {
        let fd = CMicroHTTPD_connection_fd(connection.pointer)
        let address = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer -> String in
            guard CMicroHTTPD_connection_address(connection.pointer, buffer.baseAddress, buffer.count) == 0 else {
                return ""
            }
            return String(cString: buffer.baseAddress!)
        }
        state.withLock { state in
            state.connections[connection.key] = Connection(fd: fd, remoteAddress: address, waitingSince: .now)
            state.statistics.connectionsAccepted += 1
            state.statistics.connectionsOpen += 1
        }
    }

    /// Called before libmicrohttpd closes the socket: a client that may still be sending gets a
    /// lingering close instead of a reset (a duplicate of the descriptor keeps the socket open).
    func connectionClosed(_ connection: ConnectionHandle) {
        let closed = state.withLock { state -> Connection? in
            guard let closed = state.connections.removeValue(forKey: connection.key) else { return nil }
            state.statistics.connectionsOpen -= 1
            // Closed between the request's hand-off and its suspension: nothing will queue it.
            if closed.dispatched != nil { state.dispatchedCount -= 1 }
            return closed
        }
        guard let closed, !closed.timedOut, closed.fd >= 0 else { return }
        if closed.refusedEarly || Self.hasUnreadBytes(closed.fd) {
            let duplicate = dup(closed.fd)
            if duplicate >= 0 { lingerer.adopt(duplicate) }
        }
    }

    /// Whether bytes the server never read wait on the socket (closing it now would reset it).
    private static func hasUnreadBytes(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    /// Whether the next thing to read is the client's end of stream.
    private static func peerFinishedSending(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 0
    }

    func access(
        connection: ConnectionHandle,
        url: UnsafePointer<CChar>?,
        method: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?,
        uploadSize: UnsafeMutablePointer<Int>,
        requestSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let raw = requestSlot.pointee else {
            return startRequest(connection: connection, url: url, method: method, requestSlot: requestSlot)
        }
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            let bytes = UnsafeRawBufferPointer(start: uploadData, count: uploadSize.pointee)
            uploadSize.pointee = 0
            let limit = limits.maxBodyBytes
            _ = context.appendBody(bytes, limit: limit, rejection: HTTPProblem.payloadTooLarge(limit: limit).response)
            return .YES
        }
        switch context.phase {
        case .receiving:
            return dispatch(context)
        case .rejected(let response):
            // A body that went over the limit as it came (chunked, or compressed): the server's own refusal.
            responder.didRefuse(context.head, with: response)
            return queue(response, for: context)
        case .ready(let response):
            return queue(response, for: context)
        case .dispatching:
            return suspend(context)
        case .suspended, .answered:
            return .YES
        }
    }

    func requestCompleted(requestSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>, termination: MHD_RequestTerminationCode) {
        guard let raw = requestSlot.pointee else { return }
        requestSlot.pointee = nil
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
        let fd = state.withLock { state -> Int32? in
            state.statistics.requestsInFlight -= 1
            state.statistics.requestsCompleted += 1
            state.connections[context.connection.key]?.waitingSince = .now
            return state.connections[context.connection.key]?.fd
        }
        // A client that half-closed sends no further request. With epoll, libmicrohttpd may never
        // read its end of stream: it arrived with the request, and a short read cleared the
        // "readable" mark that only a new edge would set again; the connection would then idle until
        // its timeout while the client waits for the close. Shut it down now that it is answered.
        if limits.edgeTriggered, termination == .REQUEST_TERMINATED_COMPLETED_OK, let fd, fd >= 0,
           Self.peerFinishedSending(fd) {
            _ = shutdown(fd, Int32(SHUT_RDWR))
        }
        guard let log else { return }
        let milliseconds = (ContinuousClock.now - context.started) / .microseconds(1) / 1000
        let outcome = termination == .REQUEST_TERMINATED_COMPLETED_OK ? "ok" : "aborted"
        log(
            "http.request method=\(LogValue.render(context.method.rawValue)) path=\(LogValue.render(context.rawPath))"
                + " status=\(context.answeredStatus ?? 0) duration.ms=\(LogValue.milliseconds(milliseconds)) outcome=\(outcome)")
    }

    // MARK: Request phases

    private func startRequest(
        connection: ConnectionHandle,
        url: UnsafePointer<CChar>?,
        method: UnsafePointer<CChar>?,
        requestSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        let remoteAddress = state.withLock { state -> String in
            state.statistics.requestsInFlight += 1
            return state.connections[connection.key]?.remoteAddress ?? ""
        }
        let (headers, headerBytes) = Self.values(of: connection, kind: .HEADER_KIND)
        let queryItems = Self.queryItems(of: connection)
        let rawPath = url.map { String(cString: $0) } ?? "/"
        let head = HTTPRequest(
            method: HTTPMethod(rawValue: method.map { String(cString: $0) } ?? ""),
            path: PercentDecoding.decodePath(rawPath),
            queryItems: queryItems ?? [],
            headers: HTTPHeaders(headers),
            remoteAddress: remoteAddress)
        let context = RequestContext(connection: connection, head: head, rawPath: rawPath, beforeResuming: beforeResuming)
        requestSlot.pointee = Unmanaged.passRetained(context).toOpaque()

        // Refusals are queued at once: libmicrohttpd then sends them without reading the body and
        // closes the connection (lingeringly, so that a client sending its body reads them).
        if headerBytes > limits.maxHeaderBytes {
            return refuseItself(HTTPProblem.headersTooLarge(limit: limits.maxHeaderBytes).response, for: context)
        }
        if queryItems == nil {
            return refuseItself(HTTPProblem.malformedQuery.response, for: context)
        }
        // Unsigned, as libmicrohttpd reads it: a length of 2^63 or more is not "none declared".
        let declaredLength = head.headers["Content-Length"].flatMap { UInt64($0) }
        if let declaredLength, declaredLength > UInt64(clamping: limits.maxBodyBytes) {
            return refuseItself(HTTPProblem.payloadTooLarge(limit: limits.maxBodyBytes).response, for: context)
        }
        let declared = declaredLength.map { Int($0) }
        if (declared ?? 0) > 0 || head.headers["Transfer-Encoding"] != nil,
           let refusal = responder.refusalBeforeBody(to: head) {
            return refuseEarly(refusal, for: context)
        }
        if let declared { context.reserveBody(declared) }
        return .YES
    }

    /// A refusal of the server's own, before the body: the responder is told, for its counts.
    private func refuseItself(_ response: HTTPResponse, for context: RequestContext) -> MHD_Result {
        responder.didRefuse(context.head, with: response)
        return refuseEarly(response, for: context)
    }

    private func refuseEarly(_ response: HTTPResponse, for context: RequestContext) -> MHD_Result {
        state.withLock { $0.connections[context.connection.key]?.refusedEarly = true }
        return queue(response, for: context)
    }

    /// The full request is in: hand it to a responder. The connection is suspended only on the
    /// next access-handler call (see ``suspend(_:)``), unless the response is there at once.
    ///
    /// Why not now: libmicrohttpd (0.9.75) keeps a suspended connection's wait state as it was,
    /// here "read", and reads again right after resuming it, before queueing the response; a
    /// client that half-closed after its request then reads as gone and the answer is never
    /// sent. From the next call on the state is "blocked" (request complete, no response), under
    /// which it never reads.
    private func dispatch(_ context: RequestContext) -> MHD_Result {
        // Until the connection is suspended, finish() only records the response, and the
        // access-handler calls that follow queue it. Set before the request counts as dispatched:
        // a shutdown that answers it in between must find it taking answers (finish() ignores a
        // request still receiving, and the connection would stay suspended under a stopped daemon).
        context.setPhase(.dispatching)
        let accepted = state.withLock { state -> Bool in
            guard !state.refusingWork else { return false }
            state.connections[context.connection.key]?.waitingSince = nil
            state.connections[context.connection.key]?.dispatched = context
            state.dispatchedCount += 1
            return true
        }
        guard accepted else {
            responder.didRefuse(context.head, with: HTTPProblem.shutdownResponse)
            return queue(HTTPProblem.shutdownResponse, for: context)
        }
        let request = context.takeRequest()
        let reply = HTTPReply { [context] response in context.finish(with: response) }
        // A reply already sent means taken, even if the responder then said otherwise.
        if responder.respondInline(to: request, reply: reply) || reply.wasSent {
            takenInline.add(1, ordering: .relaxed)
        } else if case .terminated = jobs.yield(Job(context: context, request: request)) {
            context.finish(with: HTTPProblem.shutdownResponse)
        }
        if case .ready(let response) = context.phase {
            return queue(response, for: context)
        }
        return .YES
    }

    /// Suspends a dispatched connection until its response arrives (then `finish` resumes it).
    private func suspend(_ context: RequestContext) -> MHD_Result {
        MHD_suspend_connection(context.connection.pointer)
        if context.markSuspended() {
            MHD_resume_connection(context.connection.pointer)
        }
        return .YES
    }

    private func queue(_ response: HTTPResponse, for context: RequestContext) -> MHD_Result {
        state.withLock { state in
            if state.connections[context.connection.key]?.dispatched != nil {
                state.connections[context.connection.key]?.dispatched = nil
                state.dispatchedCount -= 1
            }
        }
        context.setPhase(.answered(status: response.status))

        var block: [UInt8] = []
        var count = 0
        for field in response.headers where Self.isSendable(field) {
            block.append(contentsOf: field.name.utf8)
            block.append(0)
            block.append(contentsOf: field.value.utf8)
            block.append(0)
            count += 1
        }
        if !acceptsConnections || !limits.keepAlive {
            block.append(contentsOf: "Connection\u{0}close\u{0}".utf8)
            count += 1
        }
        return block.withUnsafeBufferPointer { headers in
            response.body.withUnsafeBytes { body in
                headers.withMemoryRebound(to: CChar.self) { headers in
                    CMicroHTTPD_queue_response(
                        context.connection.pointer, UInt32(clamping: response.status),
                        headers.baseAddress, count, body.baseAddress, body.count)
                }
            }
        }
    }

    /// Header fields libmicrohttpd manages itself, or that could split the header block, are dropped.
    private static func isSendable(_ field: HTTPHeaders.Field) -> Bool {
        let forbidden: (UInt8) -> Bool = { $0 == 0 || $0 == 0x0A || $0 == 0x0D }
        guard !field.name.isEmpty, !field.name.utf8.contains(where: forbidden),
            !field.value.utf8.contains(where: forbidden)
        else { return false }
        return !HTTPHeaders.equalIgnoringCase(field.name, "Content-Length")
            && !HTTPHeaders.equalIgnoringCase(field.name, "Transfer-Encoding")
    }

    /// The query's items, decoded (libmicrohttpd leaves them escaped: `CMicroHTTPD_keep_escaped`);
    /// nil when one is not percent-encoded UTF-8 (`PercentDecoding.decodeStrictly`).
    private static func queryItems(of connection: ConnectionHandle) -> [HTTPRequest.QueryItem]? {
        struct Collector {
            var items: [HTTPRequest.QueryItem]? = []
        }
        var collector = Collector()
        withUnsafeMutablePointer(to: &collector) { pointer in
            _ = MHD_get_connection_values(
                connection.pointer, .GET_ARGUMENT_KIND,
                { cls, _, key, value in
                    let collector = cls!.assumingMemoryBound(to: Collector.self)
                    func decoded(_ text: UnsafePointer<CChar>?) -> String? {
                        guard let text else { return "" }
                        return PercentDecoding.decodeStrictly(UnsafeRawBufferPointer(start: text, count: strlen(text)), plusAsSpace: true)
                    }
                    guard let name = decoded(key), let text = decoded(value) else {
                        collector.pointee.items = nil
                        return .NO
                    }
                    collector.pointee.items?.append(HTTPRequest.QueryItem(name: name, value: text))
                    return .YES
                }, pointer)
        }
        return collector.items
    }

    /// Key/value pairs of one kind (the headers) and their total size in bytes.
    private static func values(of connection: ConnectionHandle, kind: MHD_ValueKind) -> ([(String, String)], Int) {
        struct Collector {
            var pairs: [(String, String)] = []
            var bytes = 0
        }
        var collector = Collector()
        withUnsafeMutablePointer(to: &collector) { pointer in
            _ = MHD_get_connection_values(
                connection.pointer, kind,
                { cls, _, key, value in
                    let collector = cls!.assumingMemoryBound(to: Collector.self)
                    let name = key.map { String(cString: $0) } ?? ""
                    let text = value.map { String(cString: $0) } ?? ""
                    collector.pointee.pairs.append((name, text))
                    // "Name: value\r\n"
                    collector.pointee.bytes += name.utf8.count + text.utf8.count + 4
                    return .YES
                }, pointer)
        }
        return (collector.pairs, collector.bytes)
    }
}

/// Formatting of logfmt values.
enum LogValue {
    static func render(_ text: String) -> String {
        let plain = !text.isEmpty && text.unicodeScalars.allSatisfy {
            $0.value > 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "=" && $0 != "\\"
        }
        return plain ? text : JSONString.render(text)
    }

    static func milliseconds(_ value: Double) -> String {
        let hundredths = (value * 100).rounded()
        let whole = Int(hundredths) / 100
        let fraction = Int(hundredths) % 100
        return "\(whole).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
