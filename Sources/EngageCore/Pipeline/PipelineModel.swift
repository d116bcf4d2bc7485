/// A deterministic model of what a notification service extension does with a push.
///
/// Timeline, in milliseconds from launch (all figures from `PipelineLimits` and the input):
/// 1. Read the payload and set up: `processingOverheadMS`. The strategy picks a variant.
///    No variant: hand over plain at once (`not_requested`).
/// 2. Get the variant: from the cache when it is cached within the TTL (`cacheReadMS`, no bytes
///    transferred), else download it (`latency + bytes / throughput`). No network: plain,
///    `download_failed`, after the latency.
///    A download of a format the system does not take for the kind, or over the kind's size cap,
///    is refused from the response's headers (its type and `Content-Length`), before the body:
///    plain as soon as they arrive (`unsupported_format`, `too_large`), nothing transferred.
/// 3. The extension's own download timeout, if set, fires first: plain, `timeout`, at that moment.
/// 4. Not ready by `deadlineMS` (budget minus fallback margin): the system calls
///    `serviceExtensionTimeWillExpire` and the extension hands over plain at the deadline:
///    `timeout`, `timeWillExpire`, bytes transferred as far as the download got.
/// 5. Validate as the extension and `UNNotificationAttachment` would, in this order: format for
///    the kind (`unsupported_format`), size cap for the kind (`too_large`), no bytes at all
///    (`download_failed`: the extension keeps no empty file), memory limit (`too_large`).
///    A failure hands over plain as soon as the media arrived.
/// 6. Attach and hand over rich content: `attached`.
///
/// `run` allocates nothing and runs in well under a microsecond.
public enum PipelineModel {
    /// The outcome of one push under `strategy`.
    public static func run(_ input: PipelineInput, strategy: any AttachmentStrategyModel,
                           limits: PipelineLimits = PipelineLimits()) -> PipelineOutcome {
        run(input, choice: strategy.choose(input, limits: limits), limits: limits)
    }

    /// The outcome of one push once the variant has been chosen.
    public static func run(_ input: PipelineInput, choice: VariantChoice, limits: PipelineLimits) -> PipelineOutcome {
        let start = Double(limits.processingOverheadMS)
        guard case .variant(let index) = choice else {
            return PipelineOutcome(presentation: .plain, outcome: .notRequested, failure: nil,
                                   handoffMS: limits.processingOverheadMS, bytesTransferred: 0,
                                   variantIndex: nil, source: nil, downloadMS: nil, timeWillExpire: false)
        }
        precondition(input.media.indices.contains(index), "the strategy chose a variant that was not offered")
        let variant = input.media[index]
        let network = input.network
        let deadline = Double(limits.deadlineMS)

        func plain(_ failure: PipelineFailure, at time: Double, bytes: Int, source: MediaSource?,
                   downloadMS: Double?) -> PipelineOutcome {
            PipelineOutcome(presentation: .plain, outcome: failure.outcome, failure: failure,
                            handoffMS: milliseconds(time), bytesTransferred: bytes, variantIndex: index,
                            source: source, downloadMS: downloadMS.map(milliseconds),
                            timeWillExpire: failure == .deadlineExpired)
        }
        /// Bytes received after `elapsed` ms of downloading, at most the whole variant.
        func received(after elapsed: Double) -> Int {
            let bytes = (elapsed - network.latencyMS) * network.throughputBytesPerSecond / 1000
            return bytes <= 0 ? 0 : min(variant.bytes, Int(bytes))
        }

        let fetchMS: Double
        let source: MediaSource
        if input.isCacheHit(index, limits: limits) {
            source = .cache
            fetchMS = Double(limits.cacheReadMS)
        } else {
            source = .network
            guard network.throughputBytesPerSecond > 0 else {
                return plain(.networkUnavailable, at: min(start + network.latencyMS, deadline), bytes: 0,
                             source: .network, downloadMS: nil)
            }
            // Reported as the extension reports it: no source and no download time (nothing was
            // downloaded), so that the replay's network estimate never takes the variant's size
            // over the latency for a completed download (11 MB in 120 ms: 92 MB/s).
            if let refusal = headerRefusal(variant, limits: limits), start + network.latencyMS <= deadline {
                return plain(refusal, at: start + network.latencyMS, bytes: 0, source: nil, downloadMS: nil)
            }
            fetchMS = network.downloadMS(bytes: variant.bytes)
            if let timeout = limits.downloadTimeoutMS.map(Double.init), fetchMS > timeout, start + timeout <= deadline {
                return plain(.downloadTimedOut, at: start + timeout, bytes: received(after: timeout),
                             source: .network, downloadMS: timeout)
            }
        }

        let ready = start + fetchMS
        guard ready <= deadline else {
            let elapsed = max(0, deadline - start)
            return plain(.deadlineExpired, at: deadline, bytes: source == .network ? received(after: elapsed) : 0,
                         source: source, downloadMS: elapsed)
        }
        let transferred = source == .network ? variant.bytes : 0
        if let failure = attachFailure(variant, limits: limits) {
            return plain(failure, at: ready, bytes: transferred, source: source, downloadMS: fetchMS)
        }
        return PipelineOutcome(presentation: .rich, outcome: .attached, failure: nil,
                               handoffMS: milliseconds(ready), bytesTransferred: transferred,
                               variantIndex: index, source: source, downloadMS: milliseconds(fetchMS),
                               timeWillExpire: false)
    }

    /// Why the extension refuses a download from its response's headers (step 2): a format the
    /// system does not take for the kind, or a size over the kind's cap; nil otherwise.
    static func headerRefusal(_ variant: MediaVariant, limits: PipelineLimits, knowingFormat: Bool = true) -> PipelineFailure? {
        if knowingFormat, !limits.supportedFormats.supports(variant.format, for: variant.kind) { return .unsupportedFormat }
        if let cap = limits.sizeCapBytes[variant.kind], variant.bytes > cap { return .exceedsSizeCap }
        return nil
    }

    /// Why the system would refuse `variant` as an attachment (step 5), or nil when it accepts it:
    /// what the extension refuses from the headers, an empty file, then the memory limit.
    public static func attachFailure(_ variant: MediaVariant, limits: PipelineLimits, knowingFormat: Bool = true) -> PipelineFailure? {
        if let refusal = headerRefusal(variant, limits: limits, knowingFormat: knowingFormat) { return refusal }
        if variant.bytes <= 0 { return .emptyMedia }
        let factor = limits.memoryFactors[variant.kind] ?? 0
        if Double(variant.bytes) * factor > Double(limits.memoryLimitBytes) { return .exceedsMemoryLimit }
        return nil
    }

    /// Predicted time from launch until the variant at `index` is ready to attach, with the time
    /// spent getting it multiplied by `safetyFactor`; infinite when it cannot be downloaded.
    public static func predictedReadyMS(_ index: Int, in input: PipelineInput, limits: PipelineLimits,
                                        safetyFactor: Double = 1) -> Double {
        let fetch = input.isCacheHit(index, limits: limits)
            ? Double(limits.cacheReadMS)
            : input.network.downloadMS(bytes: input.media[index].bytes)
        return Double(limits.processingOverheadMS) + safetyFactor * fetch
    }

    /// Whether the variant at `index` is predicted to be attached: accepted by the system and
    /// ready by the deadline (also before the download timeout) with `safetyFactor` applied.
    /// Without `knowingFormat` its format is not judged: the extension choosing before it
    /// downloads knows a rendition's kind and size from the push, never its format (it tried an
    /// original of a format the system refuses, where the model took the thumbnail instead).
    public static func predictsAttached(_ index: Int, in input: PipelineInput, limits: PipelineLimits,
                                        safetyFactor: Double = 1, knowingFormat: Bool = true) -> Bool {
        guard attachFailure(input.media[index], limits: limits, knowingFormat: knowingFormat) == nil else { return false }
        let ready = predictedReadyMS(index, in: input, limits: limits, safetyFactor: safetyFactor)
        if let timeout = limits.downloadTimeoutMS, !input.isCacheHit(index, limits: limits),
           ready - Double(limits.processingOverheadMS) > Double(timeout) {
            return false
        }
        return ready <= Double(limits.deadlineMS)
    }

    static func milliseconds(_ value: Double) -> Int {
        Int(value.rounded())
    }
}
