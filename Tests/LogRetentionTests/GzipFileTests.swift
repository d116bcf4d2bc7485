import Foundation
@testable import LogRetention
import Testing

@Suite("Archive files")
struct GzipFileTests {
    static func temporaryPath() -> String { NSTemporaryDirectory() + "engage-gzip-\(UUID().uuidString.prefix(8)).gz" }

    static func sample() -> [[UInt8]] {
        var generator = SystemRandomNumberGenerator()
        let text = Array(String(repeating: "1\t2\tevent\t{\"kind\": \"image\"}\n", count: 20_000).utf8)
        let noise = (0..<300_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return [text, [], noise, Array(text.prefix(7))]
    }

    @Test func whatIsWrittenReadsBackAndIsAGzipFileWithTheChecksumReported() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let chunks = Self.sample()
        let writer = try GzipFileWriter(path: path)
        for chunk in chunks { try writer.write(chunk) }
        #expect(!FileManager.default.fileExists(atPath: path), "visible before it was finished")
        let (bytes, sha256) = try writer.finish()
        #expect(try sha256OfFile(path) == (sha256, bytes))

        let reader = try GzipFileReader(path: path)
        var read: [UInt8] = []
        while let chunk = try reader.next() { read += chunk }
        #expect(read == chunks.flatMap { $0 })

        // The standard tool reads it too.
        let count = String(decoding: try RetentionFixtures.shell("gzip -dc '\(path)' | wc -c"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(count == String(read.count))
    }

    @Test func aTruncatedOrDamagedFileIsAnError() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try GzipFileWriter(path: path)
        try writer.write(Self.sample()[0])
        _ = try writer.finish()
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))

        try whole.prefix(whole.count - 10).write(to: URL(fileURLWithPath: path))
        let truncated = #expect(throws: LogRetentionError.self) {
            let reader = try GzipFileReader(path: path)
            while try reader.next() != nil {}
        }
        #expect(truncated?.description.contains("truncated") == true)

        var damaged = whole
        damaged[20] ^= 0xFF
        damaged[21] ^= 0xFF
        try damaged.write(to: URL(fileURLWithPath: path))
        let corrupt = #expect(throws: LogRetentionError.self) {
            let reader = try GzipFileReader(path: path)
            while try reader.next() != nil {}
        }
        #expect(corrupt?.code == "retention.corrupt_archive")
    }
}
