import FCMSimulator
import Foundation
import HTTP
import Support
import Testing
import TestSupport

/// Request-level faults: queued through /control (deterministic) or drawn at a rate from a seeded generator.
@Suite struct FaultTests {
    static let message = #"{"registration_ids":["a","b"],"time_to_live":60}"#

    @Test(arguments: [503, 500])
    func failNextAnswersTheNextSendsWithTheStatusAndRetryAfter(status: Int) throws {
        let simulator = FCMSimulator.everySide()
        let control = try simulator.control(#"{"fail_next": 2, "status": \#(status), "retry_after": "2"}"#)
        #expect(control.status == 200)
        #expect(try control.json()["fail_next"]?.int64Value == 2)
        let responses = try (1...3).map { _ in try simulator.sendJSON(Self.message) }
        #expect(responses.map(\.status) == [status, status, 200])
        #expect(responses.map { $0.header("retry-after") } == ["2", "2", nil])
        #expect(simulator.stats().faults.serverErrors == 2)
    }

    @Test func serverErrorsDoNotCountAsSightings() throws {
        let simulator = FCMSimulator.everySide()
        _ = try simulator.control(#"{"fail_next": 1}"#)
        #expect(try simulator.sendJSON(#"{"to":"unavail-1-a"}"#).status == 503)
        #expect(meaning(of: try simulator.result(for: "unavail-1-a")) == .error("Unavailable"))
    }

    @Test(arguments: [
        (#"{"fail_next": 1, "retry_after": 7}"#, "7"),
        (#"{"fail_next": 1, "retry_after": "soon"}"#, "soon"),
        (#"{"fail_next": 1, "retry_after": null}"#, nil),
        (#"{"fail_next": 1}"#, nil),
    ])
    func retryAfterForms(control: String, header: String?) throws {
        let simulator = FCMSimulator.everySide()
        #expect(try simulator.control(control).status == 200)
        let response = try simulator.sendJSON(Self.message)
        #expect(response.status == 503)
        #expect(response.header("retry-after") == header)
    }

    @Test(arguments: [
        (FCMSimulator.Configuration(retryAfter: .date(secondsFromNow: 2)), nil as String?),
        (FCMSimulator.Configuration(retryAfter: .seconds(3)), #"{"retry_after_date": true}"#),
        (FCMSimulator.Configuration(), #"{"retry_after": "3", "retry_after_date": true}"#),
        (FCMSimulator.Configuration(), #"{"retry_after_date": true}"#),
    ])
    func retryAfterAsAnHTTPDateIsNeverInThePast(configuration: FCMSimulator.Configuration, control: String?) throws {
        let simulator = FCMSimulator.everySide(configuration)
        if let control { #expect(try simulator.control(control).status == 200) }
        _ = try simulator.control(#"{"fail_next": 1}"#)
        let before = Date()
        let response = try simulator.sendJSON(Self.message)
        #expect(response.status == 503)
        let header = try #require(response.header("retry-after"))
        let date = try #require(Self.httpDate.date(from: header), "not an HTTP-date: \(header)")
        #expect(date >= before)
        #expect(Self.httpDate.string(from: date) == header, "IMF-fixdate, as RFC 9110 asks")
    }

    static let httpDate: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }()

    @Test func unauthorizedNextAnswers401WhateverTheKey() throws {
        let simulator = FCMSimulator.everySide(serverKey: "right")
        _ = try simulator.control(#"{"unauthorized_next": 1}"#)
        let statuses = try (1...2).map { _ in try simulator.sendJSON(Self.message, authorization: "key=right").status }
        #expect(statuses == [401, 200])
        #expect(simulator.stats().faults.unauthorized == 1)
    }

    @Test func slowNextAnswersLaterFromAnotherThread() throws {
        let simulator = FCMSimulator.everySide()
        _ = try simulator.control(#"{"slow_next": 1, "slow_ms": 20}"#)
        var threads: [Bool] = []
        for _ in 1...2 {
            let responder = WaitingResponder()
            let caller = pthread_self()
            simulator.handle(
                HTTPRequest(method: "POST", target: "/fcm/send",
                            headers: [("content-type", "application/json"), ("authorization", "key=k")],
                            body: Array(Self.message.utf8)),
                responder: responder)
            let answer = try #require(responder.answer())
            #expect(answer.response.status == 200)
            #expect(meaning(of: try #require(answer.response.json()["results"]?.arrayValue?.first)) == .delivered)
            threads.append(pthread_equal(answer.thread, caller) != 0)
        }
        // The slow reply comes from a timer while the caller waits; the next one is answered in the call.
        #expect(threads == [false, true])
        #expect(simulator.stats().faults.slow == 1)
    }

    @Test func dropNextAnswersAnEmpty500WithConnectionClose() throws {
        let simulator = FCMSimulator.everySide()
        _ = try simulator.control(#"{"drop_next": 1}"#)
        let dropped = try simulator.sendJSON(Self.message)
        #expect(dropped.status == 500)
        #expect(dropped.body.isEmpty)
        #expect(dropped.header("connection") == "close")
        #expect(try simulator.sendJSON(Self.message).status == 200)
        #expect(simulator.stats().faults.dropped == 1)
    }

    @Test func queuedFaultsTakePrecedenceDropThenUnauthorizedThenServerError() throws {
        let simulator = FCMSimulator.everySide()
        _ = try simulator.control(#"{"fail_next": 1, "unauthorized_next": 1, "drop_next": 1}"#)
        let responses = try (1...4).map { _ in try simulator.sendJSON(Self.message) }
        #expect(responses.map(\.status) == [500, 401, 503, 200])
        #expect(responses[0].header("connection") == "close")
    }

    @Test func resetClearsCountersSightingsAndQueuedFaults() throws {
        let simulator = FCMSimulator.everySide(.init(seed: 9))
        #expect(meaning(of: try simulator.result(for: "unavail-1-a")) == .error("Unavailable"))
        _ = try simulator.control(#"{"fail_next": 5, "status": 500, "slow_ms": 5}"#)
        #expect(try simulator.sendJSON(Self.message).status == 500)

        let settings = try simulator.control(#"{"reset": true}"#).json()
        #expect(settings["fail_next"]?.int64Value == 0)
        #expect(settings["status"]?.int64Value == 503)
        #expect(settings["slow_ms"]?.int64Value == 1000)
        let stats = simulator.stats()
        #expect(stats.totalRequests == 0)
        #expect(stats.requests.isEmpty)
        #expect(stats.outcomes.isEmpty)
        #expect(stats.seed == 9)
        #expect(meaning(of: try simulator.result(for: "unavail-1-a")) == .error("Unavailable"))
    }

    @Test(arguments: [
        #"{"fail_next": -1}"#, #"{"fail_next": "2"}"#, #"{"status": 404}"#, #"{"fail_rate": 1.5}"#,
        #"{"retry_after": -3}"#, #"{"retry_after_date": 1}"#, #"{"reset": "yes"}"#, #"{"fail_nxt": 1}"#,
        "[]", "{",
    ])
    func badControlBodiesGet400AndChangeNothing(body: String) throws {
        let simulator = FCMSimulator.everySide()
        let response = try simulator.control(body)
        #expect(response.status == 400)
        #expect(!response.body.isEmpty)
        #expect(try simulator.sendJSON(Self.message).status == 200)
    }

    @Test func rateOneAlwaysFailsAndRateZeroNever() throws {
        let always = FCMSimulator.everySide(.init(failRate: 1, failStatus: 500, retryAfter: .seconds(4)))
        let never = FCMSimulator.everySide(.init(failRate: 0))
        for _ in 1...5 {
            let failed = try always.sendJSON(Self.message)
            #expect(failed.status == 500)
            #expect(failed.header("retry-after") == "4")
            #expect(try never.sendJSON(Self.message).status == 200)
        }
    }

    /// The statuses of `count` sends to a fresh simulator.
    static func statuses(_ configuration: FCMSimulator.Configuration, count: Int = 60) throws -> [Int] {
        let simulator = FCMSimulator.everySide(configuration)
        return try (0..<count).map { _ in try simulator.sendJSON(message).status }
    }

    @Test func theSameSeedDrawsTheSameFaults() throws {
        let configuration = FCMSimulator.Configuration(
            failRate: 0.3, unauthorizedRate: 0.2, dropRate: 0.1, seed: 42)
        let first = try Self.statuses(configuration)
        #expect(try Self.statuses(configuration) == first)
        #expect(Set(first) == [200, 401, 500, 503], "every kind of answer appears in 60 draws with this seed")
        var other = configuration
        other.seed = 43
        #expect(try Self.statuses(other) != first)
    }

    @Test func aRandomSeedIsReportedSoTheRunCanBeRepeated() throws {
        let configuration = FCMSimulator.Configuration(failRate: 0.5)
        let simulator = FCMSimulator.everySide(configuration)
        let first = try (0..<40).map { _ in try simulator.sendJSON(Self.message).status }
        var repeated = configuration
        repeated.seed = simulator.stats().seed
        #expect(try Self.statuses(repeated, count: 40) == first)
    }

    @Test func ratesSetThroughControlApply() throws {
        let simulator = FCMSimulator.everySide(.init(seed: 1))
        _ = try simulator.control(#"{"fail_rate": 1, "status": 502}"#)
        #expect(try simulator.sendJSON(Self.message).status == 502)
        _ = try simulator.control(#"{"fail_rate": 0}"#)
        #expect(try simulator.sendJSON(Self.message).status == 200)
    }

    @Test func programmaticControlMatchesTheEndpoint() throws {
        let simulator = FCMSimulator.everySide()
        simulator.apply([.next(.serverError, count: 1), .failStatus(500), .retryAfter(.verbatim("120"))])
        let response = try simulator.sendJSON(Self.message)
        #expect(response.status == 500)
        #expect(response.header("retry-after") == "120")
        simulator.apply([.next(.unauthorized, count: 1)])
        simulator.reset()
        #expect(try simulator.sendJSON(Self.message).status == 200)
    }
}
