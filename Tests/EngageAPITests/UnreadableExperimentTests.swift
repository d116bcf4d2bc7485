import EngageAPI
import Foundation
import Postgres
import Testing
import TestSupport

/// An experiment whose stored definition this build's rules refuse (stored by another release,
/// or edited by hand): every assignment of its app, and the list of its experiments, answered
/// 503 "unreachable" for good while /readyz said ready. The other experiments go on, as the
/// scheduler's do; the list names the unreadable one.
@Suite("An experiment this engage cannot read")
struct UnreadableExperimentTests {
    @Test(.timeLimit(.minutes(2)))
    func theOthersAssignAndTheListNamesIt() async throws {
        try await TestServer.withServer { server in
            let fixture = try await Fixture(server: server)
            let good = try await fixture.experiment(running: true)
            let bad = try await fixture.experiment(running: true)
            try await server.pool.withConnection { connection in
                try connection.execute("""
                    UPDATE experiments SET definition = jsonb_set(definition, '{arms,0,weight}', '5') WHERE id = \(bad)
                    """)
            }
            let assigned = try await server.request("GET", "/v1/assignments?device_id=device-1", headers: fixture.adminHeaders)
            #expect(assigned.status == 200, "\(assigned.text)")
            #expect(assigned.text.contains(#""experiment":"\#(good)""#) && !assigned.text.contains(bad), "\(assigned.text)")

            let listed = try await server.request("GET", "/v1/experiments", headers: fixture.adminHeaders)
            #expect(listed.status == 200, "\(listed.text)")
            #expect(listed.text.contains(#""unreadable":["\#(bad)"]"#), "\(listed.text)")
            #expect(listed.text.contains(#""id":"\#(good)""#), "\(listed.text)")
            // The console names it too.
            let console = ConsoleClient(server: server, keys: [try #require(fixture.keys[.read])])
            let page = try await console.get("/console/experiments?app=\(fixture.app)")
            #expect(page.status == 200 && page.text.contains("Not shown: \(bad)"), "\(page.text.prefix(600))")
            #expect(page.text.contains(#"data-experiment="\#(good)""#))
        }
    }
}
