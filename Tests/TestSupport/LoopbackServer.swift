import EngageAPI

/// An engage server for tests on a loopback port of its own, and the requests tests send it.
public protocol LoopbackServer: Sendable {
    var port: Int { get }
    init(configure: (inout EngageServer.Configuration) -> Void) throws
    /// Stops the server gracefully and waits for it.
    func stop() async
}

extension LoopbackServer {
    /// Runs `body` against a server of its own, then stops the server, whether `body` throws or not.
    public static func withServer<T: Sendable>(
        configure: (inout EngageServer.Configuration) -> Void = { _ in },
        _ body: (Self) async throws -> T
    ) async throws -> T {
        let server = try Self(configure: configure)
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    /// Sends one request on a fresh connection, off the cooperative pool.
    public func request(_ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []) async throws -> RawHTTPClient.Response {
        let port = self.port
        return try await offPool {
            let client = try RawHTTPClient(port: port)
            return try client.request(method, target, headers: headers, body: body)
        }
    }

    /// POSTs events with a key.
    public func post(_ body: String, key: String, contentType: String = "application/json", extraHeaders: [(String, String)] = []) async throws -> RawHTTPClient.Response {
        try await request("POST", "/v1/events",
                          headers: [("Authorization", "Bearer \(key)"), ("Content-Type", contentType)] + extraHeaders,
                          body: Array(body.utf8))
    }
}
