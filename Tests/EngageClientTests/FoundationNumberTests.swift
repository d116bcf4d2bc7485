import EngageCore
import Foundation
import Testing
@testable import EngageClient

/// Numbers read from JSON that Foundation parsed: a boolean is not a number (Foundation gives
/// both as `NSNumber`), and a value the server would refuse is not carried.
@Suite struct FoundationNumberTests {
    /// JSON values for a push's `probability`, parsed as iOS parses a payload.
    static let probabilities = ["true", "false", "0", "0.5", "1", "1.0", "1.5", "-0.5", "1e-300", "2e300", #""0.5""#, "[1]"]

    static func payload(_ engage: String) throws -> PushPayload {
        let userInfo = try #require(try JSONSerialization.jsonObject(with: Data(#"{"engage":\#(engage)}"#.utf8)) as? [String: Any])
        return PushPayload(userInfo: userInfo)
    }

    @Test(arguments: probabilities)
    func aPayloadsProbabilityIsCarriedExactlyWhenTheServerTakesIt(value: String) throws {
        let payload = try Self.payload(#"{"experiment":"e-1","arm":"thumbnail","probability":\#(value)}"#)
        let carried = try #require(payload.experiment).probability
        // The server's decoder, given the same value in an experiment tag.
        let tagged = EngageEvent(notificationID: "n-1", deviceID: "dev-1", category: "new_photo", occurredAt: Date(),
                                 experiment: ExperimentArm(id: "e-1", arm: "thumbnail", probability: 0.25), body: .expanded).json
        #expect(tagged.contains(#""probability":0.25"#))
        let sent = tagged.replacingOccurrences(of: #""probability":0.25"#, with: #""probability":\#(value)"#)
        let now = EngageCore.Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000))
        let serverTakes = (try? Event.decodeWire(Array(sent.utf8), now: now)) != nil
        #expect((carried != nil) == serverTakes)
        if let carried {
            #expect(carried == Double(value))
        }
    }

    @Test func aBooleanProbabilityIsNotACertainArm() throws {
        #expect(try Self.payload(#"{"experiment":"e-1","arm":"a","probability":true}"#).experiment
            == ExperimentArm(id: "e-1", arm: "a", probability: nil))
        #expect(AssignmentsDocument.assignment(["experiment": "e-1", "arm": "a", "probability": true])?.probability == nil)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(#"{"experiment":"e-1","arm":"a","probability":true}"#.utf8))
            as? [String: Any])
        #expect(AssignmentsDocument.assignment(parsed)?.probability == nil)
    }

    /// The server's assignment answer is held to the rule its events are held to.
    @Test(arguments: probabilities)
    func anAssignmentsProbabilityIsANumberTheServerTakes(value: String) throws {
        let entry = try #require(try JSONSerialization.jsonObject(
            with: Data(#"{"experiment":"e-1","arm":"a","probability":\#(value)}"#.utf8)) as? [String: Any])
        let expected = Double(value).flatMap { $0 > 0 && $0 <= 1 ? $0 : nil }
        #expect(AssignmentsDocument.assignment(entry)?.probability == expected)
    }

    @Test(arguments: [("48210", 48210), ("0", 0), ("9007199254740992", 9_007_199_254_740_992), ("9007199254740994", nil),
                      ("true", nil), ("false", nil), ("-1", nil), ("1.5", nil), ("1e300", nil), (#""48210""#, nil)] as [(String, Int?)])
    func aMediaEntrysBytesAreAWholeNumber(value: String, expected: Int?) throws {
        let payload = try Self.payload(#"{"media":[{"variant":"original","url":"https://cdn.example.com/1.jpg","bytes":\#(value)}]}"#)
        #expect(payload.media.count == 1)
        #expect(payload.media.first?.bytes == expected)
    }
}
