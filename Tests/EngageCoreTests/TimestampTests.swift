import Foundation
import Testing
@testable import EngageCore

// Expected values computed independently with Python's datetime.
@Suite struct TimestampTests {
    @Test(arguments: [
        ("2026-11-29T19:16:23Z", 1_795_979_783_000_000),
        ("2026-11-29t19:16:23z", 1_795_979_783_000_000),
        ("2026-11-29T19:16:23.120Z", 1_795_979_783_120_000),
        ("2026-11-29T19:16:23.123456Z", 1_795_979_783_123_456),
        ("2026-11-29T19:16:23.123456789Z", 1_795_979_783_123_456),
        ("2026-11-29T19:16:23.1Z", 1_795_979_783_100_000),
        ("2026-11-29T19:16:23+02:00", 1_795_972_583_000_000),
        ("2026-11-29T17:16:23-00:00", 1_795_972_583_000_000),
        ("1969-12-31T23:59:59-05:30", 19_799_000_000),
        ("1970-01-01T00:00:00Z", 0),
        ("2024-02-29T00:00:00Z", 1_709_164_800_000_000),
        ("2000-02-29T12:00:00Z", 951_825_600_000_000),
        ("0000-01-01T00:00:00Z", -62_167_219_200_000_000),
        ("0001-01-01T00:00:00Z", -62_135_596_800_000_000),
        ("9999-12-31T23:59:59.999999Z", 253_402_300_799_999_999),
    ] as [(String, Int64)])
    func parsesRFC3339(_ text: String, _ micros: Int64) {
        #expect(Timestamp(rfc3339: text) == Timestamp(microsecondsSinceEpoch: micros))
    }

    @Test(arguments: [
        "2026-11-29T19:16:23",            // no zone
        "2026-11-29T19:16:23.5",          // no zone
        "2026-11-29 19:16:23Z",           // space separator
        "2026-11-29T19:16Z",              // no seconds
        "2026-11-29",                     // date only
        "2026-02-29T00:00:00Z",           // not a leap year
        "2100-02-29T00:00:00Z",           // century, not a leap year
        "2026-04-31T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-00-01T00:00:00Z",
        "2026-01-00T00:00:00Z",
        "2026-01-32T00:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T23:60:00Z",
        "2026-01-01T23:59:60Z",           // leap seconds are rejected
        "2026-11-29T19:16:23.Z",
        "2026-11-29T19:16:23.1234567891Z",
        "2026-11-29T19:16:23+2:00",
        "2026-11-29T19:16:23+02",
        "2026-11-29T19:16:23+0200",
        "2026-11-29T19:16:23+24:00",
        "2026-11-29T19:16:23+02:60",
        "2026-11-29T19:16:23Z ",
        " 2026-11-29T19:16:23Z",
        "2026-11-29T19:16:23ZZ",
        "+2026-11-29T19:16:23Z",
        "20261-11-29T19:16:23Z",
        "0000-01-01T00:00:00+00:01",      // before year 0000 in UTC
        "9999-12-31T23:59:59-00:01",      // after year 9999 in UTC
        "２026-11-29T19:16:23Z",
        "",
    ])
    func rejectsInvalid(_ text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test(arguments: [
        (0, "1970-01-01T00:00:00Z"),
        (1_795_979_783_120_000, "2026-11-29T19:16:23.120000Z"),
        (1_795_979_783_000_001, "2026-11-29T19:16:23.000001Z"),
        (-1, "1969-12-31T23:59:59.999999Z"),
        (-62_167_219_200_000_000, "0000-01-01T00:00:00Z"),
        (253_402_300_799_999_999, "9999-12-31T23:59:59.999999Z"),
        (951_825_600_000_000, "2000-02-29T12:00:00Z"),
    ] as [(Int64, String)])
    func formatsRFC3339(_ micros: Int64, _ text: String) {
        let t = Timestamp(microsecondsSinceEpoch: micros)
        #expect(t.rfc3339 == text)
        #expect(Timestamp(rfc3339: text) == t)
    }

    @Test func formattingRoundTripsEveryDayOfFourCenturies() {
        var day: Int64 = Timestamp.daysFromCivil(year: 1900, month: 1, day: 1)
        let stop = Timestamp.daysFromCivil(year: 2300, month: 1, day: 1)
        while day < stop {
            let t = Timestamp(microsecondsSinceEpoch: day * Timestamp.microsecondsPerDay + 45_296_000_007)
            #expect(Timestamp(rfc3339: t.rfc3339) == t)
            day += 1
        }
    }

    @Test func agreesWithFoundation() {
        let formatter = ISO8601DateFormatter()
        for micros: Int64 in [0, 1_795_979_783_000_000, -2_208_988_800_000_000, 4_102_444_800_000_000] {
            let t = Timestamp(microsecondsSinceEpoch: micros)
            let date = Date(timeIntervalSince1970: Double(micros) / 1e6)
            #expect(t.rfc3339 == formatter.string(from: date))
        }
    }
}

@Suite struct EventIDTests {
    @Test func parsesEitherCaseAndFormatsLowercase() throws {
        let id = try #require(EventID("0F8FAD5B-d9cb-469f-A165-70867728950e"))
        #expect(id.description == "0f8fad5b-d9cb-469f-a165-70867728950e")
        #expect(id.high == 0x0F8F_AD5B_D9CB_469F)
        #expect(id.low == 0xA165_7086_7728_950E)
        #expect(id.bytes == [0x0F, 0x8F, 0xAD, 0x5B, 0xD9, 0xCB, 0x46, 0x9F,
                             0xA1, 0x65, 0x70, 0x86, 0x77, 0x28, 0x95, 0x0E])
        #expect(EventID(bytes: id.bytes) == id)
        #expect(id.uuid == UUID(uuidString: "0f8fad5b-d9cb-469f-a165-70867728950e"))
        #expect(EventID(id.uuid) == id)
    }

    @Test(arguments: [
        "", "0f8fad5b-d9cb-469f-a165-70867728950", "0f8fad5b-d9cb-469f-a165-70867728950e0",
        "0f8fad5bd9cb469fa16570867728950e", "0f8fad5b-d9cb-469f-a165_70867728950e",
        "0f8fad5b-d9cb-469f-a165-70867728950g", "{0f8fad5b-d9cb-469f-a165-70867728950e}",
        "0f8fad5b-d9cb-469-fa165-70867728950e",
    ])
    func rejectsNonCanonical(_ text: String) {
        #expect(EventID(text) == nil)
    }
}
