/// A small gzip encoder (RFC 1952 around RFC 1951 deflate), written here because Foundation has no
/// compressor on Linux and the client may not link zlib. It emits one block with the fixed
/// Huffman codes and LZ77 matches found through hash chains: no dynamic trees, which would gain
/// a little more on large bodies. Event batches are repetitive JSON and shrink to roughly a fifth.
enum Gzip {
    static func compress(_ input: [UInt8]) -> [UInt8] {
        var output: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]
        output += Deflate.compress(input)
        let crc = CRC32.checksum(input)
        let size = UInt32(truncatingIfNeeded: input.count)
        for shift in stride(from: 0, to: 32, by: 8) { output.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
        for shift in stride(from: 0, to: 32, by: 8) { output.append(UInt8(truncatingIfNeeded: size >> UInt32(shift))) }
        return output
    }
}

enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

enum Deflate {
    private static let windowSize = 32_768
    private static let minMatch = 3
    private static let maxMatch = 258
    private static let maxChain = 64
    private static let hashBits = 15

    private static let lengthBase: [Int] = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59,
                                            67, 83, 99, 115, 131, 163, 195, 227, 258]
    private static let lengthExtra: [Int] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4,
                                             5, 5, 5, 5, 0]
    private static let distanceBase: [Int] = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385,
                                              513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
    private static let distanceExtra: [Int] = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10,
                                               10, 11, 11, 12, 12, 13, 13]

    /// The fixed literal/length code (RFC 1951 3.2.6) of each symbol, bit-reversed because
    /// Huffman codes are packed starting from their most significant bit.
    private static let literalCodes: [(code: UInt32, length: Int)] = (0..<288).map { symbol in
        let (code, length): (Int, Int) = switch symbol {
        case 0...143: (0x30 + symbol, 8)
        case 144...255: (0x190 + symbol - 144, 9)
        case 256...279: (symbol - 256, 7)
        default: (0xC0 + symbol - 280, 8)
        }
        return (reverse(UInt32(code), length), length)
    }

    private static func reverse(_ code: UInt32, _ length: Int) -> UInt32 {
        var result: UInt32 = 0
        for bit in 0..<length where code & (1 << UInt32(bit)) != 0 { result |= 1 << UInt32(length - 1 - bit) }
        return result
    }

    /// Index of the largest base at most `value`.
    private static func code(for value: Int, in bases: [Int]) -> Int {
        var index = bases.count - 1
        while bases[index] > value { index -= 1 }
        return index
    }

    static func compress(_ input: [UInt8]) -> [UInt8] {
        var writer = BitWriter()
        writer.write(1, bits: 1)  // BFINAL: the only block
        writer.write(1, bits: 2)  // BTYPE 01: fixed Huffman codes
        let count = input.count
        var head = [Int](repeating: -1, count: 1 << hashBits)
        var previous = [Int](repeating: -1, count: windowSize)

        func hash(_ position: Int) -> Int {
            (Int(input[position]) << 10 ^ Int(input[position + 1]) << 5 ^ Int(input[position + 2])) & (1 << hashBits - 1)
        }
        func insert(_ position: Int) {
            guard position + minMatch <= count else { return }
            let key = hash(position)
            previous[position % windowSize] = head[key]
            head[key] = position
        }
        func literal(_ symbol: Int) {
            let entry = literalCodes[symbol]
            writer.write(entry.code, bits: entry.length)
        }

        var position = 0
        while position < count {
            var bestLength = 0
            var bestDistance = 0
            if position + minMatch <= count {
                let limit = min(maxMatch, count - position)
                var candidate = head[hash(position)]
                var chain = 0
                while candidate >= 0, position - candidate <= windowSize, chain < maxChain {
                    var length = 0
                    while length < limit, input[candidate + length] == input[position + length] { length += 1 }
                    if length > bestLength {
                        bestLength = length
                        bestDistance = position - candidate
                        if length == limit { break }
                    }
                    let next = previous[candidate % windowSize]
                    if next >= candidate { break }  // the slot was reused by a newer position
                    candidate = next
                    chain += 1
                }
            }
            if bestLength >= minMatch {
                let lengthCode = code(for: bestLength, in: lengthBase)
                literal(257 + lengthCode)
                writer.write(UInt32(bestLength - lengthBase[lengthCode]), bits: lengthExtra[lengthCode])
                let distanceCode = code(for: bestDistance, in: distanceBase)
                writer.write(reverse(UInt32(distanceCode), 5), bits: 5)
                writer.write(UInt32(bestDistance - distanceBase[distanceCode]), bits: distanceExtra[distanceCode])
                for offset in 0..<bestLength { insert(position + offset) }
                position += bestLength
            } else {
                literal(Int(input[position]))
                insert(position)
                position += 1
            }
        }
        literal(256)  // end of block
        return writer.finish()
    }
}

/// Packs values least significant bit first, as deflate requires.
private struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private var buffer: UInt64 = 0
    private var count = 0

    mutating func write(_ value: UInt32, bits: Int) {
        guard bits > 0 else { return }
        let mask: UInt32 = bits >= 32 ? .max : (1 << UInt32(bits)) - 1
        buffer |= UInt64(value & mask) << UInt64(count)
        count += bits
        while count >= 8 {
            bytes.append(UInt8(truncatingIfNeeded: buffer))
            buffer >>= 8
            count -= 8
        }
    }

    mutating func finish() -> [UInt8] {
        if count > 0 { bytes.append(UInt8(truncatingIfNeeded: buffer)) }
        buffer = 0
        count = 0
        return bytes
    }
}
