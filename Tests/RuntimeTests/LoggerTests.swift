import Foundation
import Runtime
import Synchronization
import Testing

@Suite struct LoggerTests {
    let sink = MemoryLogSink()
    let date = Date(timeIntervalSince1970: 1_795_979_783.123)

    func logger(_ format: LogFormat = .logfmt, level: LogLevel = .info) -> Logger {
        Logger(label: "engage.http", level: level, format: format, sink: sink, now: { [date] in date })
    }

    @Test func logfmtLine() {
        logger().with(["request.id": "r-1"]).info("http.request", ["event.count": "100", "batch.ms": "3.2"])
        #expect(sink.lines == [
            "ts=2026-11-29T19:16:23.123Z level=info msg=http.request label=engage.http batch.ms=3.2 event.count=100 request.id=r-1",
        ])
    }

    @Test func logfmtQuotesAndEscapesValues() {
        logger().warning("value.check", [
            "a.space": "two words",
            "b.quote": #"say "hi""#,
            "c.newline": "line1\nline2\r\tend",
            "d.backslash": #"C:\temp"#,
            "e.empty": "",
            "f.equals": "k=v",
            "g.control": "bell\u{07}",
            "h.unicode": "grüße",
            "bad key=x": "1",
        ])
        #expect(sink.lines == [
            "ts=2026-11-29T19:16:23.123Z level=warning msg=value.check label=engage.http "
                + #"a.space="two words" b.quote="say \"hi\"" bad_key_x=1 c.newline="line1\nline2\r\tend" "#
                + #"d.backslash="C:\\temp" e.empty="" f.equals="k=v" g.control="bell\u0007" h.unicode=grüße"#,
        ])
    }

    @Test func jsonLine() {
        logger(.json).with(["request.id": "r-1"]).error("http.failed", [
            "error": "bad \"input\"\n\\",
            "msg": "shadowed",
        ])
        #expect(sink.lines == [
            #"{"ts":"2026-11-29T19:16:23.123Z","level":"error","msg":"http.failed","label":"engage.http","#
                + #""_msg":"shadowed","error":"bad \"input\"\n\\","request.id":"r-1"}"#,
        ])
    }

    @Test func levelThresholdSkipsLinesAndTheirMetadata() {
        let evaluated = Atomic<Int>(0)
        func metadata() -> [String: String] {
            evaluated.wrappingAdd(1, ordering: .relaxed)
            return ["k": "v"]
        }
        let logger = logger(level: .notice)
        logger.trace("a", metadata())
        logger.debug("b", metadata())
        logger.info("c", metadata())
        logger.notice("d", metadata())
        logger.error("e")
        #expect(evaluated.load(ordering: .relaxed) == 1)
        #expect(sink.lines == [
            "ts=2026-11-29T19:16:23.123Z level=notice msg=d label=engage.http k=v",
            "ts=2026-11-29T19:16:23.123Z level=error msg=e label=engage.http",
        ])
        #expect(logger.isEnabled(.warning))
        #expect(!logger.isEnabled(.info))
    }

    @Test func perCallMetadataWinsOverTheLoggers() {
        let logger = logger().with(["k": "logger", "keep": "1"]).with(["k": "second"])
        #expect(logger.metadata == ["k": "second", "keep": "1"])
        logger.info("m", ["k": "call"])
        #expect(sink.lines == ["ts=2026-11-29T19:16:23.123Z level=info msg=m label=engage.http k=call keep=1"])
    }

    @Test(arguments: [
        (0.0, "1970-01-01T00:00:00.000Z"),
        (0.9999, "1970-01-01T00:00:00.999Z"),
        (-0.5, "1969-12-31T23:59:59.500Z"),
        (951_782_400.007, "2000-02-29T00:00:00.007Z"),
    ])
    func timestamps(seconds: Double, expected: String) {
        Logger(label: "t", sink: sink, now: { Date(timeIntervalSince1970: seconds) }).info("x")
        #expect(sink.lines == ["ts=\(expected) level=info msg=x label=t"])
    }

    @Test func fileDescriptorSinkWritesWholeLines() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let sink = FileDescriptorLogSink(fileDescriptor: fds[1])
        sink.write("first line")
        sink.write("second")
        close(fds[1])

        let data = FileHandle(fileDescriptor: fds[0], closeOnDealloc: false).readDataToEndOfFile()
        #expect(String(decoding: data, as: UTF8.self) == "first line\nsecond\n")
    }

    @Test func levelsAndFormatsParseFromText() {
        #expect(LogLevel(rawValue: "warning") == .warning)
        #expect(LogLevel.allCases.sorted() == [.trace, .debug, .info, .notice, .warning, .error])
        #expect(LogFormat(rawValue: "json") == .json)
    }

    @Test func stopwatchText() {
        #expect(Stopwatch.millisecondsText(.microseconds(3_249)) == "3.2")
        #expect(Stopwatch.millisecondsText(.microseconds(3_250)) == "3.3")
        #expect(Stopwatch.millisecondsText(.seconds(2)) == "2000.0")
        #expect(Duration.milliseconds(1500).milliseconds == 1500)
    }
}
