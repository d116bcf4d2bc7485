import Synchronization

/// Where the answer to a request taken by ``HTTPResponder/respondInline(to:reply:)`` goes.
///
/// Call ``send(_:)`` once, from any thread; later calls do nothing (the guard is shared by
/// copies). A request never answered is answered with 503 when the server shuts down.
public struct HTTPReply: Sendable {
    private final class Once: Sendable {
        let sent = Atomic(false)
    }

    private let deliver: @Sendable (HTTPResponse) -> Void
    private let once = Once()

    public init(_ deliver: @escaping @Sendable (HTTPResponse) -> Void) {
        self.deliver = deliver
    }

    public func send(_ response: HTTPResponse) {
        guard once.sent.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        deliver(response)
    }

    /// Whether ``send(_:)`` was called.
    public var wasSent: Bool { once.sent.load(ordering: .acquiring) }
}
