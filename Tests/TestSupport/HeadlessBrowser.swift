import Foundation

/// Headless Chromium (Debian's `chromium`), driven over the DevTools protocol on a pipe
/// (`--remote-debugging-pipe`: commands on its descriptor 3, answers and events on 4, each
/// message a JSON text ended by NUL). One tab; every call blocks, so use it from `offPool`.
///
/// What it is for: loading a page as a browser does (styles, forms, cookies, the page's
/// Content-Security-Policy), collecting what the browser would print in its console (errors and
/// warnings of the page, of the network, of CSP), reading the DOM, taking screenshots.
public final class HeadlessBrowser: @unchecked Sendable {
    /// One line of the browser's console.
    public struct ConsoleMessage: Sendable, CustomStringConvertible {
        /// `console-api`, `exception`, or the source of a log entry (`network`, `security`, `rendering`, ...).
        public var source: String
        /// `error`, `warning`, `info`, ...
        public var level: String
        public var text: String
        public var url: String

        public var description: String { "[\(source) \(level)] \(text)" + (url.isEmpty ? "" : " (\(url))") }
        public var isProblem: Bool { level == "error" || level == "warning" }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    private let process: Process
    private let commands: FileHandle
    private let answers: Int32
    private let profile: String
    private var received: [UInt8] = []
    private var nextID = 0
    private var session = ""
    /// Events seen since the last `load`.
    private var events: [[String: Any]] = []
    /// How long one answer may take before the browser is taken for stuck.
    public var answerTimeout: Duration = .seconds(60)

    /// The browser's program: `$ENGAGE_CHROMIUM`, else `chromium` as Debian installs it.
    public static var program: String {
        ProcessInfo.processInfo.environment["ENGAGE_CHROMIUM"] ?? "/usr/bin/chromium"
    }

    public init() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.program) else {
            throw Failure("\(Self.program) is missing: install Debian's chromium (bash scripts/install-deps)")
        }
        profile = NSTemporaryDirectory() + "engage-chromium-\(getpid())-\(UUID().uuidString.prefix(8))"
        let flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--remote-debugging-pipe",
                     "--user-data-dir=\(profile)", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                     "--mute-audio", "about:blank"]
        let input = Pipe(), output = Pipe()
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        // The shell hands the pipes to the browser as descriptors 3 and 4, which it reads and writes.
        process.arguments = ["-c", "exec \"$0\" \"$@\" 3<&0 4>&1 0</dev/null 1>/dev/null 2>/dev/null", Self.program] + flags
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        commands = input.fileHandleForWriting
        answers = output.fileHandleForReading.fileDescriptor
        let target = try call("Target.createTarget", ["url": "about:blank"])["targetId"] as? String ?? ""
        session = try call("Target.attachToTarget", ["targetId": target, "flatten": true])["sessionId"] as? String ?? ""
        guard !session.isEmpty else { throw Failure("the browser attached no session") }
        for domain in ["Page", "Runtime", "Log", "Network"] { _ = try call("\(domain).enable", [:], inPage: true) }
    }

    deinit { close() }

    public func close() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: profile)
    }

    // MARK: The page

    /// The viewport's size in CSS pixels; `mobile` makes the browser lay out as a phone's does.
    public func setViewport(width: Int, height: Int, mobile: Bool = false) throws {
        _ = try call("Emulation.setDeviceMetricsOverride",
                     ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile], inPage: true)
    }

    /// Pages see `prefers-color-scheme: dark` (or light).
    public func setColorScheme(dark: Bool) throws {
        _ = try call("Emulation.setEmulatedMedia",
                     ["features": [["name": "prefers-color-scheme", "value": dark ? "dark" : "light"]]], inPage: true)
    }

    /// Loads `url` and waits for its load event; the console messages it caused.
    @discardableResult
    public func load(_ url: String) throws -> [ConsoleMessage] {
        events.removeAll()
        let navigation = try call("Page.navigate", ["url": url], inPage: true)
        if let error = navigation["errorText"] as? String, !error.isEmpty { throw Failure("loading \(url): \(error)") }
        try waitForLoad()
        return consoleMessages()
    }

    /// Submits the page's form whose action is `action`, after setting `fields` (name: value), as
    /// a person typing and pressing its button would; waits for the next page; its console messages.
    @discardableResult
    public func submitForm(action: String, fields: [String: String]) throws -> [ConsoleMessage] {
        events.removeAll()
        let assignments = fields.map { name, value in
            "form.elements[\(Self.literal(name))].value = \(Self.literal(value));"
        }.joined()
        let script = """
            (() => { const form = [...document.forms].find(f => (f.getAttribute('action') || '').split('?')[0] === \(Self.literal(action)));
              if (!form) return false; \(assignments) form.requestSubmit(); return true; })()
            """
        guard try evaluate(script) as? Bool == true else { throw Failure("no form posts to \(action)") }
        try waitForLoad()
        return consoleMessages()
    }

    /// The document as the browser holds it now.
    public func html() throws -> String {
        try evaluate("document.documentElement.outerHTML") as? String ?? ""
    }

    /// The page's address now (after redirects).
    public func location() throws -> String {
        try evaluate("location.href") as? String ?? ""
    }

    /// What the page's own scripts could read of its cookies (`document.cookie`).
    public func scriptVisibleCookies() throws -> String {
        try evaluate("document.cookie") as? String ?? ""
    }

    /// A PNG of the viewport, or of the whole page when `fullPage`.
    public func screenshot(fullPage: Bool = false) throws -> [UInt8] {
        let answer = try call("Page.captureScreenshot", ["format": "png", "captureBeyondViewport": fullPage], inPage: true)
        guard let text = answer["data"] as? String, let data = Data(base64Encoded: text) else { throw Failure("no screenshot") }
        return Array(data)
    }

    /// Evaluates `expression` in the page (DevTools evaluations are not subject to the page's CSP).
    public func evaluate(_ expression: String) throws -> Any? {
        let answer = try call("Runtime.evaluate", ["expression": expression, "returnByValue": true], inPage: true)
        if let exception = answer["exceptionDetails"] as? [String: Any] {
            throw Failure("evaluating \(expression.prefix(60)): \(exception["text"] ?? exception)")
        }
        return (answer["result"] as? [String: Any])?["value"]
    }

    private func waitForLoad() throws {
        while !events.contains(where: { $0["method"] as? String == "Page.loadEventFired" }) {
            events.append(try readMessage())
        }
        // A round trip: every event the page caused before its load is in by its answer.
        _ = try evaluate("1")
    }

    /// The console messages among the events since the last load.
    private func consoleMessages() -> [ConsoleMessage] {
        events.compactMap { event -> ConsoleMessage? in
            let parameters = event["params"] as? [String: Any] ?? [:]
            switch event["method"] as? String {
            case "Runtime.consoleAPICalled":
                let arguments = parameters["args"] as? [[String: Any]] ?? []
                let text = arguments.map { "\($0["value"] ?? $0["description"] ?? "")" }.joined(separator: " ")
                let type = parameters["type"] as? String ?? "log"
                return ConsoleMessage(source: "console-api", level: type == "warning" ? "warning" : type, text: text, url: "")
            case "Runtime.exceptionThrown":
                let details = parameters["exceptionDetails"] as? [String: Any] ?? [:]
                let exception = details["exception"] as? [String: Any]
                return ConsoleMessage(source: "exception", level: "error",
                                      text: "\(exception?["description"] ?? details["text"] ?? "")", url: details["url"] as? String ?? "")
            case "Log.entryAdded":
                let entry = parameters["entry"] as? [String: Any] ?? [:]
                return ConsoleMessage(source: entry["source"] as? String ?? "", level: entry["level"] as? String ?? "",
                                      text: entry["text"] as? String ?? "", url: entry["url"] as? String ?? "")
            default:
                return nil
            }
        }
    }

    // MARK: The protocol

    private static func literal(_ text: String) -> String {
        let data = try? JSONSerialization.data(withJSONObject: [text])
        return data.map { String(decoding: $0.dropFirst().dropLast(), as: UTF8.self) } ?? "\"\""
    }

    /// Sends a command (to the tab when `inPage`) and returns its result; events that arrive
    /// meanwhile are kept.
    private func call(_ method: String, _ parameters: [String: Any], inPage: Bool = false) throws -> [String: Any] {
        nextID += 1
        let id = nextID
        var message: [String: Any] = ["id": id, "method": method, "params": parameters]
        if inPage { message["sessionId"] = session }
        commands.write(try JSONSerialization.data(withJSONObject: message) + Data([0]))
        while true {
            let answer = try readMessage()
            guard answer["id"] as? Int == id else {
                events.append(answer)
                continue
            }
            if let error = answer["error"] as? [String: Any] { throw Failure("\(method): \(error["message"] ?? error)") }
            return answer["result"] as? [String: Any] ?? [:]
        }
    }

    private func readMessage() throws -> [String: Any] {
        let deadline = ContinuousClock.now + answerTimeout
        while true {
            if let end = received.firstIndex(of: 0) {
                let text = Data(received[..<end])
                received.removeSubrange(...end)
                guard let message = try JSONSerialization.jsonObject(with: text) as? [String: Any] else {
                    throw Failure("the browser sent something other than an object")
                }
                return message
            }
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw Failure("the browser did not answer within \(answerTimeout)") }
            var descriptor = pollfd(fd: answers, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(left.components.seconds * 1000 + 1, 1000))
            guard poll(&descriptor, 1, milliseconds) >= 0 else { throw Failure("poll: errno \(errno)") }
            guard descriptor.revents != 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = read(answers, &chunk, chunk.count)
            guard count > 0 else { throw Failure("the browser closed its pipe (exited?)") }
            received += chunk[..<count]
        }
    }
}
