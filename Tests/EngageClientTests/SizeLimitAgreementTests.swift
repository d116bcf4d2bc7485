import EngageClient
import EngageCore
import EngageNotificationService
import Testing

/// The pipeline model predicts what the Notification Service Extension does, so both refuse a
/// file at the same size.
@Suite struct SizeLimitAgreementTests {
    @Test func theModelAndTheExtensionRefuseTheSameSizes() throws {
        #expect(ServiceExtensionPolicy.appleSizeLimits.count == 4)
        for (kind, limit) in ServiceExtensionPolicy.appleSizeLimits {
            let sameKind = EngageCore.AttachmentKind(rawValue: kind.rawValue)
            let modelKind = try #require(sameKind)
            #expect(PipelineLimits.appleSizeCaps[modelKind] == limit, "\(kind)")
        }
    }
}
