import ClientTestSupport
import EngageAPI
import Foundation
import Testing
import TestSupport
@testable import EngageClient

/// Two apps of one team sharing an App Group: with a queue name each, each app's events are
/// sent with its own key and stored as its own, whichever app sends first.
@Suite("EngageClient: apps sharing a container")
struct SharedContainerTests {
    /// A server with the apps `photos` and `notes`, and a client of each on one container, each
    /// with a queue of its own.
    static func twoApps() async throws -> (TestServer, Container, photos: EngageClient, notes: EngageClient) {
        let server = try TestServer()
        let photosKey = try await server.key(app: "photos")
        let notesKey = try await server.key(app: "notes")
        let container = Container()
        let photos = try makeClient(container, port: server.port, key: photosKey) { $0.queueName = "com.example.photos" }
        let notes = try makeClient(container, port: server.port, key: notesKey) { $0.queueName = "com.example.notes" }
        return (server, container, photos, notes)
    }

    @Test func appsWithQueuesOfTheirOwnSendOnlyTheirOwnEvents() async throws {
        let (server, container, photos, notes) = try await Self.twoApps()
        defer { container.remove() }
        let photosEvents = try (0..<3).map { try photos.recordExpanded(notificationID: "p\($0)", category: "new_photo") }
        let notesEvents = try (0..<2).map { try notes.recordExpanded(notificationID: "n\($0)", category: "reminder") }

        // Notes sends first: only its own two.
        #expect(await notes.flush(budget: .seconds(5)).accepted == 2)
        #expect(await photos.flush(budget: .seconds(5)).accepted == 3)

        func stored(_ app: String, _ ids: [UUID]) async throws -> Int {
            try await server.count("SELECT count(*) FROM events WHERE app_id = \(app) AND event_id = ANY(\(ids))")
        }
        #expect(try await stored("photos", photosEvents) == 3)
        #expect(try await stored("notes", notesEvents) == 2)
        #expect(photos.pending == (0, 0, 0) && notes.pending == (0, 0, 0))
        await server.stop()
    }

    /// The apps share the installation id; a push with the same notification id to both (one
    /// campaign) is each app's own: both expansions are stored, each under its app. With one id
    /// for both, the second app's event was refused as another app's id and dropped.
    @Test func theSameNotificationIDInTwoAppsCountsInEach() async throws {
        let (server, container, photos, notes) = try await Self.twoApps()
        defer { container.remove() }
        let photosID = try photos.recordExpanded(notificationID: "campaign-7", category: "launch")
        let notesID = try notes.recordExpanded(notificationID: "campaign-7", category: "launch")
        #expect(photosID != notesID)
        // A second expansion in one app is still the same event.
        #expect(try photos.recordExpanded(notificationID: "campaign-7", category: "launch") == photosID)

        let sentByPhotos = await photos.flush(budget: .seconds(5))
        let sentByNotes = await notes.flush(budget: .seconds(5))
        #expect(sentByPhotos.accepted == 1 && sentByNotes.accepted == 1)
        #expect(sentByPhotos.dropped == 0 && sentByNotes.dropped == 0)
        for (app, id) in [("photos", photosID), ("notes", notesID)] {
            let stored = try await server.count(
                "SELECT count(*) FROM events WHERE app_id = \(app) AND notification_id = 'campaign-7' AND event_id = \(id)")
            #expect(stored == 1, "\(app)")
        }
        await server.stop()
    }

    @Test(arguments: ["", ".hidden", "a/b", "..", String(repeating: "x", count: 101), "naïve"])
    func aQueueNameThatIsNoPlainNameIsRefused(name: String) throws {
        let container = Container()
        defer { container.remove() }
        #expect { try makeClient(container, port: 1, key: "egk_x") { $0.queueName = name } } throws: {
            ($0 as? QueueError)?.code == .invalidName
        }
    }
}
