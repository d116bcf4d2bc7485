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

    @Test func certainProbabilities() {
        #expect(BinomialTest.twoSidedPValue(successes: 0, trials: 10, probability: 0) == 1)
        #expect(BinomialTest.twoSidedPValue(successes: 1, trials: 10, probability: 0) == 0)
        #expect(BinomialTest.twoSidedPValue(successes: 10, trials: 10, probability: 1) == 1)
        #expect(BinomialTest.twoSidedPValue(successes: 0, trials: 0, probability: 0.3) == 1)
    }
}
