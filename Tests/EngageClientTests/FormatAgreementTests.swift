import EngageClient
import EngageCore
import EngageNotificationService
import Testing

private typealias ModelKind = EngageCore.AttachmentKind
private typealias ModelFormat = EngageCore.MediaFormat

/// What the extension tries to attach and what the pipeline model (the strategy replay's and
/// `adaptive`'s) counts as attachable agree, kind by kind: a format the model credits that the
/// extension refused made the replay count attachments that never happened. The model's `image`
/// kind also takes GIF (the extension calls a GIF kind `gif`), and its `mpeg` audio is what the
/// extension downloads as MP3.
@Suite("Formats: the extension and the pipeline model agree")
struct FormatAgreementTests {
    @Test func theExtensionTriesEveryFormatThePipelineModelCountsAsAttachable() throws {
        let model = SupportedFormats.apple
        for type in MediaType.supported {
            let kind = try #require(ModelKind(rawValue: type.kind.rawValue))
            let format = try #require(ModelFormat(rawValue: type.format.rawValue))
            #expect(model.supports(format, for: kind), "\(type.uti)")
        }
        let tried = Set(MediaType.supported.map { "\($0.kind.rawValue)/\($0.format.rawValue)" })
        for kind in [ModelKind.image, .gif, .video, .audio] {
            for format in ModelFormat.allCases where model.supports(format, for: kind) {
                let known = tried.contains("\(kind.rawValue)/\(format.rawValue)") || (kind == .image && format == .gif)
                    || (kind == .audio && format == .mpeg && tried.contains("audio/mp3"))
                #expect(known, "the model counts \(kind.rawValue) \(format.rawValue) as attachable")
            }
        }
    }
}
