import CZlib

/// Why a gzip stream could not be inflated; `code` is stable.
public enum GzipError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The output would exceed the caller's limit (a decompression bomb, or just too big).
    case tooLarge(limit: Int)
    /// The input is not a valid gzip stream.
    case corrupt
    /// The input ends before the gzip stream does.
    case truncated

    public var code: String {
        switch self {
        case .tooLarge: "gzip.too_large"
        case .corrupt: "gzip.corrupt"
        case .truncated: "gzip.truncated"
        }
    }

    public var description: String {
        switch self {
        case .tooLarge(let limit): "gzip output exceeds \(limit) bytes"
        case .corrupt: "gzip data is corrupt"
        case .truncated: "gzip data is truncated"
        }
    }
}

/// gzip (RFC 1952) compression with zlib.
public enum Gzip {
    private static let chunkSize = 64 * 1024
    /// Window bits for zlib's gzip wrapper: 15 (MAX_WBITS) + 16.
    private static let gzipWindowBits: Int32 = 15 + 16

    /// Inflates `data`, failing with `.tooLarge` as soon as more than `limit` bytes would be produced.
    /// Concatenated gzip members are inflated one after another.
    public static func inflate(_ data: [UInt8], limit: Int) throws(GzipError) -> [UInt8] {
        var stream = z_stream()
        guard inflateInit2_(&stream, gzipWindowBits, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            fatalError("zlib inflateInit2 failed: out of memory")
        }
        defer { inflateEnd(&stream) }

        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        let result: Result<Void, GzipError> = data.withUnsafeBufferPointer { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.avail_in = UInt32(input.count)
            return chunk.withUnsafeMutableBufferPointer { buffer in
                while true {
                    // Ask for at most one byte beyond the limit, so exceeding it is detected without
                    // inflating further.
                    let room = min(buffer.count, limit + 1 - output.count)
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = UInt32(room)
                    let status = CZlib.inflate(&stream, Z_NO_FLUSH)
                    let produced = room - Int(stream.avail_out)
                    output.append(contentsOf: buffer[0..<produced])
                    if output.count > limit { return .failure(.tooLarge(limit: limit)) }
                    switch status {
                    case Z_STREAM_END:
                        if stream.avail_in == 0 { return .success(()) }
                        guard inflateReset(&stream) == Z_OK else { return .failure(.corrupt) }
                    case Z_OK:
                        continue
                    case Z_BUF_ERROR:
                        // No progress was possible: either the input ran out or the output is full.
                        if stream.avail_in == 0 { return .failure(.truncated) }
                        if produced == 0 { return .failure(.corrupt) }
                    default:
                        return .failure(.corrupt)
                    }
                }
            }
        }
        try result.get()
        return output
    }

    /// Compresses `data` into a single gzip member.
    public static func deflate(_ data: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        guard deflateInit2_(
            &stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, gzipWindowBits, 8, Z_DEFAULT_STRATEGY,
            zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else {
            fatalError("zlib deflateInit2 failed: out of memory")
        }
        defer { deflateEnd(&stream) }
        // Room for the gzip header and trailer on top of zlib's bound.
        let bound = Int(deflateBound(&stream, UInt(data.count))) + 32
        var output = [UInt8](repeating: 0, count: bound)
        let written = data.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { buffer in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.avail_in = UInt32(input.count)
                stream.next_out = buffer.baseAddress
                stream.avail_out = UInt32(buffer.count)
                let status = CZlib.deflate(&stream, Z_FINISH)
                precondition(status == Z_STREAM_END, "zlib deflate did not finish within deflateBound")
                return buffer.count - Int(stream.avail_out)
            }
        }
        output.removeSubrange(written...)
        return output
    }
}
