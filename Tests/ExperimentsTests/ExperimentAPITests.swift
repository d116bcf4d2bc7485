import EngageAPI
import EngageCore
import EventStore
import Experiments
import Foundation
import Testing
import TestSupport

/// The experiment routes on a live server.
@Suite("Experiment API")
struct ExperimentAPITests {
    static let definition = #"{"id":"strategy-full-vs-adaptive","app_id":"app-1","arms":[{"name":"control","strategy":"full","weight":0.5,"control":true},{"name":"treatment","strategy":"adaptive","weight":0.5}],"primary_metric":"open","schedule":"0 * * * *"}"#

    static func auth(_ key: String) -> [(String, String)] { [("Authorization", "Bearer \(key)")] }

    @Test func lifecycleAssignmentsAndRunsThroughTheAPI() async throws {
        let server = try TestServer()
        do {
            let admin = try await server.key(role: .admin)
            let reader = try await server.key(role: .read)
            let ingest = try await server.key(role: .ingest)
            let stranger = try await server.key(app: "app-2", role: .admin)
            let json = [("Content-Type", "application/json")]

            let created = try await server.request("POST", "/v1/experiments", headers: Self.auth(admin) + json, body: Array(Self.definition.utf8))
            #expect(created.status == 201, "\(created.text)")
            #expect(created.text.contains(#""status":"draft""#))

            let duplicate = try await server.request("POST", "/v1/experiments", headers: Self.auth(admin) + json, body: Array(Self.definition.utf8))
            #expect(duplicate.status == 409)
            let invalid = try await server.request("POST", "/v1/experiments", headers: Self.auth(admin) + json,
                                                   body: Array(Self.definition.replacingOccurrences(of: #""weight":0.5}"#, with: #""weight":0.7}"#).utf8))
            #expect(invalid.status == 400)
            #expect(invalid.text.contains(#""problems":[{"field":"arms","problem":"weights must add up to 1, found 1.2"}]"#), "\(invalid.text)")
            let byReader = try await server.request("POST", "/v1/experiments", headers: Self.auth(reader) + json, body: Array(Self.definition.utf8))
            #expect(byReader.status == 403)
            let otherApp = try await server.request("POST", "/v1/experiments", headers: Self.auth(stranger) + json, body: Array(Self.definition.utf8))
            #expect(otherApp.status == 403)
            // KELVIN SIGN: canonically "K", yet another app to every byte-wise read of the store.
            let kiosk = try await server.key(app: "Kiosk", role: .admin)
            let kelvin = try await server.request("POST", "/v1/experiments", headers: Self.auth(kiosk) + json,
                                                  body: Array(Self.definition.replacingOccurrences(of: #""id":"strategy-full-vs-adaptive","app_id":"app-1""#,
                                                                                                   with: "\"id\":\"kelvin\",\"app_id\":\"\u{212A}iosk\"").utf8))
            #expect(kelvin.status == 403, "\(kelvin.text)")

            // Nothing is assigned before the start.
            let before = try await server.request("GET", "/v1/assignments?device_id=device-1", headers: Self.auth(ingest))
            #expect(before.status == 200)
            #expect(before.text == #"{"assignments":[]}"#)

            let started = try await server.request("POST", "/v1/experiments/strategy-full-vs-adaptive/start", headers: Self.auth(admin))
            #expect(started.status == 200, "\(started.text)")
            #expect(started.text.contains(#""status":"running""#))
            let again = try await server.request("POST", "/v1/experiments/strategy-full-vs-adaptive/start", headers: Self.auth(admin))
            #expect(again.status == 409)

            let definition = try ExperimentDefinition(json: Array(Self.definition.utf8))
            for device in ["device-1", "device-2", "device-3"] {
                let expected = try #require(ExperimentAssignment.arm(forDevice: device, definition: definition))
                for key in [ingest, reader] {
                    let response = try await server.request("GET", "/v1/assignments?device_id=\(device)", headers: Self.auth(key))
                    #expect(response.text == #"{"assignments":[{"experiment":"strategy-full-vs-adaptive","arm":"\#(expected.arm.name)","strategy":"\#(expected.arm.strategy.rawValue)","probability":0.5}]}"#)
                }
            }
            let noDevice = try await server.request("GET", "/v1/assignments", headers: Self.auth(ingest))
            #expect(noDevice.status == 400)

            let shown = try await server.request("GET", "/v1/experiments/strategy-full-vs-adaptive", headers: Self.auth(reader))
            #expect(shown.status == 200)
            let hidden = try await server.request("GET", "/v1/experiments/strategy-full-vs-adaptive", headers: Self.auth(stranger))
            #expect(hidden.status == 404)
            let listed = try await server.request("GET", "/v1/experiments", headers: Self.auth(reader))
            #expect(listed.text.hasPrefix(#"{"experiments":[{"id":"strategy-full-vs-adaptive""#))

            let run = try await server.request("POST", "/v1/experiments/strategy-full-vs-adaptive/run", headers: Self.auth(admin))
            #expect(run.status == 201, "\(run.text)")
            #expect(run.text.contains(#""manual":true,"status":"done","attempts":1"#), "\(run.text)")
            #expect(run.text.contains(#""decision":"continue""#))
            let runs = try await server.request("GET", "/v1/experiments/strategy-full-vs-adaptive/runs", headers: Self.auth(reader))
            #expect(runs.status == 200)
            #expect(runs.text.hasPrefix(#"{"runs":[{"id":1,"experiment":"strategy-full-vs-adaptive""#))

            let stopped = try await server.request("POST", "/v1/experiments/strategy-full-vs-adaptive/stop", headers: Self.auth(admin))
            #expect(stopped.status == 200)
            let after = try await server.request("GET", "/v1/assignments?device_id=device-1", headers: Self.auth(ingest))
            #expect(after.text == #"{"assignments":[]}"#)

            // The log's account: created, started, the manual analysis, stopped by hand.
            let history = try await server.request("GET", "/v1/experiments/strategy-full-vs-adaptive/history", headers: Self.auth(reader))
            #expect(history.status == 200, "\(history.text)")
            let types = try #require(JSONSerialization.jsonObject(with: Data(history.text.utf8)) as? [String: Any])["entries"]
                .flatMap { $0 as? [[String: Any]] }?.map { $0["type"] as? String ?? "" }
            #expect(types == ["experiment_created", "experiment_started", "experiment_analysed", "experiment_stopped"])
            #expect(history.text.contains(#""run_id": 1"#))
            let historyOfStranger = try await server.request("GET", "/v1/experiments/strategy-full-vs-adaptive/history", headers: Self.auth(stranger))
            #expect(historyOfStranger.status == 404)

            let metrics = try await server.request("GET", "/metrics")
            #expect(metrics.text.contains(#"route="/v1/experiments/{id}/start""#))
            #expect(metrics.text.contains(#"engage_scheduler_runs_total{outcome="done"} 1"#))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// The offline replay over HTTP: the key's app only, labelled, and clear about bad parameters.
    @Test(.timeLimit(.minutes(2)))
    func simulateReplaysTheKeysAppUnderAStrategy() async throws {
        let server = try TestServer()
        do {
            let start = Fixtures.time("2026-03-01T00:00:00Z")
            var scenario = SimulationScenario.standard
            scenario.notificationCount = 1_000
            scenario.deviceCount = 200
            var simulator = try TrafficSimulator(scenario: scenario, seed: 11, start: start)
            while let batch = simulator.next(batchSize: 2_000) {
                _ = try await server.store.append(batch.map { AppendItem(appID: "app-1", event: $0) })
            }
            let reader = try await server.key(role: .read)
            let ingest = try await server.key(role: .ingest)
            let stranger = try await server.key(app: "app-2", role: .read)

            let replay = try await server.request("GET", "/v1/simulate?strategy=thumbnail&category=new_photo,chat_message", headers: Self.auth(reader))
            #expect(replay.status == 200, "\(replay.text)")
            #expect(replay.text.contains("model-based estimate"))
            let json = try #require(JSONSerialization.jsonObject(with: Data(replay.text.utf8)) as? [String: Any])
            #expect(json["strategy"] as? String == "thumbnail", "\(json.keys.sorted())")
            // Another app's key replays its own (empty) log.
            let empty = try await server.request("GET", "/v1/simulate?strategy=thumbnail", headers: Self.auth(stranger))
            #expect(empty.status == 200)
            #expect(empty.text != replay.text)

            let unknown = try await server.request("GET", "/v1/simulate?strategy=huge", headers: Self.auth(reader))
            #expect(unknown.status == 400)
            #expect(unknown.text.contains("invalid value 'huge' for parameter 'strategy'"), "\(unknown.text)")
            let missing = try await server.request("GET", "/v1/simulate", headers: Self.auth(reader))
            #expect(missing.status == 400)
            #expect(missing.text.contains("strategy is required"))
            let badSince = try await server.request("GET", "/v1/simulate?strategy=full&since=yesterday", headers: Self.auth(reader))
            #expect(badSince.status == 400)
            #expect(badSince.text.contains("parameter 'since'"))
            let extra = try await server.request("GET", "/v1/simulate?strategy=full&app=app-2", headers: Self.auth(reader))
            #expect(extra.status == 400)
            #expect(try await server.request("GET", "/v1/simulate?strategy=full", headers: Self.auth(ingest)).status == 403)
            #expect(try await server.request("GET", "/v1/simulate?strategy=full").status == 401)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// The batch form answers what the single form answers, device by device; both honour
    /// `category`; bad bodies name their field.
    @Test func batchAssignmentsAnswerForManyDevicesAtOnce() async throws {
        let server = try TestServer()
        do {
            let admin = try await server.key(role: .admin)
            let ingest = try await server.key(role: .ingest)
            let json = [("Content-Type", "application/json")]
            let photos = Self.definition.replacingOccurrences(of: #""app_id":"app-1","#, with: #""app_id":"app-1","categories":["new_photo"],"#)
            let chats = photos.replacingOccurrences(of: "strategy-full-vs-adaptive", with: "chat-poster")
                .replacingOccurrences(of: "new_photo", with: "chat_message")
            for definition in [photos, chats] {
                let id = definition.contains("chat-poster") ? "chat-poster" : "strategy-full-vs-adaptive"
                #expect(try await server.request("POST", "/v1/experiments", headers: Self.auth(admin) + json, body: Array(definition.utf8)).status == 201)
                #expect(try await server.request("POST", "/v1/experiments/\(id)/start", headers: Self.auth(admin)).status == 200)
            }

            let devices = (1...40).map { "device-\($0)" }
            let body = #"{"device_ids":["# + devices.map { "\"\($0)\"" }.joined(separator: ",") + #"],"category":"new_photo"}"#
            let batch = try await server.request("POST", "/v1/assignments", headers: Self.auth(ingest) + json, body: Array(body.utf8))
            #expect(batch.status == 200, "\(batch.text)")
            let entries = try #require((try JSONSerialization.jsonObject(with: Data(batch.text.utf8)) as? [String: Any])?["assignments"] as? [[String: Any]])
            #expect(entries.map { $0["device_id"] as? String } == devices)
            #expect(entries.allSatisfy { $0["experiment"] as? String == "strategy-full-vs-adaptive" })
            for (device, entry) in zip(devices, entries) {
                let single = try await server.request("GET", "/v1/assignments?device_id=\(device)&category=new_photo", headers: Self.auth(ingest))
                let own = try #require((try JSONSerialization.jsonObject(with: Data(single.text.utf8)) as? [String: Any])?["assignments"] as? [[String: Any]])
                #expect(own.count == 1)
                #expect(own.first?["arm"] as? String == entry["arm"] as? String)
                #expect(own.first?["strategy"] as? String == entry["strategy"] as? String)
            }
            // Without a category a device is in both experiments, in id order.
            let both = try await server.request("POST", "/v1/assignments", headers: Self.auth(ingest) + json,
                                                body: Array(#"{"device_ids":["device-1"]}"#.utf8))
            #expect(both.text.hasPrefix(#"{"assignments":[{"device_id":"device-1","experiment":"chat-poster","#), "\(both.text)")
            #expect(both.text.contains(#""experiment":"strategy-full-vs-adaptive""#))
            let other = try await server.request("GET", "/v1/assignments?device_id=device-1&category=weather", headers: Self.auth(ingest))
            #expect(other.text == #"{"assignments":[]}"#)

            let bad: [(String, String)] = [
                (#"{"device_ids":[]}"#, "device_ids: must hold 1 to 1000 ids"),
                (#"{"device_ids":["a",""]}"#, "device_ids[1]: must be a string of 1 to 200 bytes"),
                (#"{"device_ids":["a"],"category":7}"#, "category: must be a string of 1 to 100 bytes"),
                (#"{"device_ids":["a"],"devices":1}"#, "devices: is not a field of this request"),
                // 198 bytes as sent, 396 once composed as ingestion stores it (U+0958 is two scalars in NFC).
                ("{\"device_ids\":[\"" + String(repeating: "\u{0958}", count: 66) + "\"]}", "device_ids[0]: must be a string of 1 to 200 bytes (in NFC)"),
                (#"{"device_ids":["a\u0007"]}"#, "device_ids[0]: must be a string of 1 to 200 bytes (in NFC) without control characters"),
                ("{\"device_ids\":[\"a\"],\"category\":\"" + String(repeating: "\u{0958}", count: 33) + "\"}", "category: must be a string of 1 to 100 bytes"),
                (#"{"category":"new_photo"}"#, "device_ids: is required"),
                (#"{"device_ids":["#, "unexpected end of input"),
                ("{\"device_ids\":[" + (0...1000).map { "\"d\($0)\"" }.joined(separator: ",") + "]}", "device_ids: must hold 1 to 1000 ids"),
            ]
            for (text, detail) in bad {
                let answer = try await server.request("POST", "/v1/assignments", headers: Self.auth(ingest) + json, body: Array(text.utf8))
                #expect(answer.status == 400)
                #expect(answer.text.contains(detail), "\(answer.text)")
            }
            let grown = String(repeating: "\u{0958}", count: 66).addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            for query in ["device_id=\(grown)", "device_id=a%07", "device_id=a&category=\(grown.prefix(33 * 9))"] {
                let answer = try await server.request("GET", "/v1/assignments?" + query, headers: Self.auth(ingest))
                #expect(answer.status == 400, "\(query): \(answer.text)")
            }
            let plain = try await server.request("POST", "/v1/assignments", headers: Self.auth(ingest) + [("Content-Type", "text/plain")],
                                                 body: Array(#"{"device_ids":["a"]}"#.utf8))
            #expect(plain.status == 415)
            #expect(try await server.request("POST", "/v1/assignments", headers: json, body: Array(#"{"device_ids":["a"]}"#.utf8)).status == 401)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// An id no experiment can have (a NUL byte, which PostgreSQL cannot take in a text
    /// parameter) is a missing experiment, not "service unavailable, retry in 5 s": that 503
    /// pages the operator and makes clients retry a request that can never succeed.
    @Test func anImpossibleExperimentIDIsNotFound() async throws {
        let server = try TestServer()
        do {
            let admin = try await server.key(role: .admin)
            let reader = try await server.key(role: .read)
            let requests: [(String, String, String)] = [
                ("GET", "/v1/experiments/a%00b", reader), ("GET", "/v1/experiments/a%00b/runs", reader),
                ("GET", "/v1/experiments/a%00b/history", reader), ("POST", "/v1/experiments/a%00b/start", admin),
                ("POST", "/v1/experiments/a%00b/stop", admin), ("POST", "/v1/experiments/a%00b/run", admin),
            ]
            for (method, path, key) in requests {
                let answer = try await server.request(method, path, headers: Self.auth(key))
                #expect(answer.status == 404, "\(method) \(path): \(answer.status) \(answer.text)")
                #expect(answer.text.contains(#""title":"No such experiment""#), "\(answer.text)")
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test func routeLabelsNameTheTemplates() {
        #expect(EngageAPI.routeLabel(for: "/v1/experiments/abc/runs") == "/v1/experiments/{id}/runs")
        #expect(EngageAPI.routeLabel(for: "/v1/experiments/abc") == "/v1/experiments/{id}")
        #expect(EngageAPI.routeLabel(for: "/v1/events") == "/v1/events")
        #expect(EngageAPI.routeLabel(for: "/v1/experiments/abc/other") == "unmatched")
    }
}
