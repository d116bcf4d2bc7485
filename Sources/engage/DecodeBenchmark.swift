import EngageCore
import Foundation
import Runtime

/// `engage bench decode`: the request decoder against Foundation's JSON decoders on the same
/// 100-event bodies, one thread.
enum DecodeBenchmark {
    /// What JSONDecoder has to produce for a fair comparison: the same fields, typed.
    struct WireEvent: Decodable {
        struct Experiment: Decodable { var id: String; var arm: String; var probability: Double? }
        struct Attachment: Decodable {
            var kind: String; var format: String?; var bytes: Int?; var source: String?; var download_ms: Int?; var variant: String?
        }
        var event_id: UUID
        var type: String
        var notification_id: String
        var device_id: String
        var category: String
        var occurred_at: Date
        var experiment: Experiment?
        var attachment: Attachment?
        var outcome: String?
        var processing_ms: Int?
        var time_will_expire: Bool?
        var network: String?
        var strategy: String?
        var properties: [String: String]?
    }

    static let rounds = Option("rounds", value: "n", help: "Rounds; medians are reported.", default: 5, validate: .range(1...100))

    static let definition = Command(
        name: "decode",
        abstract: "Measure the request decoder against Foundation's JSON decoders on the same bodies.",
        options: [rounds],
        run: run)

    static func run(_ arguments: ParsedArguments) throws {
        let rounds = arguments[Self.rounds]
        let now = Timestamp(microsecondsSinceEpoch: SystemTime().wallClockMicroseconds)
        let occurred = now.adding(microseconds: -60_000_000).rfc3339
        func event(_ index: Int) -> String {
            let id = String(format: "0f8fad5b-d9cb-469f-a165-%012x", index)
            return #"{"event_id":"\#(id)","type":"delivered","notification_id":"apns-7C2E-\#(index)","device_id":"dev-42","category":"new_photo","occurred_at":"\#(occurred)","experiment":{"id":"thumbs-v1","arm":"thumbnail","probability":0.5},"attachment":{"kind":"image","format":"jpeg","bytes":182034,"source":"network","download_ms":840,"variant":"thumbnail"},"outcome":"attached","processing_ms":910,"time_will_expire":false,"network":"wifi","strategy":"thumbnail","properties":{"campaign":"winter"}}"#
        }
        let body = Array(("[" + (0..<100).map(event).joined(separator: ",") + "]").utf8)
        let data = Data(body)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601WithFractions
        guard try decodeBatch(body, format: .json, now: now).events.count == 100,
              try decoder.decode([WireEvent].self, from: data).count == 100 else {
            throw BenchCommand.BenchError("the benchmark body did not decode")
        }
        print("100-event bodies of \(body.count / 100) bytes per event; median of \(rounds) rounds, one thread")
        var lines: [(String, Double)] = []
        let progress = ProgressLine.standardError("bench decode")
        func measure(_ name: String, iterations: Int, _ work: () throws -> Int) rethrows {
            var rates: [Double] = []
            var sink = 0
            for round in 1...rounds {
                progress.update("\(name), round \(round)/\(rounds)")
                let stopwatch = Stopwatch()
                for _ in 0..<iterations { sink &+= try work() }
                rates.append(Double(iterations * 100) / stopwatch.elapsed.seconds)
            }
            let median = BenchCommand.median(rates)
            lines.append((name, median))
            progress.print(String(format: "%-52@ median %9.0f events/s  %6.1f MB/s  (%d)", name as NSString, median,
                                  median * Double(body.count) / 100 / 1e6, sink % 2))
        }
        try measure("engage decodeBatch (parse + validate)", iterations: 1000) { try decodeBatch(body, format: .json, now: now).events.count }
        let hasher = try DeviceIDHasher(salt: "a-benchmark-salt-of-32-characters")
        try measure("engage decodeBatch + device id HMAC (--hash-device-ids)", iterations: 1000) {
            try decodeBatch(body, format: .json, now: now).events.reduce(0) { $0 + hasher.hash($1.deviceID).utf8.count }
        }
        try measure("engage decodeBatch + payload JSON for storage", iterations: 1000) {
            try decodeBatch(body, format: .json, now: now).events.reduce(0) { $0 + $1.payloadJSON.count }
        }
        try measure("Foundation JSONSerialization (parse only)", iterations: 200) { (try JSONSerialization.jsonObject(with: data) as? [Any])?.count ?? 0 }
        try measure("Foundation JSONDecoder (typed, no validation)", iterations: 100) { try decoder.decode([WireEvent].self, from: data).count }
        progress.finish()
        if let ours = lines.first?.1, let foundation = lines.last?.1 {
            print(String(format: "engage decoder / JSONDecoder: %.1fx", ours / foundation))
            print(String(format: "with device id hashing / without: %.2fx", lines[1].1 / ours))
        }
    }
}

extension JSONDecoder.DateDecodingStrategy {
    /// RFC 3339 with fractional seconds, as the wire format allows.
    static var iso8601WithFractions: JSONDecoder.DateDecodingStrategy {
        .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let timestamp = Timestamp(rfc3339: text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "bad date"))
            }
            return Date(timeIntervalSince1970: Double(timestamp.microsecondsSinceEpoch) / 1_000_000)
        }
    }
}
