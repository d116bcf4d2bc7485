import Synchronization

/// Bytes a trickling client has sent so far, read by the test while it sends.
public final class SentBytes: Sendable {
    public let count = Atomic(0)

    public init() {}
}
