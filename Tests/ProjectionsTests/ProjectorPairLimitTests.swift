@testable import EngageCore
import EventStore
import Postgres
@testable import Projections
import Testing
import TestSupport

extension ProjectorTests {
    /// An app that names more categories than the report clusters over keeps no pairs of
    /// categories (their number, and the fold's work for a device in many, is the square of the
    /// categories): crossing the limit removes them, and a late event that brings the app back
    /// within it sums them again from the devices' rows, so the model still equals a rebuild.
    @Test(.timeLimit(.minutes(5)))
    func anAppBeyondTheCategoryLimitKeepsNoPairs() async throws {
        let limit = DevicePairMomentStore.maximumCategoriesPerApp
        let projector = makeProjector(batchSize: 400)
        let running = Task { try await projector.run() }
        let at = ProjectionFixtures.start
        var serial: UInt64 = 0
        func displayed(_ app: String, _ notification: String, device: String, category: String, seconds: Int64 = 100) -> AppendItem {
            serial += 1
            return AppendItem(appID: app, event: Event(
                eventID: ProjectionFixtures.id(96, serial), notificationID: notification, deviceID: device, category: category,
                occurredAt: at.adding(microseconds: seconds * 1_000_000),
                details: .displayed(DisplayedDetails(presentation: .rich, attachmentKind: .image))))
        }
        func category(_ n: Int) -> String { "c\(n)" }
        func pairs(_ app: String) async throws -> Int {
            try await count("SELECT count(*)::int8 FROM engagement_device_pair_moments WHERE app_id = \(app)")
        }
        // app-1: one device per category, and "x" in the first two: one pair. app-2 beside it.
        var items = (1...limit).map { displayed("app-1", "n\($0)", device: "d\($0)", category: category($0)) }
        items += [displayed("app-1", "x1", device: "x", category: category(1)), displayed("app-1", "x2", device: "x", category: category(2)),
                  displayed("app-2", "y1", device: "y", category: "a"), displayed("app-2", "y2", device: "y", category: "b")]
        _ = try await store.append(items)
        try await waitUntilCaughtUp()
        #expect(try await pairs("app-1") == 1)
        #expect(try await pairs("app-2") == 1)

        // One category more: app-1's pairs go, and a change of "x" does not bring them back.
        _ = try await store.append([displayed("app-1", "extra", device: "lone", category: "beyond")])
        try await waitUntilCaughtUp()
        _ = try await store.append([displayed("app-1", "x3", device: "x", category: category(3)),
                                    displayed("app-2", "y3", device: "y", category: "c")])
        try await waitUntilCaughtUp()
        #expect(try await pairs("app-1") == 0)
        #expect(try await pairs("app-2") == 3)
        // The report counts the stored categories as the projector does.
        #expect(try await pool.withConnection { try DevicePairMomentStore.appsBeyondLimit(appID: nil, on: $0) } == ["app-1"])

        // An earlier event of "extra" moves it into c1: app-1 is back at the limit, its pairs
        // (x's three categories) summed again.
        serial += 1
        _ = try await store.append([AppendItem(appID: "app-1", event: Event(
            eventID: ProjectionFixtures.id(96, serial), notificationID: "extra", deviceID: "x", category: category(1),
            occurredAt: at.adding(microseconds: 10 * 1_000_000),
            details: .sent(SentDetails(media: [], strategy: .full, payloadBytes: 100))))])
        try await waitUntilCaughtUp()
        #expect(try await pairs("app-1") == 3)
        #expect(try await pool.withConnection { try DevicePairMomentStore.appsBeyondLimit(appID: "app-1", on: $0) }.isEmpty)
        #expect(try await count("SELECT rich_x_rich_displayed FROM engagement_device_pair_moments WHERE app_id = 'app-1' AND first_category = 'c1' AND second_category = 'c2'") == 2)

        try await expectARebuildEqualsTheModel(stopping: running)
    }

    /// The report takes an app beyond the limit as one without device moments: with no pairs
    /// kept, a device in two of its categories would otherwise count twice.
    @Test func theReportReadsNoDeviceMomentsOfAnAppBeyondTheLimit() {
        let limit = DevicePairMomentStore.maximumCategoriesPerApp
        // "many" has more categories stored than are read (rows no set of devices has are left out).
        let many = (1...limit).map { CategoryDeviceMoments(appID: "many", category: "c\($0)") }
        let few = (0..<limit).map { CategoryDeviceMoments(appID: "few", category: "c\($0)") }
        let kept = DevicePairMomentStore.withPairsKept(many + few, appsBeyondLimit: ["many"])
        #expect(kept.map(\.appID) == Array(repeating: "few", count: limit))
    }
}
