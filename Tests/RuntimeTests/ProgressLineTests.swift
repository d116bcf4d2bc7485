import Synchronization
import Testing

@testable import Runtime

/// A terminal that records what is written and a clock moved by hand.
private final class FakeTerminal: Sendable {
    private let state = Mutex((written: [String](), now: ContinuousClock.now))
    let start: ContinuousClock.Instant

    init() { start = state.withLock { $0.now } }

    func terminal(isTerminal: Bool = true) -> ProgressLine.Terminal {
        ProgressLine.Terminal(isTerminal: isTerminal, write: { text in self.state.withLock { $0.written.append(text) } },
                              now: { self.state.withLock { $0.now } })
    }

    func advance(_ duration: Duration) { state.withLock { $0.now += duration } }
    var written: [String] { state.withLock { $0.written } }
}

@Suite struct ProgressLineTests {
    static let erase = "\r\u{1B}[2K"

    @Test func drawsInPlaceAtMostOncePerInterval() {
        let fake = FakeTerminal()
        let progress = ProgressLine("rebuild", terminal: fake.terminal())
        #expect(progress.isActive)
        fake.advance(.milliseconds(1500))
        progress.update(40_000, of: 100_000, "events")
        progress.update(41_000, of: 100_000, "events")  // 0 ms later: not drawn
        fake.advance(.milliseconds(99))
        progress.update(42_000, of: 100_000, "events")  // 99 ms: not drawn
        fake.advance(.milliseconds(1))
        progress.update(1_234_567, of: nil, "events sent")
        fake.advance(.milliseconds(250))
        progress.update("round 2/3, psql \\copy")
        #expect(fake.written == [
            Self.erase + "rebuild: 40,000/100,000 events (40%), 1.5 s",
            Self.erase + "rebuild: 1,234,567 events sent, 1.6 s",
            Self.erase + "rebuild: round 2/3, psql \\copy, 1.9 s",
        ])
    }

    @Test func finishErasesTheLineAndLaterUpdatesDrawNothing() {
        let fake = FakeTerminal()
        let progress = ProgressLine("simulate", terminal: fake.terminal())
        progress.update(5, of: 10, "notifications")
        progress.finish()
        fake.advance(.seconds(1))
        progress.update(6, of: 10, "notifications")
        progress.finish()
        #expect(fake.written == [Self.erase + "simulate: 5/10 notifications (50%), 0.0 s", Self.erase])
    }

    @Test func nothingIsWrittenWhenTheOutputIsNoTerminal() {
        let fake = FakeTerminal()
        let progress = ProgressLine("bench append", terminal: fake.terminal(isTerminal: false))
        #expect(!progress.isActive)
        progress.update(1, of: 2, "rounds")
        progress.update("round 1/2")
        progress.print("round 1: 123 events/s")
        progress.finish()
        #expect(fake.written.isEmpty)
    }

    @Test func printingErasesTheLineFirstAndTheNextUpdateDrawsAgainAtOnce() {
        let fake = FakeTerminal()
        let progress = ProgressLine("bench project", terminal: fake.terminal())
        progress.update("round 1/3")
        progress.print("round 1: caught up")
        progress.update("round 2/3")  // at once, though within the interval: the line was erased
        #expect(fake.written == [Self.erase + "bench project: round 1/3, 0.0 s", Self.erase, Self.erase + "bench project: round 2/3, 0.0 s"])
    }

    @Test(arguments: [(0, "0"), (999, "999"), (1000, "1,000"), (1_234_567, "1,234,567"), (-45_000, "-45,000")])
    func countsAreGroupedByThousands(value: Int, text: String) {
        #expect(ProgressLine.grouped(value) == text)
    }
}
