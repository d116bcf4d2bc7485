import Foundation
import Glibc
import HTTPServer

/// A deliberately small HTTP/1.1 client over a blocking socket, so tests can send anything:
/// malformed, slow or oversized requests. Run it through `offPool` from async code.
public final class RawHTTPClient {
    public enum Failure: Error, Equatable {
        case connect(errno: Int32)
        case send(errno: Int32)
        case closed
        case timedOut
        case malformed(String)
    }

    public struct Response: Sendable {
        public var status: Int
        public var headers: HTTPHeaders
        public var body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    private let fd: Int32
    private var buffer: [UInt8] = []

    public init(port: Int, receiveTimeout seconds: Int = 10) throws {
        // `fd` is set only once connected: a class whose init throws after setting every stored
        // property is deinitialized, and a second close(2) here could close a descriptor another
        // thread (a server under test, in this process) has been given since.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure.connect(errno: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 {
            let error = errno
            Glibc.close(fd)
            throw Failure.connect(errno: error)
        }
        self.fd = fd
    }

    deinit {
        Glibc.close(fd)
    }

    public func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written < 0 { throw Failure.send(errno: errno) }
            offset += written
        }
    }

    /// Shuts the sending side down (a FIN to the server), as `nc -N` or some proxies do after a
    /// complete request; the client can still read.
    public func finishSending() {
        _ = shutdown(fd, Int32(SHUT_WR))
    }

    /// Sends `request` (head and body) in full before reading anything, as clients that do not
    /// wait for `100-continue` do, then reads the answer and waits for the server to close.
    public func sendWholeThenRead(_ request: [UInt8]) throws -> (Response, closed: Bool) {
        try send(request)
        let response = try readResponse()
        return (response, waitForClose())
    }

    /// Sends a request with `Content-Length` (when there is a body) and reads the response.
    public func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws -> Response {
        try sendRequest(method, target, headers: headers, body: body)
        return try readResponse()
    }

    /// Sends a request with `Content-Length` (when there is a body); `readResponse()` reads the answer.
    public func sendRequest(_ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []) throws {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try send(Array(head.utf8) + body)
    }

    public func readResponse() throws -> Response {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw Failure.malformed(statusLine)
        }
        var headers = HTTPHeaders()
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { throw Failure.malformed(line) }
            headers.add(String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var body: [UInt8] = []
        if let length = headers["Content-Length"].flatMap({ Int($0) }) {
            body = try readBytes(length)
        } else if headers["Transfer-Encoding"]?.lowercased() == "chunked" {
            while true {
                let size = try readLine()
                guard let count = Int(size, radix: 16) else { throw Failure.malformed(size) }
                if count == 0 {
                    _ = try readLine()
                    break
                }
                body += try readBytes(count)
                _ = try readLine()
            }
        }
        return Response(status: status, headers: headers, body: body)
    }

    /// True when the server closes the connection (or resets it) within the receive timeout.
    public func waitForClose() -> Bool {
        while true {
            do { try fill() } catch let failure as Failure { return failure != .timedOut } catch { return true }
        }
    }

    private func readLine() throws -> String {
        while true {
            if let end = buffer.firstIndex(of: 0x0A) {
                var line = Array(buffer[..<end])
                buffer.removeSubrange(...end)
                if line.last == 0x0D { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            try fill()
        }
    }

    private func readBytes(_ count: Int) throws -> [UInt8] {
        while buffer.count < count { try fill() }
        defer { buffer.removeSubrange(..<count) }
        return Array(buffer[..<count])
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let received = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if received > 0 {
            buffer += chunk[..<received]
        } else if received == 0 {
            throw Failure.closed
        } else if errno == EAGAIN || errno == EWOULDBLOCK {
            throw Failure.timedOut
        } else {
            throw Failure.closed
        }
    }
}

/// Runs blocking client work on its own thread, keeping the cooperative pool (which the server's
/// responders need) free.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try work() })
        }
        thread.start()
    }
}
