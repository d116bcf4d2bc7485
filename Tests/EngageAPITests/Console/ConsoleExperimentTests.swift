import EngageAPI
import Foundation
import Postgres
import Experiments
import HTTPServer
import Testing
import TestSupport

/// Starting and stopping experiments from the console, end to end with PostgreSQL: an admin key
/// with the page's form token changes the experiment (and the log says so); a read key, a missing
/// or foreign token, or another app's key changes nothing.
@Suite("Console experiments")
struct ConsoleExperimentTests {
    @Test(.timeLimit(.minutes(3)))
    func anAdminKeyStartsAndStopsAndNothingElseDoes() async throws {
        try await TestServer.withServer { server in
            let fixture = try await Fixture(server: server)
            let id = try await fixture.experiment(running: false)
            let page = "/console/experiments/\(id)?app=\(fixture.app)"
            let reader = ConsoleClient(server: server, keys: [try #require(fixture.keys[.read])])
            let admin = ConsoleClient(server: server, keys: [try #require(fixture.keys[.admin])])
            let stranger = ConsoleClient(server: server, keys: [try #require(fixture.keys[.otherAppAdmin])])

            // The reader sees the draft and no form to change it.
            let seen = try await reader.get(page)
            #expect(seen.status == 200, "\(seen.text.prefix(300))")
            #expect(seen.text.contains(#"<span class="badge draft">draft</span>"#))
            #expect(seen.text.contains("Starting and stopping an experiment takes an admin key"))
            #expect(!seen.text.contains("/start?app="))
            let readerToken = try #require(ConsoleClient.formToken(seen))
            #expect(try await reader.post("/console/experiments/\(id)/start?app=\(fixture.app)", [("csrf", readerToken)]).status == 403)

            // The admin's page has the forms; without its token, or with the reader's, nothing happens.
            let adminPage = try await admin.get(page)
            #expect(adminPage.text.contains(#"action="/console/experiments/\#(id)/start?app=\#(fixture.app)""#))
            let token = try #require(ConsoleClient.formToken(adminPage))
            for forged in ["", readerToken, String(token.reversed())] {
                #expect(try await admin.post("/console/experiments/\(id)/start?app=\(fixture.app)", [("csrf", forged)]).status == 403)
            }
            // Another app's admin key does not reach this app's experiment.
            let foreignToken = try #require(ConsoleClient.formToken(try await stranger.get("/console/experiments")))
            let foreign = try await stranger.post("/console/experiments/\(id)/start?app=\(fixture.otherApp)", [("csrf", foreignToken)])
            #expect(foreign.status == 404)
            #expect(try await stranger.get(page).status == 403)
            #expect(try await fixture.status(of: id) == "draft")

            let started = try await admin.post("/console/experiments/\(id)/start?app=\(fixture.app)", [("csrf", token)])
            #expect(started.status == 303, "\(started.text.prefix(300))")
            #expect(started.headers["Location"] == "/console/experiments/\(id)?app=\(fixture.app)&done=started")
            #expect(try await fixture.status(of: id) == "running")
            let after = try await admin.get(try #require(started.headers["Location"]))
            #expect(after.text.contains("The experiment was started."))
            #expect(after.text.contains(#"<span class="badge running">running</span>"#))
            #expect(after.text.contains("<b>created</b>") && after.text.contains("<b>started</b>"))

            // Starting twice is refused with the store's reason, on the experiment's page.
            let again = try await admin.post("/console/experiments/\(id)/start?app=\(fixture.app)", [("csrf", token)])
            #expect(again.status == 409)
            #expect(again.text.contains("only a draft can be started"))

            let stopped = try await admin.post("/console/experiments/\(id)/stop?app=\(fixture.app)", [("csrf", token)])
            #expect(stopped.status == 303)
            #expect(try await fixture.status(of: id) == "stopped")
            let history = try await server.request("GET", "/v1/experiments/\(id)/history", headers: fixture.adminHeaders)
            #expect(history.text.contains("experiment_started") && history.text.contains("experiment_stopped"))
            let list = try await reader.get("/console/experiments?app=\(fixture.app)")
            #expect(list.text.contains(#"data-experiment="\#(id)""#))
            #expect(list.text.contains(#"<span class="badge stopped">stopped</span>"#))
        }
    }

    /// A draft not wanted is stopped from its page (the Stop button shows beside Start): the
    /// stop is made without a start (no start_at), and the stopped draft's page and the list
    /// still render, with no form left to change it.
    @Test(.timeLimit(.minutes(3)))
    func aDraftIsStoppedFromItsPageWithoutEverStarting() async throws {
        try await TestServer.withServer { server in
            let fixture = try await Fixture(server: server)
            let id = try await fixture.experiment(running: false)
            let page = "/console/experiments/\(id)?app=\(fixture.app)"
            let admin = ConsoleClient(server: server, keys: [try #require(fixture.keys[.admin])])
            let draftPage = try await admin.get(page)
            #expect(draftPage.text.contains(#"action="/console/experiments/\#(id)/stop?app=\#(fixture.app)""#))
            let token = try #require(ConsoleClient.formToken(draftPage))

            let stopped = try await admin.post("/console/experiments/\(id)/stop?app=\(fixture.app)", [("csrf", token)])
            #expect(stopped.status == 303, "\(stopped.text.prefix(400))")
            #expect(try await fixture.status(of: id) == "stopped")
            let after = try await admin.get(try #require(stopped.headers["Location"]))
            #expect(after.status == 200, "\(after.text.prefix(300))")
            #expect(after.text.contains("The experiment was stopped."))
            #expect(after.text.contains(#"<span class="badge stopped">stopped</span>"#))
            #expect(!after.text.contains("/stop?app=") && !after.text.contains("/start?app="))
            #expect(!after.text.contains("<b>started</b>"))
            let definition = try await server.request("GET", "/v1/experiments/\(id)", headers: fixture.adminHeaders)
            #expect(definition.status == 200 && definition.text.contains(#""start_at":null"#), "\(definition.text.prefix(300))")
            let list = try await admin.get("/console/experiments?app=\(fixture.app)")
            #expect(list.status == 200 && list.text.contains(#"<span class="badge stopped">stopped</span>"#))
        }
    }

    /// The list's latest decision is the newest analysed run's, however many runs failed after it
    /// (a day of hourly failures): it read the 20 newest runs and said "none yet".
    @Test(.timeLimit(.minutes(3)))
    func theListShowsTheLatestLookBehindManyFailedRuns() async throws {
        try await TestServer.withServer { server in
            let fixture = try await Fixture(server: server)
            let id = try await fixture.experiment(running: true)
            let run = try await server.request("POST", "/v1/experiments/\(id)/run", headers: fixture.adminHeaders)
            try #require(run.status == 201, "\(run.text.prefix(300))")
            try await server.pool.withConnection { connection in
                _ = try connection.query("""
                    INSERT INTO experiment_runs (experiment_id, scheduled_for, status, finished_at, error)
                    SELECT \(id), now() + make_interval(hours => n), 'failed', now(), 'not analysed: test'
                    FROM generate_series(1, 30) AS n
                    """)
            }
            let reader = ConsoleClient(server: server, keys: [try #require(fixture.keys[.read])])
            let list = try await reader.get("/console/experiments?app=\(fixture.app)")
            #expect(list.status == 200, "\(list.text.prefix(300))")
            let row = try #require(list.text.range(of: #"data-experiment="\#(id)""#))
            let cells = list.text[row.upperBound...].prefix { $0 != "\n" }.prefix(2_000)
            #expect(!cells.contains("none yet"), "\(cells)")
            #expect(cells.contains("<td>1</td>"), "\(cells)")
        }
    }

    /// On a server that requires a synchronous standby (`--synchronous-standbys 1`) and a
    /// primary running alone, a start from the console is made on the primary but not
    /// acknowledged: the page says so (503), not that the database is unreachable.
    @Test(.timeLimit(.minutes(3)))
    func aStartThePrimaryMadeAloneIsSaidToBeUnconfirmed() async throws {
        try await TestServer.withServer(configure: { $0.requiredSynchronousStandbys = 1 }) { server in
            let fixture = try await Fixture(server: server)
            let id = Fixture.newExperimentID()
            // Created where nothing is required (the test's own pool trusts the server's setting).
            let trusting = ConnectionPool(configuration: server.database, size: 1)
            _ = try await ExperimentStore(pool: trusting).create(json: Array(Fixture.definition(id: id, app: fixture.app).utf8))
            await trusting.close()
            let admin = ConsoleClient(server: server, keys: [try #require(fixture.keys[.admin])])
            let token = try #require(ConsoleClient.formToken(try await admin.get("/console/experiments/\(id)?app=\(fixture.app)")))

            let started = try await admin.post("/console/experiments/\(id)/start?app=\(fixture.app)", [("csrf", token)])
            #expect(started.status == 503, "\(started.text.prefix(300))")
            #expect(started.text.contains("The experiment was started on the primary database, but its synchronous standbys were not seen"))
            #expect(!started.text.contains("The database is unreachable"))
            #expect(try await fixture.status(of: id) == "running")
        }
    }

    /// The same with a database role that cannot read the standbys' positions (no
    /// `pg_read_all_stats`): the page names the grant, as the API's problem does, since no
    /// standby coming back would end it.
    @Test(.timeLimit(.minutes(3)))
    func aStartByARoleThatCannotSeeTheStandbysNamesTheGrant() async throws {
        let database = try TestPostgres.freshDatabase()
        let role = "engage_blind_\(UUID().uuidString.prefix(6).lowercased())"
        let admin = try Connection(configuration: database)
        defer { admin.close() }
        try UnprivilegedRole.create(role, on: admin)
        let asRole = database.withUser(role)
        let server = try TestServer(database: asRole) { $0.requiredSynchronousStandbys = 1 }
        let fixture = try await Fixture(server: server)
        let id = Fixture.newExperimentID()
        let trusting = ConnectionPool(configuration: database, size: 1)
        _ = try await ExperimentStore(pool: trusting).create(json: Array(Fixture.definition(id: id, app: fixture.app).utf8))
        await trusting.close()
        let client = ConsoleClient(server: server, keys: [try #require(fixture.keys[.admin])])
        let token = try #require(ConsoleClient.formToken(try await client.get("/console/experiments/\(id)?app=\(fixture.app)")))

        let started = try await client.post("/console/experiments/\(id)/start?app=\(fixture.app)", [("csrf", token)])
        #expect(started.status == 503, "\(started.text.prefix(300))")
        #expect(started.text.contains("The experiment was started on the primary database"), "\(started.text)")
        #expect(started.text.contains("pg_read_all_stats"), "\(started.text)")
        #expect(try await fixture.status(of: id) == "running")
        // The API's problem names it too, and readiness says why.
        let stopped = try await server.request("POST", "/v1/experiments/\(id)/stop", headers: fixture.adminHeaders)
        #expect(stopped.status == 503 && stopped.text.contains("change-unconfirmed") && stopped.text.contains("GRANT pg_read_all_stats"),
                "\(stopped.text)")
        let ready = try await server.request("GET", "/readyz")
        #expect(ready.text.contains("standbys-unverifiable") && ready.text.contains("experiment change"), "\(ready.text)")
        await server.stop()
    }
}
