import EngageCore
import EventStore
import Foundation
import Postgres
import Projections
import SeededRandom

/// Streams of events for many notifications, with late and out-of-order arrivals.
enum ProjectionFixtures {
    static let start = Timestamp(microsecondsSinceEpoch: Timestamp.nowMicros() - 3_600_000_000)

    static func id(_ seed: UInt64, _ n: UInt64) -> EventID { EventID(high: 0x4000_0000_0000_0000 | seed, low: 0x8000_0000_0000_0000 | n) }

    /// Events of `count` notifications: delivered, displayed (rich or plain), and some expanded,
    /// liked, opened, dismissed or replied. Deterministic for a seed.
    static func events(notifications count: Int, seed: UInt64, app: String = "app-1") -> [AppendItem] {
        var generator = SeededGenerator(projectionSeed: seed)
        var items: [AppendItem] = []
        var serial: UInt64 = 0
        for n in 0..<count {
            let notification = "n-\(seed)-\(n)"
            let category = ["new_photo", "chat_message", "promo_sale"][n % 3]
            let rich = generator.next() % 4 != 0
            let base = start.adding(microseconds: Int64(n) * 1_000_000)
            func event(_ offset: Int64, _ details: EventDetails) -> AppendItem {
                serial += 1
                return AppendItem(appID: app, event: Event(
                    eventID: id(seed, serial), notificationID: notification, deviceID: "device-\(n % 50)", category: category,
                    occurredAt: base.adding(microseconds: offset * 1_000_000), details: details))
            }
            items.append(event(0, .delivered(DeliveredDetails(
                attachment: DeliveredAttachment(kind: rich ? .image : .noAttachment, format: rich ? .jpeg : nil,
                                                bytes: rich ? 150_000 : nil, source: rich ? .network : nil,
                                                downloadMS: rich ? Int(300 + generator.next() % 2000) : nil),
                outcome: rich ? .attached : .timeout, processingMS: Int(400 + generator.next() % 3000),
                timeWillExpire: !rich, network: .wifi, strategy: .full))))
            items.append(event(1, .displayed(DisplayedDetails(presentation: rich ? .rich : .plain, attachmentKind: rich ? .image : .noAttachment))))
            if generator.next() % 3 == 0 { items.append(event(5, .expanded)) }
            switch generator.next() % 6 {
            case 0: items.append(event(8, .action(ActionDetails(actionID: "like"))))
            case 1: items.append(event(9, .action(ActionDetails(actionID: ActionDetails.openIdentifier))))
            case 2: items.append(event(9, .action(ActionDetails(actionID: ActionDetails.dismissIdentifier))))
            case 3: items.append(event(12, .action(ActionDetails(actionID: "reply", textInputLength: 14))))
            default: break
            }
        }
        return items
    }

    /// The same events in a scrambled order (late displays after actions and the like).
    static func scrambled(_ items: [AppendItem], seed: UInt64) -> [AppendItem] {
        var generator = SeededGenerator(projectionSeed: seed)
        return items.shuffled(using: &generator)
    }
}

/// The projection tests' generator: `SplitMix64`, its seed one step ahead, as their data was
/// first drawn.
typealias SeededGenerator = SplitMix64

extension SplitMix64 {
    init(projectionSeed seed: UInt64) { self.init(seed: seed &+ 0x9e37_79b9_7f4a_7c15) }
}

extension Timestamp {
    static func nowMicros() -> Int64 { Int64(Date().timeIntervalSince1970 * 1_000_000) }
}
