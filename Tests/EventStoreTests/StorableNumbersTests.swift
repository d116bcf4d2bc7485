import EngageCore
import EventStore
import Foundation
import Postgres
import Testing
import TestSupport

/// What validation accepts, PostgreSQL must store: an event it refuses is rejected for good
/// (`not-storable`), and lost to the app's counts, though the server could have taken it.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct StorableNumbersTests {
    /// `numeric`, and so `jsonb`, keeps every digit written after the point (the exponent
    /// counted): more than 16,383 overflows it, whatever the value. Events that large pass
    /// validation on a server whose `--max-event-bytes` is raised (up to 1 MB).
    static let numbers: [(name: String, text: String)] = [
        ("one with 16383 zeros after the point", "1." + String(repeating: "0", count: 16383)),
        ("one with 16384 zeros after the point", "1." + String(repeating: "0", count: 16384)),
        ("zero with 16384 zeros after the point", "0." + String(repeating: "0", count: 16384)),
        ("16100 fractional digits, then e-300", "1." + String(repeating: "0", count: 16100) + "e-300"),
        ("16100 fractional digits, then e+300", "1." + String(repeating: "0", count: 16100) + "e+300"),
    ]

    @Test(arguments: numbers.indices)
    func anEventValidationAcceptsIsStored(_ index: Int) throws {
        let (name, number) = Self.numbers[index]
        let wire = #"{"event_id":"\#(UUID().uuidString.lowercased())","type":"expanded","notification_id":"n-1","#
            + #""device_id":"d1","category":"new_photo","occurred_at":"2026-06-01T00:00:00Z","properties":{"x":\#(number)}}"#
        var limits = EventLimits()
        limits.maxEventBytes = 1_048_576
        let event: Event
        do {
            event = try Event.decodeWire(Array(wire.utf8), limits: limits, now: Timestamp(rfc3339: "2026-06-01T00:00:00Z")!)
        } catch {
            #expect(error.field == "properties", "\(name): \(error)")
            return
        }
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        defer { connection.close() }
        do {
            let result = try EventStore.append([AppendItem(appID: "app-1", event: event)], on: connection)
            #expect(result.storedCount == 1, "\(name)")
        } catch {
            Issue.record("\(name): validation accepted it, PostgreSQL refused it: \(String(reflecting: error))")
        }
    }
}
