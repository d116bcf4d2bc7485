/// Where the answer to a request taken by ``HTTPResponder/respondInline(to:reply:)`` goes.
///
/// Call ``send(_:)`` exactly once, from any thread; later calls are ignored. A request never
/// answered is answered with 503 when the server shuts down.
public struct HTTPReply: Sendable {
    private let deliver: @Sendable (HTTPResponse) -> Void

    public init(_ deliver: @escaping @Sendable (HTTPResponse) -> Void) {
        self.deliver = deliver
    }

    public func send(_ response: HTTPResponse) {
        deliver(response)
    }
}
