import Runtime
import Testing

@Suite("Time spans on the command line")
struct TimeSpanTests {
    @Test(arguments: [("31d", 31 * 86_400), ("36h", 36 * 3_600), ("30d12h", 30 * 86_400 + 12 * 3_600), ("90m", 5_400),
                      ("1d1h1m1s", 90_061), ("0s", 0), ("007d", 7 * 86_400)] as [(String, Int64)])
    func spansReadAsTheirSeconds(text: String, seconds: Int64) {
        #expect(TimeSpan(optionText: text)?.seconds == seconds)
    }

    @Test(arguments: ["", "31", "d", "3 weeks", "31D", "1h1d", "1d1d", "-1d", "1.5d", "1w", "99999999999999d"])
    func otherTextIsRefused(text: String) {
        #expect(TimeSpan(optionText: text) == nil)
    }

    @Test func spansPrintLargestUnitsFirst() {
        let window = TimeSpan(seconds: 30 * 86_400 + 3_600 + 600)
        #expect(window.optionText == "30d1h10m")
        #expect(window.description == "30 days 1 hour 10 minutes")
        #expect(TimeSpan(seconds: 86_400).description == "1 day")
        #expect(TimeSpan(seconds: 0).optionText == "0s")
        #expect(TimeSpan(optionText: window.optionText) == window)
        #expect(TimeSpan(.seconds(90)) == TimeSpan(seconds: 90))
    }
}
