/// What one notification tells an experiment analysis: the arm it was assigned, where it counts
/// (category and device) and its counts. `ExperimentTallies` adds observations; they come from a
/// full `NotificationState` or, in the analysis replay, from `ExperimentObservation.Fold`, which
/// reads only the event facts the analysis needs.
public struct ExperimentObservation: Sendable, Equatable {
    /// The tag of the first tagged event in event order, resolved against the experiment.
    public var arm: ObservedArm
    /// Category and device of the first event in event order.
    public var category: String
    public var deviceID: String
    /// The stages it reached, numerators only with their denominator (`withinDenominators`).
    public var stages: FunnelStageSet
    public var presentation: ObservedPresentation
    /// `processing_ms` of the first `delivered` event.
    public var processingMS: Int?

    public init(arm: ObservedArm, category: String, deviceID: String, stages: FunnelStageSet,
                presentation: ObservedPresentation, processingMS: Int?) {
        self.arm = arm
        self.category = category
        self.deviceID = deviceID
        self.stages = stages
        self.presentation = presentation
        self.processingMS = processingMS
    }

    /// 1 for each stage in `stages`.
    public var counts: FunnelCounts { FunnelCounts(reached: stages) }

    /// The observation of a folded notification; nil for the empty state.
    public init?(_ state: NotificationState, arms: ExperimentArmIndex) {
        guard let category = state.category, let deviceID = state.deviceID else { return nil }
        self.init(arm: arms.resolve(state.experiment), category: category, deviceID: deviceID,
                  stages: state.reachedStages.withinDenominators,
                  presentation: state.presentation, processingMS: state.delivered?.processingMS)
    }
}

/// An experiment tag as one experiment sees it.
public enum ObservedArm: Sendable, Hashable {
    /// One of the experiment's arms, by position in `ExperimentArmIndex.names`.
    case arm(Int)
    /// Tagged with this experiment but an arm it does not have.
    case unknownArm
    /// Tagged with another experiment, or untagged.
    case otherExperiment
}

/// The arm names of one experiment, each once, in definition order: what an `ObservedArm`
/// index points into.
public struct ExperimentArmIndex: Sendable, Equatable {
    public let experimentID: String
    public let names: [String]
    private let positions: [String: Int]

    public init(_ definition: ExperimentDefinition) {
        var names: [String] = []
        var positions: [String: Int] = [:]
        for arm in definition.arms where positions[arm.name] == nil {
            positions[arm.name] = names.count
            names.append(arm.name)
        }
        experimentID = definition.id
        self.names = names
        self.positions = positions
    }

    public func position(of name: String) -> Int? { positions[name] }

    /// Where a notification with `tag` counts for this experiment.
    public func resolve(_ tag: ExperimentTag?) -> ObservedArm {
        guard let tag, tag.id == experimentID else { return .otherExperiment }
        return position(of: tag.arm).map(ObservedArm.arm) ?? .unknownArm
    }
}
