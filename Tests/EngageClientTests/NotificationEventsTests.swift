import ClientTestSupport
import EngageAPI
import Foundation
import Testing
import TestSupport
@testable import EngageClient
@testable import EngageNotificationService

@Suite("Displays and actions counted once; the arm travels with the push", .serialized)
struct NotificationEventsTests {
    static let arm = ExperimentArm(id: "thumbnail-vs-full", arm: "thumbnail", probability: 0.5)

    static func facts(_ id: String, attachments: [String] = ["public.jpeg"], date: Date = Date(timeIntervalSinceNow: -60)) -> NotificationFacts {
        NotificationFacts(requestIdentifier: "apns-\(id)", date: date, category: "new_photo",
                          payload: PushPayload(notificationID: id, experiment: arm, strategy: "thumbnail"), attachmentTypes: attachments)
    }

    @Test func whatIsShownIsReadFromTheNotification() {
        #expect(Self.facts("a").presentation == .rich)
        #expect(Self.facts("a").attachmentKind == .image)
        #expect(Self.facts("a", attachments: ["com.compuserve.gif"]).attachmentKind == .gif)
        #expect(Self.facts("a", attachments: ["public.mpeg-4"]).attachmentKind == .video)
        #expect(Self.facts("a", attachments: ["public.mp3"]).attachmentKind == .audio)
        #expect(Self.facts("a", attachments: []).presentation == .plain)
        #expect(Self.facts("a", attachments: []).attachmentKind == .none)
        var noID = Self.facts("a")
        noID.payload.notificationID = nil
        #expect(noID.notificationID == "apns-a")
    }

    /// A local notification's identifier is the app's: one the server would refuse as a
    /// `notification_id` gets a stand-in (`PayloadNameTests` has the server judge which), the
    /// same every time it is derived, and the same the extension uses.
    @Test(arguments: ["reminder-1", String(repeating: "r", count: 200), String(repeating: "r", count: 201), "tab\there",
                      "news\u{202E}", ""])
    func aRequestIdentifierTheServerRefusesGetsAStandIn(identifier: String) throws {
        var facts = Self.facts("a")
        facts.requestIdentifier = identifier
        facts.payload.notificationID = nil
        let id = facts.notificationID
        #expect(id == PushPayload(userInfo: [:]).notificationID(requestIdentifier: identifier))
        #expect(WireText.isAcceptable(id, maxBytes: 200))
        #expect((id == identifier) == WireText.isAcceptable(identifier, maxBytes: 200))
        if id != identifier {
            #expect(UUID(uuidString: id) != nil)
            var other = facts
            other.requestIdentifier = identifier + "x"
            #expect(other.notificationID != id)
        }
    }

    /// `willPresent` in the foreground, then sweeps of Notification Center each time the app
    /// becomes active, and an action seen by the Content Extension and again by the app: one
    /// event each, queued once and stored once.
    @Test func sweepsWillPresentAndForwardedActionsCountOnce() async throws {
        let server = try TestServer()
        let container = Container()
        defer { container.remove() }
        let app = try makeClient(container, port: server.port, key: try await server.key())
        let shownInForeground = Self.facts("n-1", attachments: ["com.compuserve.gif"])
        let shownWhileClosed = [Self.facts("n-2", attachments: ["public.mpeg-4"]), Self.facts("n-3", attachments: [])]

        let foreground = try app.recordDisplayed(shownInForeground, at: Date())
        for _ in 0..<3 { #expect(app.recordDisplays(of: [shownInForeground] + shownWhileClosed) == nil) }
        // The Content Extension (its own client on the same container) and the app.
        let contentExtension = try makeClient(container, port: server.port, key: "unused")
        let like = try contentExtension.recordAction(shownInForeground, actionID: "like")
        #expect(try app.recordAction(shownInForeground, actionID: "like") == like)
        let reply = try contentExtension.recordAction(shownInForeground, actionID: "reply", textInputLength: 12)
        #expect(try app.recordAction(shownInForeground, actionID: "reply", textInputLength: 12) == reply)
        let expanded = try contentExtension.recordExpanded(shownInForeground)
        #expect(try contentExtension.recordExpanded(shownInForeground) == expanded)

        #expect(app.pendingEventIDs().count == 6)
        let report = await app.flush(budget: .seconds(10))
        #expect(report.accepted == 6 && report.duplicates == 0)
        #expect(try await server.count("SELECT count(*) FROM events WHERE type = 'displayed'") == 3)
        #expect(try await server.count("SELECT count(*) FROM events WHERE type = 'displayed' AND notification_id = 'n-1' AND payload->>'attachment_kind' = 'gif'") == 1)
        #expect(try await server.count("SELECT count(*) FROM events WHERE type = 'displayed' AND payload->>'presentation' = 'plain' AND payload->>'attachment_kind' = 'none'") == 1)
        #expect(try await server.count("SELECT count(*) FROM events WHERE event_id = \(foreground) AND experiment_arm = 'thumbnail'") == 1)

        // A later process with an empty window of recent ids (a reinstall of the queue, say)
        // queues them again; the server still stores each once.
        try FileManager.default.removeItem(atPath: container.path("recent-ids"))
        let later = try makeClient(container, port: server.port, key: try await server.key())
        _ = later.recordDisplays(of: [shownInForeground] + shownWhileClosed)
        _ = try later.recordAction(shownInForeground, actionID: "like")
        let again = await later.flush(budget: .seconds(10))
        #expect(again.accepted == 0 && again.duplicates == 4)
        #expect(try await server.count("SELECT count(*) FROM events") == 6)
        await server.stop()
    }

    /// A notification shown while the app was not running and then tapped, or expanded and
    /// answered, leaves Notification Center before a sweep finds it: its display is recorded
    /// with the response, at its date, with what iOS showed; once, however many record it.
    @Test func aNotificationAnsweredBeforeAnySweepFoundItIsDisplayed() async throws {
        let server = try TestServer()
        let container = Container()
        defer { container.remove() }
        let app = try makeClient(container, port: server.port, key: try await server.key())
        let tapped = Self.facts("n-tapped", attachments: ["public.jpeg"], date: Date(timeIntervalSinceNow: -3600))
        let expanded = Self.facts("n-expanded", attachments: [])
        try app.recordAction(tapped, actionID: AppleActionIdentifier.open)
        let contentExtension = try makeClient(container, port: server.port, key: "unused")
        try contentExtension.recordExpanded(expanded)
        try contentExtension.recordAction(expanded, actionID: "like")
        try app.recordAction(expanded, actionID: "like")
        #expect(app.recordDisplays(of: [expanded]) == nil)

        let displayed = [tapped, expanded].map {
            EngageEvent.onceID(deviceID: "dev-test-1", notificationID: $0.notificationID, type: "displayed").uuidString.lowercased()
        }
        #expect(Set(displayed).isSubset(of: Set(app.pendingEventIDs())))
        #expect(await app.flush(budget: .seconds(10)).accepted == 5)
        #expect(try await server.count("""
            SELECT count(*) FROM events WHERE type = 'displayed' AND notification_id = 'n-tapped'
              AND payload->>'presentation' = 'rich' AND payload->>'attachment_kind' = 'image'
              AND occurred_at < now() - interval '59 minutes'
            """) == 1)
        #expect(try await server.count("""
            SELECT count(*) FROM events WHERE type = 'displayed' AND notification_id = 'n-expanded'
              AND payload->>'presentation' = 'plain'
            """) == 1)
        #expect(try await server.count("SELECT count(*) FROM events") == 5)
        await server.stop()
    }

    /// The whole path of an arm: the sender asks engage for a send's devices at once, puts each
    /// device's assignment into its payload and its `sent` event; each device's extension, with
    /// a stale cache naming other arms, downloads what the arm's strategy asks for, and the app
    /// records the display. Every event of every notification carries the arm it was sent under.
    @Test func theArmTravelsFromTheSenderThroughThePushToEveryEvent() async throws {
        let server = try TestServer()
        let admin = try await server.key(role: .admin)
        let ingest = try await server.key()
        let definition = #"{"id":"thumbnail-vs-full","app_id":"app-1","categories":["new_photo"],"#
            + #""arms":[{"name":"control","strategy":"full","weight":0.5,"control":true},{"name":"thumbnail","strategy":"thumbnail","weight":0.5}],"#
            + #""primary_metric":"open"}"#
        let auth = [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json")]
        #expect(try await server.request("POST", "/v1/experiments", headers: auth, body: Array(definition.utf8)).status == 201)
        #expect(try await server.request("POST", "/v1/experiments/thumbnail-vs-full/start", headers: auth).status == 200)
        let host = try FaultInjector(reply: .bytes(status: 200, headers: [("Content-Type", "image/jpeg")], body: MediaSamples.jpeg(30_000),
                                                   declareLength: true))
        defer { host.stop() }

        // The sender.
        let senderContainer = Container()
        defer { senderContainer.remove() }
        let sender = try makeClient(senderContainer, port: server.port, key: ingest)
        let devices = (1...12).map { "device-\($0)" }
        let assignments = try await sender.assignments(forDevices: devices, category: "new_photo")
        #expect(Set(assignments.keys) == Set(devices))
        #expect(Set(assignments.values.compactMap(\.first?.arm)) == ["control", "thumbnail"])
        var payloads: [String: PushPayload] = [:]
        for device in devices {
            let assignment = assignments[device]?.first
            let media = [PushPayload.Media(variant: "original", url: host.url.appendingPathComponent("\(device)/o.jpg")),
                         PushPayload.Media(variant: "thumbnail", url: host.url.appendingPathComponent("\(device)/t.jpg"))]
            let payload = PushPayload(notificationID: "push-\(device)", assignment: assignment, media: media)
            payloads[device] = payload
            try sender.recordSent(notificationID: "push-\(device)", category: "new_photo", media: [],
                                  strategy: assignment?.attachmentStrategy, experiment: assignment?.experimentArm, deviceID: device)
        }
        #expect(await sender.flush(budget: .seconds(10)).accepted == devices.count)

        // Each device: the payload as iOS hands it over, a stale cache of the wrong arm.
        for device in devices {
            let container = Container()
            defer { container.remove() }
            let client = try makeClient(container, port: server.port, key: ingest) { $0.deviceID = device }
            let wrong = assignments[device]?.first?.arm == "control" ? "thumbnail" : "control"
            try Data(#"{"device_id":"\#(device)","fetched_at_ms":1,"assignments":[{"experiment":"thumbnail-vs-full","arm":"\#(wrong)"}]}"#.utf8)
                .write(to: URL(fileURLWithPath: container.path("assignments.json")))
            let fragment = try JSONSerialization.jsonObject(with: Data(try #require(payloads[device]).json.utf8))
            let payload = PushPayload(userInfo: ["aps": ["mutable-content": 1], "engage": fragment])
            let probe = SessionProbe()
            let session = makeSession(client: client, payload: payload, notificationID: "push-\(device)", probe: probe,
                                      directory: container.url)
            session.start()
            await probe.finished()
            #expect(probe.report?.outcome == .attached)
            let facts = NotificationFacts(requestIdentifier: "apns", date: Date(), category: "new_photo", payload: payload,
                                          attachmentTypes: ["public.jpeg"])
            try client.recordDisplayed(facts)
            #expect(await client.flush(budget: .seconds(10)).accepted == 2)
        }
        // Which variant each device downloaded follows its arm's strategy.
        let thumbnails = Set(host.hits.filter { $0.target.hasSuffix("/t.jpg") }.map { String($0.target.split(separator: "/")[0]) })
        #expect(thumbnails == Set(devices.filter { assignments[$0]?.first?.arm == "thumbnail" }))
        #expect(try await server.count("SELECT count(*) FROM events WHERE experiment_id = 'thumbnail-vs-full'") == 3 * devices.count)
        #expect(try await server.count("""
            SELECT count(*) FROM (SELECT notification_id FROM events GROUP BY notification_id
                                  HAVING count(DISTINCT experiment_arm) = 1 AND count(*) = 3) AS agreeing
            """) == devices.count)
        for device in devices {
            let arm = try #require(assignments[device]?.first?.arm)
            #expect(try await server.count("SELECT count(*) FROM events WHERE device_id = \(device) AND experiment_arm = \(arm)") == 3)
        }
        await server.stop()
    }
}
