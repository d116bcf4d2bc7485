import Foundation
import Testing
@testable import EngageCore

@Suite struct TrafficSimulatorTests {
    static let start = Timestamp(rfc3339: "2026-11-29T00:00:00Z")!

    static func scenario(notifications: Int, devices: Int = 1_000, _ change: (inout SimulationScenario) -> Void = { _ in })
        -> SimulationScenario
    {
        var scenario = SimulationScenario.standard
        scenario.notificationCount = notifications
        scenario.deviceCount = devices
        change(&scenario)
        return scenario
    }

    static func run(_ scenario: SimulationScenario, seed: UInt64 = 1, options: SimulationOptions = SimulationOptions(),
                    batchSize: Int = 500) throws -> (events: [Event], truth: SimulationGroundTruth) {
        var simulator = try TrafficSimulator(scenario: scenario, seed: seed, start: start, options: options)
        var events: [Event] = []
        while let batch = simulator.next(batchSize: batchSize) {
            #expect(batch.count <= batchSize)
            events.append(contentsOf: batch)
        }
        #expect(simulator.isFinished)
        return (events, simulator.groundTruth)
    }

    // MARK: Determinism and identifiers

    @Test func theSameSeedGivesTheSameEventsWhateverTheBatchSize() throws {
        let scenario = Self.scenario(notifications: 2_000)
        let (a, truthA) = try Self.run(scenario, seed: 99, batchSize: 1_000)
        let (b, truthB) = try Self.run(scenario, seed: 99, batchSize: 7)
        #expect(a == b)
        #expect(truthA == truthB)

        var batches = try TrafficSimulator(scenario: scenario, seed: 99, start: Self.start).batches(size: 333)
        var c: [Event] = []
        while let batch = batches.next() { c.append(contentsOf: batch) }
        #expect(c == a)
        #expect(batches.groundTruth == truthA)
    }

    @Test func anotherSeedGivesOtherEvents() throws {
        let scenario = Self.scenario(notifications: 500)
        let (a, _) = try Self.run(scenario, seed: 1)
        let (b, _) = try Self.run(scenario, seed: 2)
        #expect(Set(a.map(\.eventID)).isDisjoint(with: b.map(\.eventID)))
        #expect(a.first?.notificationID == "sim-1-1")
        #expect(b.first?.notificationID == "sim-2-1")
        // Beyond the ids, the traffic itself differs.
        #expect(a.map(\.deviceID) != b.map(\.deviceID))
        #expect(a.map(\.occurredAt) != b.map(\.occurredAt))
    }

    @Test func identifiersFollowTheirPatterns() throws {
        let scenario = Self.scenario(notifications: 3_000, devices: 200)
        let (events, truth) = try Self.run(scenario, seed: 5)
        #expect(Set(events.map(\.eventID)).count == events.count)
        #expect(truth.events == events.count)
        #expect(Set(events.map(\.notificationID)) == Set((1...3_000).map { "sim-5-\($0)" }))
        let devices = Set((1...200).map { "device-\($0)" })
        #expect(events.allSatisfy { devices.contains($0.deviceID) })
        // Random-looking version 4 UUIDs.
        #expect(events.allSatisfy { $0.eventID.bytes[6] >> 4 == 4 && $0.eventID.bytes[8] >> 6 == 2 })
    }

    // MARK: Validity

    @Test func everyEventRoundTripsThroughTheWireDecoder() throws {
        let scenario = Self.scenario(notifications: 4_000)
        var simulator = try TrafficSimulator(scenario: scenario, seed: 17, start: Self.start)
        let end = simulator.end
        #expect(end == Timestamp(rfc3339: "2026-11-30T00:00:00Z"))
        let events = simulator.remainingEvents()
        var types = Set<EventType>()
        for event in events {
            #expect(event.occurredAt >= Self.start && event.occurredAt <= end)
            let decoded = try Event.decodeWire(event.encodeWireJSON(), limits: EventLimits(), now: end)
            #expect(decoded == event)
            types.insert(event.type)
        }
        #expect(types == Set(EventType.allCases))
    }

    @Test func eachNotificationsEventsAreInTimeOrderAndFollowTheFunnel() throws {
        let (events, _) = try Self.run(Self.scenario(notifications: 3_000))
        for (_, stream) in Dictionary(grouping: events, by: \.notificationID) {
            #expect(TrafficSimulator.isInTimeOrder(stream))
            #expect(stream.map(\.type).prefix(3) == [.sent, .delivered, .displayed])
            guard case .delivered(let delivered) = stream[1].details,
                  case .displayed(let displayed) = stream[2].details else {
                Issue.record("unexpected funnel")
                continue
            }
            #expect((displayed.presentation == .rich) == (delivered.outcome == .attached))
            if case .sent(let sent) = stream[0].details, sent.media.isEmpty {
                #expect(delivered.outcome == .notRequested)
            }
            #expect(displayed.attachmentKind == delivered.attachment.kind)
            // An action needs an expanded notification; at most one of open and dismiss.
            let actions = stream.compactMap { event -> ActionDetails? in
                if case .action(let a) = event.details { return a } else { return nil }
            }
            if actions.contains(where: \.isCustom) { #expect(stream.contains { $0.type == .expanded }) }
            #expect(actions.filter { !$0.isCustom }.count <= 1)
            for action in actions where action.actionID == "reply" { #expect(action.textInputLength != nil) }
        }
    }

    // MARK: Ground truth

    /// Folds the events as the projections do and tallies them like the ground truth.
    static func foldedTallies(_ events: [Event]) -> [SimulationCell: EngagementTally] {
        var cells: [SimulationCell: EngagementTally] = [:]
        for (_, stream) in Dictionary(grouping: events, by: \.notificationID) {
            let facts = NotificationState(folding: stream).engagementFacts!
            let presentation: Presentation = facts.presentation == .rich ? .rich : .plain
            #expect(facts.presentation != .unknown)
            var tally = EngagementTally()
            for stage in [.displayed] + FunnelStage.engagements where facts.stages.contains(stage) { tally[stage] = 1 }
            for id in facts.customActionIDs { tally.actions[id] = 1 }
            let cell = SimulationCell(category: facts.category, presentation: presentation)
            cells[cell] = (cells[cell] ?? EngagementTally()) + tally
        }
        return cells
    }

    @Test func realizedCountsAreWhatTheFoldOfTheEventsSays() throws {
        let (events, truth) = try Self.run(Self.scenario(notifications: 5_000))
        #expect(Self.foldedTallies(events) == truth.realized)
        #expect(truth.notifications == 5_000)
        #expect(truth.realized.values.reduce(0) { $0 + $1[.displayed] } == 5_000)
        var outcomes = OutcomeTally()
        for event in events { if case .delivered(let d) = event.details { outcomes.record(d.outcome) } }
        #expect(truth.outcomesByCategory.values.reduce(0) { $0 + $1.total } == 5_000)
        for outcome in DeliveryOutcome.allCases {
            #expect(truth.outcomesByCategory.values.reduce(0) { $0 + $1[outcome] } == outcomes[outcome])
        }
    }

    @Test func configuredTruthIsTheScenarios() throws {
        let simulator = try TrafficSimulator(scenario: .standard, seed: 1, start: Self.start)
        let truth = simulator.groundTruth
        #expect(truth.configuredRates(category: "new_photo", presentation: .plain)
                == EngagementRates(expanded: 0.10, actioned: 0.04, opened: 0.18, dismissed: 0.25, replied: 0.01))
        let rich = truth.configuredRates(category: "new_photo", presentation: .rich)!
        #expect(abs(rich.expanded - 0.16) < 1e-12)
        #expect(truth.configuredLift(category: "chat_message")?.replied == 1.1)
        #expect(truth.configuredLift(category: "promo_sale") == EngagementLift.none)
        #expect(truth.configuredRates(category: "unknown", presentation: .rich) == nil)
        #expect(truth.notifications == 0 && truth.realized.isEmpty)
    }

    /// Over 20,000 notifications every realized rate lies within 4 standard errors of its
    /// configured rate (40 comparisons; a fixed seed, so the test is reproducible).
    @Test func realizedRatesConvergeToConfiguredRates() throws {
        let (_, truth) = try Self.run(Self.scenario(notifications: 20_000, devices: 2_000), seed: 2026, batchSize: 5_000)
        var compared = 0
        for category in truth.categories {
            for presentation in Presentation.allCases {
                let tally = truth.realized(category: category.name, presentation: presentation)
                guard tally[.displayed] >= 300 else { continue }
                let configured = category.rates(for: presentation)
                for stage in FunnelStage.engagements {
                    let p = configured[stage]
                    let se = (p * (1 - p) / Double(tally[.displayed])).squareRoot()
                    if p == 0 {
                        #expect(tally[stage] == 0)
                    } else {
                        #expect(abs(tally.rate(stage) - p) <= 4 * se,
                                "\(category.name)/\(presentation) \(stage.name): \(tally.rate(stage)) vs \(p), n=\(tally[.displayed])")
                    }
                    compared += 1
                }
            }
        }
        // Both presentations of every category are well populated in the standard scenario.
        #expect(compared == 40)
        // Rich lifts expansion of new photos by 1.6: the realized ratio is close.
        let photoRich = truth.realized(category: "new_photo", presentation: .rich).rate(.expanded)
        let photoPlain = truth.realized(category: "new_photo", presentation: .plain).rate(.expanded)
        #expect(photoRich / photoPlain > 1.3 && photoRich / photoPlain < 2.0)
    }

    // MARK: Pipeline outcomes

    @Test func slowNetworksGiveMorePlainFallbacks() throws {
        func richShare(_ network: NetworkType, _ profile: NetworkProfile) throws -> OutcomeTally {
            let scenario = Self.scenario(notifications: 4_000) { scenario in
                scenario.networks = NetworkMix([NetworkShare(network, weight: 1, profile: profile)], deviceSpread: 0.3, jitter: 0.3)
                scenario.experiment = nil
            }
            return try Self.run(scenario, batchSize: 4_000).truth.outcomesByNetwork[network]!
        }
        let fast = try richShare(.wifi, NetworkProfile(throughputBytesPerSecond: 5_000_000, latencyMS: 30))
        let slow = try richShare(.cellular, NetworkProfile(throughputBytesPerSecond: 100_000, latencyMS: 400))
        #expect(fast.richShareOfAttempts > 0.9)
        #expect(slow.richShareOfAttempts < fast.richShareOfAttempts - 0.2)
        #expect(slow.richShare < fast.richShare)
        #expect(slow[.timeout] > 10 * max(1, fast[.timeout]))
    }

    @Test func oversizedMediaAndFlakyNetworksShowUpAsFailures() throws {
        // Without the experiment every push uses `full`, which attempts oversized originals.
        let scenario = Self.scenario(notifications: 20_000, devices: 2_000) { $0.experiment = nil }
        let (_, truth) = try Self.run(scenario, batchSize: 5_000)
        let photos = truth.outcomesByCategory["new_photo"]!
        // About 3.7 % of photo originals exceed the 10 MiB cap (log-uniform 0.3 to 12 MB).
        let tooLarge = Double(photos[.tooLarge]) / Double(photos.total - photos[.notRequested])
        #expect(tooLarge > 0.015 && tooLarge < 0.06)
        // 1 % of the pushes that download something find the network unusable.
        let all = truth.outcomesByCategory.values.reduce(OutcomeTally()) { sum, tally in
            var sum = sum
            for (outcome, count) in tally.counts { sum.counts[outcome, default: 0] += count }
            return sum
        }
        let attempts = all.total - all[.notRequested]
        let failed = Double(all[.downloadFailed]) / Double(attempts)
        #expect(abs(failed - 0.01) < 4 * (0.01 * 0.99 / Double(attempts)).squareRoot())
        // Large videos on slow devices time out.
        #expect(truth.outcomesByCategory["breaking_news"]![.timeout] > 0)
    }

    // MARK: Experiment

    @Test func experimentAssignmentIsGrowthBooksAndStablePerDevice() throws {
        let experiment = SimulatedExperiment(
            id: "strategy-test", seed: "seed-7",
            arms: [ExperimentArm("control", strategy: .full, weight: 0.2),
                   ExperimentArm("thumbs", strategy: .thumbnail, weight: 0.3),
                   ExperimentArm("adaptive", strategy: .adaptive, weight: 0.5)])
        let scenario = Self.scenario(notifications: 20_000, devices: 20_000) { $0.experiment = experiment }
        let (events, truth) = try Self.run(scenario, batchSize: 5_000)

        var armOfDevice: [String: String] = [:]
        for event in events {
            let tag = try #require(event.experiment)
            let arm = try #require(experiment.arms.first { $0.name == tag.arm })
            #expect(tag.id == "strategy-test" && tag.probability == arm.weight)
            if let known = armOfDevice[event.deviceID] { #expect(known == tag.arm) }
            armOfDevice[event.deviceID] = tag.arm
            if case .sent(let sent) = event.details { #expect(sent.strategy == arm.strategy) }
        }
        // Exactly GrowthBook's assignment, computed here without the simulator.
        let ranges = GrowthBookBucketing.bucketRanges(weights: [0.2, 0.3, 0.5])
        for (device, arm) in armOfDevice {
            let index = GrowthBookBucketing.chooseVariation(n: GrowthBookBucketing.hashV2(seed: "seed-7", id: device), ranges: ranges)
            #expect(index.map { experiment.arms[$0].name } == arm)
        }
        // Device shares within 4 standard errors of the weights.
        #expect(truth.unassignedDevices == 0)
        for arm in experiment.arms {
            let devices = try #require(truth.arms[arm.name]).devices
            let se = (arm.weight * (1 - arm.weight) / 20_000).squareRoot()
            #expect(abs(Double(devices) / 20_000 - arm.weight) <= 4 * se, "\(arm.name): \(devices)")
        }
        #expect(truth.arms.values.reduce(0) { $0 + $1.notifications } == 20_000)
    }

    @Test func devicesOutsideCoverageGetTheDefaultStrategyAndNoTag() throws {
        let scenario = Self.scenario(notifications: 3_000, devices: 2_000) { scenario in
            scenario.strategy = .thumbnail
            scenario.experiment = SimulatedExperiment(
                id: "half", arms: [ExperimentArm("a", strategy: .full, weight: 0.5),
                                   ExperimentArm("b", strategy: .poster, weight: 0.5)],
                coverage: 0.5)
        }
        let (events, truth) = try Self.run(scenario)
        let untagged = events.filter { $0.experiment == nil }
        #expect(!untagged.isEmpty && untagged.count < events.count)
        for event in untagged {
            if case .sent(let sent) = event.details { #expect(sent.strategy == .thumbnail) }
        }
        let assigned = truth.arms.values.reduce(0) { $0 + $1.devices }
        #expect(assigned + truth.unassignedDevices == 2_000)
        #expect(abs(Double(assigned) / 2_000 - 0.5) <= 4 * (0.25 / 2_000).squareRoot())
    }

    // MARK: Emission options

    @Test func duplicatesAreExactCopiesAtTheConfiguredRate() throws {
        let scenario = Self.scenario(notifications: 5_000)
        let (plain, plainTruth) = try Self.run(scenario)
        let (noisy, truth) = try Self.run(scenario, options: SimulationOptions(duplicateFraction: 0.1))

        var seen: [EventID: Event] = [:]
        var copies = 0
        for event in noisy {
            if let original = seen[event.eventID] {
                #expect(original == event)
                copies += 1
            }
            seen[event.eventID] = event
        }
        #expect(copies == truth.duplicatesEmitted)
        #expect(noisy.count == truth.emitted && truth.emitted == truth.events + copies)
        // Same distinct events, same truth about them.
        #expect(Set(seen.keys) == Set(plain.map(\.eventID)))
        #expect(truth.realized == plainTruth.realized)
        let share = Double(copies) / Double(truth.events)
        let se = (0.1 * 0.9 / Double(truth.events)).squareRoot()
        #expect(abs(share - 0.1) <= 4 * se)
        // The fold ignores them.
        #expect(Self.foldedTallies(noisy) == truth.realized)
    }

    @Test func shuffledNotificationsAreOutOfTimeOrderAtTheConfiguredRate() throws {
        let scenario = Self.scenario(notifications: 5_000)
        let (plain, _) = try Self.run(scenario)
        let (shuffled, truth) = try Self.run(scenario, options: SimulationOptions(outOfOrderFraction: 0.3))
        #expect(shuffled.count == plain.count)
        #expect(Set(shuffled.map(\.eventID)) == Set(plain.map(\.eventID)))

        var outOfOrder = 0
        for (_, stream) in Dictionary(grouping: shuffled, by: \.notificationID) where !TrafficSimulator.isInTimeOrder(stream) {
            outOfOrder += 1
        }
        #expect(outOfOrder == truth.shuffledNotifications)
        let se = (0.3 * 0.7 / 5_000).squareRoot()
        #expect(abs(Double(outOfOrder) / 5_000 - 0.3) <= 4 * se)
        #expect(Self.foldedTallies(shuffled) == truth.realized)
    }

    // MARK: Validation

    @Test func invalidScenariosAreRejectedWithTheirProblem() {
        var scenario = SimulationScenario.standard
        scenario.categories[0].plain.actioned = 0.5
        #expect(throws: SimulationError(code: .invalidScenario,
                                        detail: "category new_photo: plain: actioned rate 0.5 exceeds expanded rate 0.1")) {
            try TrafficSimulator(scenario: scenario, seed: 1, start: Self.start)
        }
        scenario = .standard
        scenario.spanSeconds = 3_600
        #expect(throws: SimulationError(code: .invalidScenario, detail: "the span must be longer than 3600 seconds")) {
            try TrafficSimulator(scenario: scenario, seed: 1, start: Self.start)
        }
        #expect(throws: SimulationError(code: .invalidOptions, detail: "duplicate fraction must lie in [0, 1]")) {
            try TrafficSimulator(scenario: .standard, seed: 1, start: Self.start,
                                 options: SimulationOptions(duplicateFraction: 2))
        }
    }

    @Test func theStandardScenarioIsValidAndEmpty() throws {
        #expect(SimulationScenario.standard.problem == nil)
        let scenario = Self.scenario(notifications: 0)
        var simulator = try TrafficSimulator(scenario: scenario, seed: 1, start: Self.start)
        #expect(simulator.next(batchSize: 10) == nil)
        #expect(simulator.isFinished)
    }
}
