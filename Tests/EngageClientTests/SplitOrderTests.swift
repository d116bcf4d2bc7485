import Foundation
import Testing
import TestSupport
@testable import EngageClient

/// A split segment's halves wait behind segments recorded after it: the next claim takes those
/// first, and, holding several segments, must shrink by whole segments, or it claims the same
/// segments again and again until the budget runs out.
@Suite("EngageClient: halving a claim after a split", .serialized)
struct SplitOrderTests {
    /// Ten events of about 400 bytes fill segment A; three more start segment B. The server takes
    /// 2,500 bytes a request: about six events. A is split into halves of five, which wait behind
    /// B; B and the first half together (eight events) are too large, and half of eight is four,
    /// which B's three and the half's five overshoot again. Everything fits once claims shrink by
    /// a segment.
    @Test func aClaimOfSeveralSegmentsShrinksBySegmentsAfterASplit() async throws {
        let server = try TestServer { $0.ingest.maxDecompressedBytes = 2500 }
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()
        let client = try makeClient(container, port: server.port, key: try await server.key(), drops: drops) {
            $0.batchSize = 10
            $0.gzip = false
        }
        let filler: JSONValue = .string(String(repeating: "f", count: 200))
        var ids: [UUID] = []
        for number in 0..<13 {
            ids.append(try client.recordExpanded(notificationID: "n\(number)", category: "new_photo",
                                                 properties: ["filler": filler]))
        }
        #expect(client.pending.events == 13)

        let report = await client.flush(budget: .seconds(20))
        #expect(report.ending == .drained)
        #expect(report.accepted == 13)
        #expect(report.requests < 12, "requests sent: \(report.requests)")
        #expect(try await stored(server, ids) == 13)
        #expect(drops.all.isEmpty)
        #expect(client.pending == (0, 0, 0))
        await server.stop()
    }
}
