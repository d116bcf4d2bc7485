import EngageCore
import Foundation
import Testing
@testable import EngageClient

/// A name from a push payload that the server would refuse in an event (and with it the event)
/// is not carried: the client's check takes exactly what the server's decoder takes, and the
/// payload falls back where it can (`uncategorized`, the request's identifier, no experiment,
/// the entry left out).
@Suite struct PayloadNameTests {
    static let names: [String] = [
        "new_photo", String(repeating: "a", count: 100), String(repeating: "a", count: 101),
        String(repeating: "é", count: 50), String(repeating: "é", count: 51),
        // Decomposed: 102 bytes as sent, 68 once composed; the server counts what was sent.
        String(repeating: "e\u{301}", count: 34),
        // U+0958 composes to two scalars: 99 bytes as sent, 198 composed.
        String(repeating: "\u{0958}", count: 33),
        // Escaped on the wire: the server counts the bytes after unescaping.
        String(repeating: "a", count: 99) + "\"", String(repeating: "\\", count: 100), String(repeating: "\\", count: 101),
        "news\u{202E}", "news\u{2066}x", "tab\there", "nel\u{85}", "del\u{7F}", "c1\u{9F}", "\u{A0}nbsp", "🙂", "",
    ]

    @Test(arguments: names)
    func theClientRefusesExactlyWhatTheServerRefuses(name: String) {
        let occurredAt = Date()
        let event = EngageEvent(notificationID: "n-1", deviceID: "dev-1", category: name, occurredAt: occurredAt, body: .expanded)
        let now = EngageCore.Timestamp(microsecondsSinceEpoch: Int64(occurredAt.timeIntervalSince1970 * 1_000_000))
        let serverTakes = (try? Event.decodeWire(Array(event.json.utf8), now: now)) != nil
        #expect(WireText.isAcceptable(name, maxBytes: 100) == serverTakes)
    }

    @Test(arguments: names)
    func aPayloadsNamesAreCarriedOnlyWhenTheServerTakesThem(name: String) {
        let acceptable = WireText.isAcceptable(name, maxBytes: 100)
        #expect(PushPayload.category(userInfo: ["aps": ["category": name]], shown: "x") == (acceptable ? name : "uncategorized"))
        #expect(PushPayload.category(userInfo: [:], shown: name) == (acceptable ? name : "uncategorized"))
        let payload = PushPayload(userInfo: [PushPayload.key: [
            "notification_id": name, "experiment": name, "arm": "a",
            "media": [["variant": name, "url": "https://cdn.example.com/1.jpg"]],
        ] as [String: Any]])
        #expect(payload.notificationID == (WireText.isAcceptable(name, maxBytes: 200) ? name : nil))
        #expect(payload.experiment?.id == (acceptable ? name : nil))
        #expect(payload.media.map(\.variant) == (acceptable ? [name] : []))
    }

    /// A request identifier stands in for a missing `notification_id` when the server takes it,
    /// and a name-based UUID of it stands in otherwise: the server's decoder is the judge.
    @Test(arguments: names + [String(repeating: "r", count: 200), String(repeating: "r", count: 201)])
    func aRequestIdentifierStandsInOnlyWhenTheServerTakesIt(identifier: String) throws {
        let id = PushPayload(userInfo: [:]).notificationID(requestIdentifier: identifier)
        let now = Date()
        func serverTakes(_ notificationID: String) -> Bool {
            let event = EngageEvent(notificationID: notificationID, deviceID: "dev-1", category: "c", occurredAt: now, body: .expanded)
            let at = EngageCore.Timestamp(microsecondsSinceEpoch: Int64(now.timeIntervalSince1970 * 1_000_000))
            return (try? Event.decodeWire(Array(event.json.utf8), now: at)) != nil
        }
        #expect(serverTakes(id))
        #expect((id == identifier) == serverTakes(identifier))
        #expect(PushPayload(userInfo: [:]).notificationID(requestIdentifier: identifier) == id)
    }

    @Test func aNotificationIDMayHaveTwoHundredBytes() {
        let long = String(repeating: "n", count: 200)
        #expect(PushPayload(userInfo: [PushPayload.key: ["notification_id": long]]).notificationID == long)
        #expect(PushPayload(userInfo: [PushPayload.key: ["notification_id": long + "n"]]).notificationID == nil)
    }

    /// Media comes over HTTPS or HTTP only: a `file` or `data` URL would attach whatever the
    /// extension can read.
    @Test func mediaURLsAreWebAddresses() {
        let addresses = ["https://cdn.example.com/a.jpg", "HTTPS://cdn.example.com/b.jpg", "http://cdn.example.com/c.jpg",
                         "file:///private/var/mobile/photo.jpg", "data:image/png;base64,iVBORw0KGgo=", "ftp://cdn.example.com/d.jpg",
                         "cdn.example.com/e.jpg"]
        let payload = PushPayload(userInfo: [PushPayload.key: [
            "media": addresses.map { ["variant": "original", "url": $0] },
        ]])
        #expect(payload.media.map(\.url.absoluteString) == Array(addresses.prefix(3)))
    }
}
