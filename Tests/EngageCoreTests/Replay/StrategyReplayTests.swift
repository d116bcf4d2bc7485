import Foundation
import Testing
@testable import EngageCore

/// Strategy replays of hand-made logs whose outcomes are worked out on paper. Default limits: 50 ms
/// overhead, deadline 28,000 ms, the extension's download timeout 25,000 ms, cache TTL 86,400 s;
/// a device without history gets the typical Wi-Fi profile (3,000,000 B/s, 40 ms).
@Suite struct StrategyReplayTests {
    /// 1,000,000 bytes in 10,040 ms: with the typical 40 ms latency, 100,000 B/s.
    static let slowDownload = ReplayLog.attached(1_000_000, downloadMS: 10_040)
    /// A 9,000,000-byte image: 3,090 ms at the typical Wi-Fi speed (attached), 90,090 ms at
    /// 100,000 B/s (past the deadline: timeout).
    static let bigPhoto = ReplayLog.photo(original: 9_000_000, thumbnail: nil)
    static let counted = StrategyReplaySettings(categories: ["counted"])

    @Test func aDeliveryIsPredictedFromEarlierDeliveriesOfItsDevice() {
        var log = ReplayLog()
        log.push("a", category: "other", at: 0, media: ReplayLog.photo(original: 1_000_000, thumbnail: nil),
                 delivered: Self.slowDownload)
        log.push("b", category: "counted", at: 100, media: Self.bigPhoto,
                 delivered: ReplayLog.plain(.timeout, bytes: 9_000_000, processingMS: 28_000))
        let result = log.replay(FullStrategy(), settings: Self.counted)
        #expect(result.counts.deliveries == 1)
        #expect(result.counts.strategyThatRan.outcomes == [.timeout: 1])
        #expect(result.counts.strategyThatRan.failures == [.downloadTimedOut: 1])
        #expect(result.counts.agreement.total == 1 && result.counts.agreement.agreed == 1)
        // The extension's download timeout, 25,000 ms into a 100,000 B/s download after 40 ms of latency.
        #expect(result.counts.strategyThatRan.bytesTransferred == 2_496_000)
    }

    @Test func laterDeliveriesAreNeverUsed() {
        var log = ReplayLog()
        log.push("b", category: "counted", at: 100, media: Self.bigPhoto,
                 delivered: ReplayLog.plain(.timeout, bytes: 9_000_000, processingMS: 28_000))
        // A slow download after b: peeking at it would predict b's timeout.
        log.push("c", category: "other", at: 200, media: ReplayLog.photo(original: 1_000_000, thumbnail: nil),
                 delivered: Self.slowDownload)
        let result = log.replay(FullStrategy(), settings: Self.counted)
        #expect(result.counts.strategyThatRan.outcomes == [.attached: 1])
        #expect(result.counts.strategyThatRan.handoffPercentiles?.p50 == 3_090)
        #expect(result.counts.agreement.total == 1 && result.counts.agreement.agreed == 0)
        #expect(result.counts.agreement.count(recorded: .timeout, predicted: .attached) == 1)
    }

    @Test func aDeliveryLoggedBeforeItsSentMeetsTheDeviceAsItWasAtDelivery() {
        var log = ReplayLog()
        log.push("a", category: "other", at: 0, media: ReplayLog.photo(original: 1_000_000, thumbnail: nil),
                 delivered: Self.slowDownload)
        // The device's clock runs behind the server's: b's delivery precedes its sending.
        log.add("b", category: "counted", at: 100,
                .delivered(ReplayLog.plain(.timeout, bytes: 9_000_000, processingMS: 28_000)))
        // A fast download in between must not count for b.
        log.push("c", category: "other", at: 100.5, media: ReplayLog.photo(original: 3_000_000, thumbnail: nil),
                 delivered: ReplayLog.attached(3_000_000, downloadMS: 100))
        log.add("b", category: "counted", at: 102, .sent(SentDetails(media: Self.bigPhoto, strategy: .full)))
        let result = log.replay(FullStrategy(), settings: Self.counted)
        #expect(result.counts.deliveries == 1)
        #expect(result.counts.deliveredWithoutSent == 0)
        #expect(result.counts.strategyThatRan.outcomes == [.timeout: 1])
        #expect(result.counts.agreement.agreed == 1)
    }

    @Test func theCacheServesMediaReceivedWithinTheTTL() {
        let media = ReplayLog.photo(original: 2_000_000)
        var log = ReplayLog()
        // a: full downloads and attaches the original (typical Wi-Fi: 40 + 667 ms).
        log.push("a", at: 0, media: media, delivered: ReplayLog.attached(2_000_000, downloadMS: 707))
        // b, an hour later: `cached` finds the original in the cache.
        log.push("b", at: 3_600, media: media, strategy: .cached,
                 delivered: ReplayLog.attached(2_000_000, downloadMS: 2, source: .cache, strategy: .cached))
        // c, 25 hours after a: the copy has expired, so `cached` downloads the thumbnail.
        log.push("c", at: 90_000, media: media, strategy: .cached,
                 delivered: ReplayLog.attached(40_000, downloadMS: 53, variant: "thumbnail", strategy: .cached))
        // d: a cache read no earlier delivery explains (the app prefetched it).
        log.push("d", at: 90_100, media: ReplayLog.photo(original: 777_777, thumbnail: nil), strategy: .cached,
                 delivered: ReplayLog.attached(777_777, downloadMS: 2, source: .cache, strategy: .cached))
        let result = log.replay(CachedStrategy())

        #expect(result.counts.agreement.total == 4)
        #expect(result.counts.agreement.agreed == 4)
        #expect(result.counts.strategyThatRan.cacheReads == 1)
        #expect(result.counts.unexplainedCacheReads == 1)
        // The replayed `cached` strategy builds its own cache: it downloads a's thumbnail, reads
        // it back for b, downloads c's thumbnail again (expired) and d's original (never received).
        #expect(result.counts.replayed.cacheReads == 1)
        #expect(result.counts.replayed.bytesTransferred == 40_000 + 0 + 40_000 + 777_777)
        #expect(result.counts.recorded.cacheReads == 2)
    }

    @Test func agreementIsCountedPerDeliveryAndStrategy() {
        var log = ReplayLog()
        // Text only: every strategy hands over plain at once.
        log.push("text", at: 0, media: [], delivered: ReplayLog.plain(.notRequested))
        // 12,000,000 bytes at the typical 3 MB/s, then refused by the 10 MiB image cap.
        log.push("huge", at: 10, media: ReplayLog.photo(original: 12_000_000, thumbnail: nil),
                 delivered: DeliveredDetails(attachment: DeliveredAttachment(kind: .noAttachment, format: .jpeg, bytes: 12_000_000,
                                                                             source: .network, downloadMS: 4_040, variant: "original"),
                                             outcome: .tooLarge, processingMS: 4_090, timeWillExpire: false,
                                             network: .wifi, strategy: .full))
        // The model expects this one attached; the device timed out.
        log.push("slow", at: 20, media: ReplayLog.photo(original: 500_000, thumbnail: nil),
                 delivered: ReplayLog.plain(.timeout, bytes: 500_000, processingMS: 28_000))
        log.push("none", at: 30, media: ReplayLog.photo(original: 500_000), strategy: .noAttachment,
                 delivered: ReplayLog.plain(.notRequested, strategy: .noAttachment))
        // No strategy logged anywhere: replayed, but not in the agreement.
        log.push("unknown", at: 40, media: ReplayLog.photo(original: 500_000), strategy: nil,
                 delivered: ReplayLog.attached(500_000, downloadMS: 207, strategy: nil))
        let result = log.replay(ThumbnailStrategy())

        #expect(result.counts.deliveries == 5)
        #expect(result.counts.withoutStrategy == 1)
        #expect(result.counts.agreement.total == 4)
        #expect(result.counts.agreement.agreed == 3)
        #expect(result.counts.agreement.count(recorded: .notRequested, predicted: .notRequested) == 2)
        #expect(result.counts.agreement.count(recorded: .tooLarge, predicted: .tooLarge) == 1)
        #expect(result.counts.agreement.count(recorded: .timeout, predicted: .attached) == 1)
        #expect(result.counts.agreementByStrategy[.full]?.total == 3)
        #expect(result.counts.agreementByStrategy[.full]?.agreed == 2)
        #expect(result.counts.agreementByStrategy[.noAttachment]?.agreed == 1)
        #expect(result.counts.strategyThatRan.failures == [.exceedsSizeCap: 1])
        // Thumbnails for the two pushes offering one, the original for those without. Both offer
        // the same thumbnail (same size and dimensions): the second reads it from the cache.
        #expect(result.counts.replayed.outcomes == [.notRequested: 1, .tooLarge: 1, .attached: 3])
        // The 12 MB original is refused from its Content-Length, before its body.
        #expect(result.counts.replayed.bytesTransferred == 0 + 500_000 + 40_000 + 0)
        #expect(result.counts.replayed.cacheReads == 1)
        #expect(result.counts.recorded.outcomes == [.notRequested: 2, .tooLarge: 1, .timeout: 1, .attached: 1])
    }

    @Test func countingWindowAndCategoriesLeaveOtherNotificationsOut() {
        var log = ReplayLog()
        log.push("early", at: 0, media: [], delivered: ReplayLog.plain(.notRequested))
        log.push("late", at: 7_200, media: [], delivered: ReplayLog.plain(.notRequested))
        log.push("late-other", category: "news", at: 7_300, media: [], delivered: ReplayLog.plain(.notRequested))
        let settings = StrategyReplaySettings(countFrom: ReplayLog.start.adding(microseconds: 3_600_000_000),
                                              categories: ["photo"])
        let result = log.replay(FullStrategy(), settings: settings)
        #expect(result.counts.notifications == 1)
        #expect(result.counts.deliveries == 1)
        #expect(result.counts.events == 6)
        #expect(result.categories.map(\.name) == ["photo"])
    }

    /// Ten devices of an experiment: control (`full`, p 0.5) and treatment (`none`, p 0.5). Four
    /// control pushes are shown rich and two of them opened; six treatment pushes plain, one opened.
    static func experimentLog() -> ReplayLog {
        var log = ReplayLog()
        for n in 0..<10 {
            let isControl = n < 4
            let tag = ExperimentTag(id: "exp", arm: isControl ? "control" : "treatment", probability: 0.5)
            let strategy: AttachmentStrategy = isControl ? .full : .noAttachment
            let device = "device-\(n)"
            log.push("n\(n)", device: device, at: Double(n), media: ReplayLog.photo(original: 300_000, thumbnail: nil),
                     strategy: strategy, tag: tag,
                     delivered: isControl ? ReplayLog.attached(300_000, downloadMS: 140)
                                          : ReplayLog.plain(.notRequested, strategy: .noAttachment))
            log.add("n\(n)", device: device, at: Double(n) + 2, tag: tag,
                    .displayed(DisplayedDetails(presentation: isControl ? .rich : .plain,
                                                attachmentKind: isControl ? .image : .noAttachment)))
            if n == 0 || n == 1 || n == 4 {
                log.add("n\(n)", device: device, at: Double(n) + 3, tag: tag,
                        .action(ActionDetails(actionID: ActionDetails.openIdentifier)))
            }
        }
        return log
    }

    @Test func inversePropensityOnAHandComputedExperiment() throws {
        let result = Self.experimentLog().replay(FullStrategy())
        let experiment = try #require(result.experiments.first)
        #expect(result.experiments.count == 1)
        #expect(experiment.problem == nil)
        #expect(experiment.arms.map(\.strategy) == [.full, .noAttachment])
        let open = try #require(experiment.estimates.first { $0.metric == .open })
        // Full is chosen by control only (P = 0.5): control pushes weigh 2, treatment pushes 0.
        // IPS = 2 x 2 opens / 10 = 0.4; SNIPS = 4 / (2 x 4) = 0.5.
        #expect(open.units == 10)
        #expect(open.matched == 4)
        #expect(open.support == 1)
        #expect(abs(open.ips - 0.4) < 1e-12)
        #expect(abs(try #require(open.snips) - 0.5) < 1e-12)
        // Var(IPS) = (sum (w y)^2 / N - IPS^2) / N = (0.8 - 0.16) / 10; z = 1.959964.
        let half = 1.959963984540054 * (0.064).squareRoot()
        #expect(abs(open.ipsInterval.upper - (0.4 + half)) < 1e-9)
        #expect(open.ipsInterval.lower == 0)
        // SNIPS: sum w^2 (y - 0.5)^2 / (sum w)^2 = 4 x 4 x 0.25 / 64.
        let snipsHalf = 1.959963984540054 * 0.25
        #expect(abs(try #require(open.snipsInterval).lower - (0.5 - snipsHalf)) < 1e-9)
    }

    @Test func otherStrategiesMatchTheArmsThatChooseAlike() throws {
        // Thumbnail picks the original here (no thumbnail offered), as full does: same support as full.
        let thumbnail = try #require(Self.experimentLog().replay(ThumbnailStrategy()).experiments.first)
        #expect(thumbnail.estimates.first?.matched == 4)
        // None matches the treatment arm: weight 2 on six pushes with one open.
        let none = try #require(Self.experimentLog().replay(NoAttachmentStrategy()).experiments.first)
        let open = try #require(none.estimates.first { $0.metric == .open })
        #expect(open.matched == 6)
        #expect(abs(open.ips - 0.2) < 1e-12)
        #expect(abs(try #require(open.snips) - 1.0 / 6) < 1e-12)
    }

    /// Control (`full`) and treatment (`none`) each get two photos with thumbnails and one text-only
    /// push; only control's text-only push is opened.
    static func partialSupportLog(withText: Bool) -> ReplayLog {
        var log = ReplayLog()
        for n in 0..<(withText ? 6 : 4) {
            let isControl = n % 2 == 0
            let tag = ExperimentTag(id: "exp", arm: isControl ? "control" : "treatment", probability: 0.5)
            let strategy: AttachmentStrategy = isControl ? .full : .noAttachment
            let media = n < 4 ? ReplayLog.photo(original: 300_000) : []
            let rich = isControl && !media.isEmpty
            log.push("n\(n)", device: "device-\(n)", at: Double(n), media: media, strategy: strategy, tag: tag,
                     delivered: rich ? ReplayLog.attached(300_000, downloadMS: 140)
                                     : ReplayLog.plain(.notRequested, strategy: strategy))
            log.add("n\(n)", device: "device-\(n)", at: Double(n) + 2, tag: tag,
                    .displayed(DisplayedDetails(presentation: rich ? .rich : .plain, attachmentKind: rich ? .image : .noAttachment)))
            if n == 4 {
                log.add("n\(n)", device: "device-\(n)", at: Double(n) + 3, tag: tag,
                        .action(ActionDetails(actionID: ActionDetails.openIdentifier)))
            }
        }
        return log
    }

    @Test func estimatesDescribeOnlyTheSupportedNotifications() throws {
        // Thumbnail picks the thumbnail, which neither arm does; for text-only pushes every
        // strategy, thumbnail included, attaches nothing (P = 1, weight 1).
        let experiment = try #require(Self.partialSupportLog(withText: true).replay(ThumbnailStrategy()).experiments.first)
        let open = try #require(experiment.estimates.first { $0.metric == .open })
        #expect(open.units == 2)
        #expect(open.matched == 2)
        #expect(abs(open.support - 2.0 / 6) < 1e-12)
        #expect(open.ips == 0.5)
        #expect(open.snips == 0.5)
        let text = Self.partialSupportLog(withText: true).replay(ThumbnailStrategy()).renderText()
        #expect(text.contains("support 33.3%: the estimates describe only those notifications"))

        let unsupported = try #require(Self.partialSupportLog(withText: false).replay(ThumbnailStrategy()).experiments.first)
        #expect(unsupported.estimates.isEmpty)
        #expect(unsupported.problem == "no displayed notification of an arm whose strategy makes the choice thumbnail makes")
    }

    @Test func propensitiesNeedTheArmProbabilities() throws {
        var log = ReplayLog()
        let tag = ExperimentTag(id: "exp", arm: "control")
        log.push("n", at: 0, media: [], tag: tag, delivered: ReplayLog.plain(.notRequested))
        log.add("n", at: 2, tag: tag, .displayed(DisplayedDetails(presentation: .plain, attachmentKind: .noAttachment)))
        let experiment = try #require(log.replay(FullStrategy()).experiments.first)
        #expect(experiment.problem == "arm control was logged without its probability")
        #expect(experiment.estimates.isEmpty)
    }

    @Test func predictedEngagementWeighsRichAndPlainRates() throws {
        let result = Self.experimentLog().replay(FullStrategy())
        let open = try #require(result.engagement.first { $0.metric == .open })
        // Rich: 2 opens of 4; plain: 1 of 6. Full shows all ten rich; as logged, four.
        #expect(open.observed.successes == 3 && open.observed.trials == 10)
        #expect(abs(try #require(open.replayed.rate) - 0.5) < 1e-12)
        let ranRate: Double = 0.4 * 0.5 + 0.6 / 6
        #expect(abs(try #require(open.strategyThatRan.rate) - ranRate) < 1e-12)
        let richVariance: Double = 0.16 * 0.25 / 4
        let plainVariance: Double = 0.36 * (5.0 / 36) / 6
        let variance = richVariance + plainVariance
        let half = 1.959963984540054 * variance.squareRoot()
        #expect(abs(try #require(open.strategyThatRan.interval).upper - (0.3 + half)) < 1e-9)
        #expect(open.replayed.observationalCategories.isEmpty)
        #expect(open.replayed.deliveries == 10)
    }

    @Test func untaggedRatesAreUsedAndNamedWhenNoExperimentCoversACategory() throws {
        var log = ReplayLog()
        log.push("r", at: 0, media: ReplayLog.photo(original: 300_000), delivered: ReplayLog.attached(300_000, downloadMS: 140))
        log.add("r", at: 2, .displayed(DisplayedDetails(presentation: .rich, attachmentKind: .image)))
        log.add("r", at: 3, .expanded)
        log.push("p", at: 10, media: [], delivered: ReplayLog.plain(.notRequested))
        log.add("p", at: 12, .displayed(DisplayedDetails(presentation: .plain, attachmentKind: .noAttachment)))
        let result = log.replay(FullStrategy())
        let expansion = try #require(result.engagement.first { $0.metric == .expansion })
        #expect(expansion.replayed.observationalCategories == ["photo"])
        // Half the deliveries rich (the text-only one stays plain): 0.5 x 1 + 0.5 x 0.
        #expect(expansion.replayed.rate == 0.5)
    }

    @Test func outputsAreLabelledModelBasedEstimates() throws {
        let result = Self.experimentLog().replay(AdaptiveStrategy())
        let text = result.renderText()
        #expect(text.hasPrefix("STRATEGY REPLAY: adaptive (MODEL-BASED ESTIMATE)"))
        #expect(text.contains("ENGAGEMENT PER DISPLAYED NOTIFICATION (MODEL-BASED ESTIMATE"))
        #expect(text.contains("INVERSE-PROPENSITY ESTIMATES FOR adaptive (MODEL-BASED ESTIMATE"))
        #expect(text.contains("AGREEMENT: the model under the strategy that ran reproduces the recorded outcome of 100.0% of 10 deliveries"))

        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.renderJSON())) as? [String: Any])
        #expect(json["label"] as? String == "model-based estimate")
        #expect(json["strategy"] as? String == "adaptive")
        let deliveries = try #require(json["deliveries"] as? [String: Any])
        #expect((deliveries["replayed"] as? [String: Any])?["label"] as? String == "model-based estimate")
        #expect((deliveries["strategy_that_ran"] as? [String: Any])?["label"] as? String == "model-based estimate")
        let engagement = try #require(json["engagement"] as? [String: Any])
        #expect(engagement["label"] as? String == "model-based estimate")
        let metrics = try #require(engagement["metrics"] as? [[String: Any]])
        #expect(metrics.map { $0["metric"] as? String } == ["expansion", "action", "open", "reply", "dismiss"])
        for metric in metrics {
            #expect((metric["replayed"] as? [String: Any])?["label"] as? String == "model-based estimate")
        }
        let propensity = try #require(json["inverse_propensity"] as? [String: Any])
        #expect(propensity["label"] as? String == "model-based estimate")
        let agreement = try #require(json["agreement"] as? [String: Any])
        #expect(agreement["rate"] as? Double == 1)
        #expect(agreement["total"] as? Int == 10)
    }
}

@Suite struct DeliveryTallyTests {
    @Test func percentilesAreNearestRankAtMillisecondResolution() {
        var tally = DeliveryTally(maximumMS: 30_000, countsBytes: false)
        #expect(tally.handoffPercentiles == nil)
        for ms in 1...100 {
            tally.record(ReplayLog.plain(.notRequested, processingMS: ms * 10))
        }
        tally.record(ReplayLog.plain(.timeout, processingMS: 99_999))
        // 101 deliveries: rank ceil(0.5 x 101) = 51, ceil(90.9) = 91, ceil(99.99) = 100.
        #expect(tally.handoffQuantile(0.5) == 510)
        #expect(tally.handoffQuantile(0.9) == 910)
        #expect(tally.handoffQuantile(0.99) == 1_000)
        // Beyond the budget lands in the last slot.
        #expect(tally.handoffQuantile(1) == 30_000)
        #expect(tally.bytesTransferred == nil)
        #expect(tally.richRate == 0)
    }

    /// Modelled downloads of the largest sizes the log holds (2^53 bytes a variant): the total
    /// shown stops at Int.max, the mean per delivery is of the exact sum, not of that total.
    @Test func theMeanPerDeliveryIsOfTheExactSum() {
        var tally = DeliveryTally(maximumMS: 30_000, countsBytes: true)
        let download = PipelineOutcome(presentation: .rich, outcome: .attached, failure: nil, handoffMS: 900,
                                       bytesTransferred: 1 << 53, variantIndex: 0, source: .network, downloadMS: 800,
                                       timeWillExpire: false)
        for _ in 0..<1_100 { tally.record(download) }
        #expect(tally.bytesTransferred == Int.max)
        let mean = tally.bytesPerDelivery
        #expect(mean == 9_007_199_254_740_992)
    }
}

@Suite struct StrategyReplayOptionsTests {
    static let now = Timestamp(rfc3339: "2026-11-29T12:00:00Z")!

    @Test func anUnknownStrategyNamesTheOptionAndTheChoices() {
        #expect(throws: ReplayOptionProblem(option: "strategy", value: "fastest",
                                            expected: "one of adaptive, cached, full, none, poster, thumbnail")) {
            try StrategyReplayOptions.strategy("fastest")
        }
        let problem = ReplayOptionProblem(option: "strategy", value: "fastest", expected: "one of adaptive, cached")
        #expect(problem.description == "invalid value 'fastest' for option '--strategy': expected one of adaptive, cached")
        #expect((try? StrategyReplayOptions.strategy("none"))?.name == "none")
    }

    @Test func sinceTakesATimeOrADuration() throws {
        #expect(try StrategyReplayOptions.since("2026-11-01T00:00:00Z", now: Self.now) == Timestamp(rfc3339: "2026-11-01T00:00:00Z"))
        #expect(try StrategyReplayOptions.since("7d", now: Self.now) == Timestamp(rfc3339: "2026-11-22T12:00:00Z"))
        #expect(try StrategyReplayOptions.since("36h", now: Self.now) == Timestamp(rfc3339: "2026-11-28T00:00:00Z"))
        #expect(try StrategyReplayOptions.since("90m", now: Self.now) == Timestamp(rfc3339: "2026-11-29T10:30:00Z"))
        #expect(try StrategyReplayOptions.since("2w", now: Self.now) == Timestamp(rfc3339: "2026-11-15T12:00:00Z"))
        for bad in ["", "d", "7x", "-7d", "seven days", "2026-11-01", "99999999999999d"] {
            #expect(throws: ReplayOptionProblem.self, "\(bad)") { try StrategyReplayOptions.since(bad, now: Self.now) }
        }
    }

    @Test func categoriesAreRepeatableAndCommaSeparated() throws {
        #expect(try StrategyReplayOptions.categories([]) == [])
        #expect(try StrategyReplayOptions.categories(["new_photo", "chat_message, promo_sale"])
                == ["new_photo", "chat_message", "promo_sale"])
        #expect(throws: ReplayOptionProblem(option: "category", value: "a,,b", expected: "category names separated by commas")) {
            try StrategyReplayOptions.categories(["a,,b"])
        }
    }
}
