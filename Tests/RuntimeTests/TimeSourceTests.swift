import Dispatch
import Foundation
import Runtime
import Synchronization
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(1)))
struct TimeSourceTests {
    @Test func systemTimeWaitsForASignalOrTheDeadline() {
        let time = SystemTime()
        let semaphore = DispatchSemaphore(value: 0)
        #expect(time.wait(for: semaphore, until: time.now - .seconds(1)) == false)
        semaphore.signal()
        #expect(time.wait(for: semaphore, until: time.now + .seconds(600)) == true)
        let wall = Int64(Date().timeIntervalSince1970 * 1_000_000)
        #expect(abs(time.wallClockMicroseconds - wall) < 60_000_000, "the wall clock is the system's")
    }

    @Test func aManualSleepEndsWhenTimeIsMovedPastItsDeadline() async throws {
        let time = ManualTime()
        let sleeper = Task { try await time.sleep(for: .seconds(1)) }
        try await pollUntil { time.sleepers == 1 }
        time.advance(by: .milliseconds(999))
        #expect(time.sleepers == 1)
        time.advance(by: .milliseconds(1))
        try await sleeper.value
        #expect(time.sleepers == 0)
        // A deadline already passed does not sleep at all.
        try await time.sleep(until: time.now)
    }

    @Test func aCancelledManualSleepThrowsAndLeavesNoSleeper() async throws {
        let time = ManualTime()
        let sleeper = Task { try await time.sleep(for: .seconds(60)) }
        try await pollUntil { time.sleepers == 1 }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(time.sleepers == 0)
    }

    @Test func aManualWaitEndsOnASignalOrWhenTimeIsMovedPastItsDeadline() async throws {
        let time = ManualTime()
        let semaphore = DispatchSemaphore(value: 0)
        // Waits block their thread: on threads of their own, never the cooperative pool's.
        let timedOut = Task { try await offPool { time.wait(for: semaphore, until: time.now + .seconds(5)) } }
        try await pollUntil { time.sleepers == 1 }
        time.advance(by: .seconds(5))
        #expect(try await timedOut.value == false)
        let signalled = Task { try await offPool { time.wait(for: semaphore, until: time.now + .seconds(5)) } }
        try await pollUntil { time.sleepers == 1 }
        semaphore.signal()
        #expect(try await signalled.value == true)
        #expect(time.sleepers == 0)
    }

    @Test func theWallClockMovesWithTimeOrIsSetAlone() {
        let time = ManualTime(wallClock: .init(microsecondsSinceEpoch: 1_000_000))
        let start = time.now
        time.advance(by: .seconds(2))
        #expect(time.wallClockMicroseconds == 3_000_000)
        time.setWallClock(.init(microsecondsSinceEpoch: 0))
        #expect(time.wallClockMicroseconds == 0)
        #expect(time.now - start == .seconds(2))
    }
}
