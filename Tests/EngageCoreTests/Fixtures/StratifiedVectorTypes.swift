import Foundation

// The shapes of the stratified, ratio and device-clustered fixtures (JSON kept verbatim in
// StratifiedSharedVectors.swift, and generated into StratifiedStatsmodelsVectors.swift and
// ClusteredDeviceVectors.swift by scripts/stratified_vectors.py).

/// Our generated fixtures use plain snake_case keys; the shared file's odd keys are spelled out.
func decodeFixture<Value: Decodable>(_ type: Value.Type, from json: String, snakeCase: Bool = true) throws -> Value {
    let decoder = JSONDecoder()
    if snakeCase { decoder.keyDecodingStrategy = .convertFromSnakeCase }
    return try decoder.decode(type, from: Data(json.utf8))
}

/// reference/stratified-vectors.json.
struct SharedStratifiedFile: Decodable {
    struct Counts: Decodable {
        let successes: Int
        let displayed: Int
    }

    struct Entry: Decodable {
        let category: String
        let rich: Counts
        let plain: Counts
    }

    struct Crude: Decodable {
        enum CodingKeys: String, CodingKey {
            case richRate = "rich_rate", plainRate = "plain_rate", difference
        }

        let richRate: Double
        let plainRate: Double
        let difference: Double
    }

    struct RiskDifference: Decodable {
        enum CodingKeys: String, CodingKey {
            case estimate, seSato = "se_sato", ci95
        }

        let estimate: Double
        let seSato: Double
        let ci95: [Double]
    }

    struct RiskRatio: Decodable {
        enum CodingKeys: String, CodingKey {
            case estimate, seLogGreenlandRobins = "se_log_greenland_robins", ci95
            case statsmodels = "statsmodels_StratifiedTable_riskratio_pooled"
        }

        let estimate: Double
        let seLogGreenlandRobins: Double
        let ci95: [Double]
        let statsmodels: Double
    }

    struct CMH: Decodable {
        enum CodingKeys: String, CodingKey {
            case statistic, pValue = "p_value"
            case statsmodels = "statsmodels_test_null_odds_correction_False"
        }

        let statistic: Double
        let pValue: Double
        let statsmodels: Double
    }

    struct Stratified: Decodable {
        enum CodingKeys: String, CodingKey {
            case strata, crudePooled = "crude_pooled"
            case mantelHaenszelRiskDifference = "mantel_haenszel_risk_difference"
            case mantelHaenszelRiskRatio = "mantel_haenszel_risk_ratio"
            case cmh = "cmh_test_no_continuity_correction"
            case breslowDayP = "breslow_day_homogeneity_p_statsmodels_test_equal_odds"
        }

        let strata: [Entry]
        let crudePooled: Crude
        let mantelHaenszelRiskDifference: RiskDifference
        let mantelHaenszelRiskRatio: RiskRatio
        let cmh: CMH
        let breslowDayP: Double
    }

    struct RelativeInterval: Decodable {
        enum CodingKeys: String, CodingKey {
            case rich, plain, relativeLift = "relative_lift"
            case log = "statsmodels_confint_proportions_2indep_ratio_log_as_relative"
            case score = "statsmodels_confint_proportions_2indep_ratio_score_as_relative"
        }

        let rich: [Int]
        let plain: [Int]
        let relativeLift: Double
        let log: [Double]
        let score: [Double]
    }

    enum CodingKeys: String, CodingKey {
        case stratified, relativeIntervals = "relative_intervals"
    }

    let stratified: Stratified
    let relativeIntervals: [RelativeInterval]
}

/// StratifiedStatsmodelsVectors.
struct StatsmodelsStratifiedFile: Decodable {
    struct StratumEntry: Decodable {
        let name: String
        let variant: [Int]
        let control: [Int]
    }

    struct Excluded: Decodable {
        let name: String
        let reason: String
    }

    struct RiskDifference: Decodable {
        let estimate: Double
        let satoVariance: Double
        let greenlandRobinsVariance: Double
    }

    struct RiskRatio: Decodable {
        let estimate: Double
        let greenlandRobinsLogVariance: Double
        let largeStrataLogVariance: Double
    }

    struct CMH: Decodable {
        let statistic: Double
        let pValue: Double
        let correctedStatistic: Double
        let correctedPValue: Double
    }

    struct BreslowDay: Decodable {
        let statistic: Double
        let pValue: Double
        let taroneStatistic: Double
        let taronePValue: Double
        let degreesOfFreedom: Int
        let excluded: [String]
    }

    struct ChiSquare: Decodable {
        let statistic: Double
        let pValue: Double
        let degreesOfFreedom: Int
    }

    struct CochranQ: Decodable {
        let difference: ChiSquare
        let ratio: ChiSquare
    }

    struct Case: Decodable {
        let name: String
        let strata: [StratumEntry]
        let excluded: [Excluded]
        let mhRd: RiskDifference
        let mhRr: RiskRatio
        let cmh: CMH
        let breslowDay: BreslowDay?
        let cochranQ: CochranQ?
    }

    struct Interval: Decodable {
        let lower: Double
        let upper: Double
        let pValue: Double
    }

    struct Ratio: Decodable {
        let variant: [Int]
        let control: [Int]
        let ratio: Double
        let katzLog: Interval?
        let miettinenNurminenScore: Interval
        let koopmanScore: Interval
    }

    let confidence: Double
    let stratified: [Case]
    let ratio: [Ratio]
}

/// ClusteredDeviceVectors.
struct ClusteredDeviceFile: Decodable {
    struct Bucket: Decodable {
        let stratum: String
        let arm: String
        let rate: Double
        let clusteredVariance: Double
        let binomialVariance: Double
    }

    struct StratumEffect: Decodable {
        let stratum: String
        let differenceVariance: Double
        let differenceBinomialVariance: Double
        let logRatioVariance: Double?
        let logRatioBinomialVariance: Double?
    }

    struct RiskDifference: Decodable {
        let estimate: Double
        let variance: Double
        let binomialVariance: Double
    }

    struct RiskRatio: Decodable {
        let estimate: Double
        let logVariance: Double
        let binomialLogVariance: Double
    }

    struct Homogeneity: Decodable {
        let statistic: Double
        let degreesOfFreedom: Int
        let excluded: [String]
    }

    struct Tests: Decodable {
        let difference: Homogeneity?
        let ratio: Homogeneity?
    }

    struct Case: Decodable {
        let name: String
        let strata: [String]
        /// Per device: [stratum index, arm (0 variant, 1 control), successes, trials] per bucket.
        let devices: [[[Int]]]
        let buckets: [Bucket]
        let strataEffects: [StratumEffect]
        let mhRd: RiskDifference
        let mhRr: RiskRatio
        let homogeneity: Tests
    }

    let confidence: Double
    let cases: [Case]
}
