import Support
import Testing

@Suite struct MetricsTests {
    @Test func countersAndGaugesRenderInTheTextFormat() {
        let metrics = Metrics([
            .init("jobs_total", .counter, "Jobs."),
            .init("depth", .gauge, "Depth."),
        ])
        metrics.increment("jobs_total", ["app": "a", "code": "200"])
        metrics.increment("jobs_total", ["app": "a", "code": "200"], by: 2)
        metrics.increment("jobs_total", ["app": "b\"x", "code": "timeout"])
        metrics.set("depth", to: 7)
        #expect(metrics.render() == """
            # HELP jobs_total Jobs.
            # TYPE jobs_total counter
            jobs_total{app="a",code="200"} 3
            jobs_total{app="b\\"x",code="timeout"} 1
            # HELP depth Depth.
            # TYPE depth gauge
            depth 7

            """)
    }

    @Test func valuesReadEverySeriesBackWithItsLabels() {
        let metrics = Metrics([.init("answers_total", .counter, "Answers.")])
        metrics.increment("answers_total", ["app": "a", "code": "200"], by: 3)
        metrics.increment("answers_total", ["app": #"we"ird,=\ "#, "code": "line\nbreak"])
        let values = metrics.values("answers_total")
        #expect(values.count == 2)
        #expect(values.contains { $0.labels == ["app": "a", "code": "200"] && $0.value == 3 })
        #expect(values.contains { $0.labels == ["app": #"we"ird,=\ "#, "code": "line\nbreak"] && $0.value == 1 })
        #expect(metrics.values("nothing").isEmpty)
    }

    @Test func histogramBucketsAreCumulative() {
        let metrics = Metrics([.init("latency_seconds", .histogram, "Latency.")])
        metrics.observe("latency_seconds", seconds: 0.004)
        metrics.observe("latency_seconds", seconds: 0.2)
        metrics.observe("latency_seconds", seconds: 100)
        let lines = metrics.render().split(separator: "\n")
        #expect(lines.contains(#"latency_seconds_bucket{le="0.005"} 1"#))
        #expect(lines.contains(#"latency_seconds_bucket{le="0.25"} 2"#))
        #expect(lines.contains(#"latency_seconds_bucket{le="30"} 2"#))
        #expect(lines.contains(#"latency_seconds_bucket{le="+Inf"} 3"#))
        #expect(lines.contains("latency_seconds_count 3"))
    }

    @Test func aSeriesUpdatesWhatItsNameAndLabelsName() {
        let metrics = Metrics([
            .init("jobs_total", .counter, "Jobs."),
            .init("latency_seconds", .histogram, "Latency."),
        ])
        let series = metrics.series("jobs_total", ["app": "a\\b\nc", "code": "200"])
        metrics.increment(series)
        metrics.increment("jobs_total", ["app": "a\\b\nc", "code": "200"], by: 2)
        metrics.increment(series, by: 4)
        let latency = metrics.series("latency_seconds", ["app": "a"])
        metrics.observe(latency, seconds: 0.004)
        metrics.observe("latency_seconds", ["app": "a"], seconds: 0.2)

        #expect(metrics.value("jobs_total", ["app": "a\\b\nc", "code": "200"]) == 7)
        let lines = metrics.render().split(separator: "\n")
        #expect(lines.contains(#"jobs_total{app="a\\b\nc",code="200"} 7"#))
        #expect(lines.contains(#"latency_seconds_bucket{app="a",le="0.005"} 1"#))
        #expect(lines.contains(#"latency_seconds_count{app="a"} 2"#))
    }

    @Test func aBatchOfObservationsCountsAsEachOfThem() {
        let families: [Metrics.Family] = [.init("latency_seconds", .histogram, "Latency.")]
        let (one, batch) = (Metrics(families), Metrics(families))
        let samples = [0.004, 0.2, 100, 0.004]
        one.observe("latency_seconds", ["app": "a"], seconds: 0.05)
        for sample in samples { one.observe("latency_seconds", ["app": "a"], seconds: sample) }
        batch.observe("latency_seconds", ["app": "a"], seconds: 0.05)
        batch.observe(batch.series("latency_seconds", ["app": "a"]), seconds: samples)
        batch.observe(batch.series("latency_seconds", ["app": "a"]), seconds: [])

        #expect(batch.render() == one.render())
        #expect(batch.render().contains(#"latency_seconds_bucket{app="a",le="0.005"} 2"#))
        #expect(batch.render().contains(#"latency_seconds_count{app="a"} 5"#))
    }

    @Test func replacingAGaugeDropsSeriesThatVanished() {
        let metrics = Metrics([.init("depth", .gauge, "Depth.")])
        metrics.replace("depth", with: [(["state": "queued"], 2), (["state": "dead"], 1)])
        metrics.replace("depth", with: [(["state": "queued"], 0)])
        #expect(metrics.value("depth", ["state": "queued"]) == 0)
        #expect(metrics.value("depth", ["state": "dead"]) == nil)
    }
}
