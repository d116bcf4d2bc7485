/// One device's `MetricTrials` in a tally, in 32-bit lanes: 64 bytes instead of 128.
///
/// A replay visits devices in notification order, that is at random, so each notification's
/// update of its device's trials is a cache miss (and often a TLB miss) on an array of some
/// 100,000 devices: with half the bytes a device's trials take one cache line instead of two or
/// three, and the arrays of an experiment's tallies fit the caches twice as well. Counts that do
/// not fit 32 bits are not stored here (`init?` fails): `NumberedArmTally` keeps them whole.
struct CompactDeviceTrials: Sendable {
    private var successes: SIMD8<Int32>
    private var trials: SIMD8<Int32>

    /// No trials.
    init() {
        successes = .zero
        trials = .zero
    }

    /// Nil when a lane of `trials` is outside the range of `Int32`.
    init?(_ trials: MetricTrials) {
        let lowest = MetricLanes(repeating: Int(Int32.min)), highest = MetricLanes(repeating: Int(Int32.max))
        guard all(trials.successes .>= lowest), all(trials.successes .<= highest),
              all(trials.trials .>= lowest), all(trials.trials .<= highest) else { return nil }
        successes = SIMD8(truncatingIfNeeded: trials.successes)
        self.trials = SIMD8(truncatingIfNeeded: trials.trials)
    }

    var metricTrials: MetricTrials {
        MetricTrials(successes: MetricLanes(truncatingIfNeeded: successes), trials: MetricLanes(truncatingIfNeeded: trials))
    }
}
