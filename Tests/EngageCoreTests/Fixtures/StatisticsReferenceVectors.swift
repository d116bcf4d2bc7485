// Reference values for the statistics tests, copied so the repository stands alone.
//
// `Shared` is a verbatim copy of the project's reference/stats-vectors.json ("shared" below):
// Newcombe (1998) Stat Med 17:873 Table II; GrowthBook SDK conformance hash cases; gbstats
// 0.8.0 runs (binomial, delta method, Welch t, sequential with N* = 5000, alpha = 0.05);
// Wilson values that agree with statsmodels.
//
// `Independent` holds further values computed outside the repository with a throwaway Python
// script (mpmath 1.3 at 40 digits, scipy 1.17, statsmodels 0.15, gbstats 0.8.0) and with the
// GrowthBook SDK's published conformance cases (cases.json). The product does not use Python.

struct WilsonVector: Sendable {
    let successes: Int
    let trials: Int
    let lower: Double
    let upper: Double
}

struct NewcombeVector: Sendable {
    let x1: Int, n1: Int, x2: Int, n2: Int
    let lower: Double
    let upper: Double
}

struct TestVector: Sendable {
    let p: Double
    let lower: Double
    let upper: Double
}

/// One gbstats run on two proportions, for one lift scale.
struct GbstatsVector: Sendable {
    let control: (successes: Int, trials: Int)
    let variant: (successes: Int, trials: Int)
    let scale: String
    let estimate: Double
    let standardError: Double
    let fixed: TestVector
    let sequential: TestVector
    /// Chance to win and credible interval (ctw in `p`).
    let bayes: TestVector?
}

enum Shared {
    static let wilson95: [WilsonVector] = [
        WilsonVector(successes: 81, trials: 263, lower: 0.255289, upper: 0.366210),
        WilsonVector(successes: 0, trials: 20, lower: 0.0, upper: 0.161125),
    ]

    static let newcombeMethod10: [NewcombeVector] = [
        NewcombeVector(x1: 56, n1: 70, x2: 48, n2: 80, lower: 0.0524, upper: 0.3339),
        NewcombeVector(x1: 9, n1: 10, x2: 3, n2: 10, lower: 0.1705, upper: 0.8090),
        NewcombeVector(x1: 6, n1: 7, x2: 2, n2: 7, lower: 0.0582, upper: 0.8062),
        NewcombeVector(x1: 5, n1: 56, x2: 0, n2: 29, lower: -0.0381, upper: 0.1926),
    ]

    static let fnv1a32: [(input: String, hash: UInt32)] = [
        ("", 0x811c_9dc5), ("a", 0xe40c_292c), ("foobar", 0xbf9c_f968),
    ]
    static let hashV1: [(seed: String, id: String, value: Double)] = [
        ("", "a", 0.22), ("ef", "d", 0.652),
    ]
    static let hashV2: [(seed: String, id: String, value: Double)] = [
        ("seed", "a", 0.0505), ("seed", "b", 0.2696), ("foo", "ab", 0.2575),
    ]

    static let srm: [(observed: [Int], weights: [Double], pValue: Double)] = [
        ([600, 400], [0.5, 0.5], 2.54e-10),
    ]

    static let gbstatsBinomial: [GbstatsVector] = [
        GbstatsVector(
            control: (1000, 10000), variant: (1100, 10000), scale: "relative",
            estimate: 0.1, standardError: 0.0454752680,
            fixed: TestVector(p: 0.02788952876, lower: 0.0108647081, upper: 0.1891352919),
            sequential: TestVector(p: 0.5490379443, lower: -0.0422063538, upper: 0.2422063538),
            bayes: TestVector(p: 0.9860609495, lower: .nan, upper: .nan)
        ),
        GbstatsVector(
            control: (1000, 10000), variant: (1100, 10000), scale: "absolute",
            estimate: 0.01, standardError: 0.0043347434,
            fixed: TestVector(p: 0.02106825747, lower: 0.0015035440, upper: 0.0184964560),
            sequential: TestVector(p: 0.4337202134, lower: -0.0035552373, upper: 0.0235552373),
            bayes: nil
        ),
    ]
}

enum Independent {
    /// Standard normal CDF, mpmath at 40 digits (rounded to 17 significant digits).
    static let normalCDF: [(x: Double, cdf: Double)] = [
        (-37, 5.7255712225245768e-300), (-10, 7.6198530241605261e-24), (-3, 0.0013498980316300945),
        (-1.5, 0.066807201268858066), (0, 0.5), (0.5, 0.6914624612740131), (8, 0.99999999999999938),
    ]

    /// Standard normal quantiles, mpmath root of the 40-digit CDF at the exact binary value of
    /// each double `p` (for 0.999999 that differs from the decimal in the 12th digit).
    static let normalQuantile: [(p: Double, x: Double)] = [
        (1e-300, -37.047096299361199), (1e-10, -6.3613409024040562), (0.001, -3.0902323061678135),
        (0.025, -1.9599639845400542), (0.3, -0.52440051270804078), (0.5, 0),
        (0.975, 1.9599639845400542), (0.999999, 4.7534243088170878),
    ]

    /// Student t survival, scipy.stats.t.sf.
    static let studentTSurvival: [(t: Double, dof: Double, survival: Double)] = [
        (2.5, 1, 0.12111894159084341), (1.0, 2, 0.2113248654051871), (2.0, 3.5, 0.06306926128795672),
        (2.228, 10, 0.02500588590855566), (3.0, 30, 0.0026949820328259727),
        (2.19899, 19964.1, 0.013945030166942901), (2.0, 1e6, 0.02275026692565962),
        (40.0, 5, 9.205981085886477e-08), (2.0, 29.9, 0.02732796759313519), (5.0, 45, 4.599550564238642e-06),
        (2.5, 150, 0.006747661009347444), (12.0, 60, 6.893161320908875e-18),
    ]

    /// Student t quantiles, scipy.stats.t.ppf.
    static let studentTQuantile: [(p: Double, dof: Double, t: Double)] = [
        (0.975, 1, 12.706204736174694), (0.975, 2, 4.302652729749462), (0.975, 3.5, 2.9400886379827282),
        (0.995, 10, 3.16927267261695), (0.975, 30, 2.0422724563012378),
        (0.975, 19964.1, 1.9600828184777428), (0.9999999, 4, 73.98575805751052),
        (0.025, 7.3, -2.3450667365477034),
    ]

    /// Chi-square survival, scipy.stats.chi2.sf.
    static let chiSquareSurvival: [(x: Double, dof: Double, survival: Double)] = [
        (40, 1, 2.5396285894708634e-10), (3.2, 2, 0.2018965179946554), (10, 5, 0.07523524614651217),
        (100, 50, 3.454931382984871e-05), (0.5, 3, 0.9188914116546758), (1500, 1000, 1.0454640385980825e-22),
    ]

    /// statsmodels proportion_confint(method="wilson", alpha=0.05).
    static let wilson95: [WilsonVector] = [
        WilsonVector(successes: 81, trials: 263, lower: 0.2552885198782742, upper: 0.36620957698280004),
        WilsonVector(successes: 0, trials: 20, lower: 0, upper: 0.1611251580528194),
        WilsonVector(successes: 20, trials: 20, lower: 0.8388748419471804, upper: 1),
        WilsonVector(successes: 1, trials: 1, lower: 0.2065493143772374, upper: 1),
        WilsonVector(successes: 5, trials: 1000, lower: 0.0021375355273244604, upper: 0.011650955373375117),
        WilsonVector(successes: 499, trials: 1000, lower: 0.468073488750724, upper: 0.529934164766247),
        WilsonVector(successes: 3, trials: 7, lower: 0.15821985525146964, upper: 0.7495416354723428),
    ]

    /// statsmodels proportion_confint(81, 263, alpha=0.01, method="wilson").
    static let wilson99 = WilsonVector(successes: 81, trials: 263, lower: 0.24013690268760773, upper: 0.38528250231822986)

    /// statsmodels confint_proportions_2indep(method="newcomb", compare="diff", alpha=0.05).
    static let newcombe95: [NewcombeVector] = [
        NewcombeVector(x1: 56, n1: 70, x2: 48, n2: 80, lower: 0.05243147240236498, upper: 0.33387265403690614),
        NewcombeVector(x1: 9, n1: 10, x2: 3, n2: 10, lower: 0.1705227239345029, upper: 0.809017973535488),
        NewcombeVector(x1: 6, n1: 7, x2: 2, n2: 7, lower: 0.05822792748231209, upper: 0.8062496375242278),
        NewcombeVector(x1: 5, n1: 56, x2: 0, n2: 29, lower: -0.038137147903536936, upper: 0.19256001385511165),
        NewcombeVector(x1: 0, n1: 10, x2: 0, n2: 20, lower: -0.1611251580528194, upper: 0.27753279986288926),
        NewcombeVector(x1: 10, n1: 10, x2: 0, n2: 20, lower: 0.6790860371419145, upper: 1),
        NewcombeVector(x1: 120, n1: 1000, x2: 100, n2: 1000, lower: -0.007492167515211062, upper: 0.047550667456339055),
    ]

    /// statsmodels proportions_ztest (pooled), two-sided p-values.
    static let pooledZTest: [(x1: Int, n1: Int, x2: Int, n2: Int, p: Double)] = [
        (1100, 10000, 1000, 10000, 0.021075189273797826),
        (56, 70, 48, 80, 0.00804508136819656),
    ]

    /// scipy.stats.chisquare against the expected split.
    static let srm: [(observed: [Int], weights: [Double], pValue: Double)] = [
        ([600, 400], [0.5, 0.5], 2.5396285894708634e-10),
        ([3300, 3350, 3350], [1, 1, 1], 0.7788007830714049),
        ([1000, 1080], [0.5, 0.5], 0.07941062599894237),
        ([180, 820], [0.2, 0.8], 0.11384629800665763),
    ]

    /// GrowthBook SDK conformance cases (cases.json "hash": seed, id, version, value).
    static let growthBookHashes: [(seed: String, id: String, version: Int, value: Double)] = [
        ("", "a", 1, 0.22), ("", "b", 1, 0.077), ("b", "a", 1, 0.946), ("ef", "d", 1, 0.652),
        ("asdf", "8952klfjas09ujk", 1, 0.549), ("", "123", 1, 0.011), ("", "___)((*\":&", 1, 0.563),
        ("seed", "a", 2, 0.0505), ("seed", "b", 2, 0.2696), ("foo", "ab", 2, 0.2575),
        ("foo", "def", 2, 0.2019), ("89123klj", "8952klfjas09ujkasdf", 2, 0.124),
        ("90850943850283058242805", "123", 2, 0.7516), ("()**(%$##$%#$#", "___)((*\":&", 2, 0.0128),
    ]

    /// GrowthBook SDK conformance cases ("getBucketRange": variations, coverage, weights -> ranges).
    static let bucketRanges: [(name: String, count: Int, coverage: Double, weights: [Double]?, ranges: [[Double]])] = [
        ("normal 50/50", 2, 1, nil, [[0, 0.5], [0.5, 1]]),
        ("reduced coverage", 2, 0.5, nil, [[0, 0.25], [0.5, 0.75]]),
        ("zero coverage", 2, 0, nil, [[0, 0], [0.5, 0.5]]),
        ("4 variations", 4, 1, nil, [[0, 0.25], [0.25, 0.5], [0.5, 0.75], [0.75, 1]]),
        ("uneven weights", 2, 1, [0.4, 0.6], [[0, 0.4], [0.4, 1]]),
        ("uneven weights, 3 variations", 3, 1, [0.2, 0.3, 0.5], [[0, 0.2], [0.2, 0.5], [0.5, 1]]),
        ("uneven weights, reduced coverage, 3 variations", 3, 0.2, [0.2, 0.3, 0.5], [[0, 0.04], [0.2, 0.26], [0.5, 0.6]]),
        ("negative coverage", 2, -0.2, nil, [[0, 0], [0.5, 0.5]]),
        ("coverage above 1", 2, 1.5, nil, [[0, 0.5], [0.5, 1]]),
        ("weights sum below 1", 2, 1, [0.4, 0.1], [[0, 0.5], [0.5, 1]]),
        ("weights sum above 1", 2, 1, [0.7, 0.6], [[0, 0.5], [0.5, 1]]),
        ("weights sum almost equals 1", 2, 1, [0.4, 0.5999], [[0, 0.4], [0.4, 0.9999]]),
    ]

    /// GrowthBook SDK conformance cases ("chooseVariation": n, ranges -> index or -1).
    static let chooseVariation: [(name: String, n: Double, ranges: [[Double]], index: Int)] = [
        ("even range, 0.2", 0.2, [[0, 0.5], [0.5, 1]], 0),
        ("even range, 0.4", 0.4, [[0, 0.5], [0.5, 1]], 0),
        ("even range, 0.6", 0.6, [[0, 0.5], [0.5, 1]], 1),
        ("even range, 0.8", 0.8, [[0, 0.5], [0.5, 1]], 1),
        ("even range, 0", 0, [[0, 0.5], [0.5, 1]], 0),
        ("even range, 0.5", 0.5, [[0, 0.5], [0.5, 1]], 1),
        ("reduced range, 0.2", 0.2, [[0, 0.25], [0.5, 0.75]], 0),
        ("reduced range, 0.4", 0.4, [[0, 0.25], [0.5, 0.75]], -1),
        ("reduced range, 0.6", 0.6, [[0, 0.25], [0.5, 0.75]], 1),
        ("reduced range, 0.8", 0.8, [[0, 0.25], [0.5, 0.75]], -1),
        ("reduced range, 0.25", 0.25, [[0, 0.25], [0.5, 0.75]], -1),
        ("reduced range, 0.5", 0.5, [[0, 0.25], [0.5, 0.75]], 1),
        ("zero range", 0.5, [[0, 0.5], [0.5, 0.5], [0.5, 1]], 2),
    ]

    /// GrowthBook SDK conformance cases ("feature": an experiment rule with three equal
    /// variations, key "feature", hash v1): unit id, bucket, variation.
    static let experimentAssignments: [(id: String, bucket: Double, variation: Int)] = [
        ("123", 0.863, 2), ("456", 0.178, 0), ("fds", 0.514, 1),
    ]

    /// gbstats 0.8.0 runs (TwoSidedTTest, SequentialTwoSidedTTest with defaults, and
    /// EffectBayesianABTest with the default flat prior).
    static let gbstatsBinomial: [GbstatsVector] = [
        GbstatsVector(
            control: (12, 50), variant: (15, 40), scale: "relative",
            estimate: 0.5625000000000001, standardError: 0.506307867063114,
            fixed: TestVector(p: 0.2699677696070011, lower: -0.44538640823714915, upper: 1.5703864082371495),
            sequential: TestVector(p: 0.989676716451924, lower: -2.9817213185669984, upper: 4.106721318566999),
            bayes: TestVector(p: 0.8667124075810353, lower: -0.42984518453299714, upper: 1.5548451845329971)
        ),
        GbstatsVector(
            control: (12, 50), variant: (15, 40), scale: "absolute",
            estimate: 0.135, standardError: 0.09750576906009203,
            fixed: TestVector(p: 0.17011965698197407, lower: -0.05910075519945776, upper: 0.3291007551994578),
            sequential: TestVector(p: 0.948341389792366, lower: -0.5475531418080254, upper: 0.8175531418080254),
            bayes: TestVector(p: 0.9169024153047529, lower: -0.05610779564266033, upper: 0.32610779564266035)
        ),
        GbstatsVector(
            control: (31234, 1_000_000), variant: (30500, 1_000_000), scale: "relative",
            estimate: -0.023500032016392457, standardError: 0.007738617626740239,
            fixed: TestVector(p: 0.0023916883316781323, lower: -0.03866745303521105, upper: -0.00833261099757387),
            sequential: TestVector(p: 0.5611400927739179, lower: -0.052516340070332096, upper: 0.005516276037547185),
            bayes: TestVector(p: 0.0011958287720959082, lower: -0.03866744385493016, upper: -0.00833262017785476)
        ),
        GbstatsVector(
            control: (31234, 1_000_000), variant: (30500, 1_000_000), scale: "absolute",
            estimate: -0.000734000000000002, standardError: 0.000244598011529121,
            fixed: TestVector(p: 0.0026923749331768665, lower: -0.001213403583452511, upper: -0.00025459641654749306),
            sequential: TestVector(p: 0.6253120765895848, lower: -0.001651131662816076, upper: 0.0001831316628160719),
            bayes: TestVector(p: 0.0013461708737918163, lower: -0.0012134032932871921, upper: -0.00025459670671281197)
        ),
        GbstatsVector(
            control: (150, 2000), variant: (140, 2100), scale: "relative",
            estimate: -0.11111111111111109, standardError: 0.10069715832868995,
            fixed: TestVector(p: 0.2699109284406207, lower: -0.3085328434475628, upper: 0.08631062122534063),
            sequential: TestVector(p: 1.0, lower: -0.41716827083973346, upper: 0.19494604861751125),
            bayes: TestVector(p: 0.13492272518610604, lower: -0.308473914780871, upper: 0.08625169255864874)
        ),
        GbstatsVector(
            control: (150, 2000), variant: (140, 2100), scale: "absolute",
            estimate: -0.008333333333333331, standardError: 0.008019796108981177,
            fixed: TestVector(p: 0.298822319449509, lower: -0.02405653810989852, upper: 0.007389871443231857),
            sequential: TestVector(p: 1.0, lower: -0.03270855960044947, upper: 0.01604189293378281),
            bayes: TestVector(p: 0.1493801825116297, lower: -0.024051844870290905, upper: 0.007385178203624238)
        ),
        GbstatsVector(
            control: (1000, 10000), variant: (1100, 10000), scale: "relative",
            estimate: 0.09999999999999995, standardError: 0.045475268003608287,
            fixed: TestVector(p: 0.027889528764600602, lower: 0.010864708144846927, upper: 0.189135291855153),
            sequential: TestVector(p: 0.5490379443452079, lower: -0.04220635376208545, upper: 0.24220635376208535),
            bayes: TestVector(p: 0.9860609494573318, lower: 0.010870112525621006, upper: 0.18912988747437887)
        ),
        GbstatsVector(
            control: (1000, 10000), variant: (1100, 10000), scale: "absolute",
            estimate: 0.009999999999999995, standardError: 0.004334743360338649,
            fixed: TestVector(p: 0.021068257468733975, lower: 0.0015035439810862743, upper: 0.018496456018913716),
            sequential: TestVector(p: 0.43372021342570605, lower: -0.0035552372713726008, upper: 0.02355523727137259),
            bayes: TestVector(p: 0.9894709633919611, lower: 0.0015040591315121105, upper: 0.018495940868487874)
        ),
    ]

    /// gbstats 0.8.0 on a mean metric (control mean 5, variance 9, n 500; variant mean 5.3,
    /// variance 10.24, n 520): fixed test with defaults, sequential with alpha 0.1, N* = 1000.
    static let gbstatsMean: [(scale: String, estimate: Double, standardError: Double, fixed: TestVector, sequential: TestVector)] = [
        ("relative", 0.05999999999999996, 0.039958532351580534,
         TestVector(p: 0.13352194290703645, lower: -0.018410569129647607, upper: 0.13841056912964753),
         TestVector(p: 1.0, lower: -0.05043814090359334, upper: 0.17043814090359327)),
        ("absolute", 0.2999999999999998, 0.1941450686788302,
         TestVector(p: 0.12260011761645284, lower: -0.08097058207443047, upper: 0.6809705820744301),
         TestVector(p: 0.9711536114577735, lower: -0.23658178087820514, upper: 0.8365817808782048)),
    ]
}
