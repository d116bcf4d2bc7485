import Testing
@testable import EngageCore

@Suite struct SampleRatioMismatchTests {
    @Test func matchesSharedVector() {
        for vector in Shared.srm {
            let p = SampleRatioMismatch.pValue(observed: vector.observed, weights: vector.weights)
            // Stated to 3 significant digits.
            #expect(matches(p, vector.pValue, relative: 0.5e-2 / 2.54))
        }
    }

    @Test func matchesScipyChiSquare() {
        for vector in Independent.srm {
            let p = SampleRatioMismatch.pValue(observed: vector.observed, weights: vector.weights)
            #expect(matches(p, vector.pValue, relative: 1e-12), "\(vector.observed)")
        }
    }

    @Test func edgeCases() {
        #expect(SampleRatioMismatch.pValue(observed: [0, 0], weights: [0.5, 0.5]) == 1)
        #expect(SampleRatioMismatch.pValue(observed: [500, 500], weights: [0.5, 0.5]) == 1)
        // A zero-weight arm with no units is ignored; with units the split is impossible.
        #expect(SampleRatioMismatch.pValue(observed: [500, 500, 0], weights: [1, 1, 0]) == 1)
        #expect(SampleRatioMismatch.pValue(observed: [500, 500, 3], weights: [1, 1, 0]) == 0)
        #expect(SampleRatioMismatch.pValue(observed: [42], weights: [1]) == 1)
        // Weights need not sum to 1.
        #expect(matches(
            SampleRatioMismatch.pValue(observed: [180, 820], weights: [20, 80]),
            SampleRatioMismatch.pValue(observed: [180, 820], weights: [0.2, 0.8]),
            relative: 1e-14
        ))
    }
}
