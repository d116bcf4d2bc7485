// libFuzzer entry for the decoders of request bodies, compiled together with EngageCore's
// sources into one instrumented executable by scripts/fuzz (SwiftPM never builds this folder).
//
// The first byte picks the decoder, the rest is the body:
//   0: POST /v1/events as application/json      (decodeBatch, format .json)
//   1: POST /v1/events as application/x-ndjson  (decodeBatch, format .ndjson)
//   2: POST /v1/experiments                     (ExperimentDefinition(json:))
//
// Besides "never crash", every accepted value must survive its own encodings: an event read back
// from its wire JSON and from its stored payload is the same event, a definition read back from
// its canonical JSON is the same definition. A violation stops the fuzzer like a crash.

/// The server's clock in the fuzzer: the time of the examples in docs/examples.
let fuzzNow = Timestamp(microsecondsSinceEpoch: 1_795_979_783_120_000)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let body = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 3 {
    case 0: checkBatch(body, format: .json)
    case 1: checkBatch(body, format: .ndjson)
    default: checkExperimentDefinition(body)
    }
    return 0
}

func checkBatch(_ body: [UInt8], format: BodyFormat) {
    let batch: DecodedBatch
    do {
        batch = try decodeBatch(body, format: format, now: fuzzNow)
    } catch {
        _ = error.description
        return
    }
    require(batch.events.count == batch.indices.count, "one index per accepted event")
    require(zip(batch.indices, batch.indices.dropFirst()).allSatisfy { $0 < $1 }, "accepted events in request order")
    require(Set(batch.rejected.map(\.index)).isDisjoint(with: batch.indices), "an event both accepted and rejected")
    require(Set(batch.events.map(\.eventID)).count == batch.events.count, "an event id accepted twice")
    for event in batch.events {
        let wire = event.encodeWireJSON()
        do {
            let again = try Event.decodeWire(wire, now: fuzzNow)
            require(again == event, "the wire encoding reads back as another event: \(String(decoding: wire, as: UTF8.self))")
        } catch {
            fail("the wire encoding is refused (\(error.field ?? "-"): \(error.problem)): \(String(decoding: wire, as: UTF8.self))")
        }
        do {
            let stored = try Event(eventID: event.eventID, type: event.type, notificationID: event.notificationID,
                                   deviceID: event.deviceID, category: event.category, occurredAt: event.occurredAt,
                                   payloadJSON: event.payloadJSON)
            require(stored == event, "the stored payload reads back as another event: \(String(decoding: event.payloadJSON, as: UTF8.self))")
        } catch {
            fail("the stored payload is refused (\(error.field ?? "-"): \(error.problem)): \(String(decoding: event.payloadJSON, as: UTF8.self))")
        }
    }
}

func checkExperimentDefinition(_ body: [UInt8]) {
    let definition: ExperimentDefinition
    do {
        definition = try ExperimentDefinition(json: body)
    } catch {
        _ = error.description
        return
    }
    let canonical = definition.canonicalJSON
    do {
        let again = try ExperimentDefinition(json: canonical)
        require(again == definition, "the canonical JSON reads back as another definition: \(String(decoding: canonical, as: UTF8.self))")
        require(again.canonicalJSON == canonical, "the canonical JSON is not canonical")
    } catch {
        fail("the canonical JSON is refused (\(error.description)): \(String(decoding: canonical, as: UTF8.self))")
    }
}

func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fail(message()) }
}

func fail(_ message: String) -> Never {
    fatalError("fuzz invariant: \(message)")
}
