import EngageCore
import EventStore
import Foundation

/// Valid events for tests, distinct unless told otherwise.
enum EventFactory {
    static func event(id: EventID = EventID(UUID()), notification: String = "n-1", device: String = "device-1",
                      category: String = "new_photo", occurredAt: Timestamp = .init(microsecondsSinceEpoch: 1_780_000_000_000_000),
                      details: EventDetails = .expanded) -> Event {
        Event(eventID: id, notificationID: notification, deviceID: device, category: category,
              occurredAt: occurredAt, details: details)
    }

    static func delivered(notification: String) -> Event {
        event(notification: notification, details: .delivered(DeliveredDetails(
            attachment: DeliveredAttachment(kind: .image, format: .jpeg, bytes: 182_034, source: .network, downloadMS: 840),
            outcome: .attached, processingMS: 910, timeWillExpire: false, network: .wifi, strategy: .full)))
    }

    static func items(_ count: Int, app: String = "app-1", notificationPrefix: String = "n") -> [AppendItem] {
        (0..<count).map { AppendItem(appID: app, event: delivered(notification: "\(notificationPrefix)-\($0)")) }
    }
}
