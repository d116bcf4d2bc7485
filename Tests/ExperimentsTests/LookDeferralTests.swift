@testable import EventStore
@testable import Experiments
import Testing

/// When an incremental look may fold, and may store what it folded, as the `log_rewrite` marker
/// tells (the behaviour against a real prune and restore: LookDuringRewriteTests).
@Suite("Look deferral by the log rewrite marker")
struct LookDeferralTests {
    static let idle = LogRewrite.State(generation: 4, command: nil, beganAt: nil)
    static let pruning = LogRewrite.State(generation: 5, command: "prune", beganAt: nil)

    @Test func aFoldWaitsOnlyWhileARewriteIsUnderWay() throws {
        try ExperimentLookDeferred.check(Self.idle, since: nil)
        #expect(throws: ExperimentLookDeferred(reason: .rewriteUnderWay, command: "prune")) {
            try ExperimentLookDeferred.check(Self.pruning, since: nil)
        }
    }

    @Test func aFoldIsStoredOnlyUnderTheGenerationItReadAndNoRewrite() throws {
        try ExperimentLookDeferred.check(Self.idle, since: 4)
        // Under way now, or begun and ended since the fold read generation 3.
        #expect(throws: ExperimentLookDeferred(reason: .rewrittenDuringLook, command: "prune")) {
            try ExperimentLookDeferred.check(Self.pruning, since: 4)
        }
        #expect(throws: ExperimentLookDeferred(reason: .rewrittenDuringLook, command: nil)) {
            try ExperimentLookDeferred.check(Self.idle, since: 3)
        }
        #expect(ExperimentLookDeferred(reason: .rewrittenDuringLook, command: nil).code == "log_rewritten_during_look")
        #expect(ExperimentLookDeferred(reason: .rewriteUnderWay, command: "restore").description.hasPrefix("engage log restore is under way"))
    }
}
