/// The counts of an `ExperimentArmTally` with its devices by number in a `DeviceIndex` kept
/// elsewhere: `ExperimentTallies` keeps one index for all its tallies, so a notification's device
/// id is hashed once however many tallies count it.
struct NumberedArmTally: Sendable {
    var totals = FunnelCounts()
    var processingMS = LatencyHistogram()
    var moments = MetricMoments()
    /// Distinct devices counted.
    private(set) var devices = 0
    /// By device number; zero for a device not counted here.
    private var trials: [MetricTrials] = []
    /// By device number: whether the device is counted here (a device can be counted with no trials).
    private var counted: [Bool] = []

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
        if number >= trials.count {
            let missing = number + 1 - trials.count
            trials.append(contentsOf: repeatElement(MetricTrials(), count: missing))
            counted.append(contentsOf: repeatElement(false, count: missing))
        }
        let isNewDevice = !counted[number]
        if isNewDevice {
            counted[number] = true
            devices += 1
        }
        let old = trials[number]
        let new = old + added
        trials[number] = new
        moments.update(from: old, to: new, isNewDevice: isNewDevice)
    }

    /// Adds another tally's counts, its device numbers turned into this one's by `numbers`.
    mutating func merge(_ other: NumberedArmTally, numbers: [Int]) {
        totals = totals + other.totals
        other.forEachDevice { number, trials in record(number: numbers[number], trials) }
        processingMS.merge(other.processingMS)
    }

    /// The trials of device `number`; nil when it is not counted here.
    func trials(number: Int) -> MetricTrials? {
        number < counted.count && counted[number] ? trials[number] : nil
    }

    /// Calls `body` with each counted device's number and trials, in number order.
    func forEachDevice(_ body: (Int, MetricTrials) throws -> Void) rethrows {
        for number in counted.indices where counted[number] { try body(number, trials[number]) }
    }
}
