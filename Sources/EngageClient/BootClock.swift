import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The device's time since boot, which no one sets: beside the wall clock it shows how far the
/// wall clock was set between two moments of one boot (`RecordingClock`).
struct BootClock: Sendable {
    /// This boot's identity; nil where the system does not say (then nothing is corrected).
    var bootID: @Sendable () -> String?
    /// Seconds since boot, time asleep included; nil when the system does not answer.
    var sinceBoot: @Sendable () -> TimeInterval?

    /// The system's: `kern.bootsessionuuid` and `CLOCK_MONOTONIC` (which counts sleep on Apple's
    /// systems), or Linux's `boot_id` and `CLOCK_BOOTTIME`.
    static let system = BootClock(bootID: { systemBootID }, sinceBoot: {
        var time = timespec()
        #if canImport(Darwin)
        let clock = CLOCK_MONOTONIC
        #else
        let clock = CLOCK_BOOTTIME
        #endif
        guard clock_gettime(clock, &time) == 0 else { return nil }
        return TimeInterval(time.tv_sec) + TimeInterval(time.tv_nsec) / 1e9
    })

    /// Read once: a boot's identity does not change while a process lives.
    private static let systemBootID: String? = {
        #if canImport(Darwin)
        var size = 0
        guard sysctlbyname("kern.bootsessionuuid", nil, &size, nil, 0) == 0, size > 1, size <= 128 else { return nil }
        var buffer = [CChar](repeating: 0, count: size)
        guard sysctlbyname("kern.bootsessionuuid", &buffer, &size, nil, 0) == 0 else { return nil }
        let text = String(cString: buffer)
        #else
        guard let data = FileManager.default.contents(atPath: "/proc/sys/kernel/random/boot_id") else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #endif
        return RecordingClock.isValidBootID(text) ? text : nil
    }()
}
