import EngageCore
import EventStore
import Experiments
import HTTPServer
import Postgres
import Runtime

/// The experiment routes, always scoped to the app of the request's key:
///
/// - `GET /v1/assignments?device_id=...` and `POST /v1/assignments` for many devices (ingest or read
///   key): the devices' arms in running experiments;
/// - `GET /v1/experiments`, `GET /v1/experiments/{id}`, `GET /v1/experiments/{id}/runs`,
///   `GET /v1/experiments/{id}/history` (read key);
/// - `POST /v1/experiments`, `POST /v1/experiments/{id}/start|stop|run` (admin key).
public struct ExperimentRoutes: Sendable {
    let authenticator: Authenticator
    let store: ExperimentStore
    let scheduler: Scheduler
    let time: any TimeSource
    /// The ingest route's device id hasher: assignments bucket the id as the log stores it.
    let deviceIDHasher: DeviceIDHasher?

    public init(authenticator: Authenticator, store: ExperimentStore, scheduler: Scheduler,
                deviceIDHasher: DeviceIDHasher? = nil, time: any TimeSource = SystemTime()) {
        self.authenticator = authenticator
        self.store = store
        self.scheduler = scheduler
        self.deviceIDHasher = deviceIDHasher
        self.time = time
    }

    // MARK: Assignments

    /// The most device ids one `POST /v1/assignments` may ask about.
    public static let assignmentsBatchLimit = 1000

    /// `GET /v1/assignments?device_id=...[&category=...]`: one device's arms.
    public func assignments(_ request: HTTPRequest) async -> HTTPResponse {
        // Apps and senders call this with an ingest key; dashboards with a read key.
        let key: APIKey
        switch await authenticator.authorize(request, asAnyOf: [.ingest, .read]) {
        case .success(let found): key = found
        case .failure(let problem): return problem.response
        }
        do throws(HTTPProblem) {
            try RepeatedQueryParameter.refuse(in: request)
            // A misspelt `category` would answer every experiment of the app, those that do not
            // take the category too, and the sender would tag its push with one of them.
            if let unknown = request.queryItems.first(where: { !["device_id", "category"].contains($0.name) }) {
                throw ReplicaReadRoute.unknown(unknown, use: "device_id or category")
            }
        } catch {
            return APIProblems.response(error)
        }
        // As ingestion takes them: an id its events could not carry must not be handed an arm.
        guard let sentID = request.query("device_id"), IdentifierText.storable(sentID, maxBytes: 200) != nil else {
            return APIProblems.response(APIProblems.badRequest(
                "device_id is required: 1 to 200 bytes (in NFC) without control characters", slug: "bad-query"))
        }
        let category = request.query("category")
        if let category, IdentifierText.storable(category, maxBytes: 100) == nil {
            return APIProblems.response(APIProblems.badRequest(
                "category must be 1 to 100 bytes (in NFC) without control characters", slug: "bad-query"))
        }
        guard let active = await activeExperiments(app: key.appID, category: category) else {
            return APIProblems.response(APIProblems.unavailable, retryAfter: 5)
        }
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("assignments")
        w.beginArray()
        writeAssignments(of: sentID, in: active, deviceMember: false, to: &w)
        w.endArray()
        w.endObject()
        return .json(w.bytes)
    }

    /// `POST /v1/assignments` with `{"device_ids": [...], "category": "..."}`: the arms of up to
    /// 1,000 devices at once, for a server about to send a push to each.
    public func batchAssignments(_ request: HTTPRequest) async -> HTTPResponse {
        let key: APIKey
        switch await authenticator.authorize(request, asAnyOf: [.ingest, .read]) {
        case .success(let found): key = found
        case .failure(let problem): return problem.response
        }
        let query: AssignmentsQuery
        switch AssignmentsQuery.parse(request) {
        case .success(let parsed): query = parsed
        case .failure(let problem): return APIProblems.response(problem)
        }
        guard let active = await activeExperiments(app: key.appID, category: query.category) else {
            return APIProblems.response(APIProblems.unavailable, retryAfter: 5)
        }
        var w = JSONWriter(capacity: 64 + query.deviceIDs.count * 128)
        w.beginObject()
        w.key("assignments")
        w.beginArray()
        for device in query.deviceIDs { writeAssignments(of: device, in: active, deviceMember: true, to: &w) }
        w.endArray()
        w.endObject()
        return .json(w.bytes)
    }

    /// The app's experiments that assign devices now, in id order, for `category` when given;
    /// nil when the store cannot be read, or not within `ReadAnswerLimits.assignments`.
    private func activeExperiments(app: String, category: String?) async -> [ExperimentDefinition]? {
        let store = self.store
        // `try?` flattens: nil when the read failed or took too long.
        guard let listing = try? await withTimeLimit(ReadAnswerLimits.assignments, { try await store.list(app: app, status: .running) })
        else { return nil }
        let now = time.wallClock
        // One this build cannot read assigns no one (the scheduler skips it too); the others go on.
        return listing.records.map(\.definition)
            .filter { $0.isActive(at: now) && (category.map($0.admits(category:)) ?? true) }
            .sorted { $0.id < $1.id }
    }

    private func writeAssignments(of sentID: String, in definitions: [ExperimentDefinition], deviceMember: Bool,
                                  to w: inout JSONWriter) {
        // The device's identity is the id its events are stored under (normalised as ingestion
        // does, then hashed when ids are), so that the log alone reproduces every assignment.
        let storedID = IdentifierText.normalized(sentID)
        let deviceID = deviceIDHasher?.hash(storedID) ?? storedID
        for definition in definitions {
            guard let (arm, probability) = ExperimentAssignment.arm(forDevice: deviceID, definition: definition) else { continue }
            w.beginObject()
            if deviceMember {
                w.key("device_id"); w.string(sentID)
            }
            w.key("experiment"); w.string(definition.id)
            w.key("arm"); w.string(arm.name)
            w.key("strategy"); w.string(arm.strategy.rawValue)
            w.key("probability"); w.double(probability)
            w.endObject()
        }
    }

    // MARK: Experiments

    public func list(_ request: HTTPRequest) async -> HTTPResponse {
        await respond(request, as: .read) { key in
            let listing = try await store.list(app: key.appID)
            var w = JSONWriter(capacity: 1024)
            w.beginObject()
            w.key("experiments")
            w.beginArray()
            for record in listing.records { w.raw(record.definition.canonicalJSON) }
            w.endArray()
            // Named, not hidden: experiments whose stored definition this engage cannot read.
            w.key("unreadable")
            w.beginArray()
            for id in listing.unreadable { w.string(id) }
            w.endArray()
            w.endObject()
            return .json(w.bytes)
        }
    }

    public func create(_ request: HTTPRequest) async -> HTTPResponse {
        await respond(request, as: .admin) { key in
            if let problem = JSONRequestBody.problem(request, sending: "the definition") { return APIProblems.response(problem) }
            let definition: ExperimentDefinition
            do {
                definition = try ExperimentDefinition(json: request.body)
            } catch let error as ExperimentProblem {
                throw ExperimentStoreError(code: .invalidDefinition, experimentID: "", problems: [error], detail: error.description)
            }
            // Byte for byte, as the store reads it back: `==` takes canonically equivalent text
            // (KELVIN SIGN and "K") as equal.
            guard definition.appID.utf8.elementsEqual(key.appID.utf8) else {
                return APIProblems.response(APIProblems.forbidden("app_id must be the key's app, \(key.appID)"))
            }
            return .json(try await store.create(definition).definition.canonicalJSON, status: 201)
        }
    }

    public func show(_ request: HTTPRequest) async -> HTTPResponse {
        await respond(request, as: .read) { key in
            let id = request.pathParameters["id"] ?? ""
            guard let record = try await store.get(id, app: key.appID) else { throw ExperimentStoreError(code: .notFound, experimentID: id, detail: "no experiment \(id)") }
            return .json(record.definition.canonicalJSON)
        }
    }

    public func start(_ request: HTTPRequest) async -> HTTPResponse {
        await respond(request, as: .admin) { key in
            .json(try await store.start(request.pathParameters["id"] ?? "", app: key.appID, now: time.wallClock).definition.canonicalJSON)
        }
    }

    public func stop(_ request: HTTPRequest) async -> HTTPResponse {
        await respond(request, as: .admin) { key in
            .json(try await store.stop(request.pathParameters["id"] ?? "", app: key.appID).definition.canonicalJSON)
        }
    }

    public func runNow(_ request: HTTPRequest) async -> HTTPResponse {
        await respond(request, as: .admin) { key in
            let run = try await scheduler.runNow(experimentID: request.pathParameters["id"] ?? "", app: key.appID)
            return .json(Self.render(run), status: 201)
        }
    }

    /// A route that takes no query parameter refuses one (400 `bad-query`): ignored, a
    /// `POST .../start?dry_run=1` would start the experiment its caller meant to try.
    static func refusingQuery(_ request: HTTPRequest) -> HTTPResponse? {
        guard let item = request.queryItems.first else { return nil }
        return APIProblems.response(APIProblems.badRequest("unknown query parameter \(item.name); this route takes none", slug: "bad-query"))
    }

    /// Runs on one page of `GET /v1/experiments/{id}/runs`.
    static let runsPage = 100

    /// `before`, the run id a page of runs continues after: digits only, no sign or leading 0.
    static func runsCursor(_ request: HTTPRequest) -> Result<Int64?, HTTPProblem> {
        Result { () throws(HTTPProblem) -> Int64? in
            try RepeatedQueryParameter.refuse(in: request)
            if let unknown = request.queryItems.first(where: { $0.name != "before" }) {
                throw ReplicaReadRoute.unknown(unknown, use: "before")
            }
            guard let text = request.query("before") else { return nil }
            guard text.first != "0", text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let id = Int64(text) else {
                throw APIProblems.badRequest("before must be a run id (the next of a page of runs)", slug: "bad-query")
            }
            return id
        }
    }

    /// The newest `runsPage` runs, then those before the run `before` names: `next` is the
    /// cursor of the page after, null on the last (an hourly experiment has 100 runs in 4 days).
    public func runs(_ request: HTTPRequest) async -> HTTPResponse {
        await respond(request, as: .read, takingQuery: true) { key in
            // The key first, then the query (as every route): a stranger learns nothing of it.
            let before: Int64?
            switch Self.runsCursor(request) {
            case .success(let cursor): before = cursor
            case .failure(let problem): return APIProblems.response(problem)
            }
            let id = request.pathParameters["id"] ?? ""
            guard try await store.get(id, app: key.appID) != nil else { throw ExperimentStoreError(code: .notFound, experimentID: id, detail: "no experiment \(id)") }
            let runs = try await store.runs(id, limit: Self.runsPage + 1, before: before)
            var w = JSONWriter(capacity: 1024)
            w.beginObject()
            w.key("runs")
            w.beginArray()
            for run in runs.prefix(Self.runsPage) { w.raw(Self.render(run)) }
            w.endArray()
            w.key("next")
            if runs.count > Self.runsPage { w.string(String(runs[Self.runsPage - 1].id)) } else { w.null() }
            w.endObject()
            return .json(w.bytes)
        }
    }

    /// The experiment's entries in the event log: lifecycle changes and analyses, in log order.
    public func history(_ request: HTTPRequest) async -> HTTPResponse {
        await respond(request, as: .read) { key in
            let id = request.pathParameters["id"] ?? ""
            guard let record = try await store.get(id, app: key.appID) else { throw ExperimentStoreError(code: .notFound, experimentID: id, detail: "no experiment \(id)") }
            var w = JSONWriter(capacity: 4096)
            w.beginObject()
            w.key("entries")
            w.beginArray()
            for entry in try await store.history(of: record.definition) {
                w.beginObject()
                w.key("type"); w.string(ExperimentLogEntry.type(of: entry.action))
                w.key("occurred_at"); w.string(entry.occurredAt.rfc3339)
                w.key("recorded_at"); w.string(entry.recordedAt.rfc3339)
                w.key("payload"); w.raw(entry.payload)
                w.endObject()
            }
            w.endArray()
            w.endObject()
            return .json(w.bytes)
        }
    }

    // MARK: Helpers

    /// Authorizes, runs `body` and turns store errors into problems.
    /// A route for read keys only reads: it answers 503 past `ReadAnswerLimits.reads`. Admin
    /// routes write (and a run analyses), and are not cut short here: a create, start or stop is
    /// bounded by the store's commit timeout (`ExperimentStore.commitTimeout`, the server's
    /// `--commit-timeout`), past which it is `database-unavailable` if its COMMIT was not sent
    /// (rolled back: retry) and `change-unconfirmed` if it was (it may be made).
    /// `change-unconfirmed` has no Retry-After: the next step is reading the experiment back, and
    /// a client that repeats the request blindly after a pause finds the change made (409).
    /// A manual run's database calls are bounded by the scheduler's `databaseAnswerLimit`
    /// (`Scheduler.runNow`): past it once the run's insert was sent, the run may be queued, which
    /// the 503's detail says (with Retry-After: a repeated run is harmless).
    /// A route `takingQuery` reads its own query parameters; any other refuses one, once the key
    /// is checked (`refusingQuery`).
    private func respond(_ request: HTTPRequest, as role: Role, takingQuery: Bool = false,
                         _ body: @escaping @Sendable (APIKey) async throws -> HTTPResponse) async -> HTTPResponse {
        let key: APIKey
        switch await authenticator.authorize(request, as: role) {
        case .success(let found): key = found
        case .failure(let problem): return problem.response
        }
        if !takingQuery, let refusal = Self.refusingQuery(request) { return refusal }
        do {
            guard role == .read else { return try await body(key) }
            guard let response = try await withTimeLimit(ReadAnswerLimits.reads, { try await body(key) }) else {
                return APIProblems.response(APIProblems.unavailable, retryAfter: 5)
            }
            return response
        } catch let error as ExperimentStoreError {
            return APIProblems.response(Self.problem(error))
        } catch let error as ManualRunUnanswered {
            return APIProblems.response(APIProblems.runUnanswered(error), retryAfter: 5)
        } catch let error as PostgresError where error.kind == .unconfirmedCommit {
            return APIProblems.response(APIProblems.changeUnconfirmed(
                roleCannotSeeStandbys: error.sqlState == StandbyConfirmation.insufficientPrivilege))
        } catch {
            return APIProblems.response(APIProblems.unavailable, retryAfter: 5)
        }
    }

    static func problem(_ error: ExperimentStoreError) -> HTTPProblem {
        switch error.code {
        case .invalidDefinition:
            var w = JSONWriter(capacity: 128)
            w.beginArray()
            for problem in error.problems {
                w.beginObject()
                w.key("field"); w.string(problem.field)
                w.key("problem"); w.string(problem.problem)
                w.endObject()
            }
            w.endArray()
            return HTTPProblem(status: 400, slug: error.code.rawValue, title: "The experiment definition is invalid",
                               detail: error.detail, members: [.init(name: "problems", json: String(decoding: w.bytes, as: UTF8.self))])
        case .notFound:
            return HTTPProblem(status: 404, slug: error.code.rawValue, title: "No such experiment", detail: error.detail)
        case .alreadyExists:
            return HTTPProblem(status: 409, slug: error.code.rawValue, title: "The experiment exists already", detail: error.detail)
        case .invalidTransition:
            return HTTPProblem(status: 409, slug: error.code.rawValue, title: "The experiment's status does not allow this",
                               detail: error.detail)
        }
    }

    static func render(_ run: ExperimentRun) -> [UInt8] {
        var w = JSONWriter(capacity: 512 + (run.result?.count ?? 0))
        w.beginObject()
        w.key("id"); w.int(Int(run.id))
        w.key("experiment"); w.string(run.experimentID)
        w.key("scheduled_for"); w.string(run.scheduledFor.rfc3339)
        w.key("manual"); w.bool(run.isManual)
        w.key("status"); w.string(run.status.rawValue)
        w.key("attempts"); w.int(run.attempts)
        w.key("started_at"); if let t = run.startedAt { w.string(t.rfc3339) } else { w.null() }
        w.key("finished_at"); if let t = run.finishedAt { w.string(t.rfc3339) } else { w.null() }
        w.key("decision"); if let d = run.decision { w.string(d) } else { w.null() }
        w.key("error"); if let e = run.error { w.string(e) } else { w.null() }
        w.key("result"); if let r = run.result { w.raw(r) } else { w.null() }
        w.endObject()
        return w.bytes
    }
}
