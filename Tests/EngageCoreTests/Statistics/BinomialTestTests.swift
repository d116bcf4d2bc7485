import Testing
@testable import EngageCore

/// The exact two-sided binomial test against scipy 1.x `binomtest(k, n, p).pvalue` ("minlike"),
/// on the counts the sample ratio check meets: small arms of a few expected devices.
@Suite struct BinomialTestTests {
    /// `python3 -c "from scipy.stats import binomtest; print(repr(binomtest(k, n, p).pvalue))"`.
    static let scipy: [(k: Int, n: Int, p: Double, pValue: Double)] = [
        (2, 2, 0.1, 0.010000000000000002), (18, 20, 0.9, 1.0), (0, 20, 0.1, 0.25452997802490435),
        (5, 20, 0.1, 0.04317449528446339), (1, 40, 0.1, 0.1799901199800285), (9, 40, 0.1, 0.015495305414444483),
        (12, 400, 0.01, 0.0008492846916503846), (0, 400, 0.01, 0.03871911293348203),
        (1, 400, 0.01, 0.20010307548458617), (9, 400, 0.01, 0.02076855965843683),
        (30, 1000, 0.004, 6.560424957595646e-17), (3, 1000, 0.004, 0.8042413409502083),
        (0, 1000, 0.004, 0.03929466403392633), (13, 500, 0.009, 0.0007522226040681296),
        (45, 10000, 0.0004, 1.9115173985449645e-31), (7, 3000, 0.001, 0.03343290651810907),
        // Trials in the millions, where a difference of lgamma values misjudged near-ties.
        (3, 10_000_000, 2e-07, 0.4586588399864908), (2, 15_000_001, 1.3e-07, 0.7225655770754877),
        (0, 10_000_000, 2e-07, 0.2782117776263003), (6, 50_000_000, 5e-08, 0.04202103402024717),
        (4000, 1_000_000, 0.005, 8.306316220764496e-49),
        (1, 3, 0.5, 1.0), (7, 10, 0.5, 0.34375), (500, 1000, 0.5, 1.0), (480, 1000, 0.5, 0.2174482932041415),
    ]

    @Test func equalsScipy() {
        for case let (k, n, p, expected) in Self.scipy {
            let pValue = BinomialTest.twoSidedPValue(successes: k, trials: n, probability: p)
            #expect(abs(pValue / expected - 1) < 1e-9, "k=\(k) n=\(n) p=\(p): \(pValue), scipy \(expected)")
        }
        // 200 of 400 devices in a 1% arm: scipy 1.3933571315479857e-282.
        let broken = BinomialTest.twoSidedPValue(successes: 200, trials: 400, probability: 0.01)
        #expect(broken < 1e-250, "\(broken)")
    }

    /// ln P(X = k) at trials in the millions, where a difference of lgamma values errs by about
    /// 1e-8, as much as the 1e-7 tolerance for ties (scipy's `binom.logpmf` errs there too, by
    /// 1e-8 at k = 2 of 15,000,000): against the exact value, from mpmath at 50 digits,
    /// `log(binomial(n, k)) + k log(p) + (n - k) log1p(-p)`.
    @Test func logProbabilitiesAreExactAtLargeTrials() {
        let exact: [(k: Int, n: Int, p: Double, logpmf: Double)] = [
            (2, 15_000_000, 1.3333333333333334e-07, -1.3068527527733843202), (7, 100_000_000, 5e-08, -2.2590959590267117351),
            (123, 1_000_000_000, 1.2e-07, -3.3628995077889359881), (1, 10, 0.3, -2.1114622067804816131),
        ]
        for (k, n, p, expected) in exact {
            let value = BinomialTest.logProbability(k, n, p)
            #expect(abs(value / expected - 1) < 1e-12, "k=\(k) n=\(n) p=\(p): \(value), exact \(expected)")
        }
    }

    @Test func certainProbabilities() {
        #expect(BinomialTest.twoSidedPValue(successes: 0, trials: 10, probability: 0) == 1)
        #expect(BinomialTest.twoSidedPValue(successes: 1, trials: 10, probability: 0) == 0)
        #expect(BinomialTest.twoSidedPValue(successes: 10, trials: 10, probability: 1) == 1)
        #expect(BinomialTest.twoSidedPValue(successes: 0, trials: 0, probability: 0.3) == 1)
    }
}
