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
    ///     p_value,significant,small_sample,value,figure,estimate,lower,upper,method
    ///
    /// (the last five columns were added for the adjusted answer; rows that predate them leave
    /// them empty except `group` and `total`, which carry `figure` = `ratio` and the ratio with its
    /// interval and `method`, the method of `relative_*`, `p_value` and `significant`).
    ///
    /// Rows, one per group and metric:
    ///  - `meta`: `metric` is `generated_at`, `current_as_of:checkpoint_at`, `current_as_of:lag_events`,
    ///    `current_as_of:lag_seconds` (all empty when not read from a read model), `grouping`, `filter:app_ids`, `filter:categories`,
    ///    `filter:attachment_kinds`, `filter:from`, `filter:through`, `caveat` or `note`, its
    ///    text in `value` (set filters joined with "|");
    ///  - `group` and `total` (all categories): a rate compared, `metric` as in the JSON;
    ///  - `counts` and `counts_total`: `metric` is a stage of `FunnelStage.reportTotals`
    ///    (`notifications`, `delivered`, `displayed`), the counts in `rich_successes`,
    ///    `plain_successes` and `not_displayed_count`;
    ///  - `telemetry` (per category and kind), `telemetry_by_attachment` and `telemetry_total`:
    ///    `metric` is `delivered`, `outcome:<outcome>`, `share:<outcome>`, `time_will_expire`,
    ///    `download_ms_p50` ... `processing_ms_p99`, `cache_hits`, `network_fetches`,
    ///    `cache_hit_rate`, `bytes_total`, `bytes_reported` or `bytes_mean`, the number in `value`;
    ///  - `stratified` (the adjusted answer, one block per metric, `metric` as in the JSON), `figure`
    ///    naming the row: `headline` (the sentence in `value`), `risk_ratio` and `risk_difference`
    ///    (estimate, lower, upper, method, `p_value`, `significant`; these three carry the summary's
    ///    `small_sample`), `cmh` and `homogeneity`
    ///    (statistic in `estimate`, `p_value`; `homogeneity`'s `significant` is "categories
    ///    disagree"), `crude_ratio`, `crude_disagreement` (the words in `value`), `category_ratio`
    ///    (per category, `category` set, the category's rates in the rich and plain columns),
    ///    `excluded` (`category` set, the reason in `value`), `homogeneity_excluded` (a compared
    ///    category Cochran's Q leaves out: `category` set, the reason in `value`), `unavailable` (why, in `value`),
    ///    `design_effect` with the device as the unit (in `estimate`; `method` names the figure:
    ///    `risk_difference` or `risk_ratio`). `group` rows with the device as the unit carry their
    ///    design effect in `value` (empty otherwise) and `device_clustered` as `method`.
    public func renderCSV() -> String {
        var csv = CSVWriter()
        csv.row(Self.csvHeader)
        func meta(_ name: String, _ value: String) {
            csv.row(Self.valueRow(["meta", "", "", "", name], value))
        }
        meta("generated_at", generatedAt.rfc3339)
        meta("current_as_of:checkpoint_at", currentAsOf?.checkpointAt?.rfc3339 ?? "")
        meta("current_as_of:lag_events", currentAsOf.map { String($0.lagEvents) } ?? "")
        meta("current_as_of:lag_seconds", currentAsOf.map { String($0.lagSeconds) } ?? "")
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
                row += [metric.significant.map(String.init) ?? "", String(metric.smallSample),
                        Self.csvNumber(metric.designEffect)]
                row += metric.ratio.map { ["ratio"] + Self.csvEffect($0) } ?? ["ratio", "", "", "", ""]
                csv.row(row)
            }
        }

        for summary in stratified { stratifiedCSVRows(summary, into: &csv) }

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
                csv.row(Self.valueRow([section, summary.category ?? "", summary.attachmentKind ?? "", "", name], value))
            }
        }
        return csv.text
    }

    /// The CSV's columns, in order.
    public static let csvHeader = [
        "section", "category", "attachment_kind", "day", "metric",
        "rich_successes", "rich_trials", "rich_rate", "rich_lower", "rich_upper",
        "plain_successes", "plain_trials", "plain_rate", "plain_lower", "plain_upper", "not_displayed_count",
        "absolute_lift", "absolute_lower", "absolute_upper", "relative_lift", "relative_lower", "relative_upper",
        "p_value", "significant", "small_sample", "value", "figure", "estimate", "lower", "upper", "method",
    ]

    private func stratifiedCSVRows(_ summary: StratifiedMetricSummary, into csv: inout CSVWriter) {
        let width = Self.csvHeader.count
        // Columns: section, category, attachment_kind, day, metric | 5 rich | 5 plain | not displayed |
        // 6 lifts | p_value, significant, small_sample, value | figure, estimate, lower, upper, method.
        func row(category: String = "", rich: [String] = [], plain: [String] = [], pValue: Double? = nil,
                 significant: Bool? = nil, smallSample: Bool? = nil, value: String = "", figure: String,
                 effect: [String] = []) {
            var fields = ["stratified", category, "", "", summary.metric.key]
            fields += rich.isEmpty ? Array(repeating: "", count: 5) : rich
            fields += plain.isEmpty ? Array(repeating: "", count: 5) : plain
            fields += Array(repeating: "", count: 7)
            fields += [Self.csvNumber(pValue), significant.map(String.init) ?? "", smallSample.map(String.init) ?? "",
                       value, figure]
            fields += effect.isEmpty ? Array(repeating: "", count: 4) : effect
            precondition(fields.count == width, "stratified CSV row width")
            csv.row(fields)
        }
        func effectRow(_ figure: String, _ effect: EffectEstimate?, category: String = "", rich: [String] = [],
                       plain: [String] = [], smallSample: Bool? = nil) {
            guard let effect else { return }
            row(category: category, rich: rich, plain: plain, pValue: effect.pValue, significant: effect.isSignificant,
                smallSample: smallSample, figure: figure, effect: Self.csvEffect(effect))
        }
        row(smallSample: summary.smallSample, value: summary.headline, figure: "headline")
        effectRow("risk_ratio", summary.riskRatio, smallSample: summary.smallSample)
        effectRow("risk_difference", summary.riskDifference, smallSample: summary.smallSample)
        if let test = summary.cochranMantelHaenszel {
            row(pValue: test.pValue, figure: "cmh", effect: [Self.csvNumber(test.statistic), "", "", "cochran_mantel_haenszel"])
        }
        if let homogeneity = summary.homogeneity {
            row(pValue: homogeneity.test.pValue, significant: summary.categoriesDisagree,
                value: summary.disagreeing.joined(separator: "|"), figure: "homogeneity",
                effect: [Self.csvNumber(homogeneity.test.statistic), "", "", "cochran_q_log_ratio"])
        }
        effectRow("crude_ratio", summary.crude)
        if let warning = summary.crudeWarning { row(value: warning, figure: "crude_disagreement") }
        for category in summary.categories {
            // Every compared category, as the JSON lists them: one without plain successes has
            // its rates and no ratio (empty columns), not no row.
            if category.ratio == nil {
                row(category: category.name, rich: Self.csvFields(category.rich), plain: Self.csvFields(category.plain),
                    figure: "category_ratio")
            } else {
                effectRow("category_ratio", category.ratio, category: category.name, rich: Self.csvFields(category.rich),
                          plain: Self.csvFields(category.plain))
            }
        }
        for excluded in summary.excluded {
            row(category: excluded.name, value: excluded.reason.rawValue, figure: "excluded")
        }
        for excluded in summary.homogeneityExcluded {
            row(category: excluded.name, value: excluded.reason.rawValue, figure: "homogeneity_excluded")
        }
        if let unavailable = summary.unavailable { row(value: unavailable, figure: "unavailable") }
        if let designEffect = summary.designEffect {
            row(figure: "design_effect", effect: [Self.csvNumber(designEffect.riskDifference), "", "", "risk_difference"])
            row(figure: "design_effect", effect: [Self.csvNumber(designEffect.riskRatio), "", "", "risk_ratio"])
        }
    }

    /// The five key columns, `value`, every other column empty.
    private static func valueRow(_ key: [String], _ value: String) -> [String] {
        let valueColumn = csvHeader.firstIndex(of: "value")!
        var fields = key + Array(repeating: "", count: csvHeader.count - key.count)
        fields[valueColumn] = value
        return fields
    }

    /// estimate, lower, upper, method.
    private static func csvEffect(_ effect: EffectEstimate) -> [String] {
        [csvNumber(effect.estimate), csvNumber(effect.interval.lower), csvNumber(effect.interval.upper),
         effect.method.rawValue]
    }

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

    /// The field as is, or quoted with inner quotes doubled when it holds `,` `"` CR or LF. Text a
    /// spreadsheet would take for a formula (starting with `=` `+` `-` `@`, a tab or CR, and not a
    /// number) gets a leading `'` first: categories and app ids come from whoever holds an ingest
    /// key, and a report is opened in spreadsheets (OWASP's advice for CSV injection).
    /// Scalar by scalar: a quote followed by a combining mark is one `Character` equal to no quote.
    static func field(_ value: String) -> String {
        let value = startsLikeAFormula(value) ? "'" + value : value
        guard value.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" }) else {
            return value
        }
        var quoted = String.UnicodeScalarView()
        quoted.append("\"")
        for scalar in value.unicodeScalars {
            quoted.append(scalar)
            if scalar == "\"" { quoted.append(scalar) }
        }
        quoted.append("\"")
        return String(quoted)
    }

    static func startsLikeAFormula(_ value: String) -> Bool {
        guard let first = value.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first) else { return false }
        return Double(value) == nil
    }
}
