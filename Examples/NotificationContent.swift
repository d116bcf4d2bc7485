// A Notification Content Extension: shows the notification's attachment (an image downsampled to
// the view, a GIF animated, a video with the system's play/pause button), reports `expanded` when
// its view appears, and forwards the category's actions to the app.
// Not built by SwiftPM: Examples/ is outside every target directory.
//
// The category, registered by the app:
//   let like = UNNotificationAction(identifier: "like", title: "Like")
//   let reply = UNTextInputNotificationAction(identifier: "reply", title: "Reply",
//                                             textInputButtonTitle: "Send", textInputPlaceholder: "Message")
//   UNNotificationCategory(identifier: "new_photo", actions: [like, reply], intentIdentifiers: [],
//                          options: [.customDismissAction])
#if canImport(UserNotifications) && canImport(UIKit)
import AVFoundation
import EngageClient
import EngageNotificationService
import ImageIO
import UIKit
import UserNotifications
import UserNotificationsUI

final class NotificationViewController: UIViewController, UNNotificationContentExtension {
    private let imageView = UIImageView()
    private var player: AVPlayer?
    private var playerLayer: AVPlayerLayer?
    /// The attachment's file, readable only between start/stopAccessingSecurityScopedResource:
    /// kept open while a video plays.
    private var openedAttachment: URL?

    override func viewDidLoad() {
        super.viewDidLoad()
        imageView.contentMode = .scaleAspectFit
        imageView.frame = view.bounds
        imageView.autoresizingMask = [.flexibleWidth, .flexibleHeight]
        view.addSubview(imageView)
    }

    override func viewDidLayoutSubviews() {
        super.viewDidLayoutSubviews()
        playerLayer?.frame = view.bounds
    }

    deinit {
        openedAttachment?.stopAccessingSecurityScopedResource()
    }

    /// The user long-pressed the notification and this view appeared.
    func didReceive(_ notification: UNNotification) {
        EngageSetup.record { try $0.recordExpanded(notification) }
        guard let attachment = notification.request.content.attachments.first,
              attachment.url.startAccessingSecurityScopedResource()
        else { return }
        openedAttachment = attachment.url
        // Decode for the pixels on screen, not the file's: a 12-megapixel photo decoded whole
        // takes about 48 MB, and a content extension may use little memory.
        let pixels = max(view.bounds.width, view.bounds.height) * (view.window?.screen.scale ?? 3)
        switch MediaTypeDetector.kind(ofUTI: attachment.type) {
        case .video:
            play(attachment.url)
        case .gif:
            imageView.image = Self.animatedImage(at: attachment.url, maxPixelSize: pixels)
        case .image:
            imageView.image = Self.image(at: attachment.url, maxPixelSize: pixels)
        default:
            break
        }
        if player == nil {
            attachment.url.stopAccessingSecurityScopedResource()
            openedAttachment = nil
        }
    }

    /// `like` and `reply` are recorded here and forwarded to the app, whose delegate records the
    /// same response again: the event id is name-based, so it counts once.
    func didReceive(_ response: UNNotificationResponse,
                    completionHandler completion: @escaping (UNNotificationContentExtensionResponseOption) -> Void) {
        // For `reply` only the length of the text is recorded; the text itself goes to the app.
        EngageSetup.record { try $0.recordResponse(response) }
        completion(.dismissAndForwardAction)
    }

    // MARK: Video, with the system's play/pause button

    var mediaPlayPauseButtonType: UNNotificationContentExtensionMediaPlayPauseButtonType {
        player == nil ? .none : .overlay
    }

    var mediaPlayPauseButtonFrame: CGRect {
        CGRect(x: view.bounds.midX - 25, y: view.bounds.midY - 25, width: 50, height: 50)
    }

    func mediaPlay() { player?.play() }
    func mediaPause() { player?.pause() }

    private func play(_ url: URL) {
        let player = AVPlayer(url: url)
        let layer = AVPlayerLayer(player: player)
        layer.frame = view.bounds
        layer.videoGravity = .resizeAspect
        view.layer.addSublayer(layer)
        self.player = player
        playerLayer = layer
        player.play()
    }

    // MARK: Images

    private static func image(at url: URL, maxPixelSize: CGFloat) -> UIImage? {
        guard let source = CGImageSourceCreateWithURL(url as CFURL, [kCGImageSourceShouldCache: false] as CFDictionary),
              let image = CGImageSourceCreateThumbnailAtIndex(source, 0, thumbnailOptions(maxPixelSize))
        else { return nil }
        return UIImage(cgImage: image)
    }

    /// Every frame, downsampled, with the GIF's own frame delays.
    private static func animatedImage(at url: URL, maxPixelSize: CGFloat) -> UIImage? {
        guard let source = CGImageSourceCreateWithURL(url as CFURL, [kCGImageSourceShouldCache: false] as CFDictionary) else { return nil }
        let count = CGImageSourceGetCount(source)
        var frames: [UIImage] = []
        var duration: TimeInterval = 0
        for index in 0..<count {
            guard let frame = CGImageSourceCreateThumbnailAtIndex(source, index, thumbnailOptions(maxPixelSize)) else { continue }
            frames.append(UIImage(cgImage: frame))
            let properties = CGImageSourceCopyPropertiesAtIndex(source, index, nil) as? [CFString: Any]
            let gif = properties?[kCGImagePropertyGIFDictionary] as? [CFString: Any]
            let delay = (gif?[kCGImagePropertyGIFUnclampedDelayTime] as? Double) ?? (gif?[kCGImagePropertyGIFDelayTime] as? Double) ?? 0.1
            duration += delay < 0.02 ? 0.1 : delay
        }
        guard frames.count > 1 else { return frames.first }
        return UIImage.animatedImage(with: frames, duration: duration)
    }

    private static func thumbnailOptions(_ maxPixelSize: CGFloat) -> CFDictionary {
        [kCGImageSourceCreateThumbnailFromImageAlways: true, kCGImageSourceCreateThumbnailWithTransform: true,
         kCGImageSourceShouldCacheImmediately: true, kCGImageSourceThumbnailMaxPixelSize: maxPixelSize] as CFDictionary
    }
}
#endif
