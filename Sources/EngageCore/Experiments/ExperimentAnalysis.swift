/// The scheduled analysis of an experiment: every treatment arm against the control on the
/// primary metric and the guardrails, a sample ratio check, and a decision.
///
/// Intent to treat: notifications are grouped by the arm their device was ASSIGNED (the events'
/// experiment tag), whatever was shown; that comparison is randomized and unbiased. How the
/// notifications were actually shown (rich against plain, all arms together) is reported
/// separately as `asTreated` and is observational: whether a notification shows rich depends on
/// the device, its network and the media, which also drive engagement.
///
/// Metrics are ratios per device-clustered notification (see `ExperimentArmTally`); lifts use
/// gbstats' estimators through `Lift`, with the device as the unit (`n` = devices), and the
/// log ratio of means through `TreatmentEffect` for the decisions.
///
/// Decision rule, first match wins:
///
/// 1. `invalidSampleRatioMismatch` when the devices per arm do not fit the weights,
///    by the chi-square test below 0.001 with arms expecting fewer than 5 devices pooled
///    (`SampleRatioMismatch.decisionPValue`; in cells that small the approximation is off by
///    orders of magnitude), or by the exact binomial test of that pool against the one arm
///    left: assignment or logging is broken and no result is trusted.
/// 2. `continue` while an arm has fewer than `minimumDevicesPerArm` devices (but
///    `stopNoEffect(.scheduleEnded)` once `now` reaches `stopAt`: too little data to decide).
/// 3. `ship(arm)` when the arm's SEQUENTIAL (always-valid) interval for the relative lift of
///    the primary metric excludes 0 on the better side at confidence `1 - alpha / t` (`t`
///    treatment arms: Bonferroni across arms), and no guardrail is significantly worse by its
///    own sequential interval at `1 - alpha`, nor untestable (`isNotEnoughData`) with the arm's
///    rate on its forbidden side (`isGuardrailUntestedAndWorse`). Of several such arms, the one with the largest
///    improvement ships. Every decision reads the relative lift from the log of the ratio of
///    means (`ExperimentDecisionLift`), whose false alarms split evenly between the two sides;
///    gbstats' relative interval, lopsided for skewed ratios, is shown beside it.
/// 4. `stopNoEffect(.equivalence)` when, for every treatment, that primary interval lies within
///    `+-equivalenceMargin`: any effect left is too small to matter.
/// 5. `stopNoEffect(.maximumSample)` when every arm has at least `maximumNotificationsPerArm`
///    notifications in the primary metric's denominator.
/// 6. `stopNoEffect(.scheduleEnded)` once `now` reaches the definition's `stopAt`.
/// 7. `continue` otherwise.
///
/// Because the sequential intervals are valid at every look simultaneously, the analysis may
/// run on every schedule tick without inflating false decisions, and it needs no memory of
/// earlier runs; `previous` only numbers the look.
public enum ExperimentAnalysis {
    /// Sample ratio mismatch p-values below this block every decision (GrowthBook's threshold).
    public static let sampleRatioMismatchThreshold = 0.001

    /// With `covariates` (CUPED), the primary metric and the guardrails are compared with each
    /// device's same metric in the pre-period as its covariate (`RegressionAdjustment`); without,
    /// unadjusted. The as-treated comparison is never adjusted.
    public static func run(definition: ExperimentDefinition, tallies: ExperimentTallies,
                           covariates: ExperimentCovariates? = nil,
                           previous: [ExperimentRunResult] = [], now: Timestamp) -> ExperimentRunResult {
        let empty = ExperimentArmTally()
        let tally = { (name: String) in tallies.arm(named: name) ?? empty }
        let armSummaries = definition.arms.map { arm in
            let t = tally(arm.name)
            return ExperimentArmSummary(
                name: arm.name, strategy: arm.strategy, isControl: arm.isControl, weight: arm.weight,
                devices: t.devices, counts: t.totals,
                processingP50: t.processingMS.quantile(0.5), processingP95: t.processingMS.quantile(0.95))
        }
        let srm = SampleRatioMismatch.pValue(observed: armSummaries.map(\.devices), weights: armSummaries.map(\.weight))

        let treatments = definition.treatments
        // The primary comparisons' intervals are Bonferroni-corrected over the treatments, and
        // their p-values adjusted to match; guardrails protect each arm on its own, at alpha.
        let correction: MultipleTesting = treatments.count > 1 ? .bonferroni(comparisons: treatments.count) : .none
        let decisionAlpha = correction.perComparison(definition.alpha)
        let tuning = definition.analysis.sequentialTuning
        var comparisons: [ExperimentArmComparison] = []
        if let control = definition.control {
            let controlTally = tally(control.name)
            for arm in treatments {
                let armTally = tally(arm.name)
                var metrics = [compare(definition.primaryMetric, role: .primary, variant: armTally, control: controlTally,
                                       confidence: 1 - decisionAlpha, tuning: tuning, correction: correction,
                                       covariates: covariates)]
                for guardrail in definition.guardrails {
                    metrics.append(compare(guardrail.metric, role: .guardrail(guardrail.direction), variant: armTally,
                                           control: controlTally, confidence: 1 - definition.alpha, tuning: tuning,
                                           covariates: covariates))
                }
                comparisons.append(ExperimentArmComparison(arm: arm.name, strategy: arm.strategy, metrics: metrics))
            }
        }

        let (decision, rationale) = decide(definition: definition, arms: armSummaries,
                                           comparisons: comparisons, now: now)
        return ExperimentRunResult(
            experimentID: definition.id, analyzedAt: now, look: previous.count + 1, alpha: definition.alpha,
            decisionAlpha: decisionAlpha, sequentialTuning: tuning, primaryMetric: definition.primaryMetric,
            arms: armSummaries, sampleRatioMismatchPValue: srm, comparisons: comparisons,
            cupedWindow: covariates.map { ExperimentCupedWindow(from: $0.from, to: $0.to, days: $0.days,
                                                                 devicesWithHistory: $0.devices) },
            asTreated: asTreated(tallies, alpha: definition.alpha),
            excluded: ExperimentExclusions(otherExperiment: tallies.otherExperiment, unknownArm: tallies.unknownArm,
                                           outsideCategories: tallies.outsideCategories),
            decision: decision, rationale: rationale)
    }

    // MARK: Comparisons

    /// `confidence` is the intervals' level, `1 - correction.perComparison(alpha)`.
    static func compare(_ metric: ExperimentMetric, role: ExperimentMetricRole, variant: ExperimentArmTally,
                        control: ExperimentArmTally, confidence: Double, tuning: Double,
                        correction: MultipleTesting = .none,
                        covariates: ExperimentCovariates? = nil) -> ExperimentMetricComparison {
        var comparison = ExperimentMetricComparison(
            metric: metric, role: role, confidence: confidence, correction: correction,
            control: ExperimentRate(variant: control, metric), variant: ExperimentRate(variant: variant, metric))
        guard variant.proportion(metric).trials > 0, control.proportion(metric).trials > 0 else {
            comparison.unavailable = StatisticsError.Code.tooFewUnits.rawValue
            return comparison
        }
        // gbstats' RatioStatistic over devices (sample moments), its frequentist tests and its
        // Bayesian summary, on both of its scales.
        var controlEstimate = ArmEstimate(control.ratioMoments(metric))
        var variantEstimate = ArmEstimate(variant.ratioMoments(metric))
        var adjustment: RegressionAdjustment?
        if let covariates {
            // CUPED: every scale reads the adjusted arms; theta is pooled over this pair (gbstats).
            let adjusted = RegressionAdjustment(control: control.adjustedMoments(metric, covariates: covariates),
                                                treatment: variant.adjustedMoments(metric, covariates: covariates))
            controlEstimate = adjusted.control
            variantEstimate = adjusted.treatment
            adjustment = adjusted
            // CUPED narrows an arm's spread, it does not make one: in an arm whose devices are all
            // alike (every one opened) the adjusted variance is the covariate's alone, theta^2
            // Var(pre), and the interval would stand on that. Not enough data, as without CUPED.
            do {
                _ = try TreatmentEffect(control: adjusted.unadjustedControl, treatment: adjusted.unadjustedTreatment, scale: .absolute)
            } catch {
                if error.code == .zeroVariance {
                    comparison.unavailable = error.code.rawValue
                    comparison.cuped = ExperimentCupedResult(adjusted, adjusted: (controlEstimate, variantEstimate))
                    return comparison
                }
            }
        }
        do {
            let relative = try TreatmentEffect(control: controlEstimate, treatment: variantEstimate, scale: .relative)
            let absolute = try TreatmentEffect(control: controlEstimate, treatment: variantEstimate, scale: .absolute)
            comparison.relative = ExperimentLiftResult(relative, metric: metric, confidence: confidence, tuning: tuning,
                                                       correction: correction)
            comparison.absolute = ExperimentLiftResult(absolute, metric: metric, confidence: confidence, tuning: tuning,
                                                       correction: correction)
        } catch {
            comparison.unavailable = error.code.rawValue
        }
        do {
            let effect = try TreatmentEffect(control: controlEstimate, treatment: variantEstimate, scale: .logRatio)
            comparison.logRatio = ExperimentDecisionLift(effect, metric: metric, confidence: confidence, tuning: tuning,
                                                         correction: correction)
        } catch {
            comparison.unavailable = comparison.unavailable ?? error.code.rawValue
        }
        if let adjustment {
            comparison.cuped = ExperimentCupedResult(adjustment, adjusted: (controlEstimate, variantEstimate))
        }
        return comparison
    }

    static func asTreated(_ tallies: ExperimentTallies, alpha: Double) -> ExperimentAsTreatedResult {
        ExperimentAsTreatedResult(
            rich: tallies.rich.totals, plain: tallies.plain.totals,
            richDevices: tallies.rich.devices, plainDevices: tallies.plain.devices,
            deviceClustered: EngagementMetric.perDisplayed.map { metric in
                ExperimentClusteredComparison(metric: metric, rich: tallies.rich, plain: tallies.plain, confidence: 1 - alpha)
            },
            metrics: EngagementMetric.perDisplayed.map { metric in
                var comparison = compare(metric, role: .observational, variant: tallies.rich, control: tallies.plain,
                                         confidence: 1 - alpha, tuning: Lift.defaultSequentialTuning)
                // Sequential inference is for the randomized comparison; drop it here.
                comparison.relative?.sequential = nil
                comparison.absolute?.sequential = nil
                comparison.logRatio?.sequential = nil
                return comparison
            })
    }

    // MARK: Decision

    static func decide(definition: ExperimentDefinition, arms: [ExperimentArmSummary],
                       comparisons: [ExperimentArmComparison], now: Timestamp) -> (ExperimentDecision, String) {
        if let p = SampleRatioMismatch.decisionPValue(observed: arms.map(\.devices), weights: arms.map(\.weight)),
           p < sampleRatioMismatchThreshold {
            return (.invalidSampleRatioMismatch,
                    "devices per arm \(arms.map(\.devices)) do not match the weights \(arms.map(\.weight)) (p = \(p)); no decision is trusted")
        }
        let minimum = definition.analysis.minimumDevicesPerArm
        if let small = arms.first(where: { $0.devices < minimum }) {
            if let stopAt = definition.stopAt, now >= stopAt {
                return (.stopNoEffect(.scheduleEnded),
                        "the experiment reached its stop time with arm \(small.name) at \(small.devices) devices, fewer than the \(minimum) needed for a decision")
            }
            return (.continue, "arm \(small.name) has \(small.devices) devices, fewer than the \(minimum) needed for a decision")
        }
        let primary = definition.primaryMetric
        var best: (arm: String, improvement: Double)?
        var blocked: [String] = []
        for comparison in comparisons {
            guard let lift = comparison.metrics.first?.logRatio, let sequential = lift.sequential else { continue }
            let better = primary.higherIsBetter ? sequential.interval.lower > 0 : sequential.interval.upper < 0
            guard better else { continue }
            let violated = comparison.metrics.filter { $0.isGuardrailViolated }.map(\.metric.rawValue)
            // A guardrail no test can read (a control rate of 0, no variance) has not passed:
            // when the arm's rate is on its forbidden side, the arm waits like a violated one.
            let untested = comparison.metrics.filter { $0.isGuardrailUntestedAndWorse }.map { guardrail in
                // Measured on nothing in an arm: not shown worse, only never shown not worse.
                guardrail.variant.rate == nil || guardrail.control.rate == nil
                    ? "\(guardrail.metric.rawValue) unmeasured: no trials in an arm"
                    : "\(guardrail.metric.rawValue) worse and untestable: \(guardrail.unavailable ?? "")"
            }
            if !violated.isEmpty || !untested.isEmpty {
                let reasons = (violated.isEmpty ? [] : ["guardrails \(violated.joined(separator: ", "))"])
                    + (untested.isEmpty ? [] : ["guardrails \(untested.joined(separator: ", "))"])
                blocked.append("\(comparison.arm) (\(reasons.joined(separator: "; ")))")
                continue
            }
            let improvement = primary.higherIsBetter ? lift.estimate : -lift.estimate
            if best == nil || improvement > best!.improvement { best = (comparison.arm, improvement) }
        }
        if let best {
            return (.ship(arm: best.arm),
                    "the sequential interval of \(primary.rawValue) excludes no change in favour of \(best.arm) and no guardrail is significantly worse")
        }
        // An arm better on the primary metric that a guardrail blocked is no "no effect": an
        // ending without a winner says so.
        let blockedText = "better on \(primary.rawValue) but blocked: \(blocked.joined(separator: "; "))"
        let blockedNote = blocked.isEmpty ? "" : "; " + blockedText
        let margin = definition.analysis.equivalenceMargin
        let intervals = comparisons.compactMap { $0.metrics.first?.logRatio?.sequential?.interval }
        if !comparisons.isEmpty, intervals.count == comparisons.count,
           intervals.allSatisfy({ $0.lower >= -margin && $0.upper <= margin }) {
            return (.stopNoEffect(.equivalence),
                    "every arm's sequential interval of the relative \(primary.rawValue) lift lies within +-\(margin)" + blockedNote)
        }
        if let maximum = definition.analysis.maximumNotificationsPerArm,
           arms.allSatisfy({ $0.counts.trials(primary) >= maximum }) {
            return (.stopNoEffect(.maximumSample), "every arm reached \(maximum) notifications without a winner" + blockedNote)
        }
        if let stopAt = definition.stopAt, now >= stopAt {
            return (.stopNoEffect(.scheduleEnded), "the experiment reached its stop time without a winner" + blockedNote)
        }
        if !blocked.isEmpty {
            return (.continue, blockedText)
        }
        let starved = comparisons.compactMap { comparison in
            comparison.metrics.first.flatMap { $0.isNotEnoughData ? "\(comparison.arm) (\($0.unavailable ?? ""))" : nil }
        }
        if !starved.isEmpty {
            return (.continue, "not enough data on \(primary.rawValue) for \(starved.joined(separator: ", ")); no decision")
        }
        return (.continue, "no arm is significantly better on \(primary.rawValue) yet")
    }
}

// MARK: - Result

/// What one analysis found and decided.
public struct ExperimentRunResult: Sendable, Equatable {
    public var experimentID: String
    public var analyzedAt: Timestamp
    /// 1 for the first analysis, counting the earlier runs passed in.
    public var look: Int
    public var alpha: Double
    /// `alpha` divided by the number of treatment arms: the level of the primary comparisons.
    public var decisionAlpha: Double
    public var sequentialTuning: Double
    public var primaryMetric: ExperimentMetric
    /// In definition order.
    public var arms: [ExperimentArmSummary]
    /// Chi-square test of devices per arm against the weights.
    public var sampleRatioMismatchPValue: Double
    /// One per treatment arm, in definition order: intent to treat.
    public var comparisons: [ExperimentArmComparison]
    /// CUPED's pre-experiment window; nil when the analysis ran without covariates.
    public var cupedWindow: ExperimentCupedWindow?
    /// Rich against plain as shown: observational.
    public var asTreated: ExperimentAsTreatedResult
    public var excluded: ExperimentExclusions
    public var decision: ExperimentDecision
    /// One sentence on why.
    public var rationale: String

    /// The test a decision may act on (`SampleRatioMismatch.decisionPValue`: arms expecting
    /// fewer than 5 devices pooled) below the threshold: what blocks the decision.
    public var hasSampleRatioMismatch: Bool {
        SampleRatioMismatch.decisionPValue(observed: arms.map(\.devices), weights: arms.map(\.weight))
            .map { $0 < ExperimentAnalysis.sampleRatioMismatchThreshold } ?? false
    }
}

public enum ExperimentDecision: Sendable, Hashable {
    case `continue`
    case ship(arm: String)
    case stopNoEffect(NoEffectReason)
    case invalidSampleRatioMismatch

    public enum NoEffectReason: String, Sendable, Hashable {
        case equivalence
        case maximumSample = "maximum_sample"
        case scheduleEnded = "schedule_ended"
    }

    /// `continue`, `ship`, `stop_no_effect`, `invalid_sample_ratio_mismatch`.
    public var code: String {
        switch self {
        case .continue: "continue"
        case .ship: "ship"
        case .stopNoEffect: "stop_no_effect"
        case .invalidSampleRatioMismatch: "invalid_sample_ratio_mismatch"
        }
    }

    /// True for every decision that ends the experiment.
    public var isFinal: Bool {
        switch self {
        case .continue: false
        default: true
        }
    }
}

public struct ExperimentArmSummary: Sendable, Equatable {
    public var name: String
    public var strategy: AttachmentStrategy
    public var isControl: Bool
    public var weight: Double
    public var devices: Int
    public var counts: FunnelCounts
    public var processingP50: Double?
    public var processingP95: Double?
}

public struct ExperimentArmComparison: Sendable, Equatable {
    public var arm: String
    public var strategy: AttachmentStrategy
    /// The primary metric first, then the guardrails in definition order.
    public var metrics: [ExperimentMetricComparison]
}

public enum ExperimentMetricRole: Sendable, Hashable {
    case primary
    case guardrail(GuardrailDirection)
    /// As-treated comparisons.
    case observational
}

/// A metric's rate in one group.
public struct ExperimentRate: Sendable, Equatable {
    public var successes: Int
    public var trials: Int
    public var devices: Int
    /// Nil without trials.
    public var rate: Double?

    init(variant tally: ExperimentArmTally, _ metric: ExperimentMetric) {
        let (successes, trials) = tally.proportion(metric)
        self.successes = successes
        self.trials = trials
        devices = tally.devices
        rate = trials == 0 ? nil : Double(successes) / Double(trials)
    }
}

/// One lift with its tests: every figure gbstats 0.8.0 gives for a ratio metric with the device
/// as the unit (`TreatmentEffect` on `ArmEstimate(RatioMoments)`).
public struct ExperimentLiftResult: Sendable, Equatable {
    public var estimate: Double
    public var standardError: Double
    /// Welch-Satterthwaite (gbstats `TTest.dof`).
    public var degreesOfFreedom: Double
    /// Welch's test for a single, pre-planned look.
    public var fixedHorizon: LiftTestResult
    /// The always-valid confidence sequence; nil for observational comparisons.
    public var sequential: LiftTestResult?
    /// Posterior probability that the variant is BETTER (lower for `dismiss`), flat prior.
    public var chanceToWin: Double
    /// The central posterior interval at the comparison's confidence.
    public var credibleInterval: ConfidenceInterval
    /// Expected loss of keeping the control, and of shipping the variant (gbstats' `risk`).
    public var controlRisk: Double
    public var treatmentRisk: Double

    /// `confidence` is the intervals' level, already `1 - correction.perComparison(alpha)`;
    /// p-values are adjusted by `correction` to belong to them.
    init(_ effect: TreatmentEffect, metric: ExperimentMetric, confidence: Double, tuning: Double,
         correction: MultipleTesting = .none) {
        let alpha = 1 - confidence
        estimate = effect.estimate
        standardError = effect.standardError
        degreesOfFreedom = effect.degreesOfFreedom
        let fixed = effect.fixedHorizon(alpha: alpha)
        fixedHorizon = LiftTestResult(estimate: estimate, interval: fixed.interval, pValue: fixed.pValue, correction: correction)
        let always = effect.sequential(alpha: alpha, tuning: tuning)
        sequential = LiftTestResult(estimate: estimate, interval: always.interval, pValue: always.pValue, correction: correction)
        let posterior = effect.posterior(alpha: alpha, higherIsBetter: metric.higherIsBetter)
        chanceToWin = posterior.chanceToWin
        credibleInterval = posterior.credibleInterval
        controlRisk = posterior.controlRisk
        treatmentRisk = posterior.treatmentRisk
    }
}

public struct ExperimentMetricComparison: Sendable, Equatable {
    public var metric: ExperimentMetric
    public var role: ExperimentMetricRole
    /// The confidence of the intervals.
    public var confidence: Double
    /// How the p-values shown were adjusted so that each belongs to its interval: Bonferroni
    /// over the treatments for the primary metric with more than one, `none` otherwise.
    public var correction: MultipleTesting
    public var control: ExperimentRate
    public var variant: ExperimentRate
    /// Variant minus control.
    public var absolute: ExperimentLiftResult?
    /// Variant over control, minus 1 (gbstats' relative scale, shown beside the decision's).
    public var relative: ExperimentLiftResult?
    /// Variant over control, minus 1, from the log of the ratio of means: what decisions read
    /// (`ExperimentDecisionLift`).
    public var logRatio: ExperimentDecisionLift?
    /// What CUPED did to this comparison; nil when it ran without covariates.
    public var cuped: ExperimentCupedResult?
    /// Why a lift is missing (`StatisticsError.Code` of the first that could not be computed),
    /// nil when all are present.
    public var unavailable: String?

    init(metric: ExperimentMetric, role: ExperimentMetricRole, confidence: Double, correction: MultipleTesting = .none,
         control: ExperimentRate, variant: ExperimentRate) {
        self.metric = metric
        self.role = role
        self.confidence = confidence
        self.correction = correction
        self.control = control
        self.variant = variant
    }

    /// The named "not enough data" state: an arm with fewer than two devices, a variance of 0 or
    /// a control mean of 0 (where gbstats returns p = 1 and chance to win 0.5); `unavailable`
    /// says which. Such a comparison never decides: its primary metric cannot ship an arm, and
    /// its guardrail is not counted as violated (though it blocks shipping when the arm's rate is on its
    /// forbidden side: `isGuardrailUntestedAndWorse`).
    public var isNotEnoughData: Bool { unavailable != nil }

    /// A guardrail no test could read (`isNotEnoughData`) whose variant rate is nevertheless on
    /// the forbidden side of the control's (more dismissals where the control had none): it
    /// blocks shipping, since "not significantly worse" was never shown. Equal rates (every
    /// device rich in both arms) do not block.
    public var isGuardrailUntestedAndWorse: Bool {
        guard case .guardrail(let direction) = role, isNotEnoughData else { return false }
        // A side with no trials at all (an arm whose extension never reached `delivered`, for
        // `rich_display`) shows nothing, least of all that it is not worse: it blocks too.
        guard let variantRate = variant.rate, let controlRate = control.rate else { return true }
        switch direction {
        case .mustNotDecrease: return variantRate < controlRate
        case .mustNotIncrease: return variantRate > controlRate
        }
    }

    /// A guardrail whose sequential interval of the relative lift, read from the log ratio of
    /// means (`logRatio`), lies wholly on the forbidden side.
    public var isGuardrailViolated: Bool {
        guard case .guardrail(let direction) = role, let interval = logRatio?.sequential?.interval else { return false }
        switch direction {
        case .mustNotDecrease: return interval.upper < 0
        case .mustNotIncrease: return interval.lower > 0
        }
    }
}

/// Rich against plain as shown, all arms together. Observational: presentation is not
/// randomized, and the same device may appear on both sides.
public struct ExperimentAsTreatedResult: Sendable, Equatable {
    public static let label = "observational: rich vs plain as actually shown, not randomized; differences mix the effect of rich media with who gets rich notifications"
    public var rich: FunnelCounts
    public var plain: FunnelCounts
    public var richDevices: Int
    public var plainDevices: Int
    /// Rich against plain with the device as the unit and the devices seen both ways counted
    /// as such (`ClusteredProportionComparison`): the comparison to read.
    public var deviceClustered: [ExperimentClusteredComparison]
    /// Rich is the variant, plain the control; fixed-horizon tests only. These take rich and
    /// plain as independent samples, which they are not when devices appear on both sides.
    public var metrics: [ExperimentMetricComparison]
}

/// Notifications left out of the analysis.
public struct ExperimentExclusions: Sendable, Equatable {
    public var otherExperiment: Int
    public var unknownArm: Int
    public var outsideCategories: Int
}
