import Foundation
import Testing
@testable import EngageClient

/// An app built against the version that dropped events by age must still build against this
/// one, and behave as this one does: the library ships inside apps, which update it on their
/// own schedule.
@Suite("EngageClient: code written for earlier versions")
struct SourceCompatibilityTests {
    /// What an app wrote for the drops it is told of: every reason there was, `expired` included.
    static func label(_ reason: EngageClient.DroppedEvents.Reason) -> String {
        switch reason {
        case .rejected: "rejected"
        case .refused: "refused"
        case .overflow: "overflow"
        case .diskFull: "diskFull"
        case .expired: "expired"
        case .unreadable: "unreadable"
        }
    }

    @available(*, deprecated, message: "calls the age limit's setters, as an app of that time did")
    @Test func aConfigurationThatSetsTheAgeLimitStillBuildsAndDropsNothingByAge() throws {
        var configuration = EngageClient.Configuration(
            endpoint: URL(string: "http://127.0.0.1:1")!, ingestKey: "key", containerDirectory: URL(fileURLWithPath: "/tmp"),
            deviceID: "device", gzip: false, maxEventAge: .seconds(86_400))
        configuration.maxEventAge = .seconds(3600)
        #expect(configuration.gzip == false)
        #expect(configuration.batchSize == 50)
        #expect(Self.label(.expired) == "expired")
    }
}
