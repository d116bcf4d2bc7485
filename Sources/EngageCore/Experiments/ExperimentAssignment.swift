/// Which arm a device is in, exactly as a GrowthBook SDK would assign it: hash version 2 of the
/// definition's `hashSeed` and the device id, the arms' weights as bucket ranges scaled by
/// `coverage`, and the first range holding the hash.
///
/// The assignment depends on the seed, the device id, the weights and the coverage only, so it
/// is stable across calls, processes and platforms; lowering coverage drops devices without
/// moving any to another arm.
public enum ExperimentAssignment {
    /// The device's arm and the probability sent in its experiment tag (the arm's weight: the
    /// chance of the arm for a device in the experiment), or nil when the device falls outside
    /// coverage. Status, schedule and categories are the caller's to check
    /// (`ExperimentDefinition.isActive(at:)`, `admits(category:)`).
    public static func arm(forDevice deviceID: String, definition: ExperimentDefinition)
        -> (arm: ExperimentArmDefinition, probability: Double)? {
        guard let index = variationIndex(forDevice: deviceID, seed: definition.hashSeed,
                                         ranges: ranges(of: definition)) else { return nil }
        let arm = definition.arms[index]
        return (arm, arm.weight)
    }

    /// The bucket ranges of the definition's arms, in arm order.
    public static func ranges(of definition: ExperimentDefinition) -> [GrowthBookBucketing.BucketRange] {
        GrowthBookBucketing.bucketRanges(weights: definition.arms.map(\.weight), coverage: definition.coverage)
    }

    /// The arm index for precomputed ranges, for assigning many devices.
    public static func variationIndex(forDevice deviceID: String, seed: String,
                                      ranges: [GrowthBookBucketing.BucketRange]) -> Int? {
        GrowthBookBucketing.chooseVariation(n: GrowthBookBucketing.hashV2(seed: seed, id: deviceID), ranges: ranges)
    }
}
