import EngageClient

/// Which offered rendition of a push plays which part, read by the rules the server's pipeline
/// model reads a `sent` event's media with (`MediaRoles` in EngageCore; a test pins the two
/// together), so that the variant the extension attaches under a strategy is the one the model
/// and the strategy replay credit to it. Names are free text; the usual ones are read first,
/// then sizes, so the sender should give each entry its `bytes` and `kind` (as in its `sent`
/// event): an entry without them counts as 0 bytes and of no kind.
/// - original: the first named `original`; else the largest not named `thumbnail` or `poster`;
///   else the largest.
/// - thumbnail: the first named `thumbnail`; else the smallest, other than the original and not
///   named `poster`, that is smaller than the original.
/// - poster: the first named `poster`; else, when the original is a video, the first image or
///   GIF that is not the thumbnail.
struct OfferedMediaRoles: Equatable {
    var original: Int?
    var thumbnail: Int?
    var poster: Int?

    init(_ media: [PushPayload.Media]) {
        func firstNamed(_ name: String) -> Int? { media.firstIndex { $0.variant == name } }
        func bytes(_ index: Int) -> Int { media[index].bytes ?? 0 }
        func largest(where keep: (PushPayload.Media) -> Bool) -> Int? {
            media.indices.filter { keep(media[$0]) }.reduce(nil) { best, index in
                best.map { bytes(index) > bytes($0) ? index : $0 } ?? index
            }
        }
        let original = firstNamed("original") ?? largest { $0.variant != "thumbnail" && $0.variant != "poster" }
            ?? largest { _ in true }
        var thumbnail = firstNamed("thumbnail")
        if thumbnail == nil, let original {
            for index in media.indices where index != original && media[index].variant != "poster"
                && bytes(index) < bytes(original) && thumbnail.map({ bytes(index) < bytes($0) }) ?? true {
                thumbnail = index
            }
        }
        var poster = firstNamed("poster")
        if poster == nil, let original, media[original].kind == .video {
            poster = media.indices.first { $0 != thumbnail && (media[$0].kind == .image || media[$0].kind == .gif) }
        }
        self.original = original
        self.thumbnail = thumbnail
        self.poster = poster
    }
}
