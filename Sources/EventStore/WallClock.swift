import EngageCore
import Runtime

extension TimeSource {
    /// The wall clock as a timestamp. Here because this is the lowest module that knows both the
    /// time source (Runtime) and the domain's `Timestamp` (EngageCore).
    public var wallClock: Timestamp { Timestamp(microsecondsSinceEpoch: wallClockMicroseconds) }
}
