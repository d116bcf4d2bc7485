import ClientTestSupport
import Foundation
import Testing
import TestSupport
@testable import EngageClient

/// What a flush reports as delivered: an event whose send had no answer (a gateway's 502 after
/// the server stored it, a broken connection, a budget that ran out mid-request) is delivered,
/// and the server's answer to its resend, a duplicate, must not hide that. The lost answer is a
/// fault injector's 502; the request it swallowed is then handed to the real server, as a
/// gateway would have done before failing.
@Suite("EngageClient counts what it delivered", .serialized)
struct DeliveredCountTests {
    @Test func aResendAnsweredAsDuplicatesAfterALostAnswerCountsAsDelivered() async throws {
        let server = try TestServer()
        let key = try await server.key()
        let gateway = try FaultInjector(reply: .respond(status: 502, headers: [("Content-Type", "text/html")], body: "Bad Gateway"))
        defer { gateway.stop() }
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()
        let throughGateway = try makeClient(container, port: gateway.port, key: key, drops: drops) { $0.gzip = false }
        let good = try (0..<3).map { try throughGateway.recordExpanded(notificationID: "n\($0)", category: "new_photo") }
        let bad = try throughGateway.recordAction(notificationID: "n9", category: "new_photo", actionID: String(repeating: "x", count: 65))

        let lost = await throughGateway.flush(budget: .seconds(2))
        #expect(lost.requests >= 1 && lost.accepted == 0 && lost.dropped == 0, "\(lost)")
        let swallowed = try #require(gateway.hits.first)
        #expect(swallowed.headers["content-type"] == "application/x-ndjson")
        let stored = try await server.post(String(decoding: swallowed.body, as: UTF8.self), key: key,
                                           contentType: "application/x-ndjson")
        #expect(stored.status == 200 && stored.text.hasPrefix(#"{"accepted":3,"duplicates":0,"#), "\(stored.text)")

        // The resend, once the way is clear: the server has the three, and rejects the fourth again.
        let direct = try makeClient(container, port: server.port, key: key, drops: drops)
        let resent = await direct.flush(budget: .seconds(5))
        #expect(resent == .init(ending: .drained, requests: 1, accepted: 3, duplicates: 0, dropped: 1))
        // The rejection is counted once, for the one answer that said so.
        var rejectedOnce = DropCounts()
        rejectedOnce.rejected = 1
        #expect(direct.dropCounts == rejectedOnce)
        #expect(drops.all.map(\.eventIDs) == [[bad.uuidString.lowercased()]])
        #expect(try await DeliveredCountTests.stored(server, good + [bad]) == 3)
        #expect(direct.pending == (0, 0, 0))
        await server.stop()
    }

    /// An event the server had from another send than this queue's (a name-based id another
    /// process recorded and sent first) stays a duplicate: this queue never sent it before.
    /// One unanswered id carried twice in a request (the display recorded again once its id had
    /// left the recent ids): the server stores the first copy and answers the second as a
    /// duplicate of it, which is no earlier arrival. It was counted as one, so the flush reported
    /// two events delivered for one stored.
    @Test func anIDTwiceInARequestIsNoEarlierArrival() {
        #expect(ResentDuplicates.arrivedEarlier(duplicates: 1, eventIDs: ["x", "x"], unanswered: ["x"], rejected: []) == 0)
        let ids = ["x", "x", "y"]
        #expect(ResentDuplicates.arrivedEarlier(duplicates: 1, eventIDs: ids, unanswered: ["x"], rejected: []) == 0)
        // The first copy had arrived after all (and y from elsewhere): three duplicates, one earlier.
        #expect(ResentDuplicates.arrivedEarlier(duplicates: 3, eventIDs: ids, unanswered: ["x"], rejected: []) == 1)
        // Two duplicates may be the repeat and y: none is proven earlier.
        #expect(ResentDuplicates.arrivedEarlier(duplicates: 2, eventIDs: ids, unanswered: ["x"], rejected: []) == 0)
        // A rejected copy is neither: the other copy alone, answered as a duplicate, arrived earlier.
        #expect(ResentDuplicates.arrivedEarlier(duplicates: 1, eventIDs: ["x", "x"], unanswered: ["x"], rejected: [0]) == 1)
        #expect(ResentDuplicates.arrivedEarlier(duplicates: 2, eventIDs: ["a", "b"], unanswered: ["a", "b"], rejected: []) == 2)
    }

    @Test func anEventStoredFromElsewhereStaysADuplicate() async throws {
        let server = try TestServer()
        let key = try await server.key()
        let elsewhere = Container(), here = Container()
        defer {
            elsewhere.remove()
            here.remove()
        }
        let first = try makeClient(elsewhere, port: server.port, key: key)
        try first.recordExpanded(notificationID: "n1", category: "new_photo")
        #expect(await first.flush(budget: .seconds(5)).accepted == 1)
        let second = try makeClient(here, port: server.port, key: key)
        try second.recordExpanded(notificationID: "n1", category: "new_photo")
        try second.recordExpanded(notificationID: "n2", category: "new_photo")
        let report = await second.flush(budget: .seconds(5))
        #expect(report == .init(ending: .drained, requests: 1, accepted: 1, duplicates: 1, dropped: 0))
        await server.stop()
    }

    /// A resend that also carries an event this queue never sent, which the server had from
    /// elsewhere (a name-based id another process recorded and sent first): the answer's counts
    /// do not say which events were the duplicates, so the one duplicate must not be taken for
    /// the unanswered event's arrival. Here the unanswered event was never stored (the gateway
    /// swallowed it): the server stores it now, and the duplicate is the other process's.
    @Test func aDuplicateFromElsewhereBesideAnUnansweredEventStaysADuplicate() async throws {
        let server = try TestServer()
        let key = try await server.key()
        let gateway = try FaultInjector(reply: .respond(status: 502, headers: [("Content-Type", "text/html")], body: "Bad Gateway"))
        defer { gateway.stop() }
        let elsewhere = Container(), here = Container()
        defer {
            elsewhere.remove()
            here.remove()
        }
        let other = try makeClient(elsewhere, port: server.port, key: key)
        try other.recordExpanded(notificationID: "n1", category: "new_photo")
        #expect(await other.flush(budget: .seconds(5)).accepted == 1)

        let throughGateway = try makeClient(here, port: gateway.port, key: key) { $0.gzip = false }
        let unanswered = try throughGateway.recordExpanded(notificationID: "n2", category: "new_photo")
        let lost = await throughGateway.flush(budget: .seconds(2))
        #expect(lost.requests >= 1 && lost.accepted == 0, "\(lost)")
        #expect(try await Self.stored(server, [unanswered]) == 0)

        // Recorded after the lost send, so never sent by this queue; its id is the other's.
        let direct = try makeClient(here, port: server.port, key: key)
        try direct.recordExpanded(notificationID: "n1", category: "new_photo")
        let resent = await direct.flush(budget: .seconds(5))
        #expect(resent == .init(ending: .drained, requests: 1, accepted: 1, duplicates: 1, dropped: 0))
        #expect(try await Self.stored(server, [unanswered]) == 1)
        await server.stop()
    }

    static func stored(_ server: TestServer, _ ids: [UUID]) async throws -> Int {
        try await server.count("SELECT count(*) FROM events WHERE event_id = ANY(\(ids))")
    }
}
