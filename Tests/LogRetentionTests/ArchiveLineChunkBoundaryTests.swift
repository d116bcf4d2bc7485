import Foundation
@testable import LogRetention
import Testing

/// `ArchiveMerge.forEachLine` searches only the bytes each inflated chunk (1 MiB) adds: the lines
/// it yields must be the file's lines wherever a chunk ends, including a newline that is a
/// chunk's first byte and a line spread over three chunks.
@Suite("Archive lines across chunk boundaries")
struct ArchiveLineChunkBoundaryTests {
    @Test func linesAreTheFilesWhereverAChunkEnds() throws {
        let chunk = 1 << 20
        // The first line's newline is the second chunk's first byte; the second line runs from
        // there through the whole third chunk into the fourth; short lines follow.
        let lengths = [chunk, 2 * chunk + 10, 0, 3, chunk - 20]
        var text: [UInt8] = []
        var expected: [[UInt8]] = []
        for (index, length) in lengths.enumerated() {
            let line = [UInt8](repeating: UInt8(ascii: "a") + UInt8(index), count: length) + [0x0A]
            expected.append(line)
            text += line
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/lines.copy.gz"
        let writer = try GzipFileWriter(path: path)
        try writer.write(text[...])
        _ = try writer.finish()

        var lines: [[UInt8]] = []
        try ArchiveMerge.forEachLine(of: path, maxLineBytes: 3 * chunk, outcome: "nothing was pruned") { line in
            lines.append(Array(line))
        }
        #expect(lines.map(\.count) == expected.map(\.count))
        #expect(lines == expected)
    }
}
