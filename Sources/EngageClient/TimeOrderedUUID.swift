import Foundation

extension UUID {
    /// A version 7 UUID (RFC 9562): the Unix time in milliseconds, then 74 random bits.
    ///
    /// The client's event ids are time-ordered so that engage's unique index on them grows at its
    /// right edge: measured on engage's machine, random (version 4) ids made PostgreSQL append
    /// about 20% fewer events per second. The server accepts any UUID.
    public static func timeOrdered(at date: Date = Date()) -> UUID {
        var generator = SystemRandomNumberGenerator()
        return timeOrdered(at: date, using: &generator)
    }

    public static func timeOrdered<Random: RandomNumberGenerator>(at date: Date, using random: inout Random) -> UUID {
        // 48 bits of milliseconds reach the year 10889; a date outside them (or not finite) is clamped.
        let exact = (date.timeIntervalSince1970 * 1000).rounded(.down)
        let milliseconds = exact.isFinite ? UInt64(min(max(0, exact), Double((1 << 48) - 1))) : 0
        let high = random.next()
        let low = random.next()
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: milliseconds >> (40 - 8 * UInt64(index))) }
        bytes[6] = 0x70 | UInt8(truncatingIfNeeded: high >> 60)
        bytes[7] = UInt8(truncatingIfNeeded: high >> 52)
        bytes[8] = 0x80 | UInt8(truncatingIfNeeded: low >> 58)
        for index in 9..<16 { bytes[index] = UInt8(truncatingIfNeeded: low >> (8 * UInt64(15 - index))) }
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
