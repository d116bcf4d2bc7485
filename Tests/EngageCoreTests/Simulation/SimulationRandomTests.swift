import SeededRandom
import Testing
@testable import EngageCore

/// Reference values computed independently (a Python transcription of the published SplitMix64
/// and xoshiro256** reference code, state filled by four SplitMix64 outputs of the seed).
@Suite struct SimulationRandomTests {
    @Test func splitMixMatchesTheReferenceSequenceForSeedZero() {
        var state: UInt64 = 0
        #expect(SimulationRandom.splitMix(&state) == 0xe220_a839_7b1d_cdaf)
        #expect(SimulationRandom.splitMix(&state) == 0x6e78_9e6a_a1b9_65f4)
        #expect(SimulationRandom.splitMix(&state) == 0x06c4_5d18_8009_454f)
    }

    @Test func xoshiroMatchesTheReferenceSequence() {
        var zero = SimulationRandom(seed: 0)
        #expect([zero.next(), zero.next(), zero.next(), zero.next()] ==
                [0x99ec_5f36_cb75_f2b4, 0xbf6e_1f78_4956_452a, 0x1a5f_849d_4933_e6e0, 0x6aa5_94f1_262d_2d2c])
        var fortyTwo = SimulationRandom(seed: 42)
        #expect([fortyTwo.next(), fortyTwo.next(), fortyTwo.next(), fortyTwo.next()] ==
                [0x1578_0b2e_0c2e_c716, 0x6104_d986_6d11_3a7e, 0xae17_5332_39e4_99a1, 0xecb8_ad47_03b3_60a1])
    }

    @Test func streamsDependOnEveryPart() {
        let base = SimulationRandom.derive(7, 1, 1)
        #expect(base != SimulationRandom.derive(8, 1, 1))
        #expect(base != SimulationRandom.derive(7, 2, 1))
        #expect(base != SimulationRandom.derive(7, 1, 2))
        #expect(base == SimulationRandom.derive(7, 1, 1))
    }

    @Test func drawsStayInTheirRanges() {
        var random = SimulationRandom(seed: 3)
        var counts = [Int](repeating: 0, count: 6)
        for _ in 0..<60_000 {
            let u = random.unit()
            #expect(u >= 0 && u < 1)
            counts[random.below(6)] += 1
            let size = random.logUniform(100, 1_000)
            #expect(size >= 100 && size <= 1_000)
        }
        // Each face 10,000 expected, standard deviation about 91: within 5 of them.
        for count in counts { #expect(abs(count - 10_000) < 460) }
    }

    @Test func weightedChoiceSkipsZeroWeights() {
        var random = SimulationRandom(seed: 9)
        for _ in 0..<1_000 { #expect(random.weighted([0, 2, 0, 1]) != 0) }
    }

    @Test func shuffleKeepsTheElements() {
        var random = SimulationRandom(seed: 11)
        var items = Array(0..<50)
        random.shuffle(&items)
        #expect(items != Array(0..<50))
        #expect(items.sorted() == Array(0..<50))
    }
}
