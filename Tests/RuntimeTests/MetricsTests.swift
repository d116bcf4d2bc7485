import Runtime
import Synchronization
import Testing

@Suite struct MetricsTests {
    @Test func rendersASmallRegistryExactly() {
        let registry = MetricsRegistry()
        // Registered out of order on purpose: the output is sorted.
        let requestsPost = registry.counter(
            "http_requests_total", help: "HTTP requests served.", labels: ["route": "/v1/events", "method": "POST"]
        )
        let requestsGet = registry.counter(
            "http_requests_total", help: "HTTP requests served.", labels: ["method": "GET", "route": "/health"]
        )
        let appended = registry.counter("engage_events_appended_total", help: "Events appended to the log.")
        let depth = registry.gauge("engage_queue_depth", help: "Events waiting in the\nqueue \\ buffer.")
        registry.gauge("engage_pool_connections", help: "Open connections.", labels: ["pool": "main"]) { 4 }
        let latency = registry.histogram(
            "http_request_duration_seconds", help: "Request latency.", buckets: [1, 0.1, 0.5], labels: ["route": "/v1/events"]
        )
        let odd = registry.counter("engage_odd_total", help: "Label escaping.", labels: ["path": "a\"b\\c\nd"])

        requestsPost.increment(by: 2)
        requestsGet.increment()
        appended.increment(by: 3)
        depth.set(7.5)
        for value in [0.25, 0.5, 0.5, 3] {
            latency.observe(value)
        }
        odd.increment()

        #expect(registry.renderPrometheus() == """
            # HELP engage_events_appended_total Events appended to the log.
            # TYPE engage_events_appended_total counter
            engage_events_appended_total 3
            # HELP engage_odd_total Label escaping.
            # TYPE engage_odd_total counter
            engage_odd_total{path="a\\"b\\\\c\\nd"} 1
            # HELP engage_pool_connections Open connections.
            # TYPE engage_pool_connections gauge
            engage_pool_connections{pool="main"} 4
            # HELP engage_queue_depth Events waiting in the\\nqueue \\\\ buffer.
            # TYPE engage_queue_depth gauge
            engage_queue_depth 7.5
            # HELP http_request_duration_seconds Request latency.
            # TYPE http_request_duration_seconds histogram
            http_request_duration_seconds_bucket{route="/v1/events",le="0.1"} 0
            http_request_duration_seconds_bucket{route="/v1/events",le="0.5"} 3
            http_request_duration_seconds_bucket{route="/v1/events",le="1"} 3
            http_request_duration_seconds_bucket{route="/v1/events",le="+Inf"} 4
            http_request_duration_seconds_sum{route="/v1/events"} 4.25
            http_request_duration_seconds_count{route="/v1/events"} 4
            # HELP http_requests_total HTTP requests served.
            # TYPE http_requests_total counter
            http_requests_total{method="GET",route="/health"} 1
            http_requests_total{method="POST",route="/v1/events"} 2

            """)
    }

    @Test func histogramWithoutLabelsAndDurations() {
        let registry = MetricsRegistry()
        let histogram = registry.histogram("job_seconds", help: "Job time.", buckets: [0.005, 1])
        histogram.observe(.milliseconds(5))
        histogram.observe(.milliseconds(1500))
        #expect(registry.renderPrometheus() == """
            # HELP job_seconds Job time.
            # TYPE job_seconds histogram
            job_seconds_bucket{le="0.005"} 1
            job_seconds_bucket{le="1"} 1
            job_seconds_bucket{le="+Inf"} 2
            job_seconds_sum 1.505
            job_seconds_count 2

            """)
    }

    @Test func samplesReadEachSeriesWithItsLabels() {
        let registry = MetricsRegistry()
        registry.counter("requests_total", help: "h", labels: ["status": "200"]).increment(by: 3)
        registry.counter("requests_total", help: "h", labels: ["status": "401"]).increment()
        registry.gauge("depth", help: "h") { 7.5 }
        _ = registry.histogram("latency_seconds", help: "h")
        #expect(registry.samples("requests_total") == [MetricSample(labels: ["status": "200"], value: 3),
                                                       MetricSample(labels: ["status": "401"], value: 1)])
        #expect(registry.samples("depth") == [MetricSample(labels: [:], value: 7.5)])
        #expect(registry.samples("latency_seconds").isEmpty)
        #expect(registry.samples("absent").isEmpty)
    }

    @Test func sameNameAndLabelsGiveTheSameInstance() {
        let registry = MetricsRegistry()
        let first = registry.counter("c_total", help: "C.", labels: ["a": "1"])
        #expect(registry.counter("c_total", help: "C.", labels: ["a": "1"]) === first)
        #expect(registry.counter("c_total", help: "C.", labels: ["a": "2"]) !== first)
        #expect(registry.gauge("g", help: "G.") === registry.gauge("g", help: "G."))
    }

    @Test func closureGaugesAreReadAtScrapeTimeAndReplaced() {
        let registry = MetricsRegistry()
        let source = registry.gauge("source", help: "S.")
        registry.gauge("lag", help: "Lag.") { source.value * 2 }
        source.set(1.5)
        #expect(registry.renderPrometheus().contains("\nlag 3\n"))
        registry.gauge("lag", help: "Lag.") { -1 }
        #expect(registry.renderPrometheus().contains("\nlag -1\n"))
    }

    @Test func closureCountersAreReadAtScrapeTimeWithTheCounterType() {
        let registry = MetricsRegistry()
        let kept = Mutex(0)
        registry.counter("served_total", help: "Served.", labels: ["path": "inline"]) { kept.withLock { $0 } }
        kept.withLock { $0 = 41 }
        #expect(registry.renderPrometheus() == """
            # HELP served_total Served.
            # TYPE served_total counter
            served_total{path="inline"} 41

            """)
        kept.withLock { $0 += 1 }
        #expect(registry.renderPrometheus().contains("served_total{path=\"inline\"} 42\n"))
    }

    @Test func gaugeArithmeticAndSpecialValues() {
        let registry = MetricsRegistry()
        let gauge = registry.gauge("g", help: "G.")
        gauge.increment()
        gauge.increment(by: 2.5)
        gauge.decrement(by: 0.5)
        #expect(gauge.value == 3)
        gauge.set(.infinity)
        #expect(registry.renderPrometheus() == "# HELP g G.\n# TYPE g gauge\ng +Inf\n")
        gauge.set(-.infinity)
        #expect(registry.renderPrometheus() == "# HELP g G.\n# TYPE g gauge\ng -Inf\n")
        gauge.set(.nan)
        #expect(registry.renderPrometheus() == "# HELP g G.\n# TYPE g gauge\ng NaN\n")
        gauge.set(1e-7)
        #expect(registry.renderPrometheus() == "# HELP g G.\n# TYPE g gauge\ng 1e-07\n")
    }

    @Test func countersAreExactUnderConcurrentIncrements() async {
        let registry = MetricsRegistry()
        let counter = registry.counter("hits_total", help: "Hits.")
        let gauge = registry.gauge("level", help: "Level.")
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<10_000 {
                        counter.increment()
                        gauge.increment()
                    }
                }
            }
        }
        #expect(counter.value == 80_000)
        #expect(gauge.value == 80_000)
    }

    @Test func emptyRegistryRendersNothing() {
        #expect(MetricsRegistry().renderPrometheus() == "")
        #expect(MetricsRegistry.contentType == "text/plain; version=0.0.4; charset=utf-8")
    }
}
