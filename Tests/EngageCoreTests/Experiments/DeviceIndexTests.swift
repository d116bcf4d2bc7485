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
