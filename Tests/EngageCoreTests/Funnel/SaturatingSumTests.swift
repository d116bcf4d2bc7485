import EngageCore
import Testing

@Suite("Saturating byte sums")
struct SaturatingSumTests {
    @Test(arguments: [
        (1, 2, 1, 3),
        (Int.max - 1, 5, 1, Int.max),
        (Int.max, 1 << 53, 1, Int.max),
        (Int.max, 1 << 53, -1, Int.max - (1 << 53)),
        (Int.min + 1, 5, -1, Int.min),
        (Int.min + 1, -5, 1, Int.min),
        (10, -3, -1, 13),
        (Int.max - 1, -5, -1, Int.max),
    ])
    func sumsStopAtTheEndsOfInt(a: Int, b: Int, sign: Int, expected: Int) {
        #expect(a.saturatingAdding(b, sign: sign) == expected)
    }

    @Test func aBatchOfTheLargestByteCountsHoldsAtIntMax() {
        var sum = TelemetryContribution.Counters()
        let one = TelemetryContribution.Counters(delivered: 1, bytes: 1 << 53, bytesReported: 1)
        for _ in 0..<1_100 { sum.add(one) }
        #expect(sum.bytes == Int.max)
        #expect(sum.delivered == 1_100)
        #expect(sum.bytesReported == 1_100)
    }
}
