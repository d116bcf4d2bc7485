import Foundation
import Testing
@testable import EngageCore

@Suite struct DistributionTests {
    @Test func normalCDFMatchesMpmathToFullPrecision() {
        for (x, expected) in Independent.normalCDF {
            #expect(matches(Normal.cdf(x), expected, relative: 1e-13), "x=\(x)")
            #expect(matches(Normal.survival(-x), expected, relative: 1e-13), "x=\(x)")
        }
    }

    @Test func normalQuantileMatchesMpmath() {
        for (p, expected) in Independent.normalQuantile {
            #expect(matches(Normal.quantile(p), expected, relative: 1e-14), "p=\(p)")
        }
        #expect(Normal.quantile(0) == -.infinity)
        #expect(Normal.quantile(1) == .infinity)
        #expect(Normal.quantile(1.5).isNaN)
    }

    @Test func normalQuantileInvertsCDF() {
        var p = 1e-12
        while p < 1 {
            #expect(matches(Normal.cdf(Normal.quantile(p)), p, relative: 1e-13), "p=\(p)")
            p *= 1.7
        }
    }

    @Test func studentTSurvivalMatchesScipy() {
        for (t, dof, expected) in Independent.studentTSurvival {
            #expect(matches(StudentT.survival(t, degreesOfFreedom: dof), expected, relative: 1e-12), "t=\(t) dof=\(dof)")
            #expect(matches(StudentT.cdf(-t, degreesOfFreedom: dof), expected, relative: 1e-12), "t=\(t) dof=\(dof)")
        }
        #expect(StudentT.cdf(0, degreesOfFreedom: 7) == 0.5)
    }

    @Test func studentTQuantileMatchesScipy() {
        for (p, dof, expected) in Independent.studentTQuantile {
            #expect(matches(StudentT.quantile(p, degreesOfFreedom: dof), expected, relative: 1e-12), "p=\(p) dof=\(dof)")
        }
    }

    @Test func studentTQuantileInvertsCDF() {
        for dof in [1.0, 2, 2.5, 3, 7.3, 30, 1000, 1e7] {
            for p in [1e-9, 0.001, 0.025, 0.2, 0.5, 0.8, 0.975, 0.999] {
                let t = StudentT.quantile(p, degreesOfFreedom: dof)
                #expect(matches(StudentT.cdf(t, degreesOfFreedom: dof), p, relative: 1e-11), "p=\(p) dof=\(dof)")
            }
        }
    }

    @Test func chiSquareSurvivalMatchesScipy() {
        for (x, dof, expected) in Independent.chiSquareSurvival {
            #expect(matches(ChiSquare.survival(x, degreesOfFreedom: dof), expected, relative: 1e-12), "x=\(x) k=\(dof)")
            #expect(matches(ChiSquare.cdf(x, degreesOfFreedom: dof) + ChiSquare.survival(x, degreesOfFreedom: dof), 1, relative: 1e-15))
        }
        #expect(ChiSquare.survival(0, degreesOfFreedom: 3) == 1)
        // One degree of freedom has a closed form: P(X > x) = erfc(sqrt(x / 2)).
        for x in [0.01, 0.7, 3.84, 12, 60] {
            #expect(matches(ChiSquare.survival(x, degreesOfFreedom: 1), erfc((x / 2).squareRoot()), relative: 1e-13))
        }
    }

    @Test func logBetaAgreesWithLogGammaForModerateArguments() {
        for (a, b) in [(0.5, 12.0), (15.0, 0.5), (11.0, 13.5), (40.0, 60.0), (3.0, 4.0)] {
            let direct = lgamma(a) + lgamma(b) - lgamma(a + b)
            #expect(abs(SpecialFunctions.logBeta(a, b) - direct) <= 1e-12 * max(1, abs(direct)), "a=\(a) b=\(b)")
        }
    }
}
