import Foundation

/// A TLS client in a python3 process (the ssl module, OpenSSL underneath), driven line by line:
/// it keeps one connection open across requests, so a test can show that a connection outlives
/// a certificate reload, and it can offer protocol versions curl no longer offers (TLS 1.1).
/// Blocking: call it through `offPool`.
public final class TLSTestClient: @unchecked Sendable {
    /// What the server showed on the current connection.
    public struct Handshake: Equatable, Sendable {
        /// SHA-256 of the certificate the server presented, lowercase hex.
        public let certificate: String
        /// `TLSv1.3`, `TLSv1.2`.
        public let version: String
        /// Connections this client has made so far; the same number means the same connection.
        public let connection: Int
    }

    public struct Refused: Error, CustomStringConvertible {
        public let description: String
    }

    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffered: [UInt8] = []

    static let script = #"""
        import hashlib, socket, ssl, sys
        host, port, cafile, low, high = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
        versions = {"1.1": ssl.TLSVersion.TLSv1_1, "1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}
        context = ssl.create_default_context(cafile=cafile)
        if low != "-":
            context.minimum_version = versions[low]
        if high != "-":
            context.maximum_version = versions[high]
        if low == "1.1":
            context.set_ciphers("DEFAULT:@SECLEVEL=0")  # lets OpenSSL 3 offer TLS 1.1 at all
        connection, reader, count = None, None, 0

        def describe():
            return "%s %s %d" % (hashlib.sha256(connection.getpeercert(True)).hexdigest(), connection.version(), count)

        def connect():
            global connection, reader, count
            if connection is not None:
                connection.close()
            raw = socket.create_connection((host, port), timeout=20)
            connection = context.wrap_socket(raw, server_hostname="localhost")
            reader = connection.makefile("rb")
            count += 1

        for line in sys.stdin:
            command = line.split()
            try:
                if command[0] == "connect":
                    connect()
                    print("connected", describe(), flush=True)
                elif command[0] == "get":
                    if connection is None:
                        connect()
                    connection.sendall(("GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n" % command[1]).encode())
                    status = int(reader.readline().split()[1])
                    length = 0
                    while True:
                        header = reader.readline().strip()
                        if not header:
                            break
                        name, _, value = header.decode().partition(":")
                        if name.lower() == "content-length":
                            length = int(value)
                    reader.read(length)
                    print("answer", status, describe(), flush=True)
            except Exception as error:
                print("refused", type(error).__name__, str(error).replace("\n", " "), flush=True)
        """#

    /// `minimumVersion`/`maximumVersion`: "1.1", "1.2" or "1.3"; nil leaves OpenSSL's defaults.
    public init(port: Int, caFile: String, minimumVersion: String? = nil, maximumVersion: String? = nil) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-W", "ignore", "-c", Self.script, "127.0.0.1", String(port), caFile, minimumVersion ?? "-", maximumVersion ?? "-"]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
    }

    deinit {
        close()
    }

    /// Opens a new connection (closing the previous one) and completes the handshake.
    public func connect() throws -> Handshake {
        let words = try command("connect")
        guard words.first == "connected" else { throw Refused(description: words.joined(separator: " ")) }
        return try handshake(words.dropFirst())
    }

    /// `GET path` on the current connection (a new one if none is open): the status and what the
    /// connection's handshake showed.
    public func get(_ path: String) throws -> (status: Int, handshake: Handshake) {
        let words = try command("get \(path)")
        guard words.first == "answer", words.count == 5, let status = Int(words[1]) else {
            throw Refused(description: words.joined(separator: " "))
        }
        return (status, try handshake(words.dropFirst(2)))
    }

    public func close() {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    private func handshake(_ words: ArraySlice<String>) throws -> Handshake {
        let fields = Array(words)
        guard fields.count == 3, let connection = Int(fields[2]) else { throw Refused(description: "unexpected: \(fields)") }
        return Handshake(certificate: fields[0], version: fields[1], connection: connection)
    }

    private func command(_ line: String) throws -> [String] {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let text = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return text.split(separator: " ").map(String.init)
            }
            let data = output.fileHandleForReading.availableData
            guard !data.isEmpty else { throw Refused(description: "the python3 client ended: \(String(decoding: buffered, as: UTF8.self))") }
            buffered += data
        }
    }
}
