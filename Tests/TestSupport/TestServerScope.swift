import EngageAPI

extension TestServer {
    /// Runs `body` against a server of its own, then stops the server, whether `body` throws or not.
    public static func withServer<T: Sendable>(
        configure: (inout EngageServer.Configuration) -> Void = { _ in },
        _ body: (TestServer) async throws -> T
    ) async throws -> T {
        let server = try TestServer(configure: configure)
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }
}
