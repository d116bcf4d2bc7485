import Foundation
import Testing

@testable import EngageClient

@Suite struct TimeOrderedUUIDTests {
    @Test func carriesItsMillisecondsVersionAndVariant() {
        let date = Date(timeIntervalSince1970: 1_764_460_800.123_9)  // 2025-11-30T00:00:00.123Z
        let id = UUID.timeOrdered(at: date)
        let bytes = withUnsafeBytes(of: id.uuid) { Array($0) }
        let milliseconds = bytes[0..<6].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(milliseconds == 1_764_460_800_123)
        #expect(bytes[6] >> 4 == 7)
        #expect(bytes[8] >> 6 == 0b10)
        #expect(id.uuidString.lowercased().hasPrefix("019ad20f-287b-7"))
    }

    @Test func laterMillisecondsSortLaterAndTheRestIsRandom() {
        let start = Date(timeIntervalSince1970: 1_764_460_800)
        // Half a millisecond in: a Double a whole number of milliseconds from 1970 may fall just below it.
        let ids = (0..<200).map { UUID.timeOrdered(at: start.addingTimeInterval((Double($0) + 0.5) / 1000)) }
        let texts = ids.map { $0.uuidString.lowercased() }
        #expect(texts == texts.sorted())
        #expect(Set(ids).count == ids.count)
        let sameMillisecond = (0..<200).map { _ in UUID.timeOrdered(at: start) }
        #expect(Set(sameMillisecond).count == 200)
    }

    @Test func eventsGetTimeOrderedIdsUnlessGivenOne() {
        let occurred = Date(timeIntervalSince1970: 1_764_460_800)
        let event = EngageEvent(notificationID: "apns-1", deviceID: "d", category: "c", occurredAt: occurred, body: .expanded)
        #expect(event.eventID.uuidString.lowercased().hasPrefix("019ad20f-2800-7"))
        let given = UUID()
        #expect(EngageEvent(eventID: given, notificationID: "apns-1", deviceID: "d", category: "c", body: .expanded).eventID == given)
    }
}
