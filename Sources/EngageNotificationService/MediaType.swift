import EngageClient
import Foundation

/// A file type `UNNotificationAttachment` accepts: what it is on the wire (`kind`, `format`),
/// the Uniform Type Identifier passed as `UNNotificationAttachmentOptionsTypeHintKey`, and the
/// file extension the attachment's file gets.
public struct MediaType: Sendable, Hashable {
    public var kind: AttachmentKind
    public var format: MediaFormat
    public var uti: String
    public var fileExtension: String

    public init(kind: AttachmentKind, format: MediaFormat, uti: String, fileExtension: String) {
        self.kind = kind
        self.format = format
        self.uti = uti
        self.fileExtension = fileExtension
    }

    /// Every type Apple lists for notification attachments ("Supported file types" of
    /// `UNNotificationAttachment`): images JPEG, GIF, PNG; audio AIFF, WAV, MP3, MPEG-4 audio;
    /// movies MPEG, MPEG-2, MPEG-4, AVI; and the four more the pipeline model counts as attachable
    /// (`SupportedFormats.apple`): TIFF, QuickTime, AAC, Core Audio. The extension offers each to
    /// iOS with its type hint; one iOS refuses is recorded as `unsupported_format`, as it happened,
    /// where refusing it here made the model's replay credit an attachment the extension never
    /// tried.
    public static let jpeg = MediaType(kind: .image, format: .jpeg, uti: "public.jpeg", fileExtension: "jpg")
    public static let png = MediaType(kind: .image, format: .png, uti: "public.png", fileExtension: "png")
    public static let gif = MediaType(kind: .gif, format: .gif, uti: "com.compuserve.gif", fileExtension: "gif")
    public static let aiff = MediaType(kind: .audio, format: .aiff, uti: "public.aiff-audio", fileExtension: "aiff")
    public static let wav = MediaType(kind: .audio, format: .wav, uti: "com.microsoft.waveform-audio", fileExtension: "wav")
    public static let mp3 = MediaType(kind: .audio, format: .mp3, uti: "public.mp3", fileExtension: "mp3")
    public static let m4a = MediaType(kind: .audio, format: .m4a, uti: "public.mpeg-4-audio", fileExtension: "m4a")
    public static let mpeg = MediaType(kind: .video, format: .mpeg, uti: "public.mpeg", fileExtension: "mpg")
    public static let mpeg2 = MediaType(kind: .video, format: .mpeg, uti: "public.mpeg-2-video", fileExtension: "m2v")
    public static let mp4 = MediaType(kind: .video, format: .mp4, uti: "public.mpeg-4", fileExtension: "mp4")
    public static let avi = MediaType(kind: .video, format: .avi, uti: "public.avi", fileExtension: "avi")
    public static let tiff = MediaType(kind: .image, format: .tiff, uti: "public.tiff", fileExtension: "tiff")
    public static let quickTime = MediaType(kind: .video, format: .mov, uti: "com.apple.quicktime-movie", fileExtension: "mov")
    public static let aac = MediaType(kind: .audio, format: .aac, uti: "public.aac-audio", fileExtension: "aac")
    public static let coreAudio = MediaType(kind: .audio, format: .caf, uti: "com.apple.coreaudio-format", fileExtension: "caf")

    public static let supported: [MediaType] = [jpeg, png, gif, aiff, wav, mp3, m4a, mpeg, mpeg2, mp4, avi,
                                                tiff, quickTime, aac, coreAudio]
}

/// What is known about a download's type, from one source.
public enum MediaTypeGuess: Sendable, Equatable {
    case supported(MediaType)
    /// A type that is known and that attachments do not accept (WebP, HEIC, QuickTime, ...).
    case unsupported(String)
    /// This source says nothing useful (no MIME type, `application/octet-stream`, an unknown
    /// extension, too few bytes).
    case unknown
}

/// Finds a download's type the way its sources deserve: the MIME type first; when that says
/// nothing (S3 serves `binary/octet-stream` by default) the URL's extension, then the
/// `filename` of `Content-Disposition`; then the file's leading bytes.
public enum MediaTypeDetector {
    public static func detect(mimeType: String?, url: URL?, contentDisposition: String?, leadingBytes: [UInt8]) -> MediaTypeGuess {
        for guess in [fromMIMEType(mimeType), fromFileName(url?.lastPathComponent),
                      fromFileName(fileName(inContentDisposition: contentDisposition)), fromLeadingBytes(leadingBytes)] {
            if guess != .unknown { return guess }
        }
        return .unknown
    }

    /// The type named by the headers and URL alone, before any byte arrived (to choose the size
    /// limit as early as possible).
    public static func detectFromHeaders(mimeType: String?, url: URL?, contentDisposition: String?) -> MediaTypeGuess {
        detect(mimeType: mimeType, url: url, contentDisposition: contentDisposition, leadingBytes: [])
    }

    public static func fromMIMEType(_ mimeType: String?) -> MediaTypeGuess {
        guard let essence = mimeType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased(),
              !essence.isEmpty
        else { return .unknown }
        switch essence {
        case "image/jpeg", "image/jpg", "image/pjpeg": return .supported(.jpeg)
        case "image/png", "image/x-png": return .supported(.png)
        case "image/gif": return .supported(.gif)
        case "audio/aiff", "audio/x-aiff": return .supported(.aiff)
        case "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave": return .supported(.wav)
        case "audio/mpeg", "audio/mp3", "audio/mpeg3", "audio/x-mpeg-3": return .supported(.mp3)
        case "audio/mp4", "audio/x-m4a", "audio/m4a", "audio/aac-mp4": return .supported(.m4a)
        case "video/mpeg": return .supported(.mpeg)
        case "video/mpeg2", "video/mp2v": return .supported(.mpeg2)
        case "video/mp4", "application/mp4": return .supported(.mp4)
        case "video/avi", "video/x-msvideo", "video/msvideo": return .supported(.avi)
        case "image/tiff", "image/x-tiff": return .supported(.tiff)
        case "video/quicktime": return .supported(.quickTime)
        case "audio/aac", "audio/x-aac", "audio/aacp": return .supported(.aac)
        case "audio/x-caf", "audio/caf": return .supported(.coreAudio)
        case "application/octet-stream", "binary/octet-stream", "application/binary", "application/unknown":
            return .unknown
        default:
            if essence.hasPrefix("image/") || essence.hasPrefix("audio/") || essence.hasPrefix("video/") {
                return .unsupported(essence)
            }
            return .unknown
        }
    }

    public static func fromFileName(_ name: String?) -> MediaTypeGuess {
        guard let name, let dot = name.lastIndex(of: "."), dot != name.startIndex else { return .unknown }
        switch name[name.index(after: dot)...].lowercased() {
        case "jpg", "jpeg", "jpe": return .supported(.jpeg)
        case "png": return .supported(.png)
        case "gif": return .supported(.gif)
        case "aif", "aiff", "aifc": return .supported(.aiff)
        case "wav", "wave": return .supported(.wav)
        case "mp3": return .supported(.mp3)
        case "m4a": return .supported(.m4a)
        case "mpg", "mpeg", "mpe", "m1v": return .supported(.mpeg)
        case "m2v": return .supported(.mpeg2)
        case "mp4", "m4v": return .supported(.mp4)
        case "avi": return .supported(.avi)
        case "tif", "tiff": return .supported(.tiff)
        case "mov", "qt": return .supported(.quickTime)
        case "aac": return .supported(.aac)
        case "caf": return .supported(.coreAudio)
        case let other where ["webp", "heic", "heif", "avif", "bmp", "svg", "webm", "mkv", "ogg", "oga", "opus", "flac"].contains(other):
            return .unsupported(other)
        default:
            return .unknown
        }
    }

    /// `filename*=UTF-8''photo%201.jpg` (RFC 6266, preferred) or `filename="photo 1.jpg"`.
    public static func fileName(inContentDisposition header: String?) -> String? {
        guard let header else { return nil }
        var plain: String?
        for parameter in header.split(separator: ";").dropFirst() {
            let parts = parameter.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let name = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
            var value = parts[1].trimmingCharacters(in: .whitespaces)
            if name == "filename*" {
                if let quote = value.range(of: "''") { value = String(value[quote.upperBound...]) }
                if let decoded = value.removingPercentEncoding, !decoded.isEmpty { return decoded }
            } else if name == "filename" {
                if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
                plain = value.isEmpty ? nil : value
            }
        }
        return plain
    }

    /// How many leading bytes `fromLeadingBytes` looks at.
    public static let sniffLength = 16

    /// The file signatures of the supported types (and of a few that are not).
    public static func fromLeadingBytes(_ bytes: [UInt8]) -> MediaTypeGuess {
        func starts(_ signature: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + signature.count && Array(bytes[offset..<offset + signature.count]) == signature
        }
        func ascii(_ text: String) -> [UInt8] { Array(text.utf8) }
        if starts([0xFF, 0xD8, 0xFF]) { return .supported(.jpeg) }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .supported(.png) }
        if starts(ascii("GIF87a")) || starts(ascii("GIF89a")) { return .supported(.gif) }
        if starts(ascii("FORM")), starts(ascii("AIFF"), at: 8) || starts(ascii("AIFC"), at: 8) { return .supported(.aiff) }
        if starts(ascii("RIFF")), starts(ascii("WAVE"), at: 8) { return .supported(.wav) }
        if starts(ascii("RIFF")), starts(ascii("AVI "), at: 8) { return .supported(.avi) }
        if starts(ascii("RIFF")), starts(ascii("WEBP"), at: 8) { return .unsupported("webp") }
        if starts(ascii("ID3")) { return .supported(.mp3) }
        if starts(ascii("II*\0")) || starts(ascii("MM\0*")) { return .supported(.tiff) }
        if starts(ascii("caff")) { return .supported(.coreAudio) }
        if starts(ascii("ftyp"), at: 4), bytes.count >= 12 {
            let brand = String(decoding: bytes[8..<12], as: UTF8.self)
            switch brand {
            case "M4A ", "M4B ", "M4P ": return .supported(.m4a)
            case "qt  ": return .supported(.quickTime)
            case "heic", "heix", "mif1", "msf1", "avif": return .unsupported(brand)
            default: return .supported(.mp4)
            }
        }
        if starts([0x00, 0x00, 0x01, 0xBA]) || starts([0x00, 0x00, 0x01, 0xB3]) { return .supported(.mpeg) }
        // An AAC stream in ADTS frames: 12 sync bits, then the layer, always 0 (MPEG audio's
        // layers are 1 to 3).
        if bytes.count >= 2, bytes[0] == 0xFF, bytes[1] & 0xF6 == 0xF0 { return .supported(.aac) }
        // An MPEG audio frame without an ID3 tag: 11 sync bits, MPEG version not reserved,
        // layer III.
        if bytes.count >= 2, bytes[0] == 0xFF, bytes[1] & 0xE0 == 0xE0, bytes[1] & 0x18 != 0x08, bytes[1] & 0x06 == 0x02 {
            return .supported(.mp3)
        }
        return .unknown
    }

    /// True when `named` is a member of the family whose signature the bytes show: an ISO media
    /// file of any brand (`isom`, `mp42`) may be MPEG-4 audio or a QuickTime movie, one branded
    /// QuickTime served as MP4 (an iPhone's .mov renamed) plays as MP4, an MPEG stream's first
    /// header does not say MPEG-1 from MPEG-2, and an ID3v2 tag (read as MP3 when nothing names
    /// the file) is metadata that may lead AAC frames as well as MP3 ones.
    public static func refines(_ named: MediaType, _ sniffed: MediaTypeGuess, leadingBytes: [UInt8]) -> Bool {
        switch sniffed {
        case .supported(.mp4): named == .m4a || named == .quickTime
        case .supported(.mpeg): named == .mpeg2
        case .supported(.quickTime): named == .mp4
        case .supported(.mp3): named == .aac && leadingBytes.starts(with: Array("ID3".utf8))
        default: false
        }
    }

    /// True when the leading bytes look like a document rather than media: markup or JSON, after
    /// optional whitespace or a UTF-8 byte order mark (an error page, an API's error body).
    public static func readsAsText(_ bytes: [UInt8]) -> Bool {
        var rest = bytes[...]
        if rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
        guard let first = rest.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) else { return false }
        return first == UInt8(ascii: "<") || first == UInt8(ascii: "{") || first == UInt8(ascii: "[")
    }

    /// The kind of an attachment iOS delivered, from its `type` (a UTI), for `displayed` events.
    public static func kind(ofUTI uti: String) -> AttachmentKind? {
        if let known = MediaType.supported.first(where: { $0.uti == uti }) { return known.kind }
        switch uti {
        case "public.image", "public.heic", "public.heif", "public.tiff", "org.webmproject.webp": return .image
        case "public.movie", "public.video", "com.apple.quicktime-movie", "com.apple.m4v-video", "public.3gpp", "public.3gpp2":
            return .video
        case "public.audio", "com.apple.coreaudio-format", "public.aac-audio", "com.apple.m4a-audio", "public.aifc-audio": return .audio
        default:
            // A type of another vendor usually names its family: rather that than an image.
            let lowered = uti.lowercased()
            if lowered.contains("video") || lowered.contains("movie") { return .video }
            if lowered.contains("audio") { return .audio }
            if lowered.contains("image") { return .image }
            return nil
        }
    }
}
