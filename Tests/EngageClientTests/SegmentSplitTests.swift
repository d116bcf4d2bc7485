import Foundation
import Testing
import TestSupport
@testable import EngageClient

/// A server whose body limit is below one segment: the segment is split, not dropped.
@Suite("EngageClient: a segment larger than the server's body limit", .serialized)
struct SegmentSplitTests {
    /// Ten events of about 400 bytes fill one segment of about 4 KB; the server takes 2,500 bytes
    /// per request. The segment is halved until its pieces pass; only an event larger than the
    /// limit by itself is dropped, as engage's 413 for it.
    @Test(arguments: [true, false])
    func aSegmentOverTheBodyLimitIsSplitDownToOneEvent(gzip: Bool) async throws {
        let server = try TestServer { $0.ingest.maxDecompressedBytes = 2500 }
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()
        let client = try makeClient(container, port: server.port, key: try await server.key(), drops: drops) {
            $0.gzip = gzip
        }
        let filler: JSONValue = .string(String(repeating: "f", count: 200))
        var fitting: [UUID] = []
        for number in 0..<9 {
            fitting.append(try client.recordExpanded(notificationID: "n\(number)", category: "new_photo",
                                                     properties: ["filler": filler]))
        }
        let huge = try client.recordExpanded(notificationID: "n9", category: "new_photo",
                                             properties: ["filler": .string(String(repeating: "h", count: 3000))])
        #expect(client.pending.events == 10)

        let report = await client.flush(budget: .seconds(20))
        #expect(report.ending == .drained)
        #expect(report.accepted == 9)
        #expect(report.dropped == 1)
        #expect(try await stored(server, fitting) == 9)
        #expect(drops.all == [.init(reason: .refused(status: 413, problemType: "https://engage.dev/problems/payload-too-large"),
                                    eventIDs: [huge.uuidString.lowercased()])])
        #expect(client.dropCounts.refused == 1)
        #expect(client.pending == (0, 0, 0))
        await server.stop()
    }
}
