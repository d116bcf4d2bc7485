import Foundation
import Testing
@testable import EngageCore

/// Every figure of `RatioMetricComparison` against gbstats 0.8.0, to 1e-9 relative: the shared
/// ratio-vectors.json and the vectors of scripts/gbstats-vectors.py.
@Suite struct RatioMetricParityTests {
    private var fixture: ExperimentStatisticsFixture { .shared }

    // MARK: Inputs

    private static func ratio(_ arm: VectorArm) -> RatioMoments {
        RatioMoments(devices: arm.D!, numeratorSum: arm.sx!, numeratorSquares: arm.sxx!, denominatorSum: arm.sn!,
                     denominatorSquares: arm.snn!, crossProducts: arm.sxn!)
    }

    private static func meanWithCovariate(_ arm: VectorArm) -> AdjustedRatioMoments {
        .meanMetric(devices: arm.D!, sum: arm.sy!, sumOfSquares: arm.syy!, covariateSum: arm.sc!,
                    covariateSquares: arm.scc!, crossProducts: arm.syc!)
    }

    /// Accumulated device by device, as the experiment reader will.
    private static func devices(_ arm: VectorArm, covariate: String) -> AdjustedRatioMoments {
        var moments = AdjustedRatioMoments()
        for row in arm.devices! {
            if covariate == "mean" {
                moments.add(numerator: row[0], denominator: row[1], covariate: row[3] > 0 ? row[2] / row[3] : 0)
            } else {
                moments.add(numerator: row[0], denominator: row[1], preNumerator: row[2], preDenominator: row[3])
            }
        }
        return moments
    }

    private static func settings(_ vector: VectorCase) -> RatioMetricComparison.Settings {
        RatioMetricComparison.Settings(alpha: vector.alpha, sequentialTuning: vector.tuning,
                                       higherIsBetter: !(vector.inverse ?? false))
    }

    /// Each treatment of a case against its control, with the corrected family beside it.
    private static func comparisons(_ kind: String, _ vector: VectorCase) -> [(plain: RatioMetricComparison, family: RatioMetricComparison)] {
        let settings = settings(vector)
        switch kind {
        case "ratio":
            let arms = vector.arms.map(ratio)
            let family = RatioMetricComparison.family(control: arms[0], treatments: Array(arms.dropFirst()), settings: settings)
            return arms.indices.dropFirst().map {
                (RatioMetricComparison(control: arms[0], treatment: arms[$0], settings: settings), family[$0 - 1])
            }
        default:
            let arms = kind == "cuped_mean" ? vector.arms.map(meanWithCovariate)
                : vector.arms.map { devices($0, covariate: vector.covariate!) }
            let family = RatioMetricComparison.family(control: arms[0], treatments: Array(arms.dropFirst()), settings: settings)
            return arms.indices.dropFirst().map {
                (RatioMetricComparison(control: arms[0], treatment: arms[$0], settings: settings), family[$0 - 1])
            }
        }
    }

    // MARK: Tests

    @Test func sharedRatioVectors() {
        var parity = GbstatsParity()
        for vector in SharedRatioCase.all {
            let arms = vector.arms.map(Self.ratio)
            let settings = RatioMetricComparison.Settings(alpha: vector.alpha, sequentialTuning: vector.sequentialTuning)
            let srm = SampleRatioMismatch.pValue(observed: arms.map(\.devices), weights: vector.arms.map { $0.weight! })
            for expected in vector.gbstats080 {
                let context = "shared \(vector.case) arm \(expected.arm) \(expected.scale)"
                let comparison = RatioMetricComparison(control: arms[0], treatment: arms[expected.arm], settings: settings)
                let scale = EffectScale(rawValue: expected.scale)!
                check(comparison.outcome(scale), comparison.outcome(scale), expected.asGenerated, context, &parity)
                parity.check("arm variance", comparison.control.variance, expected.varC, context)
                parity.check("arm variance", comparison.treatment.variance, expected.varV, context)
                parity.check("srm p", srm, expected.srmP, context, lossy: true)
            }
        }
        // The shared file states 10 significant digits: its own rounding is up to 5e-10.
        parity.expectAgreement(label: "shared ratio-vectors.json")
    }

    @Test(arguments: ["ratio", "cuped_mean", "cuped_ratio"])
    func generatedVectors(kind: String) {
        var parity = GbstatsParity()
        let cases = kind == "ratio" ? fixture.ratio : kind == "cuped_mean" ? fixture.cupedMean : fixture.cupedRatio
        for vector in cases {
            let comparisons = Self.comparisons(kind, vector)
            for expected in vector.results {
                let (comparison, family) = comparisons[expected.arm - 1]
                let context = "\(kind) \(vector.name) arm \(expected.arm)"
                if let theta = expected.theta {
                    parity.check("theta", comparison.regressionAdjustment?.theta ?? .nan, theta, context)
                }
                parity.check("arm mean", comparison.control.mean, expected.meanC, context)
                parity.check("arm mean", comparison.treatment.mean, expected.meanV, context)
                parity.check("arm variance", comparison.control.variance, expected.varC, context)
                parity.check("arm variance", comparison.treatment.variance, expected.varV, context)
                for scale in expected.scales {
                    let effectScale = EffectScale(rawValue: scale.scale)!
                    check(comparison.outcome(effectScale), family.outcome(effectScale), scale,
                          "\(context) \(scale.scale)", &parity)
                }
                if !expected.scales.contains(where: { $0.scale == "log_ratio" }) {
                    #expect(comparison.logRatio.summary == nil, "\(context): log ratio where gbstats has none")
                }
            }
        }
        parity.expectAgreement(label: kind)
    }

    private func check(_ outcome: RatioMetricComparison.Outcome, _ corrected: RatioMetricComparison.Outcome,
                       _ expected: VectorScale, _ context: String, _ parity: inout GbstatsParity) {
        guard case .estimated(let summary) = outcome else {
            // gbstats' empty answer: p = 1, no interval, chance to win 0.5, no risk.
            #expect(expected.error != nil, "\(context): engage has not enough data, gbstats has figures")
            #expect(expected.fixedP == 1 && expected.seqP == 1 && expected.fixedLo == 0 && expected.fixedHi == 0)
            if let ctw = expected.ctw {
                #expect(ctw == 0.5 && expected.riskCtrl == 0 && expected.riskTrt == 0, "\(context)")
            }
            return
        }
        guard expected.error == nil, let estimate = expected.estimate, let se = expected.se, let dof = expected.dof else {
            Issue.record("\(context): gbstats has not enough data (\(expected.error ?? "")), engage has figures")
            return
        }
        parity.check("estimate", summary.effect.estimate, estimate, context)
        parity.check("standard error", summary.effect.standardError, se, context)
        parity.check("degrees of freedom", summary.effect.degreesOfFreedom, dof, context)
        parity.check("fixed p", summary.fixedHorizon.pValue, expected.fixedP, context, lossy: true)
        parity.check("fixed interval", summary.fixedHorizon.interval.lower, expected.fixedLo, context)
        parity.check("fixed interval", summary.fixedHorizon.interval.upper, expected.fixedHi, context)
        parity.check("sequential p", summary.sequential.pValue, expected.seqP, context, lossy: true)
        parity.check("sequential interval", summary.sequential.interval.lower, expected.seqLo, context)
        parity.check("sequential interval", summary.sequential.interval.upper, expected.seqHi, context)
        if let ctw = expected.ctw, let lower = expected.bayesLo, let upper = expected.bayesHi,
           let riskControl = expected.riskCtrl, let riskTreatment = expected.riskTrt {
            parity.check("chance to win", summary.posterior.chanceToWin, ctw, context, lossy: true)
            parity.check("credible interval", summary.posterior.credibleInterval.lower, lower, context)
            parity.check("credible interval", summary.posterior.credibleInterval.upper, upper, context)
            parity.check("risk", summary.posterior.controlRisk, riskControl, context, lossy: true)
            parity.check("risk", summary.posterior.treatmentRisk, riskTreatment, context, lossy: true)
        }
        guard let fixedP = expected.bonferroniFixedP, let fixedLo = expected.bonferroniFixedLo,
              let fixedHi = expected.bonferroniFixedHi, let seqP = expected.bonferroniSeqP,
              let seqLo = expected.bonferroniSeqLo, let seqHi = expected.bonferroniSeqHi else { return }
        guard let family = corrected.summary else {
            Issue.record("\(context): the corrected family has not enough data")
            return
        }
        #expect(family.fixedHorizon.correction != .none && family.sequential.correction == family.fixedHorizon.correction)
        parity.check("bonferroni p", family.fixedHorizon.pValue, fixedP, context, lossy: true)
        parity.check("bonferroni interval", family.fixedHorizon.interval.lower, fixedLo, context)
        parity.check("bonferroni interval", family.fixedHorizon.interval.upper, fixedHi, context)
        parity.check("bonferroni p", family.sequential.pValue, seqP, context, lossy: true)
        parity.check("bonferroni interval", family.sequential.interval.lower, seqLo, context)
        parity.check("bonferroni interval", family.sequential.interval.upper, seqHi, context)
    }

    @Test func riskAgainstMpmath() {
        var parity = GbstatsParity()
        for vector in fixture.risk {
            let posterior = EffectPosterior(mean: vector.mu, standardDeviation: vector.sigma)
            let context = "mu \(vector.mu) sigma \(vector.sigma)"
            // No slack here: these are exact to 50 digits, and engage does not lose the tail.
            parity.check("risk", posterior.controlRisk, vector.riskCtrl, context, relative: 1e-13)
            parity.check("risk", posterior.treatmentRisk, vector.riskTrt, context, relative: 1e-13)
            parity.check("chance to win", posterior.chanceToWin, vector.chanceToWin, context, relative: 1e-13)
        }
        parity.expectAgreement(label: "risk (mpmath)")
    }
}

extension SharedRatioCase.Expected {
    /// In the generated vectors' form, to run through the same checks.
    var asGenerated: VectorScale {
        VectorScale(scale: scale, error: nil, estimate: estimate, se: se, dof: dof, fixedP: fixedP, fixedLo: fixedLo,
                    fixedHi: fixedHi, seqP: seqP, seqLo: seqLo, seqHi: seqHi, bayesError: nil, ctw: ctw,
                    bayesLo: bayesLo, bayesHi: bayesHi, riskCtrl: riskCtrl, riskTrt: riskTrt, bonferroniFixedP: nil,
                    bonferroniFixedLo: nil, bonferroniFixedHi: nil, bonferroniSeqP: nil, bonferroniSeqLo: nil,
                    bonferroniSeqHi: nil)
    }
}

/// Records the largest error per quantity and every disagreement.
struct GbstatsParity {
    private(set) var worstRelative: [String: Double] = [:]
    private(set) var worstAbsoluteWhereLossy: [String: Double] = [:]
    private(set) var disagreements: [String] = []

    /// Within `relative` of `expected`; a `lossy` figure (gbstats computes it as `1 - F` or
    /// `F * (1 - G)`, losing digits near 0) may instead be within 1e-12 absolute.
    mutating func check(_ quantity: String, _ actual: Double, _ expected: Double, _ context: String,
                        lossy: Bool = false, relative: Double = 1e-9) {
        let difference = abs(actual - expected)
        let relativeError = expected == 0 ? (difference == 0 ? 0 : .infinity) : difference / abs(expected)
        if relativeError <= relative {
            worstRelative[quantity] = max(worstRelative[quantity] ?? 0, relativeError)
        } else if lossy, difference <= 1e-12 {
            worstAbsoluteWhereLossy[quantity] = max(worstAbsoluteWhereLossy[quantity] ?? 0, difference)
        } else {
            disagreements.append("\(context) \(quantity): engage \(actual), reference \(expected)")
        }
    }

    func expectAgreement(label: String) {
        #expect(disagreements.isEmpty, "\(label): \(disagreements.joined(separator: "\n"))")
        #expect(!worstRelative.isEmpty, "\(label): nothing was compared")
        let figures = worstRelative.sorted { $0.key < $1.key }
            .map { "\($0.key) \(String(format: "%.1e", $0.value))" }.joined(separator: ", ")
        let lossy = worstAbsoluteWhereLossy.sorted { $0.key < $1.key }
            .map { "\($0.key) \(String(format: "%.1e", $0.value))" }.joined(separator: ", ")
        print("parity \(label): largest relative error: \(figures)"
              + (lossy.isEmpty ? "" : "; absolute where gbstats loses digits: \(lossy)"))
    }
}
