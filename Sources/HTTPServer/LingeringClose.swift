import Glibc
import Synchronization

/// Closes sockets whose client may still be sending, the way nginx's lingering close does.
///
/// A server that answers before it read the whole request (413, 431, a 401 before the body) and
/// then closes with unread bytes in its receive buffer makes the kernel send a reset instead of a
/// FIN; a client still writing its body (URLSession never waits for `100-continue`) then fails
/// on its next write and never reads the answer already on its side. Here the answer has been
/// sent: the write side is shut (FIN after the answer) and whatever the client still sends is read
/// and discarded until it closes, or until `time` or `bytes` runs out; only then is the socket
/// closed. One thread of its own waits on all lingering sockets with poll(2); it starts with the
/// first socket.
final class LingeringCloser: Sendable {
    struct Limits: Sendable, Equatable {
        /// How long one socket may linger.
        var time: Duration
        /// How much one socket may be sent before it is closed anyway.
        var bytes: Int
        /// Sockets lingering at once; past that, a socket is closed at once.
        var sockets: Int
    }

    private struct Lingering {
        let fd: Int32
        let deadline: ContinuousClock.Instant
        var received = 0
    }

    private struct State {
        var adopted: [Int32] = []
        var count = 0
        var thread: pthread_t?
        var stopping = false
    }

    let limits: Limits
    /// A pipe whose read end the thread polls: written to when a socket is adopted, and on stop.
    private let wakeUp: (read: Int32, write: Int32)
    private let state = Mutex(State())

    init(limits: Limits) {
        self.limits = limits
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            }
        }
        wakeUp = (ends[0], ends[1])
    }

    deinit {
        stop()
        if wakeUp.read >= 0 {
            close(wakeUp.read)
            close(wakeUp.write)
        }
    }

    /// Sockets lingering now.
    var count: Int { state.withLock { $0.count } }

    /// Takes ownership of `fd` (a descriptor of its own, e.g. from dup(2)): it lingers, or is
    /// closed at once when too many sockets already linger, the closer has stopped, or its
    /// thread cannot start.
    func adopt(_ fd: Int32) {
        let taken = state.withLock { state -> Bool in
            guard !state.stopping, state.count < limits.sockets, wakeUp.read >= 0 else { return false }
            if state.thread == nil {
                state.thread = startThread()
                guard state.thread != nil else { return false }
            }
            state.adopted.append(fd)
            state.count += 1
            return true
        }
        if taken {
            signal()
        } else {
            close(fd)
        }
    }

    /// Closes every lingering socket and ends the thread. Idempotent.
    func stop() {
        let thread = state.withLock { state -> pthread_t? in
            state.stopping = true
            defer { state.thread = nil }
            return state.thread
        }
        guard let thread else { return }
        signal()
        pthread_join(thread, nil)
    }

    private func signal() {
        var byte: UInt8 = 1
        _ = write(wakeUp.write, &byte, 1)
    }

    private func startThread() -> pthread_t? {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self)
        let started = pthread_create(&thread, nil, { raw in
            let closer = Unmanaged<LingeringCloser>.fromOpaque(raw!).takeRetainedValue()
            closer.loop()
            return nil
        }, context.toOpaque())
        guard started == 0 else {
            context.release()
            return nil
        }
        return thread
    }

    private func loop() {
        var sockets: [Lingering] = []
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let (adopted, stopping) = state.withLock { state in
                defer { state.adopted = [] }
                return (state.adopted, state.stopping)
            }
            let now = ContinuousClock.now
            for fd in adopted {
                // libmicrohttpd shuts the write side itself unless in turbo mode; a second shutdown is harmless.
                _ = shutdown(fd, Int32(SHUT_WR))
                sockets.append(Lingering(fd: fd, deadline: now + limits.time))
            }
            if stopping {
                for socket in sockets { close(socket.fd) }
                state.withLock { $0.count -= sockets.count }
                return
            }
            var polled = [pollfd(fd: wakeUp.read, events: Int16(POLLIN), revents: 0)]
            polled += sockets.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            let timeout = sockets.map(\.deadline).min().map { Self.milliseconds(until: $0) } ?? -1
            _ = poll(&polled, nfds_t(polled.count), timeout)
            if polled[0].revents != 0 {
                _ = scratch.withUnsafeMutableBytes { read(wakeUp.read, $0.baseAddress, $0.count) }
            }
            let after = ContinuousClock.now
            var kept: [Lingering] = []
            for (index, var socket) in sockets.enumerated() {
                var done = after >= socket.deadline
                if !done && polled[index + 1].revents != 0 {
                    done = discard(from: &socket, into: &scratch)
                }
                if done {
                    close(socket.fd)
                } else {
                    kept.append(socket)
                }
            }
            let closed = sockets.count - kept.count
            if closed > 0 { state.withLock { $0.count -= closed } }
            sockets = kept
        }
    }

    /// Reads what the client sent; true when the socket is done (closed by the client, failed, or
    /// over the byte limit).
    private func discard(from socket: inout Lingering, into scratch: inout [UInt8]) -> Bool {
        while true {
            let received = scratch.withUnsafeMutableBytes { recv(socket.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if received > 0 {
                socket.received += received
                if socket.received > limits.bytes { return true }
                continue
            }
            if received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return false }
            return true
        }
    }

    private static func milliseconds(until deadline: ContinuousClock.Instant) -> Int32 {
        let (seconds, attoseconds) = ContinuousClock.now.duration(to: deadline).components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: max(0, milliseconds))
    }
}
