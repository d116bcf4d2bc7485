/// The counts of an `ExperimentArmTally` with its devices by number in a `DeviceIndex` kept
/// elsewhere: `ExperimentTallies` keeps one index for all its tallies, so a notification's device
/// id is hashed once however many tallies count it.
struct NumberedArmTally: Sendable {
    var totals = FunnelCounts()
    var processingMS = LatencyHistogram()
    var moments = MetricMoments()
    /// Distinct devices counted.
    private(set) var devices = 0
    /// By device number. Side by side so that a notification touches one place in memory.
    private var slots: [Slot] = []

    private struct Slot {
        var trials = MetricTrials()
        /// Counted here (a device can be counted with no trials).
        var counted = false
    }

    /// Adds one notification of device `number`.
    mutating func add(_ observation: ExperimentObservation, number: Int) {
        totals = totals + observation.counts
        record(number: number, MetricTrials(reached: observation.stages))
        if let processing = observation.processingMS { processingMS.record(Double(processing)) }
    }

    /// Adds counts of device `number` directly.
    mutating func record(number: Int, _ counts: FunnelCounts) {
        totals = totals + counts
        record(number: number, counts.metricTrials)
    }

    mutating func record(number: Int, _ added: MetricTrials) {
        if number >= slots.count {
            slots.append(contentsOf: repeatElement(Slot(), count: number + 1 - slots.count))
        }
        let old = slots[number]
        let new = old.trials + added
        slots[number] = Slot(trials: new, counted: true)
        if !old.counted { devices += 1 }
        moments.update(from: old.trials, to: new, isNewDevice: !old.counted)
    }

    /// Adds another tally's counts, its device numbers turned into this one's by `numbers`.
    mutating func merge(_ other: NumberedArmTally, numbers: [Int]) {
        totals = totals + other.totals
        other.forEachDevice { number, trials in record(number: numbers[number], trials) }
        processingMS.merge(other.processingMS)
    }

    /// The trials of device `number`; nil when it is not counted here.
    func trials(number: Int) -> MetricTrials? {
        number < slots.count && slots[number].counted ? slots[number].trials : nil
    }

    /// Calls `body` with each counted device's number and trials, in number order.
    func forEachDevice(_ body: (Int, MetricTrials) throws -> Void) rethrows {
        for number in slots.indices where slots[number].counted { try body(number, slots[number].trials) }
    }
}
