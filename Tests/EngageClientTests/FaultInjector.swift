import Foundation
import Glibc

/// FAULT INJECTOR, not a stand-in for the engage server: a loopback socket that answers every
/// request with one canned reply (or never answers), and records when each request came. The
/// tests use it only for what a healthy engage server will not do on demand: answer 503 with
/// `Retry-After`, hang, or serve `/v1/assignments`, which the server does not have yet. Every
/// success path runs against the real server (`TestServer`).
final class FaultInjector: @unchecked Sendable {
    enum Reply: Sendable {
        case respond(status: Int, headers: [(String, String)], body: String)
        /// Reads the request and then holds the connection open without a word.
        case hang
    }

    struct Hit: Sendable {
        var at: ContinuousClock.Instant
        var method: String
        var target: String
        var headers: [String: String]
        var body: [UInt8]
    }

    let port: Int
    private let listener: Int32
    // Guards `hits`, `held` and `stopped`, shared by the accepting and the serving threads.
    private let lock = NSLock()
    private var recorded: [Hit] = []
    private var held: [Int32] = []
    private var stopped = false
    private let reply: Reply

    init(reply: Reply) throws {
        self.reply = reply
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
        guard bound == 0, listen(descriptor, 16) == 0 else {
            Glibc.close(descriptor)
            throw InjectorError.socket(errno)
        }
        listener = descriptor
        port = Self.localPort(of: descriptor)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    enum InjectorError: Error { case socket(Int32) }

    var hits: [Hit] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Closes the listening socket and every held connection.
    func stop() {
        lock.lock()
        stopped = true
        let connections = held
        held = []
        lock.unlock()
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
        for connection in connections {
            shutdown(connection, Int32(SHUT_RDWR))
            Glibc.close(connection)
        }
    }

    /// A loopback port with nothing listening on it: connections are refused at once.
    static func closedPort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw InjectorError.socket(errno) }
        return localPort(of: descriptor)
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
                lock.lock()
                let done = stopped
                lock.unlock()
                if done { return }
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
            lock.lock()
            if stopped {
                lock.unlock()
                Glibc.close(connection)
            } else {
                held.append(connection)
                lock.unlock()
            }
        case let .respond(status, headers, body):
            var head = "HTTP/1.1 \(status) Fault\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            let bytes = Array((head + "\r\n" + body).utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if written <= 0 { break }
                offset += written
            }
            shutdown(connection, Int32(SHUT_WR))
            Glibc.close(connection)
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
