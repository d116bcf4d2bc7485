import Foundation
import Glibc

/// FAULT INJECTOR, not a stand-in for the engage server: a loopback socket that answers every
/// request with one canned reply (or never answers), and records each request. The tests use it
/// only for what a healthy engage server will not do on demand (answer 503 with `Retry-After`,
/// hang, redirect, answer like a captive portal) and as the media host (a CDN) the Notification
/// Service Extension downloads from. Every success path of sending runs against the real server
/// (`TestServer`).
public final class FaultInjector: @unchecked Sendable {
    public enum Reply: Sendable {
        case respond(status: Int, headers: [(String, String)], body: String)
        /// A binary body; without `declareLength` there is no Content-Length and the body ends
        /// when the connection closes.
        case bytes(status: Int, headers: [(String, String)], body: [UInt8], declareLength: Bool)
        /// Sends the head (with `declaredLength` as Content-Length) and `body`, then holds the
        /// connection open without another byte.
        case stall(status: Int, headers: [(String, String)], body: [UInt8], declaredLength: Int)
        /// Reads the request and then holds the connection open without a word.
        case hang
        /// The reply `answer` makes of the request (a proxy that changes some requests, say).
        case answer(@Sendable (Hit) -> (status: Int, headers: [(String, String)], body: String))
    }

    public struct Hit: Sendable {
        public var at: ContinuousClock.Instant
        public var method: String
        public var target: String
        public var headers: [String: String]
        public var body: [UInt8]
    }

    public let port: Int
    private let listener: Int32
    // Guards `hits`, `held` and `stopped`, shared by the accepting and the serving threads.
    private let lock = NSLock()
    private var recorded: [Hit] = []
    private var held: [Int32] = []
    private var stopped = false
    private let reply: Reply

    public init(reply: Reply) throws {
        self.reply = reply
        let descriptor = try Self.loopbackSocket()
        guard listen(descriptor, 16) == 0 else {
            Glibc.close(descriptor)
            throw InjectorError.socket(errno)
        }
        listener = descriptor
        port = Self.localPort(of: descriptor)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    public enum InjectorError: Error { case socket(Int32) }

    public var hits: [Hit] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    public var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Closes the listening socket (its accepting thread does, once woken) and every held
    /// connection. Idempotent.
    public func stop() {
        lock.lock()
        let first = !stopped
        stopped = true
        let connections = held
        held = []
        lock.unlock()
        guard first else { return }
        // Closing here could race the accepting thread into accept(2) on a descriptor number
        // another thread of this process has been given since; a shut listener fails accept at once.
        shutdown(listener, Int32(SHUT_RDWR))
        for connection in connections {
            shutdown(connection, Int32(SHUT_RDWR))
            Glibc.close(connection)
        }
    }

    /// A loopback port with nothing listening on it: connections are refused at once.
    public static func closedPort() throws -> Int {
        let descriptor = try loopbackSocket()
        defer { Glibc.close(descriptor) }
        return localPort(of: descriptor)
    }

    /// A TCP socket bound to a free port of 127.0.0.1.
    private static func loopbackSocket() throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            let failure = errno
            Glibc.close(descriptor)
            throw InjectorError.socket(failure)
        }
        return descriptor
    }

    private static func localPort(of descriptor: Int32) -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                let failure = errno
                lock.lock()
                let done = stopped
                lock.unlock()
                if done {
                    Glibc.close(listener)
                    return
                }
                // Out of descriptors (or memory): the pending connection stays queued, so accepting
                // again at once would fail again; give the tests' other sockets time to close.
                if failure == EMFILE || failure == ENFILE || failure == ENOBUFS || failure == ENOMEM {
                    usleep(10_000)
                }
                continue
            }
            let thread = Thread { [self] in serve(connection) }
            thread.start()
        }
    }

    private func serve(_ connection: Int32) {
        guard let hit = readRequest(connection) else {
            Glibc.close(connection)
            return
        }
        lock.lock()
        recorded.append(hit)
        lock.unlock()
        switch reply {
        case .hang:
            hold(connection)
        case let .respond(status, headers, body):
            write(head(status, headers + [("Content-Length", String(body.utf8.count))]) + Array(body.utf8), to: connection)
            finishConnection(connection)
        case let .answer(make):
            let (status, headers, body) = make(hit)
            write(head(status, headers + [("Content-Length", String(body.utf8.count))]) + Array(body.utf8), to: connection)
            finishConnection(connection)
        case let .bytes(status, headers, body, declareLength):
            let length = declareLength ? [("Content-Length", String(body.count))] : []
            write(head(status, headers + length) + body, to: connection)
            finishConnection(connection)
        case let .stall(status, headers, body, declaredLength):
            write(head(status, headers + [("Content-Length", String(declaredLength))]) + body, to: connection)
            hold(connection)
        }
    }

    private func head(_ status: Int, _ headers: [(String, String)]) -> [UInt8] {
        var head = "HTTP/1.1 \(status) Fault\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        return Array((head + "\r\n").utf8)
    }

    private func write(_ bytes: [UInt8], to connection: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { break }
            offset += written
        }
    }

    private func finishConnection(_ connection: Int32) {
        shutdown(connection, Int32(SHUT_WR))
        Glibc.close(connection)
    }

    private func hold(_ connection: Int32) {
        lock.lock()
        if stopped {
            lock.unlock()
            Glibc.close(connection)
        } else {
            held.append(connection)
            lock.unlock()
        }
    }

    private func readRequest(_ connection: Int32) -> Hit? {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        var contentLength = 0
        while true {
            if headEnd == nil, let end = Self.find(separator, in: buffer) {
                headEnd = end
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                for line in head.split(separator: "\r\n").dropFirst() {
                    let parts = line.split(separator: ":", maxSplits: 1)
                    if parts.count == 2, parts[0].lowercased() == "content-length" {
                        contentLength = Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
                    }
                }
            }
            if let end = headEnd, buffer.count >= end + 4 + contentLength { break }
            let received = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if received <= 0 { return nil }
            buffer += chunk[..<received]
        }
        let end = headEnd!
        let lines = String(decoding: buffer[..<end], as: UTF8.self).split(separator: "\r\n")
        let requestLine = lines.first?.split(separator: " ") ?? []
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return Hit(at: .now, method: requestLine.first.map(String.init) ?? "",
                   target: requestLine.count > 1 ? String(requestLine[1]) : "",
                   headers: headers, body: Array(buffer[(end + 4)...]))
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<start + needle.count].elementsEqual(needle) {
            return start
        }
        return nil
    }
}
