import HTTP
import Ingest
import Queue
import Support

extension AdminAPI {
    /// Events of one token shown at most; a user's tokens looked up at most.
    static let eventsShown = 50
    static let tokensShown = 100

    // MARK: - Messages

    /// `GET /v1/admin/messages/{id}`: the message and each delivery, as `GET /v1/messages/{id}`.
    func message(_ id: String, _ responder: any HTTPResponder) {
        readers.enqueue({ try $0.message(id: id) }) { result in
            Self.answer(result, responder) { record in
                record.map { Self.json(200, IngestAPI.messageJSON($0)) } ?? Self.notFound("message", id)
            }
        }
    }

    /// `POST /v1/admin/messages/{id}/cancel`: drops its queued deliveries (reason `Cancelled`), as
    /// `DELETE /v1/messages/{id}`.
    func cancel(_ id: String, now: Int64, _ responder: any HTTPResponder) {
        writer.enqueue(durable: true, writesOutcomes: true, { try $0.cancelMessage(id: id, now: now) }) { result in
            Self.answer(result, responder) { cancelled in
                guard let cancelled else { return Self.notFound("message", id) }
                Log.info("console cancelled a message", ["id": .string(id), "cancelled": .int(Int64(cancelled))])
                return Self.json(200, ["id": .string(id), "cancelled": .int(cancelled)])
            }
        }
    }

    // MARK: - Tokens and users

    /// `GET /v1/admin/tokens/{token}`: its registration (null when it has none, e.g. after NotRegistered), what
    /// reconciliation did to it (every app's events when it is not registered), and its latest dead letters.
    func token(_ token: String, now: Int64, _ responder: any HTTPResponder) {
        readers.enqueue({ store in
            try store.snapshot {
                let registration = try store.token(token)
                let apps = try registration.map { [$0.app] } ?? store.apps().map(\.name)
                let events = try apps.flatMap { try store.tokenEvents(app: $0, token: token, limit: Self.eventsShown) }
                    .sorted { $0.id > $1.id }
                let dead = try store.deadLetters(DeadLetterFilter(token: token), limit: 20)
                return (registration, Array(events.prefix(Self.eventsShown)), dead)
            }
        }) { result in
            Self.answer(result, responder) { registration, events, dead in
                Self.json(200, [
                    "token": .string(token),
                    "registration": registration.map(IngestAPI.tokenJSON) ?? .null,
                    "events": .array(events.map(IngestAPI.tokenEventJSON)),
                    "dead_letters": .array(dead.map { AdminJSON.deadLetter($0, now: now) }),
                ])
            }
        }
    }

    /// `GET /v1/admin/users/{user}`: the user's registered tokens in every app, and the events of those tokens.
    func user(_ user: String, _ responder: any HTTPResponder) {
        readers.enqueue({ store in
            try store.snapshot {
                var tokens: [TokenRecord] = []
                for app in try store.apps() where tokens.count < Self.tokensShown {
                    tokens += try store.tokens(
                        app: app.name, user: user, after: nil, limit: Self.tokensShown - tokens.count)
                }
                let events = try tokens.flatMap { try store.tokenEvents(app: $0.app, token: $0.token, limit: 10) }
                    .sorted { $0.id > $1.id }
                return (tokens, Array(events.prefix(Self.eventsShown)))
            }
        }) { result in
            Self.answer(result, responder) { tokens, events in
                Self.json(200, [
                    "user": .string(user),
                    "tokens": .array(tokens.map(IngestAPI.tokenJSON)),
                    "events": .array(events.map(IngestAPI.tokenEventJSON)),
                ])
            }
        }
    }

    /// `GET /v1/admin/token-events?after=ID&limit=N`: the feed oldest first from `after`, as `GET /v1/token-events`;
    /// without `after` (or with `before=ID`), the latest events newest first, `next` paging further back.
    func tokenEvents(_ request: HTTPRequest, _ responder: any HTTPResponder) {
        let query = request.query
        let limit = query["limit"].map { Int($0) } ?? 100
        guard let limit, (1...1000).contains(limit) else {
            return responder.respond(Self.invalid("limit must be an integer in 1...1000"))
        }
        if let text = query["after"] {
            guard let after = Int64(text), after >= 0 else {
                return responder.respond(Self.invalid("after must be a non-negative integer"))
            }
            return readers.enqueue({ try $0.tokenEvents(after: after, limit: limit) }) { result in
                Self.answer(result, responder) { events in
                    Self.json(200, [
                        "events": .array(events.map(IngestAPI.tokenEventJSON)), "next": .int(events.last?.id ?? after),
                    ])
                }
            }
        }
        let before = query["before"].map { Int64($0) }
        guard before.map({ ($0 ?? -1) >= 0 }) ?? true else {
            return responder.respond(Self.invalid("before must be a non-negative integer"))
        }
        readers.enqueue({ try $0.recentTokenEvents(before: before ?? nil, limit: limit) }) { result in
            Self.answer(result, responder) { events in
                Self.json(200, [
                    "events": .array(events.map(IngestAPI.tokenEventJSON)),
                    "next": events.count == limit ? events.last.map { .int($0.id) } ?? .null : .null,
                ])
            }
        }
    }

    // MARK: - Apps

    /// `POST /v1/admin/apps/{app}/pause` `{"reason": "..."}` and `/resume`, as `herald pause` and `herald resume`.
    /// An app the database does not know is 404 (a pause would otherwise create it).
    func switchApp(_ app: String, pause: Bool, _ request: HTTPRequest, now: Int64, _ responder: any HTTPResponder) {
        var reason = "paused from the console"
        if pause, !request.body.isEmpty {
            guard let body = try? JSON.parse(request.body), let members = body.objectValue,
                  members.allSatisfy({ $0.key == "reason" }),
                  let given = body["reason"].map({ $0.stringValue }) ?? reason, given.utf8.count <= 1000
            else {
                return responder.respond(Self.invalid(#"the body must be {"reason": "..."} (at most 1000 bytes)"#))
            }
            if !given.isEmpty { reason = given }
        }
        let chosen = reason
        writer.enqueue({ store -> Bool? in
            guard try store.apps().contains(where: { $0.name == app }) else { return nil }
            return pause ? try store.pauseApp(app, reason: chosen, now: now) : try store.resumeApp(app)
        }) { result in
            Self.answer(result, responder) { changed in
                guard let changed else { return Self.notFound("app", app) }
                if changed {
                    Log.warn(pause ? "app paused from the console" : "app resumed from the console",
                             pause ? ["app": .string(app), "reason": .string(chosen)] : ["app": .string(app)])
                }
                return Self.json(200, ["app": .string(app), "paused": .bool(pause), "changed": .bool(changed)])
            }
        }
    }
}
