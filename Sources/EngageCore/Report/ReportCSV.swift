extension EngagementReport {
    /// The report as RFC 4180 CSV: CRLF line ends, a header, every field that holds a comma,
    /// quote, CR or LF quoted with inner quotes doubled. Numbers are in full precision (rates
    /// as fractions); undefined values are empty fields.
    ///
    /// Header:
    ///
    ///     section,category,attachment_kind,day,metric,
    ///     rich_successes,rich_trials,rich_rate,rich_lower,rich_upper,
    ///     plain_successes,plain_trials,plain_rate,plain_lower,plain_upper,not_displayed_count,
    ///     absolute_lift,absolute_lower,absolute_upper,relative_lift,relative_lower,relative_upper,
    ///     p_value,significant,small_sample,value
    ///
    /// Rows, one per group and metric:
    ///  - `meta`: `metric` is `generated_at`, `grouping`, `filter:app_ids`, `filter:categories`,
    ///    `filter:attachment_kinds`, `filter:from`, `filter:through`, `caveat` or `note`, its
    ///    text in `value` (set filters joined with "|");
    ///  - `group` and `total` (all categories): a rate compared, `metric` as in the JSON;
    ///  - `counts` and `counts_total`: `metric` is a stage of `FunnelStage.reportTotals`
    ///    (`notifications`, `delivered`, `displayed`), the counts in `rich_successes`,
    ///    `plain_successes` and `not_displayed_count`;
    ///  - `telemetry` (per category and kind), `telemetry_by_attachment` and `telemetry_total`:
    ///    `metric` is `delivered`, `outcome:<outcome>`, `share:<outcome>`, `time_will_expire`,
    ///    `download_ms_p50` ... `processing_ms_p99`, `cache_hits`, `network_fetches`,
    ///    `cache_hit_rate`, `bytes_total`, `bytes_reported` or `bytes_mean`, the number in `value`.
    public func renderCSV() -> String {
        var csv = CSVWriter()
        csv.row(Self.csvHeader)
        func meta(_ name: String, _ value: String) {
            csv.row(["meta", "", "", "", name] + Array(repeating: "", count: Self.csvHeader.count - 6) + [value])
        }
        meta("generated_at", generatedAt.rfc3339)
        meta("grouping", grouping.rawValue)
        meta("filter:app_ids", filters.appIDs.sorted().joined(separator: "|"))
        meta("filter:categories", filters.categories.sorted().joined(separator: "|"))
        meta("filter:attachment_kinds", filters.attachmentKinds.sorted(by: AttachmentOrder.precedes).joined(separator: "|"))
        meta("filter:from", filters.from?.description ?? "")
        meta("filter:through", filters.through?.description ?? "")
        meta("caveat", Self.caveat)
        meta("note", Self.denominatorNote)

        for (section, group) in groups.map({ ("", $0) }) + [("_total", total)] {
            let key = [group.key.category ?? "", group.key.attachmentKind ?? "", group.key.day?.description ?? ""]
            for stage in FunnelStage.reportTotals {
                var row = ["counts" + section] + key + [stage.name]
                row += [String(group.rich[stage])] + Array(repeating: "", count: 4)
                row += [String(group.plain[stage])] + Array(repeating: "", count: 4)
                row += [String(group.notDisplayed[stage])]
                row += Array(repeating: "", count: Self.csvHeader.count - row.count)
                csv.row(row)
            }
            for metric in group.metrics {
                var row = [section.isEmpty ? "group" : "total"] + key + [metric.metric.key]
                row += Self.csvFields(metric.rich) + Self.csvFields(metric.plain) + [String(metric.notDisplayedCount)]
                row += [metric.absoluteLift, metric.absoluteInterval?.lower, metric.absoluteInterval?.upper,
                        metric.relativeLift, metric.relativeInterval?.lower, metric.relativeInterval?.upper,
                        metric.pValue].map(Self.csvNumber)
                row += [metric.significant.map(String.init) ?? "", String(metric.smallSample), ""]
                csv.row(row)
            }
        }

        let telemetrySections = telemetry.map { ("telemetry", $0) }
            + telemetryByAttachment.map { ("telemetry_by_attachment", $0) } + [("telemetry_total", telemetryTotal)]
        for (section, summary) in telemetrySections {
            var values: [(String, String)] = [("delivered", String(summary.delivered))]
            for outcome in DeliveryOutcome.allCases {
                values.append(("outcome:" + outcome.rawValue, String(summary.outcomes[outcome, default: 0])))
            }
            for outcome in DeliveryOutcome.allCases {
                values.append(("share:" + outcome.rawValue, Self.csvNumber(summary.share(of: outcome))))
            }
            values.append(("time_will_expire", String(summary.timeWillExpire)))
            for (name, latency) in [("download_ms", summary.download), ("processing_ms", summary.processing)] {
                values.append((name + "_p50", Self.csvNumber(latency.p50)))
                values.append((name + "_p95", Self.csvNumber(latency.p95)))
                values.append((name + "_p99", Self.csvNumber(latency.p99)))
            }
            values += [("cache_hits", String(summary.cacheHits)), ("network_fetches", String(summary.networkFetches)),
                       ("cache_hit_rate", Self.csvNumber(summary.cacheHitRate)),
                       ("bytes_total", String(summary.totalBytes)), ("bytes_reported", String(summary.bytesReported)),
                       ("bytes_mean", Self.csvNumber(summary.meanBytes))]
            for (name, value) in values {
                csv.row([section, summary.category ?? "", summary.attachmentKind ?? "", "", name]
                        + Array(repeating: "", count: Self.csvHeader.count - 6) + [value])
            }
        }
        return csv.text
    }

    static let csvHeader = [
        "section", "category", "attachment_kind", "day", "metric",
        "rich_successes", "rich_trials", "rich_rate", "rich_lower", "rich_upper",
        "plain_successes", "plain_trials", "plain_rate", "plain_lower", "plain_upper", "not_displayed_count",
        "absolute_lift", "absolute_lower", "absolute_upper", "relative_lift", "relative_lower", "relative_upper",
        "p_value", "significant", "small_sample", "value",
    ]

    private static func csvFields(_ estimate: RateEstimate) -> [String] {
        [String(estimate.successes), String(estimate.trials), csvNumber(estimate.rate),
         csvNumber(estimate.interval?.lower), csvNumber(estimate.interval?.upper)]
    }

    /// Shortest round-tripping decimal; empty when undefined.
    private static func csvNumber(_ value: Double?) -> String {
        guard let value, value.isFinite else { return "" }
        return value.description
    }
}

/// RFC 4180 records.
struct CSVWriter {
    private(set) var text = ""

    mutating func row(_ fields: [String]) {
        text += fields.map(Self.field).joined(separator: ",") + "\r\n"
    }

    /// The field as is, or quoted with inner quotes doubled when it holds `,` `"` CR or LF.
    static func field(_ value: String) -> String {
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) else {
            return value
        }
        return "\"" + value.replacing("\"", with: "\"\"") + "\""
    }
}
