import EngageCore
import Foundation
import Testing
@testable import EngageClient

@Suite struct InstallationIDTests {
    /// An id the server would refuse as a `device_id` (and with it every event of the
    /// installation) is damaged: it is replaced. The server's decoder is the judge.
    @Test(arguments: ["", "dev\u{85}x", "dev\u{202E}x", "dev\u{2066}x", String(repeating: "\u{0958}", count: 60),
                      String(repeating: "d", count: 201), "dev-7c41a9e2", String(repeating: "d", count: 200)])
    func anInstallationIDTheServerRefusesIsReplaced(stored: String) throws {
        let container = Container()
        defer { container.remove() }
        _ = try InstallationID.readOrCreate(in: container.url)
        try Data((stored + "\n").utf8).write(to: URL(fileURLWithPath: container.path("installation-id")))
        let id = try InstallationID.readOrCreate(in: container.url)
        let event = EngageEvent(notificationID: "n-1", deviceID: stored, category: "c", occurredAt: Date(), body: .expanded)
        let now = EngageCore.Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000))
        let serverTakes = (try? Event.decodeWire(Array(event.json.utf8), now: now)) != nil
        #expect((id == stored) == serverTakes)
        if !serverTakes { #expect(UUID(uuidString: id) != nil) }
    }
}
