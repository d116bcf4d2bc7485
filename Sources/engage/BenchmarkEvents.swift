import EngageCore
import EventStore
import Foundation

/// Deterministic, realistic `delivered` events (about 300 bytes of row data) for benchmarks.
enum BenchmarkEvents {
    static func make(count: Int, app: String = "bench-app") -> [AppendItem] {
        let categories = ["new_photo", "chat_message", "promo_sale", "breaking_news"]
        let networks: [NetworkType] = [.wifi, .cellular]
        let start = Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000) - 3_600_000_000)
        return (0..<count).map { index in
            let event = Event(
                eventID: EventID(high: 0x4000_0000_0000_0000 | UInt64(index), low: 0x8000_0000_0000_0000 | UInt64(index &* 2_654_435_761)),
                notificationID: "apns-\(String(index, radix: 16))-\(index % 977)",
                deviceID: "device-\(index % 50_000)",
                category: categories[index % categories.count],
                occurredAt: start.adding(microseconds: Int64(index) * 1_000),
                details: .delivered(DeliveredDetails(
                    attachment: DeliveredAttachment(kind: .image, format: .jpeg, bytes: 150_000 + index % 90_000,
                                                    source: index % 5 == 0 ? .cache : .network, downloadMS: 300 + index % 1_700),
                    outcome: .attached, processingMS: 350 + index % 1_800, timeWillExpire: false,
                    network: networks[index % 2], strategy: .full)),
                properties: nil)
            return AppendItem(appID: app, event: event)
        }
    }

    /// Four events per notification (sent, delivered, displayed, then expanded or an action),
    /// for projector and report benchmarks. Deterministic.
    static func notifications(_ count: Int, startingAt first: Int = 0, app: String = "bench-app") -> [AppendItem] {
        let categories = ["new_photo", "chat_message", "promo_sale", "breaking_news"]
        let start = Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000) - 20 * 86_400_000_000)
        var items: [AppendItem] = []
        items.reserveCapacity(count * 4)
        for n in first..<(first + count) {
            let notification = "bench-\(n)"
            let category = categories[n % categories.count]
            let rich = n % 5 != 0
            // Spread evenly over the same 20 days whatever the log size, so the read model's size
            // (its buckets) does not grow with the number of events.
            let base = start.adding(microseconds: Int64((n &* 2_654_435_761) % 1_728_000) * 1_000_000)
            var serial = UInt64(n) * 4
            func event(_ seconds: Int64, _ details: EventDetails) -> AppendItem {
                serial += 1
                return AppendItem(appID: app, event: Event(
                    eventID: EventID(high: 0x5000_0000_0000_0000 | serial, low: 0x8000_0000_0000_0000 | serial &* 0x9e37_79b9),
                    notificationID: notification, deviceID: "device-\(n % 100_000)", category: category,
                    occurredAt: base.adding(microseconds: seconds * 1_000_000), details: details))
            }
            items.append(event(0, .sent(SentDetails(media: [
                MediaVariant(variant: "original", kind: .image, format: .jpeg, bytes: 900_000, width: 1920, height: 1080),
                MediaVariant(variant: "thumbnail", kind: .image, format: .jpeg, bytes: 60_000, width: 320, height: 180),
            ], strategy: .full, payloadBytes: 812))))
            items.append(event(2, .delivered(DeliveredDetails(
                attachment: DeliveredAttachment(kind: rich ? .image : .noAttachment, format: rich ? .jpeg : nil,
                                                bytes: rich ? 900_000 : nil, source: rich ? (n % 7 == 0 ? .cache : .network) : nil,
                                                downloadMS: rich ? 200 + n % 2_500 : nil),
                outcome: rich ? .attached : .timeout, processingMS: 300 + n % 3_000, timeWillExpire: !rich,
                network: n % 3 == 0 ? .cellular : .wifi, strategy: .full))))
            items.append(event(3, .displayed(DisplayedDetails(presentation: rich ? .rich : .plain, attachmentKind: rich ? .image : .noAttachment))))
            switch n % 4 {
            case 0: items.append(event(20, .expanded))
            case 1: items.append(event(25, .action(ActionDetails(actionID: "like"))))
            case 2: items.append(event(30, .action(ActionDetails(actionID: ActionDetails.openIdentifier))))
            default: items.append(event(30, .action(ActionDetails(actionID: ActionDetails.dismissIdentifier))))
            }
        }
        return items
    }

    /// The same rows in COPY's text format, for `psql \copy`.
    static func copyText(_ items: [AppendItem]) -> Data {
        var text = [UInt8]()
        text.reserveCapacity(items.count * 360)
        func field(_ value: String) { appendEscaped(Array(value.utf8)) }
        func appendEscaped(_ bytes: [UInt8]) {
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "\\"): text += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case UInt8(ascii: "\t"): text += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                case UInt8(ascii: "\n"): text += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case UInt8(ascii: "\r"): text += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                default: text.append(byte)
                }
            }
        }
        let tab = UInt8(ascii: "\t")
        for item in items {
            let event = item.event
            field(event.eventID.description); text.append(tab)
            field(item.appID); text.append(tab)
            field(event.notificationID); text.append(tab)
            field(event.type.rawValue); text.append(tab)
            field(event.category); text.append(tab)
            field(event.deviceID); text.append(tab)
            field(event.occurredAt.rfc3339); text.append(tab)
            text += Array("\\N\t\\N\t".utf8)
            appendEscaped(event.payloadJSON)
            text.append(UInt8(ascii: "\n"))
        }
        return Data(text)
    }
}
