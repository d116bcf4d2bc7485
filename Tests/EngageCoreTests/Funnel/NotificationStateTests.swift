import Testing
@testable import EngageCore

private typealias S = FunnelStreams
private typealias Engagement = EngagementContribution
private typealias Telemetry = TelemetryContribution

@Suite struct NotificationStateTests {
    @Test func richImageExpandedAndLiked() {
        let events = [S.action(5, at: 25, "like"), S.displayed(3, at: 3), S.sent(1, at: 0),
                      S.expanded(4, at: 20), S.deliveredImage(2, at: 2)]
        let state = NotificationState(folding: events)

        #expect(state.eventIDs == [S.id(1), S.id(2), S.id(3), S.id(4), S.id(5)])
        #expect(state.eventCount == 5)
        #expect(state.category == "new_photo")
        #expect(state.deviceID == "dev-42")
        #expect(state.firstSeenAt == S.at(0))
        #expect(state.experiment == S.thumbs)
        #expect(state.sent == SentFacts(at: S.at(0), eventID: S.id(1), strategy: .thumbnail,
                                        media: [S.original, S.thumbnail], payloadBytes: 2890))
        #expect(state.delivered == DeliveredFacts(
            at: S.at(2), eventID: S.id(2), attachmentKind: .image, format: .jpeg, bytes: 48_000, source: .network,
            downloadMS: 840, variant: "thumbnail", outcome: .attached, processingMS: 910, timeWillExpire: false,
            network: .wifi, strategy: .thumbnail))
        #expect(state.displayed == DisplayedFacts(at: S.at(3), eventID: S.id(3), presentation: .rich,
                                                  attachmentKind: .image))
        #expect(state.presentation == .rich)
        #expect(state.attachmentKind == .image)
        #expect(state.expandedAt == S.at(20))
        #expect(state.customActionAt == S.at(25))
        #expect(state.customActionIDs == ["like"])
        #expect(state.openedAt == nil)
        #expect(state.dismissedAt == nil)
        #expect(state.repliedAt == nil)

        #expect(state.engagementFacts == EngagementFacts(
            category: "new_photo", presentation: .rich, attachmentKind: .image, day: S.day,
            stages: [.notifications, .delivered, .displayed, .richDisplayed, .expanded, .actioned],
            customActionIDs: ["like"]))
        #expect(state.engagementContribution == Engagement(
            bucket: .init(category: "new_photo", presentation: .rich, attachmentKind: .image, day: S.day),
            counters: counts([.notifications: 1, .delivered: 1, .displayed: 1, .expanded: 1, .actioned: 1],
                             actions: ["like": 1])))
        #expect(state.engagementContribution?.actionIDs == ["like"])
        #expect(state.telemetryContribution == Telemetry(
            bucket: .init(category: "new_photo", attachmentKind: .image, day: S.day),
            counters: .init(delivered: 1, outcomes: [.attached: 1], networkFetches: 1, bytes: 48_000,
                            bytesReported: 1, downloadMS: [840: 1], processingMS: [910: 1])))
    }

    @Test func plainFallbackAfterTimeout() {
        let delivered = S.event(1, at: 0, .delivered(DeliveredDetails(
            attachment: DeliveredAttachment(kind: .noAttachment), outcome: .timeout, processingMS: 29_800,
            timeWillExpire: true, network: .cellular, strategy: .full)))
        let state = NotificationState(folding: [S.action(3, at: 40, ActionDetails.openIdentifier),
                                                S.displayed(2, at: 1, .plain, .noAttachment), delivered])

        #expect(state.delivered == DeliveredFacts(
            at: S.at(0), eventID: S.id(1), attachmentKind: .noAttachment, format: nil, bytes: nil, source: nil,
            downloadMS: nil, variant: nil, outcome: .timeout, processingMS: 29_800, timeWillExpire: true,
            network: .cellular, strategy: .full))
        #expect(state.presentation == .plain)
        #expect(state.attachmentKind == .noAttachment)
        #expect(state.openedAt == S.at(40))
        #expect(state.customActionAt == nil)
        #expect(state.engagementFacts == EngagementFacts(
            category: "new_photo", presentation: .plain, attachmentKind: .noAttachment, day: S.day,
            stages: [.notifications, .delivered, .displayed, .opened]))
        #expect(state.telemetryContribution == Telemetry(
            bucket: .init(category: "new_photo", attachmentKind: .noAttachment, day: S.day),
            counters: .init(delivered: 1, outcomes: [.timeout: 1], timeWillExpire: 1,
                            processingMS: [29_800: 1])))
    }

    @Test func dismissed() {
        let state = NotificationState(folding: [
            S.deliveredImage(1, at: 0, source: .cache, downloadMS: 3), S.displayed(2, at: 1),
            S.action(3, at: 9, ActionDetails.dismissIdentifier),
        ])
        #expect(state.dismissedAt == S.at(9))
        #expect(state.engagementContribution == Engagement(
            bucket: .init(category: "new_photo", presentation: .rich, attachmentKind: .image, day: S.day),
            counters: counts([.notifications: 1, .delivered: 1, .displayed: 1, .dismissed: 1])))
        #expect(state.telemetryContribution?.counters == .init(
            delivered: 1, outcomes: [.attached: 1], cacheHits: 1, bytes: 48_000, bytesReported: 1,
            downloadMS: [3: 1], processingMS: [910: 1]))
    }

    @Test func repliedWithTextInput() {
        let state = NotificationState(folding: [
            S.action(2, at: 30, "reply", textInputLength: 24), S.displayed(1, at: 1),
        ])
        #expect(state.repliedAt == S.at(30))
        #expect(state.customActionAt == S.at(30))
        #expect(state.customActionIDs == ["reply"])
        #expect(state.delivered == nil)
        #expect(state.engagementFacts == EngagementFacts(
            category: "new_photo", presentation: .rich, attachmentKind: .image, day: S.day,
            stages: [.notifications, .displayed, .richDisplayed, .actioned, .replied],
            customActionIDs: ["reply"]))
        #expect(state.telemetryContribution == nil)
    }

    @Test func anEmptyReplyOnTheDefaultActionCountsAsOpenedAndReplied() {
        let state = NotificationState(S.action(1, at: 0, ActionDetails.openIdentifier, textInputLength: 0))
        #expect(state.openedAt == S.at(0))
        #expect(state.repliedAt == S.at(0))
        #expect(state.customActionAt == nil)
        #expect(state.customActionIDs == [])
    }

    @Test func aLateDisplayMovesTheContributionFromUnknownToRich() {
        let unknownNoKind = Engagement.Bucket(category: "new_photo", presentation: .unknown, attachmentKind: nil,
                                             day: S.day)
        let unknownImage = Engagement.Bucket(category: "new_photo", presentation: .unknown, attachmentKind: .image,
                                            day: S.day)
        let richImage = Engagement.Bucket(category: "new_photo", presentation: .rich, attachmentKind: .image,
                                         day: S.day)
        var state = NotificationState()
        var steps: [[Engagement.Delta]] = []
        for event in [S.action(3, at: 10, "like"), S.deliveredImage(1, at: 0), S.displayed(2, at: 2),
                      S.displayed(2, at: 2)] {
            let old = state.engagementContribution
            state.apply(event)
            steps.append(Engagement.difference(from: old, to: state.engagementContribution))
        }
        #expect(steps == [
            [Engagement.Delta(bucket: unknownNoKind, counters: counts([.notifications: 1, .actioned: 1],
                                                                       actions: ["like": 1]))],
            [Engagement.Delta(bucket: unknownNoKind, counters: counts([.notifications: -1, .actioned: -1],
                                                                       actions: ["like": -1])),
             Engagement.Delta(bucket: unknownImage, counters: counts([.notifications: 1, .delivered: 1, .actioned: 1],
                                                                      actions: ["like": 1]))],
            [Engagement.Delta(bucket: unknownImage, counters: counts([.notifications: -1, .delivered: -1, .actioned: -1],
                                                                      actions: ["like": -1])),
             Engagement.Delta(bucket: richImage, counters: counts([.notifications: 1, .delivered: 1, .displayed: 1,
                                                                   .actioned: 1], actions: ["like": 1]))],
            [],
        ])
    }

    @Test func aLateEventInTheSameBucketGivesOneDelta() {
        let before = NotificationState(folding: [S.deliveredImage(1, at: 0), S.displayed(2, at: 1),
                                                 S.action(3, at: 5, "like")])
        let after = before.applying(S.action(4, at: 6, "save")).applying(S.expanded(5, at: 4))
        let bucket = Engagement.Bucket(category: "new_photo", presentation: .rich, attachmentKind: .image, day: S.day)
        #expect(Engagement.difference(from: before.engagementContribution, to: after.engagementContribution) == [
            Engagement.Delta(bucket: bucket, counters: counts([.expanded: 1], actions: ["save": 1])),
        ])
        #expect(after.customActionIDs == ["like", "save"])
        #expect(after.customActionAt == S.at(5))
        // The telemetry did not change.
        #expect(Telemetry.difference(from: before.telemetryContribution, to: after.telemetryContribution) == [])
    }

    @Test func aLateDeliveryFromBeforeMidnightMovesTheDay() {
        let midnight = UTCDay(year: 2026, month: 11, day: 30)!.start
        func shifted(_ event: Event, _ microseconds: Int64) -> Event {
            var event = event
            event.occurredAt = midnight.adding(microseconds: microseconds)
            return event
        }
        let displayed = shifted(S.displayed(2, at: 0), 1_000_000)
        let delivered = shifted(S.deliveredImage(1, at: 0), -2_000_000)
        let before = NotificationState(displayed)
        let after = before.applying(delivered)
        #expect(before.day == UTCDay(year: 2026, month: 11, day: 30))
        #expect(after.day == UTCDay(year: 2026, month: 11, day: 29))

        let bucket = Engagement.Bucket(category: "new_photo", presentation: .rich, attachmentKind: .image, day: S.day)
        #expect(Engagement.difference(from: before.engagementContribution, to: after.engagementContribution) == [
            Engagement.Delta(bucket: .init(category: "new_photo", presentation: .rich, attachmentKind: .image,
                                           day: UTCDay(year: 2026, month: 11, day: 30)!),
                             counters: counts([.notifications: -1, .displayed: -1])),
            Engagement.Delta(bucket: bucket, counters: counts([.notifications: 1, .delivered: 1, .displayed: 1])),
        ])
        #expect(Telemetry.difference(from: before.telemetryContribution, to: after.telemetryContribution) == [
            Telemetry.Delta(bucket: .init(category: "new_photo", attachmentKind: .image, day: S.day),
                            counters: .init(delivered: 1, outcomes: [.attached: 1], networkFetches: 1, bytes: 48_000,
                                            bytesReported: 1, downloadMS: [840: 1], processingMS: [910: 1])),
        ])
    }

    @Test func disagreeingEventsAreSettledByTimeThenEventID() {
        let plainLater = S.displayed(1, at: 6, .plain, .noAttachment)
        let richTied = S.displayed(7, at: 5, .rich, .gif)
        let plainTied = S.displayed(4, at: 5, .plain, .image)
        for events in [[plainLater, richTied, plainTied], [plainTied, plainLater, richTied],
                       [richTied, plainTied, plainLater]] {
            let state = NotificationState(folding: events)
            #expect(state.displayed == DisplayedFacts(at: S.at(5), eventID: S.id(4), presentation: .plain,
                                                      attachmentKind: .image))
        }
        // The shown kind wins over the attached one.
        let state = NotificationState(folding: [S.deliveredImage(9, at: 0), richTied])
        #expect(state.attachmentKind == .gif)
    }

    @Test func identityAndExperimentComeFromTheFirstEventThatHasThem() {
        let untaggedFirst = S.event(3, at: 0, .expanded, experiment: nil, category: "comment")
        let laterArm = S.event(1, at: 8, .expanded, experiment: ExperimentTag(id: "thumbs-v1", arm: "full"))
        let state = NotificationState(folding: [laterArm, S.displayed(2, at: 4), untaggedFirst])
        #expect(state.category == "comment")
        #expect(state.firstSeenAt == S.at(0))
        #expect(state.experiment == S.thumbs)
        #expect(state.expandedAt == S.at(0))
    }

    @Test func duplicatesChangeNothing() {
        let event = S.deliveredImage(1, at: 0)
        let once = NotificationState(event)
        var state = once
        state.apply(event)
        state.apply(event)
        #expect(state == once)
        #expect(state.eventCount == 1)
        #expect(state.merging(once) == once)
    }

    @Test func theEmptyState() {
        let empty = NotificationState()
        #expect(empty.isEmpty)
        #expect(empty.eventCount == 0)
        #expect(empty.presentation == .unknown)
        #expect(empty.day == nil)
        #expect(empty.engagementFacts == nil)
        #expect(empty.engagementContribution == nil)
        #expect(empty.telemetryContribution == nil)
        #expect(Engagement.difference(from: nil, to: nil) == [])

        let state = NotificationState(S.expanded(1, at: 0))
        #expect(empty.merging(state) == state)
        #expect(state.merging(empty) == state)
        let contribution = state.engagementContribution!
        #expect(Engagement.difference(from: nil, to: contribution) ==
                [Engagement.Delta(bucket: contribution.bucket, counters: contribution.counters)])
        #expect(Engagement.difference(from: contribution, to: nil) ==
                [Engagement.Delta(bucket: contribution.bucket, counters: counts([.notifications: -1, .expanded: -1]))])
    }

    @Test func countersDropKeysThatCancel() {
        let a = counts([.notifications: 1, .actioned: 1], actions: ["like": 1, "save": 1])
        let b = counts([.notifications: 1, .actioned: 1], actions: ["like": 1])
        #expect(a - b == counts([:], actions: ["save": 1]))
        #expect(a - a == .zero)
        #expect(Telemetry.Counters(downloadMS: [5: 1]) - .init(downloadMS: [5: 1]) == .zero)
    }
}

@Suite struct UTCDayTests {
    @Test func daysOfInstants() {
        #expect(UTCDay(S.start).description == "2026-11-29")
        #expect(UTCDay(S.start) == S.day)
        #expect(S.day.start == Timestamp(rfc3339: "2026-11-29T00:00:00Z"))
        #expect(UTCDay(Timestamp(microsecondsSinceEpoch: 0)).description == "1970-01-01")
        #expect(UTCDay(Timestamp(microsecondsSinceEpoch: -1)).description == "1969-12-31")
        #expect(UTCDay(Timestamp(microsecondsSinceEpoch: -1)).daysSinceEpoch == -1)
        #expect(UTCDay(year: 2028, month: 2, day: 29)?.description == "2028-02-29")
        #expect(UTCDay(year: 2026, month: 2, day: 29) == nil)
        #expect(UTCDay(year: 2026, month: 13, day: 1) == nil)
    }
}

/// A contribution's counters: these funnel counts and action counts.
private func counts(_ funnel: [FunnelStage: Int], actions: [String: Int] = [:]) -> EngagementContribution.Counters {
    EngagementCounts(funnel: FunnelCounts(funnel), actions: actions)
}
