import EngageAPI
import EngageCore
import EventStore
import Foundation
import Runtime
import Testing
import TestSupport

/// Keeps openapi.yaml, docs/examples/*.json and docs/events.md true to the server.
///
/// Conventions the documents follow so that plain text search can check them:
/// - every example event in openapi.yaml is JSON on one line that starts with `{"event_id"`,
///   possibly after `value: ` or `- ` and before a `,` (schema examples, request body examples
///   and the lines of an NDJSON example);
/// - each file in docs/examples is one event on one line, named by an `externalValue` line and
///   repeated inline as a `- ` item of its event schema's `examples`;
/// - `occurred_at` in the files is always `2026-11-29T19:16:23.120Z`; the server refuses events
///   older than 30 days, so the tests replace it with the current time before posting;
/// - every vocabulary schema in openapi.yaml is named like its Swift enum and has a one-line
///   `enum: [...]`.
@Suite("OpenAPI document and examples")
struct OpenAPIDocumentTests {
    static let placeholderTime = "2026-11-29T19:16:23.120Z"

    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // EngageAPITests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    static func text(_ relativePath: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relativePath), encoding: .utf8)
    }

    /// File name (`sent.json`) to file text, for every example.
    static func exampleFiles() throws -> [(name: String, text: String)] {
        let directory = root.appendingPathComponent("docs/examples")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".json") }
            .sorted()
        return try names.map { ($0, try text("docs/examples/" + $0)) }
    }

    static func parse(_ text: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
    }

    /// The value as JSON text with sorted keys, so that equal values compare equal.
    static func canonical(_ value: Any) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])
        return String(decoding: data, as: UTF8.self)
    }

    /// Every object with an `event_id` inside a parsed JSON value.
    static func events(in value: Any) -> [[String: Any]] {
        if let object = value as? [String: Any] {
            let own = object["event_id"] == nil ? [] : [object]
            return own + object.values.flatMap { events(in: $0) }
        }
        if let array = value as? [Any] { return array.flatMap { events(in: $0) } }
        return []
    }

    /// The example event lines of openapi.yaml: the JSON text and whether it is a list item.
    static func inlineEvents(_ yaml: String) -> [(json: String, listItem: Bool)] {
        yaml.split(separator: "\n").compactMap { line in
            var rest = Substring(line.drop { $0 == " " })
            var listItem = false
            if rest.hasPrefix("value: ") {
                rest = rest.dropFirst("value: ".count)
            } else if rest.hasPrefix("- ") {
                rest = rest.dropFirst(2)
                listItem = true
            }
            guard rest.hasPrefix("{\"event_id\"") else { return nil }
            if rest.hasSuffix(",") { rest = rest.dropLast() }
            return (String(rest), listItem)
        }
    }

    /// The example's text with `occurred_at` set to `time`.
    static func withTime(_ example: String, _ time: String) throws -> String {
        let object = try #require(try parse(example) as? [String: Any])
        #expect(object["occurred_at"] as? String == placeholderTime)
        let quoted = "\"\(placeholderTime)\""
        #expect(example.components(separatedBy: quoted).count == 2, "the placeholder must occur once")
        return example.replacingOccurrences(of: quoted, with: "\"\(time)\"")
    }

    // MARK: - Examples against the live server

    @Test func everyExampleIsStoredOnceAndThenCountedAsADuplicate() async throws {
        let files = try Self.exampleFiles()
        #expect(files.count >= EventType.allCases.count)
        let server = try TestServer()
        do {
            let key = try await server.key()
            for (name, text) in files {
                #expect(!text.dropLast().contains("\n"), "\(name) must be one line, a valid NDJSON body")
                let event = try Self.withTime(text, SystemTime().wallClock.rfc3339)
                // The file as it is, as a one-line NDJSON body; then the retry as a JSON array.
                let first = try await server.post(event, key: key, contentType: "application/x-ndjson")
                #expect(first.status == 200, "\(name): \(first.text)")
                #expect(first.text == #"{"accepted":1,"duplicates":0,"rejected":[]}"#, "\(name)")
                let retry = try await server.post("[" + event + "]", key: key)
                #expect(retry.status == 200, "\(name): \(retry.text)")
                #expect(retry.text == #"{"accepted":0,"duplicates":1,"rejected":[]}"#, "\(name)")
            }
            #expect(try await server.count("SELECT count(*) FROM events") == files.count)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test func examplesCoverEveryEventTypeAndTheSpecialActions() throws {
        let parsed = try Self.exampleFiles().map { try #require(try Self.parse($0.text) as? [String: Any]) }
        let types = Set(parsed.compactMap { $0["type"] as? String })
        #expect(types == Set(EventType.allCases.map(\.rawValue)))
        let actions = Set(parsed.compactMap { $0["action_id"] as? String })
        #expect(actions.contains(ActionDetails.openIdentifier))
        #expect(actions.contains(ActionDetails.dismissIdentifier))
        #expect(parsed.contains { $0["text_input_length"] is Int })
        let ids = parsed.compactMap { $0["event_id"] as? String }
        #expect(Set(ids).count == parsed.count, "every example needs its own event_id")
    }

    // MARK: - Copies of the examples

    @Test func inlineExamplesInTheOpenAPIDocumentEqualTheFiles() throws {
        let yaml = try Self.text("openapi.yaml")
        var files: [String: (name: String, canonical: String)] = [:]
        for (name, text) in try Self.exampleFiles() {
            let object = try #require(try Self.parse(text) as? [String: Any])
            let id = try #require(object["event_id"] as? String)
            files[id] = (name, try Self.canonical(object))
        }

        var seen: Set<String> = [], seenInSchema: Set<String> = []
        for (json, listItem) in Self.inlineEvents(yaml) {
            let value = try Self.parse(json)
            for event in Self.events(in: value) {
                let id = try #require(event["event_id"] as? String)
                guard let file = files[id] else {
                    Issue.record("openapi.yaml has an example event \(id) that is in no file of docs/examples")
                    continue
                }
                #expect(try Self.canonical(event) == file.canonical, "the inline copy of \(file.name) differs")
                seen.insert(file.name)
                if listItem { seenInSchema.insert(file.name) }
            }
        }
        let names = Set(files.values.map(\.name))
        #expect(seen == names)
        #expect(seenInSchema == names, "each file belongs in its event schema's examples")

        let external = Set(yaml.split(separator: "\n").compactMap { line -> String? in
            let trimmed = line.drop { $0 == " " }
            guard trimmed.hasPrefix("externalValue: docs/examples/") else { return nil }
            return String(trimmed.dropFirst("externalValue: docs/examples/".count))
        })
        #expect(external == names)
    }

    @Test func jsonExamplesInTheEventsGuideParseAndEqualTheFiles() throws {
        let markdown = try Self.text("docs/events.md")
        var files: [String: (name: String, canonical: String)] = [:]
        for (name, text) in try Self.exampleFiles() {
            let object = try #require(try Self.parse(text) as? [String: Any])
            files[try #require(object["event_id"] as? String)] = (name, try Self.canonical(object))
        }
        let blocks = markdown.components(separatedBy: "```json\n").dropFirst().map {
            $0.components(separatedBy: "\n```")[0]
        }
        #expect(!blocks.isEmpty)
        var seen: Set<String> = []
        for block in blocks {
            let value: Any
            do {
                value = try Self.parse(block)
            } catch {
                Issue.record("a json block of docs/events.md does not parse: \(block.prefix(60))")
                continue
            }
            for event in Self.events(in: value) {
                guard let id = event["event_id"] as? String, let file = files[id] else { continue }
                #expect(try Self.canonical(event) == file.canonical, "docs/events.md's copy of \(file.name) differs")
                seen.insert(file.name)
            }
        }
        #expect(seen == Set(files.values.map(\.name)))
    }

    // MARK: - Routes and vocabulary

    @Test func pathsAreExactlyTheServedRoutes() throws {
        let yaml = try Self.text("openapi.yaml")
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex(of: "paths:"))
        var paths: Set<String> = []
        for line in lines[(start + 1)...] {
            if let first = line.first, first != " " { break }
            if line.hasPrefix("  /"), line.hasSuffix(":") {
                paths.insert(String(line.dropFirst(2).dropLast()))
            }
        }
        #expect(paths == EngageAPI.routes)
    }

    /// The items of the one-line `enum:` of the component schema `name`.
    static func enumValues(_ yaml: String, schema name: String) throws -> Set<String> {
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex(of: "    \(name):"[...]), "no schema \(name)")
        for line in lines[(start + 1)...] {
            let indent = line.prefix { $0 == " " }.count
            if !line.isEmpty && indent <= 4 { break }
            let trimmed = line.dropFirst(indent)
            if trimmed.hasPrefix("enum: ["), trimmed.hasSuffix("]") {
                let items = trimmed.dropFirst("enum: [".count).dropLast()
                return Set(items.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            }
        }
        Issue.record("schema \(name) has no one-line enum")
        return []
    }

    static func rawValues<E: CaseIterable & RawRepresentable>(_: E.Type) -> Set<String> where E.RawValue == String {
        Set(E.allCases.map(\.rawValue))
    }

    @Test func vocabularySchemasListExactlyTheAcceptedValues() throws {
        let yaml = try Self.text("openapi.yaml")
        #expect(try Self.enumValues(yaml, schema: "EventType") == Self.rawValues(EventType.self))
        #expect(try Self.enumValues(yaml, schema: "AttachmentKind") == Self.rawValues(AttachmentKind.self))
        #expect(try Self.enumValues(yaml, schema: "MediaFormat") == Self.rawValues(MediaFormat.self))
        #expect(try Self.enumValues(yaml, schema: "MediaSource") == Self.rawValues(MediaSource.self))
        #expect(try Self.enumValues(yaml, schema: "DeliveryOutcome") == Self.rawValues(DeliveryOutcome.self))
        #expect(try Self.enumValues(yaml, schema: "Presentation") == Self.rawValues(Presentation.self))
        #expect(try Self.enumValues(yaml, schema: "AttachmentStrategy") == Self.rawValues(AttachmentStrategy.self))
        #expect(try Self.enumValues(yaml, schema: "NetworkType") == Self.rawValues(NetworkType.self))
        for type in EventType.allCases {
            #expect(yaml.contains("\(type.rawValue): '#/components/schemas/"), "no discriminator mapping for \(type)")
            #expect(yaml.contains("type: {const: \(type.rawValue)}"), "no schema for \(type) events")
        }
        #expect(yaml.contains(ActionDetails.openIdentifier))
        #expect(yaml.contains(ActionDetails.dismissIdentifier))
    }

    @Test func documentedLimitsAreTheDefaults() throws {
        let yaml = try Self.text("openapi.yaml")
        let limits = IngestLimits()
        #expect(yaml.contains("maxItems: \(limits.maxEvents)"))
        #expect(yaml.contains("\(limits.event.maxEventBytes) bytes"))
        #expect(yaml.contains("\(limits.event.maxDepth) nesting levels"))
        #expect(yaml.contains("\(IngestRoute.Configuration().maxDecompressedBytes) bytes"))
    }
}
