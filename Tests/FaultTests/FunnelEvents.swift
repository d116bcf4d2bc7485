import EngageCore
import Foundation

/// One event as a client sends it: its id (lowercase UUID text) and its JSON.
struct WireEvent: Sendable, Hashable {
    var id: String
    var notification: String
    var category: String
    var json: String
}

/// Fresh events of whole notification funnels, as an app sends them: each notification is
/// delivered and displayed, some are expanded, some get an action. Every call makes new ids.
enum FunnelEvents {
    static func notifications(_ count: Int, label: String) -> [WireEvent] {
        let now = ISO8601DateFormatter().string(from: Date())
        var events: [WireEvent] = []
        for n in 0..<count {
            let notification = "\(label)-\(n)-\(UUID().uuidString.prefix(8).lowercased())"
            let category = ["new_photo", "chat_message", "promo_sale"][n % 3]
            let rich = n % 4 != 0
            func event(_ fields: String) {
                events.append(make(notification: notification, category: category, device: "device-\(n % 7)", at: now, fields))
            }
            event(rich
                ? #""type":"delivered","attachment":{"kind":"image","format":"jpeg","bytes":150000,"source":"network","download_ms":420},"outcome":"attached","processing_ms":610,"time_will_expire":false,"network":"wifi","strategy":"full""#
                : #""type":"delivered","attachment":{"kind":"none"},"outcome":"timeout","processing_ms":29000,"time_will_expire":true,"network":"cellular","strategy":"full""#)
            event(#""type":"displayed","presentation":"\#(rich ? "rich" : "plain")","attachment_kind":"\#(rich ? "image" : "none")""#)
            if n % 3 == 0 { event(#""type":"expanded""#) }
            switch n % 5 {
            case 0: event(#""type":"action","action_id":"like""#)
            case 1: event(#""type":"action","action_id":"com.apple.UNNotificationDefaultActionIdentifier""#)
            case 2: event(#""type":"action","action_id":"com.apple.UNNotificationDismissActionIdentifier""#)
            default: break
            }
        }
        return events
    }

    /// Late events of notifications already sent: every other one is expanded and replied to.
    static func lateEngagement(of earlier: [WireEvent]) -> [WireEvent] {
        let now = ISO8601DateFormatter().string(from: Date())
        var seen: Set<String> = []
        let notifications = earlier.filter { seen.insert($0.notification).inserted }
        return notifications.enumerated().filter { $0.offset.isMultiple(of: 2) }.flatMap { _, first in
            [make(notification: first.notification, category: first.category, device: "device-late", at: now, #""type":"expanded""#),
             make(notification: first.notification, category: first.category, device: "device-late", at: now,
                  #""type":"action","action_id":"reply","text_input_length":14"#)]
        }
    }

    private static func make(notification: String, category: String, device: String, at time: String, _ fields: String) -> WireEvent {
        let id = UUID().uuidString.lowercased()
        return WireEvent(id: id, notification: notification, category: category,
                         json: #"{"event_id":"\#(id)","notification_id":"\#(notification)","device_id":"\#(device)","category":"\#(category)","occurred_at":"\#(time)",\#(fields)}"#)
    }

    /// The current time as engage's timestamp.
    static var now: Timestamp { Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000)) }
}

extension [WireEvent] {
    /// A JSON array body.
    var body: String { "[" + map(\.json).joined(separator: ",") + "]" }
    var ids: [String] { map(\.id) }
}
