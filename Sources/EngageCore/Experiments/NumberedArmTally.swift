/// The counts of an `ExperimentArmTally` with its devices by number in a `DeviceIndex` kept
/// elsewhere: `ExperimentTallies` keeps one index for all its tallies, so a notification's device
/// id is hashed once however many tallies count it.
///
/// Only the devices counted here have a slot: an experiment's index numbers every device of every
/// arm, and a slot per number in each tally would cost each of them (some 144 bytes of trials) once
/// per tally, and make every pass over a tally walk all of them. A tally keeps 4 bytes per
/// numbered device (`slotOfNumber`) and its trials for its own devices only, in 32-bit lanes
/// (`CompactDeviceTrials`); the trials of a device whose counts outgrow them are kept whole in
/// `wideSlots`.
struct NumberedArmTally: Sendable {
    private(set) var totals = FunnelCounts()
    private(set) var processingMS: LatencyHistogram
    private(set) var moments = MetricMoments()
    /// By device number: the device's place in `slots`, or -1 when it is not counted here
    /// (a device can be counted with no trials). Int32: the whole index costs 4 bytes a device.
    private var slotOfNumber: [Int32] = []
    /// The counted devices' trials, in the order they were first counted (not read for a slot in
    /// `wideSlots`). Not optional: an optional's tag would make each 80 bytes instead of 64.
    private var slots: [CompactDeviceTrials] = []
    /// By slot: the trials that do not fit `CompactDeviceTrials` (never expected: 2^31
    /// notifications of one device).
    private var wideSlots: [Int: MetricTrials] = [:]
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
            slots.append(CompactDeviceTrials())
            numbers.append(Int32(number))
            store(added, slot: slots.count - 1)
            moments.update(from: MetricTrials(), to: added, isNewDevice: true)
        } else {
            let old = trials(slot: slot)
            let new = old + added
            store(new, slot: slot)
            moments.update(from: old, to: new, isNewDevice: false)
        }
    }

    private func trials(slot: Int) -> MetricTrials {
        // No hash lookup while no device has outgrown 32 bits, that is always in practice.
        if !wideSlots.isEmpty, let wide = wideSlots[slot] { return wide }
        return slots[slot].metricTrials
    }

    private mutating func store(_ trials: MetricTrials, slot: Int) {
        if let compact = CompactDeviceTrials(trials) {
            slots[slot] = compact
            if !wideSlots.isEmpty { wideSlots[slot] = nil }
        } else {
            wideSlots[slot] = trials
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
        return slot < 0 ? nil : trials(slot: slot)
    }

    /// Calls `body` with each counted device's number and trials, in the order first counted.
    func forEachDevice(_ body: (Int, MetricTrials) throws -> Void) rethrows {
        for slot in slots.indices { try body(Int(numbers[slot]), trials(slot: slot)) }
    }
}
