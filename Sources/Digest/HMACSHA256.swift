/// HMAC-SHA256 (RFC 2104, FIPS 198-1): a keyed hash that cannot be recomputed, or reversed by
/// trying likely inputs, without the key.
///
/// The key's inner and outer blocks are absorbed once, at `init`; each message then costs two
/// SHA-256 runs over the message and one digest.
public struct HMACSHA256: Sendable {
    private let inner: SHA256
    private let outer: SHA256

    public init(key: [UInt8]) {
        let blockSize = 64
        var block = key.count > blockSize ? SHA256.hash(key) : key
        block += [UInt8](repeating: 0, count: blockSize - block.count)
        var inner = SHA256()
        inner.update(block.map { $0 ^ 0x36 })
        var outer = SHA256()
        outer.update(block.map { $0 ^ 0x5c })
        self.inner = inner
        self.outer = outer
    }

    public func authenticationCode(for message: [UInt8]) -> [UInt8] {
        var inner = self.inner
        inner.update(message)
        var outer = self.outer
        outer.update(inner.finalize())
        return outer.finalize()
    }
}
