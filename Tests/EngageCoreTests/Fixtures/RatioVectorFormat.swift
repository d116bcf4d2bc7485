import Foundation

// The shapes of the JSON in SharedRatioVectors and ExperimentStatisticsVectors (see
// scripts/gbstats-vectors.py), decoded for the parity tests.

/// One arm's inputs: device-level moments of a ratio (`D, sx, ...`), of a mean with its covariate
/// (`sy, sc, ...`), or per-device rows `[x, n, x', n']`.
struct VectorArm: Decodable {
    let D: Int?
    let sx, sxx, sn, snn, sxn: Double?
    let sy, syy, sc, scc, syc: Double?
    let devices: [[Double]]?
    let weight: Double?
}

/// gbstats' figures for one treatment arm on one scale; absent fields were not computed.
struct VectorScale: Decodable {
    let scale: String
    let error: String?
    let estimate, se, dof: Double?
    let fixedP, fixedLo, fixedHi: Double
    let seqP, seqLo, seqHi: Double
    let bayesError: String?
    let ctw, bayesLo, bayesHi, riskCtrl, riskTrt: Double?
    let bonferroniFixedP, bonferroniFixedLo, bonferroniFixedHi: Double?
    let bonferroniSeqP, bonferroniSeqLo, bonferroniSeqHi: Double?
    /// `cuped_analysis`: 1 - Var(adjusted effect) / Var(unadjusted effect).
    var varianceReduction: Double?
}

struct VectorResult: Decodable {
    let arm: Int
    let theta: Double?
    let meanC, meanV, varC, varV: Double
    let scales: [VectorScale]
}

struct VectorCase: Decodable {
    let name: String
    let alpha: Double
    let tuning: Double
    let inverse: Bool?
    let bonferroni: Bool?
    let covariate: String?
    /// `cuped_analysis`: the metric the rows count.
    let metric: String?
    let arms: [VectorArm]
    let results: [VectorResult]
}

struct RiskVector: Decodable {
    let mu, sigma, chanceToWin, riskCtrl, riskTrt: Double
}

struct ClopperPearsonVector: Decodable {
    let successes, trials: Int
    let confidence, lower, upper, upperOneSided: Double
}

struct ExperimentStatisticsFixture: Decodable {
    let ratio: [VectorCase]
    let cupedMean: [VectorCase]
    let cupedRatio: [VectorCase]
    let cupedAnalysis: [VectorCase]
    let risk: [RiskVector]
    let clopperPearson: [ClopperPearsonVector]

    static let shared: ExperimentStatisticsFixture = decode(ExperimentStatisticsVectors.json)
}

/// ratio-vectors.json: gbstats' figures flat, one entry per arm and scale.
struct SharedRatioCase: Decodable {
    struct Expected: Decodable {
        let arm: Int
        let scale: String
        let estimate, se, dof, fixedP, fixedLo, fixedHi, seqP, seqLo, seqHi: Double
        let ctw, bayesLo, bayesHi, riskCtrl, riskTrt, srmP, varC, varV: Double
    }

    let `case`: String
    let alpha: Double
    let sequentialTuning: Double
    let arms: [VectorArm]
    let gbstats080: [Expected]

    static let all: [SharedRatioCase] = decode(SharedRatioVectors.json)
}

private func decode<T: Decodable>(_ json: String) -> T {
    do {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(T.self, from: Data(json.utf8))
    } catch {
        fatalError("fixture does not decode: \(error)")
    }
}
