import Foundation
import Testing
import EngageCore

/// Identifiers that reach engage outside ingestion (an experiment's definition) are written as
/// ingestion stores the same identifiers on events, so that byte comparisons (PostgreSQL's, the
/// replay's) find them.
@Suite struct IdentifierTextTests {
    /// "vidéo" and "café" with the accent as a combining character (NFD), as JSON escapes.
    static let decomposedArm = #"vide\u0301o"#
    static let decomposedCategory = #"cafe\u0301"#

    static func displayed(category: String, arm: String) -> [UInt8] {
        Array(#"[{"event_id":"0192f5a0-0000-7000-8000-000000000001","type":"displayed","notification_id":"n1","device_id":"d1","category":"\#(category)","occurred_at":"2026-12-05T21:00:00Z","presentation":"plain","attachment_kind":"none","experiment":{"id":"arms-in-nfd","arm":"\#(arm)"}}]"#.utf8)
    }

    @Test func aDefinitionsArmsAndCategoriesMatchTheStoredEventsByteForByte() throws {
        let definition = try ExperimentDefinition(json: Array(#"""
            {"id": "arms-in-nfd", "app_id": "demo", "categories": ["\#(Self.decomposedCategory)"], "primary_metric": "open",
             "arms": [{"name": "control", "strategy": "none", "weight": 0.5, "control": true},
                      {"name": "\#(Self.decomposedArm)", "strategy": "full", "weight": 0.5}]}
            """#.utf8))
        let batch = try decodeBatch(Self.displayed(category: Self.decomposedCategory, arm: Self.decomposedArm), format: .json,
                                    now: Timestamp(rfc3339: "2026-12-05T22:00:00Z")!)
        let event = try #require(batch.events.first, "\(batch.rejected)")
        let tag = try #require(event.experiment)
        #expect(Array(definition.arms[1].name.utf8) == Array(tag.arm.utf8))
        #expect(Array(definition.categories[0].utf8) == Array(event.category.utf8))
        #expect(Array(tag.arm.utf8) == Array("vid\u{E9}o".utf8))
        // And as the replay finds an arm: by its bytes.
        #expect(ExperimentArmIndex(definition).names.map { Array($0.utf8) }.contains(Array(tag.arm.utf8)))
    }

    /// (NUL is left out: the JSON parser refuses a whole body holding one.)
    @Test func theCharactersRefusedAreThoseIngestionRefuses() throws {
        let samples = ["new_photo", "caf\u{E9}", "cafe\u{301}", "\u{1F4F7} photo", "a\u{1F}b", "a\u{7F}b",
                       "a\u{85}b", "a\u{9F}b", "a\u{A0}b", "a\u{202A}b", "a\u{202E}b", "a\u{202F}b", "a\u{2066}b",
                       "a\u{2069}b", "a\u{206A}b", "a\u{2029}b"]
        for sample in samples {
            var escaped = JSONWriter(capacity: 64)
            escaped.string(sample)
            let quoted = String(decoding: escaped.bytes, as: UTF8.self)
            let body = Self.displayed(category: String(quoted.dropFirst().dropLast()), arm: "control")
            let batch = try decodeBatch(body, format: .json, now: Timestamp(rfc3339: "2026-12-05T22:00:00Z")!)
            let refused = batch.rejected.contains { $0.field == "category" }
            #expect(refused == IdentifierText.holdsRefusedCharacter(sample), "\(sample.unicodeScalars.map { String($0.value, radix: 16) })")
            if refused {
                #expect(batch.rejected.first?.problem == IdentifierText.refusedCharacterProblem)
            }
        }
    }
}
