import Testing
@testable import EngageCore

/// The experiment replay folds `ExperimentEventFacts` with `ExperimentObservation.Fold` instead of
/// folding whole events into `NotificationState`; these tests hold the two to the same answers.
@Suite struct ExperimentObservationTests {
    /// Tags of `randomStream`: thumbs-v1 "full" is an arm, "thumbnail" is not; copy-v2 is another experiment.
    static func definition(categories: [String] = []) -> ExperimentDefinition {
        ExperimentDefinition(
            id: "thumbs-v1", appID: "app-1", categories: categories,
            arms: [ExperimentArmDefinition(name: "full", strategy: .full, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "poster", strategy: .poster, weight: 0.5)],
            primaryMetric: .open)
    }

    static func fold(_ events: [Event], _ arms: ExperimentArmIndex) -> ExperimentObservation? {
        var fold = ExperimentObservation.Fold()
        for event in events {
            fold.apply(ExperimentEventFacts(event, arms: arms)) { (event.category, event.deviceID) }
        }
        return fold.observation
    }

    @Test(.timeLimit(.minutes(1)))
    func theFactsFoldGivesTheObservationOfTheFullFoldInAnyOrder() {
        let arms = ExperimentArmIndex(Self.definition())
        var seen: Set<String> = []
        for seed in UInt64(1)...3000 {
            var random = StreamRandom(seed: seed)
            let events = randomStream(&random)
            let reference = ExperimentObservation(NotificationState(folding: events), arms: arms)
            seen.insert("\(reference!.arm)")
            for _ in 0..<3 {
                let folded = Self.fold(redelivered(events, &random), arms)
                guard folded == reference else {
                    Issue.record("seed \(seed): \(String(describing: folded)) != \(String(describing: reference))")
                    return
                }
            }
        }
        // The streams reached every kind of tag.
        #expect(seen == ["arm(0)", "unknownArm", "otherExperiment"])
        #expect(Self.fold([], arms) == nil)
        #expect(ExperimentObservation(NotificationState(), arms: arms) == nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func observationsAndStatesTallyAlike() {
        for categories in [[], ["comment"]] {
            let definition = Self.definition(categories: categories)
            var byState = ExperimentTallies(definition: definition)
            var byFold = ExperimentTallies(definition: definition)
            for seed in UInt64(1)...2000 {
                var random = StreamRandom(seed: seed)
                let events = randomStream(&random, notification: "n-\(seed)")
                byState.add(NotificationState(folding: events))
                byFold.add(Self.fold(events, byFold.armIndex)!)
            }
            #expect(byFold == byState)
            #expect(byState.otherExperiment > 0 && byState.unknownArm > 0)
            #expect((byState.outsideCategories > 0) == !categories.isEmpty)
            #expect(byState.arms["full"]!.totals[.notifications] > 0)
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func talliesMergedFromPartsEqualOneTally() {
        let definition = Self.definition()
        let arms = ExperimentArmIndex(definition)
        var observations: [ExperimentObservation] = []
        for seed in UInt64(1)...3000 {
            var random = StreamRandom(seed: seed)
            // Few devices, so that every device has notifications in several parts.
            let events = randomStream(&random, notification: "n-\(seed)").map { event in
                var event = event
                event.deviceID = "device-\(seed % 37)"
                return event
            }
            observations.append(Self.fold(events, arms)!)
        }
        var whole = ExperimentTallies(definition: definition)
        for observation in observations { whole.add(observation) }
        var parts = Array(repeating: ExperimentTallies(definition: definition), count: 3)
        var random = StreamRandom(seed: 99)
        for observation in observations.reversed() { parts[random.below(3)].add(observation) }
        var merged = parts[2]
        merged.merge(parts[0])
        merged.merge(parts[1])
        #expect(merged == whole)
        #expect(merged.arms["full"]!.devices == 37)
        // The statistics read from the merged tallies are those of the whole.
        let now = Timestamp(rfc3339: "2026-12-01T00:00:00Z")!
        #expect(ExperimentAnalysis.run(definition: definition, tallies: merged, now: now)
            == ExperimentAnalysis.run(definition: definition, tallies: whole, now: now))
    }

    /// The moments kept per metric lane are those of the devices' own successes and trials.
    @Test func momentsAreSumsOverDevicesPerMetric() {
        var tally = ExperimentArmTally()
        var perDevice: [String: FunnelCounts] = [:]
        var random = StreamRandom(seed: 5)
        for n in 0..<400 {
            var counts = FunnelCounts()
            for stage in FunnelStage.allCases { counts[stage] = random.below(3) }
            let device = "d\(n % 17)"
            tally.record(device: device, counts)
            perDevice[device, default: FunnelCounts()] += counts
        }
        let moments = tally.moments
        #expect(moments.devices == 17 && tally.devices == 17)
        for metric in EngagementMetric.allCases {
            let x = perDevice.values.map { $0.successes(metric) }, n = perDevice.values.map { $0.trials(metric) }
            #expect(tally.totals.successes(metric) == x.reduce(0, +) && tally.totals.trials(metric) == n.reduce(0, +))
            #expect(moments.successesSquared[metric] == x.map { $0 * $0 }.reduce(0, +), "\(metric)")
            #expect(moments.trialsSquared[metric] == n.map { $0 * $0 }.reduce(0, +), "\(metric)")
            #expect(moments.successesTimesTrials[metric] == zip(x, n).map { $0 * $1 }.reduce(0, +), "\(metric)")
        }
    }
}
