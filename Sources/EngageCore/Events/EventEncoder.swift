/// Canonical JSON for events: compact, keys in schema order, optional fields omitted when nil.
extension Event {
    /// The `payload` column: the type's own fields (wire names), then `experiment` and
    /// `properties` when present. `{}` for an expanded event without either.
    public var payloadJSON: [UInt8] {
        var w = JSONWriter(capacity: 192 + (properties?.count ?? 0))
        w.beginObject()
        writePayloadMembers(&w)
        w.endObject()
        return w.bytes
    }

    /// The complete v1 wire object, accepted by `decodeWire` (given a suitable clock).
    public func encodeWireJSON() -> [UInt8] {
        var w = JSONWriter(capacity: 320 + (properties?.count ?? 0))
        w.beginObject()
        w.key("event_id")
        w.string(eventID.description)
        w.key("type")
        w.string(type.rawValue)
        w.key("notification_id")
        w.string(notificationID)
        w.key("device_id")
        w.string(deviceID)
        w.key("category")
        w.string(category)
        w.key("occurred_at")
        w.string(occurredAt.rfc3339)
        writePayloadMembers(&w)
        w.endObject()
        return w.bytes
    }

    private func writePayloadMembers(_ w: inout JSONWriter) {
        switch details {
        case .sent(let d):
            w.key("media")
            w.beginArray()
            for m in d.media {
                w.beginObject()
                w.key("variant")
                w.string(m.variant)
                w.key("kind")
                w.string(m.kind.rawValue)
                w.key("format")
                w.string(m.format.rawValue)
                w.key("bytes")
                w.int(m.bytes)
                w.optional("width", m.width)
                w.optional("height", m.height)
                w.optional("duration_ms", m.durationMS)
                w.endObject()
            }
            w.endArray()
            w.optional("strategy", d.strategy?.rawValue)
            w.optional("payload_bytes", d.payloadBytes)
        case .delivered(let d):
            w.key("attachment")
            w.beginObject()
            w.key("kind")
            w.string(d.attachment.kind.rawValue)
            w.optional("format", d.attachment.format?.rawValue)
            w.optional("bytes", d.attachment.bytes)
            w.optional("source", d.attachment.source?.rawValue)
            w.optional("download_ms", d.attachment.downloadMS)
            w.optional("variant", d.attachment.variant)
            w.optional("http_status", d.attachment.httpStatus)
            w.endObject()
            w.key("outcome")
            w.string(d.outcome.rawValue)
            w.key("processing_ms")
            w.int(d.processingMS)
            w.key("time_will_expire")
            w.bool(d.timeWillExpire)
            w.optional("network", d.network?.rawValue)
            w.optional("strategy", d.strategy?.rawValue)
        case .displayed(let d):
            w.key("presentation")
            w.string(d.presentation.rawValue)
            w.key("attachment_kind")
            w.string(d.attachmentKind.rawValue)
        case .expanded:
            break
        case .action(let d):
            w.key("action_id")
            w.string(d.actionID)
            w.optional("text_input_length", d.textInputLength)
        }
        if let experiment {
            w.key("experiment")
            w.beginObject()
            w.key("id")
            w.string(experiment.id)
            w.key("arm")
            w.string(experiment.arm)
            if let p = experiment.probability {
                w.key("probability")
                w.double(p)
            }
            w.endObject()
        }
        if let properties {
            w.key("properties")
            w.raw(properties)
        }
    }
}

extension JSONWriter {
    fileprivate mutating func optional(_ key: StaticString, _ value: Int?) {
        guard let value else { return }
        self.key(key)
        int(value)
    }

    fileprivate mutating func optional(_ key: StaticString, _ value: String?) {
        guard let value else { return }
        self.key(key)
        string(value)
    }
}
