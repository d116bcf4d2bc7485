import Foundation

extension UUID {
    /// The namespace of engage's name-based event ids (itself a version 4 UUID, fixed forever:
    /// changing it would change every deterministic id and let old and new copies count twice).
    public static let engageEventNamespace = UUID(uuidString: "5f0c6e2a-8d1b-4c3e-9a47-1e6b2d9f8c30")!

    /// A version 5 UUID (RFC 9562 section 5.5): SHA-1 of the namespace's 16 bytes and the name's
    /// UTF-8, truncated to 128 bits with the version and variant set. The same namespace and name
    /// give the same UUID in every process, on every device and in every language.
    public static func nameBased(_ name: String, namespace: UUID) -> UUID {
        var sha1 = SHA1()
        let space = namespace.uuid
        sha1.update([space.0, space.1, space.2, space.3, space.4, space.5, space.6, space.7,
                     space.8, space.9, space.10, space.11, space.12, space.13, space.14, space.15])
        sha1.update(Array(name.utf8))
        var bytes = Array(sha1.finish().prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}

/// SHA-1 (FIPS 180-4), only for name-based UUIDs: the RFC fixes the hash, and it is not used for
/// anything that needs collision resistance. Foundation has no SHA-1 on Linux.
struct SHA1 {
    private var state: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    mutating func update(_ bytes: [UInt8]) {
        length += UInt64(bytes.count)
        pending += bytes
        var offset = 0
        while pending.count - offset >= 64 {
            compress(pending[offset..<offset + 64])
            offset += 64
        }
        pending.removeFirst(offset)
    }

    mutating func finish() -> [UInt8] {
        let bits = length &* 8
        var tail = pending + [0x80]
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { tail.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        for start in stride(from: 0, to: tail.count, by: 64) { compress(tail[start..<start + 64]) }
        pending = []
        return state.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> UInt32(24 - 8 * $0)) } }
    }

    private mutating func compress(_ block: ArraySlice<UInt8>) {
        var words = [UInt32](repeating: 0, count: 80)
        let base = block.startIndex
        for index in 0..<16 {
            words[index] = (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(block[base + index * 4 + $1]) }
        }
        for index in 16..<80 {
            let mixed = words[index - 3] ^ words[index - 8] ^ words[index - 14] ^ words[index - 16]
            words[index] = mixed << 1 | mixed >> 31
        }
        var (a, b, c, d, e) = (state[0], state[1], state[2], state[3], state[4])
        for index in 0..<80 {
            let (f, k): (UInt32, UInt32) = switch index {
            case 0..<20: ((b & c) | (~b & d), 0x5A82_7999)
            case 20..<40: (b ^ c ^ d, 0x6ED9_EBA1)
            case 40..<60: ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
            default: (b ^ c ^ d, 0xCA62_C1D6)
            }
            let temporary = (a << 5 | a >> 27) &+ f &+ e &+ k &+ words[index]
            (e, d, c, b, a) = (d, c, b << 30 | b >> 2, a, temporary)
        }
        state[0] &+= a
        state[1] &+= b
        state[2] &+= c
        state[3] &+= d
        state[4] &+= e
    }
}
