/// How an extension decides which offered variant to attach. A new strategy is one new type
/// conforming to this protocol, added to a `StrategyCatalog`.
///
/// `choose` runs once per modelled push, so it must not allocate: read `input.roles` and
/// `input.media`, and use `PipelineModel.predictsAttached` for predictions.
public protocol AttachmentStrategyModel: Sendable {
    /// The name experiments and events use, e.g. `adaptive`.
    var name: String { get }
    func choose(_ input: PipelineInput, limits: PipelineLimits) -> VariantChoice
}

/// A strategy's decision: attach nothing, or the variant at an index of `PipelineInput.media`.
public enum VariantChoice: Sendable, Hashable {
    case noAttachment
    case variant(Int)

    init(_ index: Int?) {
        self = index.map(VariantChoice.variant) ?? .noAttachment
    }
}

/// `none`: never attach; the push is shown as sent (`not_requested`).
public struct NoAttachmentStrategy: AttachmentStrategyModel {
    public init() {}
    public var name: String { "none" }
    public func choose(_ input: PipelineInput, limits: PipelineLimits) -> VariantChoice { .noAttachment }
}

/// `full`: always the original.
public struct FullStrategy: AttachmentStrategyModel {
    public init() {}
    public var name: String { "full" }
    public func choose(_ input: PipelineInput, limits: PipelineLimits) -> VariantChoice {
        VariantChoice(input.roles.original)
    }
}

/// `thumbnail`: the thumbnail; the original when the push offers only one size.
public struct ThumbnailStrategy: AttachmentStrategyModel {
    public init() {}
    public var name: String { "thumbnail" }
    public func choose(_ input: PipelineInput, limits: PipelineLimits) -> VariantChoice {
        VariantChoice(input.roles.thumbnail ?? input.roles.original)
    }
}

/// `cached`: the app prefetches media, so the extension attaches what the cache holds: the
/// original when it is cached within the TTL, else a cached thumbnail. When nothing is cached
/// (the prefetch did not happen or expired) it downloads the thumbnail, the original when there
/// is no thumbnail.
public struct CachedStrategy: AttachmentStrategyModel {
    public init() {}
    public var name: String { "cached" }
    public func choose(_ input: PipelineInput, limits: PipelineLimits) -> VariantChoice {
        let roles = input.roles
        if let original = roles.original, input.isCacheHit(original, limits: limits) { return .variant(original) }
        if let thumbnail = roles.thumbnail, input.isCacheHit(thumbnail, limits: limits) { return .variant(thumbnail) }
        return VariantChoice(roles.thumbnail ?? roles.original)
    }
}

/// `adaptive`: the original when it is predicted to be accepted and ready by the deadline even if
/// getting it takes `safetyFactor` times the predicted time; else the thumbnail under the same
/// test; else nothing.
public struct AdaptiveStrategy: AttachmentStrategyModel {
    public var safetyFactor: Double

    public init(safetyFactor: Double = 2) {
        precondition(safetyFactor >= 1 && safetyFactor.isFinite, "safety factor must be at least 1")
        self.safetyFactor = safetyFactor
    }

    public var name: String { "adaptive" }

    /// The network it predicts with: what the extension assumes, since it cannot measure the
    /// network it is on (`ServiceExtensionPolicy.assumedThroughputBytesPerSecond`); the download
    /// itself is then modelled on the device's network. Choosing on the device's estimated
    /// network took originals on fast networks that the extension would not have taken.
    public static let assumedNetwork = NetworkProfile.typical(for: .unknown)

    public func choose(_ input: PipelineInput, limits: PipelineLimits) -> VariantChoice {
        var assumed = input
        assumed.network = Self.assumedNetwork
        func fits(_ index: Int?) -> Bool {
            guard let index else { return false }
            return PipelineModel.predictsAttached(index, in: assumed, limits: limits, safetyFactor: safetyFactor, knowingFormat: false)
        }
        if fits(input.roles.original) { return VariantChoice(input.roles.original) }
        if fits(input.roles.thumbnail) { return VariantChoice(input.roles.thumbnail) }
        return .noAttachment
    }
}

/// `poster`: for a video, its still frame (the poster variant) instead of the video; anything
/// else, or a video offered without a poster, like `full`.
public struct PosterStrategy: AttachmentStrategyModel {
    public init() {}
    public var name: String { "poster" }
    public func choose(_ input: PipelineInput, limits: PipelineLimits) -> VariantChoice {
        let roles = input.roles
        if let original = roles.original, input.media[original].kind == .video, let poster = roles.poster {
            return .variant(poster)
        }
        return VariantChoice(roles.original)
    }
}

/// Strategy models by name.
public struct StrategyCatalog: Sendable {
    private var models: [String: any AttachmentStrategyModel]

    /// The six strategies of the event schema under their wire names.
    public static let standard = StrategyCatalog([
        NoAttachmentStrategy(), FullStrategy(), ThumbnailStrategy(), CachedStrategy(),
        AdaptiveStrategy(), PosterStrategy(),
    ])

    /// A catalog of `models`; a later model replaces an earlier one of the same name.
    public init(_ models: [any AttachmentStrategyModel]) {
        self.models = [:]
        for model in models { self.models[model.name] = model }
    }

    /// The model called `name`, or nil.
    public subscript(name: String) -> (any AttachmentStrategyModel)? {
        models[name]
    }

    /// The model for a strategy of the event schema, or nil when this catalog lacks it.
    public subscript(strategy: AttachmentStrategy) -> (any AttachmentStrategyModel)? {
        models[strategy.rawValue]
    }

    /// A copy that also holds `model` (replacing one of the same name).
    public func adding(_ model: any AttachmentStrategyModel) -> StrategyCatalog {
        var copy = self
        copy.models[model.name] = model
        return copy
    }

    /// The names, sorted.
    public var names: [String] { models.keys.sorted() }
}
