import EmbeddedPostgres
import EngageClient
import Foundation
import Postgres
import Testing
import TestSupport

@Suite("Faults: client queues shared by processes, and a full disk")
struct ClientQueueProcessTests {
    /// Two processes standing in for the app and its extension start together on one
    /// container: they agree on one installation id, record and send at the same time, and
    /// every event either recorded reaches the server exactly once.
    @Test(.timeLimit(.minutes(3)))
    func twoProcessesRecordAndSendOneQueueAtOnce() async throws {
        let workspace = try FaultWorkspace("client-two")
        defer { workspace.remove() }
        let server = try TestServer()
        let key = try await server.key()
        let container = URL(fileURLWithPath: workspace.file("container"))
        let endpoint = "http://127.0.0.1:\(server.port)"
        let probes = try (0..<2).map { index in
            try ChildProcess([try BuiltProgram.path("EngageClientProbe"), container.path, endpoint, key, "send", "300"],
                             environment: ["PATH": "/usr/bin:/bin", "HOME": workspace.path], outputPath: workspace.file("probe-\(index).log"))
        }
        for probe in probes {
            let status = await probe.waitForExit(timeout: .seconds(150))
            guard status == 0 else { throw FaultTestError("a probe did not finish (status \(String(describing: status)))", log: probe.output) }
        }
        let outputs = probes.map(\.output)
        let installations = Set(outputs.map { Self.values("installation", in: $0) }.joined())
        #expect(installations.count == 1)
        let recorded = outputs.flatMap { Self.values("recorded", in: $0) }.compactMap(UUID.init(uuidString:))
        #expect(recorded.count == 600)
        #expect(outputs.allSatisfy { !$0.contains("failed ") && !$0.contains("dropped ") })

        // What one probe still held when the other finished is sent by whoever comes next.
        let next = try EngageClient(configuration: EngageClient.Configuration(
            endpoint: URL(string: endpoint)!, ingestKey: key, containerDirectory: container, deviceID: "next",
            requestTimeout: .seconds(5), claimLease: .seconds(5)))
        let deadline = ContinuousClock.now.advanced(by: .seconds(60))
        while next.pending != (0, 0, 0) {
            guard ContinuousClock.now < deadline else { throw FaultTestError("the queue was not drained: \(next.pending)") }
            await next.flush(budget: .seconds(5))
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try await server.count("SELECT count(*) FROM events WHERE event_id = ANY(\(recorded))") == 600)
        #expect(try await server.count("SELECT count(*) FROM events") == 600)
        await server.stop()
    }

    /// The queue lives on a 256 KiB tmpfs (mounted in a mount namespace of the probe's own) and
    /// 2,000 events do not fit: recording keeps working by dropping the oldest segments, every
    /// drop is reported through `onDrop` and counted, and nothing recorded is lost silently.
    @Test(.timeLimit(.minutes(3)))
    func aFullDiskDropsTheOldestEventsAndReportsThem() async throws {
        let output = try await Self.probeOnASmallDisk("client-full", mode: "hold", count: 2000, timeout: .seconds(150))
        let recorded = Self.values("recorded", in: output)
        let dropped = Self.values("dropped disk_full", in: output)
        let queued = Self.values("queued", in: output)
        #expect(!output.contains("failed "))
        #expect(recorded.count == 2000)
        #expect(!dropped.isEmpty)
        #expect(!queued.isEmpty)
        // Every recorded event is either still queued or was reported dropped; the dropped are
        // the oldest.
        #expect(Set(dropped).isDisjoint(with: queued))
        #expect(Set(dropped).union(queued) == Set(recorded))
        #expect(Array(recorded.prefix(dropped.count)) == dropped)
        #expect(queued == Array(recorded.suffix(queued.count)))
        #expect(output.contains("counts disk_full=\(dropped.count) overflow=0"))
    }

    /// A full disk that dropping every waiting event does not clear (the tmpfs filled to its last
    /// byte, then an event larger than the whole queue): recording fails, and the events it
    /// dropped while trying are reported through `onDrop` all the same.
    @Test(.timeLimit(.minutes(2)))
    func eventsDroppedByARecordThatStillFailsAreReported() async throws {
        let output = try await Self.probeOnASmallDisk("client-filled", mode: "fill", count: 3, timeout: .seconds(90))
        let recorded = Self.values("recorded", in: output)
        #expect(recorded.count == 3)
        #expect(output.contains("failed engage queue: disk-full"))
        #expect(Self.values("dropped disk_full", in: output) == recorded)
        #expect(Self.values("queued", in: output).isEmpty)
    }

    /// Runs `EngageClientProbe` with its container on a 256 KiB tmpfs mounted in a mount namespace
    /// of its own (`unshare --user --mount`, so no privilege is needed); its output once it ended.
    static func probeOnASmallDisk(_ name: String, mode: String, count: Int, timeout: Duration) async throws -> String {
        let workspace = try FaultWorkspace(name)
        defer { workspace.remove() }
        let container = workspace.file("container")
        try FileManager.default.createDirectory(atPath: container, withIntermediateDirectories: true)
        let probe = try BuiltProgram.path("EngageClientProbe")
        let script = #"mount -t tmpfs -o size=256k tmpfs "$1" && exec "$2" "$1" http://127.0.0.1:9 egk_x "$3" "$4""#
        let child = try ChildProcess(["/usr/bin/unshare", "--user", "--map-root-user", "--mount", "/bin/sh", "-c", script, "sh",
                                      container, probe, mode, String(count)],
                                     environment: ["PATH": "/usr/bin:/bin", "HOME": workspace.path], outputPath: workspace.file("probe.log"))
        let status = await child.waitForExit(timeout: timeout)
        let output = child.output
        guard status == 0, output.contains("\ndone") else {
            throw FaultTestError("the probe could not run on a small tmpfs (needs unshare with user namespaces; status \(String(describing: status)))",
                                 log: output)
        }
        return output
    }

    /// The values of the output's lines starting with `label `.
    static func values(_ label: String, in output: String) -> [String] {
        output.split(separator: "\n").compactMap { line in
            line.hasPrefix(label + " ") ? String(line.dropFirst(label.count + 1)) : nil
        }
    }
}
