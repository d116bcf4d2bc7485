/// The counts of an `ExperimentArmTally` with its devices by number in a `DeviceIndex` kept
/// elsewhere: `ExperimentTallies` keeps one index for all its tallies, so a notification's device
/// id is hashed once however many tallies count it.
///
/// Only the devices counted here have a slot: an experiment's index numbers every device of every
/// arm, and a slot per number in each tally would cost each of them (some 144 bytes of trials) once
/// per tally, and make every pass over a tally walk all of them. A tally keeps 4 bytes per
/// numbered device (`slotOfNumber`) and its trials for its own devices only.
struct NumberedArmTally: Sendable {
    private(set) var totals = FunnelCounts()
    private(set) var processingMS: LatencyHistogram
    private(set) var moments = MetricMoments()
    /// By device number: the device's place in `slots`, or -1 when it is not counted here
    /// (a device can be counted with no trials). Int32: the whole index costs 4 bytes a device.
    private var slotOfNumber: [Int32] = []
    /// The counted devices' trials, in the order they were first counted.
    private var slots: [MetricTrials] = []
    /// The device number of each slot.
    private var numbers: [Int32] = []

    init(processingMS: LatencyHistogram = LatencyHistogram()) {
        self.processingMS = processingMS
    }

    /// Distinct devices counted.
    var devices: Int { moments.devices }

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
        if number >= slotOfNumber.count {
            slotOfNumber.append(contentsOf: repeatElement(-1, count: number + 1 - slotOfNumber.count))
        }
        let slot = Int(slotOfNumber[number])
        if slot < 0 {
            slotOfNumber[number] = Int32(slots.count)
            slots.append(added)
            numbers.append(Int32(number))
            moments.update(from: MetricTrials(), to: added, isNewDevice: true)
        } else {
            let old = slots[slot]
            let new = old + added
            slots[slot] = new
            moments.update(from: old, to: new, isNewDevice: false)
        }
    }

    /// Adds another tally's counts, its device numbers turned into this one's by `numbers`.
    mutating func merge(_ other: NumberedArmTally, numbers: [Int]) {
        totals = totals + other.totals
        other.forEachDevice { number, trials in record(number: numbers[number], trials) }
        processingMS.merge(other.processingMS)
    }

    /// The trials of device `number`; nil when it is not counted here.
    func trials(number: Int) -> MetricTrials? {
        guard number < slotOfNumber.count else { return nil }
        let slot = Int(slotOfNumber[number])
        return slot < 0 ? nil : slots[slot]
    }

    /// Calls `body` with each counted device's number and trials, in the order first counted.
    func forEachDevice(_ body: (Int, MetricTrials) throws -> Void) rethrows {
        for slot in slots.indices { try body(Int(numbers[slot]), slots[slot]) }
    }
}
