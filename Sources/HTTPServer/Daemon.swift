import CMicroHTTPD
import Synchronization

/// Owns the running libmicrohttpd daemons (one with a thread pool, or several sharing a port) and
/// the retain on ``ServerCore`` that their callbacks use; ``stop()`` (or deinit) releases both.
final class Daemon: Sendable {
    /// A `struct CMicroHTTPD_Daemon *`; only used under `handles`' lock.
    private struct Handle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    let port: Int
    private let handles: Mutex<[Handle]>
    private let core: ServerCore
    /// Kept as long as the daemons: their handshakes read it.
    private let tls: TLSCredentials?

    init(configuration: HTTPServer.Configuration, core: ServerCore) throws(HTTPServerError) {
        self.core = core
        tls = configuration.tls
        let context = Unmanaged.passRetained(core)
        var started: [Handle] = []
        var port = configuration.port
        let daemonCount: Int
        let poolSize: Int
        switch configuration.threading {
        case .threadPool(let threads):
            daemonCount = 1
            poolSize = max(1, threads)
        case .daemonsSharingPort(let daemons):
            daemonCount = max(1, daemons)
            poolSize = 1
        }
        for _ in 0..<daemonCount {
            var options = CMicroHTTPD_Options()
            options.port = UInt16(clamping: port)
            options.thread_pool_size = UInt32(poolSize)
            options.use_poll = configuration.eventLoop == .poll ? 1 : 0
            options.reuse_port = daemonCount > 1 ? 1 : 0
            options.connection_limit = UInt32(clamping: configuration.maxConnections / daemonCount)
            options.connection_timeout_seconds = UInt32(clamping: Self.seconds(configuration.connectionTimeout))
            // libmicrohttpd keeps the request line and headers in the connection's memory pool,
            // next to the read buffer and the response headers: allow for both on top of the cap.
            options.connection_memory_limit = configuration.maxHeaderBytes + 8 * 1024
            options.per_ip_connection_limit = UInt32(clamping: configuration.maxConnectionsPerAddress)
            options.listen_backlog = UInt32(clamping: configuration.listenBacklog)
            options.keep_url_escaped = 1
            options.accept_policy_cls = context.toOpaque()
            options.accept_policy = { cls, _, _ in
                ServerCore.from(cls).acceptsConnections ? .YES : .NO
            }
            options.access_handler_cls = context.toOpaque()
            options.access_handler = { cls, connection, url, method, _, uploadData, uploadSize, requestSlot in
                ServerCore.from(cls).access(
                    connection: ConnectionHandle(pointer: connection!), url: url, method: method,
                    uploadData: uploadData, uploadSize: uploadSize!, requestSlot: requestSlot!)
            }
            options.request_completed_cls = context.toOpaque()
            options.request_completed = { cls, _, requestSlot, termination in
                ServerCore.from(cls).requestCompleted(requestSlot: requestSlot!, termination: termination)
            }
            options.notify_connection_cls = context.toOpaque()
            options.notify_connection = { cls, connection, _, event in
                let core = ServerCore.from(cls)
                let handle = ConnectionHandle(pointer: connection!)
                if event == .CONNECTION_NOTIFY_STARTED {
                    core.connectionStarted(handle)
                } else {
                    core.connectionClosed(handle)
                }
            }
            options.log_cls = context.toOpaque()
            options.log = { cls, message in
                guard let message else { return }
                let core = ServerCore.from(cls)
                let text = String(cString: message)
                core.log?("http.daemon message=\(LogValue.render(text))")
                core.daemonLog?(text)
            }
            var error = [CChar](repeating: 0, count: 256)
            options.tls = configuration.tls?.holder.pointer
            let handle = configuration.host.withCString { host in
                TLSCredentials.priorities.withCString { priorities in
                    options.host = host
                    options.tls_priorities = priorities
                    return CMicroHTTPD_start_daemon(&options, &error, error.count)
                }
            }
            guard let handle else {
                for started in started { CMicroHTTPD_stop_daemon(started.pointer) }
                context.release()
                let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                throw .startFailed(reason: reason)
            }
            started.append(Handle(pointer: handle))
            port = Int(CMicroHTTPD_daemon_port(handle))
        }
        self.port = port
        self.handles = Mutex(started)
    }

    deinit {
        stop()
    }

    /// Stops accepting connections. A poll daemon's listener is shut, so the kernel refuses new
    /// ones; an epoll daemon cannot be quiesced safely (see CMicroHTTPD_quiesce_daemon) and keeps
    /// accepting until it stops, closing each new connection at once since
    /// ``ServerCore/beginDraining()`` turned its accept policy off.
    func quiesce() {
        handles.withLock { handles in
            for handle in handles { _ = CMicroHTTPD_quiesce_daemon(handle.pointer) }
        }
    }

    /// Stops every daemon, closing all connections. No connection may be suspended. Idempotent.
    func stop() {
        let stopped = handles.withLock { handles -> Bool in
            guard !handles.isEmpty else { return false }
            for handle in handles { CMicroHTTPD_stop_daemon(handle.pointer) }
            handles = []
            return true
        }
        if stopped {
            Unmanaged.passUnretained(core).release()
        }
    }

    private static func seconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) + (attoseconds > 0 ? 1 : 0)
    }
}
