@testable import EngageCore
import EventStore
import Foundation
import Postgres
import Synchronization
import Testing
import TestSupport

@Suite("Event store")
struct EventStoreTests {
    let pool: ConnectionPool
    let store: EventStore

    init() throws {
        pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 6)
        store = EventStore(pool: pool)
    }

    private func count(_ table: String) async throws -> Int {
        try await pool.withConnection { connection in
            try connection.query("SELECT count(*) FROM \(identifier: table)")[0].decode(0, as: Int.self)
        }
    }

    /// Waits until `count` events are visible to a log reader. A reader sees only transactions
    /// older than every one still running in the cluster, and the other suites' tests append in
    /// databases of the same cluster: right after an append its events may not be visible yet.
    private func waitUntilVisible(_ count: Int) async throws {
        try await pollUntil(every: .milliseconds(5)) {
            try await pool.withConnection { try EventStore.readFoldable(after: .start, limit: count + 1, on: $0) }.count >= count
        }
    }

    @Test func appendedEventsReadBackWithEveryField() async throws {
        let experiment = ExperimentTag(id: "thumbs-v1", arm: "thumbnail", probability: 0.5)
        var event = EventFactory.delivered(notification: "apns-7C2E")
        event.experiment = experiment
        event.properties = Array(#"{"campaign":"winter"}"#.utf8)
        let result = try await store.append([AppendItem(appID: "app-1", event: event)])
        #expect(result.outcomes == [.stored])

        let read = try await store.read(after: .start, limit: 10)
        #expect(read.count == 1)
        let stored = try #require(read.first)
        #expect(stored.eventID == event.eventID)
        #expect(stored.appID == "app-1")
        #expect(stored.notificationID == "apns-7C2E")
        #expect(stored.type == "delivered")
        #expect(stored.category == "new_photo")
        #expect(stored.deviceID == "device-1")
        #expect(stored.occurredAt == event.occurredAt)
        #expect(stored.experimentID == "thumbs-v1")
        #expect(stored.experimentArm == "thumbnail")
        // The jsonb payload decodes back to the same event.
        let decoded = try Event(eventID: stored.eventID, type: .delivered, notificationID: stored.notificationID,
                                deviceID: stored.deviceID, category: stored.category, occurredAt: stored.occurredAt,
                                payloadJSON: stored.payload)
        // jsonb keeps the content of properties, not their spacing.
        #expect(decoded.properties.map { String(decoding: $0, as: UTF8.self) } == #"{"campaign": "winter"}"#)
        var withoutProperties = decoded
        withoutProperties.properties = event.properties
        #expect(withoutProperties == event)
    }

    /// The projector's lean read is the full read without the columns its fold never uses: the
    /// same events in the same order, every remaining field equal, and `recorded_at` (which only
    /// the full read returns) the append's time, not another timestamp column.
    @Test(.timeLimit(.minutes(1))) func theProjectorsReadEqualsTheFullReadWithoutItsUnusedColumns() async throws {
        func now() -> Timestamp { Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000)) }
        let before = now()
        var tagged = EventFactory.delivered(notification: "apns-lean")
        tagged.experiment = ExperimentTag(id: "thumbs-v1", arm: "thumbnail", probability: 0.5)
        let items = EventFactory.items(30) + [AppendItem(appID: "app-2", event: tagged)]
        _ = try await store.append(items)
        let after = now()
        try await waitUntilVisible(items.count)

        let full = try await store.read(after: .start, limit: 100)
        let lean = try await pool.withConnection { try EventStore.readFoldable(after: .start, limit: 100, on: $0) }
        #expect(full.count == items.count)
        #expect(lean == full.map(FoldableEvent.init))
        let positions = full.map(\.position)
        #expect(positions == positions.sorted())
        for stored in full {
            #expect(stored.recordedAt >= before.adding(microseconds: -1_000_000) && stored.recordedAt <= after.adding(microseconds: 1_000_000))
        }
        let taggedRow = try #require(full.first { $0.eventID == tagged.eventID })
        #expect(taggedRow.experimentID == "thumbs-v1" && taggedRow.experimentArm == "thumbnail" && taggedRow.appID == "app-2")
    }

    /// Payloads as PostgreSQL's `jsonb` renders them (keys reordered, spacing, its own escapes)
    /// decode to the same event by the projector's trusted path as by the full decoder, and by the
    /// fast path itself, not its fallback.
    @Test(.timeLimit(.minutes(1))) func storedPayloadsDecodeTheSameByTheTrustedPathAsByTheFullDecoder() async throws {
        let tag = ExperimentTag(id: "thumbs-\"v1\"", arm: "tête\\à\\tête", probability: 0.125)
        // jsonb renders a small probability in plain decimals (0.00000025), never with an exponent.
        let rareTag = ExperimentTag(id: "rare", arm: "thumbnail", probability: 2.5e-7)
        let shapes: [EventDetails] = [
            .sent(SentDetails(media: [
                MediaVariant(variant: "original", kind: .image, format: .jpeg, bytes: 2_400_000, width: 4032, height: 3024),
                MediaVariant(variant: "通知/👍🏽", kind: .video, format: .mp4, bytes: 9_007_199_254_740_992, durationMS: 15_000),
            ], strategy: .adaptive, payloadBytes: 2890)),
            .sent(SentDetails(media: [])),
            .delivered(DeliveredDetails(
                attachment: DeliveredAttachment(kind: .gif, format: .gif, bytes: 1, source: .cache, downloadMS: 0,
                                                variant: "e\u{301}", httpStatus: 404),
                outcome: .downloadFailed, processingMS: 0, timeWillExpire: true, network: .cellular, strategy: .poster)),
            .delivered(DeliveredDetails(attachment: DeliveredAttachment(kind: .noAttachment), outcome: .notRequested,
                                        processingMS: 12, timeWillExpire: false)),
            .displayed(DisplayedDetails(presentation: .plain, attachmentKind: .noAttachment)),
            .expanded,
            .action(ActionDetails(actionID: ActionDetails.openIdentifier, textInputLength: 12)),
            .action(ActionDetails(actionID: "répondre \"vite\" \\ now")),
        ]
        var events: [Event] = []
        for (i, details) in shapes.enumerated() {
            var event = EventFactory.event(notification: "apns-trusted-\(i)", details: details)
            if i % 2 == 0 { event.experiment = i % 4 == 0 ? tag : rareTag }
            if i % 3 == 0 { event.properties = Array(#"{"tab":"a\tb","nested":{"list":[1,2.5e3,"\u00e9",null,true]},"q":"\"\\"}"#.utf8) }
            events.append(event)
        }
        _ = try await store.append(events.map { AppendItem(appID: "app-1", event: $0) })
        try await waitUntilVisible(events.count)

        let read = try await pool.withConnection { try EventStore.readFoldable(after: .start, limit: 100, on: $0) }
        #expect(read.count == events.count)
        for stored in read {
            let type = try #require(EventType(rawValue: stored.type))
            let full = try Event(eventID: stored.eventID, type: type, notificationID: stored.notificationID, deviceID: stored.deviceID,
                                 category: stored.category, occurredAt: stored.occurredAt, payloadJSON: stored.payload)
            let trusted = try Event(eventID: stored.eventID, type: type, notificationID: stored.notificationID, deviceID: stored.deviceID,
                                    category: stored.category, occurredAt: stored.occurredAt, trustedPayloadJSON: stored.payload)
            #expect(trusted == full)
            // `String`'s == is canonical equivalence; the read model compares bytes.
            #expect(trusted.payloadJSON == full.payloadJSON)
            #expect(trusted.details == events.first { $0.eventID == stored.eventID }?.details)
            // Appended here without ingestion's composition, the decomposed "e\u{301}" is stored
            // outside NFC: that payload is the full decoder's to read, every other one the fast path's.
            let text = String(decoding: stored.payload, as: UTF8.self)
            let inNFC = text.precomposedStringWithCanonicalMapping.utf8.elementsEqual(stored.payload)
            #expect((TrustedPayloadReader.read(type: type, stored.payload) != nil) == inNFC, "\(text)")
        }
    }

    @Test func retriedBatchStoresNothingTwice() async throws {
        let items = EventFactory.items(50)
        let first = try await store.append(items)
        #expect(first.storedCount == 50)
        let retry = try await store.append(items)
        #expect(retry.outcomes == Array(repeating: .duplicate, count: 50))
        // A batch mixing new and known ids stores only the new ones, and repeats inside it count once.
        let mixed = Array(items[0..<5]) + EventFactory.items(3, notificationPrefix: "m")
        let mixedResult = try await store.append(mixed + [mixed[6]])
        #expect(mixedResult.outcomes == Array(repeating: .duplicate, count: 5) + [.stored, .stored, .stored, .duplicate])
        #expect(try await count("events") == 53)
    }

    @Test(.timeLimit(.minutes(1)))
    func racingAppendsOfTheSameIdsStoreEachOnce() async throws {
        let shared = EventFactory.items(300)
        // Eight appenders, each with the shared events (shuffled differently) and some of its own.
        let results = try await withThrowingTaskGroup(of: (Int, AppendResult).self) { group in
            for writer in 0..<8 {
                group.addTask {
                    var generator = SystemRandomNumberGenerator()
                    let batch = shared.shuffled(using: &generator) + EventFactory.items(20, notificationPrefix: "own-\(writer)")
                    return (writer, try await store.append(batch))
                }
            }
            return try await group.reduce(into: [Int: AppendResult]()) { $0[$1.0] = $1.1 }
        }
        let storedTotal = results.values.reduce(0) { $0 + $1.storedCount }
        #expect(storedTotal == 300 + 8 * 20)
        #expect(results.values.reduce(0) { $0 + $1.duplicateCount } == 7 * 300)
        #expect(try await count("events") == 460)
        let distinct = try await pool.withConnection { connection in
            try connection.query("SELECT count(DISTINCT event_id) FROM events")[0].decode(0, as: Int.self)
        }
        #expect(distinct == 460)
        // The idempotency key holds exactly the stored events' ids (migration 010).
        #expect(try await count("event_ids") == 460)
        let keyed = try await pool.withConnection { connection in
            try connection.query("SELECT count(*) FROM events JOIN event_ids USING (event_id)")[0].decode(0, as: Int.self)
        }
        #expect(keyed == 460)
    }

    @Test func groupOfBatchesCommitsTogetherAndTheFirstCarrierOfAnIdWins() async throws {
        let known = EventFactory.items(2, notificationPrefix: "known")
        _ = try await store.append(known)
        let shared = EventFactory.items(1, notificationPrefix: "shared")
        let first = EventFactory.items(3, notificationPrefix: "a") + shared
        let second = shared + [known[1]] + EventFactory.items(2, notificationPrefix: "b")
        let results = try await store.append([PreparedBatch(first), PreparedBatch(second)])
        #expect(results[0].outcomes == [.stored, .stored, .stored, .stored])
        #expect(results[1].outcomes == [.duplicate, .duplicate, .stored, .stored])
        #expect(try await count("events") == 2 + 6)
        // Without any known id the whole group takes the fast path.
        let fresh = try await store.append([PreparedBatch(EventFactory.items(4, notificationPrefix: "c")),
                                            PreparedBatch(EventFactory.items(5, notificationPrefix: "d"))])
        #expect(fresh.map(\.storedCount) == [4, 5])
        #expect(try await count("events") == 2 + 6 + 9)
    }

    /// Event ids are one key for every app: an id another app's event holds is not this app's
    /// duplicate (nothing of this app was stored), and must not be reported as one; within a
    /// group too, and on either path (the id found already stored, or carried first by another
    /// app's request in the same group).
    @Test func anIDAnotherAppHoldsIsReportedAsSuchNotAsADuplicate() async throws {
        let theirs = EventFactory.items(2, app: "app-theirs", notificationPrefix: "theirs")
        _ = try await store.append(theirs)
        let mine = [AppendItem(appID: "app-mine", event: theirs[0].event)] + EventFactory.items(1, app: "app-mine", notificationPrefix: "mine")
        #expect(try await store.append(mine).outcomes == [.idOfAnotherApp, .stored])
        // A retry of this app's own event is still a duplicate.
        #expect(try await store.append(mine).outcomes == [.idOfAnotherApp, .duplicate])

        let shared = EventFactory.items(1, app: "app-a", notificationPrefix: "shared")
        let other = [AppendItem(appID: "app-b", event: shared[0].event)] + EventFactory.items(1, app: "app-b", notificationPrefix: "b")
        let results = try await store.append([PreparedBatch(shared), PreparedBatch(other)])
        #expect(results[0].outcomes == [.stored])
        #expect(results[1].outcomes == [.idOfAnotherApp, .stored])
        #expect(try await count("events") == 2 + 1 + 2)
    }

    @Test func severalAppendsInOneOpenTransaction() async throws {
        let first = EventFactory.items(3, notificationPrefix: "t1")
        let second = EventFactory.items(2, notificationPrefix: "t2") + [first[0]]
        let results = try await pool.withConnection { connection in
            try connection.transaction { connection in
                [try EventStore.appendInOpenTransaction(first, on: connection),
                 try EventStore.appendInOpenTransaction(second, on: connection)]
            }
        }
        #expect(results[0].outcomes == [.stored, .stored, .stored])
        #expect(results[1].outcomes == [.stored, .stored, .duplicate])
        #expect(try await count("events") == 5)
    }

    /// An append and another writer's transaction holding each other's ids: PostgreSQL aborts one
    /// as a deadlock victim. When that is the append's COPY, the append retries and finds the
    /// other's events stored.
    @Test(.timeLimit(.minutes(1)))
    func crossedAppendsThatDeadlockAreRetried() async throws {
        // In id order, as the append sends them; the other writer takes them in the other order.
        let items = EventFactory.items(2, notificationPrefix: "crossed").sorted { $0.event.eventID < $1.event.eventID }
        let other = try Connection(configuration: pool.configuration)
        defer { other.close() }
        try other.execute("BEGIN")
        _ = try EventStore.appendInOpenTransaction([items[1]], on: other)
        let append = Task { try await store.append(items) }
        // The append's COPY has stored the first event and waits for the second.
        try await pollUntil(every: .milliseconds(10)) {
            try await pool.withConnection { connection in
                try connection.query("SELECT count(*) FROM pg_locks WHERE NOT granted")[0].decode(0, as: Int.self)
            } > 0
        }
        let otherStored: Bool
        do {
            _ = try EventStore.appendInOpenTransaction([items[0]], on: other)
            try other.execute("COMMIT")
            otherStored = true
        } catch let error as PostgresError {
            #expect(error.sqlState == "40P01")
            try other.execute("ROLLBACK")
            otherStored = false
        }
        let result = try await append.value
        #expect(result.outcomes == Array(repeating: otherStored ? .duplicate : .stored, count: 2))
        #expect(try await count("events") == 2)
    }

    @Test func batchWithOneBadRowStoresNothing() async throws {
        var items = EventFactory.items(20)
        // A NUL in a text column is refused by PostgreSQL inside the COPY, after earlier rows went in.
        items[13].event.category = "bad\u{0}category"
        await #expect(throws: PostgresError.self) { try await store.append(items) }
        #expect(try await count("events") == 0)
        // The same batch without the bad row goes through completely afterwards.
        items.remove(at: 13)
        #expect(try await store.append(items).storedCount == 19)
    }

    @Test func streamReadReturnsOneNotificationInOrder() async throws {
        let notification = "apns-1"
        let events = (0..<5).map { _ in EventFactory.event(notification: notification) }
        for event in events {
            _ = try await store.append([AppendItem(appID: "app-1", event: event)] + EventFactory.items(2, notificationPrefix: UUID().uuidString))
        }
        _ = try await store.append([AppendItem(appID: "other-app", event: EventFactory.event(notification: notification))])
        let stream = try await store.read(app: "app-1", notification: notification)
        #expect(stream.map(\.eventID) == events.map(\.eventID))
    }

    @Test(.timeLimit(.minutes(2)))
    func tailingNeverSkipsWhileWritersCommitOutOfOrder() async throws {
        // Writers hold their transactions open for random times so commits land out of position order.
        let writers = 6, batchesPerWriter = 25
        let configuration = pool.configuration
        let reader = LogTail()
        let tail = Task { try await reader.run(store) }
        try await OutOfOrderWriters.run(writers, batches: batchesPerWriter, on: configuration) { writer, batch in
            EventFactory.items(Int.random(in: 1...8), notificationPrefix: "w\(writer)-\(batch)")
        }
        reader.finish()
        let tailed = try await tail.value
        #expect(tailed.repeated.isEmpty && tailed.isInLogOrder)
        let full = try await store.read(after: .start, limit: 100_000)
        #expect(tailed.order.count == full.count)
        #expect(Dictionary(uniqueKeysWithValues: full.map { ($0.position, $0.eventID) }) == tailed.events)
    }
}
