import Dispatch
import Foundation
import Runtime
import Synchronization
import Testing

/// Collects what the services did, in the order it happened.
private actor Recorder {
    private(set) var events: [String] = []
    private var waiters: [(event: String, continuation: CheckedContinuation<Void, Never>)] = []

    func record(_ event: String) {
        events.append(event)
        for waiter in waiters where waiter.event == event { waiter.continuation.resume() }
        waiters.removeAll { $0.event == event }
    }

    /// Returns once `event` is recorded; cancellation does not cut the wait short.
    func waitFor(_ event: String) async {
        if events.contains(event) { return }
        await withCheckedContinuation { waiters.append((event, $0)) }
    }

    var starts: Int {
        events.filter { $0.hasSuffix(".started") }.count
    }

    /// Waits (polling briefly) until `count` services have started.
    func waitForStarts(_ count: Int) async {
        while starts < count {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }
}

private struct Boom: Error, Equatable, CustomStringConvertible {
    var description: String { "boom" }
}

/// A pause that cancellation does not cut short, to make slow shutdowns observable.
private func uncancellableDelay(milliseconds: Int) async {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
            continuation.resume()
        }
    }
}

/// A service that runs until cancelled and takes `stopMilliseconds` to stop, or, with
/// `stopsAfter`, stops only once that event is recorded.
private func waitingService(_ name: String, _ recorder: Recorder, stopMilliseconds: Int = 20,
                            stopsAfter event: String? = nil) -> ClosureService {
    ClosureService(name) {
        await recorder.record("\(name).started")
        do {
            try await Task.sleep(for: .seconds(3600))
        } catch {
            await recorder.record("\(name).stopping")
            if let event {
                await recorder.waitFor(event)
            } else {
                await uncancellableDelay(milliseconds: stopMilliseconds)
            }
            await recorder.record("\(name).stopped")
            throw error
        }
    }
}

private let fixedDate = Date(timeIntervalSince1970: 1_795_979_783.123)

private func testLogger(_ sink: MemoryLogSink) -> Logger {
    Logger(label: "test", level: .info, sink: sink, now: { fixedDate })
}

@Suite struct ServiceGroupTests {
    @Test func stopsServicesInReverseOrderWhenOneFinishes() async throws {
        let recorder = Recorder()
        let sink = MemoryLogSink()
        let group = ServiceGroup(
            services: [
                ("a", waitingService("a", recorder)),
                ("b", ClosureService("b") {
                    await recorder.record("b.started")
                    await recorder.waitForStarts(4)
                    await recorder.record("b.finished")
                }),
                ("c", waitingService("c", recorder)),
                ("d", waitingService("d", recorder)),
            ],
            gracefulShutdownSignals: [],
            logger: testLogger(sink)
        )

        try await group.run()

        let events = await recorder.events
        #expect(Set(events.prefix(4)) == ["a.started", "b.started", "c.started", "d.started"])
        #expect(Array(events.dropFirst(4)) == [
            "b.finished",
            "d.stopping", "d.stopped",
            "c.stopping", "c.stopped",
            "a.stopping", "a.stopped",
        ])
        #expect(sink.lines == [
            "ts=2026-11-29T19:16:23.123Z level=notice msg=service.finished label=test service=b",
            "ts=2026-11-29T19:16:23.123Z level=info msg=service_group.shutdown label=test service.count=3",
            "ts=2026-11-29T19:16:23.123Z level=info msg=service_group.stopped label=test",
        ])
    }

    @Test func rethrowsAServiceErrorAfterStoppingTheOthers() async throws {
        let recorder = Recorder()
        let sink = MemoryLogSink()
        let group = ServiceGroup(
            services: [
                ("a", waitingService("a", recorder)),
                ("failing", ClosureService("failing") {
                    await recorder.record("failing.started")
                    await recorder.waitForStarts(3)
                    throw Boom()
                }),
                ("c", waitingService("c", recorder)),
            ],
            gracefulShutdownSignals: [],
            logger: testLogger(sink)
        )

        await #expect(throws: Boom()) {
            try await group.run()
        }

        let events = await recorder.events
        #expect(Array(events.dropFirst(3)) == ["c.stopping", "c.stopped", "a.stopping", "a.stopped"])
        #expect(sink.lines == [
            "ts=2026-11-29T19:16:23.123Z level=error msg=service.failed label=test error=boom service=failing",
            "ts=2026-11-29T19:16:23.123Z level=info msg=service_group.shutdown label=test service.count=2",
        ])
    }

    @Test func shutsDownOnASignal() async throws {
        let recorder = Recorder()
        let sink = MemoryLogSink()
        let group = ServiceGroup(
            services: [
                ("database", waitingService("database", recorder)),
                ("http", waitingService("http", recorder)),
            ],
            gracefulShutdownSignals: [.sigusr1],
            logger: testLogger(sink)
        )

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            await recorder.waitForStarts(2)
            kill(getpid(), SIGUSR1)
            try await tasks.waitForAll()
        }

        let events = await recorder.events
        #expect(Array(events.dropFirst(2)) == ["http.stopping", "http.stopped", "database.stopping", "database.stopped"])
        #expect(sink.lines == [
            "ts=2026-11-29T19:16:23.123Z level=notice msg=service_group.signal label=test signal=SIGUSR1",
            "ts=2026-11-29T19:16:23.123Z level=info msg=service_group.shutdown label=test service.count=2",
            "ts=2026-11-29T19:16:23.123Z level=info msg=service_group.stopped label=test",
        ])
    }

    @Test func cancelsTheRemainingServicesWhenShutdownTimesOut() async throws {
        let recorder = Recorder()
        let sink = MemoryLogSink()
        let group = ServiceGroup(
            services: [
                ("a", waitingService("a", recorder, stopMilliseconds: 0)),
                // Stops only after the timeout has cancelled "a", however long that takes.
                ("stubborn", waitingService("stubborn", recorder, stopsAfter: "a.stopped")),
                ("trigger", ClosureService("trigger") {
                    await recorder.record("trigger.started")
                    await recorder.waitForStarts(3)
                }),
            ],
            gracefulShutdownSignals: [],
            shutdownTimeout: .milliseconds(100),
            logger: testLogger(sink)
        )

        await #expect(throws: ServiceGroupError(code: .shutdownTimedOut, services: ["a", "stubborn"])) {
            try await group.run()
        }

        // The timeout cancelled "a" while "stubborn" was still stopping.
        let events = await recorder.events
        #expect(Array(events.dropFirst(3)) == ["stubborn.stopping", "a.stopping", "a.stopped", "stubborn.stopped"])
        #expect(sink.lines.contains(
            "ts=2026-11-29T19:16:23.123Z level=error msg=service_group.shutdown.timeout label=test services=a,stubborn"
        ))
    }

    @Test func cancellingTheGroupStopsEveryService() async throws {
        let recorder = Recorder()
        let group = ServiceGroup(
            services: [
                ("a", waitingService("a", recorder, stopMilliseconds: 0)),
                ("b", waitingService("b", recorder, stopMilliseconds: 0)),
            ],
            gracefulShutdownSignals: [],
            logger: testLogger(MemoryLogSink())
        )

        let running = Task { try await group.run() }
        await recorder.waitForStarts(2)
        running.cancel()
        await #expect(throws: CancellationError.self) {
            try await running.value
        }

        let events = await recorder.events
        #expect(Set(events.dropFirst(2)) == ["a.stopping", "a.stopped", "b.stopping", "b.stopped"])
    }

    @Test func closureServiceRunsItsBody() async throws {
        let recorder = Recorder()
        let service = ClosureService("once") { await recorder.record("ran") }
        #expect(service.name == "once")
        try await service.run()
        #expect(await recorder.events == ["ran"])
    }
}

@Suite struct UnixSignalsTests {
    @Test func deliversASignalAndCanListenAgainAfterwards() async throws {
        for _ in 0..<2 {
            let signals = UnixSignals.stream([.sigusr2, .sigusr2])
            kill(getpid(), SIGUSR2)
            var iterator = signals.makeAsyncIterator()
            #expect(await iterator.next() == .sigusr2)
        }
    }

    /// Held signals are kept, the first one only, and a stream after them still hears its own.
    @Test func heldSignalsKeepTheFirstAndLetAStreamListenAfterwards() async throws {
        // Listening to SIGUSR1 until it has come, so that its default action (the end of the test
        // process) is never back while it is on its way.
        let second = UnixSignals.stream([.sigusr1])
        var secondArrived = second.makeAsyncIterator()
        do {
            let held = HeldSignals([.sigusr2, .sigusr1])
            #expect(held.first == nil)
            let acted = Mutex(0)
            held.onFirst { acted.withLock { $0 += 1 } }
            kill(getpid(), SIGUSR2)
            let deadline = ContinuousClock.now + .seconds(10)
            // The action runs after `first` is set, outside the lock.
            while acted.withLock({ $0 }) == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
            kill(getpid(), SIGUSR1)
            #expect(await secondArrived.next() == .sigusr1)
            #expect(held.first == .sigusr2)
            #expect(acted.withLock { $0 } == 1)
            // Set after the signal came: it runs at once.
            held.onFirst { acted.withLock { $0 += 1 } }
            #expect(acted.withLock { $0 } == 2)
        }
        let signals = UnixSignals.stream([.sigusr2])
        kill(getpid(), SIGUSR2)
        var iterator = signals.makeAsyncIterator()
        #expect(await iterator.next() == .sigusr2)
    }

    /// Ignored for good while a stream listens: the stream still hears it (Dispatch's handler
    /// stays), and once the stream ends the signal is ignored, not back to its default.
    @Test func aSignalIgnoredForGoodReachesItsListenerThenStaysIgnored() async throws {
        let signals = UnixSignals.stream([.sigwinch])
        UnixSignals.ignoreForGood(.sigwinch)
        let heard = Mutex(false)
        let listening = Task {
            for await _ in signals { heard.withLock { $0 = true } }
        }
        kill(getpid(), SIGWINCH)
        let deadline = ContinuousClock.now + .seconds(10)
        while !heard.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
        #expect(heard.withLock { $0 })
        listening.cancel()
        await listening.value
        #expect(UnixSignals.disposition(of: .sigwinch) == .ignored)
    }

    @Test func namesAndNumbers() {
        #expect(UnixSignal.sigterm.description == "SIGTERM")
        #expect(UnixSignal.sigterm.number == SIGTERM)
        #expect(UnixSignal.sigusr1.number == SIGUSR1)
    }
}
