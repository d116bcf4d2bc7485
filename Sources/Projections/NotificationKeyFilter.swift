/// A Bloom filter of notification keys: a key it rules out was never inserted; a key it may
/// contain was inserted or is one of its false positives (under 2%).
///
/// The projector inserts every notification it writes a state for, so that a notification it
/// has never seen needs no lookup of its stored state once the state cache has forgotten some
/// (a push to a million devices is a million new notifications in a minute).
///
/// It grows in layers, each four times the capacity of the one before with half its false
/// positive rate, so its memory follows the keys inserted (1.2-1.6 bytes each) and the rates
/// add up to less than twice the first one's. Past its last layer it is full and can no longer
/// answer: the caller looks everything up again.
struct NotificationKeyFilter: Sendable {
    private var layers: [Layer] = []
    let firstLayerCapacity: Int
    let maximumLayers: Int

    /// `firstLayerCapacity` keys in the first layer; up to `maximumLayers` layers, so with the
    /// defaults 1 + 4 + 16 = 21 million keys in about 32 MB.
    init(firstLayerCapacity: Int = 1 << 20, maximumLayers: Int = 3) {
        precondition(firstLayerCapacity > 0 && maximumLayers > 0)
        self.firstLayerCapacity = firstLayerCapacity
        self.maximumLayers = maximumLayers
    }

    /// How many keys it can take in all.
    var capacity: Int { (0..<maximumLayers).reduce(0) { total, index in total + firstLayerCapacity << (2 * index) } }

    /// True once it has taken `capacity` keys.
    var isFull: Bool { layers.count == maximumLayers && layers[layers.count - 1].isFull }

    func mightContain(_ key: NotificationKey) -> Bool {
        let hashes = Hashes(key)
        return layers.contains { $0.contains(hashes) }
    }

    /// Inserts `key` (nothing once the filter is full). A key it may already contain is not
    /// counted again: its answer for that key cannot change, and a notification written in many
    /// batches must not fill the filter faster.
    mutating func insert(_ key: NotificationKey) {
        let hashes = Hashes(key)
        if layers.contains(where: { $0.contains(hashes) }) { return }
        if layers.isEmpty || layers[layers.count - 1].isFull {
            guard layers.count < maximumLayers else { return }
            layers.append(Layer(capacity: firstLayerCapacity << (2 * layers.count), depth: layers.count))
        }
        layers[layers.count - 1].insert(hashes)
    }

    /// Two 64-bit hashes of a key, from which each layer derives its bit positions (h1 + i·h2,
    /// Kirsch and Mitzenmacher): the key's `Hasher` value and that value through a bijective
    /// mixer (SplitMix64's finalizer), one pass over the key's strings instead of two, a quarter
    /// less time per key for the same false-positive rate (BENCHMARKS.md, "2026-12-03
    /// 11:29-12:25 UTC"). `Hasher` is seeded per process, which is all a filter that lives in
    /// memory needs.
    private struct Hashes {
        let first: UInt64
        let second: UInt64

        init(_ key: NotificationKey) {
            var hasher = Hasher()
            key.hash(into: &hasher)
            let first = UInt64(truncatingIfNeeded: hasher.finalize())
            self.first = first
            var mixed = (first ^ (first >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            // Odd, so that the positions never collapse onto one when the bit count is even.
            second = (mixed ^ (mixed >> 31)) | 1
        }

        func position(_ index: Int, of bitCount: UInt64) -> UInt64 {
            (first &+ UInt64(index) &* second) % bitCount
        }
    }

    /// One fixed-size Bloom filter. The first layer's false-positive rate is 1%: 9.6 bits and 7
    /// hashes a key (m/n = -ln p / ln²2, k = m/n · ln 2); each deeper layer halves the rate for
    /// 1.44 more bits and one more hash.
    private struct Layer: Sendable {
        private var words: [UInt64]
        private let bitCount: UInt64
        private let hashCount: Int
        private let capacity: Int
        private var count = 0

        init(capacity: Int, depth: Int) {
            let bitsPerKey = 9.6 + 1.45 * Double(depth)
            let bitCount = max(64, UInt64((Double(capacity) * bitsPerKey).rounded(.up)))
            self.bitCount = bitCount
            self.hashCount = 7 + depth
            self.capacity = capacity
            words = Array(repeating: 0, count: Int((bitCount + 63) / 64))
        }

        var isFull: Bool { count >= capacity }

        func contains(_ hashes: Hashes) -> Bool {
            for index in 0..<hashCount {
                let position = hashes.position(index, of: bitCount)
                if words[Int(position >> 6)] & (1 << (position & 63)) == 0 { return false }
            }
            return true
        }

        mutating func insert(_ hashes: Hashes) {
            for index in 0..<hashCount {
                let position = hashes.position(index, of: bitCount)
                words[Int(position >> 6)] |= 1 << (position & 63)
            }
            count += 1
        }
    }
}
