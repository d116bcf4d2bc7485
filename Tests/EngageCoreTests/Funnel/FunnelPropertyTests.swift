import SeededRandom
import Testing
@testable import EngageCore

/// SplitMix64 with its own bounded integers and shuffle: the standard library does not promise
/// that `random(in:using:)` or `shuffle(using:)` draw the same way in every version, and a failing
/// seed must reproduce. Also used by the experiment fold's tests.
struct StreamRandom {
    private var generator: SplitMix64

    init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    mutating func next() -> UInt64 { generator.next() }

    /// 0..<n, n > 0 (multiply-shift; the bias is below 2^-50 for the small n used here).
    mutating func below(_ n: Int) -> Int {
        Int(UInt64(n).multipliedFullWidth(by: next()).high)
    }

    /// True with probability 1/n.
    mutating func oneIn(_ n: Int) -> Bool { below(n) == 0 }

    mutating func pick<T>(_ values: [T]) -> T { values[below(values.count)] }

    mutating func maybe<T>(_ value: T) -> T? { oneIn(3) ? nil : value }

    /// Fisher-Yates.
    mutating func shuffle<T>(_ values: inout [T]) {
        guard values.count > 1 else { return }
        for i in stride(from: values.count - 1, to: 0, by: -1) {
            values.swapAt(i, below(i + 1))
        }
    }
}

/// Random events of one notification. Times fall in six seconds around midnight, so times tie and
/// days differ; categories, devices, tags and presentations disagree now and then.
func randomStream(_ random: inout StreamRandom, notification: String = "apns-1") -> [Event] {
    let midnight = UTCDay(year: 2026, month: 11, day: 30)!.start
    let tags = [ExperimentTag(id: "thumbs-v1", arm: "thumbnail", probability: 0.5),
                ExperimentTag(id: "thumbs-v1", arm: "full", probability: 0.5),
                ExperimentTag(id: "copy-v2", arm: "short")]
    let media = [MediaVariant(variant: "original", kind: .image, format: .jpeg, bytes: 2_400_000),
                 MediaVariant(variant: "poster", kind: .video, format: .mp4, bytes: 9_000_000, durationMS: 15_000)]
    let actions = [ActionDetails.openIdentifier, ActionDetails.dismissIdentifier, "like", "reply", "share"]
    let count = 1 + random.below(12)
    return (0..<count).map { n in
        let details: EventDetails
        switch random.below(5) {
        case 0:
            details = .sent(SentDetails(media: Array(media.prefix(random.below(3))),
                                        strategy: random.maybe(random.pick(AttachmentStrategy.allCases)),
                                        payloadBytes: random.maybe(1000 + random.below(3000))))
        case 1:
            details = .delivered(DeliveredDetails(
                attachment: DeliveredAttachment(
                    kind: random.pick(AttachmentKind.allCases), format: random.maybe(random.pick(MediaFormat.allCases)),
                    bytes: random.maybe(random.below(100_000)), source: random.maybe(random.pick(MediaSource.allCases)),
                    downloadMS: random.maybe(random.below(3000)), variant: random.maybe("thumbnail")),
                outcome: random.pick(DeliveryOutcome.allCases), processingMS: random.below(30_000),
                timeWillExpire: random.oneIn(4), network: random.maybe(random.pick(NetworkType.allCases)),
                strategy: random.maybe(random.pick(AttachmentStrategy.allCases))))
        case 2:
            details = .displayed(DisplayedDetails(presentation: random.pick(Presentation.allCases),
                                                  attachmentKind: random.pick(AttachmentKind.allCases)))
        case 3:
            details = .expanded
        default:
            details = .action(ActionDetails(actionID: random.pick(actions),
                                            textInputLength: random.oneIn(3) ? random.below(40) : nil))
        }
        return Event(eventID: EventID(high: random.next(), low: UInt64(n)), notificationID: notification,
                     deviceID: random.oneIn(8) ? "dev-2" : "dev-1",
                     category: random.oneIn(6) ? "comment" : "new_photo",
                     occurredAt: midnight.adding(microseconds: Int64(random.below(6) - 3) * 1_000_000),
                     experiment: random.oneIn(3) ? nil : random.pick(tags), details: details)
    }
}

/// The events in a random order, each delivered one to three times.
func redelivered(_ events: [Event], _ random: inout StreamRandom) -> [Event] {
    var out: [Event] = []
    for event in events {
        for _ in 0..<(1 + (random.oneIn(3) ? 1 + random.below(2) : 0)) { out.append(event) }
    }
    random.shuffle(&out)
    return out
}

@Suite struct FunnelPropertyTests {
    @Test func encodedStateDecodesToAnEqualState() throws {
        for seed in UInt64(1)...1000 {
            var random = StreamRandom(seed: seed)
            let state = NotificationState(folding: randomStream(&random))
            let decoded = try NotificationState(encoded: state.encoded())
            guard decoded == state, decoded.engagementContribution == state.engagementContribution,
                  decoded.telemetryContribution == state.telemetryContribution else {
                Issue.record("seed \(seed): the state changed through encoding")
                return
            }
            // Merging with a decoded state works as with the original.
            #expect(decoded.merging(state) == state)
        }
        #expect(try NotificationState(encoded: NotificationState().encoded()) == NotificationState())
        #expect(throws: NotificationState.DecodingError.self) { try NotificationState(encoded: Array("{}".utf8)) }
    }

    /// Rows stored before migration 014 hold the JSON form: they must still decode, to the same state.
    @Test func jsonFormStoredBeforeTheBinaryOneStillDecodes() throws {
        for seed in UInt64(1)...500 {
            var random = StreamRandom(seed: seed)
            let state = NotificationState(folding: randomStream(&random))
            let json = state.encodedJSON()
            #expect(json.first == UInt8(ascii: "{"))
            guard try NotificationState(encoded: json) == state else {
                Issue.record("seed \(seed): the JSON form decoded to another state")
                return
            }
        }
    }

    @Test func binaryFormIsDeterministicAndSmallerThanJSON() throws {
        var binaryBytes = 0, jsonBytes = 0
        for seed in UInt64(1)...500 {
            var random = StreamRandom(seed: seed)
            let events = randomStream(&random)
            let state = NotificationState(folding: events)
            // The same events folded in another order give an equal state and the same bytes.
            let reversed = NotificationState(folding: events.reversed())
            #expect(reversed.encoded() == state.encoded())
            binaryBytes += state.encoded().count
            jsonBytes += state.encodedJSON().count
        }
        #expect(binaryBytes * 2 < jsonBytes)
    }

    @Test func damagedBinaryStatesAreRefusedNotTrusted() {
        var random = StreamRandom(seed: 7)
        let encoded = NotificationState(folding: randomStream(&random)).encoded()
        #expect(encoded.count > 20)
        for length in [0, 1, 5, encoded.count - 1] {
            #expect(throws: NotificationState.DecodingError.self) { try NotificationState(encoded: Array(encoded.prefix(length))) }
        }
        #expect(throws: NotificationState.DecodingError.self) { try NotificationState(encoded: encoded + [0]) }
        #expect(throws: NotificationState.DecodingError.self) { try NotificationState(encoded: [9] + encoded.dropFirst()) }
    }

    /// Whatever decodes re-encodes to the same bytes, so a damaged row is refused and never read
    /// as some other state: random byte changes, insertions and deletions of valid encodings (the
    /// format byte kept), and one example of each form the encoder never writes.
    @Test func everyDecodedBinaryStateReencodesToItsOwnBytes() throws {
        var decoded = 0
        for seed in UInt64(1)...300 {
            var random = StreamRandom(seed: seed)
            let encoded = NotificationState(folding: randomStream(&random)).encoded()
            for _ in 0..<40 {
                var bytes = encoded
                let position = 1 + Int(random.next() % UInt64(bytes.count - 1))
                switch random.next() % 3 {
                case 0: bytes[position] = UInt8(truncatingIfNeeded: random.next())
                case 1: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: position)
                default: bytes.remove(at: position)
                }
                guard let state = try? NotificationState(encoded: bytes) else { continue }
                decoded += 1
                guard state.encoded() == bytes else {
                    Issue.record("seed \(seed): \(bytes) decoded to a state that encodes as \(state.encoded())")
                    return
                }
            }
        }
        #expect(decoded > 100, "the mutations mostly kept a valid encoding somewhere: \(decoded)")

        let empty: [UInt8] = [NotificationState.binaryFormat, 0, 0]
        #expect(try NotificationState(encoded: empty) == NotificationState())
        let low = [UInt8](repeating: 1, count: 16), high = [UInt8](repeating: 2, count: 16)
        #expect(try NotificationState(encoded: [NotificationState.binaryFormat, 2] + low + high + [0]).encoded()
                == [NotificationState.binaryFormat, 2] + low + high + [0])
        let neverWritten: [(String, [UInt8])] = [
            ("a padded number", [NotificationState.binaryFormat, 0, 0x80, 0x00]),
            ("a part this version does not know", [NotificationState.binaryFormat, 0, 0x80, 0x10]),
            ("ids out of order", [NotificationState.binaryFormat, 2] + high + low + [0]),
            ("an id twice", [NotificationState.binaryFormat, 2] + low + low + [0]),
            ("a number past 64 bits", [NotificationState.binaryFormat, 0] + [UInt8](repeating: 0xFF, count: 9) + [0x02]),
        ]
        for (form, bytes) in neverWritten {
            #expect(throws: NotificationState.DecodingError.self, "\(form)") { try NotificationState(encoded: bytes) }
        }
    }

    @Test func anyOrderAndAnyDuplicationGiveTheSameState() {
        for seed in UInt64(1)...3000 {
            var random = StreamRandom(seed: seed)
            let events = randomStream(&random)
            let reference = NotificationState(folding: events)
            guard reference.eventCount == events.count else {
                Issue.record("seed \(seed): \(reference.eventCount) events counted of \(events.count)")
                return
            }
            for _ in 0..<4 {
                let folded = NotificationState(folding: redelivered(events, &random))
                guard folded == reference else {
                    Issue.record("seed \(seed): the state depends on the order or on repeats")
                    return
                }
            }
        }
    }

    @Test func mergeIsCommutativeAssociativeAndIdempotent() {
        for seed in UInt64(10_001)...13_000 {
            var random = StreamRandom(seed: seed)
            let events = randomStream(&random)
            // Three overlapping batches that together hold every event.
            var batches: [[Event]] = [[], [], []]
            for event in events {
                batches[random.below(3)].append(event)
                if random.oneIn(4) { batches[random.below(3)].append(event) }
            }
            let a = NotificationState(folding: batches[0])
            let b = NotificationState(folding: batches[1])
            let c = NotificationState(folding: batches[2])
            let all = NotificationState(folding: events)
            let laws: [(String, Bool)] = [
                ("a + b == b + a", a.merging(b) == b.merging(a)),
                ("a + a == a", a.merging(a) == a),
                ("(a + b) + c == a + (b + c)", a.merging(b).merging(c) == a.merging(b.merging(c))),
                ("a + b + c == all", a.merging(b).merging(c) == all),
                ("a + empty == a", a.merging(NotificationState()) == a),
                ("equal states hash alike", a.merging(b).hashValue == b.merging(a).hashValue),
            ]
            for (law, holds) in laws where !holds {
                Issue.record("seed \(seed): \(law) fails")
                return
            }
        }
    }

    /// A projector that applies each event's difference keeps, for interleaved notifications,
    /// exactly the sum of their final contributions.
    @Test func deltasKeepTheReadModelEqualToTheFinalContributions() {
        for seed in UInt64(20_001)...20_300 {
            var random = StreamRandom(seed: seed)
            let streams = (0..<(1 + random.below(6))).map { randomStream(&random, notification: "apns-\($0)") }
            var arrivals = streams.flatMap { redelivered($0, &random) }
            random.shuffle(&arrivals)

            var states: [String: NotificationState] = [:]
            var engagement: [EngagementContribution.Bucket: EngagementContribution.Counters] = [:]
            var telemetry: [TelemetryContribution.Bucket: TelemetryContribution.Counters] = [:]
            for event in arrivals {
                let old = states[event.notificationID, default: NotificationState()]
                let new = old.applying(event)
                states[event.notificationID] = new
                for delta in EngagementContribution.difference(from: old.engagementContribution,
                                                               to: new.engagementContribution) {
                    add(delta.counters, to: delta.bucket, in: &engagement)
                }
                for delta in TelemetryContribution.difference(from: old.telemetryContribution,
                                                              to: new.telemetryContribution) {
                    add(delta.counters, to: delta.bucket, in: &telemetry)
                }
            }

            var expectedEngagement: [EngagementContribution.Bucket: EngagementContribution.Counters] = [:]
            var expectedTelemetry: [TelemetryContribution.Bucket: TelemetryContribution.Counters] = [:]
            for events in streams {
                let state = NotificationState(folding: events)
                if let c = state.engagementContribution { add(c.counters, to: c.bucket, in: &expectedEngagement) }
                if let c = state.telemetryContribution { add(c.counters, to: c.bucket, in: &expectedTelemetry) }
            }
            guard engagement == expectedEngagement, telemetry == expectedTelemetry else {
                Issue.record("seed \(seed): the read model drifted from the final contributions")
                return
            }
        }
    }
}

/// Adds `counters` to a bucket of a read model, removing buckets that come to zero.
private func add<Bucket: Hashable, Counters: AdditiveArithmetic>(
    _ counters: Counters, to bucket: Bucket, in model: inout [Bucket: Counters]
) {
    let total = model[bucket, default: .zero] + counters
    model[bucket] = total == .zero ? nil : total
}
