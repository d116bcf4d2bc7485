import Testing
@testable import EngageCore

/// `DeviceIndex` numbers device ids for the experiment tallies; these tests hold it, and the
/// tallies kept by number, to what the dictionaries keyed by id did.
@Suite struct DeviceIndexTests {
    @Test func equalIdsGetOneNumberAndDistinctIdsDistinctNumbersInOrderFirstSeen() {
        var index = DeviceIndex()
        let numbers = ["phone-b", "phone-a", "phone-b", "phone-c", "phone-a"].map { index.number(of: $0) }
        #expect(numbers == [0, 1, 0, 2, 1])
        #expect(index.count == 3)
        #expect(index.ids == ["phone-b", "phone-a", "phone-c"])
        #expect(index.existingNumber(of: "phone-c") == 2)
        #expect(index.existingNumber(of: "phone-d") == nil)
        #expect(index.count == 3)
    }

    @Test func idsMatchAsSwiftStringsDo() {
        var index = DeviceIndex()
        // "é" precomposed and decomposed are equal strings, as they were equal dictionary keys;
        // case and surrounding bytes still tell ids apart.
        let precomposed = "caf\u{E9}", decomposed = "cafe\u{301}"
        let numbers = [precomposed, decomposed, "CAF\u{C9}", "caf\u{E9} ", "", ""].map { index.number(of: $0) }
        #expect(numbers == [0, 0, 1, 2, 3, 3])
        #expect(index.ids == [precomposed, "CAF\u{C9}", "caf\u{E9} ", ""])
    }

    @Test func renumberingGivesEachOfTheOtherIndexsDevicesItsNumberHere() {
        var mine = DeviceIndex(), theirs = DeviceIndex()
        for id in ["a", "b", "c"] { _ = mine.number(of: id) }
        for id in ["c", "x", "a", "y"] { _ = theirs.number(of: id) }
        let numbers = mine.renumber(theirs)
        #expect(numbers == [2, 3, 0, 4])
        #expect(mine.ids == ["a", "b", "c", "x", "y"])
    }

    /// Counts of devices 0..<devices spread over notifications in a seeded order.
    static func notifications(seed: UInt64, devices: Int, count: Int) -> [(device: String, counts: FunnelCounts)] {
        var random = StreamRandom(seed: seed)
        return (0..<count).map { _ in
            let stages = FunnelStageSet(bits: UInt16(random.next() % UInt64(FunnelStageSet.combinations)))
            return ("device-\(random.next() % UInt64(devices))", FunnelCounts(reached: stages.withinDenominators))
        }
    }

    @Test func talliesEqualWhateverTheOrderAndSplitTheirDevicesWereNumberedIn() {
        let notifications = Self.notifications(seed: 7, devices: 40, count: 500)
        var inOrder = ExperimentArmTally(), reversed = ExperimentArmTally()
        for (device, counts) in notifications { inOrder.record(device: device, counts) }
        for (device, counts) in notifications.reversed() { reversed.record(device: device, counts) }
        #expect(inOrder == reversed)
        #expect(inOrder.devices == 40)

        var first = ExperimentArmTally(), second = ExperimentArmTally()
        for (device, counts) in notifications[..<200] { first.record(device: device, counts) }
        for (device, counts) in notifications[200...].reversed() { second.record(device: device, counts) }
        first.merge(second)
        #expect(first == inOrder)
        for metric in ExperimentMetric.allCases {
            #expect(first.ratioMoments(metric) == inOrder.ratioMoments(metric))
        }

        // Each device's trials are the sum of its notifications'.
        var expected: [String: MetricTrials] = [:]
        for (device, counts) in notifications { expected[device, default: MetricTrials()] = expected[device, default: MetricTrials()] + counts.metricTrials }
        for (device, trials) in expected { #expect(first.trials(device: device) == trials) }
        #expect(first.trials(device: "device-40") == nil)

        var changed = reversed
        changed.record(device: "device-3", FunnelCounts())
        #expect(changed == reversed, "no counts on a counted device change nothing")
        changed.record(device: "device-new", FunnelCounts())
        #expect(changed != reversed, "a device counted with no trials is still a device")
        #expect(changed.devices == 41)
    }

    /// Random notifications over three arms and every presentation, split into parts folded
    /// separately and merged in a shuffled order, against a fold of each tally's devices into a
    /// dictionary keyed by id: what the tallies computed before devices were numbered.
    @Test(arguments: [1, 2, 3, 7] as [Int])
    func mergedPartsEqualAFoldKeyedByDeviceId(parts: Int) {
        let definition = ExperimentDefinition(
            id: "thumbs-v1", appID: "app-1", categories: [],
            arms: [ExperimentArmDefinition(name: "full", strategy: .full, weight: 0.4, isControl: true),
                   ExperimentArmDefinition(name: "poster", strategy: .poster, weight: 0.3),
                   ExperimentArmDefinition(name: "thumbnail", strategy: .thumbnail, weight: 0.3)],
            primaryMetric: .open)
        var random = StreamRandom(seed: 0x5EED &+ UInt64(parts))
        let observations = (0..<600).map { _ in
            ExperimentObservation(
                arm: .arm(random.below(3)), category: "news", deviceID: "device-\(random.below(80))",
                stages: FunnelStageSet(bits: UInt16(random.below(FunnelStageSet.combinations))).withinDenominators,
                presentation: random.pick(ObservedPresentation.allCases), processingMS: random.maybe(random.below(900)))
        }
        var covariates = ExperimentCovariates(days: 14, before: UTCDay(year: 2026, month: 11, day: 30)!.start)
        for device in 0..<100 where random.oneIn(2) {
            covariates.add(device: "device-\(device)",
                           reached: FunnelStageSet(bits: UInt16(random.below(FunnelStageSet.combinations))).withinDenominators,
                           count: 1 + random.below(4))
        }

        // Reference: each tally's devices by id.
        var byArm = [[String: MetricTrials]](repeating: [:], count: 3)
        var rich: [String: MetricTrials] = [:], plain: [String: MetricTrials] = [:]
        for observation in observations {
            guard case .arm(let position) = observation.arm else { continue }
            let trials = MetricTrials(reached: observation.stages)
            byArm[position][observation.deviceID, default: MetricTrials()] = byArm[position][observation.deviceID, default: MetricTrials()] + trials
            switch observation.presentation {
            case .rich: rich[observation.deviceID, default: MetricTrials()] = rich[observation.deviceID, default: MetricTrials()] + trials
            case .plain: plain[observation.deviceID, default: MetricTrials()] = plain[observation.deviceID, default: MetricTrials()] + trials
            case .unknown: break
            }
        }

        var split = [ExperimentTallies](repeating: ExperimentTallies(definition: definition), count: parts)
        for observation in observations { split[random.below(parts)].add(observation) }
        random.shuffle(&split)
        var merged = split[0]
        for part in split.dropFirst() { merged.merge(part) }

        let tallies = [merged.arm(named: "full")!, merged.arm(named: "poster")!, merged.arm(named: "thumbnail")!,
                       merged.rich, merged.plain]
        let references = byArm + [rich, plain]
        for (tally, reference) in zip(tallies, references) {
            #expect(tally.devices == reference.count)
            for metric in ExperimentMetric.allCases {
                var adjusted = AdjustedRatioMoments(), device = DeviceMoments()
                for id in reference.keys.sorted() {
                    let trials = reference[id]!, pre = covariates.trials(device: id, metric)
                    adjusted.add(numerator: Double(trials.successes[metric]), denominator: Double(trials.trials[metric]),
                                 preNumerator: Double(pre.successes), preDenominator: Double(pre.trials))
                    if trials.trials[metric] > 0 {
                        device.add(Proportion(validatedSuccesses: trials.successes[metric], trials: trials.trials[metric]))
                    }
                }
                #expect(tally.adjustedMoments(metric, covariates: covariates) == adjusted, "\(metric)")
                #expect(tally.deviceMoments(metric) == device, "\(metric)")
            }
        }
        for metric in ExperimentMetric.allCases {
            var cross = DeviceCrossMoments(), shared = 0
            for id in rich.keys.sorted() {
                guard let mine = rich[id], mine.trials[metric] > 0, let theirs = plain[id], theirs.trials[metric] > 0 else { continue }
                shared += 1
                cross.add(first: Proportion(validatedSuccesses: mine.successes[metric], trials: mine.trials[metric]),
                          second: Proportion(validatedSuccesses: theirs.successes[metric], trials: theirs.trials[metric]))
            }
            let sharedDevices = merged.rich.sharedDevices(with: merged.plain, metric)
            #expect(sharedDevices.devices == shared, "\(metric)")
            #expect(sharedDevices.moments == cross, "\(metric)")
        }
        #expect(rich.count > 0 && plain.count > 0 && byArm.allSatisfy { $0.count > 20 })
    }

    @Test func aDeviceOfAnotherTallyIsNotCountedInThisOne() {
        let definition = ExperimentObservationTests.definition()
        var tallies = ExperimentTallies(definition: definition)
        let delivered = FunnelCounts(reached: FunnelStageSet(delivered: true, presentation: .unknown, engaged: FunnelStageSet()))
        let recorded = [tallies.record(arm: "full", device: "d1", delivered),
                        tallies.record(arm: "poster", device: "d2", delivered),
                        tallies.record(arm: "thumbnail", device: "d3", delivered)]
        #expect(recorded == [true, true, false])
        tallies.recordAsTreated(.rich, device: "d2", delivered)
        #expect(tallies.arm(named: "full")?.devices == 1)
        #expect(tallies.arm(named: "full")?.trials(device: "d2") == nil)
        #expect(tallies.arm(named: "poster")?.trials(device: "d2") == delivered.metricTrials)
        #expect(tallies.rich.devices == 1 && tallies.plain.devices == 0)

        var other = ExperimentTallies(definition: definition)
        other.recordAsTreated(.rich, device: "d2", delivered)
        other.record(arm: "poster", device: "d2", delivered)
        other.record(arm: "full", device: "d1", delivered)
        #expect(other == tallies)
        other.merge(tallies)
        #expect(other != tallies)
        #expect(other.arm(named: "poster")?.trials(device: "d2") == (delivered.metricTrials + delivered.metricTrials))
        #expect(other.arm(named: "full")?.devices == 1)
    }
}
