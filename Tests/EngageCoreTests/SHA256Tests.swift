import Digest
import Testing

@Suite struct SHA256Tests {
    /// FIPS 180-2 appendix B vectors.
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func knownDigests(input: String, digest: String) {
        #expect(SHA256.hexDigest(input) == digest)
    }

    @Test func millionAsInPiecesOfAnySize() {
        var hasher = SHA256()
        var fed = 0
        var piece = 1
        while fed < 1_000_000 {
            let size = min(piece, 1_000_000 - fed)
            hasher.update([UInt8](repeating: UInt8(ascii: "a"), count: size))
            fed += size
            piece = piece * 7 % 997 + 1
        }
        let hex = hasher.finalize().map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        #expect(hex == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}
