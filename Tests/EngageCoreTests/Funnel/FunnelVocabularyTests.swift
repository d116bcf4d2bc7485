import Testing
@testable import EngageCore

/// The funnel's vocabulary: what each stage and metric is called on the wire and for people,
/// what each metric divides, and how counts are built from the stages a notification reached.
@Suite struct FunnelVocabularyTests {
    @Test func stagesAndTheirWireNames() {
        #expect(FunnelStage.allCases.map(\.name) == [
            "notifications", "delivered", "displayed", "rich_displayed", "expanded", "actioned", "opened",
            "dismissed", "replied",
        ])
        // The read model's columns (sql/migrations/003_engagement_read_model.sql) in their order.
        #expect(FunnelStage.keptPerBucket.map(\.name) == [
            "notifications", "delivered", "displayed", "expanded", "actioned", "opened", "dismissed", "replied",
        ])
        #expect(FunnelStage.reportTotals == [.notifications, .delivered, .displayed])
        #expect(FunnelStage.engagements == [.expanded, .actioned, .opened, .dismissed, .replied])
        // Counts keep one lane per stage, stage sets one bit.
        #expect(FunnelStage.allCases.count <= SIMD16<Int>.scalarCount)
        #expect(FunnelStage.allCases.map(\.rawValue) == Array(0..<FunnelStage.allCases.count))
    }

    @Test func metricsDivideOneStageByAnother() {
        #expect(EngagementMetric.allCases.map(\.rawValue) == ["expansion", "action", "open", "reply", "dismiss", "rich_display"])
        #expect(EngagementMetric.allCases.map(\.definition) == [
            "expanded / displayed", "custom action / displayed", "opened / displayed", "replied / displayed",
            "dismissed / displayed", "displayed rich / delivered",
        ])
        #expect(EngagementMetric.allCases.map(\.label) == ["expansion", "any action", "open", "reply", "dismiss", "rich display"])
        #expect(EngagementMetric.allCases.filter { !$0.higherIsBetter } == [.dismiss])
        #expect(EngagementMetric.perDisplayed == [.expansion, .action, .open, .reply, .dismiss])
        #expect(EngagementMetric.reported == [.expansion, .action, .open, .dismiss, .reply])
        #expect(ReportMetric.standard.map(\.key) == ["expansion", "action", "open", "dismiss", "reply"])
        #expect(ReportMetric.customAction("save").key == "action:save" && ReportMetric.customAction("save").label == "action save")
        #expect(EngagementMetric.allCases.map(\.lane) == Array(0..<EngagementMetric.allCases.count))
        #expect(EngagementMetric.allCases.count <= MetricLanes.scalarCount)
        // Every numerator is a different stage, so a stage's count names its metric.
        #expect(Set(EngagementMetric.allCases.map(\.numerator)).count == EngagementMetric.allCases.count)
    }

    @Test func eachMetricsLaneHoldsItsSuccessesAndTrials() {
        var counts = FunnelCounts()
        for stage in FunnelStage.allCases { counts[stage] = 100 + stage.rawValue }
        let trials = counts.metricTrials
        for metric in EngagementMetric.allCases {
            #expect(trials.successes[metric] == counts[metric.numerator], "\(metric)")
            #expect(trials.trials[metric] == counts[metric.denominator], "\(metric)")
            #expect(counts.successes(metric) == counts[metric.numerator] && counts.trials(metric) == counts[metric.denominator])
        }
        for lane in EngagementMetric.allCases.count..<MetricLanes.scalarCount {
            #expect(trials.successes[lane] == 0 && trials.trials[lane] == 0)
        }
    }

    @Test func countsOfTheStagesReached() {
        let reached: FunnelStageSet = [.notifications, .displayed, .opened]
        let counts = FunnelCounts(reached: reached)
        for stage in FunnelStage.allCases {
            #expect(counts[stage] == (reached.contains(stage) ? 1 : 0), "\(stage)")
        }
        #expect(counts == FunnelCounts([.notifications: 1, .displayed: 1, .opened: 1]))
        #expect(counts + counts - counts == counts && counts - counts == .zero)
        #expect(counts.description == "notifications=1 delivered=0 displayed=1 rich_displayed=0 expanded=0 actioned=0 "
            + "opened=1 dismissed=0 replied=0")
    }

    /// What the experiments count: an engagement only with its `displayed` event, a rich display
    /// only with its `delivered` event.
    @Test func numeratorsCountWithinTheirDenominators() {
        let notShown = FunnelStageSet(delivered: false, presentation: .unknown, engaged: [.expanded, .opened, .replied])
        #expect(notShown == [.notifications, .expanded, .opened, .replied])
        #expect(notShown.withinDenominators == [.notifications])
        let richNotDelivered = FunnelStageSet(delivered: false, presentation: .rich, engaged: [.dismissed])
        #expect(richNotDelivered.withinDenominators == [.notifications, .displayed, .dismissed])
        let richDelivered = FunnelStageSet(delivered: true, presentation: .rich, engaged: [.actioned])
        #expect(richDelivered.withinDenominators == richDelivered)
        #expect(richDelivered == [.notifications, .delivered, .displayed, .richDisplayed, .actioned])
        #expect(FunnelStageSet.keptPerBucket.contains(.replied) && !FunnelStageSet.keptPerBucket.contains(.richDisplayed))
    }

    @Test func theStagesOfAnAction() {
        #expect(FunnelStageSet(ActionDetails(actionID: ActionDetails.openIdentifier)) == [.opened])
        #expect(FunnelStageSet(ActionDetails(actionID: ActionDetails.dismissIdentifier)) == [.dismissed])
        #expect(FunnelStageSet(ActionDetails(actionID: "like")) == [.actioned])
        #expect(FunnelStageSet(ActionDetails(actionID: "reply", textInputLength: 3)) == [.actioned, .replied])
        #expect(ExperimentEventFacts.ActionKind.custom.stage == .actioned)
    }

    /// The state's stages are what both the read model and the experiments count from.
    @Test func aNotificationsStagesAndItsCounts() throws {
        typealias S = FunnelStreams
        let state = NotificationState(folding: [S.deliveredImage(1, at: 0), S.displayed(2, at: 1, .plain, .noAttachment),
                                                S.expanded(3, at: 4), S.action(4, at: 5, "reply", textInputLength: 9)])
        #expect(state.reachedStages == [.notifications, .delivered, .displayed, .expanded, .actioned, .replied])
        #expect(state.engagementContribution?.counters.funnel
                == FunnelCounts([.notifications: 1, .delivered: 1, .displayed: 1, .expanded: 1, .actioned: 1, .replied: 1]))
        #expect(NotificationState().reachedStages == [])
        // Shown rich without a delivered event: the read model counts the display; the
        // experiments count no rich display (its denominator is missing) but the expansion.
        let undelivered = NotificationState(folding: [S.displayed(1, at: 0), S.expanded(2, at: 3)])
        #expect(undelivered.engagementContribution?.counters.funnel
                == FunnelCounts([.notifications: 1, .displayed: 1, .expanded: 1]))
        let observation = try #require(ExperimentObservation(undelivered, arms: ExperimentArmIndex(.sample())))
        #expect(observation.counts == FunnelCounts([.notifications: 1, .displayed: 1, .expanded: 1]))
    }
}
