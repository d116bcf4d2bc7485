/// A long-lived component of the process: an HTTP server, a projector, a scheduler.
///
/// `run()` does the work until the component is finished or its task is cancelled. Cancellation
/// is the stop request: a service that is asked to stop returns (or throws `CancellationError`)
/// promptly and leaves nothing running behind it. Work belongs in `run()` rather than in detached
/// tasks so that this request reaches it.
public protocol Service: Sendable {
    func run() async throws
}

/// A service made from a closure, for small components and tests.
///
///     let ticker = ClosureService("ticker") {
///         while !Task.isCancelled { try await Task.sleep(for: .seconds(1)) }
///     }
public struct ClosureService: Service {
    /// The name under which the service is usually registered in a `ServiceGroup`.
    public let name: String
    private let body: @Sendable () async throws -> Void

    public init(_ name: String, _ body: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.body = body
    }

    public func run() async throws {
        try await body()
    }
}
