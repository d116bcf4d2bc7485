import CZlib
import Digest
import Glibc

/// Writes a gzip file (RFC 1952) as a stream, hashing the bytes that reach the disk: the archive's
/// files are written once, a day at a time, and must be durable before the day leaves the log.
/// The file appears under `path` only when `finish` has synced it (it is written as
/// `path.partial` and renamed).
final class GzipFileWriter {
    let path: String
    private let partialPath: String
    private var descriptor: Int32
    private let stream: UnsafeMutablePointer<z_stream>
    private var output: [UInt8]
    private var hasher = SHA256()
    private(set) var compressedBytes = 0

    /// `level` is zlib's, 1 (fastest) to 9.
    init(path: String, level: Int32 = 1) throws(LogRetentionError) {
        self.path = path
        partialPath = path + ".partial"
        descriptor = open(partialPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .io(path: partialPath, problem: "cannot create: \(String(cString: strerror(errno)))") }
        stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        output = [UInt8](repeating: 0, count: 256 * 1024)
        // 15 window bits + 16: a gzip wrapper rather than zlib's own.
        guard deflateInit2_(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, zlibVersion(),
                            Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            fatalError("zlib deflateInit2 failed: out of memory")
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
        if descriptor >= 0 {
            close(descriptor)
            unlink(partialPath)
        }
    }

    func write(_ bytes: [UInt8]) throws(LogRetentionError) {
        try deflate(bytes[...], flush: Z_NO_FLUSH)
    }

    func write(_ bytes: ArraySlice<UInt8>) throws(LogRetentionError) {
        try deflate(bytes, flush: Z_NO_FLUSH)
    }

    /// Copies the bytes of the gzip file at `path` in as they are, ahead of anything `write`
    /// adds: gzip members may follow one another in a file, and readers (`GzipFileReader`, zcat)
    /// read them as one stream. Only before the first `write`.
    func copyMembers(of path: String) throws(LogRetentionError) {
        precondition(compressedBytes == 0 && stream.pointee.total_in == 0, "copyMembers after write")
        let source = open(path, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { throw .io(path: path, problem: "cannot open: \(String(cString: strerror(errno)))") }
        defer { close(source) }
        var problem: LogRetentionError?
        output.withUnsafeMutableBufferPointer { buffer in
            while problem == nil {
                let count = read(source, buffer.baseAddress, buffer.count)
                if count < 0 {
                    if errno == EINTR { continue }
                    problem = .io(path: path, problem: "read failed: \(String(cString: strerror(errno)))")
                    break
                }
                if count == 0 { break }
                problem = emit(UnsafeBufferPointer(rebasing: buffer[0..<count]))
            }
        }
        if let problem { throw problem }
    }

    /// Ends the stream, syncs the file and moves it into place; returns its size and SHA-256.
    func finish() throws(LogRetentionError) -> (bytes: Int, sha256: String) {
        try deflate([][...], flush: Z_FINISH)
        guard fsync(descriptor) == 0 else { throw .io(path: partialPath, problem: "fsync failed: \(String(cString: strerror(errno)))") }
        close(descriptor)
        descriptor = -1
        guard rename(partialPath, path) == 0 else { throw .io(path: path, problem: "rename failed: \(String(cString: strerror(errno)))") }
        try syncDirectory(of: path)
        return (compressedBytes, Hex.encode(hasher.finalize()))
    }

    private func deflate(_ input: ArraySlice<UInt8>, flush: Int32) throws(LogRetentionError) {
        var problem: LogRetentionError?
        input.withUnsafeBufferPointer { input in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.pointee.avail_in = UInt32(input.count)
            output.withUnsafeMutableBufferPointer { buffer in
                while problem == nil {
                    stream.pointee.next_out = buffer.baseAddress
                    stream.pointee.avail_out = UInt32(buffer.count)
                    let status = CZlib.deflate(stream, flush)
                    let produced = buffer.count - Int(stream.pointee.avail_out)
                    if produced > 0 {
                        problem = emit(UnsafeBufferPointer(rebasing: buffer[0..<produced]))
                        if problem != nil { break }
                    }
                    if status == Z_STREAM_END { break }
                    guard status == Z_OK || status == Z_BUF_ERROR else {
                        problem = .io(path: partialPath, problem: "zlib deflate failed (\(status))")
                        break
                    }
                    // All input taken and nothing more to flush until the next call.
                    if flush == Z_NO_FLUSH && stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0 { break }
                }
            }
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
        if let problem { throw problem }
    }

    /// Writes bytes of the file as they are, hashing and counting them.
    private func emit(_ chunk: UnsafeBufferPointer<UInt8>) -> LogRetentionError? {
        hasher.update(Array(chunk))
        var offset = 0
        while offset < chunk.count {
            let written = Glibc.write(descriptor, chunk.baseAddress! + offset, chunk.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return .io(path: partialPath, problem: "write failed: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
        compressedBytes += chunk.count
        return nil
    }
}

/// Reads a gzip file as a stream of inflated chunks.
final class GzipFileReader {
    let path: String
    private var descriptor: Int32
    private let stream: UnsafeMutablePointer<z_stream>
    private var input: [UInt8]
    private var inputOffset = 0
    private var inputCount = 0
    private var output: [UInt8]
    private var atEnd = false
    private var memberEnded = false

    init(path: String) throws(LogRetentionError) {
        self.path = path
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .io(path: path, problem: "cannot open: \(String(cString: strerror(errno)))") }
        stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        input = [UInt8](repeating: 0, count: 256 * 1024)
        output = [UInt8](repeating: 0, count: 1024 * 1024)
        guard inflateInit2_(stream, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            fatalError("zlib inflateInit2 failed: out of memory")
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
        if descriptor >= 0 { close(descriptor) }
    }

    /// The next inflated bytes, or nil at the end of the file.
    func next() throws(LogRetentionError) -> [UInt8]? {
        while !atEnd {
            if inputOffset == inputCount {
                let count = input.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw .io(path: path, problem: "read failed: \(String(cString: strerror(errno)))")
                }
                if count == 0 {
                    // A gzip member must end before the file does.
                    guard memberEnded else { throw .corruptArchive(file: path, problem: "the gzip stream is truncated") }
                    atEnd = true
                    return nil
                }
                inputOffset = 0
                inputCount = count
            }
            if memberEnded {
                // Another member follows (concatenated gzip files are one stream).
                inflateReset(stream)
                memberEnded = false
            }
            var status: Int32 = Z_OK
            let produced: Int = input.withUnsafeMutableBufferPointer { inputBuffer in
                output.withUnsafeMutableBufferPointer { outputBuffer in
                    stream.pointee.next_in = inputBuffer.baseAddress! + inputOffset
                    stream.pointee.avail_in = UInt32(inputCount - inputOffset)
                    stream.pointee.next_out = outputBuffer.baseAddress
                    stream.pointee.avail_out = UInt32(outputBuffer.count)
                    status = inflate(stream, Z_NO_FLUSH)
                    inputOffset = inputCount - Int(stream.pointee.avail_in)
                    return outputBuffer.count - Int(stream.pointee.avail_out)
                }
            }
            switch status {
            case Z_STREAM_END: memberEnded = true
            case Z_OK, Z_BUF_ERROR: break
            default: throw .corruptArchive(file: path, problem: "the gzip data is corrupt (zlib \(status))")
            }
            if produced > 0 { return Array(output[0..<produced]) }
        }
        return nil
    }
}

/// SHA-256 (hex) and size of a file, read in chunks.
func sha256OfFile(_ path: String) throws(LogRetentionError) -> (sha256: String, bytes: Int) {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw .io(path: path, problem: "cannot open: \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    var hasher = SHA256()
    var buffer = [UInt8](repeating: 0, count: 1024 * 1024)
    var total = 0
    while true {
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR { continue }
            throw .io(path: path, problem: "read failed: \(String(cString: strerror(errno)))")
        }
        if count == 0 { break }
        hasher.update(Array(buffer[0..<count]))
        total += count
    }
    return (Hex.encode(hasher.finalize()), total)
}

/// Makes a rename inside the directory durable.
func syncDirectory(of path: String) throws(LogRetentionError) {
    let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
    let descriptor = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard descriptor >= 0 else { throw .io(path: directory, problem: "cannot open the directory: \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    guard fsync(descriptor) == 0 else { throw .io(path: directory, problem: "fsync failed: \(String(cString: strerror(errno)))") }
}
