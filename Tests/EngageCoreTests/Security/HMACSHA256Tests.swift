import Digest
import Testing
@testable import EngageCore

/// RFC 4231 test cases 1, 2, 3, 6 and 7, and device id hashing checked against Python's `hmac`.
@Suite struct HMACSHA256Tests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test(arguments: [
        ([UInt8](repeating: 0x0b, count: 20), bytes("Hi There"),
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (bytes("Jefe"), bytes("what do ya want for nothing?"),
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        ([UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        ([UInt8](repeating: 0xaa, count: 131), bytes("Test Using Larger Than Block-Size Key - Hash Key First"),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        ([UInt8](repeating: 0xaa, count: 131),
         bytes("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm."),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
        // A key of exactly one block, and an empty message (Python's hmac).
        ([UInt8](repeating: 0x6b, count: 64), [], "83026a325aaee70e36cfe607536aa1054104ad1077c36134810d4ccded1ccd3b"),
    ] as [([UInt8], [UInt8], String)])
    func rfc4231(key: [UInt8], message: [UInt8], expected: String) {
        let hmac = HMACSHA256(key: key)
        #expect(Hex.encode(hmac.authenticationCode(for: message)) == expected)
        // The precomputed key state is reusable.
        #expect(Hex.encode(hmac.authenticationCode(for: message)) == expected)
    }

    @Test func deviceIDsBecomeTheirKeyedHash() throws {
        let hasher = try DeviceIDHasher(salt: "engage-test-salt-0123456789")
        #expect(hasher.hash("device-1") == "af9394c683442e7655e99684def8162eebdebe1454fd1e260951eed54e95dfa3")
        #expect(hasher.hash("device-1") == hasher.hash("device-1"))
        #expect(hasher.hash("device-2") != hasher.hash("device-1"))
        let other = try DeviceIDHasher(salt: "another-salt-0123456789")
        #expect(other.hash("device-1") != hasher.hash("device-1"))
    }

    @Test func shortSaltsAreRefusedWithoutRepeatingThem() {
        let error = #expect(throws: DeviceIDSaltError.tooShort(minimum: 16)) { try DeviceIDHasher(salt: "fifteen-bytes!!") }
        #expect(error?.description == "the device id salt must be at least 16 bytes; use a long random secret")
        #expect(error?.description.contains("fifteen") == false)
        #expect((try? DeviceIDHasher(salt: "sixteen-bytes!!!")) != nil)
    }
}
